//! Domain-rule conditions as the plan keeps them (compiled by
//! `compile::condition`, tested once per context by evaluate).

use evalexpr::Node;

/// A domain rule's condition, compiled: structured matchers as lowercased
/// sets, keyword entries as term ids of the plan's vocabulary, and the
/// optional `expr` as a parsed evalexpr tree.
#[derive(Debug, Clone)]
pub struct CompiledCondition {
    pub(crate) language: Vec<String>,
    pub(crate) project_type: Vec<String>,
    pub(crate) stage: Vec<String>,
    /// Each entry cut into terms by the policy's analyzer; an entry matches when
    /// all its terms are intent terms (so `数据库` needs `数据` and `据库`).
    pub(crate) keywords_any: Vec<Vec<u32>>,
    pub(crate) recent_tools_contain: Vec<String>,
    pub(crate) file_extensions: Vec<String>,
    pub(crate) expr: Option<Node>,
}
