//! Envelopes: HITL policy files that bound what a mission's unit may do.
//!
//! `policy` parses and validates the file format, `eval` decides a tool call,
//! `vet` is the linter behind `missionboard vet`, `search` resolves names on the
//! search path and `presets` holds the files `missionboard init` seeds.

pub mod bounds;
pub mod eval;
pub mod glob;
pub mod policy;
pub mod presets;
pub mod search;
pub mod shell;
pub mod vet;
