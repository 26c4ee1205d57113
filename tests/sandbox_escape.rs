//! Escape tests: every attack of the sandbox design notes (§7), tried for real through
//! `gg sandbox --backend <level>`, with the effect checked on the host afterwards.
//!
//! Each available level runs the whole table. A level this machine does not offer is reported as
//! `skipped: <level>: <reason>`; set `GG_REQUIRE_SANDBOX_LEVELS=bwrap,landlock` (meant for CI) to turn
//! such a skip into a failure. Attacks that a level is documented not to stop (see
//! docs/_sandbox.md) are listed as `gap` for that level and are reported, not asserted.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod sandbox_support;

use sandbox_support::*;

#[test]
fn escape_suite_bwrap() {
    run_suite("bwrap");
}

#[test]
fn escape_suite_landlock() {
    run_suite("landlock");
}

#[test]
fn backend_none_announces_itself_on_the_first_line() {
    let fx = Fixture::new();
    let out = fx.gg(&["--backend", "none"], "echo hello", &[]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let first = out.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("[gg: sandbox unavailable, running unsandboxed: ")
            && first.contains("backend none"),
        "first stderr line: {first:?}"
    );
    assert_eq!(out.stdout, "hello\n");
}

#[test]
fn explain_prints_level_and_policy_json() {
    let fx = Fixture::new();
    let out = fx.gg(
        &["--backend", "none", "--network", "off", "--explain"],
        "true",
        &[],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let json_end = out.stderr.rfind('}').expect("json on stderr");
    let v: serde_json::Value = serde_json::from_str(&out.stderr[..=json_end]).expect("valid json");
    assert_eq!(v["level"], "none");
    assert_eq!(v["policy"]["network"], "off");
    assert!(
        v["policy"]["deny_read"]
            .as_array()
            .is_some_and(|a| !a.is_empty()),
        "{v}"
    );
}

#[test]
fn usage_errors_exit_2() {
    let fx = Fixture::new();
    for args in [
        vec!["--backend", "chroot"],
        vec!["--network", "maybe"],
        vec!["--deny-read", "/definitely/not/here"],
        vec!["--writable", "/definitely/not/here"],
    ] {
        let out = fx.gg(&args, "true", &[]);
        assert_eq!(out.code, Some(2), "{args:?}: {out:?}");
    }
}

/// T16 would pass vacuously on a kernel where TIOCSTI is disabled: check that it works bare here.
#[test]
fn tiocsti_control_works_without_the_sandbox() {
    let legacy = std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti").unwrap_or_default();
    if legacy.trim() != "1" {
        println!("skipped: TIOCSTI is disabled by this kernel (dev.tty.legacy_tiocsti={legacy:?})");
        return;
    }
    let fx = Fixture::new();
    let script = "\"$PY\" -c 'import fcntl,termios; fcntl.ioctl(0, termios.TIOCSTI, b\"#\")' && echo INJECTED || echo blocked";
    let out = fx.gg_launch(Launch::Pty, &["--backend", "none"], script, &[]);
    assert!(out.stdout.contains("INJECTED"), "{out:?}");
}

fn available_levels() -> Vec<&'static str> {
    ["bwrap", "landlock"]
        .into_iter()
        .filter(|l| match level_available(l) {
            Ok(()) => true,
            Err(reason) => {
                println!("skipped: {l}: {reason}");
                false
            }
        })
        .collect()
}

/// The usual case in tests and temp checkouts: the working directory under the private /tmp.
#[test]
fn workdir_under_tmp_is_usable() {
    for level in available_levels() {
        let fx = Fixture::new_in(&std::env::temp_dir());
        let out = fx.gg(
            &["--backend", level],
            "echo ok > made && cat made && git status --short | wc -l",
            &[],
        );
        assert_eq!(out.code, Some(0), "{level}: {out:?}");
        assert_eq!(fx.read("w/made").as_deref(), Some("ok\n"), "{level}");
    }
}

#[test]
fn writable_flag_adds_a_root_and_deny_read_flag_hides() {
    for level in available_levels() {
        let fx = Fixture::new();
        std::fs::write(fx.o.join("secret.txt"), "TOP-SECRET\n").unwrap();
        let o = fx.o.to_string_lossy().into_owned();
        let secret = fx.o.join("secret.txt").to_string_lossy().into_owned();
        let out = fx.gg(
            &["--backend", level, "--writable", &o, "--deny-read", &secret],
            "echo extra > \"$O/extra\"; cat \"$O/secret.txt\"",
            &[],
        );
        assert_eq!(
            fx.read("o/extra").as_deref(),
            Some("extra\n"),
            "{level}: {out:?}"
        );
        if level == "bwrap" {
            assert!(!out.stdout.contains("TOP-SECRET"), "{level}: {out:?}");
        } else {
            println!("gap   {level}: --deny-read is not enforced without bubblewrap (documented)");
        }
    }
}

#[test]
fn worktree_pointer_and_its_repository_are_protected() {
    let fx = Fixture::new();
    let git = |args: &[&str], dir: &std::path::Path| {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@e"])
            .args(args)
            .current_dir(dir)
            .env("HOME", &fx.home)
            .output()
            .unwrap();
        assert!(ok.status.success(), "{ok:?}");
    };
    git(&["commit", "-q", "--allow-empty", "-m", "init"], &fx.w);
    git(&["worktree", "add", "-q", "../wt"], &fx.w);
    let wt = fx.base.join("wt");
    let pointer = std::fs::read_to_string(wt.join(".git")).unwrap();
    let w = fx.w.to_string_lossy().into_owned();
    for level in available_levels() {
        let mut cmd = std::process::Command::new(GG);
        cmd.args(["sandbox", "--backend", level, "--writable", &w, "--", "sh", "-c"])
            .arg("git -c user.name=t -c user.email=t@e commit -q --allow-empty -m in-sandbox && echo COMMITTED; \
                  echo 'gitdir: /evil' > .git; echo evil > \"$W/.git/hooks/post-checkout\"")
            .current_dir(&wt)
            .env("HOME", &fx.home)
            .env("W", &fx.w);
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("COMMITTED"), "{level}: {out:?}");
        if level == "bwrap" {
            assert_eq!(
                std::fs::read_to_string(wt.join(".git")).unwrap(),
                pointer,
                "{level}"
            );
            assert!(!fx.w.join(".git/hooks/post-checkout").exists(), "{level}");
        } else {
            println!("gap   {level}: git carve-outs need bubblewrap (documented)");
            std::fs::write(wt.join(".git"), &pointer).unwrap();
        }
    }
}

#[test]
fn symlinked_hooks_directory_stays_read_only() {
    let fx = Fixture::new();
    std::fs::remove_dir_all(fx.w.join(".git/hooks")).unwrap();
    std::fs::create_dir(fx.w.join("myhooks")).unwrap();
    std::os::unix::fs::symlink("../myhooks", fx.w.join(".git/hooks")).unwrap();
    if available_levels().contains(&"bwrap") {
        let out = fx.gg(
            &["--backend", "bwrap"],
            "echo evil > .git/hooks/pre-commit; echo ran",
            &[],
        );
        assert!(out.stdout.contains("ran"), "{out:?}");
        assert!(!fx.w.join("myhooks/pre-commit").exists(), "{out:?}");
    }
}

/// Killing gg (e.g. the agent dies) takes the whole sandboxed tree down, detached jobs included.
#[test]
fn killing_gg_kills_the_sandboxed_tree() {
    for level in available_levels() {
        let fx = Fixture::new();
        let mut child = std::process::Command::new(GG)
            .args(["sandbox", "--backend", level, "--", "sh", "-c"])
            .arg("(setsid sh -c 'sleep 2; touch \"$W/late\"' &); sleep 30")
            .current_dir(&fx.w)
            .env("W", &fx.w)
            .env("HOME", &fx.home)
            .stdin(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(500));
        child.kill().unwrap();
        child.wait().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(3000));
        assert!(
            !fx.w.join("late").exists(),
            "{level}: a detached job survived gg"
        );
    }
}

/// The checks are not vacuous: without a sandbox the attacks succeed and the checks say so.
#[test]
fn checks_detect_escapes_without_a_sandbox() {
    let vacuous = sandbox_support::unsandboxed_passes();
    println!("attack checks that pass even unsandboxed: {vacuous:?}");
    assert!(
        vacuous.is_empty(),
        "checks that cannot fail here: {vacuous:?}"
    );
}
