//! Envelopes: the HITL policy files that bound what a mission's unit may do. The
//! code says "envelope" throughout; the files (`hitl-policy-*.json`), the `--policy`
//! flag and the database columns keep the word "policy".
//!
//! `format` holds the file format's domain types; `validate` loads a file
//! ([`Envelope::parse`]) through the one set of checks the loader and vet share, over
//! `json` (the raw tree that keeps duplicate keys) and `decode` (the Go-compatible
//! decoder); `trusted` does the trusted-binary file checks, `glob` compiles and
//! matches path globs, `sandbox` reads and resolves the sandbox block, `eval`
//! decides a tool call, `bounds` says which compute bounds this build enforces,
//! `vet` is the linter behind `missionboard vet` and `search` resolves names on the
//! search path. The shipped preset files live in `crate::presets`.

pub mod always;
pub mod bounds;
pub mod connect_refusal;
mod decode;
pub mod eval;
pub mod format;
pub mod glob;
mod json;
mod quote;
pub mod sandbox;
pub mod search;
pub mod shell;
mod trusted;
mod validate;
pub mod vet;

pub use eval::{EDIT_FILE, Reason, ToolCall, Verdict, evaluate, evaluate_or_fail_closed};
pub use format::{
    Action, AttentionBounds, ComputeBounds, Condition, Envelope, EnvelopeError, OnExhausted, Op,
    Rule, TrustedBinaries,
};
pub use vet::{FileKind, VetReport, classify, vet_chain, vet_envelope};
