//! Envelope files: parse, lint and evaluate arbitrary bytes. Input is
//! `<policy bytes> 0x00 <tool-call arguments>`; the arguments are used as JSON
//! when they parse, else as a shell command and a path.
#![no_main]

use libfuzzer_sys::fuzz_target;
use missionboard::envelope::{Envelope, ToolCall, evaluate, evaluate_or_fail_closed, vet_envelope};
use serde_json::{Value, json};

fuzz_target!(|data: &[u8]| {
    let (envelope_bytes, rest) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let _ = vet_envelope(envelope_bytes);
    let loaded = Envelope::parse("hitl-policy-fuzz.json", envelope_bytes);
    let text = String::from_utf8_lossy(rest).into_owned();
    let args = serde_json::from_slice::<Value>(rest)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({"command": text, "path": text, "url": text}));
    let calls = [
        ToolCall::new("local_shell", "local_shell", args.clone()),
        ToolCall::new("local_fs", "write_file", args.clone()),
        ToolCall::new("mission", "mission_ask_attention", args.clone()),
        ToolCall::new(&text, &text, args),
    ];
    for call in &calls {
        let _ = evaluate_or_fail_closed("fuzz", &loaded, call);
        if let Ok(policy) = &loaded {
            let _ = evaluate("fuzz", policy, call);
        }
    }
});
