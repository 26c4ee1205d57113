//! Fixtures for tests that drive the real `gg` binaries: a home of their own with the scripted
//! model as provider ([`GgFixture`]), fixture directories outside the classifier's scratch places
//! ([`fixture_dir`]), and the rule for a test whose prerequisite is missing
//! ([`skip_unless_required`]).
//!
//! Where the binaries are is known only while cargo compiles the gg package's own tests and
//! benches (`env!("CARGO_BIN_EXE_gg")`), so those name it once, in a type implementing [`Bins`]
//! (gg's `tests/support` does), and the fixtures here are generic over it.

use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::{Reply, ScriptedServer};

/// The paths cargo gives only the gg package's own integration tests and benches, named once
/// there by a type that implements this: `impl Bins for GgBins { const GG: &str =
/// env!("CARGO_BIN_EXE_gg"); … }`.
pub trait Bins {
    /// The `gg` binary under test.
    const GG: &'static str;
    /// The `ggd` launcher beside it.
    const GGD: &'static str;
    /// `CARGO_TARGET_TMPDIR`: a directory inside the target directory for tests' files.
    const TARGET_TMPDIR: &'static str;
}

/// Where fixtures live: outside the classifier's scratch directories, `/tmp` and `$TMPDIR`,
/// where writes are allowed (and which the sandbox replaces with a private tmpfs), so tests of
/// the "outside the working directory" rules see what a user sees. `target_tmpdir` (the target
/// directory's `tmp`) unless the checkout itself lies in a scratch directory (CI may clone
/// anywhere); then `/var/tmp/gg-tests`.
pub fn fixture_base(target_tmpdir: &Path) -> PathBuf {
    let canonical =
        std::fs::canonicalize(target_tmpdir).unwrap_or_else(|_| target_tmpdir.to_path_buf());
    let under_scratch = std::iter::once(PathBuf::from("/tmp"))
        .chain(std::env::var_os("TMPDIR").map(PathBuf::from))
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        .any(|scratch| canonical.starts_with(scratch));
    if under_scratch {
        PathBuf::from("/var/tmp/gg-tests")
    } else {
        canonical
    }
}

/// A new temporary directory under [`fixture_base`] for test fixtures (working directories,
/// temporary homes).
pub fn fixture_dir(target_tmpdir: &Path) -> tempfile::TempDir {
    let base = fixture_base(target_tmpdir);
    std::fs::create_dir_all(&base).expect("fixture base directory");
    tempfile::tempdir_in(&base).expect("fixture directory")
}

/// Runs the real `gg ARGS… -p go` in `fx` with `env` added, the scripted model calling bash
/// once per script (each marked `"writes": true` when `writes`), then ending the turn. Returns
/// gg's output and the tool results it sent back.
pub fn run_bash_calls<B: Bins>(
    fx: &GgFixture<B>,
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
pub fn git(dir: &Path, args: &[&str]) {
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
pub struct GgFixture<B: Bins> {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub repo: PathBuf,
    pub sessions: PathBuf,
    bins: PhantomData<B>,
}

impl<B: Bins> GgFixture<B> {
    /// The person's `git` run in `dir` after a session, as they would run it (status, and a
    /// commit where asked), with the fixture's home and no system configuration; whatever a
    /// planted hook or fsmonitor does shows on the host. Its own result is not the point.
    pub fn host_git(&self, dir: &Path, args: &[&str]) {
        let _ = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .output()
            .expect("git");
    }

    pub fn new(server: &ScriptedServer, extra: Value, repo: &str) -> GgFixture<B> {
        let tmp = fixture_dir(Path::new(B::TARGET_TMPDIR));
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
            bins: PhantomData,
        }
    }

    /// `gg` in the repository with nothing of the test's environment but `PATH`, and no terminal.
    pub fn gg(&self) -> std::process::Command {
        let mut cmd = self.command(B::GG);
        cmd.stdin(std::process::Stdio::null());
        cmd
    }

    /// `ggd` in the repository with nothing of the test's environment but `PATH`; its standard
    /// streams are the caller's to set.
    pub fn ggd(&self) -> std::process::Command {
        self.command(B::GGD)
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

/// A home with a repository in it (`home/repo`) and a session directory, all under
/// [`fixture_dir`], for the real `gg` configured by its environment alone: no config file, the
/// scripted server given to each command as `OPENAI_BASE_URL` (what the command-line tests check
/// start-up, flags and errors with).
pub struct GgHome<B: Bins> {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub repo: PathBuf,
    pub sessions: PathBuf,
    bins: PhantomData<B>,
}

impl<B: Bins> Default for GgHome<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: Bins> GgHome<B> {
    pub fn new() -> GgHome<B> {
        // Outside /tmp: /tmp is a scratch directory, where the classifier allows writes.
        let tmp = fixture_dir(Path::new(B::TARGET_TMPDIR));
        let home = tmp.path().join("home");
        let repo = home.join("repo");
        std::fs::create_dir_all(&repo).expect("repo");
        GgHome {
            home: home.canonicalize().expect("home"),
            repo: repo.canonicalize().expect("repo"),
            sessions: tmp.path().join("sessions"),
            tmp,
            bins: PhantomData,
        }
    }

    /// `gg` in the repository with `server` as its model, nothing else of the test's environment
    /// but `PATH`, and no terminal.
    pub fn gg(&self, server: &ScriptedServer) -> std::process::Command {
        let mut cmd = std::process::Command::new(B::GG);
        cmd.current_dir(&self.repo)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("OPENAI_API_KEY", "sk-test")
            .env("OPENAI_BASE_URL", server.base_url())
            .env("GG_SESSION_DIR", &self.sessions)
            .stdin(std::process::Stdio::null());
        cmd
    }
}

/// Every file below `dir`, directories walked depth first; none when `dir` does not exist.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The session files (`*.jsonl`) below `dir` ([`files_under`]).
pub fn session_files(dir: &Path) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|x| x == "jsonl"))
        .collect()
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
