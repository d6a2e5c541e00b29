//! The page's HTML, rendered on the server. Everything shown from the store is
//! agent-written or may be (intents, questions, commands, diffs, plan entries,
//! reports, ask ids): it passes [`text`], the terminal surfaces' sanitizer and then
//! HTML escaping, and is never made into a link or an attribute that acts. The
//! only links are to our own paths, built from mission ids the store minted.

use std::fmt::Write as _;

use crate::asks::{Ask, AskKind};
use crate::mission::check::CheckRecord;
use crate::mission::{Mission, Status};

/// The prefix of a template parameter's field in the fire form: `p.repo=acme/api`.
pub const PARAM_FIELD: &str = "p.";

/// The prefix of a form field's input in an ask card: `f.branch=main`.
pub const FORM_FIELD: &str = "f.";

/// Agent text made inert for HTML: controls and bidi overrides stripped, then
/// every character that means something to HTML escaped (safe in text and in a
/// quoted attribute alike).
pub fn text(s: &str) -> String {
    let clean = crate::text::sanitize(s);
    let mut out = String::with_capacity(clean.len());
    for c in clean.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A mission id for a path of ours: only the characters ids are made of survive.
fn path_id(id: &str) -> String {
    id.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect()
}

/// The whole page around `body`: our one stylesheet and our one script, nothing
/// inline, nothing from another origin.
pub fn page(title: &str, kind: &str, csrf: Option<&str>, body: &str) -> String {
    let csrf = csrf
        .map(|t| format!("<meta name=\"csrf\" content=\"{}\">", text(t)))
        .unwrap_or_default();
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"referrer\" content=\"no-referrer\">{csrf}\
<title>{title}</title><link rel=\"stylesheet\" href=\"/app.css\">\
<script src=\"/app.js\" defer></script></head>\
<body data-page=\"{kind}\">{body}</body></html>\n",
        title = text(title),
    )
}

/// The pairing page: its script reads the code from the URL fragment (which no
/// request carries) and posts it.
pub fn pair_page() -> String {
    page(
        "missionboard — pair this device",
        "pair",
        None,
        "<main><h1>missionboard</h1><p id=\"pair-status\" role=\"status\">Pairing this device…</p>\
<noscript><p>Pairing needs JavaScript (the code stays in the link's fragment, never sent to the server on its own).</p></noscript></main>",
    )
}

/// What an unpaired visitor sees.
pub fn unpaired_page() -> String {
    page(
        "missionboard — not paired",
        "unpaired",
        None,
        "<main><h1>missionboard</h1><p>This device is not paired. On the machine that runs missionboard, run \
<code>missionboard web pair --name phone</code> and open the link it prints (or scan its QR code) here.</p></main>",
    )
}

/// What the live part of the main page shows: every pending ask, longest-waiting
/// first, then missions by state.
pub struct View {
    pub asks: Vec<Ask>,
    /// The oracle's trace lines about each ask it reviewed, by ask id.
    pub traces: std::collections::HashMap<String, Vec<String>>,
    pub missions: Vec<Mission>,
    /// Each listed mission's cost, short (`$0.0081 est.`, `no price`), by id.
    pub costs: std::collections::HashMap<String, String>,
    /// The fleet's spend today (UTC) against its daily budget, once anything is
    /// spent or a budget is set.
    pub today: Option<String>,
    /// The check records of the missions listed that have one, by mission id.
    pub checks: std::collections::HashMap<String, CheckRecord>,
}

/// A mission's check state as every list words it: `check ✓`, `check ✗1/3`,
/// `check …`, `check ·` (not run yet).
fn check_mark(c: &CheckRecord) -> String {
    format!("check {}", c.marker())
}

/// The main page's live part (`<main id="live">`'s content): what the event stream
/// sends again whenever it changes. Deterministic for a given view (ages are
/// filled in by the script from `data-since`), so its digest names it.
pub fn live(view: &View, csrf: &str) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<section id=\"asks\"><h2>Waiting on you <span class=\"count\">{}</span></h2>",
        view.asks.len()
    );
    if view.asks.is_empty() {
        out.push_str("<p class=\"empty\">Nothing is waiting on you.</p>");
    }
    out.push_str("<ol id=\"ask-list\">");
    for ask in &view.asks {
        let trace = view
            .traces
            .get(&ask.id)
            .map(Vec::as_slice)
            .unwrap_or_default();
        ask_card(&mut out, ask, trace, csrf);
    }
    out.push_str("</ol></section><section id=\"missions\"><h2>Missions</h2>");
    if let Some(today) = &view.today {
        let _ = write!(
            out,
            "<p class=\"meta\" id=\"spend-today\">{}</p>",
            text(today)
        );
    }
    for status in [
        Status::Open,
        Status::Queued,
        Status::Landed,
        Status::Derailed,
        Status::Stuck,
        Status::Abandoned,
    ] {
        let these: Vec<_> = view
            .missions
            .iter()
            .filter(|m| m.status == status)
            .collect();
        if these.is_empty() {
            continue;
        }
        let _ = write!(
            out,
            "<h3>{} <span class=\"count\">{}</span></h3><ul class=\"missions\">",
            status.as_str(),
            these.len()
        );
        for m in these {
            let check = view
                .checks
                .get(&m.id)
                .map(|c| {
                    format!(
                        " <span class=\"check\" title=\"{}\">{}</span>",
                        text(&c.state_words()),
                        text(&check_mark(c))
                    )
                })
                .unwrap_or_default();
            let _ = write!(
                out,
                "<li><a href=\"/missions/{id}\"><span class=\"id\">{short}</span> {intent}</a> <span class=\"meta\">{agent}{cost}</span>{check}</li>",
                id = path_id(&m.id),
                short = text(short(&m.id)),
                intent = text(&crate::text::excerpt(&m.intent, 120)),
                agent = text(&m.agent_name),
                cost = view
                    .costs
                    .get(&m.id)
                    .map_or(String::new(), |c| format!(" · {}", text(c))),
            );
        }
        out.push_str("</ul>");
    }
    if view.missions.is_empty() {
        out.push_str("<p class=\"empty\">No missions yet.</p>");
    }
    out.push_str("</section>");
    out
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

fn ask_card(out: &mut String, ask: &Ask, trace: &[String], csrf: &str) {
    let kind = ask.kind();
    let id = text(&ask.id);
    let _ = write!(
        out,
        "<li class=\"ask {kind}\" id=\"ask-{id}\" data-ask=\"{id}\"><div class=\"meta\">{kind}",
    );
    if let Some(m) = &ask.mission_id {
        let _ = write!(
            out,
            " · mission <a href=\"/missions/{}\">{}</a>",
            path_id(m),
            text(short(m))
        );
    }
    if !ask.agent_name.is_empty() {
        let _ = write!(out, " · {}", text(&ask.agent_name));
    }
    let _ = write!(
        out,
        " · <time data-since=\"{}\">waiting</time></div>",
        ask.created_at
    );
    if kind == AskKind::Permission {
        let _ = write!(
            out,
            "<p class=\"tool\">{}.{}</p>",
            text(&ask.tools_name),
            text(&ask.tool_name)
        );
        let _ = write!(
            out,
            "<pre class=\"command\">{}</pre>",
            text(&ask.args_summary)
        );
        if let Some(diff) = &ask.diff {
            let _ = write!(out, "<pre class=\"diff\">{}</pre>", text(diff));
        }
        let rule = match ask.matched_rule {
            Some(n) => format!("rule {n} of envelope {}", ask.envelope_name),
            None => format!("the default of envelope {}", ask.envelope_name),
        };
        let _ = write!(out, "<p class=\"rule\">Asked by {}</p>", text(&rule));
    } else {
        let _ = write!(out, "<p class=\"question\">{}</p>", text(&ask.args_summary));
        // A form's detail is its fields, shown by their inputs below.
        if let Some(detail) = ask.diff.as_ref().filter(|_| kind != AskKind::Form) {
            let _ = write!(out, "<pre class=\"detail\">{}</pre>", text(detail));
        }
    }
    trace_list(out, trace);
    let _ = write!(
        out,
        "<form method=\"post\" action=\"/api/answer\" data-api><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
<input type=\"hidden\" name=\"ask\" value=\"{id}\">",
        csrf = text(csrf)
    );
    if let (AskKind::Form, Some(fields)) = (kind, &ask.form) {
        form_inputs(out, fields);
    } else if kind.takes_words() {
        let hint = if kind == AskKind::Compute {
            "extend N% or stop"
        } else {
            "Your answer"
        };
        let _ = write!(
            out,
            "<textarea name=\"text\" rows=\"3\" required placeholder=\"{hint}\"></textarea>\
<div class=\"buttons\"><button name=\"verdict\" value=\"answer\">Answer</button></div>"
        );
    } else {
        out.push_str(
            "<div class=\"buttons\"><button name=\"verdict\" value=\"approve\" class=\"approve\">Approve</button>\
<button name=\"verdict\" value=\"deny\" class=\"deny\">Deny</button></div>",
        );
        always_step(out, ask);
    }
    out.push_str("<p class=\"result\" role=\"status\"></p></form></li>");
}

/// One input per field of a form the unit sent — a list to pick from for a choice
/// or a yes/no, a text box otherwise — then Submit (`fill`) and Decline (`deny`).
/// A field left empty gives nothing: its default applies, or the answer is refused
/// naming it when it is required.
fn form_inputs(out: &mut String, form: &crate::asks::form::Form) {
    use crate::asks::form::FieldKind;
    out.push_str("<div class=\"fields\">");
    for f in &form.fields {
        let name = text(&f.name);
        let _ = write!(
            out,
            "<label><span class=\"hint\">{}</span>",
            text(&f.line())
        );
        let choices: Option<Vec<String>> = match &f.kind {
            FieldKind::Choice { values } => Some(values.clone()),
            FieldKind::Boolean => Some(vec!["true".into(), "false".into()]),
            _ => None,
        };
        match choices {
            Some(values) => {
                let _ = write!(
                    out,
                    "<select name=\"{FORM_FIELD}{name}\"><option value=\"\"></option>"
                );
                for v in values {
                    let v = text(&v);
                    let _ = write!(out, "<option value=\"{v}\">{v}</option>");
                }
                out.push_str("</select>");
            }
            None => {
                let _ = write!(out, "<input type=\"text\" name=\"{FORM_FIELD}{name}\">");
            }
        }
        out.push_str("</label>");
    }
    out.push_str(
        "</div><div class=\"buttons\"><button name=\"verdict\" value=\"fill\" class=\"approve\">Submit</button>\
<button name=\"verdict\" value=\"deny\" class=\"deny\">Decline</button></div>",
    );
}

/// A gated call whose agent offered an "allow always": the page offers it for
/// this mission only, behind a second, explicit step — the first tap opens what
/// it would allow, the second confirms it. No script is needed for the step (a
/// `<details>` element), and a refresh of the live part keeps it as it was.
fn always_step(out: &mut String, ask: &Ask) {
    let (Some(scope), Some(_)) = (&ask.always_scope, &ask.mission_id) else {
        return;
    };
    let _ = write!(
        out,
        "<details class=\"always\"><summary>Allow always (this mission)…</summary>\
<p class=\"meta\">Approves this call, and allows without asking every later call of this mission that is <span class=\"scope\">{}</span>. \
The envelope is still consulted first: what it denies stays denied. It ends with the mission; revoke it on the mission's page.</p>\
<div class=\"buttons\"><button name=\"verdict\" value=\"always\" class=\"approve always\">Confirm: allow always in this mission</button></div></details>",
        text(scope)
    );
}

/// The oracle's lines about an ask or a mission, oldest first.
fn trace_list(out: &mut String, trace: &[String]) {
    if trace.is_empty() {
        return;
    }
    out.push_str("<details class=\"trace\"><summary>Oracle trace</summary><ol>");
    for line in trace {
        let _ = write!(out, "<li>{}</li>", text(line));
    }
    out.push_str("</ol></details>");
}

/// What the mission page shows.
pub struct MissionView {
    pub mission: Mission,
    /// What fired it, when not the operator: an editor session, a schedule's tick,
    /// a webhook trigger's delivery.
    pub fired_by: Option<String>,
    /// The oracle's trace about its questions.
    pub trace: Vec<String>,
    /// What it spent: tool calls, tokens, and the model it runs on.
    pub spend: Option<(u64, u64, Option<String>)>,
    /// What it cost, as `mission show` words it (reported or estimated, or why
    /// there is no price).
    pub cost: Option<String>,
    pub plan: crate::mission::plan::Plan,
    pub reports: Vec<crate::mission::report::Report>,
    pub asks: Vec<Ask>,
    /// The operator's allowances in this mission, newest first.
    pub allowances: Vec<crate::asks::allowances::Allowance>,
    /// A worktree mission's diff against its base, or why it could not be read;
    /// `None`: the mission has no worktree.
    pub diff: Option<Result<String, String>>,
    /// Its check, if it was fired with one.
    pub check: Option<CheckRecord>,
    /// Each time it was sent back (`mission revise`), oldest first.
    pub runs: Vec<crate::mission::revise::Run>,
}

/// One mission: intent, agent, envelope, host, plan, reports, its asks, and stop.
pub fn mission_page(v: &MissionView, device: &str, csrf: &str) -> String {
    let m = &v.mission;
    let mut body = String::new();
    let _ = write!(
        body,
        "<header><a href=\"/\">← all</a> <span class=\"device\">{}</span></header><main><h1>Mission <span class=\"id\">{}</span></h1><dl>",
        text(device),
        text(short(&m.id))
    );
    let mut row = |k: &str, v: &str| {
        let _ = write!(body, "<dt>{}</dt><dd>{}</dd>", text(k), text(v));
    };
    row("Intent", &m.intent);
    row("Agent", &m.agent_name);
    row("Envelope", &m.envelope_name);
    let status = match &m.status_reason {
        Some(r) => format!("{} — {r}", m.status),
        None => m.status.to_string(),
    };
    row("Status", &status);
    if let Some(by) = &v.fired_by {
        row("Fired by", by);
    }
    if let Some(h) = &m.host {
        row("Host", &format!("{} (pid {})", h.machine_label(), h.pid));
    }
    if let Some(e) = &m.last_error {
        row("Last error", e);
    }
    if let Some((calls, tokens, model)) = &v.spend {
        let model = model
            .as_deref()
            .map(|m| format!(" on {m}"))
            .unwrap_or_default();
        row(
            "Spent",
            &format!("{calls} tool calls, {tokens} tokens{model}"),
        );
    }
    if let Some(cost) = &v.cost {
        row("Cost", cost);
    }
    if let Some(c) = &v.check {
        row(
            "Check",
            &format!(
                "{} — `{}`",
                c.state_words(),
                crate::text::one_line(&c.command)
            ),
        );
        if let Some(outcome) = &c.last_outcome {
            row("Last try", outcome);
        }
    }
    for r in &v.runs {
        row(
            &format!("Run {}", r.run),
            &format!(
                "revised by {} after it rested {}: {}",
                r.revised_by,
                r.from_status,
                crate::text::excerpt(&crate::text::one_line(&r.feedback), 200)
            ),
        );
    }
    row("Created", &crate::clock::rfc3339(m.created_at));
    body.push_str("</dl>");
    if let Some(output) = v
        .check
        .as_ref()
        .and_then(|c| c.last_output.as_deref())
        .filter(|o| !o.trim().is_empty())
    {
        let _ = write!(
            body,
            "<h2>Check output (tail)</h2><pre class=\"check-output\">{}</pre>",
            text(output)
        );
    }
    if crate::mission::revise::REVISABLE.contains(&m.status) {
        let _ = write!(
            body,
            "<h2>Revise</h2><form method=\"post\" action=\"/api/revise\" data-api><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
<input type=\"hidden\" name=\"mission\" value=\"{}\">\
<label for=\"feedback\">Send it back to its agent with feedback (queued for a <code>missionboard host</code>; its check runs again before it lands):</label>\
<textarea id=\"feedback\" name=\"feedback\" rows=\"4\" maxlength=\"16384\" required></textarea><div class=\"buttons\">\
<button name=\"verdict\" value=\"revise\">Revise</button></div>\
<p class=\"result\" role=\"status\"></p></form>",
            text(csrf),
            path_id(&m.id)
        );
    }
    if !m.status.is_terminal() {
        let _ = write!(
            body,
            "<form method=\"post\" action=\"/api/stop\" data-api><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
<input type=\"hidden\" name=\"mission\" value=\"{}\"><div class=\"buttons\">\
<button name=\"verdict\" value=\"stop\" class=\"deny\" data-confirm=\"Stop this mission? Its pending asks are closed and its unit is reaped.\">Stop mission</button></div>\
<p class=\"result\" role=\"status\"></p></form>",
            text(csrf),
            path_id(&m.id)
        );
    }
    if !v.plan.entries.is_empty() {
        body.push_str("<h2>Plan</h2><ol class=\"plan\">");
        for e in &v.plan.entries {
            let _ = write!(
                body,
                "<li class=\"{}\"><span class=\"status\">{}</span> {}</li>",
                match e.status.as_str() {
                    "completed" => "done",
                    "in_progress" => "doing",
                    _ => "todo",
                },
                text(&e.status),
                text(&e.content)
            );
        }
        body.push_str("</ol>");
    }
    if !v.asks.is_empty() {
        body.push_str("<h2>Asks</h2><ul class=\"asks\">");
        for a in &v.asks {
            let state = if a.is_pending() {
                "pending".to_string()
            } else {
                let by = a
                    .answered_via()
                    .map(|b| format!(" by {b}"))
                    .unwrap_or_default();
                format!("{}{by}", a.state.as_str())
            };
            let _ = write!(
                body,
                "<li><span class=\"status\">{}</span> {}</li>",
                text(&state),
                text(&a.args_summary)
            );
        }
        body.push_str("</ul>");
    }
    if !v.allowances.is_empty() {
        body.push_str("<h2>Always allowed</h2><ul class=\"allowances\">");
        for a in &v.allowances {
            let _ = write!(
                body,
                "<li id=\"allowance-{id}\"><span class=\"status\">{state}</span> {line}",
                id = path_id(&a.id),
                state = text(a.state),
                line = text(&a.line()),
            );
            if a.is_active() {
                let _ = write!(
                    body,
                    "<form method=\"post\" action=\"/api/revoke-allowance\" data-api><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
<input type=\"hidden\" name=\"allowance\" value=\"{}\"><div class=\"buttons\"><button class=\"deny\">Revoke</button></div>\
<p class=\"result\" role=\"status\"></p></form>",
                    text(csrf),
                    path_id(&a.id)
                );
            }
            body.push_str("</li>");
        }
        body.push_str("</ul>");
    }
    match &v.diff {
        Some(Ok(d)) if d.trim().is_empty() => {
            body.push_str("<h2>Changes</h2><p class=\"empty\">No changes in its worktree.</p>")
        }
        Some(Ok(d)) => {
            let _ = write!(
                body,
                "<h2>Changes</h2><pre class=\"diff\">{}</pre>",
                text(d)
            );
        }
        Some(Err(e)) => {
            let _ = write!(
                body,
                "<h2>Changes</h2><p class=\"empty\">The worktree's diff could not be read: {}</p>",
                text(e)
            );
        }
        None => {}
    }
    if !v.trace.is_empty() {
        body.push_str("<h2>Oracle</h2>");
        trace_list(&mut body, &v.trace);
    }
    body.push_str("<h2>Reports</h2>");
    if v.reports.is_empty() {
        body.push_str("<p class=\"empty\">No reports filed yet.</p>");
    }
    body.push_str("<ol class=\"reports\">");
    for r in &v.reports {
        let _ = write!(
            body,
            "<li><span class=\"kind\">{}</span> {}",
            text(&r.kind),
            text(&r.summary)
        );
        if !r.detail.is_empty() {
            let _ = write!(body, "<pre>{}</pre>", text(&r.detail));
        }
        body.push_str("</li>");
    }
    body.push_str("</ol></main>");
    page(
        &format!("missionboard — mission {}", short(&m.id)),
        "mission",
        Some(csrf),
        &body,
    )
}

/// The main page: the live part inside its frame.
pub fn main_page(
    view: &View,
    templates: &[crate::ops::fire::TemplateEntry],
    device: &str,
    csrf: &str,
) -> String {
    page(
        "missionboard",
        "main",
        Some(csrf),
        &format!(
            "<header><h1>missionboard</h1><span class=\"device\">{}</span> <span id=\"conn\" role=\"status\"></span></header><main id=\"live\">{}</main>{}",
            text(device),
            live(view, csrf),
            templates_section(templates, csrf)
        ),
    )
}

/// The templates on the search path, each a form of its parameters (named, with
/// what each is and its default) that queues its mission; outside the live part,
/// so a refresh never clears what is being typed.
fn templates_section(templates: &[crate::ops::fire::TemplateEntry], csrf: &str) -> String {
    if templates.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<section id=\"templates\"><h2>Fire a template</h2><p class=\"meta\">Queued for a <code>missionboard host</code>, as <code>mission fire --template … --queue</code>.</p>",
    );
    for t in templates {
        let name = text(&t.name);
        let _ = write!(
            out,
            "<form class=\"template\" id=\"template-{name}\" method=\"post\" action=\"/api/fire-template\" data-api>\
<h3>{name}</h3><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\"><input type=\"hidden\" name=\"template\" value=\"{name}\">",
            csrf = text(csrf)
        );
        if let Some(e) = &t.error {
            let _ = write!(
                out,
                "<p class=\"bad\">Does not load: {}</p></form>",
                text(e)
            );
            continue;
        }
        for p in &t.params {
            let pname = text(&p.name);
            let what = match &p.default {
                Some(d) => format!("{} (default: {})", p.description, d),
                None => format!("{} (required)", p.description),
            };
            let _ = write!(
                out,
                "<label>{pname} <input name=\"{field}{pname}\"{placeholder}></label><p class=\"meta\">{what}</p>",
                field = PARAM_FIELD,
                placeholder = p
                    .default
                    .as_deref()
                    .map(|d| format!(" placeholder=\"{}\"", text(d)))
                    .unwrap_or_default(),
                what = text(what.trim()),
            );
        }
        out.push_str(
            "<div class=\"buttons\"><button>Fire</button></div><p class=\"result\" role=\"status\"></p></form>",
        );
    }
    out.push_str("</section>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_is_inert() {
        let s = text("<script>alert(1)</script> \"x\" onerror='y' \u{202e}rtl");
        assert_eq!(
            s,
            "&lt;script&gt;alert(1)&lt;/script&gt; &quot;x&quot; onerror=&#39;y&#39; rtl"
        );
        assert_eq!(path_id("abc-1\"><x"), "abc-1x");
    }
}
