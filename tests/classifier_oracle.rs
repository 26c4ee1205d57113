//! The execution oracle (issue: "read-only must mean no effect, proven by execution").
//!
//! Every labelled corpus case and a bounded, deterministic set of grammar-generated commands are
//! classified by the real `gg classify`; each one classified read-only is then run by the real
//! `gg sandbox` in a throw-away tree (see `oracle_support`). A command that changes the work
//! tree, the fake home or the sandbox's `/tmp` is a false-safe; generated ones are shrunk before
//! they are reported. The count is fixed and nothing depends on the machine's speed; the longer
//! run is the `oracle` fuzz target.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::oracle_support;
use crate::support;

use std::path::{Path, PathBuf};

use oracle_support::{Tree, false_safes, generate, shrink};

const GG: &str = env!("CARGO_BIN_EXE_gg");
/// Generated commands per run.
const GENERATED: usize = 192;
/// Candidates tried while shrinking one false-safe.
const SHRINK_BUDGET: usize = 24;
const SEED: [u8; 32] = *b"gg classifier oracle, seed no. 1";

fn corpus() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("classifier/tests/labelled");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let mut commands = Vec::new();
    for file in files {
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            commands.push(value["cmd"].as_str().unwrap().to_string());
        }
    }
    commands
}

fn report(changes: &[oracle_support::Change]) -> String {
    changes
        .iter()
        .map(|c| format!("{:?}\n{}", c.command, c.diff))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_labelled_command_classified_read_only_changes_anything() {
    let dir = support::fixture_dir();
    let tree = Tree::new(dir.path());
    let commands = corpus();
    assert!(
        commands.len() >= 1500,
        "the corpus has {} cases",
        commands.len()
    );
    let (executed, changes) = false_safes(Path::new(GG), &tree, &commands);
    eprintln!(
        "{executed} of {} corpus cases read-only and executed",
        commands.len()
    );
    assert!(
        executed > 100,
        "only {executed} corpus cases were read-only"
    );
    assert!(
        changes.is_empty(),
        "{} of {executed} read-only corpus commands changed the tree:\n{}",
        changes.len(),
        report(&changes)
    );
}

/// Read-only is enforced: every labelled corpus command the classifier calls read-only also runs
/// as the agent runs it (`gg sandbox --read-only`: nothing writable but a private temp
/// directory, no network), and nothing changes on the host, whatever a verdict missed.
#[test]
fn every_read_only_verdict_runs_in_the_enforced_sandbox_without_effect() {
    let dir = support::fixture_dir();
    let tree = Tree::new(dir.path());
    let commands = corpus();
    let read_only = oracle_support::read_only_of(Path::new(GG), &tree, &commands);
    assert!(read_only.len() > 100, "only {} read-only", read_only.len());
    let changed = oracle_support::execute_enforced(Path::new(GG), &tree, &read_only);
    assert!(
        changed.is_empty(),
        "{} read-only commands ran enforced and the host changed:\n{}",
        read_only.len(),
        changed.join("\n")
    );
}

#[test]
fn no_generated_command_classified_read_only_changes_anything() {
    let dir = support::fixture_dir();
    let tree = Tree::new(dir.path());
    let strategy = oracle_support::command();
    let mut trees = generate(&strategy, SEED, GENERATED);
    let commands: Vec<String> = trees.iter().map(|t| t.current()).collect();
    let (executed, changes) = false_safes(Path::new(GG), &tree, &commands);
    eprintln!(
        "{executed} of {} generated commands read-only and executed",
        commands.len()
    );
    if changes.is_empty() {
        // Guard against a generator that only produces commands the classifier refuses: the
        // oracle must actually run something.
        assert!(
            executed > 10,
            "only {executed} generated commands were read-only"
        );
        return;
    }
    let mut shrunk = Vec::new();
    for change in &changes {
        let index = commands.iter().position(|c| *c == change.command).unwrap();
        let fresh = support::fixture_dir();
        let fresh_tree = Tree::new(fresh.path());
        let small = shrink(
            Path::new(GG),
            &fresh_tree,
            trees[index].as_mut(),
            SHRINK_BUDGET,
        );
        shrunk.push(format!(
            "{small:?} (from {:?})\n{}",
            change.command, change.diff
        ));
    }
    panic!(
        "{} of {executed} read-only generated commands changed the tree (add the shrunk form to \
         the labelled corpus):\n{}",
        changes.len(),
        shrunk.join("\n")
    );
}
