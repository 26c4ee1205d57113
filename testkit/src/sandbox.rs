//! Fixtures for the tests of `gg sandbox` and of commands the agent runs confined: a host layout
//! with a working directory, a directory outside it and a fake HOME holding secrets
//! ([`Fixture`]), runs of `gg sandbox` in it ([`Out`], [`Launch`]), and which of the Linux
//! sandbox levels work here ([`available_levels`]), checked against `GG_REQUIRE_SANDBOX_LEVELS`.

use std::ffi::OsString;
use std::io::Read;
use std::marker::PhantomData;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::fixture::{Bins, fixture_base, say_skipped};

/// What a run produced.
#[derive(Debug, Clone)]
pub struct Out {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// How the host starts `gg sandbox`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launch {
    /// Plain child with piped output.
    Plain,
    /// Under a fresh pseudo-terminal (stdin is the pty).
    Pty,
    /// With fd 9 open for appending to `$O/leak` and fd 8 open on the directory `$O`.
    LeakedFds,
}

/// A host layout: working directory W (a git repository), a directory O outside it, and a fake
/// HOME holding secrets.
pub struct Fixture<B: Bins> {
    _base: tempfile::TempDir,
    pub base: PathBuf,
    pub w: PathBuf,
    pub o: PathBuf,
    pub home: PathBuf,
    pub unique: String,
    bins: PhantomData<B>,
}

impl<B: Bins> Default for Fixture<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: Bins> Fixture<B> {
    /// A fixture outside `/tmp` ([`fixture_base`]), so that O stays visible (read-only) inside
    /// the sandbox instead of being hidden by the private `/tmp`. Otherwise a probe that reads or
    /// writes O would "fail" only because O is not there, and prove nothing.
    pub fn new() -> Fixture<B> {
        Fixture::new_in(&fixture_base(Path::new(B::TARGET_TMPDIR)))
    }

    pub fn new_in(dir: &Path) -> Fixture<B> {
        std::fs::create_dir_all(dir).expect("tmp dir");
        let base_dir = tempfile::Builder::new()
            .prefix("sbx-")
            .tempdir_in(dir)
            .expect("tempdir");
        let base = std::fs::canonicalize(base_dir.path()).expect("canonical");
        let w = base.join("w");
        let o = base.join("o");
        let home = base.join("home");
        for d in [
            &w,
            &o,
            &home.join(".ssh"),
            &home.join(".aws"),
            &home.join(".gg"),
        ] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        write(&w.join("file.txt"), "data\n");
        write(&w.join(".bashrc"), "orig\n");
        std::fs::create_dir_all(w.join(".vscode")).expect("mkdir");
        write(&w.join(".vscode/settings.json"), "{}\n");
        write(&o.join("victim"), "orig\n");
        std::fs::set_permissions(o.join("victim"), std::fs::Permissions::from_mode(0o644))
            .expect("chmod");
        write(&o.join("leak"), "");
        write(&home.join(".ssh/id_rsa"), "SECRET-SSH-KEY\n");
        write(&home.join(".aws/credentials"), "SECRET-AWS\n");
        write(
            &home.join(".gg/config.json"),
            "{\"apiKey\":\"SECRET-GG\"}\n",
        );
        let git = Command::new("git")
            .args(["init", "-q", "."])
            .current_dir(&w)
            .env("HOME", &home)
            .status()
            .expect("git init");
        assert!(git.success());
        std::fs::create_dir_all(w.join(".git/hooks")).expect("hooks");
        let unique = base
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        Fixture {
            _base: base_dir,
            base,
            w,
            o,
            home,
            unique,
            bins: PhantomData,
        }
    }

    /// Runs `gg sandbox FLAGS -- sh -c SCRIPT` in W.
    pub fn gg(&self, flags: &[&str], script: &str, env: &[(String, String)]) -> Out {
        self.gg_launch(Launch::Plain, flags, script, env)
    }

    pub fn gg_launch(
        &self,
        launch: Launch,
        flags: &[&str],
        script: &str,
        env: &[(String, String)],
    ) -> Out {
        let mut gg_argv: Vec<OsString> = vec![B::GG.into(), "sandbox".into()];
        gg_argv.extend(flags.iter().map(OsString::from));
        gg_argv.extend(["--".into(), "sh".into(), "-c".into(), script.into()]);
        self.run_host(launch, gg_argv, env)
    }

    /// Runs `argv` on the host in W with the fixture's environment, the way `launch` says.
    pub fn run_host(&self, launch: Launch, argv: Vec<OsString>, env: &[(String, String)]) -> Out {
        let mut cmd = match launch {
            Launch::Plain => {
                let mut c = Command::new(&argv[0]);
                c.args(&argv[1..]);
                c
            }
            Launch::Pty => {
                let mut c = Command::new(python());
                c.args([
                    "-c",
                    "import pty,sys; sys.exit(pty.spawn(sys.argv[1:]) >> 8)",
                ])
                .args(&argv);
                c
            }
            Launch::LeakedFds => {
                let mut c = Command::new("sh");
                c.args(["-c", "exec 9>>\"$O/leak\" 8<\"$O\"; exec \"$@\"", "sh"])
                    .args(&argv);
                c
            }
        };
        cmd.current_dir(&self.w);
        self.host_env(&mut cmd);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("spawn gg");
        wait_with_timeout(child, Duration::from_secs(60))
    }

    /// The environment the table's scripts see: `$HOME` (fake, with secrets), `$W`, `$O`, `$U`
    /// (unique to the fixture), `$PY` (python3), the real `CARGO_HOME` and `RUSTUP_HOME` (so
    /// cargo runs with the fake HOME), and no SSH agent.
    pub fn host_env(&self, cmd: &mut Command) {
        cmd.env("HOME", &self.home)
            .env("W", &self.w)
            .env("O", &self.o)
            .env("U", &self.unique)
            .env("PY", python())
            .env("CARGO_HOME", real_tool_home("CARGO_HOME", ".cargo"))
            .env("RUSTUP_HOME", real_tool_home("RUSTUP_HOME", ".rustup"))
            .env_remove("SSH_AUTH_SOCK");
    }

    pub fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.base.join(rel)).ok()
    }

    pub fn exists(&self, rel: &str) -> bool {
        std::fs::symlink_metadata(self.base.join(rel)).is_ok()
    }
}

fn write(p: &Path, s: &str) {
    std::fs::write(p, s).expect("write fixture");
}

fn wait_with_timeout(mut child: Child, limit: Duration) -> Out {
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stdout.read_to_end(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stdout = String::from_utf8_lossy(&out_t.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_t.join().unwrap_or_default()).into_owned();
    Out {
        code: status.and_then(|s| s.code()),
        stdout,
        stderr,
    }
}

/// The real python3 executable (a pyenv shim would need the real HOME).
pub fn python() -> &'static str {
    static PY: OnceLock<String> = OnceLock::new();
    PY.get_or_init(|| {
        let out = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 is needed by the escape tests");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    })
}

fn real_tool_home(var: &str, dir: &str) -> OsString {
    std::env::var_os(var).unwrap_or_else(|| {
        let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
        PathBuf::from(home).join(dir).into_os_string()
    })
}

/// Whether `level` works here; the reason when it does not.
pub fn level_available<B: Bins>(level: &str) -> Result<(), String> {
    let fx = Fixture::<B>::new();
    let out = fx.gg(&["--backend", level], "true", &[]);
    match out.code {
        Some(0) => Ok(()),
        _ => Err(out.stderr.trim().to_string()),
    }
}

/// Whether `level` must work here (`GG_REQUIRE_SANDBOX_LEVELS`, comma-separated).
pub fn level_required(level: &str) -> bool {
    std::env::var("GG_REQUIRE_SANDBOX_LEVELS")
        .unwrap_or_default()
        .split(',')
        .any(|l| l.trim() == level)
}

/// Whether `level` works here. When it does not and is not required, the test prints a `SKIP`
/// line ([`say_skipped`]); a required level that does not work fails the test.
pub fn usable<B: Bins>(level: &str) -> bool {
    match level_available::<B>(level) {
        Ok(()) => true,
        Err(reason) => {
            assert!(
                !level_required(level),
                "level {level} is required (GG_REQUIRE_SANDBOX_LEVELS) but unavailable: {reason}"
            );
            say_skipped(&format!(
                "sandbox level {level} is unavailable: {reason} (GG_REQUIRE_SANDBOX_LEVELS={level} \
                 makes this a failure)"
            ));
            false
        }
    }
}

/// The Linux levels that work here, each checked against `GG_REQUIRE_SANDBOX_LEVELS`. Every
/// sandbox test iterates over this, so none passes with a required level missing.
pub fn available_levels<B: Bins>() -> Vec<&'static str> {
    ["bwrap", "landlock"]
        .into_iter()
        .filter(|l| usable::<B>(l))
        .collect()
}
