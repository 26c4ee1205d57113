//! Escape tests: every attack of the sandbox design notes (§7), tried for real through
//! `gg sandbox --backend <level>`, with the effect checked on the host afterwards.
//!
//! Each available level runs the whole table. A level this machine does not offer is reported as
//! `skipped: <level>: <reason>`; set `GG_REQUIRE_SANDBOX_LEVELS=bwrap,landlock` (meant for CI) to turn
//! such a skip into a failure. Attacks that a level is documented not to stop (see
//! docs/security-model.md) are listed as `gap` for that level and are reported, not asserted.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::sandbox_support;

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
        // Hiding / would hide everything; an absent path is fine (it stays hidden if it appears).
        vec!["--deny-read", "/"],
        vec!["--deny-read", "/definitely/../not/here"],
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
        crate::support::say_skipped(&format!(
            "TIOCSTI is disabled by this kernel (dev.tty.legacy_tiocsti={legacy:?})"
        ));
        return;
    }
    let fx = Fixture::new();
    let script = "\"$PY\" -c 'import fcntl,termios; fcntl.ioctl(0, termios.TIOCSTI, b\"#\")' && echo INJECTED || echo blocked";
    let out = fx.gg_launch(Launch::Pty, &["--backend", "none"], script, &[]);
    assert!(out.stdout.contains("INJECTED"), "{out:?}");
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
        if level == "landlock" {
            // A deny-read path inside a writable root cannot be hidden by Landlock: refused,
            // naming the level that can, and nothing runs.
            assert_eq!(out.code, Some(2), "{level}: {out:?}");
            assert!(out.stderr.contains("bubblewrap"), "{level}: {out:?}");
            assert_eq!(fx.read("o/extra"), None, "{level}: {out:?}");
        } else {
            assert_eq!(
                fx.read("o/extra").as_deref(),
                Some("extra\n"),
                "{level}: {out:?}"
            );
        }
        assert!(!out.stdout.contains("TOP-SECRET"), "{level}: {out:?}");
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
    if usable("bwrap") {
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

/// Deny-read holds wherever the working directory and the hidden path lie: the working directory
/// under /tmp (the private /tmp is mounted before it is bound), under $HOME (gg started in the
/// home directory still hides ~/.ssh), elsewhere; the hidden path inside the working directory,
/// inside an extra writable root, outside both; a file, a directory, and a path that is absent
/// when the command starts and created by the host while it runs.
#[test]
fn deny_read_holds_across_the_matrix() {
    let levels = available_levels();
    let target_tmp = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    for place in ["tmp", "home", "elsewhere"] {
        let parent = if place == "tmp" {
            std::env::temp_dir()
        } else {
            target_tmp.clone()
        };
        for level in &levels {
            deny_read_case(place, &parent, level);
        }
    }
}

fn deny_read_case(place: &str, parent: &std::path::Path, level: &str) {
    use std::path::PathBuf;
    std::fs::create_dir_all(parent).unwrap();
    let base_dir = tempfile::Builder::new()
        .prefix("sbx-deny-")
        .tempdir_in(parent)
        .unwrap();
    let base = std::fs::canonicalize(base_dir.path()).unwrap();
    let home = base.join("home");
    // In the home case gg runs in the home directory itself.
    let w = if place == "home" {
        home.clone()
    } else {
        base.join("w")
    };
    let x = base.join("x");
    let o = base.join("o");
    for d in [&home.join(".ssh"), &w, &x, &o] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(home.join(".ssh/id_rsa"), "SECRET-HOME-ssh\n").unwrap();
    std::fs::write(w.join("plain.txt"), "PLAIN-OK\n").unwrap();
    let (mut flags, mut files, mut dirs, mut absent) =
        (Vec::new(), "".to_string(), "".to_string(), Vec::new());
    for (tag, root) in [("W", &w), ("X", &x), ("O", &o)] {
        let file = root.join("sec-file");
        std::fs::write(&file, format!("SECRET-{tag}-file\n")).unwrap();
        let dir = root.join("sec-dir");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("key"), format!("SECRET-{tag}-dir\n")).unwrap();
        let gone: PathBuf = root.join("sec-absent");
        for p in [&file, &dir, &gone] {
            if level == "landlock" && tag != "O" {
                // Inside a writable root Landlock cannot hide it: gg refuses the run (checked
                // below), so the rest of the matrix runs without these.
                continue;
            }
            flags.push("--deny-read".to_string());
            flags.push(p.to_string_lossy().into_owned());
        }
        files.push_str(&format!("{} ", file.display()));
        dirs.push_str(&format!("{} ", dir.display()));
        absent.push((tag, gone));
    }
    let absent_list: String = absent
        .iter()
        .map(|(_, p)| format!("{} ", p.display()))
        .collect();
    // The script reads everything, says it is ready, waits for the host to create the absent
    // paths (an event, not a delay), then reads those too.
    let script = "cat plain.txt; cat \"$HOME/.ssh/id_rsa\"; for f in $FILES; do cat \"$f\"; done; \
                  for d in $DIRS; do cat \"$d/key\"; ls \"$d\"; done; touch \"$W/.ready\"; i=0; \
                  while [ ! -e \"$W/.go\" ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i+1)); done; \
                  for d in $ABSENT; do cat \"$d/key\"; done; echo END";
    if level == "landlock" {
        // A deny-read path inside a writable root: refused, naming the level that can hide it,
        // and nothing runs.
        for inside in [w.join("sec-file"), x.join("sec-dir")] {
            let out = std::process::Command::new(GG)
                .args(["sandbox", "--backend", level, "--writable"])
                .arg(&x)
                .arg("--deny-read")
                .arg(&inside)
                .args(["--", "sh", "-c", "cat \"$0\"; echo RAN"])
                .arg(&inside)
                .current_dir(&w)
                .env("HOME", &home)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let (stdout, stderr) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            assert!(!out.status.success(), "{place} {level}: {out:?}");
            assert!(
                stderr.contains("cannot hide") && stderr.contains("bubblewrap"),
                "{place} {level}: {out:?}"
            );
            assert!(
                !stdout.contains("SECRET") && !stdout.contains("RAN"),
                "{place} {level}: {out:?}"
            );
        }
        if place == "home" {
            // gg started in the home directory: ~/.ssh lies inside the working directory.
            let out = std::process::Command::new(GG)
                .args(["sandbox", "--backend", level, "--", "cat", ".ssh/id_rsa"])
                .current_dir(&w)
                .env("HOME", &home)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            assert!(!out.status.success(), "{place} {level}: {out:?}");
            assert!(
                !String::from_utf8_lossy(&out.stdout).contains("SECRET"),
                "{place} {level}: {out:?}"
            );
            return;
        }
    }
    let mut cmd = std::process::Command::new(GG);
    cmd.args(["sandbox", "--backend", level, "--writable"])
        .arg(&x)
        .args(&flags)
        .args(["--", "sh", "-c", script])
        .current_dir(&w)
        .env("HOME", &home)
        .env("W", &w)
        .env("FILES", &files)
        .env("DIRS", &dirs)
        .env("ABSENT", &absent_list)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    let start = std::time::Instant::now();
    while !w.join(".ready").exists() && start.elapsed() < std::time::Duration::from_secs(120) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    for (tag, gone) in &absent {
        // At the bwrap level an absent path inside a writable root is a mount point on the host
        // by now: the host's file goes into the directory the sandbox cannot see.
        std::fs::create_dir_all(gone).unwrap();
        std::fs::write(gone.join("key"), format!("SECRET-{tag}-absent\n")).unwrap();
    }
    std::fs::write(w.join(".go"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let what = format!("{place} {level}: {out:?}");
    assert!(
        stdout.contains("PLAIN-OK") && stdout.contains("END"),
        "{what}"
    );
    assert!(
        !stdout.contains("SECRET-HOME-ssh"),
        "~/.ssh readable: {what}"
    );
    for tag in ["W", "X", "O"] {
        for kind in ["file", "dir", "absent"] {
            let secret = format!("SECRET-{tag}-{kind}");
            let leaked = stdout.contains(&secret);
            if level == "landlock" && tag != "O" {
                // Not asked to hide here: such a run is refused at this level (checked above).
                continue;
            }
            assert!(!leaked, "{secret} readable: {what}");
        }
    }
    // The directory names inside a hidden directory stay listable at the landlock level
    // (documented); at the bwrap level the directory is empty.
    if level == "bwrap" {
        assert!(!stdout.contains("key\n"), "{what}");
    }
}
