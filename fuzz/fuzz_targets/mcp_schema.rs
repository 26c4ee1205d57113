//! Fuzzes the MCP input-schema normaliser (`gg::mcp::schema::normalise`): schemas come from
//! whatever MCP server the user configured, so they are untrusted input.
//!
//! Besides "never panics": the result always passes `check_acceptable` (what OpenAI-compatible
//! servers accept) and normalising again changes nothing.
#![no_main]

use gg::mcp::schema::{check_acceptable, normalise};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let out = normalise(&value);
    if let Err(e) = check_acceptable(&out) {
        panic!("{e}");
    }
    assert_eq!(normalise(&out), out);
});
