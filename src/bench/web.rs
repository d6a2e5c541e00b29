//! The web page's two figures, on the real server (`web::Server`, bound on loopback
//! in this process) spoken to over HTTP by a paired client:
//!
//! - an ask committed (from another connection, as a unit's host would) → its card
//!   in an event on the page's stream. The floor is the same commit plus the same
//!   event's bytes written to a loopback socket and read back: the stream's cost on
//!   top is waking, reading the store and rendering the page's live part.
//! - an answer posted on the page → the waiting stub unit holding it, against the
//!   CLI's answer path (`approvals respond`'s verb, `ops::answer::record`, on another
//!   connection), alternating so both see the same store.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::scratch::{Scratch, one_turn, seed, until};
use super::{Latency, Row, Scale};
use crate::acp_client::{Unit, UnitEvent, UnitSpec};
use crate::asks::{Asks, NewAsk, QUESTION_TOOL, QUESTION_TOOLS};
use crate::fleet::mission_tools::MissionToolCalls;
use crate::mission::{Missions, NewMission};
use crate::mission_mcp::{bridge_server_entry, serve_mission_socket};
use crate::ops::host::{Host, Hosting};
use crate::store::{Store, blocking};

const LIMIT: Duration = Duration::from_secs(30);

/// A paired client of the page.
struct Client {
    http: reqwest::Client,
    base: String,
    cookie: String,
    csrf: String,
}

impl Client {
    /// Pair a device through the same verbs `web pair` and the pairing page use.
    async fn paired(host: &Host, base: String) -> anyhow::Result<Client> {
        let h = host.clone();
        let (_, credential) = blocking(move || -> anyhow::Result<(String, String)> {
            let pairing = crate::ops::devices::pair(&h, Some("bench"))?;
            Ok(crate::ops::devices::redeem(&h, &pairing.code)?)
        })
        .await?;
        // reqwest is built without a default TLS provider (see Cargo.toml); install ring's.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder().timeout(LIMIT).build()?;
        let cookie = format!("mb_device={credential}");
        let page = http
            .get(format!("{base}/"))
            .header("Cookie", &cookie)
            .send()
            .await?
            .text()
            .await?;
        const META: &str = "<meta name=\"csrf\" content=\"";
        let at = page
            .find(META)
            .ok_or_else(|| anyhow::anyhow!("bench: the page carries no CSRF token"))?
            + META.len();
        let csrf = page[at..].split('"').next().unwrap_or_default().to_string();
        Ok(Client {
            http,
            base,
            cookie,
            csrf,
        })
    }

    async fn events(&self) -> anyhow::Result<reqwest::Response> {
        let r = self
            .http
            .get(format!("{}/events", self.base))
            .header("Cookie", &self.cookie)
            .header("Origin", &self.base)
            .timeout(Duration::from_secs(3600))
            .send()
            .await?;
        anyhow::ensure!(
            r.status().is_success(),
            "bench: /events answered {}",
            r.status()
        );
        Ok(r)
    }

    async fn answer(&self, ask: &str, text: &str) -> anyhow::Result<()> {
        let body = format!("csrf={}&ask={ask}&verdict=answer&text={text}", self.csrf);
        let r = self
            .http
            .post(format!("{}/api/answer", self.base))
            .header("Cookie", &self.cookie)
            .header("Origin", &self.base)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await?;
        anyhow::ensure!(
            r.status().is_success(),
            "bench: the page refused the answer: {}",
            r.text().await.unwrap_or_default()
        );
        Ok(())
    }
}

/// Read `stream` until an event carries `needle`: the event's bytes.
async fn until_event_with(
    stream: &mut reqwest::Response,
    buffer: &mut String,
    needle: &str,
) -> anyhow::Result<usize> {
    tokio::time::timeout(LIMIT, async {
        loop {
            // Whole events only: each ends with a blank line.
            while let Some(end) = buffer.find("\n\n") {
                let event: String = buffer.drain(..end + 2).collect();
                if event.contains(needle) {
                    return Ok(event.len());
                }
            }
            match stream.chunk().await? {
                Some(bytes) => buffer.push_str(&String::from_utf8_lossy(&bytes)),
                None => anyhow::bail!("bench: the event stream ended"),
            }
        }
    })
    .await
    .map_err(|_| anyhow::anyhow!("bench: no event carried {needle} within {LIMIT:?}"))?
}

fn question(mission: &str, i: usize) -> NewAsk {
    NewAsk {
        tools_name: QUESTION_TOOLS.into(),
        tool_name: QUESTION_TOOL.into(),
        args_summary: format!("bench question {i}: keep the old name?"),
        mission_id: Some(mission.to_string()),
        ..Default::default()
    }
}

/// The floor of the stream figure: the same commit, then `bytes` written to a
/// loopback socket and read back whole.
async fn stream_floor(
    asks: &Asks,
    mission: &str,
    samples: usize,
    bytes: usize,
) -> anyhow::Result<Latency> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let mut writer = tokio::net::TcpStream::connect(listener.local_addr()?).await?;
    let (mut reader, _) = listener.accept().await?;
    let payload = vec![b'x'; bytes.max(1)];
    let mut read = vec![0u8; payload.len()];
    let mut took = Vec::with_capacity(samples);
    for i in 0..samples {
        let (a, m) = (asks.clone(), mission.to_string());
        let t = Instant::now();
        let ask = blocking(move || a.raise(question(&m, i))).await?;
        writer.write_all(&payload).await?;
        reader.read_exact(&mut read).await?;
        took.push(t.elapsed());
        let a = asks.clone();
        blocking(move || a.answer(&ask.id, "floor", &crate::asks::Surface::Cli)).await?;
    }
    Ok(Latency::of(&mut took))
}

pub async fn run(scale: Scale) -> anyhow::Result<Vec<Row>> {
    let scratch = Scratch::new(&scale)?;
    seed(&scratch, scale.missions, 0)?;
    let mut server = crate::web::Server::bind(
        scratch.paths.clone(),
        scratch.store.clone(),
        crate::web::WebOptions {
            listen: "127.0.0.1:0".into(),
            ..Default::default()
        },
    )?;
    server.deliver_notifications = false;
    let base = server.base_url.clone();
    let serving = tokio::spawn(server.run());
    let client = Client::paired(
        &Host::open(&scratch.paths, &scratch.store, Hosting::OnNeed)?,
        base,
    )
    .await?;

    let missions = Missions::new(scratch.store.clone());
    let asks = Asks::new(scratch.store.clone());
    let mission = missions.create(NewMission {
        intent: "web round-trips".into(),
        agent_name: "stub".into(),
        envelope_name: super::scratch::POLICY.into(),
        ..Default::default()
    })?;
    // Another connection to the same store: what a unit's host in another process
    // holds (the page's own connection is not told in-process).
    let elsewhere = Asks::new(Store::open_at(scratch.store.location())?);

    // Ask commit → its card on the stream.
    let samples = scale.samples;
    let mut stream = client.events().await?;
    let mut buffer = String::new();
    until_event_with(&mut stream, &mut buffer, "id=\"missions\"").await?;
    let mut delivered = Vec::with_capacity(samples);
    let mut event_bytes = 0;
    for i in 0..samples {
        let (a, m) = (elsewhere.clone(), mission.id.clone());
        let t = Instant::now();
        let ask = blocking(move || a.raise(question(&m, i))).await?;
        event_bytes = until_event_with(&mut stream, &mut buffer, &ask.id).await?;
        delivered.push(t.elapsed());
        let a = elsewhere.clone();
        blocking(move || a.answer(&ask.id, "seen", &crate::asks::Surface::Cli)).await?;
    }
    drop(stream);
    let floor = stream_floor(&elsewhere, &mission.id, samples, event_bytes).await?;

    // Answer on the page → the unit holding it, against the CLI's path.
    let steps: Vec<Value> = (0..samples * 2)
        .map(|i| json!({"ask": {"summary": format!("q{i}"), "then": {"say": "got {{answer}}"}}}))
        .chain([json!({"finish": "landed"})])
        .collect();
    let script = scratch.write_script("web-answer", &one_turn(Value::Array(steps)))?;
    let calls = MissionToolCalls {
        mission_id: mission.id.clone(),
        missions: missions.clone(),
        asks: asks.clone(),
        workdir: scratch.paths.cwd.display().to_string(),
        agent_name: "stub".into(),
        session_id: String::new(),
        ask_ceiling: None,
        park_window: Duration::from_secs(120),
        link: Default::default(),
    };
    let socket =
        serve_mission_socket(&scratch.home().join("web-answer.sock"), Arc::new(calls)).await?;
    let bare = scratch.stub_unit(&script, &mission.id)?;
    let mut unit = Unit::start(UnitSpec {
        mcp_servers: vec![bridge_server_entry(&bare.program, &socket, scratch.home())?],
        pid_slot: Some(socket.unit_pid_slot()),
        supervisor: None,
        ..bare
    })
    .await?;
    let mut events = unit.take_events().expect("fresh unit");
    let cli = Host::open(
        &scratch.paths,
        &Store::open_at(scratch.store.location())?,
        Hosting::OnNeed,
    )?;
    let mut on_page = Vec::with_capacity(samples);
    let mut by_cli = Vec::with_capacity(samples);
    let driver = async {
        for i in 0..samples * 2 {
            let mut ask_id = None;
            until(
                "the stub's question",
                LIMIT,
                Duration::from_millis(1),
                || {
                    ask_id = elsewhere
                        .pending_questions(Some(&mission.id), 1)
                        .ok()
                        .and_then(|p| p.first().map(|a| a.id.clone()));
                    ask_id.is_some()
                },
            )
            .await?;
            let ask_id = ask_id.expect("found above");
            let answer = format!("a{i}");
            let t = Instant::now();
            if i % 2 == 0 {
                client.answer(&ask_id, &answer).await?;
            } else {
                // `approvals respond`: the same verb, on a connection of its own.
                let (host, text) = (cli.clone(), answer.clone());
                blocking(move || {
                    let verdict = crate::asks::OperatorVerdict::Answer(text);
                    crate::ops::answer::record(
                        &host,
                        &ask_id,
                        crate::ops::answer::Answerer::Operator(&verdict),
                        &crate::asks::Surface::Cli,
                    )
                })
                .await?;
            }
            let want = format!("got {answer}");
            let said = tokio::time::timeout(LIMIT, async {
                while let Some(ev) = events.recv().await {
                    if matches!(&ev, UnitEvent::AgentText { text: t, .. } if t.contains(&want)) {
                        return true;
                    }
                }
                false
            })
            .await;
            anyhow::ensure!(
                matches!(said, Ok(true)),
                "bench: the stub never said {want:?}"
            );
            if i % 2 == 0 {
                &mut on_page
            } else {
                &mut by_cli
            }
            .push(t.elapsed());
        }
        anyhow::Ok(())
    };
    let (turn, driven) = tokio::join!(unit.prompt(vec!["web answer bench".into()]), driver);
    driven?;
    turn?;
    unit.shutdown().await;
    serving.abort();

    let at = format!("{} missions", scale.missions);
    Ok(vec![
        Row::latency(
            &format!("web: ask commit → its card on the event stream ({at})"),
            Latency::of(&mut delivered),
            floor,
            &format!(
                "the same ask committed, then the same event's {event_bytes} bytes written to a loopback socket and read back ({samples} samples)"
            ),
        )
        .within(None, None, Some(250.0)),
        Row::latency(
            &format!("web: answer posted on the page → the unit holding it ({at})"),
            Latency::of(&mut on_page),
            Latency::of(&mut by_cli),
            &format!(
                "the CLI's answer path: `approvals respond`'s verb on another connection, to the same stub holding it ({samples} samples, alternating)"
            ),
        )
        .within(Some(1.5), None, None),
    ])
}
