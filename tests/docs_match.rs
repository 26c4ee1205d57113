//! What the README and docs/usage.md show a newcomer, checked against the real `gg`, so the text
//! cannot go stale: the README's `gg classify` example and its output, the command list of
//! docs/usage.md against `gg --help`, the install text naming the helper, and the places a
//! newcomer meets the API key (`gg --help`, the missing-key error) and the manual page.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};

fn doc(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(name)).unwrap()
}

/// `gg` with nothing of the test's environment but `PATH` (the binary's directory first), `HOME`
/// and a working directory of its own.
fn gg_command(program: &str, home: &Path, cwd: &Path) -> Command {
    let bin = Path::new(env!("CARGO_BIN_EXE_gg")).parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let mut cmd = Command::new(program);
    cmd.current_dir(cwd)
        .env_clear()
        .env("PATH", path)
        .env("HOME", home)
        .stdin(Stdio::null());
    cmd
}

#[test]
fn the_readme_classify_example_prints_what_the_readme_shows() {
    let readme = doc("README.md");
    let start = readme
        .find("```console\n$ gg classify ")
        .expect("the README's gg classify example");
    let block = &readme[start + "```console\n".len()..];
    let block = &block[..block.find("```").unwrap()];
    let (command_line, shown) = block.split_once('\n').unwrap();
    let command_line = command_line.strip_prefix("$ ").unwrap();
    // The README says the example runs with HOME=/home/you.
    assert!(readme.contains("(With `HOME=/home/you`;"));
    let fx = support::fixture_dir();
    let out = gg_command("sh", Path::new("/home/you"), fx.path())
        .args(["-c", command_line])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        shown.trim_end(),
        "the README's gg classify example is stale"
    );
}

/// The commands `gg --help` lists.
fn help_commands() -> Vec<String> {
    let fx = support::fixture_dir();
    let out = gg_command(env!("CARGO_BIN_EXE_gg"), fx.path(), fx.path())
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let section = help.split("Commands:\n").nth(1).unwrap();
    section
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn usage_lists_every_command_of_gg_help() {
    let usage = doc("docs/usage.md");
    let start = usage
        .find("whether it is a command (")
        .expect("usage.md's command list");
    let list = &usage[start + "whether it is a command (".len()..];
    let list = &list[..list.find(')').unwrap()];
    let listed: Vec<String> = list
        .split(',')
        .map(|w| w.trim().trim_matches('`').to_string())
        .collect();
    assert_eq!(listed, help_commands(), "docs/usage.md's command list");
}

#[test]
fn the_install_text_names_the_helper() {
    for name in ["README.md", "docs/usage.md"] {
        let text = doc(name);
        let install = text
            .lines()
            // The install line that says what it installs (the README's first one leads on to
            // a sentence that does).
            .find(|l| l.starts_with("cargo install --path . --locked ") && l.contains(" # "))
            .unwrap_or_else(|| panic!("{name}: no install line"));
        assert!(install.contains("gg-sandbox-helper"), "{name}: {install}");
    }
}

#[test]
fn a_newcomer_is_told_where_the_api_key_goes() {
    let fx = support::fixture_dir();
    let help = gg_command(env!("CARGO_BIN_EXE_gg"), fx.path(), fx.path())
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(help.contains("OPENAI_API_KEY"), "{help}");
    assert!(help.contains("--api-key-file"), "{help}");
    let out = gg_command(env!("CARGO_BIN_EXE_gg"), fx.path(), fx.path())
        .args(["-p", "hello"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "missing API key: set OPENAI_API_KEY or pass --api-key-file FILE (or --api-key KEY)"
        ),
        "{out:?}"
    );
}

#[test]
fn the_manual_page_names_gg_once() {
    let fx = support::fixture_dir();
    let out = gg_command(env!("CARGO_BIN_EXE_gg"), fx.path(), fx.path())
        .arg("man")
        .output()
        .unwrap();
    let page = String::from_utf8(out.stdout).unwrap();
    let name = page
        .lines()
        .skip_while(|l| *l != ".SH NAME")
        .nth(1)
        .unwrap();
    assert_eq!(
        name,
        "gg \\- A security\\-hardened terminal AI coding agent"
    );
}
