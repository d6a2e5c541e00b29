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
pub mod sandbox;
pub mod search;
pub mod shell;
pub mod vet;

pub use eval::{Reason, ToolCall, Verdict, evaluate, evaluate_or_fail_closed};
pub use policy::{
    Action, AttentionBounds, ComputeBounds, Condition, OnExhausted, Op, Policy, PolicyError, Rule,
    TrustedBinaries,
};
pub use vet::{FileKind, VetReport, classify, vet_chain, vet_policy};
