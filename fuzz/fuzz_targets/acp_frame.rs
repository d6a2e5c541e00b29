//! A unit's stdout: the bounded frame reader over arbitrary bytes (split into
//! lines however they fall), and every JSON line through the session/update path.
#![no_main]

use libfuzzer_sys::fuzz_target;
use missionboard::acp_client::frame::{Frame, decode, decode_update, read_frame};

fuzz_target!(|data: &[u8]| {
    let _ = decode(data.to_vec());
    futures::executor::block_on(async {
        // A small buffer, so lines straddle reads.
        let mut reader = tokio::io::BufReader::with_capacity(64, data);
        while let Ok(Some(frame)) = read_frame(&mut reader).await {
            if let Frame::Message(line) = frame {
                let _ = decode_update(&line);
            }
        }
    });
});
