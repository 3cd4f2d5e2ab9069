//! Domain-rule conditions, compiled once and evaluated once per context.
//!
//! Structured matchers (`language`, `project_type`, `stage`, `keywords_any`,
//! `recent_tools_contain`, `file_extensions`) are lowercased sets; an optional
//! `expr` is an evalexpr boolean expression over these variables:
//!
//! | variable | type |
//! | --- | --- |
//! | `active_language`, `project_type`, `conversation_stage` | string (`""` when absent) |
//! | `intent_keywords`, `recent_tool_calls`, `file_extensions`, `intent_entities` | tuple of lowercased strings |
//! | `session_duration_seconds`, `total_calls` | float |
//!
//! and evalexpr's built-in functions `contains`, `contains_any`, `len`,
//! `str::to_lowercase`, `str::trim`, `if`, `min`, `max`. Example:
//! `contains(intent_keywords, "sql") && total_calls > 3.0`.
//! (evalexpr 11's `&&` and `||` evaluate both sides; this does not matter here,
//! as nothing has side effects.)

use crate::context::{SessionContext, UsageStats};
use crate::eval::condition::Facts;
use crate::parse::policy::Condition;
use crate::plan::NameMap;
use crate::plan::condition::CompiledCondition;
use crate::text::keywords::Analyzer;

/// Variables an `expr` may read.
pub const EXPR_VARIABLES: &[&str] = &[
    "active_language",
    "project_type",
    "conversation_stage",
    "intent_keywords",
    "intent_entities",
    "recent_tool_calls",
    "file_extensions",
    "session_duration_seconds",
    "total_calls",
];

/// Functions an `expr` may call.
pub const EXPR_FUNCTIONS: &[&str] = &[
    "contains",
    "contains_any",
    "len",
    "str::to_lowercase",
    "str::trim",
    "if",
    "min",
    "max",
];

fn lower(v: &[String]) -> Vec<String> {
    v.iter().map(|s| s.to_lowercase()).collect()
}

/// Why an `expr` was rejected.
#[derive(Debug, Clone)]
pub enum ExprError {
    /// Does not parse.
    Parse(String),
    /// Unknown variable.
    UnknownVariable(String),
    /// Unknown function.
    UnknownFunction(String),
    /// Does not evaluate to a boolean on an empty context.
    NotBoolean(String),
}

impl CompiledCondition {
    /// Compiles a condition; the `expr` is parsed, its names checked, and it is
    /// evaluated once on an empty context to check that it yields a boolean.
    /// Keyword terms are interned into `vocab` (the plan's term vocabulary).
    pub fn compile(
        c: &Condition,
        analyzer: &Analyzer,
        vocab: &mut NameMap<u32>,
    ) -> Result<Self, ExprError> {
        let expr = match &c.expr {
            None => None,
            Some(src) => {
                if src.value.len() > crate::compile::formula::MAX_EXPRESSION_LEN {
                    return Err(ExprError::Parse(format!(
                        "the expression is {} bytes long; at most {} are accepted",
                        src.value.len(),
                        crate::compile::formula::MAX_EXPRESSION_LEN
                    )));
                }
                let node = evalexpr::build_operator_tree(&src.value)
                    .map_err(|e| ExprError::Parse(e.to_string()))?;
                for v in node.iter_variable_identifiers() {
                    if !EXPR_VARIABLES.contains(&v) {
                        return Err(ExprError::UnknownVariable(v.to_string()));
                    }
                }
                for f in node.iter_function_identifiers() {
                    if !EXPR_FUNCTIONS.contains(&f) {
                        return Err(ExprError::UnknownFunction(f.to_string()));
                    }
                }
                let empty = SessionContext::default();
                let facts = Facts::new(&empty, &UsageStats::default(), &[], &[]);
                node.eval_boolean_with_context(&facts.expr_context())
                    .map_err(|e| ExprError::NotBoolean(e.to_string()))?;
                Some(node)
            }
        };
        Ok(CompiledCondition {
            language: lower(&c.language),
            project_type: lower(&c.project_type),
            stage: c.stage.iter().map(|s| s.value.to_lowercase()).collect(),
            keywords_any: c
                .keywords_any
                .iter()
                .map(|k| {
                    analyzer
                        .expand_keyword(k)
                        .into_iter()
                        .map(|t| {
                            let next = vocab.len() as u32;
                            *vocab.entry(t).or_insert(next)
                        })
                        .collect()
                })
                .collect(),
            recent_tools_contain: lower(&c.recent_tools_contain),
            file_extensions: c
                .file_extensions
                .iter()
                .map(|e| e.trim_start_matches('.').to_lowercase())
                .collect(),
            expr,
        })
    }
}
