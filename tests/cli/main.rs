//! Black-box tests: the real binary, a scratch MISSIONBOARD_HOME per test, assertions
//! on exit codes, output lines and the durable record read back through our commands.

#[path = "../common/mod.rs"]
mod harness;

mod acp_protocol;
mod asks;
mod board;
mod bounds;
mod catalogue;
mod check;
mod damage;
mod docs;
mod edges;
mod elicitation;
mod endpoints;
mod envelopes;
mod ergonomics;
mod first_hour;
mod foundation;
mod hostile_text;
mod hosts;
mod hygiene;
mod missions;
mod oracle;
mod oracle_eval;
mod planner;
mod races;
mod readme;
mod refusals;
mod registry;
mod sandbox;
mod session;
mod shared_store;
mod spend;
mod terminal_loss;
mod worktree;
