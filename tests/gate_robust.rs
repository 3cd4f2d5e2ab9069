//! No input makes an analyzer panic or overflow its stack.

mod gate_common;
use gate_common as common;

use proptest::prelude::*;
use toolgate::gate::{ShellInput, analyze_path, analyze_shell, analyze_sql};

/// Runs `f` on a thread with a 2 MiB stack, the default for spawned threads.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .expect("analysis panicked");
}

#[test]
fn deepest_accepted_shell_nesting_fits_a_small_stack() {
    on_small_stack(|| {
        let cfg = common::config();
        let max = cfg.shell.limits.max_nesting;
        for (open, close) in [("(", ")"), ("{ ", "; }"), ("$(", ")"), ("\"$(", ")\"")] {
            let line = format!("{}rm -rf /{}", open.repeat(max), close.repeat(max));
            let f = analyze_shell(&cfg.shell, &cfg.paths, "/c", ShellInput::Line(&line));
            assert!(!f.is_empty(), "{open}: {f:?}");
        }
        let mut nested = "rm -rf /".to_string();
        for _ in 0..cfg.shell.limits.max_depth {
            nested = format!("bash -c '{}'", nested.replace('\'', "'\\''"));
        }
        assert!(!analyze_shell(&cfg.shell, &cfg.paths, "/c", ShellInput::Line(&nested)).is_empty());
    });
}

#[test]
fn deepest_accepted_sql_nesting_fits_a_small_stack() {
    on_small_stack(|| {
        let cfg = common::config();
        let n = cfg.sql.max_nesting;
        for depth in [n / 2, n - 2, n, n + 1, 10 * n] {
            let q = format!("SELECT {}1{}", "(".repeat(depth), ")".repeat(depth));
            analyze_sql(&cfg.sql, "/q", &q, "", true);
            let q = format!(
                "SELECT * FROM t WHERE {}a = 1{}",
                "NOT (".repeat(depth),
                ")".repeat(depth)
            );
            analyze_sql(&cfg.sql, "/q", &q, "", false);
            let mut sub = "SELECT 1".to_string();
            for _ in 0..depth {
                sub = format!("SELECT * FROM ({sub}) x");
            }
            analyze_sql(&cfg.sql, "/q", &sub, "", true);
        }
    });
}

const SHELLISH: &str = "[ -~\\n\\t]{0,80}";

/// Copies of a directory that holds a link made in the line double the
/// links each time (`ln -s ~ h; cp -r . a; cp -r . b; ...`): past
/// `[gate.shell.limits] max_links` every later path is dynamic, so the
/// work stays bounded and the line still asks.
#[test]
fn links_copied_again_and_again_stay_bounded() {
    let mut cfg = common::config();
    let decide = |cfg: &toolgate::gate::GateConfig, line: &str| {
        let f = analyze_shell(&cfg.shell, &cfg.paths, "/c", ShellInput::Line(line));
        toolgate::gate::decide(&f)
    };
    let start = std::time::Instant::now();
    let mut line = "ln -s ~ h".to_string();
    for i in 0..40 {
        line.push_str(&format!("; cp -r . d{i}"));
    }
    line.push_str("; rm -rf d39/h/");
    assert_ne!(decide(&cfg, &line), toolgate::gate::Action::Allow);
    assert!(
        start.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    // Past the limit a write inside the project is dynamic too.
    cfg.shell.limits.max_links = 4;
    let line = "ln -s src s; cp -r . a; cp -r . b; echo x > notes.txt";
    assert_ne!(decide(&cfg, line), toolgate::gate::Action::Allow);
    cfg.shell.limits.max_links = 64;
    assert_eq!(decide(&cfg, line), toolgate::gate::Action::Allow);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn shell_never_panics(line in "\\PC{0,64}", ascii in SHELLISH) {
        let cfg = common::config();
        analyze_shell(&cfg.shell, &cfg.paths, "/c", ShellInput::Line(&line));
        analyze_shell(&cfg.shell, &cfg.paths, "/c", ShellInput::Line(&ascii));
        let argv: Vec<String> = ascii.split(' ').map(str::to_owned).collect();
        analyze_shell(&cfg.shell, &cfg.paths, "/c", ShellInput::Argv(&argv));
    }

    #[test]
    fn shell_never_panics_on_shell_syntax(parts in proptest::collection::vec(
        prop_oneof![
            Just("rm"), Just("-rf"), Just("/"), Just("bash"), Just("-c"), Just("'"), Just("\""),
            Just("$("), Just(")"), Just("`"), Just("|"), Just("&&"), Just(";"), Just("&"),
            Just("<<<"), Just("<<EOF\n"), Just("\nEOF\n"), Just("{"), Just("}"), Just("("),
            Just("find"), Just("-exec"), Just("{}"), Just("\\;"), Just("+"), Just("xargs"),
            Just("sudo"), Just("env"), Just("X=1"), Just("$X"), Just("${X:-"), Just("$'\\x"),
            Just("~"), Just("*"), Just("eval"), Just("<("), Just(">("), Just(">"), Just("2>&1"),
            Just("if"), Just("then"), Just("fi"), Just("for"), Just("do"), Just("done"),
            Just("case"), Just("in"), Just("esac"), Just(";;"), Just("f()"), Just("[["), Just("]]"),
            Just("$(("), Just("))"), Just("$["), Just("]"), Just("\\"), Just("\n"), Just(" "),
        ],
        0..24,
    )) {
        let cfg = common::config();
        let line: String = parts.join(" ");
        analyze_shell(&cfg.shell, &cfg.paths, "/c", ShellInput::Line(&line));
        let tight: String = parts.concat();
        analyze_shell(&cfg.shell, &cfg.paths, "/c", ShellInput::Line(&tight));
    }

    #[test]
    fn sql_never_panics(q in "\\PC{0,64}", ascii in SHELLISH, ro: bool) {
        let cfg = common::config();
        for d in ["", "sqlite", "postgres", "mysql", "mssql"] {
            analyze_sql(&cfg.sql, "/q", &q, d, ro);
            analyze_sql(&cfg.sql, "/q", &ascii, d, ro);
        }
    }

    #[test]
    fn sql_never_panics_on_sql_syntax(parts in proptest::collection::vec(
        prop_oneof![
            Just("SELECT"), Just("DELETE"), Just("FROM"), Just("t"), Just("WHERE"), Just("1=1"),
            Just(";"), Just("--"), Just("\n"), Just("/*"), Just("*/"), Just("'"), Just("("),
            Just(")"), Just("DROP"), Just("TABLE"), Just("WITH"), Just("AS"), Just("UPDATE"),
            Just("SET"), Just("a=1"), Just("ALTER"), Just("RENAME"), Just("COLUMN"), Just("/*!"),
            Just("INTO"), Just("EXPLAIN"), Just("UNION"), Just("TRUNCATE"), Just("pg_sleep("),
        ],
        0..24,
    ), ro: bool) {
        let cfg = common::config();
        analyze_sql(&cfg.sql, "/q", &parts.join(" "), "", ro);
    }

    #[test]
    fn path_never_panics(p in "\\PC{0,48}", bytes in proptest::collection::vec(any::<u8>(), 0..32), w: bool) {
        let mut cfg = common::config();
        cfg.paths.roots = vec![std::env::temp_dir().display().to_string()];
        analyze_path(&cfg.paths, "/p", &p, w);
        let lossy = String::from_utf8_lossy(&bytes);
        analyze_path(&cfg.paths, "/p", &lossy, w);
    }
}

#[test]
fn work_is_bounded_whatever_the_shape() {
    let cfg = common::config();
    let start = std::time::Instant::now();
    // Many substitutions: over the parse budget, so denied, and quick.
    let many = "echo $(true) ".repeat(2000);
    let f = analyze_shell(&cfg.shell, &cfg.paths, "/c", ShellInput::Line(&many));
    assert_eq!(
        toolgate::gate::decide(&f),
        toolgate::gate::Action::Deny,
        "{f:?}"
    );
    // Brace expansion around nested code is not multiplied.
    let mut s = "true".to_string();
    for _ in 0..cfg.shell.limits.max_depth {
        s = format!("echo {{1,2,3,4,5,6,7,8,9}}$({s})");
    }
    analyze_shell(&cfg.shell, &cfg.paths, "/c", ShellInput::Line(&s));
    // Nested `((` re-reading stays bounded.
    let parens = format!("{}x{}", "((".repeat(40), "))".repeat(40));
    analyze_shell(&cfg.shell, &cfg.paths, "/c", ShellInput::Line(&parens));
    assert!(
        start.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any text: no panic.
    #[test]
    fn inexact_integer_scan_never_panics(t in "\\PC{0,64}", bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        toolgate::gate::numbers::inexact_integers(&t);
        toolgate::gate::numbers::inexact_integers(&String::from_utf8_lossy(&bytes));
    }

    /// JSON objects with integer literals of every size, under keys with
    /// quotes, escapes, `~` and `/`: exactly the literals no 64-bit integer
    /// holds are found, each with the JSON pointer that reaches it.
    #[test]
    fn inexact_integer_scan_finds_exactly_the_out_of_range_literals(
        members in proptest::collection::vec(("\\PC{0,6}", "[1-9][0-9]{0,25}", any::<bool>(), any::<bool>()), 0..8)
    ) {
        let mut text = String::from("{");
        let mut want = Vec::new();
        for (i, (key, digits, negative, in_array)) in members.iter().enumerate() {
            let key = format!("{i}{key}");
            let literal = if *negative { format!("-{digits}") } else { digits.clone() };
            if i > 0 {
                text.push_str(", ");
            }
            let value = if *in_array { format!("[\"x\", {literal}]") } else { literal.clone() };
            text.push_str(&format!("{}: {value}", serde_json::to_string(&key).unwrap()));
            if literal.parse::<i64>().is_err() && literal.parse::<u64>().is_err() {
                let mut path = format!("/{}", key.replace('~', "~0").replace('/', "~1"));
                if *in_array {
                    path.push_str("/1");
                }
                want.push((path, literal));
            }
        }
        text.push('}');
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        let got: Vec<(String, String)> = toolgate::gate::numbers::inexact_integers(&text)
            .into_iter()
            .map(|x| (x.path, x.literal))
            .collect();
        prop_assert_eq!(&got, &want, "{}", text);
        for (path, _) in &got {
            prop_assert!(parsed.pointer(path).is_some_and(|v| v.is_f64()), "{path} in {text}");
        }
    }
}
