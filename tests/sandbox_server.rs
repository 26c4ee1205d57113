//! The per-session sandbox (command server) through the real agent: `gg --yolo --sandbox -p`
//! with the scripted model issuing bash calls, at each available level (`GG_SANDBOX_BACKEND`
//! forces it; `GG_REQUIRE_SANDBOX_LEVELS` makes a missing level fail).
//!
//! Nothing here waits for a fixed time: a state the test needs is polled for with a generous
//! bound, and the order of events is fixed by the scripted model (a reply is computed only when
//! gg asks for it, i.e. after the previous command ended).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::sandbox_support;
use crate::support;

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sandbox_support::{Fixture, GG, Host, Launch, Out, available_levels, cases};
use serde_json::{Value, json};
use support::{Reply, ScriptedServer};

/// One bash call the model makes: the script, and an optional timeout in seconds.
struct Call {
    script: String,
    timeout: Option<f64>,
}

fn call(script: &str) -> Call {
    Call {
        script: script.to_string(),
        timeout: None,
    }
}

fn tool_call_reply(i: usize, c: &Call) -> Reply {
    let mut args = json!({ "command": c.script });
    if let Some(t) = c.timeout {
        args["timeout"] = json!(t);
    }
    Reply::tool_call(&format!("c{i}"), "bash", &args.to_string())
}

/// The tool results gg sent back, in order (from the last request, which carries them all).
fn tool_results(server: &ScriptedServer) -> Vec<String> {
    let bodies = server.request_bodies();
    let Some(last) = bodies.last() else {
        return Vec::new();
    };
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// The gg command for an agent session in the fixture's working directory at `level`.
fn agent(fx: &Fixture, server: &ScriptedServer, level: &str, env: &[(String, String)]) -> Command {
    agent_binary(GG, fx, server, level, env)
}

/// [`agent`] with another gg binary.
fn agent_binary(
    gg: &str,
    fx: &Fixture,
    server: &ScriptedServer,
    level: &str,
    env: &[(String, String)],
) -> Command {
    let mut cmd = Command::new(gg);
    cmd.args(["--yolo", "--sandbox", "-p", "run the calls"]);
    agent_env(&mut cmd, fx, server, level, env);
    cmd
}

/// The configuration, environment and working directory of [`agent_binary`]'s command, for a
/// command line of the caller's.
fn agent_env(
    cmd: &mut Command,
    fx: &Fixture,
    server: &ScriptedServer,
    level: &str,
    env: &[(String, String)],
) {
    // The fixture's fake ~/.gg/config.json holds a secret; make it a valid configuration for the
    // scripted model that still holds it.
    std::fs::write(
        fx.home.join(".gg/config.json"),
        json!({
            "default": "t:m",
            "providers": {"t": {"baseURL": server.base_url(), "apiKey": "SECRET-GG", "models": ["m"]}}
        })
        .to_string(),
    )
    .unwrap();
    cmd.current_dir(&fx.w);
    fx.host_env(cmd);
    cmd.env("SHELL", "/bin/sh")
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", server.base_url())
        .env("GG_SESSION_DIR", fx.base.join("sessions"))
        .env("GG_SANDBOX_BACKEND", level)
        .env_remove("GG_SANDBOX_NO_SERVER")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
}

/// Runs one agent session making `calls`, returns the tool results.
fn session(fx: &Fixture, level: &str, calls: &[Call], env: &[(String, String)]) -> Vec<String> {
    session_binary(GG, fx, level, calls, env)
}

/// [`session`] with another gg binary.
fn session_binary(
    gg: &str,
    fx: &Fixture,
    level: &str,
    calls: &[Call],
    env: &[(String, String)],
) -> Vec<String> {
    let server = ScriptedServer::start();
    for (i, c) in calls.iter().enumerate() {
        server.push(tool_call_reply(i, c));
    }
    server.push(Reply::text(&["done"]));
    let out = agent_binary(gg, fx, &server, level, env)
        .output()
        .expect("run gg");
    assert!(
        out.status.success(),
        "gg failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_results(&server);
    assert_eq!(results.len(), calls.len(), "{results:?}");
    results
}

/// The parent of a served command is the server, whose command line says so.
const PARENT_CMDLINE: &str = "tr '\\0' ' ' </proc/$PPID/cmdline; echo";

/// Every process the command can see whose command line has `sleep 73` in it (the tests' own
/// markers), one per line. Only those: at the landlock level the command sees the whole host,
/// and a listing of every process (a parallel build's linker lines are many kilobytes each) was
/// truncated to its tail, losing the first line that says the command was served.
const LIST_SLEEPS: &str = "for p in /proc/[0-9]*; do tr '\\0' ' ' <$p/cmdline 2>/dev/null; echo; done | grep -a 'sleep 73'; true";

fn served(result: &str) -> bool {
    result.contains(&format!("{} --server", sandbox::helper::HELPER_FLAG))
}

/// Processes on the host whose command line contains `needle`.
fn host_processes(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let line = String::from_utf8_lossy(&raw).replace('\0', " ");
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rfind(')').map(|i| s[i + 2..].starts_with('Z')))
            .unwrap_or(true);
        if line.contains(needle) && !zombie {
            found.push(format!("{pid}: {line}"));
        }
    }
    found
}

/// The landlock level's private temp directories (gg's, by their name) in `tmpdir`.
fn private_temps(tmpdir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(tmpdir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(sandbox::PRIVATE_TMP_PREFIX))
        .collect()
}

/// Waits (bounded, generously) until `f` holds.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting until {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Each escape probe of the `gg sandbox` suite, replayed as a bash call of the agent (which runs
/// it in the session's sandbox server). Probes that need `gg sandbox` flags or a special launch
/// (pseudo-terminal, leaked descriptors) have no agent equivalent and are listed as such.
#[test]
fn escape_probes_fail_through_the_agent_with_the_server() {
    for level in available_levels() {
        let mut failures = Vec::new();
        let mut ran = 0;
        for case in cases() {
            if !case.flags.is_empty() || case.launch != Launch::Plain {
                println!(
                    "n/a   {level} {} (needs gg sandbox flags or launch)",
                    case.id
                );
                continue;
            }
            let fx = Fixture::new();
            let mut host = Host::default();
            (case.setup)(&fx, &mut host);
            let env = host.env.clone();
            // The first line names the command's parent (the server); cargo is
            // found as in the `gg sandbox` suite although the agent's shell is a login shell.
            // The probe runs from a file, so that the classifier (which would refuse most of them
            // as dangerous) lets the call through and the sandbox is what stops it.
            let probe = fx.o.join("probe.sh");
            std::fs::write(
                &probe,
                format!("export PATH=\"$CARGO_HOME/bin:$PATH\"\n{}\n", case.script),
            )
            .unwrap();
            let script = format!("{PARENT_CMDLINE} >&2; sh {}", probe.display());
            let results = session(&fx, level, &[call(&script)], &env);
            let text = results[0].clone();
            let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
            if !served(first) {
                failures.push(format!("{}: not run by the server: {text:?}", case.id));
                continue;
            }
            // The tool result is the output (stdout and stderr together), then gg's lines.
            let code = rest
                .lines()
                .find_map(|l| l.strip_prefix("exit code "))
                .and_then(|n| n.parse().ok())
                .or(Some(0));
            let stdout: String = rest
                .lines()
                .filter(|l| !l.starts_with("[gg: ") && !l.starts_with("exit code "))
                .map(|l| format!("{l}\n"))
                .collect();
            let out = Out {
                code,
                stdout,
                stderr: String::new(),
            };
            // gg itself creates `.gg/outputs` (for full outputs) in the working directory on the
            // host: that is not something the probe planted (removed only when empty).
            let _ = std::fs::remove_dir(fx.w.join(".gg/outputs"));
            let verdict = (case.check)(&fx, &out, &mut host);
            let gap = if level == "landlock" {
                case.landlock_gap
            } else {
                None
            };
            ran += 1;
            match (verdict, gap) {
                (Ok(()), _) => println!("ok    {level} {} {}", case.id, case.what),
                (Err(e), Some(why)) => {
                    println!("gap   {level} {} {e} (documented: {why})", case.id)
                }
                (Err(e), None) => {
                    println!("FAIL  {level} {} {}: {e}", case.id, case.what);
                    failures.push(format!("{} {}: {e}", case.id, case.what));
                }
            }
        }
        println!(
            "{level}: {ran} probes through the agent, {} failed",
            failures.len()
        );
        assert!(
            failures.is_empty(),
            "escapes through the agent at level {level}:\n{}",
            failures.join("\n")
        );
    }
}

/// A command's leftovers (a background job, a `setsid` daemon) are gone before the next command
/// of the same session runs, and the next command cannot see them in /proc.
#[test]
fn a_later_command_cannot_see_an_earlier_commands_processes() {
    for level in available_levels() {
        let fx = Fixture::new();
        let results = session(
            &fx,
            level,
            &[
                call(&format!(
                    "{PARENT_CMDLINE}; sleep 7301 & setsid sleep 7302 & \
                     (setsid sh -c 'sleep 7303 & sleep 7304' &); echo started"
                )),
                call(&format!("{PARENT_CMDLINE}; {LIST_SLEEPS}")),
            ],
            &[],
        );
        assert!(served(&results[0]) && served(&results[1]), "{results:?}");
        assert!(results[0].contains("started"), "{results:?}");
        for n in 7301..=7304 {
            assert!(
                !results[1].contains(&format!("sleep {n}")),
                "{level}: the second command sees the first one's process sleep {n}: {}",
                results[1]
            );
        }
        assert!(
            host_processes("sleep 730")
                .iter()
                .all(|p| !p.contains("sleep 7301")
                    && !p.contains("sleep 7302")
                    && !p.contains("sleep 7303")
                    && !p.contains("sleep 7304")),
            "{level}: leftovers on the host: {:?}",
            host_processes("sleep 730")
        );
    }
}

/// A timeout stops the whole tree of a served command (detached processes included) before the
/// tool returns; the next command of the session runs normally in the same server.
#[test]
fn a_timeout_kills_the_whole_tree_inside_the_server() {
    for level in available_levels() {
        let fx = Fixture::new();
        let results = session(
            &fx,
            level,
            &[
                Call {
                    script: "setsid sleep 7311 & (setsid sleep 7312 &); echo waiting; sleep 7313"
                        .into(),
                    timeout: Some(1.0),
                },
                call(&format!("{PARENT_CMDLINE}; {LIST_SLEEPS}")),
            ],
            &[],
        );
        assert!(results[0].contains("timed out"), "{results:?}");
        assert!(served(&results[1]), "{results:?}");
        for n in 7311..=7313 {
            assert!(
                !results[1].contains(&format!("sleep {n}")),
                "{level}: sleep {n} survived the timeout: {}",
                results[1]
            );
        }
        assert!(
            host_processes("sleep 731").is_empty(),
            "{level}: {:?}",
            host_processes("sleep 731")
        );
    }
}

/// A command that kills its own server (a prompt-injected model trying to keep a process
/// running after its command ends: the server is what kills a command's leftovers) leaves
/// nothing behind either. At the bubblewrap level the server's death takes the whole PID
/// namespace down; at the landlock level the command cannot signal the server at all (Landlock's
/// signal scope, ABI 6). The next command runs in a new server and sees none of it.
#[test]
fn a_command_that_kills_its_server_leaves_nothing_behind() {
    for level in available_levels() {
        if level == "landlock" && sandbox::fs_rules::kernel_abi().unwrap_or(0) < 6 {
            // Without the signal scope the command can kill its server, and what it detached
            // then outlives it (the same was true of the per-command supervisor it replaced).
            eprintln!("landlock: kernel without Landlock ABI 6, signal scope not checked");
            continue;
        }
        let fx = Fixture::new();
        let results = session(
            &fx,
            level,
            &[
                call(
                    "setsid sleep 7351 & (setsid sleep 7352 &); sleep 7353 & \
                     kill -9 $PPID; echo \"kill said $?\"",
                ),
                call(&format!("{PARENT_CMDLINE}; {LIST_SLEEPS}")),
            ],
            &[],
        );
        assert_eq!(results.len(), 2, "{level}: {results:?}");
        if level == "landlock" {
            assert!(
                results[0].contains("kill said 1"),
                "{level}: {}",
                results[0]
            );
        }
        assert!(served(&results[1]), "{level}: {}", results[1]);
        for n in 7351..=7353 {
            assert!(
                !results[1].contains(&format!("sleep {n}")),
                "{level}: the next command sees sleep {n}: {}",
                results[1]
            );
        }
        eventually("nothing the command started is left on the host", || {
            host_processes("sleep 735").is_empty()
        });
    }
}

/// `kill -9` of gg while a served command runs leaves no sandbox process behind: not the
/// command's tree, not the server; and at the landlock level, not the session's temp directory
/// (the server removes it on its parent-death signal).
#[test]
fn killing_gg_leaves_no_sandbox_processes() {
    for level in available_levels() {
        let fx = Fixture::new();
        let tmpdir = fx.base.join("tmpdir");
        std::fs::create_dir(&tmpdir).unwrap();
        let temps = || private_temps(&tmpdir);
        let server = ScriptedServer::start();
        let tag = format!("{}", 7320 + if level == "bwrap" { 0 } else { 5 });
        server.push(tool_call_reply(
            0,
            &call(&format!(
                "setsid sleep {tag}1 & (setsid sleep {tag}2 &); sleep {tag}3"
            )),
        ));
        server.push(Reply::text(&["done"]));
        let env = [("TMPDIR".to_string(), tmpdir.display().to_string())];
        let mut gg = agent(&fx, &server, level, &env).spawn().unwrap();
        let needle = format!("sleep {tag}3");
        eventually("the command runs", || !host_processes(&needle).is_empty());
        if level == "landlock" {
            assert_eq!(temps().len(), 1, "the session's temp directory");
        }
        // gg's children: the server (bubblewrap, or the helper at the landlock level).
        let server_pids = children_of(gg.id());
        assert!(!server_pids.is_empty());
        gg.kill().unwrap();
        gg.wait().unwrap();
        eventually("every sandbox process is gone", || {
            host_processes(&format!("sleep {tag}")).is_empty()
        });
        // The server processes this session started are gone too (others may belong to tests
        // running in parallel, so only the ones seen during this run are checked).
        eventually("the server is gone", || {
            server_pids.iter().all(|&pid| is_gone_or_zombie(pid))
        });
        eventually("the session's temp directory is gone", || {
            temps().is_empty()
        });
    }
}

/// A session that ends after its commands have all reported leaves nothing behind, with and
/// without `--sandbox` (the workspace server; the read-only and the guard's servers): every
/// server gg started has ended before gg exits, and at the landlock level its private temp
/// directory is gone. gg no longer waits for such a server's own stop (it has already killed
/// what its commands left, and its spare dies with it), so this is what holds instead: the
/// servers and what a command detached are gone the moment gg has exited (asserted without
/// waiting), and their spares follow (their parent-death signal).
#[test]
fn a_finished_session_leaves_no_sandbox_processes() {
    for level in available_levels() {
        for sandboxed in [true, false] {
            let fx = Fixture::new();
            let tmpdir = fx.base.join("tmpdir");
            std::fs::create_dir(&tmpdir).unwrap();
            let temps = || private_temps(&tmpdir);
            let tag = format!(
                "73{}{}",
                if level == "bwrap" { 4 } else { 6 },
                u8::from(sandboxed)
            );
            let server = ScriptedServer::start();
            let gg_pid = Arc::new(Mutex::new(None::<u32>));
            // A read-only command (the read-only server without `--sandbox`), then one that
            // detaches a process (a normal command: the guard's server without `--sandbox`).
            server.push(tool_call_reply(0, &call("echo first")));
            server.push(tool_call_reply(
                1,
                &call(&format!("touch made; (setsid sleep {tag}1 &); echo second")),
            ));
            let seen = gg_pid.clone();
            let found = Arc::new(Mutex::new(Vec::<(i32, Vec<i32>)>::new()));
            let kept = found.clone();
            // Before the last answer: gg's servers and their children (the spares).
            server.push(Reply::computed(move |_| {
                let gg = seen.lock().unwrap().expect("gg started");
                *kept.lock().unwrap() = servers_of(gg)
                    .into_iter()
                    .map(|s| (s, children_of(s as u32)))
                    .collect();
                Reply::text(&["done"])
            }));
            let mut cmd = Command::new(GG);
            if sandboxed {
                cmd.args(["--yolo", "--sandbox", "-p", "run the calls"]);
            } else {
                cmd.args(["--yolo", "-p", "run the calls"]);
            }
            let env = [("TMPDIR".to_string(), tmpdir.display().to_string())];
            agent_env(&mut cmd, &fx, &server, level, &env);
            let results = run_with_its_pid(cmd, &gg_pid, &server);
            let what = format!("{level}, --sandbox {sandboxed}");
            assert!(results[1].contains("second"), "{what}: {results:?}");
            let found = found.lock().unwrap().clone();
            let servers = if sandboxed { 1 } else { 2 };
            assert_eq!(
                found.len(),
                servers,
                "{what}: the servers seen {found:?}; {results:?}"
            );
            for (server, _) in &found {
                assert!(
                    is_gone_or_zombie(*server),
                    "{what}: server {server} still runs"
                );
            }
            assert!(
                host_processes(&format!("sleep {tag}1")).is_empty(),
                "{what}: what the command detached outlived it"
            );
            assert!(temps().is_empty(), "{what}: {:?} left", temps());
            eventually("the servers' spares are gone", || {
                found
                    .iter()
                    .flat_map(|(_, children)| children)
                    .all(|&pid| is_gone_or_zombie(pid))
            });
        }
    }
}

/// The bubblewrap mounts are fixed when the server starts: a protected file that appears during
/// the session (here `.envrc`, read-only when present, created on the host between two calls)
/// makes the next command's rendering differ, so the server is replaced and the new file is
/// read-only for that command. Until then the session keeps one sandbox (its private /tmp
/// persists between commands).
#[test]
fn the_server_restarts_when_the_rendered_policy_changes() {
    if !sandbox_support::usable("bwrap") {
        return;
    }
    let fx = Fixture::new();
    // The write to the protected file goes through a script, so that the classifier lets the
    // call run and the sandbox is what refuses it.
    std::fs::write(
        fx.w.join("app.sh"),
        "echo appended >> .envrc && echo writable\n",
    )
    .unwrap();
    let server = ScriptedServer::start();
    server.push(tool_call_reply(
        0,
        &call("echo one > /tmp/marker; echo wrote"),
    ));
    server.push(tool_call_reply(1, &call("cat /tmp/marker")));
    let envrc = fx.w.join(".envrc");
    server.push(Reply::computed(move |_| {
        std::fs::write(&envrc, "export A=1\n").unwrap();
        tool_call_reply(2, &call("cat /tmp/marker; sh ./app.sh"))
    }));
    server.push(Reply::text(&["done"]));
    let out = agent(&fx, &server, "bwrap", &[]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_results(&server);
    assert!(results[0].contains("wrote"), "{results:?}");
    assert!(results[1].contains("one"), "same sandbox: {results:?}");
    assert!(!results[1].contains("restarted"), "{results:?}");
    assert!(
        results[2].contains("[gg: sandbox restarted"),
        "the restart is reported: {results:?}"
    );
    assert!(
        !results[2].lines().any(|l| l == "one" || l == "writable")
            && results[2].contains("Read-only file system"),
        "a fresh sandbox with .envrc read-only: {results:?}"
    );
    assert_eq!(fx.read("w/.envrc").as_deref(), Some("export A=1\n"));
}

/// A server killed between two commands is noticed, reported in the next command's output and
/// replaced; the command runs.
#[test]
fn a_dead_server_is_restarted_and_reported() {
    for level in available_levels() {
        let fx = Fixture::new();
        let server = ScriptedServer::start();
        server.push(tool_call_reply(0, &call("echo first")));
        let gg_pid = Arc::new(Mutex::new(None::<u32>));
        let seen = gg_pid.clone();
        // Computed when gg asks for the second call, i.e. after the first command ended: kill
        // the server (gg's child) then, and wait until it is dead.
        server.push(Reply::computed(move |_| {
            let gg = seen.lock().unwrap().expect("gg started");
            for pid in children_of(gg) {
                kill_and_wait(pid);
            }
            tool_call_reply(1, &call(&format!("{PARENT_CMDLINE}; echo second")))
        }));
        server.push(Reply::text(&["done"]));
        let results = run_with_its_pid(agent(&fx, &server, level, &[]), &gg_pid, &server);
        assert!(results[0].contains("first"), "{results:?}");
        assert!(
            results[1].contains("[gg: the sandbox server had stopped"),
            "{level}: {results:?}"
        );
        assert!(
            results[1].contains("second") && served(&results[1]),
            "{results:?}"
        );
    }
}

/// The guard's server (normal commands without `--sandbox`) killed between two commands is
/// noticed, reported in the next command's output and replaced, and that command is still
/// guarded: served by the new server, with the secrets still out of its reach. The scripted
/// model's reply for the second call is computed after the first command ended, which is when
/// the test kills the server: no timing is involved.
#[test]
fn a_dead_guard_server_is_restarted_and_reported() {
    let fx = Fixture::new();
    // Through a script, as an attacker would: the classifier calls a command that names the
    // key dangerous, and asks.
    std::fs::write(
        fx.w.join("read.sh"),
        "cat \"$HOME/.ssh/id_rsa\"; echo read: $?\n",
    )
    .unwrap();
    let server = ScriptedServer::start();
    server.push(tool_call_reply(0, &call("touch one; echo first")));
    let gg_pid = Arc::new(Mutex::new(None::<u32>));
    let seen = gg_pid.clone();
    let killed = Arc::new(Mutex::new(Vec::<i32>::new()));
    let kept = killed.clone();
    server.push(Reply::computed(move |_| {
        let gg = seen.lock().unwrap().expect("gg started");
        for pid in servers_of(gg) {
            let line = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&line).contains("\"guard\":true") {
                kill_and_wait(pid);
                kept.lock().unwrap().push(pid);
            }
        }
        tool_call_reply(
            1,
            &call(&format!(
                "touch two; {PARENT_CMDLINE}; echo second; sh ./read.sh"
            )),
        )
    }));
    server.push(Reply::text(&["done"]));
    let mut cmd = Command::new(GG);
    cmd.args(["--yolo", "-p", "run the calls"]);
    agent_env(&mut cmd, &fx, &server, "landlock", &[]);
    let results = run_with_its_pid(cmd, &gg_pid, &server);
    assert_eq!(
        killed.lock().unwrap().len(),
        1,
        "the first command's guard server: {results:?}"
    );
    assert!(results[0].contains("first"), "{results:?}");
    assert!(
        results[1].contains("[gg: the guard's command server had stopped"),
        "{results:?}"
    );
    assert!(
        results[1].contains("second")
            && served(&results[1])
            && results[1].contains("\"guard\":true"),
        "served by a new guard server: {results:?}"
    );
    assert!(
        !results[1].contains("SECRET-SSH-KEY") && !results[1].contains("read: 0"),
        "{results:?}"
    );
    assert!(fx.w.join("two").exists(), "{results:?}");
}

/// The server started ahead of the first command (`CommandRunner::warm`, while the model
/// thinks) is the one that command runs in, with and without `--sandbox` (the workspace and the
/// read-only server). The session directory lies outside `~/.gg` here, so it joins the
/// deny-read policy; when it joined only after the warm-up, the warmed server hid one path
/// fewer than the command's policy and was replaced, silently, when the command arrived: each
/// session paid for two server starts, and the first command waited for the second.
#[test]
fn the_server_started_ahead_serves_the_first_command() {
    for level in available_levels() {
        for sandboxed in [true, false] {
            let fx = Fixture::new();
            let server = ScriptedServer::start();
            let gg_pid = Arc::new(Mutex::new(None::<u32>));
            let warmed = Arc::new(Mutex::new(Vec::<i32>::new()));
            let (seen, kept) = (gg_pid.clone(), warmed.clone());
            // The first request comes before any command: the server gg has started by then
            // (bubblewrap or the helper, with `--server` on its command line; the level's
            // self-test runs beside it, in processes of its own) is the warm-up's.
            server.push(Reply::computed(move |_| {
                let gg = seen.lock().unwrap().expect("gg started");
                eventually("the warm-up starts a server", || !servers_of(gg).is_empty());
                *kept.lock().unwrap() = servers_of(gg);
                tool_call_reply(0, &call("echo first"))
            }));
            let (seen, kept) = (gg_pid.clone(), warmed.clone());
            let still_running = Arc::new(Mutex::new(None::<bool>));
            let answer = still_running.clone();
            // After the first command: the server it ran in is still the warmed one.
            server.push(Reply::computed(move |_| {
                let gg = seen.lock().unwrap().expect("gg started");
                let now = servers_of(gg);
                let warmed = kept.lock().unwrap().clone();
                *answer.lock().unwrap() = Some(
                    warmed
                        .iter()
                        .all(|pid| now.contains(pid) && !is_gone_or_zombie(*pid)),
                );
                Reply::text(&["done"])
            }));
            let mut cmd = Command::new(GG);
            if sandboxed {
                cmd.args(["--yolo", "--sandbox", "-p", "run the calls"]);
            } else {
                cmd.args(["--yolo", "-p", "run the calls"]);
            }
            agent_env(&mut cmd, &fx, &server, level, &[]);
            let results = run_with_its_pid(cmd, &gg_pid, &server);
            assert!(results[0].contains("first"), "{level}: {results:?}");
            assert_eq!(
                *still_running.lock().unwrap(),
                Some(true),
                "{level}, --sandbox {sandboxed}: the warmed server {:?} was replaced before \
                 the first command",
                warmed.lock().unwrap()
            );
        }
    }
}

/// Runs the agent `cmd` to its end with its pid in `pid` meanwhile (for the scripted replies
/// that look at gg's children), checks that it succeeded, and returns the tool results.
fn run_with_its_pid(
    mut cmd: Command,
    pid: &Mutex<Option<u32>>,
    server: &ScriptedServer,
) -> Vec<String> {
    let gg = cmd.spawn().unwrap();
    *pid.lock().unwrap() = Some(gg.id());
    let out = gg.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tool_results(server)
}

/// The children of `pid` that are sandbox servers (their command line holds `--server`).
fn servers_of(pid: u32) -> Vec<i32> {
    children_of(pid)
        .into_iter()
        .filter(|child| {
            std::fs::read(format!("/proc/{child}/cmdline"))
                .is_ok_and(|line| line.split(|&b| b == 0).any(|arg| arg == b"--server"))
        })
        .collect()
}

/// The live children of `pid` (every thread's).
fn children_of(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(
                    text.split_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok()),
                );
            }
        }
    }
    out
}

fn is_gone_or_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rfind(')').map(|i| s[i + 2..].starts_with('Z')))
        .unwrap_or(true)
}

fn kill_and_wait(pid: i32) {
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    eventually("the process is dead", || is_gone_or_zombie(pid));
}

/// A command that runs longer than an idle tokio blocking thread lives keeps running, and the
/// session's sandbox with it: bubblewrap's `--die-with-parent` and the helper's parent-death
/// signal follow the *thread* that forked them, and a server started from a blocking-pool
/// thread was killed when that thread retired (after 10 s idle: any `cargo build` longer than
/// that died with signal 9). The test hook shortens the idle lifetime to 50 ms, so the command's
/// 1.5 s cover it many times over.
#[test]
fn a_long_command_outlives_the_thread_that_started_the_sandbox() {
    for level in available_levels() {
        let fx = Fixture::new();
        let results = session(
            &fx,
            level,
            &[
                call("echo first"),
                call(&format!("{PARENT_CMDLINE}; sleep 1.5; echo still-alive")),
                call("echo third"),
            ],
            &[("GG_TEST_BLOCKING_KEEP_ALIVE_MS".into(), "50".into())],
        );
        assert!(
            results[1].contains("still-alive") && served(&results[1]),
            "{level}: {results:?}"
        );
        assert!(
            results[2].contains("third") && !results[2].contains("[gg: the sandbox server"),
            "{level}: {results:?}"
        );
    }
}

/// The seccomp filters are installed once in the server and inherited: every served command
/// (and what it starts) runs with no_new_privs and all three programs.
#[test]
fn served_commands_run_under_the_servers_seccomp_filters() {
    for level in available_levels() {
        let fx = Fixture::new();
        let check = "grep -E '^(NoNewPrivs|Seccomp|Seccomp_filters):' /proc/self/status";
        let results = session(
            &fx,
            level,
            &[call(check), call(&format!("sh -c \"{check}\""))],
            &[],
        );
        for r in &results {
            assert!(
                r.contains("NoNewPrivs:\t1") && r.contains("Seccomp:\t2"),
                "{level}: {r}"
            );
            let filters: u32 = r
                .lines()
                .find_map(|l| l.strip_prefix("Seccomp_filters:"))
                .map(|n| n.trim().parse().unwrap())
                .unwrap_or(3);
            assert!(filters >= 3, "{level}: {r}");
        }
    }
}

/// The session's sandbox runs in the small `gg-sandbox-helper` built with gg (not a second
/// copy of gg itself).
#[test]
fn the_session_sandbox_runs_in_the_small_helper_binary() {
    let helper = std::fs::canonicalize(env!("CARGO_BIN_EXE_gg-sandbox-helper")).unwrap();
    for level in available_levels() {
        let fx = Fixture::new();
        let results = session(&fx, level, &[call(PARENT_CMDLINE)], &[]);
        assert!(
            results[0].contains(&format!(
                "{} {} --server",
                helper.display(),
                sandbox::helper::HELPER_FLAG
            )),
            "{level}: {results:?}"
        );
    }
}

/// A copy of gg (a hard link where it can) in a new directory, with an executable
/// `gg-sandbox-helper` beside it holding `script(dir)`. Returns the directory and gg's path.
fn gg_beside_helper(
    prefix: &str,
    script: impl FnOnce(&std::path::Path) -> String,
) -> (tempfile::TempDir, String) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let gg = dir.path().join("gg");
    if std::fs::hard_link(GG, &gg).is_err() {
        std::fs::copy(GG, &gg).unwrap();
    }
    let helper = dir.path().join("gg-sandbox-helper");
    std::fs::write(&helper, script(dir.path())).unwrap();
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let gg = gg.to_str().unwrap().to_string();
    (dir, gg)
}

/// A `gg-sandbox-helper` of another build beside gg is never used: gg asks it who it is, gets
/// another answer, and runs its own image as the helper; the stale file runs nothing else.
#[test]
fn a_helper_of_another_build_beside_gg_is_not_used() {
    let log = std::cell::OnceCell::new();
    let (_dir, gg) = gg_beside_helper("gg-stale-helper", |dir| {
        let path = dir.join("invocations");
        let script = format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\necho 0000000000000000\n",
            path.display()
        );
        let _ = log.set(path);
        script
    });
    let log = log.get().unwrap().clone();
    for level in available_levels() {
        let fx = Fixture::new();
        let results = session_binary(&gg, &fx, level, &[call(PARENT_CMDLINE)], &[]);
        // Without bubblewrap, gg re-executes its running image (`/proc/self/exe`).
        let image = if level == "landlock" {
            "/proc/self/exe"
        } else {
            gg.as_str()
        };
        assert!(
            results[0].contains(&format!(
                "{image} {} --server",
                sandbox::helper::HELPER_FLAG
            )),
            "{level}: {results:?}"
        );
    }
    let asked = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !asked.is_empty()
            && asked
                .lines()
                .all(|l| l == format!("{} --identify", sandbox::helper::HELPER_FLAG)),
        "{asked}"
    );
}

/// A helper started with another build's identity (or the bare old flag) refuses to run, with a
/// message, and never falls through to gg's command line; run by hand it says what it is.
#[test]
fn a_helper_started_by_another_build_refuses() {
    for bin in [env!("CARGO_BIN_EXE_gg-sandbox-helper"), GG] {
        for flag in [
            "__gg-sandbox-helper=0123456789abcdef",
            "__gg-sandbox-helper",
        ] {
            let out = Command::new(bin).args([flag, "--probe"]).output().unwrap();
            assert_eq!(out.status.code(), Some(125), "{bin} {flag}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("must come from one build"), "{bin}: {err}");
            assert!(out.stdout.is_empty(), "{bin}");
        }
        let out = Command::new(bin)
            .args([sandbox::helper::HELPER_FLAG, "--identify"])
            .output()
            .unwrap();
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            sandbox::helper::BUILD_ID
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_gg-sandbox-helper"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not meant to be run by hand"));
}

/// A fixture for each available level, older than two seconds when this returns, with what gg
/// itself makes at start (its sessions and its probe cache) made ahead: a Landlock ruleset
/// computed from a directory changed in the last two seconds serves one command only
/// (directory times are coarse), so tests of reuse start from settled trees.
fn settled_fixtures(parent: Option<&std::path::Path>) -> Vec<(&'static str, Fixture)> {
    let fixtures: Vec<(&'static str, Fixture)> = available_levels()
        .into_iter()
        .map(|level| (level, parent.map_or_else(Fixture::new, Fixture::new_in)))
        .collect();
    for (_, fx) in &fixtures {
        std::fs::create_dir_all(fx.base.join("sessions")).unwrap();
        std::fs::create_dir_all(fx.home.join(".cache/gg")).unwrap();
        // The secrets are read through scripts: the classifier calls a credential read
        // dangerous, and these tests try the sandbox.
        std::fs::write(
            fx.w.join("read.sh"),
            "cat \"$HOME/.ssh/id_rsa\" \"$HOME/.aws/credentials\"; \
             cat \"$HOME/later/note\" 2>&1 || echo NOT-READABLE\n",
        )
        .unwrap();
        std::fs::write(
            fx.w.join("secrets.sh"),
            "cat \"$HOME/.ssh/id_rsa\" \"$HOME/.aws/credentials\" 2>&1\n",
        )
        .unwrap();
        std::fs::write(
            fx.w.join("appeared.sh"),
            "cat \"$HOME/.netrc\" \"$HOME/.config/gh/hosts.yml\" 2>&1\n\
             if [ \"$1\" = write ]; then (echo appended >> .envrc && echo ENVRC-WRITABLE) 2>&1; fi\n\
             echo END\n",
        )
        .unwrap();
        std::fs::write(fx.w.join("sock.sh"), "cat \"$1\" 2>&1; echo END\n").unwrap();
        // What the first sandboxed command would make (the sandbox creates `.gg/` to bind it
        // read-only), made ahead so that the project stays settled.
        std::fs::create_dir_all(fx.w.join(".gg")).unwrap();
        std::fs::create_dir_all(fx.home.join(".config")).unwrap();
    }
    std::thread::sleep(Duration::from_secs(3));
    fixtures
}

/// The server builds each command's Landlock ruleset once and reuses it while the tree it was
/// computed from is unchanged (`fs_rules::Prepared`). A directory made in the home directory
/// between two commands (listed to grant read around `~/.ssh`) is readable by the next command,
/// and the hidden paths stay hidden in every command, reused ruleset or not.
#[test]
fn a_reused_ruleset_still_hides_and_sees_what_appeared_since() {
    // The second command reuses the first one's ruleset and the third must notice the new entry.
    for (level, fx) in settled_fixtures(None) {
        let fx = &fx;
        let server = ScriptedServer::start();
        // Through a script (written before the fixture settled): the classifier calls a
        // credential read dangerous, and here the sandbox is what is tried.
        let read = "sh ./read.sh";
        server.push(tool_call_reply(0, &call(read)));
        server.push(tool_call_reply(1, &call(read)));
        let home = fx.home.clone();
        let second = call(read);
        server.push(Reply::computed(move |_| {
            // Between the second and the third command, on the host.
            std::fs::create_dir(home.join("later")).unwrap();
            std::fs::write(home.join("later/note"), "LATER-NOTE\n").unwrap();
            tool_call_reply(2, &second)
        }));
        server.push(tool_call_reply(3, &call(read)));
        server.push(Reply::text(&["done"]));
        let out = agent(fx, &server, level, &[]).output().expect("run gg");
        assert!(
            out.status.success(),
            "{level}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let results = tool_results(&server);
        assert_eq!(results.len(), 4, "{level}: {results:?}");
        for (i, r) in results.iter().enumerate() {
            assert!(
                !r.contains("SECRET"),
                "{level}: command {i} read a secret: {r}"
            );
            let appeared = i >= 2;
            assert_eq!(
                r.contains("LATER-NOTE"),
                appeared,
                "{level}: command {i}: {r}"
            );
            assert_eq!(
                r.contains("NOT-READABLE"),
                !appeared,
                "{level}: command {i}: {r}"
            );
        }
    }
}

/// The session keeps its sandbox policy from one command to the next while nothing it was
/// built from has changed (`sandbox::watch`: the directories its lookups went through, the
/// files it read). Two commands run with the kept policy; then, on the host, a default secret
/// appears in the home directory (`~/.netrc`) and below `~/.config` (`gh/hosts.yml`), and a
/// protected file in the project (`.envrc`). The next command must find the secrets hidden, at
/// each level, and the file read-only (at the bwrap level: Landlock cannot protect it).
/// (`GG_TEST_WATCH_SETTLED` lets the session keep the policy whatever else changes the
/// fixture's ancestors, so the first two commands do keep it; with the watch made blind, this
/// test fails.)
#[test]
fn a_kept_policy_still_hides_and_protects_what_appeared_since() {
    let quiet = tempfile::Builder::new()
        .prefix("gg-kept-")
        .tempdir_in("/var/tmp")
        .unwrap();
    for (level, fx) in settled_fixtures(Some(quiet.path())) {
        let server = ScriptedServer::start();
        server.push(tool_call_reply(0, &call("sh ./appeared.sh")));
        server.push(tool_call_reply(1, &call("sh ./appeared.sh")));
        let (home, w) = (fx.home.clone(), fx.w.clone());
        server.push(Reply::computed(move |_| {
            // Between the second and the third command, on the host, a clock tick after the
            // second command's stamps (directory times come from a coarse clock).
            std::thread::sleep(Duration::from_millis(50));
            std::fs::write(home.join(".netrc"), "machine x password SECRET-NETRC\n").unwrap();
            std::fs::create_dir(home.join(".config/gh")).unwrap();
            std::fs::write(home.join(".config/gh/hosts.yml"), "token: SECRET-GH\n").unwrap();
            std::fs::write(w.join(".envrc"), "export A=1\n").unwrap();
            tool_call_reply(2, &call("sh ./appeared.sh write"))
        }));
        server.push(Reply::text(&["done"]));
        let results = three_kept_commands(&fx, &server, level, &[]);
        if level == "bwrap" {
            // Landlock cannot take write away below a writable root (security-model.md,
            // "landlock_cannot_protect"): the protected file is read-only at the bwrap level.
            assert!(
                !results[2].contains("ENVRC-WRITABLE"),
                "{level}: .envrc was writable: {}",
                results[2]
            );
            assert_eq!(fx.read("w/.envrc").as_deref(), Some("export A=1\n"));
        }
    }
}

/// Runs the session of the two kept-policy tests (three scripted commands) with
/// `GG_TEST_WATCH_SETTLED` and `env`; every command ran (its `END`) and none read a `SECRET`.
fn three_kept_commands(
    fx: &Fixture,
    server: &ScriptedServer,
    level: &str,
    env: &[(String, String)],
) -> Vec<String> {
    let mut env = env.to_vec();
    env.push(("GG_TEST_WATCH_SETTLED".to_string(), "1".to_string()));
    let out = agent(fx, server, level, &env).output().expect("run gg");
    assert!(
        out.status.success(),
        "{level}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_results(server);
    assert_eq!(results.len(), 3, "{level}: {results:?}");
    for (i, r) in results.iter().enumerate() {
        assert!(r.contains("END"), "{level}: command {i} did not run: {r}");
        assert!(
            !r.contains("SECRET"),
            "{level}: command {i} read a secret: {r}"
        );
    }
    results
}

/// The server's key (its bubblewrap command line) is kept from one command to the next of the
/// same policy while nothing its rendering looked up has changed (`sandbox::watch`). A host
/// socket that appears during the session changes the rendering although the policy is the
/// same: here the ssh agent's path (`SSH_AUTH_SOCK`, absent at the start), where an ordinary
/// file appears on the host between the second and the third command. The rendering binds
/// `/dev/null` over it when present, so the server is replaced and the third command reads
/// nothing; the first two reused the key (`GG_TEST_WATCH_SETTLED`). With the watch made blind
/// this test fails.
#[test]
fn a_kept_server_key_notices_a_host_socket_that_appeared() {
    let quiet = tempfile::Builder::new()
        .prefix("gg-key-")
        .tempdir_in("/var/tmp")
        .unwrap();
    for (level, fx) in settled_fixtures(Some(quiet.path())) {
        if level != "bwrap" {
            // The landlock level has no mounts: Landlock's rules hide the socket.
            continue;
        }
        let agent_sock = fx.base.join("agent.sock");
        let read = format!("sh ./sock.sh {}", agent_sock.display());
        let server = ScriptedServer::start();
        server.push(tool_call_reply(0, &call(&read)));
        server.push(tool_call_reply(1, &call(&read)));
        let (path, third) = (agent_sock.clone(), call(&read));
        server.push(Reply::computed(move |_| {
            // Between the second and the third command, on the host, a clock tick after the
            // second command's stamps.
            std::thread::sleep(Duration::from_millis(50));
            std::fs::write(&path, "SECRET-AGENT\n").unwrap();
            tool_call_reply(2, &third)
        }));
        server.push(Reply::text(&["done"]));
        let env = [(
            "SSH_AUTH_SOCK".to_string(),
            agent_sock.display().to_string(),
        )];
        let results = three_kept_commands(&fx, &server, level, &env);
        assert!(
            results[2].contains("[gg: sandbox restarted"),
            "{level}: the changed rendering replaced the server: {results:?}"
        );
    }
}

/// Symlinks in the home directory never unhide a deny-read path: a dotfiles set-up's
/// `~/.kube -> dotfiles/kube` (the hidden path is the link's canonical target), a link to
/// `~/.ssh`, a link to the key inside it, all there before gg starts (the session's ruleset is
/// built from them). The model reads by every path; at each level nothing secret reaches it,
/// and a link to an ordinary file still reads. (Landlock rules follow inodes: the landlock level
/// once granted a link's target, the hidden directory itself, when it granted read around it.)
#[test]
fn symlinks_in_the_home_never_unhide_a_deny_read_path() {
    use std::os::unix::fs::symlink;
    for level in available_levels() {
        let fx = Fixture::new();
        let h = &fx.home;
        std::fs::create_dir_all(h.join("dotfiles/kube")).unwrap();
        std::fs::write(h.join("dotfiles/kube/config"), "SECRET-KUBE\n").unwrap();
        symlink("dotfiles/kube", h.join(".kube")).unwrap();
        symlink(".ssh", h.join("ssh-link")).unwrap();
        symlink(h.join(".ssh/id_rsa"), h.join("key-link")).unwrap();
        std::fs::write(h.join("notes"), "NOTES-OK\n").unwrap();
        symlink("notes", h.join("notes-link")).unwrap();
        let read = "for f in .ssh/id_rsa ssh-link/id_rsa key-link .kube/config \
                    dotfiles/kube/config .aws/credentials notes-link; do cat \"$HOME/$f\" 2>&1; \
                    done; echo END";
        // Called read-only whatever the classifier says (it calls `cat "$HOME/$f"` a
        // credential read): the kernel's deny-read is what is shown here.
        let force = [("GG_TEST_CLASSIFY_READ_ONLY".to_string(), "1".to_string())];
        let results = session(&fx, level, &[call(read)], &force);
        let r = &results[0];
        assert!(!r.contains("SECRET"), "{level}: a secret was read: {r}");
        assert!(r.contains("NOTES-OK") && r.contains("END"), "{level}: {r}");
    }
}

/// A command too large to be written without waiting for the server (over 64 KiB: a long
/// script) takes the blocking path, and is still served by the session's server.
#[test]
fn a_large_command_is_served_too() {
    for level in available_levels() {
        let fx = Fixture::new();
        let filler = "x".repeat(66 << 10);
        let script = format!("{PARENT_CMDLINE}; : '{filler}'; echo SMALL-DONE; echo BIG-DONE");
        let results = session(&fx, level, &[call("echo SMALL-DONE"), call(&script)], &[]);
        assert!(results[0].contains("SMALL-DONE"), "{level}: {}", results[0]);
        let big = &results[1];
        assert!(
            big.contains("BIG-DONE"),
            "{level}: {}",
            &big[..big.len().min(400)]
        );
        assert!(served(big), "{level}: {}", &big[..big.len().min(400)]);
    }
}

/// A server that dies before it is ready is noticed when its control socket closes, not after
/// the 60 s ready timeout: gg used to keep the server's end of the socket open (in the spawned
/// `Command`) while it waited. Here the helper beside gg is a script that says it is of this
/// build and passes the probe but exits at once when started as the server, and the first
/// command must report that, with the session going on, well before the timeout.
#[test]
fn a_server_that_dies_before_it_is_ready_is_reported_at_once() {
    // Self-contained: inside bubblewrap only the helper file itself is bound, so it cannot
    // hand over to another binary (a clone under /tmp sees a private /tmp there).
    let (_dir, gg) = gg_beside_helper("gg-dying-helper", |_| {
        format!(
            "#!/bin/sh\ncase \"$2\" in\n\
             --identify) echo {build} ;;\n\
             --probe) echo '{ok} landlock=Full abi=6' ;;\n\
             *) echo 'the test helper stops before it is ready' >&2; exit 3 ;;\n\
             esac\n",
            build = sandbox::helper::BUILD_ID,
            ok = sandbox::helper::PROBE_OK,
        )
    });
    for level in available_levels() {
        // The session's self-test finds first that nothing runs at this level, and says why:
        // with nobody watching, no command runs.
        let fx = Fixture::new();
        let results = session_binary(&gg, &fx, level, &[call("echo RAN > ran.txt")], &[]);
        assert!(
            results[0].contains("control: an ordinary write lands: does not hold")
                && results[0].contains("the test helper stops before it is ready"),
            "{level}: {results:?}"
        );
        assert!(!fx.w.join("ran.txt").exists(), "{level}: {results:?}");
        // Past the proof (a test-hooks knob), the server's own death is what the command meets.
        let fx = Fixture::new();
        let started = Instant::now();
        let results = session_binary(
            &gg,
            &fx,
            level,
            &[call("echo RAN > ran.txt")],
            &[("GG_TEST_SELF_TEST_SKIP".to_string(), "1".to_string())],
        );
        let took = started.elapsed();
        assert!(
            results[0].contains("the sandbox command server could not start")
                && results[0].contains("the test helper stops before it is ready"),
            "{level}: {results:?}"
        );
        // Generous against the fix (well under a second here), tight against the bug (60 s).
        assert!(
            took < Duration::from_secs(45),
            "{level}: the session took {took:?}: the dead server was waited for"
        );
    }
}

/// The spare (the next command's process, which the server forks and restricts ahead of the
/// request) is out of a running command's reach: what its descriptors are and its environment
/// cannot be read through /proc (it is not dumpable), and killing it is refused by the signal
/// scope — or, on a kernel without one, only makes the next command forked. Either way the next
/// command runs, served, and the hidden paths stay hidden.
#[test]
fn the_spare_is_out_of_a_commands_reach() {
    // Waits (bounded) for the spare: a process with the server's command line whose parent has
    // it too. The server forks it right after handing this command over.
    // (The pattern is put together at run time so that this script's own command line, and
    // its subshells', do not match it.)
    let probe = r#"s=""; h=__gg-sandbox; pat="${h}-helper=[0-9a-f]* --server"
for i in $(seq 400); do
  for p in /proc/[0-9]*; do
    tr '\0' ' ' <$p/cmdline 2>/dev/null | grep -q -- "$pat" || continue
    pp=$(awk '/^PPid:/{print $2}' $p/status 2>/dev/null)
    tr '\0' ' ' </proc/$pp/cmdline 2>/dev/null | grep -q -- "$pat" && s=${p#/proc/}
  done
  [ -n "$s" ] && break
  sleep 0.05
done
echo "spare=[$s]"
for f in /proc/$s/fd/*; do readlink $f >/dev/null 2>&1 && echo FD-READABLE; done
cat /proc/$s/environ >/dev/null 2>&1 && echo ENV-READABLE
kill -9 $s 2>/dev/null && echo SPARE-KILLED || echo KILL-REFUSED"#;
    // The secrets through a script: the classifier calls a credential read dangerous, and here
    // the sandbox is what is tried.
    let next = format!("{PARENT_CMDLINE}; echo second-ran; sh ./secrets.sh");
    // No spare is made from a ruleset that serves one command only: one built from a directory
    // changed in the last two seconds, such as the directory where the other tests make their
    // fixtures. These live in a directory of their own, below /var/tmp (which the sandbox
    // shows); should an ancestor still change, the server builds the ruleset again once it has
    // settled, and the probe waits for that.
    let quiet = tempfile::Builder::new()
        .prefix("gg-spare-")
        .tempdir_in("/var/tmp")
        .unwrap();
    for (level, fx) in settled_fixtures(Some(quiet.path())) {
        let results = session(&fx, level, &[call(probe), call(&next)], &[]);
        assert_eq!(results.len(), 2, "{level}: {results:?}");
        let first = &results[0];
        assert!(
            !first.contains("spare=[]") && first.contains("spare=["),
            "{level}: no spare found: {first}"
        );
        assert!(
            !first.contains("FD-READABLE") && !first.contains("ENV-READABLE"),
            "{level}: the spare's /proc entries were readable: {first}"
        );
        assert!(
            first.contains("KILL-REFUSED") || first.contains("SPARE-KILLED"),
            "{level}: {first}"
        );
        let second = &results[1];
        assert!(served(second), "{level}: {second}");
        assert!(second.contains("second-ran"), "{level}: {second}");
        assert!(!second.contains("SECRET"), "{level}: {second}");
    }
}

/// A served command's stdin is `/dev/null`, as the docs promise: readable (at its end at once),
/// not a closed descriptor (the open of `/dev/null` landed on 0 with close-on-exec set, so the
/// command started without a stdin). Both for a normal command and for the spare server's next.
#[test]
fn a_served_command_reads_its_stdin_from_dev_null() {
    for level in available_levels() {
        let fx = Fixture::new();
        let probe = "echo \"stdin=$(readlink /proc/self/fd/0)\"; \
                     if cat >/dev/null; then echo read-ok; else echo read-failed; fi";
        let results = session(&fx, level, &[call(probe), call(probe)], &[]);
        for result in &results {
            assert!(
                result.contains("stdin=/dev/null") && result.contains("read-ok"),
                "{level}: {result}"
            );
        }
    }
}
