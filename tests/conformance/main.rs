//! The conformance suite: the real published ACP agents, installed from npm at
//! pinned versions into the build tree, each driven offline by a scripted model
//! server on loopback, fired through the real binary with a scratch home.

#[path = "../common/mod.rs"]
mod common;

mod harness;

mod cases;
mod claude;
mod opencode;
mod qwen;
