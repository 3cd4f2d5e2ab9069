//! The shape of BFCL's files, checked before they are converted
//! ([`super::bfcl::convert`]), so that a file that is empty, is not JSON
//! Lines, or holds a value of the wrong type is an error at
//! `FILE:LINE:COLUMN` instead of an empty trace or a question dropped in
//! silence (issue 29). The shapes are those of BFCL v4 (`bfcl_eval/data/`
//! of the gorilla repository's `berkeley-function-call-leaderboard`):
//!
//! | file | each line |
//! | --- | --- |
//! | `BFCL_v4_multiple.json`, `…_live_multiple.json`, `…_irrelevance.json` | `{"id": string, "question": [[{"role": string, "content": string}, …], …], "function": [{"name": string, "parameters": object, …}, …]}` |
//! | `BFCL_v4_multi_turn_base.json` | `{"id", "question": [[message, …], …], "involved_classes": [string, …], …}` |
//! | `possible_answer/…` | `{"id": string, "ground_truth": [...]}` |
//! | `multi_turn_func_doc/*.json` | `{"name": string, "parameters": object, …}` |
//!
//! Keys beyond these are BFCL's own and are not read.

use serde_json::Value;

use crate::diag::json_path::{Seg, value_span};

/// What a BFCL file holds, for its check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BfclKind {
    /// Single-turn questions with their candidate functions (`multiple`,
    /// `live_multiple`, `irrelevance`).
    SingleTurn,
    /// Multi-turn questions (`multi_turn_base`).
    MultiTurn,
    /// The answers of `possible_answer/`.
    Answers,
    /// The functions of one API class (`multi_turn_func_doc/`).
    FuncDoc,
}

/// At most this many problems of one file are listed ("… N more" after).
pub const MAX_PROBLEMS: usize = 20;

/// Every problem of the BFCL file `name` (its path, for messages) whose
/// text is `text`, each as `NAME:LINE:COLUMN: message` (`NAME: message`
/// for a file with no entry), capped at [`MAX_PROBLEMS`] with a last line
/// `NAME: … N more problems`; empty when the file has the shape of
/// `kind`.
pub fn check(name: &str, text: &str, kind: BfclKind) -> Vec<String> {
    let mut out = Vec::new();
    let mut entries = 0;
    let mut more = 0;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        entries += 1;
        for (col, msg) in check_line(line, kind) {
            if out.len() >= MAX_PROBLEMS {
                more += 1;
            } else {
                out.push(format!("{name}:{}:{col}: {msg}", i + 1));
            }
        }
    }
    if more > 0 {
        out.push(format!("{name}: {} problems", crate::diag::more(more)));
    }
    if entries == 0 {
        let what = match kind {
            BfclKind::SingleTurn | BfclKind::MultiTurn => "question",
            BfclKind::Answers => "answer",
            BfclKind::FuncDoc => "function",
        };
        out.push(format!(
            "{name}: the file has no {what} (it is empty); a BFCL file holds one JSON object per line"
        ));
    }
    out
}

/// The ids of the questions of `questions` that have no line in
/// `answers` (both already checked), each as `NAME:LINE:COLUMN: message`
/// at the question's `id`; `answers_name` names the answers' file.
pub fn unanswered(name: &str, questions: &str, answers_name: &str, answers: &str) -> Vec<String> {
    let ids: std::collections::HashSet<String> = answers
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v.get("id")?.as_str().map(str::to_string))
        .collect();
    let mut out = Vec::new();
    for (i, line) in questions.lines().enumerate() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(id) = v.get("id").and_then(Value::as_str) else {
            continue;
        };
        if ids.contains(id) {
            continue;
        }
        if out.len() == MAX_PROBLEMS {
            out.push(format!("{name}: and more questions without an answer"));
            break;
        }
        let col = column(line, &[Seg::Key("id")]);
        out.push(format!(
            "{name}:{}:{col}: question `{}` has no answer in {answers_name}",
            i + 1,
            crate::diag::echo(id)
        ));
    }
    out
}

/// The `multi_turn_func_doc/` files that the questions of `questions`
/// (multi-turn, already checked) need but that are not among `have` (file
/// stems), each as `NAME:LINE:COLUMN: message` at the first class that
/// needs it; `folder` is the path of `multi_turn_func_doc/`, for messages.
pub fn missing_docs(name: &str, questions: &str, have: &[&str], folder: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut said: Vec<&str> = Vec::new();
    for (i, line) in questions.lines().enumerate() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        for (k, c) in v
            .get("involved_classes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let Some(&(class, stem)) = super::bfcl::CLASS_FILES
                .iter()
                .find(|(cl, _)| Some(*cl) == c.as_str())
            else {
                continue;
            };
            if have.contains(&stem) || said.contains(&stem) {
                continue;
            }
            said.push(stem);
            let col = column(line, &[Seg::Key("involved_classes"), Seg::Index(k)]);
            out.push(format!(
                "{name}:{}:{col}: the API class `{class}` needs {folder}/{stem}.json, which does not exist",
                i + 1
            ));
        }
    }
    out
}

/// The 1-based column (in characters) of the value at `path` of `line`
/// (1 when not found).
fn column(line: &str, path: &[Seg<'_>]) -> usize {
    value_span(line, path).map_or(1, |s| line[..s.start].chars().count() + 1)
}

/// The problems of one line: (column, message).
fn check_line(line: &str, kind: BfclKind) -> Vec<(usize, String)> {
    let v: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            let col = line
                .char_indices()
                .take_while(|(b, _)| *b < e.column().saturating_sub(1))
                .count()
                + 1;
            return vec![(
                col,
                format!(
                    "not a JSON object: {} (BFCL's files are JSON Lines: one object per line)",
                    crate::diag::json_message(&e)
                ),
            )];
        }
    };
    if !v.is_object() {
        return vec![(
            1,
            format!(
                "each line must be a JSON object, found {}",
                crate::diag::json_kind(&v)
            ),
        )];
    }
    let mut out = Vec::new();
    let mut want = |path: &[Seg<'_>], shown: &str, ok: bool, what: &str| {
        if !ok {
            let found = lookup(&v, path).map_or("nothing".to_string(), |x| {
                crate::diag::json_kind(x).to_string()
            });
            let col = match lookup(&v, path) {
                Some(_) => column(line, path),
                None => 1,
            };
            out.push((col, format!("`{shown}` must be {what}, found {found}")));
        }
    };
    let is_str = |x: Option<&Value>| x.is_some_and(Value::is_string);
    match kind {
        BfclKind::Answers => {
            want(&[Seg::Key("id")], "id", is_str(v.get("id")), "a string");
            want(
                &[Seg::Key("ground_truth")],
                "ground_truth",
                v.get("ground_truth").is_some_and(Value::is_array),
                "an array of calls",
            );
        }
        BfclKind::FuncDoc => {
            want(
                &[Seg::Key("name")],
                "name",
                is_str(v.get("name")),
                "a string",
            );
            if let Some(p) = v.get("parameters") {
                want(
                    &[Seg::Key("parameters")],
                    "parameters",
                    p.is_object(),
                    "an object (a schema)",
                );
            }
        }
        BfclKind::SingleTurn | BfclKind::MultiTurn => {
            want(&[Seg::Key("id")], "id", is_str(v.get("id")), "a string");
            let q = v.get("question");
            want(
                &[Seg::Key("question")],
                "question",
                q.is_some_and(Value::is_array),
                "an array of turns, each an array of messages",
            );
            for (t, turn) in q
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let at = [Seg::Key("question"), Seg::Index(t)];
                want(
                    &at,
                    &format!("question[{t}]"),
                    turn.is_array(),
                    "an array of messages",
                );
                for (m, msg) in turn.as_array().into_iter().flatten().enumerate() {
                    let at = [Seg::Key("question"), Seg::Index(t), Seg::Index(m)];
                    let shown = format!("question[{t}][{m}]");
                    if !msg.is_object() {
                        want(
                            &at,
                            &shown,
                            false,
                            "a message object {\"role\", \"content\"}",
                        );
                        continue;
                    }
                    for key in ["role", "content"] {
                        let at = [at[0], at[1], at[2], Seg::Key(key)];
                        want(
                            &at,
                            &format!("{shown}.{key}"),
                            is_str(msg.get(key)),
                            "a string",
                        );
                    }
                }
            }
            if kind == BfclKind::SingleTurn {
                let f = v.get("function");
                want(
                    &[Seg::Key("function")],
                    "function",
                    f.is_some_and(Value::is_array),
                    "an array of candidate functions",
                );
                for (k, func) in f
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let at = [Seg::Key("function"), Seg::Index(k), Seg::Key("name")];
                    let ok = func.get("name").is_some_and(Value::is_string);
                    if !func.is_object() {
                        want(&at[..2], &format!("function[{k}]"), false, "an object");
                    } else {
                        want(&at, &format!("function[{k}].name"), ok, "a string");
                    }
                }
            } else if let Some(c) = v.get("involved_classes") {
                let ok = c.as_array().is_some_and(|a| a.iter().all(Value::is_string));
                want(
                    &[Seg::Key("involved_classes")],
                    "involved_classes",
                    ok,
                    "an array of API class names",
                );
                let known = super::bfcl::CLASS_FILES.iter().map(|(c, _)| *c);
                for (k, class) in c.as_array().into_iter().flatten().enumerate() {
                    let Some(class) = class.as_str() else {
                        continue;
                    };
                    if known.clone().any(|c| c == class) {
                        continue;
                    }
                    let hint = crate::diag::did_you_mean(class, known.clone())
                        .map(|m| format!(" (did you mean `{m}`?)"))
                        .unwrap_or_default();
                    out.push((
                        column(line, &[Seg::Key("involved_classes"), Seg::Index(k)]),
                        format!(
                            "unknown API class `{}`{hint}; BFCL v4's classes: {}",
                            crate::diag::echo(class),
                            known.clone().collect::<Vec<_>>().join(", ")
                        ),
                    ));
                }
            }
        }
    }
    out
}

fn lookup<'v>(v: &'v Value, path: &[Seg<'_>]) -> Option<&'v Value> {
    let mut cur = v;
    for s in path {
        cur = match s {
            Seg::Key(k) => cur.get(*k)?,
            Seg::Index(i) => cur.get(*i)?,
        };
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_checked_at_their_place() {
        assert_eq!(
            check("m.json", "\n\n", BfclKind::SingleTurn),
            vec![
                "m.json: the file has no question (it is empty); a BFCL file holds one JSON object per line"
            ]
        );
        let good = r#"{"id": "q", "question": [[{"role": "user", "content": "hi"}]], "function": [{"name": "f"}]}"#;
        assert!(check("m.json", good, BfclKind::SingleTurn).is_empty());
        let bad = r#"{"id": "q", "question": "what is the weather", "function": [{"name": "f"}]}"#;
        assert_eq!(
            check("m.json", &format!("{good}\n{bad}"), BfclKind::SingleTurn),
            vec![
                "m.json:2:25: `question` must be an array of turns, each an array of messages, found a string"
            ]
        );
        let e = check("m.json", "{\"id\": \n", BfclKind::Answers);
        assert!(
            e[0].starts_with("m.json:1:") && e[0].contains(": not a JSON object: EOF"),
            "{e:?}"
        );
        let e = check(
            "m.json",
            r#"{"id": 5, "ground_truth": []}"#,
            BfclKind::Answers,
        );
        assert_eq!(e, vec!["m.json:1:8: `id` must be a string, found a number"]);
        let q = "{\"id\": \"a\"}\n{\"id\": \"b\"}\n";
        assert_eq!(
            unanswered("q.json", q, "possible_answer/q.json", "{\"id\": \"a\"}"),
            vec!["q.json:2:8: question `b` has no answer in possible_answer/q.json"]
        );
    }
}
