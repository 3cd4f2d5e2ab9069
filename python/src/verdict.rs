//! The gate's answer for one call (`Verdict`, from `toolgate::gate::Verdict`)
//! and what it found (`Finding`).

use pyo3::prelude::*;
use serde_json::Value;

use crate::convert::{json_str, to_py};

/// One thing the gate found in a call.
#[pyclass(frozen, module = "toolgate._toolgate", get_all)]
#[derive(Clone)]
pub(crate) struct Finding {
    /// Id of the rule or check that fired.
    rule_id: String,
    /// The layer: `tool`, `input`, `schema`, `pattern`, `shell`, `sql`,
    /// `path`, `parse`, `risk`.
    kind: String,
    /// JSON pointer of the argument (`/command`; empty for the whole call).
    path: String,
    /// `low`, `medium`, `high`, `critical`.
    severity: String,
    /// What the rule asks for: `allow`, `ask`, `deny`.
    action: String,
    /// For the model: what was found and what to do instead.
    message: String,
}

#[pymethods]
impl Finding {
    fn __repr__(&self) -> String {
        format!(
            "Finding({:?}, action={:?}, path={:?})",
            self.rule_id, self.action, self.path
        )
    }
}

/// The gate's answer for one call.
#[pyclass(frozen, module = "toolgate._toolgate")]
pub(crate) struct Verdict {
    /// `allow`, `ask` or `deny`.
    #[pyo3(get)]
    decision: String,
    /// The arguments after coercion (as received when they could not be read).
    #[pyo3(get)]
    arguments: Py<PyAny>,
    /// Everything found, most decisive first.
    #[pyo3(get)]
    findings: Vec<Finding>,
    /// For the model: what was found, which parameter, what to do instead.
    #[pyo3(get)]
    message: String,
    /// The tool's canonical name (as called when it is unknown).
    #[pyo3(get)]
    tool: String,
    /// The risk rule that decided, if one did.
    #[pyo3(get)]
    risk_rule: Option<String>,
    /// Time spent in the gate, seconds.
    #[pyo3(get)]
    latency: f64,
    json: Value,
}

impl Verdict {
    pub(crate) fn new(py: Python<'_>, v: &toolgate::gate::Verdict) -> PyResult<Verdict> {
        Ok(Verdict {
            decision: v.decision.to_string(),
            arguments: to_py(py, &v.arguments)?.unbind(),
            findings: v
                .findings
                .iter()
                .map(|f| Finding {
                    rule_id: f.rule_id.clone(),
                    kind: json_str(&f.kind),
                    path: f.path.clone(),
                    severity: f.severity.as_str().to_string(),
                    action: f.action.to_string(),
                    message: f.message.clone(),
                })
                .collect(),
            message: v.message.clone(),
            tool: v.tool.clone(),
            risk_rule: v.risk_rule.clone(),
            latency: v.latency.as_secs_f64(),
            json: serde_json::to_value(v).unwrap_or(Value::Null),
        })
    }
}

#[pymethods]
impl Verdict {
    /// Whether the call may run as is.
    #[getter]
    fn allowed(&self) -> bool {
        self.decision == "allow"
    }

    /// The verdict as `toolgate guard --format json` prints it (`decision`,
    /// `arguments`, `findings`, `coercions`, `message`, `effects`), without
    /// the CLI's `warnings` (about the catalog's schemas, not the call).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.json)
    }

    fn __repr__(&self) -> String {
        format!(
            "Verdict({:?}, tool={:?}, rules={:?})",
            self.decision,
            self.tool,
            self.findings
                .iter()
                .map(|f| f.rule_id.as_str())
                .collect::<Vec<_>>()
        )
    }
}
