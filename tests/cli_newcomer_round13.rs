//! Issue 29, item 6 of the newcomer pass: a misspelt weight name inside the
//! formula is reported there (not as a key to rename into the typo), and
//! every problem of a tag file and of `[activation]` is reported in one run.

mod common;
use common::{stderr, toolgate, write};

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

/// The shipped default policy with `from` replaced by `to` (once, checked).
fn default_policy_with(from: &str, to: &str) -> String {
    let text = std::fs::read_to_string(format!("{MANIFEST}/policies/default.toml")).unwrap();
    assert!(text.contains(from), "the default policy has `{from}`");
    text.replacen(from, to, 1)
}

/// The formula's `w_domian` (weights unchanged) is the typo: the problem
/// stands at that name inside the formula and suggests the declared
/// `w_domain`, never renaming the key to the typo.
#[test]
fn a_misspelt_weight_in_the_formula_is_reported_in_the_formula() {
    let d = tempfile::tempdir().unwrap();
    let text = default_policy_with("\"w_domain*domain_match", "\"w_domian*domain_match");
    let line = text.lines().position(|l| l.starts_with("formula")).unwrap() + 1;
    let col = text
        .lines()
        .nth(line - 1)
        .unwrap()
        .find("w_domian")
        .unwrap()
        + 1;
    let p = write(d.path(), "p.toml", &text);
    let o = toolgate(&["check", "--policy", &p], None);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("p.toml:{line}:{col}: ")), "{err}");
    assert!(err.contains("did you mean `w_domain`?"), "{err}");
    assert!(!err.contains("rename the key"), "{err}");
    assert!(err.contains("1 problem found"), "{err}");
}

/// The README's case stays as it was: a misspelt key (`w_stag`) with the
/// formula right is reported at the key, to be renamed to the formula's name.
#[test]
fn a_misspelt_weight_key_is_still_reported_at_the_key() {
    let d = tempfile::tempdir().unwrap();
    let text = default_policy_with("\nw_stage = 0.20", "\nw_stag = 0.20");
    let line = text.lines().position(|l| l.starts_with("w_stag ")).unwrap() + 1;
    let p = write(d.path(), "p.toml", &text);
    let o = toolgate(&["check", "--policy", &p], None);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "p.toml:{line}:1: weight `w_stag` is not used by the formula"
        )),
        "{err}"
    );
    assert!(
        err.contains("rename the key `w_stag` to `w_stage`"),
        "{err}"
    );
}

/// A tag file with a misspelt key, an out-of-range priority, a misspelt risk
/// level and a misspelt stage: the stage is reported with the others, not
/// after they are fixed.
#[test]
fn every_problem_of_a_tag_file_at_once_with_its_stage_typo() {
    let d = tempfile::tempdir().unwrap();
    let tags = d.path().join("tags");
    std::fs::create_dir(&tags).unwrap();
    write(
        &tags,
        "t.toml",
        "[[tool]]\nname = \"x.read\"\ndescription = \"Read a file\"\ndomans = [\"file_operation\"]\n\
         preferred_stages = [\"exploraton\"]\ntrigger_keywords = [\"read\"]\nbase_priority = 7\n\
         parameter_complexity = 2\nrisk_level = \"saf\"\n",
    );
    let o = toolgate(&["check", "--tags", tags.to_str().unwrap()], None);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("unknown key `domans`"), "{err}");
    assert!(err.contains("base_priority must be within [0, 1]"), "{err}");
    assert!(err.contains("risk_level \"saf\""), "{err}");
    assert!(
        err.contains("t.toml:5:21: stage `exploraton` is not declared in [stages] names (did you mean `exploration`?)"),
        "{err}"
    );
    assert!(err.contains("4 problems found"), "{err}");
}

/// A reversed clamp and a threshold above both its numbers: both reported.
#[test]
fn a_reversed_clamp_and_an_unreachable_threshold_both_reported() {
    let d = tempfile::tempdir().unwrap();
    let text = default_policy_with("\nclamp = [0.0, 1.0]", "\nclamp = [1.0, 0.0]");
    let text = text.replacen("\nthreshold = 0.4 ", "\nthreshold = 1e308 ", 1);
    let p = write(d.path(), "p.toml", &text);
    let o = toolgate(&["check", "--policy", &p], None);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`activation.clamp` must be two finite numbers"),
        "{err}"
    );
    assert!(
        err.contains("threshold 1e308 can never be reached: the highest score is 1"),
        "{err}"
    );
    assert!(err.contains("2 problems found"), "{err}");
}
