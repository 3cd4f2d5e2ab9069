//! "Can the request fill the tool's required parameters?"
//! (`[features.argument_fill]`, issue 24).
//!
//! A sentence vector measures topic; BFCL writes each irrelevant question
//! against a function on the same topic ("what is the final price after a
//! 25% discount and 10% sales tax?" against `calculateFinalPrice(price,
//! discount_rate, sales_tax)`: no price given). This is evidence of another
//! kind: for each required parameter of a tool's `inputSchema`, does the
//! request hold something that could be its value?
//!
//! At compile time each required parameter (`required` of the top-level
//! `properties`) becomes a [`Slot`]: its kind from the JSON Schema `type`
//! (`number`/`integer`; an `array` of numbers; `string`; `boolean`,
//! `object`, other arrays and untyped parameters, which this reading cannot
//! judge and so always count as filled), its `enum` values, whether its
//! description states a default ("Default is 52"), the words of its
//! description and `examples` (a parameter described "such as 1 for
//! Bangkok" is filled by "Bangkok"), and whether its name or description
//! names a time unit (the policy's `time_units`).
//!
//! At evaluation the request text is read once ([`RequestValues`]): its
//! numbers (digit runs and the policy's `number_words`), time words,
//! quoted spans, locators (e-mail addresses, URLs, paths, identifiers with
//! `_`, file names), names (capitalised words that do not start a
//! sentence: "Boston", "USA") and its other words that are not filler
//! words. A slot is filled *as such* when
//!
//! 1. its kind cannot be judged (boolean, object, array of non-numbers, no
//!    type), or its name says the session supplies it (the policy's
//!    `context_parameters`: `repo_path`, `cwd`);
//! 2. one of its `enum` values occurs in the request (stems of whole
//!    words);
//! 3. its description states a default (the word "default"), or the
//!    schema gives one;
//! 4. a request word (not a filler word, 3 characters or more) occurs among
//!    the words of its description's examples (after "e.g.", "for
//!    example", "such as", "like", "i.e.") or of its `examples`.
//!
//! The other slots take values from the request: with `values =
//! "distinct"` each takes its own (three number parameters need three
//! numbers), with `"any"` one value of the kind anywhere is enough.
//!
//! 5. a number (or an array of numbers) takes a number; a time quantity
//!    (its name or description holds one of `time_units`) a time word when
//!    the numbers run out ("over the past decade");
//! 6. a string whose name says it is a place or a name
//!    (`place_parameters`, `name_parameters`) takes a name, quote or
//!    locator, else a number, else counts as filled when a new word (below)
//!    stands within two words of another word of its name ("the orders
//!    table" for `table_name`); a date (`time_parameters`) a number or a
//!    time word; any other string any value left, or a *new* word: a word
//!    that is not a filler word and whose stem is not among the stems of
//!    the tool's own text (name, description, parameter names and
//!    descriptions): "what is a holy book?" holds no value for
//!    `search_holy_books(book)`, "find the paper on transformers" does for
//!    `search(query)`. Words of scripts without case (CJK, Hangul) count
//!    by the same rule.
//!
//! A tool's fill is filled / required slots (1 for a tool with no required
//! parameter). The request text is the latest user message and the
//! policy's `turns` earlier ones (a value given one message earlier still
//! counts); a context without the message text (a host that sends keywords
//! only) cannot be read, and then every tool passes.

use std::collections::HashSet;

use rustc_hash::FxHashSet;

use serde_json::Value;

use crate::parse::argument_fill::ArgumentFillParams;

/// What kind of value a required parameter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotKind {
    /// `number` or `integer` (and BFCL's `float`, mapped to `number`).
    Number,
    /// An `array` whose `items` are numbers.
    NumberList,
    /// `string`.
    Text,
    /// `boolean`, `object`, other arrays, no type: not judged (filled).
    Unjudged,
}

/// One required parameter, compiled.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    /// The parameter's name.
    pub name: String,
    /// Its kind.
    pub kind: SlotKind,
    /// Its `enum` values, each as the stems of its words.
    pub enum_values: Vec<Vec<String>>,
    /// Whether its description states a default.
    pub has_default: bool,
    /// The words of its description and `examples`, lowercased.
    pub described: FxHashSet<String>,
    /// Whether its name or description names a time unit.
    pub time_quantity: bool,
    /// For a string: what its name says it holds.
    pub text_kind: TextKind,
    /// Stems of the words of its name other than the kind words
    /// ("table" of `table_name`): a new word next to one of them in the
    /// request ("the orders table") names a place or name slot's value.
    pub name_stems: Vec<String>,
    /// Whether its name says the session supplies it (`context_parameters`:
    /// a repository path, a working directory), so the request need not.
    pub from_context: bool,
}

/// What a string parameter's name says it holds (the policy's
/// `place_parameters`, `name_parameters`, `time_parameters`: words of the
/// parameter's name, identifiers split).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// A place ("location", "city"): needs a name, a quote, a locator or a
    /// number (a postcode, an id).
    Place,
    /// A name ("team_name", "title"): the same.
    Name,
    /// A date or period ("date", "season"): needs a number or a time word.
    Time,
    /// Anything: any value, a new word included.
    Any,
}

/// A tool's required parameters and the stems of its own text.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolSlots {
    /// Required parameters, in `required` order (unknown names skipped).
    pub required: Vec<Slot>,
    /// Stems of the tool's name, description and parameter names and
    /// descriptions.
    pub stems: FxHashSet<String>,
}

/// The compiled `[features.argument_fill]` of a catalog.
#[derive(Debug, Clone)]
pub struct ArgumentFill {
    /// `min_fraction`.
    pub min_fraction: f64,
    /// `turns`.
    pub turns: usize,
    /// `values = "distinct"`: each required parameter takes its own value
    /// (`"any"`: one value of its kind anywhere in the request is enough).
    pub distinct: bool,
    /// Per tool, in catalog order.
    pub tools: Vec<ToolSlots>,
    number_words: HashSet<String>,
    time_words: HashSet<String>,
    time_units: HashSet<String>,
    filler_words: HashSet<String>,
    place_parameters: HashSet<String>,
    name_parameters: HashSet<String>,
    time_parameters: HashSet<String>,
    context_parameters: HashSet<String>,
}

/// What a request holds, read once per evaluation: how many values of
/// each kind it offers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestValues {
    /// Numbers: runs of digits ("98.2", "$200,000" and "10%" are one each;
    /// "2020-2021" is two) and number words.
    pub numbers: usize,
    /// Time words.
    pub time_words: usize,
    /// Quoted spans.
    pub quoted: usize,
    /// E-mail addresses, URLs, paths and file names.
    pub locators: usize,
    /// Names: capitalised words that do not start a sentence ("New York
    /// City" is three), lowercased.
    pub names: Vec<String>,
    /// The request's distinct words that are not filler words, 3
    /// characters or more (or of a script without case), lowercased, with
    /// their stems; digits-only words excluded.
    pub words: Vec<(String, String)>,
    /// The lowercased words of the whole request, in order (for `enum`
    /// phrases).
    pub all_words: Vec<String>,
    /// Their stems, in the same order.
    pub all_stems: Vec<String>,
    /// The distinct words of `all_words` that can be a description's
    /// example (rule 4): not filler words, 3 characters or more (or of a
    /// script without case). Read once per request, not once per tool.
    pub example_words: Vec<String>,
}

/// One tool's fill, for explanations.
/// One tool's fill, for explanations.
#[derive(Debug, Clone, PartialEq)]
pub struct Fill {
    /// Required parameters the request holds a value for.
    pub filled: usize,
    /// Required parameters.
    pub required: usize,
    /// Names of the required parameters without a value.
    pub missing: Vec<String>,
}

impl Fill {
    /// filled / required, 1 without required parameters.
    pub fn fraction(&self) -> f64 {
        if self.required == 0 {
            1.0
        } else {
            self.filled as f64 / self.required as f64
        }
    }
}

/// Lowercased words: maximal runs of alphanumeric characters, with
/// camelCase and snake_case split.
fn split_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            cur.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The part of a parameter description after its first example marker
/// ("e.g.", "eg.", "for example", "such as", "like", "i.e."), or "" when
/// it has none.
fn example_part(description: &str) -> &str {
    let lower = description.to_ascii_lowercase();
    let markers = [
        "e.g.",
        "eg.",
        "for example",
        "such as",
        " like ",
        "i.e.",
        "example:",
    ];
    markers
        .iter()
        .filter_map(|m| lower.find(m).map(|i| i + m.len()))
        .min()
        .and_then(|i| description.get(i..))
        .unwrap_or("")
}

fn has_case(w: &str) -> bool {
    w.chars().any(|c| c.is_uppercase() || c.is_lowercase())
}

/// Quoted spans: an opening quote at the start or after a space or an
/// opening bracket, a closing quote of the same family before the end, a
/// space or punctuation (so "what's the Lakers' score" has none).
fn count_quoted(text: &str) -> usize {
    let chars: Vec<char> = text.chars().collect();
    let closing = |c: char| match c {
        '"' => Some('"'),
        '\'' => Some('\''),
        '`' => Some('`'),
        '“' => Some('”'),
        '‘' => Some('’'),
        '«' => Some('»'),
        '「' => Some('」'),
        _ => None,
    };
    let mut n = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let before_ok = i == 0 || chars[i - 1].is_whitespace() || "([{:=".contains(chars[i - 1]);
        if let (Some(close), true) = (closing(c), before_ok) {
            // the first closing quote followed by a non-letter
            let end = (i + 2..chars.len()).find(|&j| {
                chars[j] == close && chars.get(j + 1).is_none_or(|d| !d.is_alphanumeric())
            });
            if let Some(j) = end {
                n += 1;
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    n
}

/// An e-mail address, URL, path, identifier or file name: a
/// whitespace-separated token (trailing punctuation trimmed) with `@`, `/`,
/// `\` or `_` between characters, `://`, or a dot between letters followed by 1 to 5
/// alphanumerics ("README.md", "example.com").
fn is_locator(token: &str) -> bool {
    let t = token.trim_matches(|c: char| !c.is_alphanumeric() && c != '/' && c != '~');
    if t.len() < 2 {
        return false;
    }
    if t.contains("://") || t.starts_with('/') || t.starts_with("~/") {
        return true;
    }
    let inner = |sep: char| {
        t.char_indices()
            .any(|(i, c)| c == sep && i > 0 && i + c.len_utf8() < t.len())
    };
    if inner('@') || inner('/') || inner('\\') || inner('_') {
        return true;
    }
    if let Some(dot) = t.rfind('.') {
        let (head, ext) = (&t[..dot], &t[dot + 1..]);
        return head.chars().last().is_some_and(|c| c.is_alphabetic())
            && (1..=5).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && ext.chars().any(|c| c.is_ascii_alphabetic());
    }
    false
}

impl ArgumentFill {
    /// Compiles the gate for a catalog: `tools` yields each tool's name,
    /// description and `inputSchema`, in catalog order.
    pub fn build<'a>(
        params: &ArgumentFillParams,
        tools: impl Iterator<Item = (&'a str, &'a str, Value)>,
    ) -> ArgumentFill {
        let set = |v: &[String]| v.iter().cloned().collect::<HashSet<String>>();
        let mut gate = ArgumentFill {
            min_fraction: params.min_fraction,
            turns: params.turns,
            distinct: params.distinct,
            tools: Vec::new(),
            number_words: set(&params.number_words),
            time_words: set(&params.time_words),
            time_units: set(&params.time_units),
            filler_words: set(&params.filler_words),
            place_parameters: set(&params.place_parameters),
            name_parameters: set(&params.name_parameters),
            time_parameters: set(&params.time_parameters),
            context_parameters: set(&params.context_parameters),
        };
        gate.tools = tools
            .map(|(name, description, schema)| gate.tool_slots(name, description, &schema))
            .collect();
        gate
    }

    /// The Snowball English stem of `w` (the stemmer of `[features.keyword_match] stemmer = "english"`).
    fn stem(&self, w: &str) -> String {
        rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English)
            .stem(w)
            .into_owned()
    }

    fn tool_slots(&self, name: &str, description: &str, schema: &Value) -> ToolSlots {
        let mut text = format!("{name} {description}");
        let props = schema.get("properties").and_then(Value::as_object);
        if let Some(props) = props {
            for (k, p) in props {
                text.push(' ');
                text.push_str(k);
                if let Some(d) = p.get("description").and_then(Value::as_str) {
                    text.push(' ');
                    text.push_str(d);
                }
            }
        }
        let stems = split_words(&text).iter().map(|w| self.stem(w)).collect();
        let mut required = Vec::new();
        let names = schema.get("required").and_then(Value::as_array);
        for r in names.into_iter().flatten().filter_map(Value::as_str) {
            let Some(p) = props.and_then(|m| m.get(r)) else {
                continue;
            };
            required.push(self.slot(r, p));
        }
        ToolSlots { required, stems }
    }

    fn slot(&self, name: &str, p: &Value) -> Slot {
        let ty = match p.get("type") {
            Some(Value::String(s)) => Some(s.as_str()),
            // a type list: its first non-null member
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).find(|s| *s != "null"),
            _ => None,
        };
        let items_ty = p
            .get("items")
            .and_then(|i| i.get("type"))
            .and_then(Value::as_str);
        let kind = match (ty, items_ty) {
            (Some("number" | "integer"), _) => SlotKind::Number,
            (Some("array"), Some("number" | "integer")) => SlotKind::NumberList,
            (Some("string"), _) => SlotKind::Text,
            _ => SlotKind::Unjudged,
        };
        let enum_values = p
            .get("enum")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|v| match v {
                        Value::String(s) => split_words(s),
                        other => split_words(&other.to_string()),
                    })
                    .map(|w| w.iter().map(|x| self.stem(x)).collect::<Vec<_>>())
                    .filter(|w| !w.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let description = p.get("description").and_then(Value::as_str).unwrap_or("");
        let mut described_text = example_part(description).to_string();
        if let Some(ex) = p.get("examples") {
            described_text.push(' ');
            described_text.push_str(&ex.to_string());
        }
        let described: FxHashSet<String> = split_words(&described_text).into_iter().collect();
        let all_described = split_words(description);
        let has_default =
            all_described.iter().any(|w| w == "default") || p.get("default").is_some();
        let name_words = split_words(name);
        let time_quantity = name_words
            .iter()
            .chain(all_described.iter())
            .any(|w| self.time_units.contains(w));
        let named = |set: &HashSet<String>| name_words.iter().any(|w| set.contains(w));
        let from_context = named(&self.context_parameters);
        let name_stems = name_words
            .iter()
            .filter(|w| {
                !self.name_parameters.contains(*w)
                    && !self.place_parameters.contains(*w)
                    && !self.filler_words.contains(*w)
            })
            .map(|w| self.stem(w))
            .collect();
        let text_kind = if named(&self.time_parameters) {
            TextKind::Time
        } else if named(&self.place_parameters) {
            TextKind::Place
        } else if named(&self.name_parameters) {
            TextKind::Name
        } else {
            TextKind::Any
        };
        Slot {
            name: name.to_string(),
            kind,
            enum_values,
            has_default,
            described,
            time_quantity,
            text_kind,
            from_context,
            name_stems,
        }
    }

    /// Reads what `text` (the request) holds.
    pub fn request(&self, text: &str) -> RequestValues {
        let mut r = RequestValues {
            quoted: count_quoted(text),
            locators: text.split_whitespace().filter(|t| is_locator(t)).count(),
            ..Default::default()
        };
        // Numbers: digit runs, with `.` or `,` between digits inside one.
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            if chars[i].is_ascii_digit() {
                r.numbers += 1;
                while i < chars.len()
                    && (chars[i].is_ascii_digit()
                        || (matches!(chars[i], '.' | ',')
                            && chars.get(i + 1).is_some_and(|c| c.is_ascii_digit())))
                {
                    i += 1;
                }
            } else {
                i += 1;
            }
        }
        // Words as written, with whether each starts a sentence.
        let mut start = true;
        let mut cur = String::new();
        let mut raw: Vec<(String, bool)> = Vec::new();
        for c in text.chars().chain(std::iter::once(' ')) {
            if c.is_alphanumeric() {
                cur.push(c);
            } else {
                if !cur.is_empty() {
                    raw.push((std::mem::take(&mut cur), start));
                    start = false;
                }
                if matches!(c, '.' | '?' | '!' | '\n' | ':' | ';') {
                    start = true;
                }
            }
        }
        let mut seen_examples: HashSet<String> = HashSet::new();
        for (w, sentence_start) in raw {
            let lower = w.to_lowercase();
            let digits = lower.chars().all(|c| c.is_ascii_digit());
            if self.number_words.contains(&lower) {
                r.numbers += 1;
            }
            if self.time_words.contains(&lower) {
                r.time_words += 1;
            }
            let filler = self.filler_words.contains(&lower);
            let capitalised = w.chars().next().is_some_and(char::is_uppercase);
            let in_name = capitalised && !sentence_start && !filler && !digits;
            if in_name {
                r.names.push(lower.clone());
            }
            let long = lower.chars().count() >= 3 || !has_case(&lower);
            // a word already counted as a name, number or time is not a new word too
            let counted =
                in_name || self.number_words.contains(&lower) || self.time_words.contains(&lower);
            if !filler && !counted && long && !digits && !r.words.iter().any(|(x, _)| *x == lower) {
                r.words.push((lower.clone(), self.stem(&lower)));
            }
            if !filler && long && seen_examples.insert(lower.clone()) {
                r.example_words.push(lower.clone());
            }
            r.all_stems.push(self.stem(&lower));
            r.all_words.push(lower);
        }
        r
    }

    /// Whether `slot` is filled whatever the other parameters take (rules
    /// 1 to 4 of the module's documentation): its kind is not judged, an
    /// `enum` value occurs, a default is stated, or a request word is one
    /// of its description's examples.
    fn filled_as_such(&self, req: &RequestValues, slot: &Slot) -> bool {
        if slot.kind == SlotKind::Unjudged || slot.has_default || slot.from_context {
            return true;
        }
        let phrase_in = |phrase: &[String]| {
            !phrase.is_empty() && req.all_stems.windows(phrase.len()).any(|w| w == phrase)
        };
        slot.enum_values.iter().any(|v| phrase_in(v))
            || (!slot.described.is_empty()
                && req.example_words.iter().any(|w| slot.described.contains(w)))
    }

    /// Whether a new word stands within two words of a word of `slot`'s
    /// name in the request ("the orders table" for `table_name`, "a branch
    /// called feature-login" for `branch_name`).
    fn named_nearby(&self, req: &RequestValues, slot: &Slot, stems: &FxHashSet<String>) -> bool {
        let new = |k: usize| {
            let w = &req.all_words[k];
            !self.filler_words.contains(w)
                && (w.chars().count() >= 3 || !has_case(w))
                && !stems.contains(&req.all_stems[k])
        };
        req.all_stems.iter().enumerate().any(|(k, s)| {
            slot.name_stems.contains(s)
                && (k.saturating_sub(2)..(k + 3).min(req.all_words.len())).any(|j| j != k && new(j))
        })
    }

    /// Tool `tool`'s fill by the request (rules 5 and 6: with `values =
    /// "distinct"`, each number slot takes one of the request's numbers,
    /// time quantities a time word when numbers run out, and each string
    /// slot one of the values left: names, quotes, locators, time words,
    /// unused numbers and new words; with `"any"`, a slot only needs one
    /// value of its kind to exist).
    pub fn fill(&self, req: &RequestValues, tool: usize) -> Fill {
        let Some(t) = self.tools.get(tool) else {
            return Fill {
                filled: 0,
                required: 0,
                missing: Vec::new(),
            };
        };
        let mut missing = Vec::new();
        self.unfilled_slots(req, t, Some(&mut missing));
        // in `required` order
        missing.sort_by_key(|m| t.required.iter().position(|s| s.name == *m));
        Fill {
            filled: t.required.len() - missing.len(),
            required: t.required.len(),
            missing,
        }
    }

    /// How many of `t`'s required parameters the request holds no value
    /// for (the rules of [`ArgumentFill::fill`]), their names pushed to
    /// `missing` when given. Allocates nothing when `missing` is `None` and
    /// the tool has at most 8 string parameters to fill (the gate runs for
    /// every tool of the catalog on every new message).
    fn unfilled_slots(
        &self,
        req: &RequestValues,
        t: &ToolSlots,
        mut missing: Option<&mut Vec<String>>,
    ) -> usize {
        let distinct = self.distinct;
        let mut numbers = req.numbers;
        let mut time_words = req.time_words;
        let mut unfilled = 0;
        let mut miss = |s: &Slot| {
            unfilled += 1;
            if let Some(m) = missing.as_deref_mut() {
                m.push(s.name.clone());
            }
        };
        let mut texts: smallvec::SmallVec<[&Slot; 8]> = smallvec::SmallVec::new();
        let take = |pool: &mut usize| {
            if *pool == 0 {
                false
            } else {
                if distinct {
                    *pool -= 1;
                }
                true
            }
        };
        for s in &t.required {
            if self.filled_as_such(req, s) {
                continue;
            }
            match s.kind {
                SlotKind::Number | SlotKind::NumberList => {
                    let ok = take(&mut numbers) || (s.time_quantity && take(&mut time_words));
                    if !ok {
                        miss(s);
                    }
                }
                _ => texts.push(s),
            }
        }
        if !texts.is_empty() {
            // places and names first (from names, quotes, locators, numbers),
            // then dates (numbers, time words), then the rest (any value left,
            // or a new word)
            let mut strong = req.names.len() + req.quoted + req.locators;
            texts.sort_by_key(|s| match s.text_kind {
                TextKind::Place | TextKind::Name => 0,
                TextKind::Time => 1,
                TextKind::Any => 2,
            });
            // the request's new words for this tool, counted when first needed
            let mut new_words: Option<usize> = None;
            for s in texts {
                let ok = match s.text_kind {
                    TextKind::Place | TextKind::Name => {
                        take(&mut strong)
                            || take(&mut numbers)
                            || self.named_nearby(req, s, &t.stems)
                    }
                    TextKind::Time => take(&mut numbers) || take(&mut time_words),
                    TextKind::Any => {
                        take(&mut strong)
                            || take(&mut numbers)
                            || take(&mut time_words)
                            || take(new_words.get_or_insert_with(|| {
                                req.words
                                    .iter()
                                    .filter(|(_, stem)| !t.stems.contains(stem))
                                    .count()
                            }))
                    }
                };
                if !ok {
                    miss(s);
                }
            }
        }
        unfilled
    }

    /// Whether a tool with fill `f` passes the gate (see [`ArgumentFill::passes`]).
    pub fn passes_fill(&self, f: &Fill) -> bool {
        self.min_fraction <= 0.0 || f.required == 0 || f.fraction() >= self.min_fraction - 1e-9
    }

    /// Whether tool `tool` passes the gate: its fill reaches
    /// `min_fraction` (a tool without required parameters always does).
    pub fn passes(&self, req: &RequestValues, tool: usize) -> bool {
        let Some(t) = self.tools.get(tool).filter(|t| !t.required.is_empty()) else {
            return true;
        };
        if self.min_fraction <= 0.0 {
            return true;
        }
        let required = t.required.len();
        self.passes_fill(&Fill {
            filled: required - self.unfilled_slots(req, t, None),
            required,
            missing: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(min_fraction: f64) -> ArgumentFillParams {
        let l = |s: &str| s.split_whitespace().map(String::from).collect();
        ArgumentFillParams {
            min_fraction,
            turns: 0,
            distinct: true,
            number_words: l("one two three ten dozen half"),
            time_words: l("today decade week"),
            time_units: l("days years duration"),
            filler_words: l("what is the a of find please get how"),
            place_parameters: l("location city"),
            name_parameters: l("name title"),
            time_parameters: l("date season"),
            context_parameters: l("repo cwd"),
            span: 0..0,
        }
    }

    fn gate(schema: Value, description: &str) -> ArgumentFill {
        ArgumentFill::build(
            &params(1.0),
            std::iter::once(("calculate_final_price", description, schema)),
        )
    }

    #[test]
    fn a_number_parameter_needs_a_number_or_a_time_word() {
        let g = gate(
            json!({"properties": {"price": {"type": "number", "description": "Original price."}},
                   "required": ["price"]}),
            "Final price after discount.",
        );
        assert!(!g.passes(&g.request("What is the final price after discount?"), 0));
        assert!(g.passes(&g.request("The price is 20 dollars"), 0));
        assert!(g.passes(&g.request("It costs ten euros"), 0));
        let g = gate(
            json!({"properties": {"duration": {"type": "integer", "description": "In years."}},
                   "required": ["duration"]}),
            "Population growth.",
        );
        assert!(g.passes(&g.request("growth over the past decade"), 0));
        assert!(!g.passes(&g.request("growth of deer"), 0));
    }

    #[test]
    fn a_string_parameter_needs_a_new_word_a_name_or_a_quote() {
        let g = gate(
            json!({"properties": {"book": {"type": "string", "description": "The name of the holy book."}},
                   "required": ["book"]}),
            "Search holy books.",
        );
        assert_eq!(
            g.fill(&g.request("What is a holy book?"), 0).missing,
            ["book"]
        );
        assert!(g.passes(&g.request("search the holy book Quran"), 0));
        assert!(g.passes(&g.request("What is a holy book? The Bible"), 0));
        assert!(g.passes(&g.request("search for 'genesis'"), 0));
        assert!(g.passes(&g.request("open notes/todo.md"), 0));
    }

    #[test]
    fn enums_defaults_descriptions_and_unjudged_kinds_fill() {
        let g = gate(
            json!({"properties": {
                "intent": {"type": "string", "enum": ["rent", "buy"]},
                "size": {"type": "integer", "description": "Deck size. Default is 52."},
                "province_id": {"type": "integer", "description": "For example, 1 for Bangkok."},
                "flags": {"type": "object"}},
                   "required": ["intent", "size", "province_id", "flags", "unknown"]}),
            "Find homes.",
        );
        let f = g.fill(&g.request("homes to rent in Bangkok"), 0);
        assert_eq!((f.filled, f.required), (4, 4));
        let f = g.fill(&g.request("homes"), 0);
        assert_eq!(f.missing, ["intent", "province_id"]);
        assert!((f.fraction() - 0.5).abs() < 1e-12);
    }

    #[test]
    fn with_distinct_values_each_parameter_takes_its_own() {
        let schema = json!({"properties": {
            "price": {"type": "number"}, "discount_rate": {"type": "number"},
            "sales_tax": {"type": "number"}},
            "required": ["price", "discount_rate", "sales_tax"]});
        let q = "What is the final price after a 25% discount and 10% sales tax?";
        let g = gate(schema.clone(), "Final price.");
        let f = g.fill(&g.request(q), 0);
        assert_eq!((f.filled, f.missing), (2, vec!["sales_tax".to_string()]));
        assert!(!g.passes(&g.request(q), 0));
        assert!(g.passes(&g.request("a price of 80, a 25% discount and 10% tax"), 0));
        let mut p = params(1.0);
        p.distinct = false;
        let any = ArgumentFill::build(&p, std::iter::once(("final_price", "Final price.", schema)));
        assert!(any.passes(&any.request(q), 0));
    }

    #[test]
    fn names_places_and_dates_need_values_of_their_kind() {
        let g = gate(
            json!({"properties": {
                "team_name": {"type": "string"}, "date": {"type": "string"}},
                "required": ["team_name", "date"]}),
            "Team ranking.",
        );
        // a new word fills neither a name nor a date...
        let f = g.fill(&g.request("what is the basketball ranking"), 0);
        assert_eq!(f.missing, ["team_name", "date"]);
        // ...unless it stands next to another word of the name's name
        let f = g.fill(&g.request("ranking of the basketball team"), 0);
        assert_eq!(f.missing, ["date"]);
        let f = g.fill(&g.request("ranking of the Lakers today"), 0);
        assert_eq!(f.filled, 2);
        // one name fills one name parameter, not two
        let g2 = gate(
            json!({"properties": {"location_1": {"type": "string", "description": "city"},
                "city": {"type": "string"}}, "required": ["location_1", "city"]}),
            "Distance.",
        );
        assert_eq!(g2.fill(&g2.request("distance to Boston"), 0).filled, 1);
        assert_eq!(g2.fill(&g2.request("from Boston to Denver"), 0).filled, 2);
    }

    #[test]
    fn a_tool_without_required_parameters_always_passes() {
        let g = gate(json!({"properties": {}}), "List tables.");
        assert!(g.passes(&g.request("what"), 0));
        assert_eq!(g.fill(&g.request("what"), 0).fraction(), 1.0);
    }

    #[test]
    fn quotes_and_locators_are_not_apostrophes_or_sentence_ends() {
        assert_eq!(count_quoted("what's the Lakers' score"), 0);
        assert_eq!(count_quoted("tweet \"hello world\" and 'bye'"), 2);
        assert!(is_locator("user@example.com"));
        assert!(is_locator("README.md,"));
        assert!(!is_locator("end."));
        assert!(!is_locator("3.5"));
        assert_eq!(
            split_words("getWeather for_city"),
            ["get", "weather", "for", "city"]
        );
    }
}
