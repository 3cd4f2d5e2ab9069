//! The results of a selection: `Selection` (every tool's score and the
//! active set, from `Plan::evaluate`'s `Activation`), `ToolResult` (one
//! tool) and `Term` (one term of its score).

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use toolgate::Activation;

use crate::convert::{json_str, py_opt, to_py};
use crate::errors::{guarded, raise};

/// The result of `Engine.select`: every tool's score and the active set.
#[pyclass(frozen, module = "toolgate._toolgate")]
pub(crate) struct Selection {
    pub(crate) act: Arc<Activation>,
}

impl Selection {
    /// The selection of one evaluation.
    pub(crate) fn new(act: Activation) -> Selection {
        Selection { act: Arc::new(act) }
    }
}

#[pymethods]
impl Selection {
    /// Names of the active tools, best first (the order of `toolgate eval`).
    #[getter]
    fn active(&self) -> Vec<String> {
        self.act
            .ranked_active_names()
            .into_iter()
            .map(String::from)
            .collect()
    }

    /// Every tool, active ones first, best first.
    #[getter]
    fn tools(&self, py: Python<'_>) -> PyResult<Vec<ToolResult>> {
        self.act
            .ranked()
            .into_iter()
            .map(|i| ToolResult::new(py, &self.act, i))
            .collect()
    }

    /// One tool's result (a catalog name or an alias).
    pub(crate) fn tool(&self, py: Python<'_>, name: &str) -> PyResult<ToolResult> {
        match self.act.plan.tool_index(name) {
            Some(i) => ToolResult::new(py, &self.act, i),
            None => {
                let hint = toolgate::diag::did_you_mean(
                    name,
                    self.act.plan.tools.iter().map(|t| t.name.as_str()),
                );
                let msg = match &hint {
                    Some(h) => format!("unknown tool `{name}` (did you mean `{h}`?)"),
                    None => format!("unknown tool `{name}`"),
                };
                Err(raise(py, "UnknownToolError", (msg, name, hint)))
            }
        }
    }

    /// The threshold after the cold-start rule.
    #[getter]
    fn effective_threshold(&self) -> f64 {
        self.act.effective_threshold
    }

    /// The policy's threshold.
    #[getter]
    fn threshold(&self) -> f64 {
        self.act.threshold
    }

    /// Whether the cold-start rule applied.
    #[getter]
    fn cold_start(&self) -> bool {
        self.act.cold_start
    }

    /// The intent terms extracted from the context and message.
    #[getter]
    fn intent_terms(&self) -> Vec<String> {
        self.act.intent_terms.clone()
    }

    /// Names of the domain rules that applied.
    #[getter]
    fn rules_applied(&self) -> Vec<String> {
        self.act
            .rule_names()
            .into_iter()
            .map(String::from)
            .collect()
    }

    /// Warnings of the evaluation (a formula that gave NaN).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.act.warnings.clone()
    }

    /// The inferred domain weights (empty when none were inferred).
    #[getter]
    fn domain_weights(&self) -> Vec<(String, f64)> {
        self.act
            .plan
            .domains
            .iter()
            .cloned()
            .zip(self.act.domain_weights().iter().copied())
            .collect()
    }

    /// The whole report, exactly as `toolgate eval --format json` prints it.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v = guarded(py, || self.act.report_json())?;
        to_py(py, &v)
    }

    fn __repr__(&self) -> String {
        format!(
            "Selection(active={:?}, effective_threshold={})",
            self.act.ranked_active_names(),
            self.act.effective_threshold
        )
    }
}

/// One term of a tool's score.
#[pyclass(frozen, module = "toolgate._toolgate", get_all)]
#[derive(Clone)]
pub(crate) struct Term {
    /// The term's text in the formula.
    term: String,
    /// The feature's value (`None` for a term of several features).
    value: Option<f64>,
    /// The weight (`None` for a term that is not `weight * feature`).
    weight: Option<f64>,
    /// What the term adds to the raw score.
    contribution: f64,
}

#[pymethods]
impl Term {
    fn __repr__(&self) -> String {
        format!(
            "Term({:?}, value={}, weight={}, contribution={})",
            self.term,
            py_opt(self.value),
            py_opt(self.weight),
            self.contribution
        )
    }
}

/// One tool's score in a selection.
#[pyclass(frozen, module = "toolgate._toolgate", get_all)]
pub(crate) struct ToolResult {
    /// The tool's catalog name.
    name: String,
    /// The clamped score.
    score: f64,
    /// The score before the clamp (the sum of the contributions).
    raw_score: f64,
    /// Whether the tool is exposed.
    active: bool,
    /// Why: `above_threshold`, `below_threshold`, `hysteresis`, `pinned`,
    /// `min_active`, `max_active`, `invalid_score`.
    reason: String,
    /// Per term (keyed by feature name, or `term_N`), in formula order.
    terms: Py<PyDict>,
}

impl ToolResult {
    pub(crate) fn new(py: Python<'_>, act: &Activation, i: usize) -> PyResult<ToolResult> {
        let s = &act.tools[i];
        let terms = PyDict::new(py);
        let explained = guarded(py, || act.explain(i))?;
        for (k, e) in explained.into_iter().enumerate() {
            let key = toolgate::eval::report::term_key(&e, k);
            terms.set_item(
                key,
                Term {
                    term: e.term,
                    value: e.value,
                    weight: e.weight,
                    contribution: e.contribution,
                },
            )?;
        }
        Ok(ToolResult {
            name: act.plan.tools[i].name.clone(),
            score: s.score,
            raw_score: s.raw_score,
            active: s.active,
            reason: json_str(&s.reason),
            terms: terms.unbind(),
        })
    }
}

#[pymethods]
impl ToolResult {
    fn __repr__(&self) -> String {
        format!(
            "ToolResult({:?}, score={}, active={}, reason={:?})",
            self.name,
            self.score,
            if self.active { "True" } else { "False" },
            self.reason
        )
    }
}
