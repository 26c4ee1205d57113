//! Fixtures of gg's end-to-end tests: the real `gg` in a home of its own ([`GgFixture`], on a pty
//! with [`gg_on_pty`]), fixture directories outside the classifier's scratch places, and the rule
//! for a test whose prerequisite is missing ([`skip_unless_required`]). The scripted model and the
//! other loopback servers come from the `testkit` crate, re-exported here.
//!
//! Include it from a test crate with `mod support;` (or
//! `#[path = "support/mod.rs"] mod support;`).
#![allow(dead_code)] // Each test crate uses a different part of this module.

pub use testkit::*;

use serde_json::{Value, json};

/// A temporary directory for test fixtures (working directories, temporary homes) that lies
/// outside the classifier's scratch directories, `/tmp` and `$TMPDIR`: writes there are allowed,
/// so tests of the "outside the working directory" rules would not see what a user sees. The
/// cargo target directory is used unless the checkout itself lies in a scratch directory (CI may
/// clone anywhere); then `/var/tmp/gg-tests`.
pub fn fixture_dir() -> tempfile::TempDir {
    let target = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let canonical = std::fs::canonicalize(target).unwrap_or_else(|_| target.to_path_buf());
    let scratch: Vec<std::path::PathBuf> = std::iter::once("/tmp".into())
        .chain(std::env::var_os("TMPDIR").map(std::path::PathBuf::from))
        .map(|p: std::path::PathBuf| std::fs::canonicalize(&p).unwrap_or(p))
        .collect();
    let base = if scratch.iter().any(|s| canonical.starts_with(s)) {
        std::path::PathBuf::from("/var/tmp/gg-tests")
    } else {
        canonical
    };
    std::fs::create_dir_all(&base).expect("fixture base directory");
    tempfile::tempdir_in(&base).expect("fixture directory")
}

/// Runs the real `gg ARGS… -p go` in `fx` with `env` added, the scripted model calling bash
/// once per script (each marked `"writes": true` when `writes`), then ending the turn. Returns
/// gg's output and the tool results it sent back.
pub fn run_bash_calls(
    fx: &GgFixture,
    server: &ScriptedServer,
    env: &[(&str, &str)],
    writes: bool,
    scripts: &[&str],
    args: &[&str],
) -> (std::process::Output, Vec<String>) {
    for (i, script) in scripts.iter().enumerate() {
        let mut call = json!({ "command": script });
        if writes {
            call["writes"] = json!(true);
        }
        server.push(Reply::tool_call(
            &format!("c{i}"),
            "bash",
            &call.to_string(),
        ));
    }
    server.push(Reply::text(&["done"]));
    let mut cmd = fx.gg();
    cmd.envs(env.iter().copied());
    let out = cmd.args(args).args(["-p", "go"]).output().expect("gg runs");
    (out, server.tool_results())
}

/// Runs `git args…` in `dir` with a throw-away identity, and fails the test when git fails.
pub fn git(dir: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?} failed in {}", dir.display());
}

/// A place to run the real `gg` against a scripted server: a home whose `~/.gg/config.json` names
/// the server as provider `local:m` (plus the keys of `extra`), a repository at `repo` inside the
/// fixture (`"home/repo"` or `"repo"`), and a session directory, all under [`fixture_dir`].
pub struct GgFixture {
    pub tmp: tempfile::TempDir,
    pub home: std::path::PathBuf,
    pub repo: std::path::PathBuf,
    pub sessions: std::path::PathBuf,
}

impl GgFixture {
    pub fn new(server: &ScriptedServer, extra: Value, repo: &str) -> GgFixture {
        let tmp = fixture_dir();
        let home = tmp.path().join("home");
        let repo = tmp.path().join(repo);
        std::fs::create_dir_all(&repo).expect("repo");
        std::fs::create_dir_all(home.join(".gg")).expect("~/.gg");
        let mut config = json!({
            "default": "local:m",
            "providers": {"local": {"baseURL": server.base_url(), "apiKey": "sk-test", "models": ["m"]}},
        });
        if let (Some(config), Value::Object(extra)) = (config.as_object_mut(), extra) {
            config.extend(extra);
        }
        std::fs::write(home.join(".gg/config.json"), config.to_string()).expect("config");
        GgFixture {
            home: home.canonicalize().expect("home"),
            repo: repo.canonicalize().expect("repo"),
            sessions: tmp.path().join("sessions"),
            tmp,
        }
    }

    /// `gg` in the repository with nothing of the test's environment but `PATH`, and no terminal.
    pub fn gg(&self) -> std::process::Command {
        let mut cmd = self.command(env!("CARGO_BIN_EXE_gg"));
        cmd.stdin(std::process::Stdio::null());
        cmd
    }

    /// `ggd` in the repository with nothing of the test's environment but `PATH`; its standard
    /// streams are the caller's to set.
    #[allow(dead_code)] // not every test binary starts a daemon
    pub fn ggd(&self) -> std::process::Command {
        self.command(env!("CARGO_BIN_EXE_ggd"))
    }

    fn command(&self, program: &str) -> std::process::Command {
        let mut cmd = std::process::Command::new(program);
        cmd.current_dir(&self.repo)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("GG_SESSION_DIR", &self.sessions);
        cmd
    }
}

/// Starts the real `gg` with `args` on a new pseudo-terminal that is its controlling terminal
/// (`setsid -c`), in `repo`, with `home` as HOME, sessions under `home/sessions`, no colour, and
/// the scripted `server` as its model, and `env` added. Every byte gg writes to the terminal is
/// passed to `on_output` from a reader thread. Returns the master side (write to it to type) and
/// the child.
pub fn gg_on_pty(
    home: &std::path::Path,
    repo: &std::path::Path,
    server: &ScriptedServer,
    args: &[&str],
    env: &[(&str, &str)],
    mut on_output: impl FnMut(&[u8]) + Send + 'static,
) -> (std::fs::File, std::process::Child) {
    use std::io::Read;
    use std::process::{Command, Stdio};

    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let slave = std::fs::File::options()
        .read(true)
        .write(true)
        .open(name.to_str().unwrap())
        .unwrap();
    let child = Command::new("setsid")
        .arg("-c")
        .arg(env!("CARGO_BIN_EXE_gg"))
        .args(args)
        .current_dir(repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("TERM", "dumb")
        .env("NO_COLOR", "1")
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", server.base_url())
        .env("GG_SESSION_DIR", home.join("sessions"))
        .envs(env.iter().copied())
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let master = std::fs::File::from(master);
    let mut reader = master.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            on_output(&buf[..n]);
        }
    });
    (master, child)
}

/// Whether Debian's `chromium` is on `PATH` for the browser tests; when it is not, fails the test
/// unless skipping was asked for ([`skip_unless_required`]).
pub fn chromium_present() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join("chromium").is_file()));
    if !found {
        skip_unless_required("GG_REQUIRE_BROWSER", "chromium is not on PATH");
    }
    found
}

/// The variable that lets the README's test command run on a machine without some of the
/// prerequisites the README lists: each test that needs a missing one then prints a `SKIP` line
/// and passes, instead of failing.
pub const ALLOW_SKIP: &str = "GG_ALLOW_SKIP";

/// A test that cannot do its work here because a prerequisite is missing. By default that is a
/// failure: the README's test command is meant to run every test, and a skipped test reported as
/// "ok" would say something untrue. Run with `GG_ALLOW_SKIP=1` and it is a `SKIP <test>:
/// <reason>` line instead, and the caller returns; `require_var=1` (what `.ci/run` sets for what
/// it installs) keeps it a failure even then.
///
/// The line goes to the real standard error, not through `eprintln!`: the test harness captures
/// that and shows it only for a failing test. Written this way, `SKIP <test>: <reason>` stands in
/// `cargo test`'s own output next to the result.
pub fn skip_unless_required(require_var: &str, reason: &str) {
    let required = std::env::var(require_var).is_ok_and(|v| v == "1");
    if required || std::env::var_os(ALLOW_SKIP).is_none() {
        panic!(
            "{reason}: install it (README, \"Prerequisites\") or run with {ALLOW_SKIP}=1 to skip \
             the tests that need it{}",
            if required {
                format!(" ({require_var}=1 makes this a failure regardless)")
            } else {
                String::new()
            }
        );
    }
    say_skipped(&format!("{reason} ({ALLOW_SKIP} is set)"));
}

/// A `SKIP <test>: <reason>` line on the real standard error (see [`skip_unless_required`]), for a
/// skip that no installation can lift (a kernel setting, an opt-in server).
pub fn say_skipped(reason: &str) {
    use std::io::Write;
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let _ = writeln!(std::io::stderr(), "SKIP {test}: {reason}");
}
