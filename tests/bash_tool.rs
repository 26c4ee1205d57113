//! The bash tool's process handling with real processes: output tail and full log, timeouts and
//! cancellation that kill the whole tree, and secrets kept out of the environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use gg::tools::bash::{self, Ending};
use tokio_util::sync::CancellationToken;

fn script(dir: &Path, text: &str) -> Command {
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(text).current_dir(dir);
    cmd
}

fn pid_alive(pid: i32) -> bool {
    // A zombie still has a /proc entry; its state letter is Z.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

async fn run(dir: &Path, text: &str, timeout: Duration) -> bash::BashOutput {
    bash::run(
        script(dir, text),
        timeout,
        &CancellationToken::new(),
        &dir.join(".gg/outputs"),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn exit_codes_and_combined_output() {
    let tmp = tempfile::tempdir().unwrap();
    let ok = run(tmp.path(), "echo out; echo err >&2", bash::DEFAULT_TIMEOUT).await;
    assert_eq!(ok.ending, Ending::Exited(0));
    assert!(!ok.is_error());
    assert!(
        ok.text.contains("out\n") && ok.text.contains("err\n"),
        "{:?}",
        ok.text
    );
    let failed = run(tmp.path(), "echo nope; exit 3", bash::DEFAULT_TIMEOUT).await;
    assert_eq!(failed.ending, Ending::Exited(3));
    assert_eq!(failed.text, "nope\nexit code 3");
    let outputs = tmp.path().join(".gg/outputs");
    let logs = std::fs::read_dir(&outputs).map(|d| d.count()).unwrap_or(0);
    assert_eq!(logs, 0, "logs of short runs are deleted");
}

#[tokio::test]
async fn long_output_keeps_the_tail_and_saves_the_full_log() {
    let tmp = tempfile::tempdir().unwrap();
    let out = run(tmp.path(), "seq 1 100000", bash::DEFAULT_TIMEOUT).await;
    let full: String = (1..=100000).map(|i| format!("{i}\n")).collect();
    assert!(
        out.text.starts_with("... output truncated: omitted "),
        "{}",
        &out.text[..200]
    );
    assert!(out.text.ends_with("99999\n100000\n"));
    let shown_len = out.text.lines().skip(2).map(|l| l.len() + 1).sum::<usize>();
    assert!(shown_len <= bash::OUTPUT_TAIL_BYTES + 16, "{shown_len}");
    let log = out.full_log.expect("full log kept");
    assert!(
        out.text
            .contains(&format!("Full output saved to: {}", log.display()))
    );
    assert!(log.starts_with(tmp.path().join(".gg/outputs")));
    assert_eq!(std::fs::read_to_string(log).unwrap(), full);
}

#[tokio::test]
async fn full_logs_are_private_to_the_user() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;
    // A new outputs directory is 0700 and the log in it 0600, whatever the umask lets through.
    let tmp = tempfile::tempdir().unwrap();
    let out = run(tmp.path(), "seq 1 100000", bash::DEFAULT_TIMEOUT).await;
    let log = out.full_log.expect("full log kept");
    assert_eq!(mode(&log), 0o600);
    assert_eq!(mode(&tmp.path().join(".gg/outputs")), 0o700);

    // One that exists with a wider mode (an older gg's) is narrowed before the log is made.
    let tmp = tempfile::tempdir().unwrap();
    let outputs = tmp.path().join(".gg/outputs");
    std::fs::create_dir_all(&outputs).unwrap();
    std::fs::set_permissions(&outputs, std::fs::Permissions::from_mode(0o755)).unwrap();
    let old = outputs.join("bash-1-00000000.log");
    std::fs::write(&old, "old").unwrap();
    let out = run(tmp.path(), "seq 1 100000", bash::DEFAULT_TIMEOUT).await;
    assert_eq!(mode(&out.full_log.expect("full log kept")), 0o600);
    assert_eq!(mode(&outputs), 0o700);

    // A symbolic link in its place (a project's command may plant one) is not followed: no mode
    // changes through it and no log lands behind it.
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir(tmp.path().join(".gg")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, tmp.path().join(".gg/outputs")).unwrap();
    let out = run(tmp.path(), "seq 1 100000", bash::DEFAULT_TIMEOUT).await;
    assert!(out.full_log.is_none());
    assert!(
        out.text.ends_with("100000\n"),
        "the output itself is still there"
    );
    assert_eq!(mode(&elsewhere), 0o755);
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[tokio::test]
async fn timeout_kills_the_whole_process_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let pid_file = tmp.path().join("bg.pid");
    let text = format!("sleep 300 & echo $! > {}; sleep 300", pid_file.display());
    let started = Instant::now();
    let out = run(tmp.path(), &text, Duration::from_millis(500)).await;
    assert_eq!(out.ending, Ending::TimedOut(Duration::from_millis(500)));
    assert!(
        out.text.ends_with("command timed out after 500ms"),
        "{:?}",
        out.text
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    let bg: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !pid_alive(bg),
        "background child {bg} was killed with the group"
    );
}

#[tokio::test]
async fn cancellation_kills_the_tree_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let pid_file = tmp.path().join("bg.pid");
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let text = format!(
        "sleep 300 & echo $! > {}; echo started; sleep 300",
        pid_file.display()
    );
    let out = bash::run(
        script(tmp.path(), &text),
        bash::DEFAULT_TIMEOUT,
        &cancel,
        tmp.path(),
    )
    .await
    .unwrap();
    assert_eq!(out.ending, Ending::Cancelled);
    assert_eq!(out.text, "started\ncommand canceled");
    let bg: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(!pid_alive(bg));
}

#[tokio::test]
async fn a_script_that_leaves_a_background_job_returns_when_it_exits() {
    let tmp = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = run(tmp.path(), "sleep 300 & echo done", Duration::from_secs(60)).await;
    assert_eq!(out.ending, Ending::Exited(0));
    assert_eq!(out.text, "done\n");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn secret_names_are_recognised() {
    let allow = vec!["GITHUB_TOKEN".to_string()];
    for secret in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "openai_base_url",
        "GG_TOKEN",
        "NPM_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "DB_PASSWORD",
        "MY_SECRET_THING",
        "GOOGLE_APPLICATION_CREDENTIALS",
    ] {
        assert!(bash::is_secret_env(secret.as_ref(), &allow), "{secret}");
    }
    for plain in [
        "PATH",
        "HOME",
        "TOKENIZER",
        "LANG",
        "GITHUB_TOKEN",
        "SECRETARY",
    ] {
        assert!(!bash::is_secret_env(plain.as_ref(), &allow), "{plain}");
    }
}

#[tokio::test]
async fn secrets_never_reach_the_child_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = script(tmp.path(), "env");
    cmd.env_clear();
    let parent = [
        ("PATH", "/usr/bin:/bin"),
        ("OPENAI_API_KEY", "sk-live-123"),
        ("GG_API_KEY", "gg-456"),
        ("GITHUB_TOKEN", "ghp-789"),
        ("DB_PASSWORD", "hunter2"),
        ("KEEP_ME", "visible"),
    ];
    for (name, value) in parent {
        if !bash::is_secret_env(name.as_ref(), &[]) {
            cmd.env(name, value);
        }
    }
    let out = bash::run(
        cmd,
        bash::DEFAULT_TIMEOUT,
        &CancellationToken::new(),
        tmp.path(),
    )
    .await
    .unwrap();
    assert!(out.text.contains("KEEP_ME=visible"));
    for leaked in ["sk-live-123", "gg-456", "ghp-789", "hunter2"] {
        assert!(!out.text.contains(leaked), "{leaked} leaked: {}", out.text);
    }
}

#[tokio::test]
async fn protective_git_config_beats_a_planted_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    let marker = repo.join("pwned");
    let status = Command::new("git")
        .args(["init", "-q"])
        .current_dir(repo)
        .status()
        .unwrap();
    assert!(status.success());
    let hook = repo.join("evil.sh");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let git = |extra: &[(String, String)]| {
        let mut cmd = script(
            repo,
            "git -c core.fsmonitor=./evil.sh status >/dev/null 2>&1; git config core.fsmonitor ./evil.sh; git status >/dev/null 2>&1; true",
        );
        for (k, v) in extra {
            cmd.env(k, v);
        }
        cmd
    };
    // Without the overrides the planted fsmonitor runs (a positive control for the attack).
    let out = bash::run(
        git(&[]),
        bash::DEFAULT_TIMEOUT,
        &CancellationToken::new(),
        repo,
    )
    .await
    .unwrap();
    assert_eq!(out.ending, Ending::Exited(0));
    assert!(
        marker.exists(),
        "control: the planted fsmonitor really runs without protection"
    );
    std::fs::remove_file(&marker).unwrap();
    Command::new("git")
        .args(["config", "--unset", "core.fsmonitor"])
        .current_dir(repo)
        .status()
        .unwrap();

    let protective = bash::git_protective_env();
    let mut cmd = script(
        repo,
        "git config core.fsmonitor ./evil.sh; git status >/dev/null 2>&1; true",
    );
    for (k, v) in &protective {
        cmd.env(k, v);
    }
    bash::run(cmd, bash::DEFAULT_TIMEOUT, &CancellationToken::new(), repo)
        .await
        .unwrap();
    assert!(
        !marker.exists(),
        "the protective config disables the repository's fsmonitor"
    );
}

#[tokio::test]
async fn protective_git_config_stops_a_planted_textconv_driver() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    let marker = repo.join("pwned");
    let setup = format!(
        "git init -q && git config user.name t && git config user.email t@e.invalid && \
         printf 'a\\n' > f.txt && printf '*.txt diff=ev\\n' > .gitattributes && git add . && \
         git commit -qm one && printf 'b\\n' >> f.txt && \
         git config diff.ev.textconv \"sh -c 'touch {}; cat \\\"\\$0\\\"'\"",
        marker.display()
    );
    let status = Command::new("bash")
        .args(["-c", &setup])
        .current_dir(repo)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .unwrap();
    assert!(status.success());
    let diff = |extra: &[(String, String)]| {
        let mut cmd = script(
            repo,
            "git diff >/dev/null 2>&1; git log -p >/dev/null 2>&1; true",
        );
        cmd.env("GIT_CONFIG_GLOBAL", "/dev/null");
        for (k, v) in extra {
            cmd.env(k, v);
        }
        cmd
    };
    bash::run(
        diff(&[]),
        bash::DEFAULT_TIMEOUT,
        &CancellationToken::new(),
        repo,
    )
    .await
    .unwrap();
    assert!(marker.exists(), "control: the planted textconv really runs");
    std::fs::remove_file(&marker).unwrap();
    bash::run(
        diff(&bash::git_protective_env()),
        bash::DEFAULT_TIMEOUT,
        &CancellationToken::new(),
        repo,
    )
    .await
    .unwrap();
    assert!(
        !marker.exists(),
        "attributes from the empty tree keep the textconv driver from being selected"
    );
}
