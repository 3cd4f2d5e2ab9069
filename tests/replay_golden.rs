//! The streamed `replay` and `compare` (issue 28) print the same bytes as the
//! in-memory code did: tests/data/replay-golden/expected/ holds the outputs of
//! the binary of commit 389b7bc (before streaming), captured by
//! tests/data/replay-golden/capture.sh on the shipped trace, the BFCL slice,
//! interleaved copies of both and a trace with invalid lines. And the result
//! does not depend on the number of threads. The selection policy replayed is
//! the one those outputs were captured with, frozen in
//! tests/data/replay-golden/selection.toml (policies/selection.toml before
//! issue 24; its data paths point at policies/).

use std::process::Command;

const D: &str = "tests/data/replay-golden";
/// The selection policy the expected outputs were captured with.
const SELECTION: &str = "tests/data/replay-golden/selection.toml";

/// The policy file of `pol` (`default` or `selection`).
fn policy_path(pol: &str) -> String {
    match pol {
        "selection" => SELECTION.to_string(),
        _ => format!("policies/{pol}.toml"),
    }
}

fn run(args: &[&str], threads: Option<usize>) -> (String, String, Option<i32>) {
    run_in(None, args, threads)
}

/// A folder that looks like the repository to the binary, with
/// `policies/selection.toml` the frozen copy under its original name and
/// with its original data paths, and `policies/default.toml` as of commit
/// d8fa7cf (tests/data/replay-golden/default.toml): the fit and plot outputs name the policy
/// file (and wrap and size around that name), so they are run from here.
fn frozen_root() -> tempfile::TempDir {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let d = tempfile::tempdir().unwrap();
    let link = |from: &std::path::Path, to: &str| {
        std::os::unix::fs::symlink(from, d.path().join(to)).unwrap()
    };
    for top in ["examples", "tests"] {
        link(&root.join(top), top);
    }
    std::fs::create_dir(d.path().join("policies")).unwrap();
    for p in ["models", "transitions"] {
        link(&root.join("policies").join(p), &format!("policies/{p}"));
    }
    // fit reports the line of a failing property: default.toml frozen too
    link(&root.join(D).join("default.toml"), "policies/default.toml");
    let frozen = std::fs::read_to_string(root.join(SELECTION))
        .unwrap()
        .replace("\"../../../policies/", "\"");
    std::fs::write(d.path().join("policies/selection.toml"), frozen).unwrap();
    d
}

fn run_in(
    dir: Option<&std::path::Path>,
    args: &[&str],
    threads: Option<usize>,
) -> (String, String, Option<i32>) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    c.args(args);
    if let Some(d) = dir {
        c.current_dir(d);
    }
    if let Some(n) = threads {
        c.env("RAYON_NUM_THREADS", n.to_string());
    }
    let o = c.output().expect("the binary runs");
    (
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
        o.status.code(),
    )
}

fn expected(name: &str) -> String {
    std::fs::read_to_string(format!("{D}/expected/{name}")).unwrap()
}

/// (name, trace, catalog arguments), as in capture.sh.
fn traces() -> Vec<(&'static str, String, Vec<String>)> {
    let bfcl = |f: &str| format!("{D}/bfcl/{f}");
    let cat = vec!["--tools".to_string(), bfcl("catalog.json")];
    let mt = vec!["--tools".to_string(), bfcl("multi_turn_catalog.json")];
    vec![
        ("sessions", "examples/sessions.jsonl".into(), vec![]),
        (
            "sessions-interleaved",
            format!("{D}/sessions-interleaved.jsonl"),
            vec![],
        ),
        ("sessions-bad", format!("{D}/sessions-bad.jsonl"), vec![]),
        ("multiple", bfcl("multiple.jsonl"), cat.clone()),
        ("live_multiple", bfcl("live_multiple.jsonl"), cat.clone()),
        ("pooled", bfcl("pooled.jsonl"), cat.clone()),
        (
            "pooled-interleaved",
            format!("{D}/pooled-interleaved.jsonl"),
            cat.clone(),
        ),
        ("irrelevance", bfcl("irrelevance.jsonl"), cat.clone()),
        ("multi_turn", bfcl("multi_turn.jsonl"), mt.clone()),
        (
            "multi_turn-interleaved",
            format!("{D}/multi_turn-interleaved.jsonl"),
            mt,
        ),
    ]
}

#[test]
fn replay_prints_what_the_in_memory_replay_printed() {
    let mut checked = 0;
    for (name, trace, cat) in traces() {
        for pol in ["default", "selection"] {
            for fmt in ["text", "json"] {
                let policy = policy_path(pol);
                let mut args = vec!["replay", "--policy", &policy, "--trace", &trace];
                args.extend(cat.iter().map(|s| s.as_str()));
                args.extend(["--format", fmt, "--skip-invalid"]);
                let (out, err, code) = run(&args, None);
                assert_eq!(code, Some(0), "{args:?}: {err}");
                assert_eq!(
                    out,
                    expected(&format!("replay-{name}-{pol}.{fmt}")),
                    "{args:?}"
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 40);
}

#[test]
fn compare_prints_what_the_in_memory_compare_printed() {
    for (name, trace, cat) in traces() {
        for (extra, file) in [
            (vec!["--show", "1000"], format!("compare-{name}.text")),
            (vec![], format!("compare-{name}-noshow.text")),
            (vec!["--format", "json"], format!("compare-{name}.json")),
        ] {
            let mut args = vec![
                "compare",
                "--policy-a",
                "policies/default.toml",
                "--policy-b",
                SELECTION,
                "--trace",
                &trace,
            ];
            args.extend(cat.iter().map(|s| s.as_str()));
            args.push("--skip-invalid");
            args.extend(extra);
            let (out, err, code) = run(&args, None);
            assert_eq!(code, Some(0), "{args:?}: {err}");
            // The JSON names the policy files: the frozen copy's path for
            // the one the outputs were captured with.
            let out = out.replace(
                &format!("\"b\":\"{SELECTION}\""),
                "\"b\":\"policies/selection.toml\"",
            );
            assert_eq!(out, expected(&file), "{args:?}");
        }
    }
}

/// Without --skip-invalid: every problem of the trace, in file order, then
/// "N problems found" (issue 29: every problem at once), the exit code, and
/// nothing on stdout.
#[test]
fn errors_are_the_in_memory_errors() {
    for pol in ["default", "selection"] {
        for (trace, file) in [
            ("sessions-bad", format!("replay-bad-noskip-{pol}.out")),
            (
                "sessions-unknown",
                format!("replay-unknown-noskip-{pol}.out"),
            ),
        ] {
            let t = format!("{D}/{trace}.jsonl");
            let policy = policy_path(pol);
            let (out, err, code) = run(&["replay", "--policy", &policy, "--trace", &t], None);
            assert_eq!(out, "");
            assert_eq!(format!("{err}exit {}\n", code.unwrap()), expected(&file));
        }
    }
    let t = format!("{D}/sessions-unknown.jsonl");
    let (out, err, code) = run(
        &[
            "compare",
            "--policy-a",
            "policies/default.toml",
            "--policy-b",
            SELECTION,
            "--trace",
            &t,
        ],
        None,
    );
    assert_eq!(out, "");
    assert_eq!(
        format!("{err}exit {}\n", code.unwrap()),
        expected("compare-unknown-noskip.out")
    );
}

/// 600 sessions (more than one parallel batch), 5 open at once: the same
/// bytes with 1 and 2 threads, and the summary the in-memory replay gives.
#[test]
fn results_do_not_depend_on_the_thread_count() {
    let src = std::fs::read_to_string(format!("{D}/pooled-interleaved.jsonl")).unwrap();
    let lines: Vec<&str> = src.lines().collect();
    let mut text = String::new();
    for copy in 0..12 {
        for l in &lines {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let id = format!("c{copy}-{}", v["session"].as_str().unwrap());
            v["session"] = id.into();
            text.push_str(&v.to_string());
            text.push('\n');
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("big.jsonl");
    std::fs::write(&trace, &text).unwrap();
    let trace = trace.display().to_string();
    let cat = format!("{D}/bfcl/catalog.json");
    let replay = |threads| {
        run(
            &[
                "replay", "--policy", SELECTION, "--trace", &trace, "--tools", &cat, "--format",
                "json",
            ],
            Some(threads),
        )
        .0
    };
    let compare = |threads| {
        run(
            &[
                "compare",
                "--policy-a",
                "policies/default.toml",
                "--policy-b",
                SELECTION,
                "--trace",
                &trace,
                "--tools",
                &cat,
                "--show",
                "50",
            ],
            Some(threads),
        )
        .0
    };
    let one = replay(1);
    assert_eq!(one, replay(2));
    assert_eq!(compare(1), compare(2));
    let v: serde_json::Value = serde_json::from_str(&one).unwrap();
    assert_eq!(v["summary"]["sessions"], 600);

    // The in-memory replay of the same trace.
    let plan = std::sync::Arc::new(
        toolgate::compile::compile(
            &toolgate::load::load_policy(Some(std::path::Path::new(SELECTION))).unwrap(),
            {
                let f = toolgate::parse::tags::read_source(std::path::Path::new(&cat)).unwrap();
                toolgate::parse::tags::import_tools_json(&f.name, &f.text).unwrap()
            },
        )
        .unwrap(),
    );
    let t = toolgate::replay::trace::parse_trace(&text, false).unwrap();
    let r = toolgate::replay::engine::replay(&plan, &t, &Default::default()).unwrap();
    let s = serde_json::to_value(toolgate::replay::stats::summarize(&r)).unwrap();
    assert_eq!(v["summary"], s);
    assert_eq!(v["steps"].as_array().unwrap().len(), r.steps.len());
}

/// `--trace -`: stdin is copied to a temporary file and read twice; the
/// report is the same.
#[test]
fn stdin_gives_the_same_report() {
    use std::io::Write;
    let mut c = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args([
            "replay",
            "--policy",
            SELECTION,
            "--trace",
            "-",
            "--format",
            "json",
            "--skip-invalid",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let text = std::fs::read(format!("{D}/sessions-interleaved.jsonl")).unwrap();
    c.stdin.take().unwrap().write_all(&text).unwrap();
    let o = c.wait_with_output().unwrap();
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        expected("replay-sessions-interleaved-selection.json")
    );
}

/// (name, trace, policy, catalog arguments), as in capture-fit.sh.
fn fit_cases() -> Vec<(&'static str, String, &'static str, Vec<String>)> {
    let bfcl = |f: &str| format!("{D}/bfcl/{f}");
    let cat = vec!["--tools".to_string(), bfcl("catalog.json")];
    let mt = vec!["--tools".to_string(), bfcl("multi_turn_catalog.json")];
    vec![
        (
            "sessions",
            "examples/sessions.jsonl".into(),
            "default",
            vec![],
        ),
        (
            "sessions",
            "examples/sessions.jsonl".into(),
            "selection",
            vec![],
        ),
        (
            "sessions-interleaved",
            format!("{D}/sessions-interleaved.jsonl"),
            "default",
            vec![],
        ),
        ("multiple", bfcl("multiple.jsonl"), "selection", cat.clone()),
        ("pooled", bfcl("pooled.jsonl"), "default", cat.clone()),
        ("pooled", bfcl("pooled.jsonl"), "selection", cat),
        (
            "multi_turn",
            bfcl("multi_turn.jsonl"),
            "default",
            mt.clone(),
        ),
        ("multi_turn", bfcl("multi_turn.jsonl"), "selection", mt),
    ]
}

/// The streamed fit (issue 28, second round) prints what the whole-matrix
/// fit of commit d8fa7cf printed: these traces have fewer rows than
/// `--max-rows`, so nothing is sampled and the report is the same bytes
/// (weights, AUCs, threshold, both splits' quality, failing examples and
/// exit code).
#[test]
fn fit_prints_what_the_whole_matrix_fit_printed() {
    let frozen = frozen_root();
    let mut checked = 0;
    for (name, trace, pol, cat) in fit_cases() {
        for fmt in ["text", "json"] {
            let policy = format!("policies/{pol}.toml");
            let mut args = vec!["fit", "--policy", &policy, "--trace", &trace];
            args.extend(cat.iter().map(|s| s.as_str()));
            args.extend(["--skip-invalid", "--format", fmt]);
            let (out, err, code) = run_in(Some(frozen.path()), &args, None);
            let mut got = out + &err;
            if code != Some(0) {
                got.push_str(&format!("exit {}\n", code.unwrap_or(-1)));
            }
            assert_eq!(
                got,
                expected(&format!("fit-{name}-{pol}.{fmt}")),
                "{args:?}"
            );
            checked += 1;
        }
    }
    let bfcl = format!("{D}/bfcl");
    let (trace, cat) = (
        format!("{bfcl}/pooled.jsonl"),
        format!("{bfcl}/catalog.json"),
    );
    let args = [
        "fit",
        "--policy",
        "policies/selection.toml",
        "--trace",
        &trace,
        "--tools",
        &cat,
        "--negatives",
        "50",
        "--holdout",
        "0.3",
        "--target-recall",
        "0.9",
    ];
    let (out, err, code) = run_in(Some(frozen.path()), &args, None);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, expected("fit-pooled-negatives.text"));
    assert_eq!(checked, 16);
}

/// `compare --plot` streams: the same report and the same SVG bytes as the
/// in-memory plot of commit d8fa7cf.
#[test]
fn the_streamed_plot_is_the_in_memory_plot() {
    let tmp = tempfile::tempdir().unwrap();
    let frozen = frozen_root();
    let bfcl = |f: &str| format!("{D}/bfcl/{f}");
    for (name, trace, cat) in [
        ("sessions", "examples/sessions.jsonl".to_string(), vec![]),
        (
            "pooled",
            bfcl("pooled.jsonl"),
            vec!["--tools".to_string(), bfcl("catalog.json")],
        ),
        (
            "multi_turn",
            bfcl("multi_turn.jsonl"),
            vec!["--tools".to_string(), bfcl("multi_turn_catalog.json")],
        ),
    ] {
        let svg = tmp.path().join(format!("plot-{name}.svg"));
        let svg_s = svg.to_str().unwrap().to_string();
        let mut args = vec![
            "compare",
            "--policy-a",
            "policies/default.toml",
            "--policy-b",
            "policies/selection.toml",
            "--trace",
            &trace,
        ];
        args.extend(cat.iter().map(|s| s.as_str()));
        args.extend(["--skip-invalid", "--plot", &svg_s]);
        let (out, err, code) = run_in(Some(frozen.path()), &args, Some(2));
        assert_eq!(code, Some(0), "{args:?}: {err}");
        let want = expected(&format!("plot-{name}.text"))
            .replace(&format!("{D}/expected/plot-{name}.svg"), &svg_s);
        assert_eq!(out, want, "{args:?}");
        assert_eq!(
            std::fs::read(&svg).unwrap(),
            std::fs::read(format!("{D}/expected/plot-{name}.svg")).unwrap(),
            "{name}"
        );
    }
}

/// (name, trace, catalog arguments), as in capture-floor.sh.
fn floor_cases() -> Vec<(&'static str, String, Vec<String>)> {
    let bfcl = |f: &str| format!("{D}/bfcl/{f}");
    let cat = vec!["--tools".to_string(), bfcl("catalog.json")];
    let mt = vec!["--tools".to_string(), bfcl("multi_turn_catalog.json")];
    vec![
        ("sessions", "examples/sessions.jsonl".into(), vec![]),
        (
            "sessions-interleaved",
            format!("{D}/sessions-interleaved.jsonl"),
            vec![],
        ),
        ("sessions-bad", format!("{D}/sessions-bad.jsonl"), vec![]),
        ("pooled", bfcl("pooled.jsonl"), cat.clone()),
        (
            "pooled-interleaved",
            format!("{D}/pooled-interleaved.jsonl"),
            cat.clone(),
        ),
        ("irrelevance", bfcl("irrelevance.jsonl"), cat.clone()),
        ("multiple", bfcl("multiple.jsonl"), cat),
        ("multi_turn", bfcl("multi_turn.jsonl"), mt.clone()),
        (
            "multi_turn-interleaved",
            format!("{D}/multi_turn-interleaved.jsonl"),
            mt,
        ),
    ]
}

fn with_exit((out, err, code): (String, String, Option<i32>)) -> String {
    let mut got = out + &err;
    if code != Some(0) {
        got.push_str(&format!("exit {}\n", code.unwrap_or(-1)));
    }
    got
}

/// `fit --fit floor` and `--transitions-out` read the trace line by line
/// (issue 28, third round) and print and write what the binary of commit
/// 58416f4 did when they read it whole (tests/data/replay-golden/
/// capture-floor.sh): every floor key (JSON; text for one), the learned
/// transitions with both fits, the errors without `--skip-invalid`; and
/// the same bytes with 1 and 2 threads.
#[test]
fn floor_and_transitions_print_what_the_whole_trace_code_printed() {
    let tmp = tempfile::tempdir().unwrap();
    let floor_policy = format!("{D}/floor.toml");
    let mut checked = 0;
    for (name, trace, cat) in floor_cases() {
        for floor in ["min-score", "min-score-idf", "min-coverage", "min-share"] {
            // the text report for one key (the same numbers as the JSON)
            let fmts: &[&str] = if floor == "min-score-idf" {
                &["text", "json"]
            } else {
                &["json"]
            };
            for &fmt in fmts {
                let mut args = vec![
                    "fit",
                    "--fit",
                    "floor",
                    "--floor",
                    floor,
                    "--policy",
                    &floor_policy,
                    "--trace",
                    &trace,
                ];
                args.extend(cat.iter().map(|s| s.as_str()));
                args.extend([
                    "--skip-invalid",
                    "--holdout",
                    "0.3",
                    "--target-recall",
                    "0.8",
                    "--format",
                    fmt,
                ]);
                let threads = if checked % 2 == 0 { 1 } else { 2 };
                assert_eq!(
                    with_exit(run(&args, Some(threads))),
                    expected(&format!("floor-{name}-{floor}.{fmt}")),
                    "{args:?}"
                );
                checked += 1;
            }
        }
        let out = tmp.path().join(format!("{name}.toml"));
        let out = out.to_str().unwrap();
        let mut args = vec![
            "fit",
            "--fit",
            "floor",
            "--policy",
            &floor_policy,
            "--trace",
            &trace,
        ];
        args.extend(cat.iter().map(|s| s.as_str()));
        args.extend(["--skip-invalid", "--holdout", "0", "--transitions-out", out]);
        run(&args, None);
        assert_eq!(
            std::fs::read_to_string(out).unwrap(),
            expected(&format!("transitions-{name}.toml")),
            "{args:?}"
        );
    }
    assert_eq!(checked, 45);
    for (name, trace, cat) in [
        ("sessions", "examples/sessions.jsonl".to_string(), vec![]),
        (
            "multi_turn",
            format!("{D}/bfcl/multi_turn.jsonl"),
            vec![
                "--tools".to_string(),
                format!("{D}/bfcl/multi_turn_catalog.json"),
            ],
        ),
    ] {
        let out = tmp.path().join(format!("{name}-weights.toml"));
        let out = out.to_str().unwrap();
        let mut args = vec!["fit", "--policy", SELECTION, "--trace", &trace];
        args.extend(cat.iter().map(|s| s.as_str()));
        args.extend(["--skip-invalid", "--transitions-out", out]);
        // the fit's report names the file written: the captured one's path
        let captured = format!("{D}/expected/transitions-{name}-weights.toml");
        let got = with_exit(run(&args, None)).replace(out, &captured);
        assert_eq!(
            got,
            expected(&format!("transitions-{name}-weights.text")),
            "{args:?}"
        );
        assert_eq!(
            std::fs::read_to_string(out).unwrap(),
            expected(&format!("transitions-{name}-weights.toml"))
        );
    }
    for name in ["sessions-bad", "sessions-unknown"] {
        let trace = format!("{D}/{name}.jsonl");
        let args = [
            "fit",
            "--fit",
            "floor",
            "--policy",
            &floor_policy,
            "--trace",
            &trace,
        ];
        assert_eq!(
            with_exit(run(&args, None)),
            expected(&format!("floor-{name}-noskip.out")),
            "{args:?}"
        );
        let args = [
            "fit",
            "--policy",
            SELECTION,
            "--trace",
            &trace,
            "--transitions-out",
            "/dev/null",
        ];
        assert_eq!(
            with_exit(run(&args, None)),
            expected(&format!("transitions-{name}-noskip.out")),
            "{args:?}"
        );
    }
}

/// The streamed weight fit gives the same report with 1 and 2 threads, with
/// and without sampling: 600 sessions (more than one parallel batch), 5
/// open at once.
#[test]
fn the_fit_does_not_depend_on_the_thread_count() {
    let src = std::fs::read_to_string(format!("{D}/pooled-interleaved.jsonl")).unwrap();
    let mut text = String::new();
    for copy in 0..12 {
        for l in src.lines() {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let id = format!("c{copy}-{}", v["session"].as_str().unwrap());
            v["session"] = id.into();
            text.push_str(&v.to_string());
            text.push('\n');
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("big.jsonl");
    std::fs::write(&trace, &text).unwrap();
    let trace = trace.display().to_string();
    let cat = format!("{D}/bfcl/catalog.json");
    for max_rows in ["1000000", "20000"] {
        let fit = |threads| {
            with_exit(run(
                &[
                    "fit",
                    "--policy",
                    SELECTION,
                    "--trace",
                    &trace,
                    "--tools",
                    &cat,
                    "--max-rows",
                    max_rows,
                    "--format",
                    "json",
                ],
                Some(threads),
            ))
        };
        let one = fit(1);
        let v: serde_json::Value = serde_json::from_str(&one).expect(&one);
        assert_eq!(v["sessions"], 600, "{one}");
        assert_eq!(v["sample"].is_null(), max_rows == "1000000", "{one}");
        assert_eq!(one, fit(2), "--max-rows {max_rows}");
    }
}
