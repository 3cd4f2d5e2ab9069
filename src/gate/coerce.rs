//! Coercion of a call's arguments toward the types its schema declares,
//! following the schema's structure.
//!
//! A value is only ever changed when it is a string and the schema, where
//! the value sits, declares a type it does not have; `null`, numbers and
//! booleans are never changed, and a string where a string is allowed stays
//! a string (`"00713"`). Where a string is coerced (each kind switchable in
//! `[gate.coercion]`):
//!
//! - a numeric string where an integer or number is declared (`"3"` → 3;
//!   `"3.5"` for an integer is an error, so is a non-finite number);
//! - a boolean spelling where a boolean is declared, by value (`" yes "`,
//!   `"FALSE"`), never by truthiness: `"maybe"` is an error listing the
//!   accepted spellings;
//! - a JSON-encoded string where an array or object is declared, whose
//!   contents are then coerced too.
//!
//! **Where the walk goes.** A subschema is read together with what its
//! `$ref` (local: `#/$defs/...`, `#/definitions/...`) and its `allOf`
//! members say about the same value. Objects follow `properties` (then
//! `additionalProperties`), arrays follow `prefixItems`/tuple `items`, then
//! `items`.
//!
//! **Which type wins.** A `type` list (`["integer", "null"]`) is tried in the
//! order written: the value's own type, when listed, wins; otherwise the
//! first listed type the string converts to. OpenAPI's `nullable: true` has
//! already been read as a `"null"` type when the schema was compiled.
//! For `anyOf`/`oneOf`, in this order:
//!
//! 1. the first branch the value already satisfies (checked with a
//!    validator compiled for the branch) wins: the value is left as sent;
//! 2. otherwise the first branch, in the order written, that the value can
//!    be coerced to without loss *and* that then validates wins;
//! 3. otherwise the first branch the value could be coerced to without a
//!    coercion error (it then fails the branch's other constraints, which
//!    validation reports);
//! 4. otherwise the value is left as sent, and the coercion errors of the
//!    branches that were tried are reported (one error for one branch, one
//!    message naming every type for several).
//!
//! Trying branches copies the value; the values visited while trying are
//! bounded by `[gate.coercion] max_trial_values` for a whole call, past
//! which values are left as sent and validation decides.

use serde_json::{Map, Number, Value};

use super::config::{CallChecks, Coercion};
use super::schema::{excerpt, push_ptr, subject};
use super::types::{Coerced, Finding, FindingKind};
use crate::parse::roles::resolve_ref;
use crate::plan::gate::schema::Branches;

/// Deepest nesting of the coercion walk (values and union branches).
const MAX_COERCE_DEPTH: usize = 64;
/// Most facets (`$ref` targets, `allOf` members) read for one subschema.
const MAX_FACETS: usize = 16;

/// The coercion walk over one call's arguments.
pub(crate) struct Cx<'a> {
    pub(crate) root: &'a Value,
    pub(crate) branches: &'a Branches,
    pub(crate) cfg: &'a Coercion,
    pub(crate) checks: &'a CallChecks,
    /// Coercion errors, as findings.
    pub(crate) errors: Vec<Finding>,
    /// Every coercion made, in walk order.
    pub(crate) coerced: Vec<Coerced>,
    /// Values that trial coercions may still visit.
    budget: usize,
    /// How many union trials enclose the current position.
    trials: usize,
    /// Set when the budget ran out inside a trial.
    exhausted: bool,
}

/// A subschema with what its `$ref`s and `allOf` members add: the facets
/// that all apply to one value, the subschema itself first.
enum Facets<'a> {
    One(&'a Value),
    Many(Vec<&'a Value>),
}

impl<'a> Facets<'a> {
    fn of(root: &'a Value, schema: &'a Value) -> Facets<'a> {
        let Some(map) = schema.as_object() else {
            return Facets::One(schema);
        };
        if !map.contains_key("$ref") && !map.contains_key("allOf") {
            return Facets::One(schema);
        }
        let mut out: Vec<&Value> = Vec::new();
        let mut stack = vec![schema];
        while let Some(s) = stack.pop() {
            if out.len() >= MAX_FACETS {
                break;
            }
            if !s.is_object() || out.iter().any(|f| std::ptr::eq(*f, s)) {
                continue;
            }
            out.push(s);
            if let Some(Value::Array(all)) = s.get("allOf") {
                stack.extend(all.iter().rev());
            }
            if let Some(t) = s
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| resolve_ref(root, r))
            {
                stack.push(t);
            }
        }
        Facets::Many(out)
    }

    fn iter(&self) -> impl Iterator<Item = &'a Value> + '_ {
        let (one, many) = match self {
            Facets::One(s) => (Some(*s), &[][..]),
            Facets::Many(v) => (None, &v[..]),
        };
        one.into_iter().chain(many.iter().copied())
    }

    /// The declared types: those every facet that declares a `type` allows,
    /// in the order of the first such facet. Empty: no type constraint.
    fn types(&self) -> Vec<&'a str> {
        let mut out: Option<Vec<&'a str>> = None;
        for f in self.iter() {
            let t = declared_types(f);
            if f.get("type").is_none() {
                continue;
            }
            out = Some(match out {
                None => t,
                Some(prev) => prev
                    .into_iter()
                    .filter(|x| t.contains(x) || (*x == "integer" && t.contains(&"number")))
                    .collect(),
            });
        }
        out.unwrap_or_default()
    }

    fn first(&self, key: &str) -> Option<&'a Value> {
        self.iter().find_map(|f| f.get(key))
    }

    /// The subschema of property `k`.
    fn property(&self, k: &str) -> Option<&'a Value> {
        self.iter()
            .find_map(|f| f.get("properties").and_then(|p| p.get(k)))
            .or_else(|| {
                self.iter()
                    .find_map(|f| f.get("additionalProperties").filter(|a| a.is_object()))
            })
    }

    /// The subschema of array item `i`.
    fn item(&self, i: usize) -> Option<&'a Value> {
        for f in self.iter() {
            if let Some(s) = f.get("prefixItems").and_then(|p| p.get(i)) {
                return Some(s);
            }
            // `prefixItems` did not cover `i` (checked above): `items`
            // applies, as a tuple (drafts 4 to 2019-09) or a schema.
            match f.get("items") {
                Some(Value::Array(tuple)) => {
                    if let Some(s) = tuple.get(i) {
                        return Some(s);
                    }
                }
                Some(s @ Value::Object(_)) => return Some(s),
                _ => {}
            }
        }
        None
    }

    fn has_union(&self) -> bool {
        self.iter()
            .any(|f| f.get("anyOf").is_some() || f.get("oneOf").is_some())
    }

    fn description(&self) -> Option<&'a str> {
        self.iter()
            .find_map(|f| f.get("description").and_then(Value::as_str))
    }
}

/// The declared `type` of one schema object, as written.
pub(crate) fn declared_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Follows `$ref`s and `allOf`s from `schema` and lists every type the value
/// may have, union branches included (for messages). Bounded.
pub(crate) fn allowed_types<'a>(root: &'a Value, schema: &'a Value) -> Vec<&'a str> {
    let mut out = Vec::new();
    allowed_into(root, schema, &mut out, 0);
    out
}

fn allowed_into<'a>(root: &'a Value, schema: &'a Value, out: &mut Vec<&'a str>, depth: usize) {
    if depth > 8 {
        return;
    }
    let facets = Facets::of(root, schema);
    let types = facets.types();
    if !types.is_empty() {
        for t in types {
            if !out.contains(&t) {
                out.push(t);
            }
        }
        return;
    }
    for f in facets.iter() {
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(bs)) = f.get(key) {
                for b in bs {
                    allowed_into(root, b, out, depth + 1);
                }
            }
        }
    }
}

/// A resolved view of `schema` (`$ref`, `allOf`) for message helpers.
pub(crate) fn description_of<'a>(root: &'a Value, schema: &'a Value) -> Option<&'a str> {
    Facets::of(root, schema).description()
}

/// The subschema of property or item `seg` under `schema` (through `$ref`,
/// `allOf` and, failing those, the first `anyOf`/`oneOf` branch that has
/// it), for messages.
pub(crate) fn child_schema<'a>(root: &'a Value, schema: &'a Value, seg: &str) -> Option<&'a Value> {
    child_in(root, schema, seg, 0)
}

fn child_in<'a>(root: &'a Value, schema: &'a Value, seg: &str, depth: usize) -> Option<&'a Value> {
    if depth > 8 {
        return None;
    }
    let facets = Facets::of(root, schema);
    let direct = facets
        .iter()
        .find_map(|f| f.get("properties").and_then(|p| p.get(seg)));
    if direct.is_some() {
        return direct;
    }
    if let Ok(i) = seg.parse::<usize>()
        && let Some(s) = facets.item(i)
    {
        return Some(s);
    }
    if let Some(s) = facets
        .iter()
        .find_map(|f| f.get("additionalProperties").filter(|a| a.is_object()))
    {
        return Some(s);
    }
    for f in facets.iter() {
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(bs)) = f.get(key) {
                for b in bs {
                    if let Some(s) = child_in(root, b, seg, depth + 1) {
                        return Some(s);
                    }
                }
            }
        }
    }
    None
}

/// What one attempt to convert a string to one type gave.
enum Attempt {
    /// Converted.
    Done(Value),
    /// The string does not look like this type: nothing to say.
    NotApplicable,
    /// It looks like this type but cannot be converted without loss.
    Lossy(String),
}

impl<'a> Cx<'a> {
    /// A walk over a call's arguments against `root` (the tool's schema).
    pub(crate) fn new(
        root: &'a Value,
        branches: &'a Branches,
        cfg: &'a Coercion,
        checks: &'a CallChecks,
    ) -> Cx<'a> {
        Cx {
            root,
            branches,
            cfg,
            checks,
            errors: Vec::new(),
            coerced: Vec::new(),
            budget: cfg.max_trial_values,
            trials: 0,
            exhausted: false,
        }
    }

    fn error(&mut self, ptr: &str, msg: String) {
        self.errors.push(self.checks.invalid_arguments.sub_finding(
            "coercion",
            FindingKind::Schema,
            ptr,
            &msg,
        ));
    }

    /// Coerces `v` (at instance pointer `ptr`) toward `schema`.
    pub(crate) fn coerce(
        &mut self,
        schema: &'a Value,
        v: &mut Value,
        ptr: &mut String,
        depth: usize,
    ) {
        if depth > MAX_COERCE_DEPTH || self.exhausted {
            return;
        }
        if self.trials > 0 {
            if self.budget == 0 {
                self.exhausted = true;
                return;
            }
            self.budget -= 1;
        }
        let facets = Facets::of(self.root, schema);
        if facets.has_union() {
            for f in facets.iter() {
                for key in ["anyOf", "oneOf"] {
                    if let Some(Value::Array(bs)) = f.get(key) {
                        self.coerce_union(&facets, bs, v, ptr, depth);
                    }
                }
            }
        }
        if let Value::String(s) = v {
            let types = facets.types();
            if types.is_empty() || types.contains(&"string") {
                return;
            }
            let Some(new) = self.coerce_string(&facets, &types, s, ptr) else {
                return;
            };
            let to = json_type(&new);
            *v = new;
            self.coerced.push(Coerced {
                path: ptr.clone(),
                from: "string",
                to,
            });
            if v.is_array() || v.is_object() {
                self.coerce(schema, v, ptr, depth + 1);
            }
            return;
        }
        match v {
            Value::Object(map) => self.coerce_object(&facets, map, ptr, depth),
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let Some(sub) = facets.item(i) else {
                        continue;
                    };
                    let len = ptr.len();
                    ptr.push('/');
                    ptr.push_str(&i.to_string());
                    self.coerce(sub, item, ptr, depth + 1);
                    ptr.truncate(len);
                }
            }
            _ => {}
        }
    }

    fn coerce_object(
        &mut self,
        facets: &Facets<'a>,
        map: &mut Map<String, Value>,
        ptr: &mut String,
        depth: usize,
    ) {
        for (k, child) in map.iter_mut() {
            let Some(sub) = facets.property(k) else {
                continue;
            };
            let len = ptr.len();
            push_ptr(ptr, k);
            self.coerce(sub, child, ptr, depth + 1);
            ptr.truncate(len);
        }
    }

    /// Whether `v` satisfies `branch`: by the branch's validator, or by its
    /// declared types when no validator could be built.
    fn satisfies(&self, branch: &'a Value, v: &Value) -> bool {
        if let Some(ok) = self.branches.is_valid(self.root, branch, v) {
            return ok;
        }
        let facets = Facets::of(self.root, branch);
        let types = facets.types();
        types.is_empty() || types.iter().any(|t| type_matches(t, v))
    }

    /// Whether trying `branch` could change `v` at all.
    fn worth_trying(&self, branch: &'a Value, v: &Value) -> bool {
        let facets = Facets::of(self.root, branch);
        if facets.has_union() {
            return matches!(v, Value::String(_) | Value::Array(_) | Value::Object(_));
        }
        let types = facets.types();
        match v {
            Value::String(_) => types
                .iter()
                .any(|t| matches!(*t, "integer" | "number" | "boolean" | "array" | "object")),
            Value::Array(_) => types.is_empty() || types.contains(&"array"),
            Value::Object(_) => types.is_empty() || types.contains(&"object"),
            _ => false,
        }
    }

    fn coerce_union(
        &mut self,
        owner: &Facets<'a>,
        branches: &'a [Value],
        v: &mut Value,
        ptr: &mut String,
        depth: usize,
    ) {
        if depth + 1 > MAX_COERCE_DEPTH || self.exhausted {
            return;
        }
        // 1. A branch the value already satisfies wins.
        if branches.iter().any(|b| self.satisfies(b, v)) {
            return;
        }
        // 2. The first branch it converts to without loss and then satisfies.
        let mut fallback: Option<(Value, Vec<Coerced>)> = None;
        let mut failed: Vec<(&'a Value, Vec<Finding>)> = Vec::new();
        for b in branches {
            if self.exhausted {
                break;
            }
            if !self.worth_trying(b, v) {
                continue;
            }
            let mut trial = v.clone();
            let (errors_before, coerced_before) = (self.errors.len(), self.coerced.len());
            self.trials += 1;
            self.coerce(b, &mut trial, ptr, depth + 1);
            self.trials -= 1;
            let errs = self.errors.split_off(errors_before);
            let made = self.coerced.split_off(coerced_before);
            if self.exhausted {
                break;
            }
            if !errs.is_empty() {
                failed.push((b, errs));
                continue;
            }
            if made.is_empty() {
                continue;
            }
            if self.satisfies(b, &trial) {
                *v = trial;
                self.coerced.extend(made);
                return;
            }
            if fallback.is_none() {
                fallback = Some((trial, made));
            }
        }
        // 3. The first clean conversion, for validation to explain.
        if let Some((trial, made)) = fallback {
            *v = trial;
            self.coerced.extend(made);
            return;
        }
        // 4. Left as sent; say why no conversion worked.
        match failed.len() {
            0 => {}
            1 => {
                if let Some((_, errs)) = failed.pop() {
                    self.errors.extend(errs);
                }
            }
            _ => {
                // One error naming every type tried.
                let mut types: Vec<&str> = Vec::new();
                for (b, _) in &failed {
                    for t in allowed_types(self.root, b) {
                        if !types.contains(&t) {
                            types.push(t);
                        }
                    }
                }
                let about = owner
                    .description()
                    .map(|d| format!(" ({})", short(d)))
                    .unwrap_or_default();
                let total: usize = failed.iter().map(|(_, e)| e.len()).sum();
                let mut details: Vec<String> = failed
                    .iter()
                    .flat_map(|(_, e)| e.iter().map(|f| f.message.clone()))
                    .take(3)
                    .collect();
                if total > details.len() {
                    details.push(crate::diag::more(total - details.len()));
                }
                let msg = format!(
                    "{} must be {}{about}; got {}, which converts to none of them ({}). Send a value of one of these types.",
                    subject(ptr),
                    types_phrase(&types),
                    excerpt(v),
                    details.join(" / ")
                );
                self.error(ptr, msg);
            }
        }
    }

    /// Converts `s` to the first of `types` it converts to without loss.
    /// `None` when it converts to none (errors recorded for lossy cases).
    fn coerce_string(
        &mut self,
        facets: &Facets<'a>,
        types: &[&str],
        s: &str,
        ptr: &str,
    ) -> Option<Value> {
        let mut lossy: Vec<String> = Vec::new();
        for t in types {
            let attempt = match *t {
                "integer" | "number" if self.cfg.numeric_strings => self.numeric(t, s),
                "boolean" if self.cfg.boolean_strings => self.boolean(s),
                "array" | "object" if self.cfg.json_strings => json_string(t, s),
                _ => Attempt::NotApplicable,
            };
            match attempt {
                Attempt::Done(v) => return Some(v),
                Attempt::NotApplicable => {}
                Attempt::Lossy(why) => lossy.push(why),
            }
        }
        if lossy.is_empty() {
            return None;
        }
        let shown = excerpt(&Value::String(s.to_string()));
        let about = about_facets(facets, types);
        let subject = subject(ptr);
        let msg = if lossy.len() == 1 {
            let why = &lossy[0];
            format!(
                "{subject} must be {}{about}; got {shown}, {why}",
                types_phrase(types)
            )
        } else {
            format!(
                "{subject} must be {}{about}; got {shown}, which converts to none of them: {}",
                types_phrase(types),
                lossy.join("; ")
            )
        };
        self.error(ptr, msg);
        None
    }

    fn numeric(&self, t: &str, s: &str) -> Attempt {
        let t_int = t == "integer";
        let x = s.trim();
        if let Ok(i) = x.parse::<i64>() {
            return Attempt::Done(Value::from(i));
        }
        if let Ok(u) = x.parse::<u64>() {
            return Attempt::Done(Value::from(u));
        }
        let looks_numeric = !x.is_empty()
            && x.chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'));
        if !looks_numeric {
            return Attempt::NotApplicable;
        }
        match x.parse::<f64>() {
            Ok(f) if f.is_finite() => {
                if !t_int {
                    return match Number::from_f64(f) {
                        Some(n) => Attempt::Done(Value::Number(n)),
                        None => Attempt::NotApplicable,
                    };
                }
                if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
                    return Attempt::Done(Value::from(f as i64));
                }
                if f.fract() == 0.0 {
                    // e.g. "18446744073709551616": beyond i64 and u64, and a
                    // float would only approximate it
                    return Attempt::Lossy(
                        "which is too large to convert to an integer exactly. Send the integer in digits, between -9223372036854775808 and 18446744073709551615.".into(),
                    );
                }
                Attempt::Lossy(format!(
                    "which is not a whole number. Send a whole number such as {}.",
                    f.trunc()
                ))
            }
            Ok(_) => Attempt::Lossy(format!(
                "which is not a finite {}. Send a finite number.",
                if t_int { "integer" } else { "number" }
            )),
            Err(_) => Attempt::NotApplicable,
        }
    }

    fn boolean(&self, s: &str) -> Attempt {
        let x = s.trim();
        let eq = |list: &[String]| list.iter().any(|v| v.trim().eq_ignore_ascii_case(x));
        if eq(&self.cfg.true_values) {
            return Attempt::Done(Value::Bool(true));
        }
        if eq(&self.cfg.false_values) {
            return Attempt::Done(Value::Bool(false));
        }
        let spellings: Vec<&str> = self
            .cfg
            .true_values
            .iter()
            .chain(self.cfg.false_values.iter())
            .map(String::as_str)
            .collect();
        Attempt::Lossy(format!(
            "which is not a boolean spelling. Send true or false (accepted spellings: {}).",
            spellings.join(", ")
        ))
    }
}

fn json_string(t: &str, s: &str) -> Attempt {
    let x = s.trim_start();
    let opens = (t == "array" && x.starts_with('[')) || (t == "object" && x.starts_with('{'));
    if !opens {
        return Attempt::NotApplicable;
    }
    match serde_json::from_str::<Value>(s) {
        Ok(v @ Value::Array(_)) if t == "array" => Attempt::Done(v),
        Ok(v @ Value::Object(_)) if t == "object" => Attempt::Done(v),
        Ok(_) => Attempt::NotApplicable,
        Err(e) => Attempt::Lossy(format!(
            "a string that is not valid JSON ({e}). Send the value itself, not a string."
        )),
    }
}

/// ` (integer: description; one of ...)` from the facets of a subschema.
fn about_facets(facets: &Facets<'_>, types: &[&str]) -> String {
    let mut parts = Vec::new();
    if !types.is_empty() {
        parts.push(types.join(" or "));
    }
    if let Some(d) = facets.description() {
        let d = d.trim();
        if !d.is_empty() {
            parts.push(short(d));
        }
    }
    if let Some(Value::Array(e)) = facets.first("enum") {
        let mut vals: Vec<String> = e.iter().take(20).map(|v| v.to_string()).collect();
        if e.len() > vals.len() {
            vals.push(crate::diag::more(e.len() - vals.len()));
        }
        parts.push(format!("one of {}", vals.join(", ")));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(": "))
    }
}

fn short(d: &str) -> String {
    d.trim().chars().take(160).collect()
}

/// "an integer or null", from type names.
pub(crate) fn types_phrase(types: &[&str]) -> String {
    fn name(t: &str) -> &str {
        match t {
            "integer" => "an integer",
            "number" => "a number",
            "boolean" => "a boolean (true or false)",
            "string" => "a string",
            "null" => "null",
            "object" => "an object",
            "array" => "an array",
            other => other,
        }
    }
    if types.is_empty() {
        return "of the declared type".into();
    }
    types
        .iter()
        .map(|t| name(t).to_string())
        .collect::<Vec<_>>()
        .join(" or ")
}

/// Whether `v` has JSON Schema type `t` (an integer-valued number is an
/// integer).
pub(crate) fn type_matches(t: &str, v: &Value) -> bool {
    match (t, v) {
        ("null", Value::Null) | ("boolean", Value::Bool(_)) | ("string", Value::String(_)) => true,
        ("array", Value::Array(_)) | ("object", Value::Object(_)) => true,
        ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
