//! A session's place in its script, kept on disk when the script says
//! `load_session`, so a restarted stub can honour `session/load`: one JSON file
//! per session under `$STUB_STATE_DIR` (default: `missionboard-stub` in the
//! system temp directory), rewritten after every turn.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::script::RawStep;

/// What a loaded session continues from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Saved {
    pub cursor: usize,
    /// The steps waiting on a parked question's answer.
    pub parked: Option<Vec<RawStep>>,
    pub answer: String,
    pub perms: Vec<String>,
    pub ids: u64,
}

fn dir() -> PathBuf {
    std::env::var_os("STUB_STATE_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("missionboard-stub"))
}

/// The state file of `session_id`; the id comes from the client, so only a plain
/// name is accepted (no separators, no traversal).
fn path(session_id: &str) -> Result<PathBuf, String> {
    let plain = !session_id.is_empty()
        && session_id.len() <= 128
        && session_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !plain {
        return Err(format!("session id {session_id:?} is not a plain name"));
    }
    Ok(dir().join(format!("{session_id}.json")))
}

fn step_json(s: &RawStep) -> Value {
    json!({"kind": s.kind, "payload": s.payload})
}

fn step_of(v: &Value) -> Option<RawStep> {
    Some(RawStep {
        kind: v.get("kind")?.as_str()?.to_string(),
        payload: v.get("payload")?.clone(),
    })
}

pub fn save(session_id: &str, saved: &Saved) -> Result<(), String> {
    let path = path(session_id)?;
    let doc = json!({
        "cursor": saved.cursor,
        "parked": saved.parked.as_ref().map(|p| p.iter().map(step_json).collect::<Vec<_>>()),
        "answer": saved.answer,
        "perms": saved.perms,
        "ids": saved.ids,
    });
    std::fs::create_dir_all(dir())
        .map_err(|e| format!("cannot create {}: {e}", dir().display()))?;
    // Whole or not at all: a stub killed mid-write leaves the previous turn's file.
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, doc.to_string())
        .and_then(|_| std::fs::rename(&tmp, &path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

pub fn load(session_id: &str) -> Result<Saved, String> {
    let path = path(session_id)?;
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "no saved state for session {session_id} ({}): {e}",
            path.display()
        )
    })?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| format!("saved state {} is not JSON: {e}", path.display()))?;
    let parked = match v.get("parked") {
        Some(Value::Array(steps)) => Some(steps.iter().filter_map(step_of).collect()),
        _ => None,
    };
    Ok(Saved {
        cursor: v.get("cursor").and_then(Value::as_u64).unwrap_or(0) as usize,
        parked,
        answer: v
            .get("answer")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        perms: v
            .get("perms")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|p| p.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        ids: v.get("ids").and_then(Value::as_u64).unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_place_reads_back_and_hostile_ids_are_refused() {
        let saved = Saved {
            cursor: 2,
            parked: Some(vec![RawStep {
                kind: "finish".into(),
                payload: json!("landed"),
            }]),
            answer: "yes".into(),
            perms: vec!["allowed".into()],
            ids: 3,
        };
        assert!(path("../etc/passwd").is_err());
        assert!(path("a/b").is_err());
        assert!(path("").is_err());
        let id = format!("test-{}", uuid::Uuid::new_v4());
        save(&id, &saved).unwrap();
        assert_eq!(load(&id).unwrap(), saved);
        let _ = std::fs::remove_file(path(&id).unwrap());
    }
}
