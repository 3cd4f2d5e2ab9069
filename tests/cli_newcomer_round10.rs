//! Issue 29, newcomer pass 10 (a fresh clone, ~175 bad inputs): the echoes
//! that were still unbounded (item 5: a 120,000-character name made 120 KB
//! of output), guard's clip count, and the small ones (watch's hash of a
//! path's spelling, `time.TOML`, `--tools -`, `guard --tool ''`, SQL over
//! 256 KB, `fit --out .`, `--era` with no servers, a latency of 1.797e308).

mod common;
use common::{stderr, stdout, toolgate, write};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// 120,000 `a`s: echoed as 200 of them and this marker.
const MARKER: &str = "… 119800 more characters";

fn huge() -> String {
    "a".repeat(120_000)
}

/// A `[[tool]]` table of a tag file: `name`, `domains` and
/// `preferred_stages` as given (TOML text), then `extra` lines.
fn tag_tool(name: &str, domains: &str, stages: &str, extra: &str) -> String {
    format!(
        "[[tool]]\nname = \"{name}\"\ndescription = \"reads a file\"\ninput_schema = '{{\"type\":\"object\"}}'\ndomains = {domains}\npreferred_stages = {stages}\ntrigger_keywords = [\"x\"]\nbase_priority = 0.5\nparameter_complexity = 1\n{extra}\n"
    )
}

/// `o` failed with `code`, its output stays under 20 KB and carries
/// [`MARKER`].
fn bounded(what: &str, o: &std::process::Output, code: i32) {
    let (out, err) = (stdout(o), stderr(o));
    assert_eq!(
        o.status.code(),
        Some(code),
        "{what}: {}",
        &err[..err.len().min(2000)]
    );
    assert!(
        out.len() + err.len() < 20_000,
        "{what}: {} + {} bytes",
        out.len(),
        err.len()
    );
    assert!(
        out.contains(MARKER) || err.contains(MARKER),
        "{what}: {}{}",
        &out[..out.len().min(2000)],
        &err[..err.len().min(2000)]
    );
}

/// The shipped default policy with `extra` appended.
fn policy_with(extra: &str) -> String {
    let p = std::fs::read_to_string(format!("{ROOT}/policies/default.toml")).unwrap();
    format!("{p}\n{extra}\n")
}

/// (1) The load diagnostics quote a huge tool name, domain, stage or key
/// clipped: `duplicate_tool` (two tools of one name in `--tools`),
/// `undeclared_domain`, `undeclared_stage`, `unknown_key` (tag files and
/// the policy), and policy text in messages (a rule's name). Each was
/// about 124 KB of stderr.
#[test]
fn load_diagnostics_clip_what_they_quote() {
    let d = tempfile::tempdir().unwrap();
    let n = huge();
    let tool =
        serde_json::json!({"name": n, "description": "x", "inputSchema": {"type": "object"}});
    let dup = write(
        d.path(),
        "dup.json",
        &serde_json::json!({"tools": [tool, tool]}).to_string(),
    );
    let o = toolgate(&["check", "--tools", &dup], None);
    bounded("duplicate_tool", &o, 1);
    assert!(stderr(&o).contains("duplicate_tool"), "{}", stderr(&o));
    let cases = [
        (
            "undeclared_domain",
            tag_tool("x.y", &format!("[\"{n}\"]"), "[]", ""),
        ),
        (
            "undeclared_stage",
            tag_tool("x.y", "[]", &format!("[\"{n}\"]"), ""),
        ),
        (
            "unknown_key",
            tag_tool("x.y", "[]", "[]", &format!("{n} = 1")),
        ),
    ];
    for (kind, text) in cases {
        let dir = d.path().join(kind);
        std::fs::create_dir(&dir).unwrap();
        write(&dir, "t.toml", &text);
        let o = toolgate(&["check", "--tags", dir.to_str().unwrap()], None);
        bounded(kind, &o, 1);
        assert!(stderr(&o).contains(kind), "{kind}: {}", stderr(&o));
    }
    // the policy: an unknown key, a rule's undeclared domain, a rule's name
    let p = write(d.path(), "k.toml", &policy_with(&format!("{n} = 1")));
    bounded(
        "policy unknown_key",
        &toolgate(&["check", "--policy", &p], None),
        1,
    );
    let rule = format!(
        "[[domain_rules]]\nname = \"{n}\"\nwhen = {{ expr = \"nosuchvar > 1\" }}\nadjust = {{ {n} = 0.1 }}"
    );
    let p = write(d.path(), "r.toml", &policy_with(&rule));
    let o = toolgate(&["check", "--policy", &p], None);
    bounded("policy rule", &o, 1);
    assert!(
        stderr(&o).contains("undeclared_domain"),
        "{}",
        &stderr(&o)[..2000.min(stderr(&o).len())]
    );
}

/// (1) `explain`'s did-you-mean names a huge near-miss clipped (it was 120
/// KB); `guard --session` with a huge id is refused with the id clipped;
/// an allowed call's `arguments:` line clips a huge value.
#[test]
fn explain_guard_session_and_arguments_are_clipped() {
    let d = tempfile::tempdir().unwrap();
    let n = huge();
    let tools = serde_json::json!({"tools": [{"name": n, "description": "reads a file", "inputSchema": {"type": "object"}}]});
    let tools = write(d.path(), "t.json", &tools.to_string());
    let near = format!("{n}b");
    let o = toolgate(&["explain", &near, "--tools", &tools], None);
    bounded("explain", &o, 5);
    assert!(stderr(&o).contains("did you mean"), "{}", stderr(&o));
    let call = ["guard", "--tool", "time.get_current_time"];
    let o = toolgate(
        &[
            &call[..],
            &["--args", r#"{"timezone": "UTC"}"#, "--session", &n],
        ]
        .concat(),
        None,
    );
    bounded("guard --session", &o, 3);
    let args = serde_json::json!({"timezone": n}).to_string();
    let o = toolgate(&[&call[..], &["--args", &args]].concat(), None);
    bounded("guard arguments", &o, 0);
    assert!(
        stdout(&o).contains("arguments: {\"timezone\":\"aaa"),
        "{}",
        stdout(&o)
    );
    // ... and a huge array of short values too
    let many = serde_json::json!({"timezone": "UTC", "x": vec![1; 50_000]}).to_string();
    let o = toolgate(&[&call[..], &["--args", &many]].concat(), None);
    assert!(stdout(&o).len() < 20_000, "{} bytes", stdout(&o).len());
}

/// (2) An unknown huge `--tool` is clipped once: every count says how many
/// characters were left out (119,800), never the marker's own length (it
/// said `… 25 more characters` where the name was clipped twice).
#[test]
fn guard_counts_what_it_left_out_of_a_huge_tool_name() {
    let n = huge();
    let o = toolgate(&["guard", "--tool", &n], None);
    bounded("guard --tool", &o, 7);
    let out = stdout(&o);
    let counts: Vec<&str> = out
        .match_indices(" more characters")
        .map(|(i, _)| out[..i].rsplit(' ').next().unwrap())
        .collect();
    assert!(!counts.is_empty(), "{out}");
    assert!(counts.iter().all(|c| *c == "119800"), "{counts:?}: {out}");
}

/// (1) clap's own messages quote a huge `--format` value or subcommand
/// clipped (it was 120 KB); a short value is quoted as before.
#[test]
fn clap_messages_clip_the_value_they_refuse() {
    let n = huge();
    for args in [
        vec!["eval", "--format", &n],
        vec![&n],
        vec!["eval", "--format", "json", &n],
    ] {
        let o = toolgate(&args, None);
        bounded("clap", &o, 2);
    }
    let o = toolgate(&["eval", "--format", "xml"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("invalid value 'xml' for '--format <FORMAT>'"),
        "{}",
        stderr(&o)
    );
    // a long value that is fine stays whole: only the error is clipped
    let args = serde_json::json!({"timezone": "UTC", "pad": "p".repeat(1000)}).to_string();
    let o = toolgate(
        &[
            "guard",
            "--tool",
            "time.get_current_time",
            "--args",
            &args,
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains(&"p".repeat(1000)));
}

/// (1) A property's name and the detail of its failure (which names the
/// tool) are clipped in `check`'s text (exit 4).
#[test]
fn property_names_and_details_are_clipped() {
    let d = tempfile::tempdir().unwrap();
    let n = huge();
    let tools = serde_json::json!({"tools": [{"name": n, "description": "reads a file", "inputSchema": {"type": "object"}}]});
    let tools = write(d.path(), "t.json", &tools.to_string());
    let prop = format!("[[properties]]\nname = \"{n}\"\nalways_active = [\"{n}\"]");
    let p = write(d.path(), "p.toml", &policy_with(&prop));
    let o = toolgate(&["check", "--policy", &p, "--tools", &tools], None);
    bounded("property", &o, 4);
    assert!(stdout(&o).contains("FAIL"), "{}", stdout(&o));
}

/// The first line `toolgate watch --tags TAGS` prints (its first load).
fn first_watch_line(tags: &str) -> String {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .current_dir(ROOT)
        .args([
            "watch",
            "--input",
            "examples/sql-session.json",
            "--tags",
            tags,
            "--format",
            "json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    line
}

/// (3) `watch`'s hash is of the files' contents: the tags folder spelt
/// `tool-tags`, `./tool-tags/` or absolutely gives one hash.
#[test]
fn watch_hashes_contents_not_how_a_path_is_spelt() {
    let hash = |tags: &str| -> String {
        let line = first_watch_line(tags);
        let v: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        v["hash"]
            .as_str()
            .unwrap_or_else(|| panic!("{line}"))
            .to_string()
    };
    let a = hash("tool-tags");
    assert_eq!(hash("./tool-tags/"), a);
    assert_eq!(hash(&format!("{ROOT}/tool-tags")), a);
}

/// (3) A tag file named `time.TOML` is read like `time.toml` (it was
/// ignored without a word, and a folder of only such files "held no tag
/// file").
#[test]
fn a_tag_file_with_an_upper_case_extension_is_read() {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(
        format!("{ROOT}/tool-tags/time.toml"),
        d.path().join("time.TOML"),
    )
    .unwrap();
    let o = toolgate(&["check", "--tags", d.path().to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("tools: 2 (0 auto-tagged) from 1 file(s)"),
        "{}",
        stdout(&o)
    );
}

/// (3) `--tools -`, `--policy -` and `--tags -` say that standard input is
/// not read for them (they looked for a file named `-`); exit 1 as for any
/// plan file that cannot be read.
#[test]
fn plan_options_say_stdin_is_not_read() {
    for opt in ["--tools", "--policy", "--tags"] {
        let o = toolgate(&["check", opt, "-"], Some("{}"));
        assert_eq!(o.status.code(), Some(1), "{opt}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("{opt} -: "))
                && stderr(&o).contains("cannot be read from standard input"),
            "{opt}: {}",
            stderr(&o)
        );
    }
}

/// (3) `guard --tool ''` is bad usage (exit 2, README's table), not a
/// call the gate denies (exit 7).
#[test]
fn an_empty_tool_name_is_a_usage_error() {
    let o = toolgate(&["guard", "--tool", ""], None);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("the tool name is empty"),
        "{}",
        stderr(&o)
    );
}

/// (3) SQL over `[gate.sql] max_input_bytes` (256 KB) is denied as too
/// large to analyse, not told to "fix the syntax".
#[test]
fn sql_over_the_limit_is_too_large_not_a_syntax_error() {
    let d = tempfile::tempdir().unwrap();
    let sql = format!("select {}1", "1,".repeat(140_000));
    let args = write(
        d.path(),
        "a.json",
        &serde_json::json!({"query": sql}).to_string(),
    );
    let o = toolgate(
        &[
            "guard",
            "--tool",
            "sqlite.read_query",
            "--args",
            &format!("@{args}"),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(7), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(
        out.contains("sql.too-large") && out.contains("too large to analyse"),
        "{out}"
    );
    assert!(!out.contains("Fix the syntax"), "{out}");
}

/// (3) `fit --out .` (a folder) is refused before the fit runs: nothing on
/// stdout, the option named (it failed after the whole fit).
#[test]
fn fit_checks_its_output_before_fitting() {
    let trace = format!("{ROOT}/examples/sessions.jsonl");
    let o = toolgate(&["fit", "--trace", &trace, "--out", "."], None);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--out .: this is a folder"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
}

/// (3) `mcp-proxy --era NAME=ERA` with no server says there is none to
/// apply it to (it said "the servers are: none").
#[test]
fn era_without_servers_says_so() {
    let o = toolgate(&["mcp-proxy", "--era", "sqlite=legacy"], Some(""));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("there are no servers to apply --era to"),
        "{}",
        stderr(&o)
    );
}

/// (3) A latency of 1.797e308 ms prints as a finite number (it was `p95
/// inf s`), in text and JSON.
#[test]
fn a_huge_latency_stays_finite_in_the_summary() {
    let d = tempfile::tempdir().unwrap();
    let line = r#"{"time":"t","event":"verdict","call_id":"a","tool":"x","decision":"allow","rule_ids":[],"args_digest":"d","args_preview":"{}","latency_ms":1.797e308,"outcome":"allowed"}"#;
    let log = write(d.path(), "a.jsonl", &format!("{line}\n"));
    let o = toolgate(&["audit", "summary", &log], None);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains("inf"), "{}", stdout(&o));
    assert!(stdout(&o).contains("p95 1.80e305 s"), "{}", stdout(&o));
    let o = toolgate(&["audit", "summary", &log, "--format", "json"], None);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["latency_p95_ms"].as_f64(),
        Some(1.797e308),
        "{}",
        stdout(&o)
    );
}
