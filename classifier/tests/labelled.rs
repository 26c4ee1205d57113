//! The labelled corpus: `tests/labelled/*.jsonl`, one family of commands per file.
//!
//! Each non-empty line that does not start with `#` is one case:
//!
//! ```json
//! {"cmd": "cat /proc/$PPID/environ", "expect": "not-read-only", "why": "another process's environment holds secrets"}
//! ```
//!
//! `expect` is `read-only`, `normal`, `dangerous` (exact class) or `not-read-only` (normal or
//! dangerous: the case only pins that the command is never read-only). `why` justifies the label
//! and is required. Context is the same as `table.rs`: cwd `/home/u/proj`, home `/home/u`,
//! scratch `/tmp`, plus the protected trees gg always passes: `/home/u/proj/.git` and
//! `/home/u/proj/.gg` except `/home/u/proj/.gg/agent`. A case with `"scanned": true` also has
//! the caller's look below the project ([`Context::nested_git`], see [`NESTED_GIT`]); without it
//! the caller did not look. Every case is checked, and all failures are reported together, per
//! file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::path::Path;

use classifier::{Class, Context, Protected, classify};
use serde_json::Value;

fn ctx() -> Context {
    Context {
        cwd: "/home/u/proj".into(),
        home: "/home/u".into(),
        scratch_dirs: vec!["/tmp".into(), "/var/tmp/u".into()],
        protected: vec![
            Protected {
                path: "/home/u/proj/.git".into(),
                except: Vec::new(),
                why: "the repository's git data: hooks and config run programs".into(),
                anywhere: true,
            },
            Protected {
                path: "/home/u/proj/.gg".into(),
                except: vec!["/home/u/proj/.gg/agent".into()],
                why: "gg's own settings".into(),
                anywhere: true,
            },
        ],
        home_credentials: sandbox::protected::DENY_READ_IN_HOME,
        ..Context::default()
    }
}

/// What the caller found below the project for `"scanned": true` cases: `vendor/lib` holds a
/// nested repository, `bare` looks like a bare repository (it has a `HEAD`), `link` is a
/// symbolic link and `node_modules` was not read (the scan's limit).
const NESTED_GIT: &[&str] = &[
    "/home/u/proj/vendor/lib",
    "/home/u/proj/bare",
    "/home/u/proj/link",
    "/home/u/proj/node_modules",
];

/// One labelled case, as read from a corpus line.
struct Case {
    cmd: String,
    expect: String,
    scanned: bool,
}

fn parse_line(file: &str, number: usize, line: &str) -> Result<Case, String> {
    let value: Value =
        serde_json::from_str(line).map_err(|e| format!("{file}:{number}: not JSON: {e}"))?;
    let field = |name: &str| {
        value
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("{file}:{number}: missing string field \"{name}\""))
    };
    let case = Case {
        cmd: field("cmd")?,
        expect: field("expect")?,
        scanned: value
            .get("scanned")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    };
    if field("why")?.trim().is_empty() {
        return Err(format!("{file}:{number}: \"why\" is empty"));
    }
    if !matches!(
        case.expect.as_str(),
        "read-only" | "normal" | "dangerous" | "not-read-only"
    ) {
        return Err(format!("{file}:{number}: unknown expect {:?}", case.expect));
    }
    Ok(case)
}

fn satisfied(expect: &str, class: Class) -> bool {
    match expect {
        "read-only" => class == Class::ReadOnly,
        "normal" => class == Class::Normal,
        "dangerous" => class == Class::Dangerous,
        _ => class != Class::ReadOnly,
    }
}

#[test]
fn every_labelled_case_gets_its_label() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/labelled");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/labelled exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let ctx = ctx();
    let scanned = Context {
        nested_git: Some(NESTED_GIT.iter().map(Into::into).collect()),
        ..ctx.clone()
    };
    let mut failures = Vec::new();
    let mut total = 0;
    for path in &files {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let text = std::fs::read_to_string(path).expect("corpus file is UTF-8");
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let case = match parse_line(&name, index + 1, line) {
                Ok(case) => case,
                Err(e) => {
                    failures.push(e);
                    continue;
                }
            };
            total += 1;
            let ctx = if case.scanned { &scanned } else { &ctx };
            match classify(&case.cmd, ctx) {
                Ok(verdict) if satisfied(&case.expect, verdict.class) => {}
                Ok(verdict) => failures.push(format!(
                    "{name}:{}: {:?} expected {}, got {} ({})",
                    index + 1,
                    case.cmd,
                    case.expect,
                    verdict.class.as_str(),
                    verdict
                        .reasons
                        .iter()
                        .map(|r| r.rule.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                Err(e) => {
                    failures.push(format!("{name}:{}: {:?} failed: {e}", index + 1, case.cmd))
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} labelled cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
