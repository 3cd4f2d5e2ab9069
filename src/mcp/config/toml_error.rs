//! A `--config` file's TOML or key error as one line, `LINE:COLUMN:
//! message`, with a did-you-mean for a misspelt key (issue 29): serde's
//! `unknown field `comand`, expected one of `name`, `command`, ...`
//! becomes `unknown key `comand` (did you mean `command`?); known keys
//! here: name, command, ...`.

/// `(line, column)` (1-based, column in characters) of the error's span,
/// when it has one, and the message rewritten.
pub(super) fn describe(text: &str, e: &toml::de::Error) -> (Option<(usize, usize)>, String) {
    let msg = e.message().trim();
    let at = e.span().map(|s| {
        let before = &text[..s.start.min(text.len())];
        let line = 1 + before.matches('\n').count();
        let col = 1 + before[before.rfind('\n').map_or(0, |i| i + 1)..]
            .chars()
            .count();
        (line, col)
    });
    let msg = match msg.strip_prefix("unknown field `") {
        Some(rest) => {
            let (key, rest) = rest.split_once('`').unwrap_or((rest, ""));
            let known: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
            let hint = crate::diag::did_you_mean(key, known.iter().copied())
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            format!(
                "unknown key `{}`{hint}; known keys here: {}",
                crate::diag::echo(key),
                known.join(", ")
            )
        }
        None => msg.to_string(),
    };
    (at, msg)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_misspelt_key_gets_its_place_and_a_did_you_mean() {
        #[derive(serde::Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct S {
            command: Option<String>,
            url: Option<String>,
        }
        let text = "url = \"u\"\ncomand = \"x\"\n";
        let e = toml::from_str::<S>(text).unwrap_err();
        let (at, m) = super::describe(text, &e);
        assert_eq!(at, Some((2, 1)));
        assert_eq!(
            m,
            "unknown key `comand` (did you mean `command`?); known keys here: command, url"
        );
    }
}
