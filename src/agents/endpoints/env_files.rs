//! The agents that take their endpoint from a variable — read from their environment
//! first, then from the files they load variables or settings from: Gemini CLI's
//! `.env` files, Qwen Code's `modelProviders`, `.env` files and `settings.json`, goose's
//! `config.yaml`. Each reader follows its agent's own order, so the port granted is
//! the one the agent will connect to.

use std::path::{Path, PathBuf};

use super::{Endpoint, UnitView, parse_jsonc};

/// `KEY=value` lines of a dotenv file (`export `, quotes and `#` comments as dotenv
/// reads them): the value of `key`, if the file sets it.
fn dotenv_value(text: &str, key: &str) -> Option<String> {
    for line in text.lines() {
        let line = line.trim();
        let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        if name.trim() != key {
            continue;
        }
        let value = value.trim();
        let value = match value.chars().next() {
            Some(q @ ('"' | '\'' | '`')) => match value[1..].find(q) {
                Some(end) => value[1..1 + end].to_string(),
                None => value.to_string(),
            },
            _ => value
                .split(" #")
                .next()
                .unwrap_or_default()
                .trim()
                .to_string(),
        };
        return Some(value).filter(|v| !v.is_empty());
    }
    None
}

/// The value of `key` in the dotenv file at `file`, with where it was found.
fn from_dotenv(file: &Path, key: &str) -> Option<Endpoint> {
    let text = std::fs::read_to_string(file).ok()?;
    let url = dotenv_value(&text, key)?;
    Some(Endpoint::new(&url, format!("{}: {key}", file.display())))
}

// ---- Gemini CLI: GOOGLE_GEMINI_BASE_URL, else the one `.env` file it loads. ----

/// Gemini CLI's endpoint: `GOOGLE_GEMINI_BASE_URL` in its environment, else from the
/// one `.env` file it loads — the first found walking up from the workspace
/// (`.gemini/.env`, then `.env`, in each directory), else `~/.gemini/.env`, else
/// `~/.env` (`~` is `GEMINI_CLI_HOME` when set). An untrusted workspace loads only
/// the auth keys from it, never the base URL; the catalogue trusts the workspace
/// (`GEMINI_CLI_TRUST_WORKSPACE=true`), so a hand-written entry without it gets the
/// variable or the default only. Else the Gemini API.
pub(super) fn gemini(view: &UnitView<'_>) -> Option<Vec<Endpoint>> {
    const KEY: &str = "GOOGLE_GEMINI_BASE_URL";
    if let Some(url) = view.get(KEY) {
        return Some(vec![Endpoint::new(&url, KEY.to_string())]);
    }
    let trusted = view.get("GEMINI_CLI_TRUST_WORKSPACE").as_deref() == Some("true");
    let home = view
        .get("GEMINI_CLI_HOME")
        .map(PathBuf::from)
        .or_else(|| view.home());
    let loaded = gemini_env_file(view.workspace, home.as_deref(), trusted);
    if trusted && let Some(found) = loaded.as_deref().and_then(|f| from_dotenv(f, KEY)) {
        return Some(vec![found]);
    }
    let looked = match &loaded {
        Some(file) if trusted => format!("{} sets no {KEY}", file.display()),
        Some(file) => format!(
            "{} is not read for it: the workspace is not trusted",
            file.display()
        ),
        None => "no .env file".to_string(),
    };
    Some(vec![Endpoint::new(
        "https://generativelanguage.googleapis.com",
        format!("Gemini CLI's default ({KEY} is not set; {looked})"),
    )])
}

/// The `.env` file Gemini CLI loads (it reads one only).
fn gemini_env_file(workspace: &Path, home: Option<&Path>, trusted: bool) -> Option<PathBuf> {
    for dir in workspace.ancestors() {
        let own = dir.join(".gemini").join(".env");
        if trusted && own.is_file() {
            return Some(own);
        }
        let plain = dir.join(".env");
        if plain.is_file() {
            return Some(plain);
        }
    }
    let home = home?;
    let own = home.join(".gemini").join(".env");
    if trusted && own.is_file() {
        return Some(own);
    }
    Some(home.join(".env")).filter(|f| f.is_file())
}

// ---- Qwen Code: modelProviders, its environment, `.env` files, settings. ----

/// Qwen Code's settings (`~/.qwen/settings.json` — `QWEN_HOME` when set — then the
/// workspace's `.qwen/settings.json`, which wins), as `(value, file)` lookups.
struct QwenSettings {
    files: Vec<(serde_json::Value, PathBuf)>,
}

impl QwenSettings {
    fn read(view: &UnitView<'_>) -> QwenSettings {
        let global = qwen_dir(view);
        let candidates =
            global
                .map(|g| g.join("settings.json"))
                .into_iter()
                .chain(std::iter::once(
                    view.workspace.join(".qwen").join("settings.json"),
                ));
        let files = candidates
            .filter_map(|f| {
                let doc = parse_jsonc(&std::fs::read_to_string(&f).ok()?)?;
                Some((doc, f))
            })
            .collect();
        QwenSettings { files }
    }

    /// The value at `path` of the winning file (the workspace's over the user's).
    fn get(&self, path: &[&str]) -> Option<(serde_json::Value, &Path)> {
        self.files.iter().rev().find_map(|(doc, file)| {
            let mut v = doc;
            for key in path {
                v = v.get(key)?;
            }
            Some((v.clone(), file.as_path()))
        })
    }

    fn string(&self, path: &[&str]) -> Option<(String, &Path)> {
        let (v, file) = self.get(path)?;
        let s = v.as_str()?.trim().to_string();
        (!s.is_empty()).then_some((s, file))
    }
}

/// `QWEN_HOME`, else `~/.qwen`.
fn qwen_dir(view: &UnitView<'_>) -> Option<PathBuf> {
    view.get("QWEN_HOME")
        .map(PathBuf::from)
        .or_else(|| Some(view.home()?.join(".qwen")))
}

/// Qwen Code's endpoint for its auth type (`security.auth.selectedType`, `openai`
/// unless set): the `modelProviders.<type>` entry whose `id` is its model
/// (`model.name`, else `OPENAI_MODEL`/`QWEN_MODEL`) and that entry's `baseUrl`; else
/// the type's variable (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`) in its environment,
/// else in the `.env` files it loads (the workspace's — `.qwen/.env` or `.env`, the
/// first found walking up to the home directory — unless folder trust is on, then
/// `~/.qwen/.env` and `~/.env`), else in its settings' `env`; else
/// `security.auth.baseUrl`. None of them (or Qwen's own OAuth): the declared
/// endpoints.
pub(super) fn qwen(view: &UnitView<'_>) -> Option<Vec<Endpoint>> {
    let settings = QwenSettings::read(view);
    let auth = settings
        .string(&["security", "auth", "selectedType"])
        .map_or_else(|| "openai".to_string(), |(t, _)| t);
    let var = match auth.as_str() {
        "openai" | "openai-responses" => "OPENAI_BASE_URL",
        "anthropic" => "ANTHROPIC_BASE_URL",
        _ => return None,
    };
    let model = settings
        .string(&["model", "name"])
        .map(|(m, _)| m)
        .or_else(|| view.get("OPENAI_MODEL"))
        .or_else(|| view.get("QWEN_MODEL"));
    if let Some(model) = &model
        && let Some((providers, file)) = settings.get(&["modelProviders", &auth])
        && let Some(url) = providers.as_array().and_then(|list| {
            list.iter()
                .find(|p| p.get("id").and_then(|i| i.as_str()) == Some(model.as_str()))?
                .get("baseUrl")?
                .as_str()
                .map(str::to_string)
        })
    {
        return Some(vec![Endpoint::new(
            &url,
            format!(
                "{}: modelProviders.{auth}[id = {model:?}].baseUrl",
                file.display()
            ),
        )]);
    }
    if let Some(url) = view.get(var) {
        return Some(vec![Endpoint::new(&url, var.to_string())]);
    }
    let folder_trust = settings
        .get(&["security", "folderTrust", "enabled"])
        .and_then(|(v, _)| v.as_bool())
        .unwrap_or(false);
    for file in qwen_env_files(view, !folder_trust) {
        if let Some(found) = from_dotenv(&file, var) {
            return Some(vec![found]);
        }
    }
    if let Some((url, file)) = settings.string(&["env", var]) {
        return Some(vec![Endpoint::new(
            &url,
            format!("{}: env.{var}", file.display()),
        )]);
    }
    if let Some((url, file)) = settings.string(&["security", "auth", "baseUrl"]) {
        return Some(vec![Endpoint::new(
            &url,
            format!("{}: security.auth.baseUrl", file.display()),
        )]);
    }
    None
}

/// The `.env` files Qwen Code loads, in the order their variables apply.
fn qwen_env_files(view: &UnitView<'_>, workspace_trusted: bool) -> Vec<PathBuf> {
    let home = view.home();
    let mut files = Vec::new();
    if workspace_trusted {
        for dir in view.workspace.ancestors() {
            if Some(dir) == home.as_deref() {
                break;
            }
            let own = dir.join(".qwen").join(".env");
            let plain = dir.join(".env");
            if let Some(found) = [own, plain].into_iter().find(|f| f.is_file()) {
                files.push(found);
                break;
            }
        }
    }
    files.extend(qwen_dir(view).map(|d| d.join(".env")));
    if let Some(home) = &home {
        files.push(home.join(".qwen").join(".env"));
        files.push(home.join(".env"));
    }
    files.dedup();
    files.into_iter().filter(|f| f.is_file()).collect()
}

// ---- goose: its environment, then `config.yaml`. ----

/// goose's endpoint: each setting from its environment (the key, upper-cased) before
/// its `config.yaml` (`$GOOSE_PATH_ROOT/config`, else `${XDG_CONFIG_HOME:-~/.config}/goose`):
/// the `GOOSE_PROVIDER`, and that provider's host — `OPENAI_HOST` (default
/// `https://api.openai.com`), `ANTHROPIC_HOST` (`https://api.anthropic.com`),
/// `OLLAMA_HOST` (`localhost`, port 11434 when it names none). No provider set, or
/// another: the declared endpoints.
pub(super) fn goose(view: &UnitView<'_>) -> Option<Vec<Endpoint>> {
    let file = match view.get("GOOSE_PATH_ROOT").filter(|r| r.starts_with('/')) {
        Some(root) => PathBuf::from(root).join("config").join("config.yaml"),
        None => view.path("${XDG_CONFIG_HOME:-~/.config}/goose/config.yaml")?,
    };
    let yaml = std::fs::read_to_string(&file).unwrap_or_default();
    let param = |key: &str| -> Option<(String, String)> {
        if let Some(v) = view.get(key) {
            return Some((v, key.to_string()));
        }
        let v = yaml_top_level(&yaml, key)?;
        Some((v, format!("{}: {key}", file.display())))
    };
    let (provider, provider_from) = param("GOOSE_PROVIDER")?;
    let (key, default) = match provider.as_str() {
        "openai" => ("OPENAI_HOST", "https://api.openai.com"),
        "anthropic" => ("ANTHROPIC_HOST", "https://api.anthropic.com"),
        "ollama" => ("OLLAMA_HOST", "localhost"),
        _ => return None,
    };
    let chosen = format!("GOOSE_PROVIDER = {provider:?} from {provider_from}");
    let (host, found) = match param(key) {
        Some((host, from)) => (host, format!("{from} ({chosen})")),
        None => (
            default.to_string(),
            format!("goose's default {key} ({chosen})"),
        ),
    };
    let url = if provider == "ollama" {
        ollama_url(&host)
    } else {
        host
    };
    Some(vec![Endpoint::new(&url, found)])
}

/// goose's Ollama host as a URL: `http://` when it names no scheme, port 11434 when
/// it names none.
fn ollama_url(host: &str) -> String {
    let with_scheme = if host.contains("://") {
        host.to_string()
    } else {
        format!("http://{host}")
    };
    match reqwest::Url::parse(&with_scheme) {
        Ok(mut u) if u.port().is_none() => {
            let _ = u.set_port(Some(11434));
            u.to_string().trim_end_matches('/').to_string()
        }
        _ => with_scheme,
    }
}

/// A top-level scalar `KEY: value` of a YAML document (goose keeps its settings flat
/// at the top level; nested blocks — its extensions — are skipped).
fn yaml_top_level(yaml: &str, key: &str) -> Option<String> {
    for line in yaml.lines() {
        if line.starts_with([' ', '\t', '#', '-']) {
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim().trim_matches(['"', '\'']);
        if name != key {
            continue;
        }
        let value = value.trim();
        let value = match value.chars().next() {
            Some(q @ ('"' | '\'')) => value[1..].split(q).next().unwrap_or_default(),
            _ => value.split(" #").next().unwrap_or_default().trim(),
        };
        return Some(value.to_string()).filter(|v| !v.is_empty());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotenv_values_as_dotenv_reads_them() {
        let text = "# c\nexport A=1\nB = \"http://x:1/v1\" # why\nC=http://y:2 # note\nD=''\n";
        assert_eq!(dotenv_value(text, "A").as_deref(), Some("1"));
        assert_eq!(dotenv_value(text, "B").as_deref(), Some("http://x:1/v1"));
        assert_eq!(dotenv_value(text, "C").as_deref(), Some("http://y:2"));
        assert_eq!(dotenv_value(text, "D"), None);
        assert_eq!(dotenv_value(text, "E"), None);
    }

    #[test]
    fn yaml_top_level_scalars_only() {
        let yaml = "GOOSE_PROVIDER: openai\nextensions:\n  OPENAI_HOST: nested\nOPENAI_HOST: \"http://127.0.0.1:9000\"\n";
        assert_eq!(
            yaml_top_level(yaml, "GOOSE_PROVIDER").as_deref(),
            Some("openai")
        );
        assert_eq!(
            yaml_top_level(yaml, "OPENAI_HOST").as_deref(),
            Some("http://127.0.0.1:9000")
        );
        assert_eq!(yaml_top_level(yaml, "extensions"), None);
    }

    #[test]
    fn ollama_hosts_get_goose_s_scheme_and_port() {
        assert_eq!(ollama_url("localhost"), "http://localhost:11434");
        assert_eq!(ollama_url("10.0.0.2:8000"), "http://10.0.0.2:8000");
        assert_eq!(
            ollama_url("https://ollama.example"),
            "https://ollama.example:11434"
        );
    }
}
