//! Fire overhead: `Fleet::dispatch` (what `mission fire` and the board call) → the
//! first prompt arriving at the stub, against the bare floor: spawn the same stub,
//! ACP `initialize` + `session/new`, send it a prompt. Both are clocked the same way,
//! by the stub's transcript line appearing, so the detection cost cancels out.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::bare::Bare;
use super::scratch::{POLICY, Scratch, one_turn, until, until_reaped};
use super::{Latency, Row, Scale};
use crate::acp_client::{Unit, UnitSpec};
use crate::mission::{EnvelopeName, Intent};
use crate::mission_mcp::{bridge_server_entry, serve_mission_socket};
use crate::ops::{self, fire::Fire};

/// How often the transcript is looked at: fine enough for a figure in milliseconds.
pub(super) const DETECT: Duration = Duration::from_micros(100);

pub(super) fn arrived(transcript: &Path) -> bool {
    std::fs::metadata(transcript).is_ok_and(|m| m.len() > 0)
}

/// The bare unit the fire floors start: the same stub, writing its first prompt to
/// `transcript`, its MCP server connected through the same bridge to a bare server
/// (held open by the returned socket).
pub(super) async fn bare_unit(
    scratch: &Scratch,
    transcript: &Path,
) -> anyhow::Result<(UnitSpec, crate::mission_mcp::MissionSocket)> {
    let socket = serve_mission_socket(&scratch.home().join("bare.sock"), Bare::at_once()).await?;
    let spec = scratch.stub_unit(
        &scratch.write_script("bare", &one_turn(json!([{"say": "hi"}])))?,
        "bench-bare",
    )?;
    let spec = UnitSpec {
        mcp_servers: vec![bridge_server_entry(&spec.program, &socket, scratch.home())?],
        env: [(
            "STUB_TRANSCRIPT".to_string(),
            transcript.display().to_string(),
        )]
        .into(),
        ..spec
    };
    Ok((spec, socket))
}

/// Start the bare unit and prompt it, until its first prompt is in `transcript`;
/// how long since `t`. The unit is shut down after.
pub(super) async fn bare_first_prompt(
    spec: &UnitSpec,
    transcript: &Path,
    t: Instant,
    limit: Duration,
) -> anyhow::Result<Duration> {
    let unit = Unit::start(spec.clone()).await?;
    let seen = async {
        until("the bare prompt at the stub", limit, DETECT, || {
            arrived(transcript)
        })
        .await?;
        anyhow::Ok(t.elapsed())
    };
    let (turn, took) = tokio::join!(unit.prompt(vec!["bare".into()]), seen);
    turn?;
    unit.shutdown().await;
    took
}

pub async fn run(scale: Scale) -> anyhow::Result<Vec<Row>> {
    let scratch = Scratch::new(&scale)?;
    let transcript = scratch.declare_landing_stub()?;
    let (bare_spec, _socket) = bare_unit(&scratch, &transcript).await?;
    let limit = Duration::from_secs(30);

    let host = scratch.host()?;
    let mut fired = Vec::new();
    let mut bare = Vec::new();
    // One untimed round of each first: page cache, the binary, the store file.
    // Each round spawns two agents: a fifth of the samples keeps the run short.
    for round in 0..=(scale.samples / 5).max(3) {
        let _ = std::fs::remove_file(&transcript);
        let t = Instant::now();
        let fire = Fire::new(
            "stub",
            EnvelopeName::new(POLICY)?,
            Intent::new("fire bench")?,
        );
        ops::fire::dispatch(&host, fire).await?;
        until("the first prompt at the stub", limit, DETECT, || {
            arrived(&transcript)
        })
        .await?;
        let took = t.elapsed();
        until_reaped(&host, "the unit to be reaped", limit).await?;

        let _ = std::fs::remove_file(&transcript);
        let bare_took = bare_first_prompt(&bare_spec, &transcript, Instant::now(), limit).await?;
        if round > 0 {
            fired.push(took);
            bare.push(bare_took);
        }
    }
    Ok(vec![
        Row::latency(
            "fire overhead (dispatch → first prompt at the stub)",
            Latency::of(&mut fired),
            Latency::of(&mut bare),
            "bare spawn of the same stub + ACP initialize + session/new (its MCP server connected through the same bridge to a bare server) + a prompt reaching it",
        )
        .within(Some(1.5), None, None),
    ])
}
