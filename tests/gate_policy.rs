//! `[gate]` in a policy: the shipped section loads, keys left out take the
//! shipped values, and every problem is an error at its file:line:column.

use toolgate::compile::gate::load_gate_config;
use toolgate::diag::{ErrorKind, SourceFile};
use toolgate::gate::config::shipped;
use toolgate::gate::{Action, PatternScope, PatternSet, Severity};
use toolgate::load::DEFAULT_POLICY;
use toolgate::parse::policy::parse_policy;

fn load(text: &str) -> Result<toolgate::gate::GateConfig, toolgate::LoadError> {
    let p = parse_policy(SourceFile::new("p.toml", text.to_string()))?;
    load_gate_config(&p)
}

fn line_of(text: &str, needle: &str) -> usize {
    text[..text.find(needle).unwrap()].matches('\n').count() + 1
}

#[test]
fn shipped_gate_loads_and_has_every_layer() {
    let cfg = shipped();
    assert!(!cfg.shell.rules.is_empty());
    assert!(!cfg.shell.wrappers.is_empty());
    assert!(cfg.sql.statements.contains_key("Drop"));
    assert_eq!(cfg.paths.roots, vec!["."]);
    assert!(!cfg.risk.rules.is_empty());
    assert!(cfg.coercion.true_values.contains(&"yes".to_string()));
    let again = load(DEFAULT_POLICY.1).unwrap();
    assert_eq!(again.patterns.len(), cfg.patterns.len());
}

#[test]
fn seed_danger_patterns_are_present_and_compile() {
    let cfg = shipped();
    let set = PatternSet::compile(&cfg.patterns).unwrap();
    let seed = [
        r"rm\s+(-rf?|--recursive)",
        r">\s*/dev/",
        r"mkfs\.",
        r"dd\s+if=",
        r"chmod\s+777",
        r"(?i)DROP\s+TABLE",
        r"(?i)DELETE\s+FROM\s+\w+\s*$",
        r"(?i)UPDATE\s+\w+\s+SET.*WHERE\s*$",
    ];
    for s in seed {
        assert!(
            set.rules().iter().any(|r| r.pattern == s),
            "seed pattern {s} missing"
        );
    }
    for text in [
        "please rm -rf the cache",
        "cat x > /dev/sda",
        "mkfs.ext4",
        "dd if=/dev/zero",
        "chmod 777 x",
        "drop table users",
        "DELETE FROM users",
        "UPDATE t SET a=1 WHERE",
    ] {
        let f = set.scan_as(PatternScope::Text, "/body", text);
        assert_eq!(f.len(), 1, "{text}: {f:?}");
        assert_eq!(f[0].action, Action::Deny);
        assert!(f[0].severity >= Severity::Medium);
        assert!(
            set.scan_as(PatternScope::Shell, "/command", text)
                .is_empty()
        );
        assert!(set.scan_as(PatternScope::Sql, "/query", text).is_empty());
    }
}

#[test]
fn a_policy_without_gate_gets_the_shipped_gate() {
    let text = DEFAULT_POLICY.1;
    let cut = text.find("\n# ===").unwrap();
    let cfg = load(&text[..cut]).unwrap();
    assert_eq!(cfg.patterns.len(), shipped().patterns.len());
}

#[test]
fn keys_left_out_take_the_shipped_values() {
    let text = DEFAULT_POLICY.1;
    let cut = text.find("\n# ===").unwrap();
    let mine = format!(
        "{}\n[gate.paths]\nroots = [\"/srv/project\"]\n\n[gate.execution]\nmax_retries = 4\n",
        &text[..cut]
    );
    let cfg = load(&mine).unwrap();
    assert_eq!(cfg.paths.roots, vec!["/srv/project"]);
    assert_eq!(cfg.paths.max_symlinks, shipped().paths.max_symlinks);
    assert_eq!(cfg.execution.max_retries, 4);
    assert_eq!(
        cfg.execution.timeout_seconds,
        shipped().execution.timeout_seconds
    );
    assert_eq!(cfg.shell.rules.len(), shipped().shell.rules.len());
}

#[test]
fn unknown_keys_are_errors_at_their_location() {
    for (anchor, bad) in [
        ("[gate.shell.limits]\n", "[gate.shell.limits]\nbogus = 1\n"),
        (
            "[gate.coercion]\n",
            "[gate.coercion]\nnumeric_string = true\n",
        ),
        ("[gate.risk]\n", "[gate.risk]\ndefault_level = \"safe\"\n"),
    ] {
        let text = DEFAULT_POLICY.1.replacen(anchor, bad, 1);
        let err = load(&text).unwrap_err();
        let d = &err.diagnostics[0];
        assert_eq!(d.kind, ErrorKind::UnknownKey, "{err}");
        let key = bad.lines().nth(1).unwrap().split(' ').next().unwrap();
        assert_eq!(
            d.line_col().unwrap().0,
            line_of(&text, &format!("\n{key}")) + 1,
            "{err}"
        );
        assert!(d.to_string().starts_with("p.toml:"), "{err}");
    }
}

#[test]
fn wrong_types_are_errors_at_their_location() {
    let text = DEFAULT_POLICY
        .1
        .replacen("max_depth = 32", "max_depth = \"deep\"", 1);
    let err = load(&text).unwrap_err();
    let d = &err.diagnostics[0];
    assert_eq!(d.kind, ErrorKind::WrongType, "{err}");
    assert_eq!(
        d.line_col().unwrap().0,
        line_of(&text, "max_depth = \"deep\"")
    );
}

#[test]
fn a_regex_the_linear_engine_rejects_is_a_located_error() {
    // Look-around in a shell rule, a backreference in a pattern rule.
    let text = DEFAULT_POLICY
        .1
        .replacen("operand = '^(/|", "operand = '(?<=x)^(/|", 1);
    let err = load(&text).unwrap_err();
    let d = &err.diagnostics[0];
    assert!(d.message.contains("regex"), "{err}");
    assert_eq!(d.line_col().unwrap().0, line_of(&text, "(?<=x)"));

    let text = DEFAULT_POLICY
        .1
        .replacen(r"pattern = 'mkfs\.'", r"pattern = '(a)\1'", 1);
    let err = load(&text).unwrap_err();
    let d = &err.diagnostics[0];
    assert!(d.message.contains("linear-time"), "{err}");
    assert_eq!(d.line_col().unwrap().0, line_of(&text, r"(a)\1"));
}

#[test]
fn a_whole_plan_fails_to_load_on_a_bad_gate() {
    let text = DEFAULT_POLICY
        .1
        .replacen("[gate.limits]\n", "[gate.limits]\nbogus = 1\n", 1);
    let p = parse_policy(SourceFile::new("p.toml", text)).unwrap();
    let tools = toolgate::load::load_catalog(&Default::default()).unwrap();
    let err = toolgate::compile::compile(&p, tools).unwrap_err();
    assert!(err.has(ErrorKind::UnknownKey), "{err}");
}

#[test]
fn an_invalid_tool_schema_is_a_load_error_at_its_input_schema() {
    let policy = parse_policy(SourceFile::new("p.toml", DEFAULT_POLICY.1.to_string())).unwrap();
    let tags = SourceFile::new(
        "bad.toml",
        "[[tool]]\nname = \"x.bad\"\ninput_schema = '{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integr\"}}}'\n",
    );
    let tools = toolgate::parse::tags::parse_tag_file(tags).unwrap();
    let err = toolgate::compile::compile(&policy, tools).unwrap_err();
    let d = &err.diagnostics[0];
    assert!(
        d.message.contains("x.bad") && d.message.contains("JSON Schema"),
        "{err}"
    );
    // At the `input_schema` value (line 3, after `input_schema = `).
    assert!(d.to_string().starts_with("bad.toml:3:16:"), "{err}");
}

#[test]
fn example_calls_are_checked_at_load_with_their_location() {
    let text = DEFAULT_POLICY.1.replacen(
        "arguments = { command = \"sudo /bin/rm -r -f /\" }\ndecision = \"deny\"",
        "arguments = { command = \"sudo /bin/rm -r -f /\" }\ndecision = \"allow\"",
        1,
    );
    assert_ne!(text, DEFAULT_POLICY.1);
    let p = parse_policy(SourceFile::new("p.toml", text.clone())).unwrap();
    let tools = toolgate::load::load_catalog(&Default::default()).unwrap();
    let err = toolgate::compile::compile(&p, tools).unwrap_err();
    let d = &err.diagnostics[0];
    assert_eq!(d.kind, ErrorKind::ExampleFailed, "{err}");
    assert!(
        d.message.contains("must get `allow` but gets `deny`"),
        "{err}"
    );
    let call_line = line_of(&text, "arguments = { command = \"sudo /bin/rm");
    assert_eq!(d.line_col().unwrap().0, call_line - 2, "{err}");

    let text = DEFAULT_POLICY
        .1
        .replacen("decision = \"ask\"", "decision = \"maybe\"", 1);
    let err = parse_policy(SourceFile::new("p.toml", text)).unwrap_err();
    assert!(err.has(ErrorKind::InvalidValue), "{err}");
}

/// The effect model is data: a deployment adds commands and trusted ones
/// in its own policy, and mistakes in that data are errors at their place.
#[test]
fn a_deployment_extends_the_known_commands() {
    let text = format!(
        "{}\n{}",
        DEFAULT_POLICY.1.replacen(
            "[gate.shell]\n",
            "[gate.shell]\nextra_trusted = [\"earthly\"]\n",
            1
        ),
        r#"
[[gate.shell.extra_commands]]
names = ["mytool"]
operands = "read"
options = { "--out" = "write", "--hook" = "exec" }
effects = ["network"]

[[gate.shell.extra_commands]]
names = ["earthly"]
operands = "none"
effects = ["project"]
"#
    );
    let cfg = load(&text).unwrap();
    let paths = &cfg.paths;
    let act = |line: &str| {
        toolgate::gate::decide(&toolgate::gate::analyze_shell(
            &cfg.shell,
            paths,
            "/c",
            toolgate::gate::ShellInput::Line(line),
        ))
    };
    assert_eq!(act("mytool data.txt --out out.txt"), Action::Allow);
    assert_eq!(act("mytool data.txt --out /etc/x"), Action::Ask);
    assert_eq!(act("mytool --hook 'id' x"), Action::Ask);
    assert_eq!(act("earthly +build"), Action::Allow);
    // Without the extension both are unknown.
    let shipped = shipped();
    let before = |line: &str| {
        toolgate::gate::decide(&toolgate::gate::analyze_shell(
            &shipped.shell,
            &shipped.paths,
            "/c",
            toolgate::gate::ShellInput::Line(line),
        ))
    };
    assert_eq!(before("mytool data.txt"), Action::Ask);
    assert_eq!(before("earthly +build"), Action::Ask);
}

#[test]
fn mistakes_in_the_effect_model_are_errors_at_their_location() {
    // An effect that does not exist.
    let text = format!(
        "{}\n[[gate.shell.extra_commands]]\nnames = [\"mytool\"]\noperands = \"writ\"\n",
        DEFAULT_POLICY.1
    );
    let err = load(&text).unwrap_err();
    let d = &err.diagnostics[0];
    assert!(d.to_string().contains("unknown effect `writ`"), "{err}");
    assert_eq!(
        d.line_col().unwrap().0,
        line_of(&text, "operands = \"writ\""),
        "{err}"
    );
    // A command described twice.
    let text = format!(
        "{}\n[[gate.shell.extra_commands]]\nnames = [\"mytool\"]\n\n[[gate.shell.extra_commands]]\nnames = [\"mytool\"]\n",
        DEFAULT_POLICY.1
    );
    let err = load(&text).unwrap_err();
    let d = &err.diagnostics[0];
    assert!(
        d.to_string().contains("`mytool` is described twice"),
        "{err}"
    );
    let second = text.rfind("names = [\"mytool\"]").unwrap();
    let line = text[..second].matches('\n').count() + 1;
    assert_eq!(d.line_col().unwrap().0, line, "{err}");
    // A setting table that does not exist.
    let text = format!(
        "{}\n[[gate.shell.extra_commands]]\nnames = [\"mytool\"]\noptions = {{ \"-o\" = \"config:nope\" }}\n",
        DEFAULT_POLICY.1
    );
    let err = load(&text).unwrap_err();
    let d = &err.diagnostics[0];
    assert!(d.to_string().contains("`config:nope`"), "{err}");
    assert_eq!(
        d.line_col().unwrap().0,
        line_of(&text, "config:nope"),
        "{err}"
    );
}

#[test]
fn hard_link_checks_and_the_trial_bound_come_from_the_policy() {
    let text = DEFAULT_POLICY.1;
    let cut = text.find("\n# ===").unwrap();
    // Shipped: writes asked, reads not checked, 10,000 trial values.
    let cfg = load(&text[..cut]).unwrap();
    assert_eq!(cfg.paths.checks.hard_link_write.action, Action::Ask);
    assert_eq!(cfg.paths.checks.hard_link_write.id, "path.hard-link");
    assert!(cfg.paths.checks.hard_link_read.is_none());
    assert_eq!(cfg.coercion.max_trial_values, 10_000);
    let mine = format!(
        "{}\n[gate.coercion]\nmax_trial_values = 50\n\n[gate.paths.checks]\nhard_link_write = {{ id = \"hl\", severity = \"critical\", action = \"deny\", message = \"no: {{detail}}\" }}\nhard_link_read = {{ id = \"hl-read\", severity = \"low\", action = \"ask\", message = \"read: {{detail}}\" }}\n",
        &text[..cut]
    );
    let cfg = load(&mine).unwrap();
    assert_eq!(cfg.coercion.max_trial_values, 50);
    assert_eq!(cfg.coercion.true_values, shipped().coercion.true_values);
    assert_eq!(cfg.paths.checks.hard_link_write.action, Action::Deny);
    assert_eq!(
        cfg.paths.checks.hard_link_read.as_ref().unwrap().action,
        Action::Ask
    );
    assert_eq!(
        cfg.paths.checks.outside_write,
        shipped().paths.checks.outside_write
    );
    // Bad values are errors at their line.
    for (bad, needle) in [
        (
            "[gate.paths.checks]\nhard_link_read = { id = \"x\", severity = \"loud\", action = \"ask\", message = \"m\" }\n",
            "severity = \"loud\"",
        ),
        (
            "[gate.paths.checks]\nhard_link_write = { id = \"x\", severity = \"high\", action = \"maybe\", message = \"m\" }\n",
            "action = \"maybe\"",
        ),
        (
            "[gate.coercion]\nmax_trial_values = -3\n",
            "max_trial_values = -3",
        ),
        (
            "[gate.coercion]\nmax_trial_values = \"many\"\n",
            "max_trial_values = \"many\"",
        ),
    ] {
        let text = format!("{}\n{bad}", &text[..cut]);
        let err = load(&text).unwrap_err();
        let d = &err.diagnostics[0];
        assert_eq!(
            d.line_col().unwrap().0,
            line_of(&text, needle),
            "{bad}: {err}"
        );
    }
}

#[test]
fn infer_fallback_and_tool_words_are_checked_at_their_location() {
    let cfg = shipped();
    assert!(cfg.infer.iter().any(|r| r.fallback));
    assert!(
        cfg.infer
            .iter()
            .any(|r| r.tool_words.iter().any(|w| w == "sql"))
    );
    for (good, bad) in [
        ("fallback = true", "fallback = \"yes\""),
        ("tool_words = [\"sql\"", "tool_words = [1, \"sql\""),
    ] {
        let text = DEFAULT_POLICY.1.replacen(good, bad, 1);
        assert_ne!(text, DEFAULT_POLICY.1, "{good}");
        let err = load(&text).unwrap_err();
        let d = &err.diagnostics[0];
        assert_eq!(d.line_col().unwrap().0, line_of(&text, bad), "{err}");
    }
}
