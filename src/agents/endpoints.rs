//! Where an agent's model endpoint is, read where the agent itself reads it: its own
//! config file (codex's `config.toml`, opencode's `opencode.json`, Claude Code's
//! `settings.json`, goose's `config.yaml`, Qwen Code's `settings.json`), its environment
//! variables and the `.env` files it loads them from (Gemini CLI, Qwen Code), else the
//! catalogue's default —
//! each with where it was found, so a grant, `doctor --agent` and a refused
//! connection's blocker can all say it.
//!
//! The files are read as the unit will see them: under the HOME, `CODEX_HOME`,
//! `XDG_CONFIG_HOME` and config variables its environment holds (its declaration's
//! `env` over the host's), and in its workspace.

use std::path::{Path, PathBuf};

use super::{Agent, catalogue, expand_vars, url_port};

mod env_files;

/// One model endpoint of an agent, and where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The URL as the agent will use it.
    pub url: String,
    /// Its host (`None`: not a URL).
    pub host: Option<String>,
    /// Its TCP port (its scheme's default when it names none; `None`: not a URL).
    pub port: Option<u16>,
    /// Where it was found: a file and a key, a variable, or the catalogue's default.
    pub found: String,
}

impl Endpoint {
    pub fn new(url: &str, found: String) -> Endpoint {
        let parsed = reqwest::Url::parse(url.trim()).ok();
        Endpoint {
            url: url.trim().to_string(),
            host: parsed
                .as_ref()
                .and_then(|u| u.host_str().map(str::to_string)),
            port: url_port(url.trim()),
            found,
        }
    }

    /// `http://127.0.0.1:8080`: the scheme, host and port, without the path.
    pub fn origin(&self) -> String {
        match self.url.split_once("://") {
            Some((scheme, rest)) => {
                let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
                format!("{scheme}://{authority}")
            }
            None => self.url.clone(),
        }
    }

    /// `http://127.0.0.1:8080/v1 (from …)`, for grant lines and blockers.
    pub fn describe(&self) -> String {
        format!("{} (from {})", self.url, self.found)
    }
}

/// What a unit sees: its variables (declared `env` over the host's) and its workspace.
pub struct UnitView<'a> {
    pub var: &'a dyn Fn(&str) -> Option<String>,
    pub workspace: &'a Path,
}

impl UnitView<'_> {
    fn get(&self, name: &str) -> Option<String> {
        (self.var)(name).filter(|v| !v.trim().is_empty())
    }

    fn home(&self) -> Option<PathBuf> {
        self.get("HOME").map(PathBuf::from)
    }

    /// `~/…` and `${VAR:-…}` of a template, as the unit would expand them.
    fn path(&self, template: &str) -> Option<PathBuf> {
        let expanded = expand_vars(template, |n| self.get(n));
        match expanded.strip_prefix('~') {
            Some(rest) => Some(self.home()?.join(rest.trim_start_matches('/'))),
            None => Some(PathBuf::from(expanded)),
        }
    }
}

/// The variables a unit of `agent` sees: its declared env (placeholders aside) over
/// the host's.
pub fn unit_var(agent: &Agent) -> impl Fn(&str) -> Option<String> + '_ {
    move |name: &str| match agent.env.get(name) {
        Some(v) if !v.contains('{') => Some(v.clone()),
        _ => std::env::var(name).ok(),
    }
}

/// The config readers the catalogue may name under `endpoint_config`.
pub const READERS: &[&str] = &[
    "codex", "opencode", "kilo", "claude", "gemini", "qwen", "goose", "cline",
];

/// Every model endpoint of `agent` as a unit of it at `view` would reach: the one its
/// own config names when its reader finds one (with any endpoint its declaration adds
/// beyond the catalogue's), else its declared endpoints.
pub fn resolve(agent: &Agent, view: &UnitView<'_>) -> Vec<Endpoint> {
    let configured = match agent.endpoint_config.as_deref() {
        Some("codex") => codex(agent, view),
        Some("opencode") => opencode(view, &OPENCODE),
        Some("kilo") => opencode(view, &KILO),
        Some("claude") => claude(view),
        Some("gemini") => env_files::gemini(view),
        Some("qwen") => env_files::qwen(view),
        Some("goose") => env_files::goose(view),
        Some("cline") => cline(view),
        _ => None,
    };
    let Some(mut found) = configured else {
        return agent.endpoints.iter().map(|t| declared(t, view)).collect();
    };
    let shipped: &[String] = catalogue::get(&agent.name)
        .filter(|c| c.command == agent.command)
        .map_or(&[], |c| c.endpoints.as_slice());
    found.extend(
        agent
            .endpoints
            .iter()
            .filter(|t| !shipped.contains(t))
            .map(|t| declared(t, view)),
    );
    found
}

/// A declared endpoint template, with the variable it came from or its default.
fn declared(template: &str, view: &UnitView<'_>) -> Endpoint {
    let url = expand_vars(template, |n| view.get(n));
    let var = template
        .strip_prefix("${")
        .and_then(|t| t.split([':', '}']).next())
        .filter(|_| template.starts_with("${"));
    let found = match var {
        Some(name) if view.get(name).is_some() => name.to_string(),
        Some(name) => format!("the declared default; {name} is not set"),
        None => "its declaration".to_string(),
    };
    Endpoint::new(&url, found)
}

// ---- codex: `$CODEX_HOME/config.toml` (then `-c` overrides in its args). ----

/// codex's endpoint: the `model_provider` its config selects (a profile's first, `-c`
/// overrides in the agent's args last), and that provider's `base_url` — for the
/// built-in `openai` provider the `openai_base_url` key, else OpenAI's API; for the
/// built-in `ollama` and `lmstudio` providers their loopback ports. codex reads no
/// endpoint variable of OpenAI's; only a config it cannot be made to read (none at
/// all) leaves the declared endpoints.
fn codex(agent: &Agent, view: &UnitView<'_>) -> Option<Vec<Endpoint>> {
    let home = view.path("${CODEX_HOME:-~/.codex}")?;
    let file = home.join("config.toml");
    let mut doc = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| toml::from_str::<toml::Table>(&t).ok())
        .unwrap_or_default();
    let mut shown = file.display().to_string();
    // `-c key=value` in the agent's own args override the file.
    let mut overrides = Vec::new();
    let mut args = agent.args.iter();
    while let Some(arg) = args.next() {
        let pair = match arg.as_str() {
            "-c" | "--config" => args.next().cloned(),
            a => a.strip_prefix("--config=").map(str::to_string),
        };
        if let Some((key, value)) = pair.as_deref().and_then(|p| p.split_once('=')) {
            let value = toml::from_str::<toml::Table>(&format!("v = {value}"))
                .ok()
                .and_then(|mut t| t.remove("v"))
                .unwrap_or_else(|| toml::Value::from(value));
            set_dotted(&mut doc, key.trim(), value);
            overrides.push(key.trim().to_string());
        }
    }
    let touches_endpoint =
        |k: &String| k.starts_with("model_provider") || k == "openai_base_url" || k == "profile";
    if overrides.iter().any(touches_endpoint) {
        shown = format!("{shown} and the agent's -c overrides");
    }
    let profile = doc
        .get("profile")
        .and_then(|p| p.as_str())
        .and_then(|p| doc.get("profiles")?.get(p)?.as_table().cloned());
    let pick = |key: &str| -> Option<String> {
        profile
            .as_ref()
            .and_then(|p| p.get(key))
            .or_else(|| doc.get(key))
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let provider = pick("model_provider").unwrap_or_else(|| "openai".to_string());
    let defined = doc
        .get("model_providers")
        .and_then(|p| p.get(&provider))
        .and_then(|p| p.get("base_url"))
        .and_then(|u| u.as_str());
    let endpoint = match (provider.as_str(), defined) {
        ("openai", _) => match pick("openai_base_url") {
            Some(url) => Endpoint::new(&url, format!("{shown}: openai_base_url")),
            None => Endpoint::new(
                "https://api.openai.com/v1",
                format!("codex's built-in openai provider ({shown} sets no openai_base_url)"),
            ),
        },
        (_, Some(url)) => Endpoint::new(
            url,
            format!("{shown}: model_providers.{provider}.base_url (model_provider = {provider:?})"),
        ),
        ("ollama" | "lmstudio", None) => {
            let port = if provider == "ollama" { 11434 } else { 1234 };
            let url = view
                .get("CODEX_OSS_BASE_URL")
                .unwrap_or_else(|| format!("http://localhost:{port}/v1"));
            Endpoint::new(&url, format!("codex's built-in {provider} provider"))
        }
        (_, None) => {
            // A provider the file selects but does not define: codex refuses to
            // start; nothing here says where it would connect.
            return None;
        }
    };
    Some(vec![endpoint])
}

/// Set `a.b.c = value` in `doc`, making the tables on the way.
fn set_dotted(doc: &mut toml::Table, key: &str, value: toml::Value) {
    let mut parts: Vec<&str> = key.split('.').collect();
    let Some(last) = parts.pop() else { return };
    let mut table = doc;
    for part in parts {
        let entry = table
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !entry.is_table() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        let Some(t) = entry.as_table_mut() else {
            return;
        };
        table = t;
    }
    table.insert(last.to_string(), value);
}

// ---- opencode: its config files, merged in its order. ----

/// opencode's endpoint: its config files merged in the order it merges them (the
/// global `opencode.json`, `OPENCODE_CONFIG`, the project's `opencode.json` files from
/// the outermost down to the workspace, `.opencode/opencode.json`, then
/// `OPENCODE_CONFIG_CONTENT`); the provider of its `model` (`provider/model`), and that
/// provider's `options.baseURL` — for `openai` and `anthropic` without one, their
/// APIs. No `model`, or a provider of unknown address: the declared endpoints.
fn opencode(view: &UnitView<'_>, app: &OpencodeFamily) -> Option<Vec<Endpoint>> {
    let mut files: Vec<PathBuf> = Vec::new();
    if let Some(global) = view.path(&format!("${{XDG_CONFIG_HOME:-~/.config}}/{}", app.app)) {
        files.extend(
            std::iter::once("config.json")
                .chain(app.files.iter().copied())
                .map(|f| global.join(f)),
        );
    }
    if let Some(custom) = view.get(app.config_var) {
        files.push(PathBuf::from(custom));
    }
    let mut project: Vec<PathBuf> = view
        .workspace
        .ancestors()
        .flat_map(|d| app.files.iter().rev().map(move |f| d.join(f)))
        .collect();
    project.reverse();
    files.extend(project);
    for dir in app.dot_dirs {
        files.extend(app.files.iter().map(|f| view.workspace.join(dir).join(f)));
    }
    // (value, where) of each key path, later files winning.
    let mut model: Option<(String, String)> = None;
    let mut providers: Vec<(serde_json::Value, String)> = Vec::new();
    let mut take = |doc: serde_json::Value, from: String| {
        if let Some(m) = doc.get("model").and_then(|m| m.as_str()) {
            model = Some((m.to_string(), from.clone()));
        }
        if let Some(p) = doc.get("provider") {
            providers.push((p.clone(), from));
        }
    };
    for file in files {
        if let Ok(text) = std::fs::read_to_string(&file)
            && let Some(doc) = parse_jsonc(&substitute_env(&text, view))
        {
            take(doc, file.display().to_string());
        }
    }
    if let Some(inline) = view.get(app.content_var)
        && let Some(doc) = parse_jsonc(&substitute_env(&inline, view))
    {
        take(doc, app.content_var.to_string());
    }
    let (model, model_from) = model?;
    let provider = model.split_once('/')?.0.to_string();
    let base = providers.iter().rev().find_map(|(p, from)| {
        p.get(&provider)?
            .get("options")?
            .get("baseURL")?
            .as_str()
            .map(|u| (u.to_string(), from.clone()))
    });
    let endpoint = match base {
        Some((url, from)) => Endpoint::new(
            &url,
            format!(
                "{from}: provider.{provider}.options.baseURL (model {model:?} in {model_from})"
            ),
        ),
        None => match provider.as_str() {
            "openai" => match view.get("OPENAI_BASE_URL") {
                Some(url) => Endpoint::new(
                    &url,
                    format!("OPENAI_BASE_URL (model {model:?} in {model_from})"),
                ),
                None => Endpoint::new(
                    "https://api.openai.com/v1",
                    format!(
                        "{}'s openai provider (model {model:?} in {model_from})",
                        app.app
                    ),
                ),
            },
            "anthropic" => Endpoint::new(
                "https://api.anthropic.com",
                format!(
                    "{}'s anthropic provider (model {model:?} in {model_from})",
                    app.app
                ),
            ),
            _ => return None,
        },
    };
    Some(vec![endpoint])
}

/// Where an opencode-family agent keeps its config: opencode, and Kilo (built on it).
pub struct OpencodeFamily {
    /// Its name under `~/.config`.
    app: &'static str,
    /// Its config file names, in the order it merges them (later wins).
    files: &'static [&'static str],
    /// Its project directories of config, in order.
    dot_dirs: &'static [&'static str],
    /// The variable naming one more config file.
    config_var: &'static str,
    /// The variable holding config merged over all the files.
    content_var: &'static str,
}

const OPENCODE: OpencodeFamily = OpencodeFamily {
    app: "opencode",
    files: &["opencode.json", "opencode.jsonc"],
    dot_dirs: &[".opencode"],
    config_var: "OPENCODE_CONFIG",
    content_var: "OPENCODE_CONFIG_CONTENT",
};

const KILO: OpencodeFamily = OpencodeFamily {
    app: "kilo",
    files: &["opencode.json", "opencode.jsonc", "kilo.json", "kilo.jsonc"],
    dot_dirs: &[".opencode", ".kilo"],
    config_var: "KILO_CONFIG",
    content_var: "KILO_CONFIG_CONTENT",
};

/// opencode's `{env:VAR}` in a config's text.
fn substitute_env(text: &str, view: &UnitView<'_>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("{env:") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 5..];
        match after.find('}') {
            Some(end) => {
                out.push_str(&view.get(&after[..end]).unwrap_or_default());
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// JSON with `//` and `/* */` comments and trailing commas (JSONC), as a value.
pub fn parse_jsonc(text: &str) -> Option<serde_json::Value> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                out.extend(chars.next());
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for n in chars.by_ref() {
                    if last == '*' && n == '/' {
                        break;
                    }
                    last = n;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    // Trailing commas: a comma whose next non-space character closes.
    let bytes: Vec<char> = out.chars().collect();
    let mut cleaned = String::with_capacity(out.len());
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            cleaned.push(c);
            if c == '\\' && i + 1 < bytes.len() {
                cleaned.push(bytes[i + 1]);
                i += 1;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            cleaned.push(c);
        } else if c == ',' {
            let next = bytes[i + 1..].iter().find(|n| !n.is_whitespace());
            if !matches!(next, Some('}') | Some(']')) {
                cleaned.push(c);
            }
        } else {
            cleaned.push(c);
        }
        i += 1;
    }
    serde_json::from_str(&cleaned).ok()
}

// ---- Claude Code: settings files' `env`, then the environment. ----

/// Claude Code's endpoint: `ANTHROPIC_BASE_URL` from the `env` of its settings files
/// (the workspace's `.claude/settings.local.json`, then `.claude/settings.json`, then
/// the user's `settings.json` in its config dir), which it applies over its
/// environment; else the variable itself; else Anthropic's API.
fn claude(view: &UnitView<'_>) -> Option<Vec<Endpoint>> {
    let user = view.path("${CLAUDE_CONFIG_DIR:-~/.claude}")?;
    let files = [
        view.workspace.join(".claude").join("settings.local.json"),
        view.workspace.join(".claude").join("settings.json"),
        user.join("settings.json"),
    ];
    for file in files {
        let Some(url) = std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| parse_jsonc(&t))
            .and_then(|d| {
                d.get("env")?
                    .get("ANTHROPIC_BASE_URL")?
                    .as_str()
                    .map(str::to_string)
            })
            .filter(|u| !u.trim().is_empty())
        else {
            continue;
        };
        return Some(vec![Endpoint::new(
            &url,
            format!("{}: env.ANTHROPIC_BASE_URL", file.display()),
        )]);
    }
    Some(vec![match view.get("ANTHROPIC_BASE_URL") {
        Some(url) => Endpoint::new(&url, "ANTHROPIC_BASE_URL".to_string()),
        None => Endpoint::new(
            "https://api.anthropic.com",
            "Claude Code's default (ANTHROPIC_BASE_URL is not set)".to_string(),
        ),
    }])
}

// ---- Cline: the provider its ACP mode runs, and `providers.json`. ----

/// Cline's endpoint in ACP mode: the provider `CLINE_PROVIDER` names (else its own
/// account, `cline`), and that provider's `settings.baseUrl` in the
/// `settings/providers.json` of its data dir (`CLINE_DATA_DIR`, else
/// `${CLINE_DIR:-~/.cline}/data`) — what `cline auth -p … -b <url>` writes. A provider
/// with no base URL there: the declared endpoints.
fn cline(view: &UnitView<'_>) -> Option<Vec<Endpoint>> {
    let data = match view.get("CLINE_DATA_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => view.path("${CLINE_DIR:-~/.cline}/data")?,
    };
    let file = data.join("settings").join("providers.json");
    let (provider, chosen) = match view.get("CLINE_PROVIDER") {
        Some(p) => (p, "CLINE_PROVIDER"),
        None => ("cline".to_string(), "Cline's default"),
    };
    let doc = parse_jsonc(&std::fs::read_to_string(&file).ok()?)?;
    let url = doc
        .get("providers")?
        .get(&provider)?
        .get("settings")?
        .get("baseUrl")?
        .as_str()?
        .trim()
        .to_string();
    if url.is_empty() {
        return None;
    }
    Some(vec![Endpoint::new(
        &url,
        format!(
            "{}: providers.{provider}.settings.baseUrl (provider {provider:?}: {chosen})",
            file.display()
        ),
    )])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn view_of<'a>(vars: &'a BTreeMap<&'a str, String>) -> impl Fn(&str) -> Option<String> + 'a {
        move |n: &str| vars.get(n).cloned()
    }

    #[test]
    fn codex_reads_the_selected_providers_base_url_and_its_overrides() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("codex");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            home.join("config.toml"),
            "model_provider = \"local\"\n[model_providers.local]\nname = \"l\"\nbase_url = \"http://127.0.0.1:8081/v1\"\n[model_providers.other]\nbase_url = \"http://127.0.0.1:9/v1\"\n",
        )
        .unwrap();
        let vars = BTreeMap::from([("CODEX_HOME", home.display().to_string())]);
        let var = view_of(&vars);
        let view = UnitView {
            var: &var,
            workspace: dir.path(),
        };
        let codex = catalogue::get("codex").unwrap();
        let found = resolve(codex, &view);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].url, "http://127.0.0.1:8081/v1");
        assert_eq!(found[0].port, Some(8081));
        assert_eq!(found[0].host.as_deref(), Some("127.0.0.1"));
        assert_eq!(
            found[0].found,
            format!(
                "{}: model_providers.local.base_url (model_provider = \"local\")",
                home.join("config.toml").display()
            )
        );
        // An override in the agent's args wins.
        let mut edited = codex.clone();
        edited
            .args
            .extend(["-c".into(), "model_provider=\"other\"".into()]);
        assert_eq!(resolve(&edited, &view)[0].port, Some(9));
        // No file: the built-in openai provider.
        let empty = BTreeMap::from([("HOME", dir.path().join("nohome").display().to_string())]);
        let var = view_of(&empty);
        let view = UnitView {
            var: &var,
            workspace: dir.path(),
        };
        let found = resolve(codex, &view);
        assert_eq!(found[0].url, "https://api.openai.com/v1");
        assert!(
            found[0]
                .found
                .starts_with("codex's built-in openai provider")
        );
    }

    #[test]
    fn opencode_reads_the_model_providers_base_url_the_project_over_the_global() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let global = home.join(".config").join("opencode");
        std::fs::create_dir_all(&global).unwrap();
        std::fs::write(
            global.join("opencode.json"),
            r#"{"model": "local/m", "provider": {"local": {"options": {"baseURL": "http://127.0.0.1:7000/v1"}}}}"#,
        )
        .unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let vars = BTreeMap::from([("HOME", home.display().to_string())]);
        let var = view_of(&vars);
        let view = UnitView {
            var: &var,
            workspace: &ws,
        };
        let opencode = catalogue::get("opencode").unwrap();
        let found = resolve(opencode, &view);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].port, Some(7000));
        // The project's file (with comments and a trailing comma) wins.
        std::fs::write(
            ws.join("opencode.jsonc"),
            "{\n // mine\n \"provider\": {\"local\": {\"options\": {\"baseURL\": \"http://127.0.0.1:7001/v1\",},},},\n}",
        )
        .unwrap();
        let found = resolve(opencode, &view);
        assert_eq!(found[0].port, Some(7001), "{found:?}");
        assert!(
            found[0].found.starts_with(&format!(
                "{}: provider.local.options.baseURL",
                ws.join("opencode.jsonc").display()
            )),
            "{found:?}"
        );
        // No model named: the declared endpoints.
        std::fs::remove_file(global.join("opencode.json")).unwrap();
        let found = resolve(opencode, &view);
        assert_eq!(found.len(), opencode.endpoints.len());
    }

    #[test]
    fn jsonc_keeps_strings_that_look_like_comments() {
        let v = parse_jsonc("{\"a\": \"http://x/*y*/\", // c\n \"b\": [1,2,],}").unwrap();
        assert_eq!(v["a"], "http://x/*y*/");
        assert_eq!(v["b"], serde_json::json!([1, 2]));
    }
}
