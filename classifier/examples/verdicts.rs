//! Reads NUL-separated commands from stdin and prints one JSON verdict per line, classified in
//! a context built for the current directory much as `gg classify` builds it (home, `/tmp`,
//! the protected trees of `sandbox::protected::PROTECTED_IN_ROOT`, the repository's git config,
//! the nested-repository list and its links, the credential stores).
//!
//! Run: `cargo run --release -p classifier --example verdicts < cmds.bin > verdicts.jsonl`.
//!
//! Why it exists: the library's verdicts can be compared byte for byte between two trees, and
//! the library profiled (`perf record`) in a realistic context, without a release build of gg
//! (minutes on the 2-core machine). It is not gg: gg's context has more (policy rules, linked
//! placeholders, included configs, repository programs, secret files), so gg's own output stays
//! the reference for end-to-end checks.
//!
//! `GG_VERDICTS_ROUNDS=N` classifies the input N times and prints only the last round (for
//! profiling); `GG_VERDICTS_TIMES=1` prints each distinct command's time instead, slowest
//! first; `GG_VERDICTS_NO_NESTED=1` leaves `nested_git` out.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a tool: failing loudly is the point

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use classifier::{Context, GitConfig, Protected, classify};

fn main() {
    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input).unwrap();
    let commands: Vec<String> = input
        .split(|&b| b == 0)
        .filter(|c| !c.is_empty())
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    let ctx = context(&std::env::current_dir().unwrap());
    let rounds: usize = std::env::var("GG_VERDICTS_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1)
        .max(1);
    if std::env::var_os("GG_VERDICTS_TIMES").is_some() {
        // Each distinct command's time (the fastest of `rounds` runs), slowest first, instead
        // of the verdicts: where a set's time goes.
        let mut seen = std::collections::BTreeMap::new();
        for command in &commands {
            seen.entry(command.as_str()).or_insert(u128::MAX);
        }
        for _ in 0..rounds {
            for (command, best) in seen.iter_mut() {
                let started = std::time::Instant::now();
                std::hint::black_box(classify(command, &ctx).ok());
                *best = (*best).min(started.elapsed().as_nanos());
            }
        }
        let mut times: Vec<(u128, &str)> = seen.into_iter().map(|(c, t)| (t, c)).collect();
        times.sort_by(|a, b| b.cmp(a));
        let total: u128 = times.iter().map(|t| t.0).sum();
        println!(
            "total {} µs over {} distinct commands",
            total / 1000,
            times.len()
        );
        for (t, c) in times {
            println!(
                "{:>8} ns  {}",
                t,
                c.escape_debug()
                    .to_string()
                    .chars()
                    .take(120)
                    .collect::<String>()
            );
        }
        return;
    }
    for _ in 1..rounds {
        for command in &commands {
            std::hint::black_box(classify(command, &ctx).ok());
        }
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for command in &commands {
        let line = match classify(command, &ctx) {
            Ok(verdict) => serde_json::json!({ "command": command, "verdict": verdict }),
            Err(e) => serde_json::json!({ "command": command, "error": e.to_string() }),
        };
        serde_json::to_writer(&mut out, &line).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
}

/// The context for `cwd`, after `tools::security::classifier_context` (a subset: see the top).
fn context(cwd: &Path) -> Context {
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/".into()));
    let git_config = cwd
        .ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        .and_then(git_dir)
        .map(|dir| {
            GitConfig::load_repository(&dir, Some(&home), |p| std::fs::read_to_string(p).ok())
        })
        .unwrap_or_default();
    let nested = if std::env::var_os("GG_VERDICTS_NO_NESTED").is_some() {
        None
    } else {
        nested_git(cwd, 2_000)
    };
    let links = nested
        .as_deref()
        .map(|places| {
            places
                .iter()
                .filter_map(|place| {
                    let target = std::fs::read_link(place).ok()?;
                    Some((
                        classifier::normalize_path(place),
                        classifier::normalize_path(&place.parent()?.join(target)),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let protected = sandbox::protected::PROTECTED_IN_ROOT
        .iter()
        .map(|entry| {
            let path = cwd.join(entry.name);
            let agent_area = cwd.join(sandbox::protected::AGENT_AREA);
            Protected {
                except: if agent_area.starts_with(&path) {
                    vec![agent_area]
                } else {
                    Vec::new()
                },
                path,
                why: entry.why.to_string(),
                anywhere: entry.anywhere,
            }
        })
        .collect();
    Context {
        cwd: cwd.to_path_buf(),
        home,
        scratch_dirs: vec!["/tmp".into()],
        git_config,
        protected,
        links,
        nested_git: nested,
        home_credentials: sandbox::protected::DENY_READ_IN_HOME,
        ..Context::default()
    }
}

fn git_dir(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    if dot_git.metadata().ok()?.is_dir() {
        return Some(dot_git);
    }
    let pointer = std::fs::read_to_string(&dot_git).ok()?;
    let target = pointer
        .lines()
        .find_map(|l| l.strip_prefix("gitdir:"))?
        .trim();
    Some(root.join(target))
}

/// `tools::security::nested_git`'s walk (breadth first, `limit` entries read, the rest listed
/// as unread), so the list is as long as gg's in the same directory.
fn nested_git(cwd: &Path, limit: usize) -> Option<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut queue = VecDeque::from([cwd.to_path_buf()]);
    let mut read = 0usize;
    while let Some(dir) = queue.pop_front() {
        if read >= limit {
            found.push(dir);
            found.extend(queue.drain(..));
            break;
        }
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(_) if dir == cwd => return None,
            Err(_) => {
                found.push(dir);
                continue;
            }
        };
        let mut complete = true;
        for entry in entries {
            if read >= limit {
                complete = false;
                break;
            }
            let Ok(entry) = entry else {
                complete = false;
                continue;
            };
            read += 1;
            let name = entry.file_name();
            let Ok(kind) = entry.file_type() else {
                found.push(entry.path());
                continue;
            };
            if dir != cwd && (name == ".git" || name == "HEAD") {
                found.push(dir.clone());
                queue.retain(|q| !q.starts_with(&dir));
                complete = true;
                break;
            }
            if name == ".git" {
                continue;
            }
            if kind.is_symlink() {
                found.push(entry.path());
            } else if kind.is_dir() {
                queue.push_back(entry.path());
            }
        }
        if !complete && !found.contains(&dir) {
            found.push(dir);
        }
        if found.len() > 4_000 {
            return None;
        }
    }
    Some(found)
}
