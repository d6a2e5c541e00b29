//! Envelopes: HITL policy files that bound what a mission's unit may do.
//!
//! `policy` holds the domain types and loads a file (`validate` is the one set of
//! checks the loader and vet share, `decode` the Go-compatible decoder, `trusted`
//! the trusted-binary file checks), `glob` compiles and matches path globs, `eval`
//! decides a tool call, `vet` is the linter behind `missionboard vet` and `search`
//! resolves names on the search path. The shipped preset files live in
//! `crate::presets`.

pub mod bounds;
mod decode;
pub mod eval;
pub mod glob;
mod json;
pub mod policy;
mod quote;
pub mod sandbox;
pub mod search;
pub mod shell;
mod trusted;
mod validate;
pub mod vet;

pub use eval::{Reason, ToolCall, Verdict, evaluate, evaluate_or_fail_closed};
pub use policy::{
    Action, AttentionBounds, ComputeBounds, Condition, OnExhausted, Op, Policy, PolicyError, Rule,
    TrustedBinaries,
};
pub use vet::{FileKind, VetReport, classify, vet_chain, vet_policy};
