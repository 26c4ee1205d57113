//! The real gg-desktop in a real X server (Xvfb) with a private session bus, driven through
//! WebDriver by Debian's WebKitWebDriver (the automation interface of the same WebKitGTK the
//! window embeds), with the real ggd beside it and a scripted model server.
//!
//! `cargo test --workspace` builds `gg` too; the shell runs the `gg` beside its own executable
//! (target/debug/gg). A missing driver, X server or bus fails the test unless GG_ALLOW_SKIP=1;
//! CI also sets GG_REQUIRE_WEBKIT=1 (.ci/run), which keeps it a failure even then.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::desktop::{Desktop, Killed, first_line_of as read_line_of, missing_tools};
use testkit::fixture::skip_unless_required;
use testkit::{Reply, ScriptedServer};

/// Generous: a cold WebKit start on a loaded two-core machine takes seconds.
const WAIT: Duration = Duration::from_secs(120);
const REPLY_TEXT: &str = "Hello from the desktop!";
/// A link the agent's `open` tool classes dangerous (a private address).
const DANGEROUS_LINK: &str = "http://192.168.1.1/admin";

fn wait_until<T>(what: &str, probe: impl FnMut() -> Option<T>) -> T {
    wait_explained(what, probe, String::new)
}

/// [`wait_until`], whose failure also prints what `explain` returns then (a log, say).
fn wait_explained<T>(
    what: &str,
    mut probe: impl FnMut() -> Option<T>,
    explain: impl Fn() -> String,
) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}{}",
            explain()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One HTTP/1.1 exchange with `Connection: close`: (status, body).
fn http(port: u16, method: &str, path: &str, body: Option<&Value>) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(WAIT)).ok()?;
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).ok()?;
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    Some((
        status,
        if chunked {
            unchunk(rest)
        } else {
            rest.to_string()
        },
    ))
}

fn unchunk(mut rest: &str) -> String {
    let mut body = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || after.len() < size {
            break;
        }
        body.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    body
}

/// A minimal W3C WebDriver client.
struct Driver {
    port: u16,
    session: String,
}

impl Driver {
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}{path}", self.session);
        let (_, text) = http(self.port, method, &path, body.as_ref())
            .unwrap_or_else(|| panic!("no answer from the WebDriver to {method} {path}"));
        let reply: Value = serde_json::from_str(&text).unwrap_or(json!({"value": text}));
        reply["value"].clone()
    }

    fn find(&self, xpath: &str) -> Option<String> {
        let found = self.call(
            "POST",
            "/element",
            Some(json!({"using": "xpath", "value": xpath})),
        );
        found
            .as_object()?
            .iter()
            .find(|(key, _)| key.starts_with("element-"))
            .and_then(|(_, id)| id.as_str().map(str::to_string))
    }

    fn wait_for(&self, xpath: &str) -> String {
        wait_until(xpath, || self.find(xpath))
    }

    fn click(&self, element: &str) {
        self.call(
            "POST",
            &format!("/element/{element}/click"),
            Some(json!({})),
        );
    }

    fn type_into(&self, element: &str, text: &str) {
        self.call(
            "POST",
            &format!("/element/{element}/value"),
            Some(json!({"text": text})),
        );
    }

    fn script(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
    }

    fn url(&self) -> String {
        self.call("GET", "/url", None)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

/// `/proc/<pid>/stat`: (state, parent).
fn stat(pid: u32) -> Option<(char, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 2..];
    let mut fields = after.split(' ');
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((state, parent))
}

/// Alive and not a zombie waiting for its parent.
fn running(pid: u32) -> bool {
    stat(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

fn children(parent: u32) -> Vec<u32> {
    pids()
        .into_iter()
        .filter(|&pid| stat(pid).is_some_and(|(_, p)| p == parent) && running(pid))
        .collect()
}

fn descendants(root: u32) -> Vec<u32> {
    let mut all = vec![root];
    let mut at = 0;
    while at < all.len() {
        all.extend(children(all[at]));
        at += 1;
    }
    all
}

fn exe(pid: u32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe")).ok()
}

fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// The one ggd child of `shell` that runs `gg`.
fn ggd_of(shell: u32, gg: &Path) -> Option<u32> {
    let found: Vec<u32> = children(shell)
        .into_iter()
        .filter(|&pid| exe(pid).as_deref() == Some(gg))
        .collect();
    (found.len() == 1).then(|| found[0])
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn the_window_runs_a_turn_refuses_foreign_pages_and_leaves_no_process() {
    let missing = missing_tools(&["Xvfb", "dbus-daemon", "WebKitWebDriver"]);
    if !missing.is_empty() {
        // A failure, as in gg's other suites (README), unless GG_ALLOW_SKIP=1 makes it a SKIP
        // line; GG_REQUIRE_WEBKIT=1 (CI) keeps it a failure even then.
        skip_unless_required(
            "GG_REQUIRE_WEBKIT",
            &format!("not installed: {}", missing.join(", ")),
        );
        return;
    }
    let shell_exe = PathBuf::from(env!("CARGO_BIN_EXE_gg-desktop"));
    let gg = shell_exe.with_file_name("gg");
    assert!(
        gg.is_file(),
        "{} is missing: the shell runs the gg beside it; build the workspace first \
         (cargo build, or cargo test --workspace)",
        gg.display()
    );
    let gg = gg.canonicalize().unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let repo = tmp.path().join("repo");
    let runtime_dir = tmp.path().join("run");
    for dir in [&home.join(".gg"), &repo, &runtime_dir] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::set_permissions(
        &runtime_dir,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let repo = repo.canonicalize().unwrap();
    // The model (gg's shared scripted server, testkit): the first turn's answer, with a link the
    // agent's `open` tool classes dangerous.
    let model = ScriptedServer::start();
    model.push(Reply::text(&[&format!(
        "{REPLY_TEXT} The router: [admin page]({DANGEROUS_LINK})."
    )]));
    std::fs::write(
        home.join(".gg/config.json"),
        json!({
            "default": "local:m",
            "providers": {"local": {"baseURL": model.base_url(),
                                    "apiKey": "sk-test", "models": ["m"]}},
        })
        .to_string(),
    )
    .unwrap();

    let desk = Desktop::start("1280x900x24");
    let (display, bus_address) = (desk.display.clone(), desk.bus_address.clone());
    let notifications = testkit::notifications::NotificationService::start(&bus_address);

    // The driver starts the shell with its own environment: this is the shell's environment.
    let log_path = tmp.path().join("driver.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let port = free_port();
    let driver = Command::new("WebKitWebDriver")
        .arg(format!("--port={port}"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("DISPLAY", &display)
        .env("DBUS_SESSION_BUS_ADDRESS", &bus_address)
        .env("XDG_RUNTIME_DIR", &runtime_dir)
        .env("GG_SESSION_DIR", tmp.path().join("sessions"))
        .env("NO_AT_BRIDGE", "1")
        .current_dir(&repo)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let driver_pid = driver.id();
    let _driver = Killed(driver);
    wait_until("the WebDriver to listen", || {
        http(port, "GET", "/status", None)
    });

    // --- start: the sessions view appears -----------------------------------------------------
    let started = Instant::now();
    let capabilities = json!({"capabilities": {"alwaysMatch": {"webkitgtk:browserOptions": {
        "binary": shell_exe,
        "args": ["--automation", "--workspace", repo],
    }}}});
    let (_, created) = http(port, "POST", "/session", Some(&capabilities)).unwrap();
    let created: Value = serde_json::from_str(&created).unwrap_or(json!({"value": created}));
    let session = created["value"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| {
            panic!(
                "no WebDriver session: {created}\n{}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            )
        })
        .to_string();
    let driver = Driver { port, session };
    let new_session = driver.wait_for("//button[normalize-space()='New session']");
    eprintln!(
        "gg-desktop: sessions view shown {} ms after the WebDriver session was requested",
        started.elapsed().as_millis()
    );

    // --- the window's title names the workspace ----------------------------------------------
    let x11 = |args: &[&str]| {
        Command::new("python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/x11_window.py"))
            .args(args)
            .env("DISPLAY", &display)
            .output()
            .unwrap()
    };
    let title = x11(&["title", "gg — "]);
    assert!(title.status.success(), "{title:?}");
    assert_eq!(
        String::from_utf8_lossy(&title.stdout).trim(),
        format!("gg — {}", repo.display())
    );

    // --- ggd is the shell's child, with no token on its command line --------------------------
    let shell = wait_until("the shell process", || {
        let found: Vec<u32> = pids()
            .into_iter()
            .filter(|&pid| running(pid) && exe(pid).as_deref() == Some(shell_exe.as_path()))
            .collect();
        (found.len() == 1).then(|| found[0])
    });
    assert_eq!(stat(shell).map(|(_, parent)| parent), Some(driver_pid));
    let ggd = wait_until("ggd, the shell's child", || ggd_of(shell, &gg));
    // ggd re-executes itself once to move its secrets from the environment into a pipe
    // (`__gg-secrets-fd=N`, gg's secret hand-over); that marker carries no secret.
    let args: Vec<String> = cmdline(ggd)
        .into_iter()
        .filter(|a| !a.starts_with("__gg-secrets-fd="))
        .collect();
    assert_eq!(
        args,
        [
            "ggd",
            "--http",
            "127.0.0.1:0",
            "--exit-on-stdin-eof",
            "--cwd",
            repo.to_str().unwrap()
        ],
        "ggd's command line"
    );
    let environment = std::fs::read(format!("/proc/{ggd}/environ")).unwrap();
    assert!(
        !String::from_utf8_lossy(&environment).contains("GGD_TOKEN="),
        "the token is still in ggd's environment"
    );
    let page = driver.url();
    assert!(page.starts_with("http://127.0.0.1:"), "{page}");
    assert!(
        !page.contains("token"),
        "the token is in the address: {page}"
    );

    // --- a turn against the scripted model ----------------------------------------------------
    driver.click(&new_session);
    let prompt = driver.wait_for("//textarea[@id='prompt']");
    driver.type_into(&prompt, "say hello");
    driver.click(&driver.wait_for("//button[normalize-space()='Send']"));
    driver.wait_for(&format!(
        "//*[@data-testid='assistant-message'][contains(., '{REPLY_TEXT}')]"
    ));
    assert!(
        model
            .requests()
            .iter()
            .any(|r| r.path.ends_with("/chat/completions")
                && String::from_utf8_lossy(&r.body).contains("say hello")),
        "the model was not asked"
    );

    // --- a dangerous link asks first: the dialog closed unanswered, nothing is opened ---------
    // Clicked from the page's own script, in a task of its own: a WebDriver click can wait on
    // the modal dialog the click opens, which only this test closes. The link is looked up in
    // that same task, right before its click: the transcript may re-render the answer at any
    // moment (the turn's end), and a link found earlier, even one task earlier, may by then be
    // detached, where its click reaches no listener and is silently lost (CI failed so once).
    // A task that finds no link leaves the flag unset, and the next probe schedules another.
    wait_until("the link to be clicked", || {
        (driver.script(
            "if (window.__ggLinkClicked) return true; \
             if (!window.__ggClickScheduled) { \
                 window.__ggClickScheduled = true; \
                 const text = arguments[0]; \
                 setTimeout(() => { \
                     window.__ggClickScheduled = false; \
                     const link = [...document.querySelectorAll('a')] \
                         .find((a) => a.textContent.trim() === text); \
                     if (link && link.isConnected) { \
                         window.__ggLinkClicked = true; \
                         link.click(); \
                     } \
                 }, 0); \
             } \
             return false;",
            json!(["admin page"]),
        ) == json!(true))
        .then_some(())
    });
    wait_explained(
        "the confirmation dialog",
        || {
            x11(&["title", "gg: open a link?"])
                .status
                .success()
                .then_some(())
        },
        || {
            format!(
                "; the shell and driver's log:\n{}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            )
        },
    );
    assert!(x11(&["close", "gg: open a link?"]).status.success());
    wait_until("the shell to refuse the link", || {
        std::fs::read_to_string(&log_path)
            .ok()?
            .contains(&format!("not opening {DANGEROUS_LINK:?}"))
            .then_some(())
    });
    assert_eq!(driver.url(), page, "the window followed the link");

    // --- an approval waits while the window is not focused: a desktop notification -----------
    // Another window takes the focus, as when the person switches to another application.
    let mut other_window = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/x11_window.py"))
        .args(["focus-away", "-"])
        .env("DISPLAY", &display)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    assert_eq!(read_line_of(&mut other_window), "ready");
    wait_until("the page to lose the focus", || {
        (driver.script("return document.hasFocus();", json!([])) == json!(false)).then_some(())
    });
    model.push(Reply::tool_call(
        "call_1",
        "bash",
        &json!({"command": "touch note.txt"}).to_string(),
    ));
    let prompt = driver.wait_for("//textarea[@id='prompt']");
    driver.type_into(&prompt, "make a note");
    driver.click(&driver.wait_for("//button[normalize-space()='Send']"));
    driver.wait_for("//*[@data-testid='approval'][contains(., 'touch note.txt')]");
    let (summary, body) = wait_until("the approval's notification", || {
        notifications.received().first().cloned()
    });
    assert_eq!(summary, "gg: an approval is waiting");
    assert!(body.contains("touch note.txt"), "{body}");
    drop(other_window.stdin.take());
    let _ = other_window.wait();

    // A screenshot shows the last frame painted: wait for two more, so it shows the answer.
    let painted = driver.call(
        "POST",
        "/execute/async",
        Some(json!({"script": "const done = arguments[arguments.length - 1]; \
                               requestAnimationFrame(() => requestAnimationFrame(() => done(true)));",
                    "args": []})),
    );
    assert_eq!(painted, json!(true), "no frame painted");
    // --- a screenshot of the real window, kept as an artifact ---------------------------------
    let shot = driver.call("GET", "/screenshot", None);
    let png = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        shot.as_str().expect("screenshot"),
    )
    .unwrap();
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("desktop-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    std::fs::write(artifacts.join("gg-desktop.png"), &png).unwrap();
    eprintln!(
        "gg-desktop: screenshot saved as {}",
        artifacts.join("gg-desktop.png").display()
    );

    // --- navigation to a foreign page is refused, and nothing is fetched from it --------------
    let foreign = format!("http://{}/foreign-page", model.addr());
    driver.script(
        "window.location.href = arguments[0]; return true;",
        json!([foreign]),
    );
    wait_until("the shell to refuse the navigation", || {
        std::fs::read_to_string(&log_path)
            .ok()?
            .contains(&format!("refused navigation to {foreign:?}"))
            .then_some(())
    });
    assert_eq!(driver.url(), page, "the page changed");
    assert!(
        !model
            .requests()
            .iter()
            .any(|r| r.path.contains("/foreign-page")),
        "the foreign page was fetched"
    );

    // --- a second gg-desktop brings the first to the front and exits --------------------------
    let second = Command::new(&shell_exe)
        .args(["--workspace", repo.to_str().unwrap()])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("DISPLAY", &display)
        .env("DBUS_SESSION_BUS_ADDRESS", &bus_address)
        .env("XDG_RUNTIME_DIR", &runtime_dir)
        .output()
        .unwrap();
    assert!(second.status.success(), "{second:?}");
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("already running"),
        "{second:?}"
    );
    assert_eq!(
        ggd_of(shell, &gg),
        Some(ggd),
        "the first shell's ggd changed"
    );

    // --- a crashed ggd is restarted once, with a notice in the page ---------------------------
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(ggd as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    driver.wait_for("//*[@role='alert'][contains(., 'was restarted')]");
    let restarted = wait_until("the restarted ggd", || {
        ggd_of(shell, &gg).filter(|&pid| pid != ggd)
    });
    driver.wait_for("//button[normalize-space()='New session']");

    // --- Choose workspace…: the folder dialog, then a ggd for the chosen folder ---------------
    let other = tmp.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let other = other.canonicalize().unwrap();
    driver.click(&driver.wait_for("//button[normalize-space()='Choose workspace…']"));
    wait_until("the folder dialog", || {
        x11(&["title", "Choose a workspace"])
            .status
            .success()
            .then_some(())
    });
    let typed = x11(&[
        "type",
        "Choose a workspace",
        &format!("{}/", other.display()),
        "<Return>",
    ]);
    assert!(typed.status.success(), "{typed:?}");
    let other_title = format!("gg — {}", other.display());
    wait_until("the window's title to name the chosen workspace", || {
        (String::from_utf8_lossy(&x11(&["title", "gg — "]).stdout).trim() == other_title)
            .then_some(())
    });
    let restarted = wait_until("the chosen workspace's ggd", || {
        ggd_of(shell, &gg).filter(|&pid| {
            pid != restarted && cmdline(pid).last() == Some(&other.display().to_string())
        })
    });
    driver.wait_for(&format!(
        "//span[@title='workspace'][normalize-space()='{}']",
        other.display()
    ));

    // --- closing the window stops ggd and leaves no process -----------------------------------
    let family = descendants(shell);
    assert!(family.contains(&restarted), "{family:?}");
    // As a window manager's close button: WM_DELETE_WINDOW to the real X window.
    let closed = x11(&["close", "gg — "]);
    assert!(closed.status.success(), "{closed:?}");
    wait_until("every process of the shell to end", || {
        let left: Vec<u32> = family.iter().copied().filter(|&p| running(p)).collect();
        left.is_empty().then_some(())
    });
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(
        log.contains("ggd stopped unexpectedly"),
        "no restart notice in the log:\n{log}"
    );
    // ggd shut down cleanly (its own record, passed on by the shell), then the shell said so.
    let ggd_stopped = log.rfind(r#""message":"ggd stopped""#);
    let shell_closed = log.rfind(&format!(
        "the window closed; its ggd (pid {restarted}) has stopped"
    ));
    assert!(
        ggd_stopped.is_some() && shell_closed.is_some() && ggd_stopped < shell_closed,
        "no clean stop in the log:\n{log}"
    );
}
