//! Real multi-process behaviour of the session store: two writers racing on one file, and a
//! writer killed with SIGKILL mid-append. Children are this test binary re-run with
//! `GG_SESSION_TEST_CHILD` selecting their role.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};
use std::{env, fs, thread};

use session::{Message, Role, Session, SessionError, lease, load};

const ROLE_ENV: &str = "GG_SESSION_TEST_CHILD";
const PATH_ENV: &str = "GG_SESSION_TEST_PATH";
const SYNC_ENV: &str = "GG_SESSION_TEST_SYNC";
const NAME_ENV: &str = "GG_SESSION_TEST_NAME";
const CHILD_PREFIX: &str = "CHILD:";

fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{CHILD_PREFIX}{line}");
    let _ = stdout.flush();
}

fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {}",
            path.display()
        );
        thread::sleep(Duration::from_millis(2));
    }
}

/// Entry point of the child processes; a no-op in the parent test run.
#[test]
fn child_process_entry_point() {
    let Ok(role) = env::var(ROLE_ENV) else { return };
    let path = PathBuf::from(env::var(PATH_ENV).unwrap());
    match role.as_str() {
        "racer" => {
            let sync = PathBuf::from(env::var(SYNC_ENV).unwrap());
            let name = env::var(NAME_ENV).unwrap();
            let mut session = Session::open(&path).unwrap();
            fs::write(sync.join(format!("{name}.ready")), "").unwrap();
            wait_for(&sync.join("go"));
            match session.append_message(Message::text(Role::User, format!("from {name}"))) {
                Ok(_) => {
                    say("ok");
                    match session
                        .append_message(Message::text(Role::Assistant, format!("reply to {name}")))
                    {
                        Ok(_) => say("ok-again"),
                        Err(error) => say(&format!("error {error}")),
                    }
                }
                Err(SessionError::Conflict { .. }) => say("conflict"),
                Err(error) => say(&format!("error {error}")),
            }
        }
        "writer" => {
            let mut session = Session::open(&path).unwrap();
            let padding = "ünïcödé payload ".repeat(256);
            for index in 0..1_000_000u64 {
                let entry = session
                    .append_message(Message::text(Role::User, format!("{index} {padding}")))
                    .unwrap();
                say(&entry.id.clone());
            }
        }
        other => panic!("unknown child role {other}"),
    }
}

/// The child's message on a stdout line; libtest may have printed `test name ... ` before it.
fn child_message(line: &str) -> Option<&str> {
    line.split_once(CHILD_PREFIX).map(|(_, message)| message)
}

fn spawn_child(role: &str, path: &Path, extra: &[(&str, &str)]) -> Child {
    let mut command = Command::new(env::current_exe().unwrap());
    command
        .args([
            "--exact",
            "processes::child_process_entry_point",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE_ENV, role)
        .env(PATH_ENV, path)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (key, value) in extra {
        command.env(key, value);
    }
    command.spawn().unwrap()
}

fn child_lines(child: Child) -> Vec<String> {
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "child failed: {output:?}");
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| child_message(line).map(str::to_owned))
        .collect()
}

#[test]
fn two_processes_appending_one_wins_the_other_conflicts() {
    for round in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let sync = dir.path().join("sync");
        fs::create_dir(&sync).unwrap();
        let mut session = Session::create(dir.path(), "/p").unwrap();
        session
            .append_message(Message::text(Role::User, "start"))
            .unwrap();
        let before = fs::read(session.path()).unwrap();
        let sync_str = sync.to_str().unwrap();
        let children: Vec<Child> = ["a", "b"]
            .iter()
            .map(|name| {
                spawn_child(
                    "racer",
                    session.path(),
                    &[(SYNC_ENV, sync_str), (NAME_ENV, name)],
                )
            })
            .collect();
        wait_for(&sync.join("a.ready"));
        wait_for(&sync.join("b.ready"));
        fs::write(sync.join("go"), "").unwrap();
        let outcomes: Vec<Vec<String>> = children.into_iter().map(child_lines).collect();
        let winners: Vec<usize> = (0..2)
            .filter(|&i| outcomes[i] == ["ok", "ok-again"])
            .collect();
        let losers: Vec<usize> = (0..2).filter(|&i| outcomes[i] == ["conflict"]).collect();
        assert_eq!(
            (winners.len(), losers.len()),
            (1, 1),
            "round {round}: {outcomes:?}"
        );
        let winner = ["a", "b"][winners[0]];

        let after = fs::read(session.path()).unwrap();
        assert!(after.starts_with(&before), "append-only");
        let transcript = load(session.path()).unwrap();
        let texts: Vec<String> = transcript
            .messages()
            .iter()
            .map(|m| m.display_text())
            .collect();
        assert_eq!(
            texts,
            [
                "start".to_owned(),
                format!("from {winner}"),
                format!("reply to {winner}")
            ]
        );
        assert_eq!(transcript.entries().len(), 3, "the loser wrote nothing");
        assert!(!lease::lock_path(session.path()).exists());
        // The parent's own snapshot is stale now as well.
        assert!(matches!(
            session.append_message(Message::text(Role::User, "late")),
            Err(SessionError::Conflict { .. })
        ));
    }
}

#[test]
fn sigkill_mid_append_loses_no_fsynced_entry() {
    let dir = tempfile::tempdir().unwrap();
    let session = Session::create(dir.path(), "/p").unwrap();
    let path = session.path().to_path_buf();
    let mut child = spawn_child("writer", &path, &[]);
    let stdout = child.stdout.take().unwrap();
    let mut reported = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(id) = child_message(&line) {
            reported.push(id.to_owned());
            if reported.len() == 200 {
                break;
            }
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(reported.len(), 200);

    let lock = lease::lock_path(&path);
    if lock.exists() {
        // Killed while holding the lease: it is only taken over once stale, so age it.
        let content = fs::read_to_string(&lock).unwrap();
        assert!(
            content.starts_with(&format!("{}:", child.id())),
            "{content}"
        );
        let old = SystemTime::now() - lease::STALE_AFTER - Duration::from_secs(1);
        fs::File::options()
            .write(true)
            .open(&lock)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    let reopened = Session::open(&path).unwrap();
    let ids: Vec<&str> = reopened
        .transcript()
        .entries()
        .iter()
        .map(|e| e.id.as_str())
        .collect();
    // The child may have fsynced more entries than the parent read before the kill; those
    // must be there too, complete and in order.
    assert!(ids.len() >= reported.len(), "{} entries", ids.len());
    for (index, message) in reopened.transcript().messages().iter().enumerate() {
        assert!(
            message.content.starts_with(&format!("{index} ")),
            "entry {index} out of order"
        );
    }
    assert_eq!(
        &ids[..reported.len()],
        reported
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice()
    );
    let bytes = fs::read(&path).unwrap();
    assert_eq!(bytes.last(), Some(&b'\n'), "repaired to complete lines");
    assert!(!lock.exists());
}
