//! Option values out of range, refused before anything is read (issue 29):
//! one rule for every command, bad command-line usage (exit 2, as
//! README's exit-code table says, like `check --fuzz` above its cap), and
//! each message names the option, the value given and the range allowed.

use super::Fail;

/// The refusal of `option` given `value`: `--l2 -1 is out of range: give
/// WHAT`.
fn refuse(option: &str, value: impl std::fmt::Display, what: &str) -> Fail {
    Fail::Usage(format!("{option} {value} is out of range: give {what}"))
}

/// `check --samples N`: 1 to [`toolgate::parse::properties::MAX_SAMPLES`]
/// random sessions per property (0 would check nothing, yet read as "no
/// counterexample"; a property's own `samples` has the same range).
///
/// # Errors
/// [`Fail::Usage`] naming `--samples`, the value and the range.
pub fn check_samples(samples: u64) -> Result<(), Fail> {
    let max = toolgate::parse::properties::MAX_SAMPLES;
    if (1..=max).contains(&samples) {
        return Ok(());
    }
    Err(refuse(
        "--samples",
        samples,
        &format!(
            "1 to {max} random sessions tried per property{}",
            if samples == 0 {
                " (0 sessions would check nothing)"
            } else {
                ""
            }
        ),
    ))
}

/// The regression options of `fit`: `--l2` (the L2 penalty, linfa's
/// `alpha`: finite and ≥ 0), `--max-iterations` (the solver's iterations:
/// 1 or more; 0 runs no iteration and fits nothing) and `--negatives` (not
/// called tools kept per call: 1 or more; 0 leaves no row to contrast the
/// called tool with).
///
/// # Errors
/// [`Fail::Usage`] for the first option out of range, naming it, the value
/// and the range.
pub fn fit(l2: f64, max_iterations: u64, negatives: Option<usize>) -> Result<(), Fail> {
    if !(l2.is_finite() && l2 >= 0.0) {
        return Err(refuse(
            "--l2",
            toolgate::diag::short_number(l2),
            "a finite L2 penalty of 0 or more (default 1; 0 fits without a penalty)",
        ));
    }
    if max_iterations == 0 {
        return Err(refuse(
            "--max-iterations",
            max_iterations,
            "1 or more solver iterations (default 200); 0 would fit nothing",
        ));
    }
    if negatives == Some(0) {
        return Err(refuse(
            "--negatives",
            0,
            "1 or more not-called tools per call, or leave the option out to keep them all; with 0 the called tool has nothing to be told apart from",
        ));
    }
    Ok(())
}

/// `compare --show N`: 0 or more calls listed (0 lists none, only counts
/// them). Read signed, so that `--show -1` is this range error, not
/// clap's `unexpected argument '-1'`.
///
/// # Errors
/// [`Fail::Usage`] naming `--show`, the value and the range.
pub fn compare_show(show: i64) -> Result<usize, Fail> {
    usize::try_from(show).map_err(|_| {
        refuse(
            "--show",
            show,
            "0 or more calls to list (default 20; 0 lists none and only counts them)",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(r: Result<(), Fail>) -> String {
        match r {
            Err(Fail::Usage(m)) => m,
            Err(_) => panic!("not a usage error"),
            Ok(()) => String::new(),
        }
    }

    #[test]
    fn each_refusal_names_the_option_the_value_and_the_range() {
        assert_eq!(message(check_samples(1)), "");
        let m = message(check_samples(0));
        assert!(
            m.starts_with("--samples 0 is out of range: give 1 to 100000"),
            "{m}"
        );
        assert!(message(fit(f64::NAN, 1, None)).starts_with("--l2 NaN is out of range"));
        assert!(message(fit(-1.0, 1, None)).starts_with("--l2 -1 is out of range"));
        assert!(message(fit(1e300, 1, None)).is_empty());
        assert_eq!(message(fit(0.0, 1, Some(1))), "");
        assert!(message(fit(1.0, 0, None)).starts_with("--max-iterations 0 is out of range"));
        assert!(message(fit(1.0, 1, Some(0))).starts_with("--negatives 0 is out of range"));
        assert!(matches!(compare_show(0), Ok(0)));
        let m = message(compare_show(-1).map(|_| ()));
        assert!(
            m.starts_with("--show -1 is out of range: give 0 or more"),
            "{m}"
        );
    }
}
