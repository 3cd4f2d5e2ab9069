//! The values of a `mcp-proxy --config` file, checked on toml's spanned
//! tree ([`toml::de::DeTable`]) before serde reads the file (issue 29):
//! serde's own errors name a Rust type and no key (`invalid value: integer
//! `-5`, expected usize`), echo a float in full digits, and stop at the
//! first problem. Here each value of a known key is checked against what
//! the key takes, and every problem stands at its value's span with the
//! key's path and what is expected in plain words:
//! `max_concurrent_calls must be a whole number within [1, 2305843009213693951], found -5`. Numbers
//! are echoed as written, clipped ([`crate::diag::number_as_written`]);
//! strings and names with [`crate::diag::echo`].
//!
//! Every unknown key is reported too, with a did-you-mean, as
//! [`super::toml_error`] rewrites serde's (`deny_unknown_fields`, which
//! stops at the first); a syntax error is left to serde, since the tree
//! cannot be built.

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// What a key takes.
#[derive(Clone, Copy)]
enum Kind {
    /// `true` or `false`.
    Bool,
    /// A string.
    Str,
    /// A string that must start with `/` (`[http] path`).
    UrlPath,
    /// An array of strings.
    Strs,
    /// A table of string values (`env`, `headers`).
    StrMap,
    /// A whole number within `[min, max]`, in `unit` (`""`: a count).
    Whole {
        min: u64,
        max: u64,
        unit: &'static str,
    },
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// An `http://` or `https://` URL.
    Url,
    /// A listen address (`127.0.0.1:8765`; [`super::parse_listen`]).
    Listen,
    /// A server name ([`super::validate_server_name`]).
    ServerName,
    /// A table with these keys.
    Table(&'static [(&'static str, Kind)]),
    /// An array of tables with these keys (`[[server]]`), the ones listed
    /// as required in the last field.
    Tables(&'static [(&'static str, Kind)], &'static [&'static str]),
}

/// The longest time any millisecond key takes: one day (86,400,000 ms).
/// Every key here is a wait, a delay or a lifetime of something the
/// proxy holds; a day is past any of them (a start-up that takes longer
/// has failed, a confirmation older than that is stale), and a larger
/// number is a slip of the keyboard (issue 29: `startup_timeout_ms =
/// 99999999999999999999` was told "≥ 0").
pub const MAX_MS: u64 = 86_400_000;

const MS0: Kind = Kind::Whole {
    min: 0,
    max: MAX_MS,
    unit: " of milliseconds",
};
const MS1: Kind = Kind::Whole {
    min: 1,
    max: MAX_MS,
    unit: " of milliseconds",
};
/// `debounce_ms`: the quiet time before `notifications/tools/list_changed`,
/// at most a minute (as `toolgate watch`'s `[reload] debounce_ms`).
const DEBOUNCE: Kind = Kind::Whole {
    min: 0,
    max: 60_000,
    unit: " of milliseconds",
};
/// `poll_ms`: at most an hour (as `[reload] poll_interval_ms`).
const POLL: Kind = Kind::Whole {
    min: 1,
    max: 3_600_000,
    unit: " of milliseconds",
};
/// A count of calls: at least 1, at most the permits a tokio semaphore
/// holds (`Semaphore::MAX_PERMITS`; a larger limit would make the proxy
/// panic at start).
const COUNT1: Kind = Kind::Whole {
    min: 1,
    max: tokio::sync::Semaphore::MAX_PERMITS as u64,
    unit: "",
};

const META: &[(&str, Kind)] = &[
    ("enabled", Kind::Bool),
    ("name", Kind::Str),
    ("description", Kind::Str),
];

const HTTP: &[(&str, Kind)] = &[
    ("listen", Kind::Listen),
    ("path", Kind::UrlPath),
    ("bearer_token_env", Kind::Str),
    ("allowed_origins", Kind::Strs),
    ("allowed_hosts", Kind::Strs),
    ("shutdown_grace_ms", MS0),
    ("session_idle_timeout_ms", MS1),
];

/// The eras of `[[server]] era` ([`super::ServerEra::parse`]).
pub(super) const ERAS: &[&str] = &["auto", "modern", "legacy"];

const SERVER: &[(&str, Kind)] = &[
    ("name", Kind::ServerName),
    ("command", Kind::Str),
    ("url", Kind::Url),
    ("args", Kind::Strs),
    ("env", Kind::StrMap),
    ("headers", Kind::StrMap),
    ("cwd", Kind::Str),
    ("era", Kind::OneOf(ERAS)),
];

/// The root of a configuration file: every key of `RawConfig`.
const ROOT: &[(&str, Kind)] = &[
    ("policy", Kind::Str),
    ("roots", Kind::Strs),
    ("tags", Kind::Str),
    ("audit", Kind::Str),
    ("pins", Kind::Str),
    ("shadow_policy", Kind::Str),
    ("shadow_log", Kind::Str),
    ("poll_ms", POLL),
    ("debounce_ms", DEBOUNCE),
    ("list_changed", Kind::Bool),
    ("startup_timeout_ms", MS0),
    ("restart_initial_ms", MS1),
    ("restart_max_ms", MS1),
    ("name_format", Kind::Str),
    (
        "name_max_length",
        Kind::Whole {
            min: 16,
            max: super::super::names::MAX_NAME_LEN as u64,
            unit: " of characters",
        },
    ),
    ("find_tools", Kind::Table(META)),
    ("call_tool", Kind::Table(META)),
    ("max_concurrent_calls", COUNT1),
    ("max_concurrent_calls_per_session", COUNT1),
    ("call_queue_ms", MS0),
    ("http", Kind::Table(HTTP)),
    ("state_key_env", Kind::Str),
    ("confirm_ttl_ms", MS1),
    ("server", Kind::Tables(SERVER, &["name"])),
];

/// Checks a number given on the command line as `option` (`--debounce-ms`)
/// for the top-level key `key` (`debounce_ms`) against the range the key
/// takes in a `--config` file, so both say the same (issue 29:
/// `--debounce-ms 99999999999` was accepted). The error names the option:
/// `--debounce-ms must be a whole number of milliseconds within [0, 60000],
/// found 99999999999`. A key that takes no number passes.
pub fn check_number_option(option: &str, key: &str, value: u64) -> Result<(), String> {
    match ROOT.iter().find(|(k, _)| *k == key) {
        Some((_, Kind::Whole { min, max, unit })) if value < *min || value > *max => Err(format!(
            "{option} must be a whole number{unit} within [{min}, {max}], found {value}"
        )),
        _ => Ok(()),
    }
}

/// Every problem with a known key's value in the configuration `text`,
/// in the file's order: the byte span of the value (of the table, for a
/// required key that is missing) and the message. Empty when the text is
/// not TOML (serde then reports the syntax error) or every value fits.
pub(super) fn problems(text: &str) -> Vec<(Range<usize>, String)> {
    let Ok(doc) = DeTable::parse(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    table(text, doc.get_ref(), "", ROOT, &mut out);
    out.sort_by_key(|(s, _)| s.start);
    out
}

/// [`problems`] as one error: each problem on its own line, its place
/// written by `at(line, column)` (1-based, column in characters), e.g.
/// `FILE:LINE:COLUMN: `.
pub(super) fn check(text: &str, at: impl Fn(usize, usize) -> String) -> Result<(), String> {
    let p = problems(text);
    if p.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = p
        .into_iter()
        .map(|(span, m)| {
            let before = &text[..span.start.min(text.len())];
            let line = 1 + before.matches('\n').count();
            let col = 1 + before[before.rfind('\n').map_or(0, |i| i + 1)..]
                .chars()
                .count();
            format!("{}{m}", at(line, col))
        })
        .collect();
    Err(lines.join("\n"))
}

fn type_name(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

fn table(
    text: &str,
    t: &DeTable<'_>,
    prefix: &str,
    keys: &[(&str, Kind)],
    out: &mut Vec<(Range<usize>, String)>,
) {
    for (k, v) in t.iter() {
        let Some((_, kind)) = keys.iter().find(|(n, _)| *n == k.get_ref().as_ref()) else {
            // every unknown key, each with its did-you-mean (serde, which
            // reads the file next, stops at the first)
            let known: Vec<&str> = keys.iter().map(|(n, _)| *n).collect();
            let hint = crate::diag::did_you_mean(k.get_ref(), known.iter().copied())
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            out.push((
                k.span(),
                format!(
                    "unknown key `{}`{hint}; known keys here: {}",
                    crate::diag::echo(k.get_ref()),
                    known.join(", ")
                ),
            ));
            continue;
        };
        let path = format!("{prefix}{}", k.get_ref());
        value(text, &path, k.get_ref(), v, *kind, out);
    }
}

fn value(
    text: &str,
    path: &str,
    key: &str,
    v: &Spanned<DeValue<'_>>,
    kind: Kind,
    out: &mut Vec<(Range<usize>, String)>,
) {
    let span = v.span();
    let mut bad = |want: &str| {
        out.push((
            span.clone(),
            format!("{path} must be {want}, found {}", type_name(v.get_ref())),
        ))
    };
    match (kind, v.get_ref()) {
        (Kind::Bool, DeValue::Boolean(_)) => {}
        (Kind::Bool, _) => bad("true or false"),
        (Kind::Str, DeValue::String(_)) => {}
        (Kind::Str, _) => bad("a string"),
        (Kind::UrlPath, DeValue::String(s)) => {
            if !s.starts_with('/') {
                out.push((
                    span,
                    format!(
                        "{path} must start with `/` (e.g. \"/mcp\"), found \"{}\"",
                        crate::diag::echo(s)
                    ),
                ));
            }
        }
        (Kind::UrlPath, _) => bad("a string starting with `/`"),
        (Kind::Strs, DeValue::Array(items)) => {
            if key == "allowed_hosts" && items.is_empty() {
                // rmcp reads an empty list as "any host": the spec's
                // DNS-rebinding defence would be off without a word.
                out.push((
                    span.clone(),
                    format!(
                        "{path} = [] would turn the Host check off (an empty list accepts any host); \
                         list the hosts clients use (e.g. [\"localhost\", \"127.0.0.1\", \"::1\"]) \
                         or remove the key for that default"
                    ),
                ));
            }
            for (i, it) in items.iter().enumerate() {
                if !matches!(it.get_ref(), DeValue::String(_)) {
                    out.push((
                        it.span(),
                        format!(
                            "{path}[{i}] must be a string, found {}",
                            type_name(it.get_ref())
                        ),
                    ));
                }
            }
        }
        (Kind::Strs, _) => bad("an array of strings"),
        (Kind::StrMap, DeValue::Table(t)) => {
            for (k, it) in t.iter() {
                if !matches!(it.get_ref(), DeValue::String(_)) {
                    out.push((
                        it.span(),
                        format!(
                            "{path}.{} must be a string, found {}",
                            crate::diag::echo(k.get_ref()),
                            type_name(it.get_ref())
                        ),
                    ));
                }
            }
        }
        (Kind::StrMap, _) => bad("a table of strings (e.g. { NAME = \"value\" })"),
        (Kind::Whole { min, max, unit }, v) => {
            let written = crate::diag::number_as_written(text.get(span.clone()).unwrap_or(""));
            let fits = match v {
                DeValue::Integer(i) => i128::from_str_radix(i.as_str(), i.radix())
                    .is_ok_and(|n| n >= min as i128 && n <= max as i128),
                DeValue::Float(_) => false,
                _ => {
                    bad(&format!("a whole number{unit}"));
                    return;
                }
            };
            if !fits {
                let range = if max == u64::MAX {
                    format!("≥ {min}")
                } else {
                    format!("within [{min}, {max}]")
                };
                out.push((
                    span,
                    format!("{path} must be a whole number{unit} {range}, found {written}"),
                ));
            }
        }
        (Kind::OneOf(allowed), DeValue::String(s)) => {
            if !allowed.contains(&s.as_ref()) {
                let hint = crate::diag::did_you_mean(s, allowed.iter().copied())
                    .map(|m| format!("; did you mean `{m}`?"))
                    .unwrap_or_default();
                out.push((
                    span,
                    format!(
                        "unknown {key} `{}`{hint} ({path} is one of: {})",
                        crate::diag::echo(s),
                        allowed.join(", ")
                    ),
                ));
            }
        }
        (Kind::OneOf(allowed), _) => bad(&format!("one of the strings {}", allowed.join(", "))),
        (Kind::Url, DeValue::String(s)) => {
            if let Err(m) = check_url(s) {
                out.push((span, format!("{path}: {m}")));
            }
        }
        (Kind::Url, _) => bad("an http:// or https:// URL (a string)"),
        (Kind::Listen, DeValue::String(s)) => {
            if let Err(m) = super::parse_listen(s) {
                out.push((span, format!("{path}: {}", crate::diag::echo(&m))));
            }
        }
        (Kind::Listen, _) => bad("an address such as \"127.0.0.1:8765\" (a string)"),
        (Kind::ServerName, DeValue::String(s)) => {
            if let Err(m) = super::validate_server_name(s) {
                out.push((span, format!("{path}: {}", crate::diag::echo(&m))));
            }
        }
        (Kind::ServerName, _) => bad("a string (letters, digits, `_` and `-`)"),
        (Kind::Table(keys), DeValue::Table(t)) => {
            table(text, t, &format!("{path}."), keys, out);
        }
        (Kind::Table(_), _) => bad(&format!("a table ([{path}])")),
        (Kind::Tables(keys, required), DeValue::Array(items)) => {
            for (i, it) in items.iter().enumerate() {
                let here = format!("{path}[{i}]");
                match it.get_ref() {
                    DeValue::Table(t) => {
                        table(text, t, &format!("{here}."), keys, out);
                        for r in required.iter().filter(|r| t.get(**r).is_none()) {
                            out.push((
                                it.span(),
                                format!("{here} lacks the required key `{r}`"),
                            ));
                        }
                    }
                    other => out.push((
                        it.span(),
                        format!(
                            "{here} must be a table ([[{path}]]), found {}",
                            type_name(other)
                        ),
                    )),
                }
            }
            if key == "server" {
                server_tables(text, items, out);
            }
        }
        (Kind::Tables(..), DeValue::Table(_)) => out.push((
            span,
            format!(
                "`[{path}]` is one table; {path}s are an array of tables: write `[[{path}]]` (one per {path})"
            ),
        )),
        (Kind::Tables(..), _) => bad(&format!("an array of tables ([[{path}]])")),
    }
}

/// Each `[[server]]` as a whole, at its `[[server]]` header (issue 29:
/// these errors had no line): `command` or `url`, not both and not
/// neither; a name an earlier `[[server]]` has; keys of a local server on
/// a remote one and the reverse (at the key).
fn server_tables(
    text: &str,
    items: &[Spanned<DeValue<'_>>],
    out: &mut Vec<(Range<usize>, String)>,
) {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for (i, it) in items.iter().enumerate() {
        let DeValue::Table(t) = it.get_ref() else {
            continue;
        };
        let name = match t.get("name").map(|v| v.get_ref()) {
            Some(DeValue::String(n)) => Some(n.as_ref()),
            _ => None,
        };
        let who = match name {
            Some(n) => format!("server `{}` (server[{i}])", crate::diag::echo(n)),
            None => format!("server[{i}]"),
        };
        let (command, url) = (t.get("command"), t.get("url"));
        match (command, url) {
            (Some(_), Some(_)) => out.push((
                it.span(),
                format!(
                    "{who} has both `command` and `url`: give `command` for a local server or `url` for a remote one, not both"
                ),
            )),
            // a misspelt `command`/`url` is the cause: reported at the
            // key, with its did-you-mean (`table`)
            (None, None)
                if t.iter().any(|(k, _)| {
                    crate::diag::did_you_mean(k.get_ref(), ["command", "url"]).is_some()
                }) => {}
            (None, None) => out.push((
                it.span(),
                format!(
                    "{who} needs `command` (a local server, e.g. command = \"mcp-server-time\") or `url` (a remote one, e.g. url = \"https://mcp.example.com/mcp\")"
                ),
            )),
            (Some(c), None) => {
                if matches!(c.get_ref(), DeValue::String(s) if s.trim().is_empty()) {
                    out.push((c.span(), format!("{who}: `command` is empty; name the program that runs the server")));
                }
                if let Some((k, _)) = t.iter().find(|(k, _)| k.get_ref().as_ref() == "headers") {
                    out.push((k.span(), format!("{who}: `headers` are for a remote server (`url`), not one with a `command`")));
                }
            }
            (None, Some(_)) => {
                for (k, _) in t.iter() {
                    if ["args", "env", "cwd"].contains(&k.get_ref().as_ref()) {
                        out.push((
                            k.span(),
                            format!("{who}: `{}` is for a local server (`command`), not one with a `url`", k.get_ref()),
                        ));
                    }
                }
            }
        }
        if let Some(n) = name {
            let start = it.span().start;
            match seen.iter().find(|(m, _)| *m == n) {
                Some((_, first)) => {
                    let line = 1 + text[..(*first).min(text.len())].matches('\n').count();
                    out.push((
                        it.span(),
                        format!(
                            "server `{}` is configured twice (first at line {line}); give each [[server]] its own name",
                            crate::diag::echo(n)
                        ),
                    ));
                }
                None => seen.push((n, start)),
            }
        }
    }
}

/// A remote server's `url`: `http://` or `https://` and a host.
pub(super) fn check_url(s: &str) -> Result<(), String> {
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"));
    match rest {
        Some(r) if !r.is_empty() && !r.starts_with('/') => Ok(()),
        Some(_) => Err(format!(
            "the URL `{}` has no host (e.g. \"https://mcp.example.com/mcp\")",
            super::display_url(s)
        )),
        None => Err(format!(
            "`{}` is not an http:// or https:// URL (e.g. \"https://mcp.example.com/mcp\"); a local server takes `command` instead",
            crate::diag::echo(&super::display_url(s))
        )),
    }
}

#[cfg(test)]
mod tests {
    fn msgs(text: &str) -> Vec<String> {
        super::problems(text).into_iter().map(|(_, m)| m).collect()
    }

    #[test]
    fn each_value_is_checked_at_its_span_in_plain_words() {
        let text = "max_concurrent_calls = -5\ncall_queue_ms = 1e300\n";
        let p = super::problems(text);
        assert_eq!(p.len(), 2);
        assert_eq!(&text[p[0].0.clone()], "-5");
        assert_eq!(
            p[0].1,
            "max_concurrent_calls must be a whole number within [1, 2305843009213693951], found -5"
        );
        assert_eq!(
            p[1].1,
            "call_queue_ms must be a whole number of milliseconds within [0, 86400000], found 1e300"
        );
        assert_eq!(
            msgs("name_max_length = 8\n"),
            ["name_max_length must be a whole number of characters within [16, 64], found 8"]
        );
        assert_eq!(
            msgs("list_changed = \"yes\"\n"),
            ["list_changed must be true or false, found a string"]
        );
        assert!(msgs("max_concurrent_calls = 4\n[http]\npath = \"/x\"\n").is_empty());
    }

    /// An empty `allowed_hosts` is refused (rmcp would accept any Host);
    /// an empty `allowed_origins` is not (no browser origin is accepted).
    #[test]
    fn an_empty_host_list_is_refused_an_empty_origin_list_is_not() {
        let p = super::problems("[http]\nallowed_hosts = []\nallowed_origins = []\n");
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].1
                .starts_with("http.allowed_hosts = [] would turn the Host check off")
        );
        assert!(super::problems("[http]\nallowed_hosts = [\"localhost\"]\n").is_empty());
    }

    /// The configuration examples of docs/mcp-proxy.md and of the module
    /// docs read as they say (a top-level key written after a table
    /// belongs to that table and was refused as unknown there).
    #[test]
    fn the_documented_examples_read() {
        let docs = include_str!("../../../docs/mcp-proxy.md");
        let from = docs.find("The same as a file").unwrap();
        let block = &docs[from..];
        let block = &block[block.find("```toml\n").unwrap() + 8..];
        let block = &block[..block.find("```").unwrap()];
        let module = include_str!("../config.rs");
        let module: String = module[module.find("//! ```toml\n").unwrap() + 12..]
            .lines()
            .take_while(|l| !l.starts_with("//! ```"))
            .map(|l| {
                format!(
                    "{}\n",
                    l.strip_prefix("//!").unwrap_or(l).trim_start_matches(' ')
                )
            })
            .collect();
        for text in [block, module.as_str()] {
            assert!(msgs(text).is_empty(), "{:?}\n{text}", msgs(text));
            if let Err(e) = toml::from_str::<super::super::RawConfig>(text) {
                panic!("{e}\n{text}");
            }
        }
    }

    #[test]
    fn servers_tables_eras_and_urls() {
        let m = msgs("[server]\nname = \"t\"\ncommand = \"x\"\n");
        assert_eq!(m.len(), 1);
        assert!(m[0].starts_with("`[server]` is one table;"), "{m:?}");
        assert!(m[0].contains("write `[[server]]`"), "{m:?}");
        assert_eq!(
            msgs("[[server]]\nname = \"t\"\ncommand = \"x\"\nera = \"moden\"\n"),
            [
                "unknown era `moden`; did you mean `modern`? (server[0].era is one of: auto, modern, legacy)"
            ]
        );
        let m = msgs("[[server]]\nname = \"t\"\nurl = \"notaurl\"\n");
        assert!(
            m[0].starts_with("server[0].url: `notaurl` is not an http:// or https:// URL"),
            "{m:?}"
        );
        assert!(msgs("[[server]]\nname = \"t\"\nurl = \"https://\"\n")[0].contains("no host"));
        assert_eq!(
            msgs("[[server]]\ncommand = \"x\"\n"),
            ["server[0] lacks the required key `name`"]
        );
        assert!(msgs("not toml = = 1").is_empty());
    }
}
