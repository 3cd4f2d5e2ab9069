//! Compiling `[features.argument_fill]` (see `text::argument_fill`): each
//! tool's required parameters, read from its `inputSchema`, and the stems
//! of its own text.
//!
//! A policy-only reload compiles the same catalog again (the same
//! `Arc<Vec<CompiledTool>>`, `compile::CompileCache`); the last result is
//! kept with a weak reference to its catalog and reused while the catalog
//! and the table's values are the same, so such a reload does not parse
//! every schema again.

use std::sync::{Arc, Mutex, Weak};

use crate::parse::argument_fill::ArgumentFillParams;
use crate::parse::policy::PolicySource;
use crate::plan::CompiledTool;
use crate::text::argument_fill::ArgumentFill;

type Memo = (
    Weak<Vec<CompiledTool>>,
    ArgumentFillParams,
    Arc<ArgumentFill>,
);

static LAST: Mutex<Option<Memo>> = Mutex::new(None);

/// The compiled gate of `policy` over `tools`, or `None` when the policy
/// has no `[features.argument_fill]`.
pub fn build(policy: &PolicySource, tools: &Arc<Vec<CompiledTool>>) -> Option<Arc<ArgumentFill>> {
    let params = policy.features.argument_fill.as_ref()?;
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((t, p, gate)) = last.as_ref()
        && t.upgrade().is_some_and(|t| Arc::ptr_eq(&t, tools))
        && p.min_fraction.to_bits() == params.min_fraction.to_bits()
        && p.turns == params.turns
        && p.distinct == params.distinct
        && p.number_words == params.number_words
        && p.time_words == params.time_words
        && p.time_units == params.time_units
        && p.filler_words == params.filler_words
        && p.place_parameters == params.place_parameters
        && p.name_parameters == params.name_parameters
        && p.time_parameters == params.time_parameters
        && p.context_parameters == params.context_parameters
    {
        return Some(gate.clone());
    }
    let gate = Arc::new(ArgumentFill::build(
        params,
        tools.iter().map(|t| {
            (
                t.name.as_str(),
                t.description.as_str(),
                t.input_schema.value().into_owned(),
            )
        }),
    ));
    *last = Some((Arc::downgrade(tools), params.clone(), gate.clone()));
    Some(gate)
}
