//! Parse: policy and tool-tag files into typed sources, with byte spans kept
//! for every value that a later check may point at.

pub mod argument_fill;
pub mod discovery;
pub mod names;
pub mod policy;
pub mod properties;
pub mod reader;
pub mod roles;
pub mod schema_keywords;
pub mod schema_text;
pub mod selection;
pub mod semantic_model;
pub mod tags;
pub mod tool_file;
