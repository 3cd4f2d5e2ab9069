//! Text analysis shared by compile and evaluate: the keyword [`Analyzer`]
//! (from a raw message or a tool's trigger keywords to comparable terms) and
//! the [`Bm25Index`] of a catalog, and the static-embedding
//! [`semantic::SemanticIndex`]. A plan stores them: compile builds them,
//! evaluate queries them.

pub mod argument_fill;
pub mod bm25;
pub mod clauses;
pub mod keywords;
pub mod semantic;

pub use bm25::Bm25Index;
pub use keywords::Analyzer;
