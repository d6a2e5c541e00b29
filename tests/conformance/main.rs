//! The conformance suite: the real published ACP agents, installed from npm at
//! pinned versions into the build tree, each driven offline by a scripted model
//! server on loopback, fired through the real binary with a scratch home.

#[path = "../common/mod.rs"]
mod common;

// Shared by every agent's module; not every module uses every helper.
#[allow(dead_code)]
mod harness;

mod cases;
mod claude;
mod cline;
mod codex;
mod editor;
mod gemini;
mod hitl;
mod kilo;
mod opencode;
mod qwen;
mod scale;
