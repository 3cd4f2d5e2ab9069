//! Domain-rule conditions tested against one context: the [`Facts`] a
//! context offers, prepared once per evaluation, and
//! [`CompiledCondition::holds`].

use evalexpr::{ContextWithMutableVariables, HashMapContext, Value};

use crate::context::{SessionContext, UsageStats};
use crate::plan::condition::CompiledCondition;

/// The facts of one context that conditions read, prepared once per evaluation.
pub struct Facts<'a> {
    /// The context.
    pub context: &'a SessionContext,
    /// Distinct intent terms: the intent keywords lowercased, CJK cut as the analyzer does.
    pub keywords: &'a [String],
    /// The intent terms as a bitset over the plan's term vocabulary.
    pub bits: &'a [u64],
    /// Total calls in the session.
    pub total_calls: u64,
    /// Lowercased recent tool names (computed when a rule first needs them).
    recent: std::cell::OnceCell<Vec<String>>,
    /// Lowercased extensions of the active files (likewise).
    extensions: std::cell::OnceCell<Vec<String>>,
}

/// `value` lowercased equals one of `set` (already lowercased), without
/// allocating for ASCII values.
fn in_lower_set(set: &[String], value: &str) -> bool {
    if value.is_ascii() {
        set.iter().any(|x| x.eq_ignore_ascii_case(value))
    } else {
        let v = value.to_lowercase();
        set.contains(&v)
    }
}

impl<'a> Facts<'a> {
    fn recent(&self) -> &[String] {
        self.recent.get_or_init(|| {
            self.context
                .recent_tool_calls
                .iter()
                .map(|r| r.to_lowercase())
                .collect()
        })
    }

    fn extensions(&self) -> &[String] {
        self.extensions.get_or_init(|| {
            self.context
                .active_files
                .iter()
                .filter_map(|f| extension(f))
                .collect()
        })
    }

    /// Prepares the facts of `context` and `usage`; `keywords` are the distinct
    /// intent terms and `bits` the same terms over the plan's vocabulary.
    pub fn new(
        context: &'a SessionContext,
        usage: &UsageStats,
        keywords: &'a [String],
        bits: &'a [u64],
    ) -> Self {
        Facts {
            context,
            keywords,
            bits,
            total_calls: usage.total_calls(),
            recent: std::cell::OnceCell::new(),
            extensions: std::cell::OnceCell::new(),
        }
    }

    /// The variables an `expr` reads, bound to this context's values.
    pub(crate) fn expr_context(&self) -> HashMapContext {
        let mut c = HashMapContext::new();
        let s = |o: &Option<String>| Value::String(o.clone().unwrap_or_default().to_lowercase());
        let tup = |v: &[String]| {
            Value::Tuple(v.iter().map(|x| Value::String(x.to_lowercase())).collect())
        };
        let ctx = self.context;
        let exts = self.extensions();
        let pairs = [
            ("active_language", s(&ctx.active_language)),
            ("project_type", s(&ctx.project_type)),
            ("conversation_stage", s(&ctx.conversation_stage)),
            ("intent_keywords", tup(self.keywords)),
            ("intent_entities", tup(&ctx.user_intent_entities)),
            ("recent_tool_calls", tup(&ctx.recent_tool_calls)),
            ("file_extensions", tup(exts)),
            (
                "session_duration_seconds",
                Value::Float(ctx.session_duration_seconds),
            ),
            ("total_calls", Value::Float(self.total_calls as f64)),
        ];
        for (k, v) in pairs {
            // Setting a fresh variable in a fresh context cannot fail.
            let _ = c.set_value(k.to_string(), v);
        }
        c
    }
}

fn extension(path: &str) -> Option<String> {
    let name = path.rsplit(['/', '\\']).next()?;
    let (_, ext) = name.rsplit_once('.')?;
    (!ext.is_empty()).then(|| ext.to_lowercase())
}

impl CompiledCondition {
    /// Whether the condition holds. An `expr` that fails at run time does not
    /// hold, and the error is returned beside the answer for the explanation.
    pub fn holds(&self, f: &Facts<'_>) -> (bool, Option<String>) {
        let opt_in = |set: &[String], v: &Option<String>| {
            set.is_empty() || v.as_deref().is_some_and(|x| in_lower_set(set, x))
        };
        let ctx = f.context;
        if !opt_in(&self.language, &ctx.active_language)
            || !opt_in(&self.project_type, &ctx.project_type)
            || !opt_in(&self.stage, &ctx.conversation_stage)
        {
            return (false, None);
        }
        if !self.keywords_any.is_empty()
            && !self.keywords_any.iter().any(|ids| {
                !ids.is_empty()
                    && ids.iter().all(|&id| {
                        f.bits
                            .get((id / 64) as usize)
                            .is_some_and(|w| (w >> (id % 64)) & 1 == 1)
                    })
            })
        {
            return (false, None);
        }
        if !self.recent_tools_contain.is_empty()
            && !f.recent().iter().any(|r| {
                self.recent_tools_contain
                    .iter()
                    .any(|s| r.contains(s.as_str()))
            })
        {
            return (false, None);
        }
        if !self.file_extensions.is_empty()
            && !f
                .extensions()
                .iter()
                .any(|e| self.file_extensions.contains(e))
        {
            return (false, None);
        }
        if let Some(node) = &self.expr {
            return match node.eval_boolean_with_context(&f.expr_context()) {
                Ok(b) => (b, None),
                Err(e) => (false, Some(e.to_string())),
            };
        }
        (true, None)
    }
}
