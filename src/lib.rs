//! missionboard: a mission runtime with a live terminal board.
//!
//! The CLI (`cli`) and, later, the board are thin surfaces over the same services.
//! Each service module owns its tables and exposes a narrow API.

pub mod acp;
pub mod agents;
pub mod asks;
pub mod bench;
pub mod board;
pub mod bus;
pub mod cli;
pub mod clock;
pub mod config;
pub mod confine;
pub mod duration;
pub mod envelope;
pub mod fleet;
pub mod logging;
pub mod mission;
pub mod model;
pub mod oracle;
pub mod paths;
pub mod planner;
pub mod presets;
pub mod runtime;
pub mod schema;
pub mod signals;
pub mod store;
pub mod stub;
pub mod table;
pub mod text;
pub mod tools;
pub mod worktree;
