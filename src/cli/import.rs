//! `toolgate import bfcl`: BFCL data → a catalog and traces.

use std::path::Path;

use toolgate::replay::bfcl::{BfclFiles, CLASS_FILES, convert};
use toolgate::replay::bfcl_check::{BfclKind, check, missing_docs, unanswered};

use super::Fail;

/// What `--data` must hold, and where BFCL's files come from (for the
/// errors).
const WHAT_DATA_HOLDS: &str = "give the folder of the BFCL v4 data: it holds BFCL_v4_multiple.json, BFCL_v4_live_multiple.json, BFCL_v4_irrelevance.json or BFCL_v4_multi_turn_base.json (with possible_answer/ and multi_turn_func_doc/); BFCL's files are the folder berkeley-function-call-leaderboard/bfcl_eval/data/ of the public gorilla repository (https://github.com/ShishirPatil/gorilla), also shipped in the `bfcl-eval` package on PyPI (bfcl_eval/data/): see `toolgate import bfcl --help` for an example";

fn read_opt(path: &Path) -> Result<Option<String>, Fail> {
    if !path.exists() {
        return Ok(None);
    }
    std::fs::read(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
        .and_then(|b| {
            toolgate::datafile::decode_text(b).map_err(|e| format!("{}: {e}", path.display()))
        })
        .map(Some)
        .map_err(Fail::Input)
}

fn pair(dir: &Path, name: &str) -> Result<Option<(String, String)>, Fail> {
    let q = read_opt(&dir.join(name))?;
    let a = read_opt(&dir.join("possible_answer").join(name))?;
    match (q, a) {
        (Some(q), Some(a)) => Ok(Some((q, a))),
        (Some(_), None) => Err(Fail::Input(format!(
            "{}: found {name} but not possible_answer/{name}",
            dir.display()
        ))),
        _ => Ok(None),
    }
}

/// The problems of the shapes of `files` (read from `data`), each at
/// `FILE:LINE:COLUMN` ([`toolgate::replay::bfcl_check`]), and the
/// questions with no answer.
fn shapes(data: &Path, files: &BfclFiles) -> Vec<String> {
    let shown = |rel: &str| data.join(rel).display().to_string();
    let mut out = Vec::new();
    let pairs = [
        (
            "BFCL_v4_multiple.json",
            &files.multiple,
            BfclKind::SingleTurn,
        ),
        (
            "BFCL_v4_live_multiple.json",
            &files.live_multiple,
            BfclKind::SingleTurn,
        ),
        (
            "BFCL_v4_multi_turn_base.json",
            &files.multi_turn,
            BfclKind::MultiTurn,
        ),
    ];
    for (name, pair, kind) in pairs {
        let Some((q, a)) = pair else { continue };
        let answers = format!("possible_answer/{name}");
        let (pq, pa) = (
            check(&shown(name), q, kind),
            check(&shown(&answers), a, BfclKind::Answers),
        );
        let clean = pq.is_empty() && pa.is_empty();
        out.extend(pq);
        out.extend(pa);
        if clean {
            out.extend(unanswered(&shown(name), q, &answers, a));
        }
    }
    if let Some(q) = &files.irrelevance {
        out.extend(check(
            &shown("BFCL_v4_irrelevance.json"),
            q,
            BfclKind::SingleTurn,
        ));
    }
    if let Some((q, _)) = &files.multi_turn {
        let have: Vec<&str> = files.func_docs.iter().map(|(s, _)| s.as_str()).collect();
        let name = shown("BFCL_v4_multi_turn_base.json");
        out.extend(missing_docs(&name, q, &have, &shown("multi_turn_func_doc")));
    }
    for (stem, text) in &files.func_docs {
        let rel = format!("multi_turn_func_doc/{stem}.json");
        out.extend(check(&shown(&rel), text, BfclKind::FuncDoc));
    }
    out
}

/// Converts the BFCL files of `data` and writes the catalog and traces to `out`.
pub fn run_import_bfcl(
    o: &mut String,
    data: &Path,
    out: &Path,
    limit: Option<usize>,
) -> Result<(), Fail> {
    if limit == Some(0) {
        return Err(Fail::Input(
            "--limit must be ≥ 1 (the questions kept from each file; leave it out to keep them all): --limit 0 would write empty traces".into(),
        ));
    }
    if !data.is_dir() {
        let what = if data.exists() {
            format!("--data must be a folder; {} is a file", data.display())
        } else {
            format!("--data {}: the folder does not exist", data.display())
        };
        return Err(Fail::Input(format!("{what}; {WHAT_DATA_HOLDS}")));
    }
    // `out` is created, not its parents (`cli::paths`); an existing file
    // there is named, not met as `File exists (os error 17)`.
    super::paths::existing_folder("--out", out).map_err(Fail::Input)?;
    if out.exists() && !out.is_dir() {
        return Err(Fail::Input(format!(
            "--out must be a folder; {} is a file (name a new or existing folder for the catalog and traces written)",
            out.display()
        )));
    }
    let mut files = BfclFiles {
        multiple: pair(data, "BFCL_v4_multiple.json")?,
        live_multiple: pair(data, "BFCL_v4_live_multiple.json")?,
        irrelevance: read_opt(&data.join("BFCL_v4_irrelevance.json"))?,
        multi_turn: pair(data, "BFCL_v4_multi_turn_base.json")?,
        func_docs: Vec::new(),
    };
    for (_, stem) in CLASS_FILES {
        if let Some(t) = read_opt(
            &data
                .join("multi_turn_func_doc")
                .join(format!("{stem}.json")),
        )? {
            files.func_docs.push((stem.to_string(), t));
        }
    }
    if files.multiple.is_none()
        && files.live_multiple.is_none()
        && files.irrelevance.is_none()
        && files.multi_turn.is_none()
    {
        return Err(Fail::Input(format!(
            "--data {}: no BFCL_v4_*.json file in this folder; {WHAT_DATA_HOLDS}",
            data.display()
        )));
    }
    // never among the files read (before the conversion, the work)
    super::paths::outside_folder("--out", out, "--data", data).map_err(Fail::Input)?;
    // Every file's shape first: an empty file, a line that is not JSON, a
    // value of the wrong type are errors at FILE:LINE:COLUMN (`bfcl_check`).
    let problems = shapes(data, &files);
    if !problems.is_empty() {
        let n = problems.len();
        return Err(Fail::Input(format!(
            "{}\n{n} problem{} found in the BFCL files",
            problems.join("\n"),
            if n == 1 { "" } else { "s" }
        )));
    }
    let res = convert(&files, limit).map_err(Fail::Input)?;
    std::fs::create_dir(out)
        .or_else(|e| if out.is_dir() { Ok(()) } else { Err(e) })
        .map_err(|e| Fail::Input(format!("cannot create {}: {e}", out.display())))?;
    let write = |name: &str, text: &str| {
        std::fs::write(out.join(name), text)
            .map_err(|e| Fail::Input(format!("cannot write {}: {e}", out.join(name).display())))
    };
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
    if res.summary.catalog_tools > 0 {
        write("catalog.json", &pretty(&res.catalog))?;
        w!(
            o,
            "catalog.json: {} tools ({} candidate functions read, {} names merged from several variants)",
            res.summary.catalog_tools,
            res.summary.candidate_functions,
            res.summary.merged_names
        );
    }
    if let Some(c) = &res.multi_turn_catalog {
        write("multi_turn_catalog.json", &pretty(c))?;
        w!(
            o,
            "multi_turn_catalog.json: {} tools",
            res.summary.multi_turn_tools
        );
    }
    for (name, text) in &res.traces {
        write(name, text)?;
        let n = res
            .summary
            .sessions
            .iter()
            .find(|(f, _)| f == name)
            .map(|x| x.1)
            .unwrap_or(0);
        w!(o, "{name}: {n} sessions, {} lines", text.lines().count());
    }
    if !res.questions.is_empty() {
        write("questions.jsonl", &res.questions)?;
        w!(
            o,
            "questions.jsonl: {} questions, each with its own candidate functions",
            res.questions.lines().count()
        );
    }
    if res.summary.unparsed_calls > 0 {
        w!(
            o,
            "warning: {} multi-turn call(s) kept with raw arguments (not parsed)",
            res.summary.unparsed_calls
        );
    }
    Ok(())
}
