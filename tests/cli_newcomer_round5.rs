//! Issue 29, what the fifth newcomer pass found (closing note 35, "Still
//! missing"): `mcp-proxy --config` value errors in plain words at their
//! value, weights too large for any score to mean anything, `check
//! --samples 0`, inline `--input` tools and undeclared stages located with
//! a did-you-mean, and trace numbers echoed as written.

mod common;
use common::{stderr, stdout, toolgate, write};

/// Item 1: every value error of a `--config` file stands at its value's
/// FILE:LINE:COLUMN, names the key and says what is expected in plain
/// words; numbers as written; `[server]` and `era` get their own advice;
/// all problems of the file at once.
#[test]
fn proxy_config_value_errors_name_the_key_at_the_value_in_plain_words() {
    let d = tempfile::tempdir().unwrap();
    let cases = [
        (
            "max_concurrent_calls = -5\n",
            "1:24",
            "max_concurrent_calls must be a whole number ≥ 1, found -5",
        ),
        (
            "max_concurrent_calls = 1e300\n",
            "1:24",
            "max_concurrent_calls must be a whole number ≥ 1, found 1e300",
        ),
        (
            "debounce_ms = \"50\"\n",
            "1:15",
            "debounce_ms must be a whole number of milliseconds, found a string",
        ),
        (
            "[server]\nname = \"t\"\ncommand = \"x\"\n",
            "1:1",
            "`[server]` is one table; servers are an array of tables: write `[[server]]`",
        ),
        (
            "[[server]]\nname = \"t\"\ncommand = \"x\"\nera = \"moden\"\n",
            "4:7",
            "unknown era `moden`; did you mean `modern`? (server[0].era is one of: auto, modern, legacy)",
        ),
        (
            "[[server]]\nname = \"t\"\nurl = \"notaurl\"\n",
            "3:7",
            "server[0].url: `notaurl` is not an http:// or https:// URL",
        ),
    ];
    for (i, (text, at, want)) in cases.iter().enumerate() {
        let p = write(d.path(), &format!("c{i}.toml"), text);
        let o = toolgate(&["mcp-proxy", "--config", &p], Some(""));
        assert_eq!(o.status.code(), Some(2), "{text}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(&format!("{p}:{at}: {want}")), "{text}: {err}");
        assert!(!err.contains("usize") && !err.contains("expected a sequence"));
        assert!(!err.contains("0000000000"), "{err}");
    }
    // every problem of one file at once, each at its own line
    let p = write(
        d.path(),
        "many.toml",
        "max_concurrent_calls = 0\n[http]\npath = \"mcp\"\n[[server]]\nname = \"t\"\ncommand = \"x\"\nera = \"legasy\"\n",
    );
    let err = stderr(&toolgate(&["mcp-proxy", "--config", &p], Some("")));
    for want in [
        format!("{p}:1:24: max_concurrent_calls must be a whole number ≥ 1, found 0"),
        format!("{p}:3:8: http.path must start with `/`"),
        format!("{p}:7:7: unknown era `legasy`; did you mean `legacy`?"),
    ] {
        assert!(err.contains(&want), "{want}\n{err}");
    }
}
