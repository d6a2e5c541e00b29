//! Black-box tests of the web surface: the real binary's `missionboard web` on a
//! loopback port, driven by a real HTTP client, its record read back through our
//! own commands.

#[path = "common/mod.rs"]
mod harness;

#[path = "web/server.rs"]
mod server;

#[path = "web/allowances.rs"]
mod allowances;
#[path = "web/answers.rs"]
mod answers;
#[path = "web/auth.rs"]
mod auth;
#[path = "web/detail.rs"]
mod detail;
#[path = "web/hardening.rs"]
mod hardening;
#[path = "web/hooks.rs"]
mod hooks;
#[path = "web/live.rs"]
mod live;
#[path = "web/templates.rs"]
mod templates;
