//! A policy's declared properties (`[[properties]]`) as the plan keeps them:
//! names resolved to tool indices and feature slots, each with the place it
//! was declared. `compile` builds them; the checker in `fuzz` proves or
//! refutes them (`toolgate check`).

/// What a property states (see `docs/policy-reference.md`, "Declared properties").
#[derive(Debug, Clone, PartialEq)]
pub enum PropertyKind {
    /// Every raw score (before the clamp) lies in `[low, high]`.
    RawScoreWithin {
        /// Lowest allowed raw score.
        low: f64,
        /// Highest allowed raw score.
        high: f64,
    },
    /// Every (clamped) score lies in `[low, high]`.
    ScoreWithin {
        /// Lowest allowed score.
        low: f64,
        /// Highest allowed score.
        high: f64,
    },
    /// Raising `feature` with everything else equal never lowers
    /// (`increasing`) or never raises (`!increasing`) the raw score.
    Monotone {
        /// A slot of [`FEATURES`](super::FEATURES).
        feature: usize,
        /// `direction = "increasing"`.
        increasing: bool,
    },
    /// These tools (indices into the plan's tools) are active in every session.
    AlwaysActive(Vec<usize>),
    /// These tools are active in no session.
    NeverActive(Vec<usize>),
    /// The number of active tools lies in `[low, high]` in every session.
    ActiveCountWithin {
        /// Fewest active tools allowed.
        low: usize,
        /// Most active tools allowed.
        high: usize,
    },
}

/// One declared property.
#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    /// Its name, as declared.
    pub name: String,
    /// What it states.
    pub kind: PropertyKind,
    /// For the `*_within` score kinds: the tools it is about (indices);
    /// `None` means every tool of the catalog.
    pub tools: Option<Vec<usize>>,
    /// Random sessions a search may try (`samples`), if the policy gives it.
    pub samples: Option<u64>,
    /// Where it is declared, as `file:line:column`.
    pub location: String,
}

impl PropertyKind {
    /// The policy key of this kind (`raw_score_within`, `monotone`, ...).
    pub fn key(&self) -> &'static str {
        match self {
            PropertyKind::RawScoreWithin { .. } => "raw_score_within",
            PropertyKind::ScoreWithin { .. } => "score_within",
            PropertyKind::Monotone { .. } => "monotone",
            PropertyKind::AlwaysActive(_) => "always_active",
            PropertyKind::NeverActive(_) => "never_active",
            PropertyKind::ActiveCountWithin { .. } => "active_count_within",
        }
    }
}
