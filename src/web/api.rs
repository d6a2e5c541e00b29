//! The handlers: the pages, pairing, and the three verbs the page calls (answer an
//! ask, stop a mission, fire a template). Each reads through the services and writes through `ops`,
//! on the blocking pool.

use axum::Form;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;

use super::Web;
use super::guard::{self, Authed, Peer, refuse};
use super::render;
use crate::asks::Surface;
use crate::asks::trace::Trace;
use crate::asks::{AskError, Asks, OperatorVerdict};
use crate::devices::DeviceError;
use crate::mission::Missions;
use crate::mission::compute::ComputeLedger;
use crate::ops::answer::{self, Afterwards, Answerer};
use crate::ops::devices;
use crate::ops::host::Host;
use crate::store::blocking;
use crate::sync::LockUnpoisoned as _;

/// How many pending asks and missions the page lists at most.
const ASKS_SHOWN: usize = 500;
const MISSIONS_SHOWN: usize = 200;
const REPORTS_SHOWN: usize = 100;
const TRACE_SHOWN: usize = 50;
/// How much of a worktree mission's diff the mission page carries at most.
const DIFF_SHOWN: usize = 64 * 1024;

const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");

pub async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
        .into_response()
}

pub async fn style() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], STYLE).into_response()
}

pub async fn not_found() -> Response {
    refuse(StatusCode::NOT_FOUND, "no such page")
}

fn failed(e: impl std::fmt::Display) -> Response {
    tracing::warn!("web: {e}");
    refuse(
        StatusCode::INTERNAL_SERVER_ERROR,
        "the store could not be read; the log has the cause",
    )
}

/// The live view: every pending ask, longest-waiting first, and missions.
pub fn read_view(host: &Host) -> anyhow::Result<render::View> {
    let store = host.store();
    let asks = Asks::new(store.clone()).pending_longest_waiting(ASKS_SHOWN)?;
    // What the oracle made of each ask it reviewed, read once per mission.
    let mut traces: std::collections::HashMap<String, Vec<String>> = Default::default();
    let mut read: std::collections::HashSet<&str> = Default::default();
    for mission in asks.iter().filter_map(|a| a.mission_id.as_deref()) {
        if !read.insert(mission) {
            continue;
        }
        for t in Trace::reader(store.clone()).for_mission(mission, TRACE_SHOWN)? {
            traces.entry(t.ask_id).or_default().push(t.line);
        }
    }
    let service = Missions::new(store.clone());
    let missions = service.list(MISSIONS_SHOWN)?;
    let ids: Vec<String> = missions.iter().map(|m| m.id.clone()).collect();
    let costs = crate::ops::show::mission_costs(host, &ids)?
        .into_iter()
        .map(|(id, c)| (id, c.short()))
        .collect();
    let today = match crate::ops::show::fleet_today(host)? {
        (spent, Some(budget)) => Some(format!(
            "Spent today (UTC): {} of the {} daily budget",
            crate::ops::spend::usd_text(spent),
            crate::ops::spend::usd_text(budget)
        )),
        (spent, None) if spent > 0.0 => Some(format!(
            "Spent today (UTC): {}",
            crate::ops::spend::usd_text(spent)
        )),
        _ => None,
    };
    Ok(render::View {
        asks,
        traces,
        checks: service.checks_of(&ids)?,
        missions,
        costs,
        today,
    })
}

/// `/`: the page for a paired device; the pairing instructions (401) for anyone else.
pub async fn index(State(web): State<Web>, headers: HeaderMap) -> Response {
    let Some(authed) = guard::authenticate(&web, &headers).await else {
        return (StatusCode::UNAUTHORIZED, Html(render::unpaired_page())).into_response();
    };
    let host = web.host.clone();
    let read = blocking(move || {
        let view = read_view(&host)?;
        Ok::<_, anyhow::Error>((view, crate::ops::fire::template_entries(&host)))
    })
    .await;
    match read {
        Ok((view, templates)) => {
            let page = render::main_page(&view, &templates, &authed.device.name, &authed.csrf);
            // Each visit slides the cookie's own expiry with the server's.
            (
                [(
                    header::SET_COOKIE,
                    guard::set_cookie(&authed.credential, web.secure),
                )],
                Html(page),
            )
                .into_response()
        }
        Err(e) => failed(e),
    }
}

/// `/api/state`: the live part, as the event stream sends it.
pub async fn state(State(web): State<Web>, authed: Authed) -> Response {
    let host = web.host.clone();
    match blocking(move || read_view(&host)).await {
        Ok(view) => Html(render::live(&view, &authed.csrf)).into_response(),
        Err(e) => failed(e),
    }
}

pub async fn pair_page() -> Response {
    Html(render::pair_page()).into_response()
}

#[derive(Deserialize)]
pub struct PairForm {
    code: String,
}

/// `POST /api/pair`: a pairing code for a device credential (in a cookie only).
pub async fn pair(
    State(web): State<Web>,
    peer: Option<axum::Extension<Peer>>,
    Form(form): Form<PairForm>,
) -> Response {
    let Some(axum::Extension(Peer(peer))) = peer else {
        return refuse(StatusCode::INTERNAL_SERVER_ERROR, "no peer address");
    };
    if web.lockout.lock_unpoisoned().locked(peer) {
        return refuse(
            StatusCode::TOO_MANY_REQUESTS,
            "too many bad pairing codes from this address: pairing is locked for 15 minutes",
        );
    }
    let host = web.host.clone();
    let code = form.code;
    match blocking(move || devices::redeem(&host, &code)).await {
        Ok((name, credential)) => {
            web.lockout.lock_unpoisoned().clear(peer);
            tracing::info!(device = %name, %peer, "web: a device was paired");
            (
                [(
                    header::SET_COOKIE,
                    guard::set_cookie(&credential, web.secure),
                )],
                axum::Json(serde_json::json!({ "device": name })),
            )
                .into_response()
        }
        Err(DeviceError::BadCode) => {
            let locked = web.lockout.lock_unpoisoned().strike(peer);
            tracing::warn!(%peer, locked, "web: a bad pairing code");
            refuse(StatusCode::FORBIDDEN, &DeviceError::BadCode.to_string())
        }
        Err(e) => failed(e),
    }
}

/// `POST /api/answer`: the operator's verdict, through the one answer path. The
/// form is `csrf`, `ask`, `verdict` (approve, deny, answer, fill) and `text` for an
/// answer in words, or one `f.<name>` per field of a form the unit sent (`fill`; an
/// empty field gives nothing, so its default applies or it is refused as required).
/// The reply comes once it is recorded; a run it unblocks whose host is gone is
/// resumed here afterwards, as `approvals respond` would.
pub async fn answer(
    State(web): State<Web>,
    authed: Authed,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    let field = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    if !authed.csrf_ok(&field("csrf")) {
        return refuse(
            StatusCode::FORBIDDEN,
            "the form's CSRF token is missing or stale: reload the page",
        );
    }
    let text = field("text");
    let verdict = match field("verdict").as_str() {
        "approve" => OperatorVerdict::Approve,
        // The page's second step for an allow-always (its confirm button).
        "always" => OperatorVerdict::ApproveAlways,
        "deny" => OperatorVerdict::Deny,
        "answer" if !text.trim().is_empty() => OperatorVerdict::Answer(text),
        "answer" => return refuse(StatusCode::BAD_REQUEST, "an answer needs words"),
        "fill" => OperatorVerdict::Fields(
            form.iter()
                .filter_map(|(k, v)| {
                    Some((k.strip_prefix(render::FORM_FIELD)?.to_string(), v.clone()))
                })
                .filter(|(_, v)| !v.is_empty())
                .collect(),
        ),
        _ => {
            return refuse(
                StatusCode::BAD_REQUEST,
                "verdict is one of approve, always, deny, answer, fill",
            );
        }
    };
    let ask_id = field("ask");
    let host = web.host.clone();
    let via = Surface::Web(authed.device.name.clone());
    let (h, id, v) = (host.clone(), ask_id.clone(), verdict.clone());
    let recorded = blocking(move || answer::record(&h, &id, Answerer::Operator(&v), &via)).await;
    let recorded = match recorded {
        Ok(r) => r,
        Err(e) => {
            let status = match e.downcast_ref::<AskError>() {
                Some(AskError::NotFound(_)) => StatusCode::NOT_FOUND,
                Some(AskError::AlreadyResolved { .. } | AskError::Expired { .. }) => {
                    StatusCode::CONFLICT
                }
                Some(AskError::Invalid(_)) => StatusCode::BAD_REQUEST,
                _ => StatusCode::UNPROCESSABLE_ENTITY,
            };
            return refuse(status, &crate::text::sanitize(&format!("{e:#}")));
        }
    };
    tracing::info!(ask = %ask_id, device = %authed.device.name, "web: an ask was answered");
    let said = match verdict {
        OperatorVerdict::Approve => "Approved.",
        OperatorVerdict::ApproveAlways => {
            "Approved, and allowed always in this mission (its page lists it to revoke)."
        }
        OperatorVerdict::Deny => "Denied.",
        OperatorVerdict::Answer(_) | OperatorVerdict::Fields(_) => "Answered.",
    };
    let id = ask_id;
    tokio::spawn(async move {
        match answer::resume(&host, &id, recorded).await {
            Ok(Afterwards::ResumedHere) => {
                tracing::info!(ask = %id, "web: its run's host was gone; resumed here")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(ask = %id, "web: resuming the run failed: {e:#}"),
        }
    });
    axum::Json(serde_json::json!({ "ok": true, "message": said })).into_response()
}

#[derive(Deserialize)]
pub struct StopForm {
    #[serde(default)]
    csrf: String,
    mission: String,
}

/// `POST /api/stop`: stop a mission, as `mission stop` does.
pub async fn stop(State(web): State<Web>, authed: Authed, Form(form): Form<StopForm>) -> Response {
    if !authed.csrf_ok(&form.csrf) {
        return refuse(
            StatusCode::FORBIDDEN,
            "the form's CSRF token is missing or stale: reload the page",
        );
    }
    let host = web.host.clone();
    let reason = format!("stopped from the web ({})", authed.device.name);
    let stopped = blocking(move || {
        let m = host.missions().resolve(&form.mission)?;
        crate::ops::stop::stop_mission(&host, &m.id, Some(&reason))
    })
    .await;
    match stopped {
        Ok(m) => axum::Json(serde_json::json!({
            "ok": true,
            "message": format!("Mission {} is {}.", &m.id[..8.min(m.id.len())], m.status),
        }))
        .into_response(),
        Err(e) => refuse(StatusCode::CONFLICT, &crate::text::sanitize(&e.to_string())),
    }
}

#[derive(Deserialize)]
pub struct RevokeAllowanceForm {
    #[serde(default)]
    csrf: String,
    allowance: String,
}

/// `POST /api/revoke-allowance`: end an operator's allowance at once, as
/// `approvals revoke` does; the mission's record names this device.
pub async fn revoke_allowance(
    State(web): State<Web>,
    authed: Authed,
    Form(form): Form<RevokeAllowanceForm>,
) -> Response {
    if !authed.csrf_ok(&form.csrf) {
        return refuse(
            StatusCode::FORBIDDEN,
            "the form's CSRF token is missing or stale: reload the page",
        );
    }
    let host = web.host.clone();
    let via = Surface::Web(authed.device.name.clone());
    match blocking(move || crate::ops::allowances::revoke(&host, &form.allowance, &via)).await {
        Ok(a) => {
            tracing::info!(allowance = %a.id, device = %authed.device.name, "web: an allowance was revoked");
            axum::Json(serde_json::json!({
                "ok": true,
                "message": "Revoked: the next such call is asked about again.",
            }))
            .into_response()
        }
        Err(crate::asks::allowances::RevokeError::NotFound(id)) => refuse(
            StatusCode::NOT_FOUND,
            &crate::text::sanitize(&format!("no allowance {id:?} exists")),
        ),
        Err(e) => refuse(StatusCode::CONFLICT, &crate::text::sanitize(&e.to_string())),
    }
}

#[derive(Deserialize)]
pub struct ReviseForm {
    #[serde(default)]
    csrf: String,
    mission: String,
    #[serde(default)]
    feedback: String,
}

/// `POST /api/revise`: send a rested mission back to its agent with the feedback
/// typed on its page, queued for a `missionboard host` (as `mission revise
/// --queue`; the page's server hosts no mission of its own). Every refusal is the
/// revise verb's own.
pub async fn revise(
    State(web): State<Web>,
    authed: Authed,
    Form(form): Form<ReviseForm>,
) -> Response {
    if !authed.csrf_ok(&form.csrf) {
        return refuse(
            StatusCode::FORBIDDEN,
            "the form's CSRF token is missing or stale: reload the page",
        );
    }
    match crate::ops::revise::revise(&web.host, &form.mission, &form.feedback, "web", true).await {
        Ok(r) => {
            tracing::info!(mission = %r.mission().id, device = %authed.device.name, "web: a mission was revised");
            axum::Json(serde_json::json!({
                "ok": true,
                "message": crate::text::sanitize(&r.line()),
            }))
            .into_response()
        }
        Err(e) => refuse(StatusCode::CONFLICT, &crate::text::sanitize(&e)),
    }
}

/// `POST /api/fire-template`: fire a template with the parameters typed on the
/// page, queued for a `missionboard host` (as `mission fire --template … --queue`;
/// the page's server hosts no mission of its own). The form is `csrf`, `template`
/// and one `p.<name>` per parameter; an empty field gives nothing, so the default
/// applies or the fire is refused naming the parameter. Every refusal is the fire
/// verb's own, and records nothing.
pub async fn fire_template(
    State(web): State<Web>,
    authed: Authed,
    Form(form): Form<Vec<(String, String)>>,
) -> Response {
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    if !authed.csrf_ok(&field("csrf").unwrap_or_default()) {
        return refuse(
            StatusCode::FORBIDDEN,
            "the form's CSRF token is missing or stale: reload the page",
        );
    }
    let Some(name) = field("template").filter(|n| !n.trim().is_empty()) else {
        return refuse(StatusCode::BAD_REQUEST, "name the template to fire");
    };
    let pairs: Vec<(String, String)> = form
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix(render::PARAM_FIELD)?.to_string(), v.clone())))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    match crate::ops::schedule::fire_template(&web.host, &name, pairs, Some(None)).await {
        Ok(f) => {
            tracing::info!(mission = %f.mission_id, template = %name, device = %authed.device.name, "web: a template was fired");
            let id = &f.mission_id[..8.min(f.mission_id.len())];
            let place =
                f.on.as_deref()
                    .map(|l| format!(" for a host labelled {l}"))
                    .unwrap_or_default();
            axum::Json(serde_json::json!({
                "ok": true,
                "mission": f.mission_id,
                "message": crate::text::sanitize(&format!(
                    "Mission {id} queued at position {}{place}: {}",
                    f.queued.unwrap_or(1),
                    crate::text::excerpt(&f.intent, 120)
                )),
            }))
            .into_response()
        }
        Err(e) => refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            &crate::text::sanitize(&format!("{e:#}")),
        ),
    }
}

/// `/missions/{id}`: one mission in detail.
pub async fn mission_page(
    State(web): State<Web>,
    authed: Authed,
    Path(id): Path<String>,
) -> Response {
    let (host, store) = (web.host.clone(), web.host.store().clone());
    let view = blocking(move || -> anyhow::Result<Option<render::MissionView>> {
        let missions = Missions::new(store.clone());
        let Some(mission) = missions.get(&id)? else {
            return Ok(None);
        };
        // A worktree mission's changes, as `mission diff` shows them.
        let diff = crate::worktree::Worktrees::new(store.clone())
            .get(&mission.id)?
            .map(
                |_| match crate::ops::worktree::diff(&host, &mission, false) {
                    Ok((_, text)) => Ok(cut(text, DIFF_SHOWN)),
                    Err(e) => Err(format!("{e:#}")),
                },
            );
        let record = ComputeLedger::new(host.store().clone()).get(&mission.id)?;
        Ok(Some(render::MissionView {
            fired_by: crate::ops::show::fired_by(&host, &mission)?,
            diff,
            trace: Trace::reader(host.store().clone())
                .for_mission(&mission.id, TRACE_SHOWN)?
                .into_iter()
                .map(|t| t.line)
                .collect(),
            spend: record
                .as_ref()
                .map(|c| (c.spent.tool_calls, c.spent.tokens, c.model.clone())),
            cost: record
                .is_some()
                .then(|| crate::ops::show::mission_cost(&host, record.as_ref()).line()),
            plan: missions.plan(&mission.id)?,
            reports: missions.reports(&mission.id, REPORTS_SHOWN)?,
            asks: Asks::new(store).for_mission(&mission.id, 200)?,
            allowances: crate::ops::allowances::list(&host, Some(&mission.id), 50)?,
            check: missions.check(&mission.id)?,
            runs: missions.runs(&mission.id)?,
            mission,
        }))
    })
    .await;
    match view {
        Ok(Some(v)) => {
            Html(render::mission_page(&v, &authed.device.name, &authed.csrf)).into_response()
        }
        Ok(None) => refuse(StatusCode::NOT_FOUND, "no such mission"),
        Err(e) => failed(e),
    }
}

/// `text` cut at `max` bytes (on a character boundary), saying so.
fn cut(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut at = max;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.truncate(at);
    text.push_str("\n… (cut here: `missionboard mission diff` shows all of it)\n");
    text
}
