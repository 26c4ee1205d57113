//! `~/.gg/mcp.json`: which MCP servers to start and how.
//!
//! The file is `{"servers": {"<name>": {"command", "args", "env"} | {"url"}}}`. A file that is not
//! that shape at all is one error; a single server entry that is wrong is an error for that server
//! only, so one typo does not take every other server down with it.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// Longest server name accepted (it becomes part of tool names and a directory name).
pub const MAX_SERVER_NAME: usize = 64;

/// How to reach one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerSpec {
    /// A child process speaking MCP over stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
    },
    /// A streamable-HTTP endpoint.
    Http { url: String },
}

/// One configured server: its name and either its spec or why the entry is invalid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEntry {
    pub name: String,
    pub spec: Result<ServerSpec, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    servers: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    url: Option<String>,
}

/// Parses the file. `Err` when the file as a whole is unusable; otherwise every server entry, in
/// name order, each valid or carrying its own validation error (which names the server).
pub fn parse(text: &str) -> Result<Vec<ServerEntry>, String> {
    let file: File = serde_json::from_str(text).map_err(|e| {
        format!("invalid mcp.json: {e} (expected {{\"servers\": {{\"<name>\": {{...}}}}}})")
    })?;
    Ok(file
        .servers
        .into_iter()
        .map(|(name, raw)| {
            let spec = validate(&name, raw)
                .map_err(|e| format!("MCP server \"{}\": {e}", printable(&name)));
            ServerEntry { name, spec }
        })
        .collect())
}

fn validate(name: &str, raw: Value) -> Result<ServerSpec, String> {
    check_name(name)?;
    let raw: RawServer = serde_json::from_value(raw).map_err(|e| format!("invalid entry: {e}"))?;
    match (raw.command, raw.url) {
        (Some(command), None) => {
            if command.trim().is_empty() {
                return Err("\"command\" is empty".into());
            }
            if command.contains('\0') {
                return Err("\"command\" contains a NUL byte".into());
            }
            let args = raw.args.unwrap_or_default();
            if args.iter().any(|a| a.contains('\0')) {
                return Err("an argument contains a NUL byte".into());
            }
            let env = raw.env.unwrap_or_default();
            for (key, value) in &env {
                if key.is_empty() || key.contains(['=', '\0']) || value.contains('\0') {
                    return Err(format!(
                        "invalid environment variable name or value: {key:?}"
                    ));
                }
            }
            Ok(ServerSpec::Stdio { command, args, env })
        }
        (None, Some(url)) => {
            if raw.args.is_some() || raw.env.is_some() {
                return Err(
                    "\"args\" and \"env\" apply only to \"command\" servers, not \"url\" ones"
                        .into(),
                );
            }
            let parsed =
                reqwest::Url::parse(&url).map_err(|e| format!("invalid \"url\" {url:?}: {e}"))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(format!(
                    "\"url\" must be http:// or https://, not {}://",
                    parsed.scheme()
                ));
            }
            Ok(ServerSpec::Http {
                url: parsed.to_string(),
            })
        }
        (Some(_), Some(_)) => {
            Err("has both \"command\" and \"url\"; exactly one of them is required".into())
        }
        (None, None) => {
            Err("has neither \"command\" nor \"url\"; exactly one of them is required".into())
        }
    }
}

/// Server names become directory names (`~/.gg/mcp/<name>/`) and parts of tool names, so they
/// are held to a plain alphabet rather than escaped.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_SERVER_NAME {
        return Err(format!(
            "the name must be 1 to {MAX_SERVER_NAME} characters"
        ));
    }
    if name.starts_with('.')
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err("the name may contain only letters, digits, '_', '-' and '.', and must not start with '.'".into());
    }
    Ok(())
}

/// A name (of a server or a tool) as it can safely appear in a one-line message: no control,
/// bidi or invisible characters (each becomes `?`), at most 200 characters.
pub(crate) fn printable(name: &str) -> String {
    name.chars()
        .take(200)
        .map(|c| {
            if c.is_control() || crate::display::needs_escape(c) {
                '?'
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_validated_one_by_one() {
        let text = r#"{"servers": {
            "fs": {"command": "npx", "args": ["-y", "x"], "env": {"A": "1"}},
            "web": {"url": "https://example.com/mcp"},
            "both": {"command": "x", "url": "http://a"},
            "none": {"args": []},
            "ftp": {"url": "ftp://a"},
            "mixed": {"url": "http://a", "env": {}},
            "typo": {"comand": "x"},
            "../up": {"command": "x"},
            "empty": {"command": " "}
        }}"#;
        let entries = parse(text).unwrap();
        let by_name = |n: &str| entries.iter().find(|e| e.name == n).unwrap().spec.clone();
        assert_eq!(
            by_name("fs"),
            Ok(ServerSpec::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "x".into()],
                env: BTreeMap::from([("A".into(), "1".into())]),
            })
        );
        assert_eq!(
            by_name("web"),
            Ok(ServerSpec::Http {
                url: "https://example.com/mcp".into()
            })
        );
        for (name, needle) in [
            ("both", "exactly one"),
            ("none", "exactly one"),
            ("ftp", "http:// or https://"),
            ("mixed", "apply only"),
            ("typo", "comand"),
            ("../up", "may contain only"),
            ("empty", "empty"),
        ] {
            let err = by_name(name).unwrap_err();
            assert!(
                err.starts_with(&format!("MCP server \"{name}\": ")),
                "{err}"
            );
            assert!(err.contains(needle), "{name}: {err}");
        }
    }

    #[test]
    fn a_file_of_the_wrong_shape_is_one_error() {
        for text in ["", "[]", r#"{"mcpServers": {}}"#, r#"{"servers": []}"#, "{"] {
            assert!(parse(text).is_err(), "{text}");
        }
        assert_eq!(parse(r#"{"servers": {}}"#), Ok(Vec::new()));
    }
}
