//! TEMPORARY stub until the envelope core lands.
pub enum FileKind {
    Envelope,
    Chain,
    Skip,
}
pub struct VetReport {
    pub errors: Vec<String>,
    pub warnings: Vec<(String, String)>,
}
pub fn classify(name: &str, bytes: &[u8]) -> FileKind {
    let v: serde_json::Value = serde_json::from_slice(bytes).unwrap_or_default();
    if v.get("tasks").is_some_and(|t| t.is_array()) {
        return FileKind::Chain;
    }
    if v.get("rules").is_some_and(|t| t.is_array())
        || v.get("default_action").is_some()
        || name.starts_with("hitl-policy")
    {
        return FileKind::Envelope;
    }
    FileKind::Skip
}
pub fn vet_policy(bytes: &[u8]) -> VetReport {
    let errors = match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(_) => vec![],
        Err(e) => vec![format!("not a JSON object: {e}")],
    };
    VetReport {
        errors,
        warnings: vec![],
    }
}
pub fn vet_chain(bytes: &[u8]) -> VetReport {
    vet_policy(bytes)
}
