//! missionboard: a mission runtime with a live terminal board.
//!
//! Modules are layered and depend only downward (ARCHITECTURE.md; `tests/layers.rs`
//! enforces it): leaves (`clock`, `duration`, `paths`, `text`, `runtime`, …) →
//! `store` (the connection and the migration runner) → domain services that own
//! their tables and rules (`config`, `bus`, `agents`, `mission`, `asks`, `envelope`)
//! → protocol adapters (`acp_client`, `mission_mcp`, `model`, `notify`) → roles
//! (`fleet`, `oracle`, `planner`, `stub`) → operations (`ops`, `daemon`) → `schema`
//! (the one list of every module's migrations) → surfaces (`cli`, `board`, `bench`,
//! `acp_server`, `web`). Every surface is a thin layer over the same `ops` verbs.

pub mod acp_client;
pub mod acp_server;
pub mod agents;
pub mod asks;
pub mod bench;
pub mod board;
pub mod bus;
pub mod cli;
pub mod clock;
pub mod config;
pub mod confine;
pub mod daemon;
pub mod devices;
pub mod duration;
pub mod envelope;
pub mod fleet;
pub mod host;
pub mod logging;
pub mod mission;
pub mod mission_mcp;
pub mod model;
pub mod notify;
pub mod ops;
pub mod oracle;
pub mod paths;
pub mod planner;
pub mod presets;
pub mod runtime;
pub mod sched;
pub mod schema;
pub mod signals;
pub mod size;
pub mod store;
pub mod stub;
pub mod supervise;
pub mod sync;
pub mod table;
pub mod text;
pub mod web;
pub mod worktree;
