//! Berkeley Function Calling Leaderboard data → a toolgate catalog and traces.
//!
//! Input (BFCL v4, JSON Lines despite the `.json` suffix): questions with
//! their candidate functions, and `possible_answer/` files with the correct
//! calls. Output:
//!
//! * **Pooled catalog** (`catalog.json`, an OpenAI `tools` array that
//!   `--tools FILE` reads): every candidate function of `multiple` and
//!   `live_multiple`. A name that recurs with different descriptions or
//!   parameters is **merged** into one tool: the most frequent variant (first
//!   seen on ties) gives the schema, parameters that only other variants have
//!   are added to it, and the distinct descriptions are joined with a blank
//!   line. Merging keeps the correct tool of every question findable by its
//!   name and avoids near-duplicates competing for the active set.
//! * **Types**: BFCL's own type names become JSON Schema: `dict` → `object`,
//!   `float` → `number`, `tuple` → `array`, `any` → no `type`; `integer`,
//!   `string`, `boolean`, `array` stay; BFCL's non-standard `optional` flag
//!   is dropped (`required` says the same).
//! * **Traces**: each question is a session: its user message(s) at t = 0 and
//!   the correct call at t = 1 (arguments: the first acceptable value of each
//!   parameter; parameters whose first acceptable value is `""`, BFCL's
//!   "may be omitted", are left out). Irrelevance questions are sessions with
//!   a message and no call. Multi-turn sessions become multi-step traces: each
//!   turn's message 30 s after the previous event, each call 5 s after the
//!   previous event; calls are parsed from BFCL's Python-like strings
//!   (`cd(folder='document')`), positional arguments named after the
//!   function's `required` parameters. Their catalog (`multi_turn_catalog.json`)
//!   is the functions of the API classes the sessions involve.
//! * **Per question** (`questions.jsonl`, BFCL's own way of judging): one
//!   line per question of `multiple`, `live_multiple` and `irrelevance`:
//!   `{"id", "set", "messages", "tools", "expected"}`, `tools` being the
//!   question's own candidate functions (an OpenAI `tools` array, types
//!   mapped as above, not merged) and `expected` the names of its correct
//!   calls (empty for irrelevance). `replay::questions` judges each question
//!   against its own candidates.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value, json};

/// The BFCL files a conversion reads; each is optional.
#[derive(Debug, Clone, Default)]
pub struct BfclFiles {
    /// `BFCL_v4_multiple.json` and its `possible_answer/` file.
    pub multiple: Option<(String, String)>,
    /// `BFCL_v4_live_multiple.json` and its answers.
    pub live_multiple: Option<(String, String)>,
    /// `BFCL_v4_irrelevance.json`.
    pub irrelevance: Option<String>,
    /// `BFCL_v4_multi_turn_base.json` and its answers.
    pub multi_turn: Option<(String, String)>,
    /// `multi_turn_func_doc/<stem>.json` files: (stem, text).
    pub func_docs: Vec<(String, String)>,
}

/// Counts of a conversion.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct BfclSummary {
    /// Tools in the pooled catalog.
    pub catalog_tools: usize,
    /// Candidate functions read (before merging).
    pub candidate_functions: usize,
    /// Names that had more than one distinct variant.
    pub merged_names: usize,
    /// Sessions per trace file.
    pub sessions: Vec<(String, usize)>,
    /// Tools in the multi-turn catalog.
    pub multi_turn_tools: usize,
    /// Calls that could not be parsed into arguments (kept with `_raw`).
    pub unparsed_calls: usize,
}

/// The result of a conversion.
#[derive(Debug, Clone, Default)]
pub struct BfclOutput {
    /// Pooled catalog (OpenAI tools array).
    pub catalog: Value,
    /// Multi-turn catalog, when multi-turn data was given.
    pub multi_turn_catalog: Option<Value>,
    /// (file name, JSON Lines text) of each trace.
    pub traces: Vec<(String, String)>,
    /// `questions.jsonl`: each single-turn question with its own candidates
    /// (module docs); empty when no single-turn file was given.
    pub questions: String,
    /// Counts.
    pub summary: BfclSummary,
}

/// BFCL's API class → `multi_turn_func_doc` file stem.
pub const CLASS_FILES: [(&str, &str); 12] = [
    ("GorillaFileSystem", "gorilla_file_system"),
    ("MathAPI", "math_api"),
    ("MessageAPI", "message_api"),
    ("TwitterAPI", "posting_api"),
    ("TicketAPI", "ticket_api"),
    ("TradingBot", "trading_bot"),
    ("TravelAPI", "travel_booking"),
    ("VehicleControlAPI", "vehicle_control"),
    ("MemoryAPI_kv", "memory_kv"),
    ("MemoryAPI_vector", "memory_vector"),
    ("MemoryAPI_rec_sum", "memory_rec_sum"),
    ("WebSearchAPI", "web_search"),
];

/// Maps a BFCL parameter schema to JSON Schema (see the module docs).
pub fn map_schema(v: &Value) -> Value {
    let Value::Object(o) = v else {
        return v.clone();
    };
    let mut out = Map::new();
    for (k, x) in o {
        match k.as_str() {
            "type" => {
                let t = x.as_str().unwrap_or("");
                let mapped = match t {
                    "dict" | "object" => Some("object"),
                    "float" | "number" => Some("number"),
                    "tuple" | "array" | "list" => Some("array"),
                    "integer" => Some("integer"),
                    "string" => Some("string"),
                    "boolean" => Some("boolean"),
                    "null" => Some("null"),
                    _ => None, // `any` and unknown names: no constraint
                };
                if let Some(m) = mapped {
                    out.insert("type".into(), Value::String(m.into()));
                }
            }
            "optional" => {}
            "properties" => {
                let props: Map<String, Value> = x
                    .as_object()
                    .map(|p| p.iter().map(|(n, s)| (n.clone(), map_schema(s))).collect())
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Object(props));
            }
            "items" | "additionalProperties" => {
                out.insert(k.clone(), map_schema(x));
            }
            _ => {
                out.insert(k.clone(), x.clone());
            }
        }
    }
    Value::Object(out)
}

fn jsonl(text: &str, what: &str) -> Result<Vec<Value>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("{what} line {}: {e}", i + 1)))
        .collect()
}

fn id_of(v: &Value) -> String {
    v.get("id")
        .and_then(|x| x.as_str())
        .unwrap_or_default()
        .to_string()
}

/// User messages of the first turn of a BFCL question.
fn user_messages(q: &Value) -> Vec<String> {
    q.get("question")
        .and_then(|t| t.as_array())
        .and_then(|turns| turns.first())
        .and_then(|m| m.as_array())
        .map(|msgs| {
            msgs.iter()
                .filter(|m| m.get("role").and_then(|r| r.as_str()) == Some("user"))
                .filter_map(|m| m.get("content").and_then(|c| c.as_str()).map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn line(session: &str, t: f64, event: Value) -> String {
    let mut o = Map::new();
    o.insert("session".into(), json!(session));
    o.insert("t".into(), json!(t));
    if let Value::Object(e) = event {
        o.extend(e);
    }
    Value::Object(o).to_string()
}

struct Variant {
    description: String,
    parameters: Value,
    count: usize,
}

#[derive(Default)]
struct Pool {
    order: Vec<String>,
    variants: HashMap<String, Vec<Variant>>,
    read: usize,
}

impl Pool {
    fn add(&mut self, f: &Value) {
        let Some(name) = f.get("name").and_then(|n| n.as_str()) else {
            return;
        };
        self.read += 1;
        let description = f
            .get("description")
            .and_then(|d| d.as_str())
            .unwrap_or_default()
            .to_string();
        let parameters = map_schema(f.get("parameters").unwrap_or(&json!({"type": "dict"})));
        let vs = self.variants.entry(name.to_string()).or_insert_with(|| {
            self.order.push(name.to_string());
            Vec::new()
        });
        match vs
            .iter_mut()
            .find(|v| v.description == description && v.parameters == parameters)
        {
            Some(v) => v.count += 1,
            None => vs.push(Variant {
                description,
                parameters,
                count: 1,
            }),
        }
    }

    fn catalog(&self) -> (Value, usize) {
        let mut merged = 0;
        let tools: Vec<Value> = self
            .order
            .iter()
            .map(|name| {
                let vs = &self.variants[name];
                if vs.len() > 1 {
                    merged += 1;
                }
                // Most frequent variant first (stable: first seen wins ties).
                let mut idx: Vec<usize> = (0..vs.len()).collect();
                idx.sort_by_key(|&i| std::cmp::Reverse(vs[i].count));
                let main = &vs[idx[0]];
                let mut params = main.parameters.clone();
                let mut descs: Vec<&str> = Vec::new();
                for &i in &idx {
                    let d = vs[i].description.as_str();
                    if !descs.contains(&d) {
                        descs.push(d);
                    }
                    if i == idx[0] {
                        continue;
                    }
                    if let (Some(extra), Some(Value::Object(p))) = (
                        vs[i]
                            .parameters
                            .get("properties")
                            .and_then(|p| p.as_object()),
                        params.get_mut("properties"),
                    ) {
                        for (k, v) in extra {
                            p.entry(k.clone()).or_insert_with(|| v.clone());
                        }
                    }
                }
                json!({
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": descs.join("\n\n"),
                        "parameters": params,
                    }
                })
            })
            .collect();
        (Value::Array(tools), merged)
    }
}

/// Arguments of a BFCL ground-truth call: the first acceptable value of each
/// parameter, omitting those whose first acceptable value is `""`.
fn answer_arguments(args: &Value) -> Value {
    let mut out = Map::new();
    if let Some(o) = args.as_object() {
        for (k, v) in o {
            let first = v.as_array().and_then(|a| a.first()).unwrap_or(v);
            if first != &json!("") {
                out.insert(k.clone(), first.clone());
            }
        }
    }
    Value::Object(out)
}

fn single_turn(
    questions: &str,
    answers: &str,
    what: &str,
    limit: Option<usize>,
    pool: &mut Pool,
) -> Result<(String, usize), String> {
    let qs = jsonl(questions, what)?;
    let ans: HashMap<String, Value> = jsonl(answers, &format!("{what} answers"))?
        .into_iter()
        .map(|a| (id_of(&a), a))
        .collect();
    // Every question's candidates join the pool, even beyond the limit, so
    // that a slice is replayed against the same catalog as the whole.
    for q in &qs {
        for f in q
            .get("function")
            .and_then(|f| f.as_array())
            .into_iter()
            .flatten()
        {
            pool.add(f);
        }
    }
    let mut out = String::new();
    let mut n = 0;
    for q in qs.iter().take(limit.unwrap_or(usize::MAX)) {
        let id = id_of(q);
        let Some(gt) = ans
            .get(&id)
            .and_then(|a| a.get("ground_truth"))
            .and_then(|g| g.as_array())
        else {
            return Err(format!("{what}: no answer for question `{id}`"));
        };
        for m in user_messages(q) {
            out.push_str(&line(&id, 0.0, json!({"event": "user_message", "text": m})));
            out.push('\n');
        }
        for (k, call) in gt.iter().enumerate() {
            if let Some((name, args)) = call.as_object().and_then(|o| o.iter().next()) {
                out.push_str(&line(
                    &id,
                    1.0 + k as f64,
                    json!({"event": "tool_call", "tool": name, "arguments": answer_arguments(args)}),
                ));
                out.push('\n');
            }
        }
        n += 1;
    }
    Ok((out, n))
}

/// A small parser of Python call literals: `name(a=1, b='x', [1, 2])`.
struct Py<'a> {
    s: &'a [u8],
    i: usize,
}

impl Py<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn ident(&mut self) -> Option<String> {
        self.ws();
        let st = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || matches!(self.s[self.i], b'_' | b'.'))
        {
            self.i += 1;
        }
        (self.i > st).then(|| String::from_utf8_lossy(&self.s[st..self.i]).into_owned())
    }
    fn string(&mut self, q: u8) -> Option<Value> {
        self.i += 1;
        let mut out = Vec::new();
        while self.i < self.s.len() {
            let c = self.s[self.i];
            self.i += 1;
            if c == q {
                return Some(Value::String(String::from_utf8_lossy(&out).into_owned()));
            }
            if c == b'\\' && self.i < self.s.len() {
                let e = self.s[self.i];
                self.i += 1;
                out.push(match e {
                    b'n' => b'\n',
                    b't' => b'\t',
                    other => other,
                });
            } else {
                out.push(c);
            }
        }
        None
    }
    fn seq(&mut self, close: u8) -> Option<Vec<Value>> {
        let mut v = Vec::new();
        if self.eat(close) {
            return Some(v);
        }
        loop {
            v.push(self.value()?);
            if self.eat(close) {
                return Some(v);
            }
            if !self.eat(b',') {
                return None;
            }
            if self.eat(close) {
                return Some(v);
            }
        }
    }
    fn value(&mut self) -> Option<Value> {
        self.ws();
        match *self.s.get(self.i)? {
            q @ (b'\'' | b'"') => self.string(q),
            b'[' => {
                self.i += 1;
                self.seq(b']').map(Value::Array)
            }
            b'(' => {
                self.i += 1;
                self.seq(b')').map(Value::Array)
            }
            b'{' => {
                self.i += 1;
                let mut m = Map::new();
                if self.eat(b'}') {
                    return Some(Value::Object(m));
                }
                loop {
                    let k = self.value()?;
                    if !self.eat(b':') {
                        return None;
                    }
                    let v = self.value()?;
                    let key = match k {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    m.insert(key, v);
                    if self.eat(b'}') {
                        return Some(Value::Object(m));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                    if self.eat(b'}') {
                        return Some(Value::Object(m));
                    }
                }
            }
            c if c == b'-' || c == b'+' || c.is_ascii_digit() || c == b'.' => {
                let st = self.i;
                self.i += 1;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_digit()
                        || matches!(self.s[self.i], b'.' | b'e' | b'E' | b'-' | b'+' | b'_'))
                {
                    self.i += 1;
                }
                let t = String::from_utf8_lossy(&self.s[st..self.i]).replace('_', "");
                serde_json::from_str::<Value>(&t)
                    .ok()
                    .or_else(|| t.parse::<f64>().ok().map(|x| json!(x)))
            }
            _ => match self.ident()?.as_str() {
                "True" => Some(Value::Bool(true)),
                "False" => Some(Value::Bool(false)),
                "None" => Some(Value::Null),
                _ => None,
            },
        }
    }
}

/// Parses a Python-like call `name(k=v, ...)` into its name and JSON
/// arguments; positional arguments are named from `positional` in order (or
/// `_arg0`, `_arg1`, ... past its end). `None` when the text is not a call.
pub fn parse_call(text: &str, positional: &[String]) -> Option<(String, Value)> {
    let mut p = Py {
        s: text.as_bytes(),
        i: 0,
    };
    let name = p.ident()?;
    if !p.eat(b'(') {
        return None;
    }
    let mut args = Map::new();
    let mut k = 0;
    if !p.eat(b')') {
        loop {
            let save = p.i;
            let key = p.ident().filter(|_| p.eat(b'='));
            if key.is_none() {
                p.i = save;
            }
            let v = p.value()?;
            let key = key.unwrap_or_else(|| {
                let n = positional
                    .get(k)
                    .cloned()
                    .unwrap_or_else(|| format!("_arg{k}"));
                k += 1;
                n
            });
            args.insert(key, v);
            if p.eat(b')') {
                break;
            }
            if !p.eat(b',') {
                return None;
            }
        }
    }
    p.ws();
    (p.i == p.s.len()).then_some((name, Value::Object(args)))
}

fn multi_turn(
    questions: &str,
    answers: &str,
    docs: &[(String, String)],
    limit: Option<usize>,
    summary: &mut BfclSummary,
) -> Result<(String, usize, Value), String> {
    let qs = jsonl(questions, "multi_turn")?;
    let ans: HashMap<String, Value> = jsonl(answers, "multi_turn answers")?
        .into_iter()
        .map(|a| (id_of(&a), a))
        .collect();
    let mut classes: BTreeSet<String> = BTreeSet::new();
    for q in &qs {
        for c in q
            .get("involved_classes")
            .and_then(|c| c.as_array())
            .into_iter()
            .flatten()
        {
            if let Some(c) = c.as_str() {
                classes.insert(c.to_string());
            }
        }
    }
    // Catalog: the functions of every involved class, in class order.
    let mut tools = Vec::new();
    let mut required: HashMap<String, Vec<String>> = HashMap::new();
    for class in &classes {
        let stem = CLASS_FILES
            .iter()
            .find(|(c, _)| c == class)
            .map(|(_, s)| *s)
            .ok_or_else(|| format!("multi_turn: unknown API class `{class}`"))?;
        let text = docs
            .iter()
            .find(|(s, _)| s == stem)
            .map(|(_, t)| t)
            .ok_or_else(|| format!("multi_turn: missing multi_turn_func_doc/{stem}.json"))?;
        for f in jsonl(text, stem)? {
            let name = f.get("name").and_then(|n| n.as_str()).unwrap_or_default();
            if required.contains_key(name) {
                continue;
            }
            let params = map_schema(f.get("parameters").unwrap_or(&json!({"type": "dict"})));
            required.insert(
                name.to_string(),
                params
                    .get("required")
                    .and_then(|r| r.as_array())
                    .map(|r| {
                        r.iter()
                            .filter_map(|x| x.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default(),
            );
            tools.push(json!({"type": "function", "function": {
                "name": name,
                "description": f.get("description").and_then(|d| d.as_str()).unwrap_or_default(),
                "parameters": params,
            }}));
        }
    }
    let mut out = String::new();
    let mut n = 0;
    for q in qs.iter().take(limit.unwrap_or(usize::MAX)) {
        let id = id_of(q);
        let turns = q
            .get("question")
            .and_then(|t| t.as_array())
            .cloned()
            .unwrap_or_default();
        let gt = ans
            .get(&id)
            .and_then(|a| a.get("ground_truth"))
            .and_then(|g| g.as_array())
            .ok_or_else(|| format!("multi_turn: no answer for `{id}`"))?;
        let mut t = 0.0;
        for (k, turn) in turns.iter().enumerate() {
            for m in turn.as_array().into_iter().flatten() {
                if m.get("role").and_then(|r| r.as_str()) != Some("user") {
                    continue;
                }
                if let Some(text) = m.get("content").and_then(|c| c.as_str()) {
                    t += 30.0;
                    out.push_str(&line(
                        &id,
                        t,
                        json!({"event": "user_message", "text": text}),
                    ));
                    out.push('\n');
                }
            }
            for call in gt.get(k).and_then(|c| c.as_array()).into_iter().flatten() {
                let Some(s) = call.as_str() else { continue };
                let name_end = s.find('(').unwrap_or(s.len());
                let pos = required.get(&s[..name_end]).cloned().unwrap_or_default();
                let (name, args) = match parse_call(s, &pos) {
                    Some(x) => x,
                    None => {
                        summary.unparsed_calls += 1;
                        (s[..name_end].trim().to_string(), json!({"_raw": s}))
                    }
                };
                t += 5.0;
                out.push_str(&line(
                    &id,
                    t,
                    json!({"event": "tool_call", "tool": name, "arguments": args}),
                ));
                out.push('\n');
            }
        }
        n += 1;
    }
    Ok((out, n, Value::Array(tools)))
}

/// The `questions.jsonl` lines of one single-turn file (module docs):
/// `answers` is `None` for irrelevance (nothing expected).
fn question_lines(
    questions: &str,
    answers: Option<&str>,
    set: &str,
    limit: Option<usize>,
    out: &mut String,
) -> Result<(), String> {
    let ans: HashMap<String, Value> = match answers {
        Some(a) => jsonl(a, &format!("{set} answers"))?
            .into_iter()
            .map(|a| (id_of(&a), a))
            .collect(),
        None => HashMap::new(),
    };
    for q in jsonl(questions, set)?
        .iter()
        .take(limit.unwrap_or(usize::MAX))
    {
        let id = id_of(q);
        let tools: Vec<Value> = q
            .get("function")
            .and_then(|f| f.as_array())
            .into_iter()
            .flatten()
            .filter_map(|f| {
                let name = f.get("name")?.as_str()?;
                Some(json!({
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": f.get("description").and_then(|d| d.as_str()).unwrap_or_default(),
                        "parameters": map_schema(f.get("parameters").unwrap_or(&json!({"type": "dict"}))),
                    }
                }))
            })
            .collect();
        let mut expected: Vec<String> = Vec::new();
        if let Some(gt) = ans
            .get(&id)
            .and_then(|a| a.get("ground_truth"))
            .and_then(|g| g.as_array())
        {
            for call in gt {
                if let Some(name) = call.as_object().and_then(|o| o.keys().next())
                    && !expected.contains(name)
                {
                    expected.push(name.clone());
                }
            }
        }
        let v = json!({
            "id": id,
            "set": set,
            "messages": user_messages(q),
            "tools": tools,
            "expected": expected,
        });
        out.push_str(&v.to_string());
        out.push('\n');
    }
    Ok(())
}

/// Converts the given BFCL files; `limit` keeps the first N questions of each
/// file in the traces (the pooled catalog always holds every candidate).
pub fn convert(files: &BfclFiles, limit: Option<usize>) -> Result<BfclOutput, String> {
    let mut out = BfclOutput::default();
    let mut pool = Pool::default();
    let mut pooled = String::new();
    let mut pooled_n = 0;
    for (what, f) in [
        ("multiple", &files.multiple),
        ("live_multiple", &files.live_multiple),
    ] {
        if let Some((q, a)) = f {
            question_lines(q, Some(a), what, limit, &mut out.questions)?;
            let (text, n) = single_turn(q, a, what, limit, &mut pool)?;
            pooled.push_str(&text);
            pooled_n += n;
            out.summary.sessions.push((format!("{what}.jsonl"), n));
            out.traces.push((format!("{what}.jsonl"), text));
        }
    }
    if pooled_n > 0 {
        out.summary
            .sessions
            .push(("pooled.jsonl".to_string(), pooled_n));
        out.traces.push(("pooled.jsonl".to_string(), pooled));
    }
    let (catalog, merged) = pool.catalog();
    out.summary.catalog_tools = catalog.as_array().map(|a| a.len()).unwrap_or(0);
    out.summary.candidate_functions = pool.read;
    out.summary.merged_names = merged;
    out.catalog = catalog;
    if let Some(q) = &files.irrelevance {
        question_lines(q, None, "irrelevance", limit, &mut out.questions)?;
        let mut text = String::new();
        let mut n = 0;
        for x in jsonl(q, "irrelevance")?
            .iter()
            .take(limit.unwrap_or(usize::MAX))
        {
            let id = id_of(x);
            for m in user_messages(x) {
                text.push_str(&line(&id, 0.0, json!({"event": "user_message", "text": m})));
                text.push('\n');
            }
            n += 1;
        }
        out.summary
            .sessions
            .push(("irrelevance.jsonl".to_string(), n));
        out.traces.push(("irrelevance.jsonl".to_string(), text));
    }
    if let Some((q, a)) = &files.multi_turn {
        let (text, n, cat) = multi_turn(q, a, &files.func_docs, limit, &mut out.summary)?;
        out.summary.multi_turn_tools = cat.as_array().map(|a| a.len()).unwrap_or(0);
        out.summary
            .sessions
            .push(("multi_turn.jsonl".to_string(), n));
        out.traces.push(("multi_turn.jsonl".to_string(), text));
        out.multi_turn_catalog = Some(cat);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_map_to_json_schema() {
        let s = map_schema(&json!({"type": "dict", "properties": {
            "a": {"type": "float", "optional": true},
            "b": {"type": "tuple", "items": {"type": "integer"}},
            "c": {"type": "any", "description": "x"},
            "d": {"type": "dict", "properties": {"e": {"type": "boolean"}}}
        }, "required": ["a"]}));
        assert_eq!(
            s,
            json!({"type": "object", "properties": {
                "a": {"type": "number"},
                "b": {"type": "array", "items": {"type": "integer"}},
                "c": {"description": "x"},
                "d": {"type": "object", "properties": {"e": {"type": "boolean"}}}
            }, "required": ["a"]})
        );
    }

    #[test]
    fn python_calls() {
        let (n, a) = parse_call("cd(folder='document')", &[]).unwrap();
        assert_eq!((n.as_str(), a), ("cd", json!({"folder": "document"})));
        let (_, a) = parse_call(
            "f('x.pdf', n=20, ok=True, l=[1, 2.5], d={'k': None}, t=(1,))",
            &["file_name".into()],
        )
        .unwrap();
        assert_eq!(
            a,
            json!({"file_name": "x.pdf", "n": 20, "ok": true, "l": [1, 2.5], "d": {"k": null}, "t": [1]})
        );
        let (_, a) = parse_call("g(s=\"it's\", x=-3)", &[]).unwrap();
        assert_eq!(a, json!({"s": "it's", "x": -3}));
        assert!(parse_call("not a call", &[]).is_none());
        assert!(parse_call("f(a=)", &[]).is_none());
    }

    #[test]
    fn pool_merges_variants() {
        let q = r#"{"id": "q1", "question": [[{"role": "system", "content": "sys"}, {"role": "user", "content": "weather in Paris"}]], "function": [{"name": "w", "description": "one", "parameters": {"type": "dict", "properties": {"city": {"type": "string"}}}}, {"name": "x", "description": "x", "parameters": {"type": "dict", "properties": {}}}]}
{"id": "q2", "question": [[{"role": "user", "content": "w2"}]], "function": [{"name": "w", "description": "two", "parameters": {"type": "dict", "properties": {"unit": {"type": "string"}}}}]}"#;
        let a = r#"{"id": "q1", "ground_truth": [{"w": {"city": ["Paris"], "unit": ["", "C"]}}]}
{"id": "q2", "ground_truth": [{"w": {"unit": ["C"]}}]}"#;
        let out = convert(
            &BfclFiles {
                multiple: Some((q.into(), a.into())),
                ..Default::default()
            },
            Some(1),
        )
        .unwrap();
        let cat = out.catalog.as_array().unwrap();
        assert_eq!(cat.len(), 2);
        assert_eq!(out.summary.merged_names, 1);
        let w = &cat[0]["function"];
        assert_eq!(w["description"], "one\n\ntwo");
        assert!(w["parameters"]["properties"].get("unit").is_some());
        let (name, text) = &out.traces[0];
        assert_eq!(name, "multiple.jsonl");
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "limit 1 keeps one question; system skipped");
        assert_eq!(lines[1]["arguments"], json!({"city": "Paris"}));
    }
}
