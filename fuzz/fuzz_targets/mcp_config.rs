//! Fuzzes the `~/.gg/mcp.json` parser (`gg::mcp::config::parse`).
//!
//! Besides "never panics": every invalid entry's error names its server, and every valid stdio
//! entry has a non-empty command.
#![no_main]

use gg::mcp::config::{ServerSpec, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(entries) = parse(text) else { return };
    for entry in entries {
        match entry.spec {
            Ok(ServerSpec::Stdio { command, .. }) => assert!(!command.trim().is_empty()),
            Ok(ServerSpec::Http { url }) => {
                assert!(url.starts_with("http://") || url.starts_with("https://"))
            }
            Err(e) => assert!(e.starts_with("MCP server \""), "{e}"),
        }
    }
});
