//! Which `file:` loads the browser may make: one rule for a top-level navigation, every frame at
//! any depth and every sub-resource, enforced by gg before Chromium opens the file.
//!
//! Why not only the top-level URL: a page inside the working directory is normal to open (and the
//! model can write one), and it can frame, embed or load as an image any file Chromium can read;
//! `browser_screenshot` then shows it to the model. Chromium's confinement (`process.rs`) hides
//! only the deny-read list, so another project's `.env`, `/etc/…` or a directory listing would
//! render.
//!
//! How: [`start`] enables the DevTools `Fetch` domain on the *browser* session with a `file:*`
//! pattern, so that it applies to the requests of every target, not only the attached page (a
//! popup the page opens is a target of its own). Chromium pauses each
//! matching request before it opens the file; gg judges the path where it really is, with the
//! rule of a top-level navigation ([`FileRule::classify`]), and continues the request or fails it
//! (`BlockedByClient`): the frame shows Chromium's error page and the file is never opened. Found
//! by experiment on Chromium 156: subframes, nested and `srcdoc` frames, `<object>`, `<embed>`,
//! `<img>`, stylesheets, a `<meta refresh>` or a script navigating a frame later, directory
//! listings and `file://localhost/…` are all paused; `view-source:` frames and http→file
//! redirects Chromium refuses by itself.
//!
//! [`check_frames`] is the second line, for a load the first one missed: before anything of the
//! page goes to the model, every frame and every loaded sub-resource must be a file the rule
//! admits (or no file at all).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use classifier::Class;
use policies::web::{self, Target};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::BrowserError;
use super::cdp::Cdp;
use super::page::CALL_TIMEOUT;

/// What a tool answers when the second line finds a file the first should have blocked.
pub(super) const FRAME_REFUSAL: &str = "the page shows a file outside the working directory or in \
     the deny-read list (in a frame or as a sub-resource), so nothing of it is sent; the browser \
     loads only files inside the working directory";

/// Where the browser's `file:` loads may go: inside the working directory, or a file a person
/// approved opening; never a deny-read path.
pub(super) struct FileRule {
    /// The working directory, canonical.
    cwd: PathBuf,
    /// The deny-read list: never opened, whatever the approval (a browser started without the
    /// sandbox reads what `cat` could not).
    hidden: crate::paths::DenyRead,
    /// Files outside the working directory a person approved opening (by their path as named).
    approved: Mutex<HashSet<PathBuf>>,
    /// `file:` loads refused since the last call reported them.
    blocked: AtomicUsize,
}

/// The verdict on one `file:` load.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Load,
    /// Nothing there: failed too (a link made there after the check would lead anywhere), but
    /// not reported as a file outside.
    Missing,
    Refuse,
}

impl FileRule {
    pub(super) fn new(cwd: PathBuf, hidden: crate::paths::DenyRead) -> FileRule {
        FileRule {
            cwd,
            hidden,
            approved: Mutex::new(HashSet::new()),
            blocked: AtomicUsize::new(0),
        }
    }

    /// The judgement of a top-level navigation to `path`, by where it really is (a symlink in
    /// the working directory pointing outside is outside).
    pub(super) fn classify(&self, path: &Path) -> Result<web::Judgement, BrowserError> {
        // Opened (`O_PATH`: nothing is read) to judge what is there by the kernel's word: where
        // it really is, and whether it is a hard link to a secret, which no path rule sees.
        let opened = rustix::fs::open(
            path,
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .ok();
        let resolved = opened.as_ref().and_then(crate::paths::fd_path);
        if self.hidden.covers(path) || opened.is_some_and(|fd| self.hidden.covers_open(fd)) {
            return Err(BrowserError::Hidden {
                path: path.to_path_buf(),
            });
        }
        Ok(web::judge_file(resolved.as_deref(), &self.cwd))
    }

    /// Records that a person approved opening `path`.
    pub(super) fn approve(&self, path: &Path) {
        if let Ok(mut a) = self.approved.lock() {
            a.insert(path.to_path_buf());
        }
    }

    /// Whether a person approved opening `path`.
    pub(super) fn approved(&self, path: &Path) -> bool {
        self.approved.lock().is_ok_and(|a| a.contains(path))
    }

    /// The verdict on a load of `url` in any frame: the top-level rule, approvals included.
    /// Anything that is not a `file:` URL naming a local path is refused (only those are asked).
    pub(super) fn judge(&self, url: &str) -> Verdict {
        let Ok(Target::File { path, .. }) = web::parse(url) else {
            return Verdict::Refuse;
        };
        match self.classify(&path) {
            Ok(j) if j.class != Class::Dangerous || self.approved(&path) => Verdict::Load,
            Ok(_) if std::fs::symlink_metadata(&path).is_err() => Verdict::Missing,
            _ => Verdict::Refuse,
        }
    }

    /// How many loads were refused since the last call, and resets the count.
    pub(super) fn take_blocked(&self) -> usize {
        self.blocked.swap(0, Ordering::Relaxed)
    }
}

/// Puts every `file:` request of the browser through `rule`, from now until the browser closes.
/// An error leaves the browser unusable: the caller does not start it (fail closed).
pub(super) async fn start(cdp: &Arc<Cdp>, rule: Arc<FileRule>) -> Result<(), String> {
    #[cfg(feature = "test-hooks")]
    if std::env::var_os("GG_TEST_BROWSER_NO_FILE_GATE").is_some_and(|v| v == "1") {
        // The tests' way to prove the second line (`check_frames`) on its own.
        return Ok(());
    }
    // Subscribed before `Fetch.enable`, so no paused request comes before the listener.
    let mut events = cdp.subscribe();
    let answering = Arc::clone(cdp);
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                () = answering.closed() => return,
                e = events.recv() => e,
            };
            match event {
                Ok(e) if e.method == "Fetch.requestPaused" => answer(&answering, &rule, e),
                Ok(_) => {}
                // A paused request whose event was lost stays paused: never loaded.
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(
                        n,
                        "browser: DevTools events lost; a file: load among them stays paused"
                    );
                }
                Err(RecvError::Closed) => return,
            }
        }
    });
    cdp.call(
        "Fetch.enable",
        json!({"patterns": [{"urlPattern": "file:*"}]}),
        None,
        CALL_TIMEOUT,
    )
    .await
    .map(drop)
    .map_err(|e| format!("the browser's file: loads cannot be checked: {e}"))
}

/// Continues or fails one paused request. The answer goes out on a task of its own, so the
/// listener never waits for the browser (a waiting listener could fall behind and lose events).
fn answer(cdp: &Arc<Cdp>, rule: &FileRule, event: super::cdp::Event) {
    let Some(id) = event.params["requestId"].as_str().map(str::to_string) else {
        return;
    };
    let url = event.params["request"]["url"].as_str().unwrap_or_default();
    let verdict = rule.judge(url);
    let (method, params) = match verdict {
        Verdict::Load => ("Fetch.continueRequest", json!({"requestId": id})),
        Verdict::Missing => (
            "Fetch.failRequest",
            json!({"requestId": id, "errorReason": "Failed"}),
        ),
        Verdict::Refuse => {
            rule.blocked.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                url,
                "browser: blocked a file: load outside the working directory"
            );
            (
                "Fetch.failRequest",
                json!({"requestId": id, "errorReason": "BlockedByClient"}),
            )
        }
    };
    let cdp = Arc::clone(cdp);
    tokio::spawn(async move {
        if let Err(e) = cdp
            .call(method, params, event.session.as_deref(), CALL_TIMEOUT)
            .await
        {
            tracing::debug!(error = %e, "browser: answering a paused file: request");
        }
    });
}

/// The second line: every frame of the page (at any depth) and every sub-resource the browser
/// reports loaded must be a file `rule` admits, or not a file. A blocked load shows as an error
/// page (its URL only in `unreachableUrl`) or a resource marked failed, and passes.
pub(super) async fn check_frames(cdp: &Cdp, page: &str, rule: &FileRule) -> Result<(), String> {
    let tree = cdp
        .call("Page.getResourceTree", json!({}), Some(page), CALL_TIMEOUT)
        .await?;
    let mut stack: Vec<&Value> = vec![&tree["frameTree"]];
    while let Some(node) = stack.pop() {
        let resources = node["resources"].as_array().into_iter().flatten();
        let loaded = resources
            .filter(|r| r["failed"] != Value::Bool(true) && r["canceled"] != Value::Bool(true));
        let urls = std::iter::once(&node["frame"]["url"]).chain(loaded.map(|r| &r["url"]));
        for url in urls.filter_map(Value::as_str) {
            let inner = url.strip_prefix("view-source:").unwrap_or(url);
            let is_file = inner
                .get(..5)
                .is_some_and(|s| s.eq_ignore_ascii_case("file:"));
            // A file deleted since it loaded (a rebuilt page) cannot be told apart from one
            // that never existed: only a file known to be outside is refused here.
            if is_file && rule.judge(inner) == Verdict::Refuse {
                tracing::warn!(
                    url,
                    "browser: a frame or sub-resource shows a file outside the working directory"
                );
                return Err(FRAME_REFUSAL.to_string());
            }
        }
        stack.extend(node["childFrames"].as_array().into_iter().flatten());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule on its own: inside loads, outside does not (a symlink by where it leads, a
    /// directory listing too), a person's approval opens exactly that file, nothing there is
    /// failed quietly, and anything that is not a local `file:` URL is refused.
    #[test]
    fn judges_by_the_real_path_like_a_top_level_navigation() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let (cwd, out) = (root.join("proj"), root.join("other"));
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(cwd.join("page.html"), "x").unwrap();
        std::fs::write(out.join(".env"), "x").unwrap();
        std::fs::write(out.join("page.html"), "x").unwrap();
        std::os::unix::fs::symlink(out.join(".env"), cwd.join("link")).unwrap();
        let rule = FileRule::new(cwd.clone(), crate::paths::DenyRead::default());
        let url = |p: &Path| format!("file://{}", p.display());
        assert_eq!(rule.judge(&url(&cwd.join("page.html"))), Verdict::Load);
        assert_eq!(rule.judge(&format!("{}/", url(&cwd))), Verdict::Load);
        assert_eq!(rule.judge(&url(&out.join(".env"))), Verdict::Refuse);
        assert_eq!(rule.judge(&format!("{}/", url(&out))), Verdict::Refuse);
        assert_eq!(rule.judge(&url(&cwd.join("link"))), Verdict::Refuse);
        let localhost = format!("file://localhost{}", out.join(".env").display());
        assert_eq!(rule.judge(&localhost), Verdict::Refuse);
        assert_eq!(rule.judge(&url(&cwd.join("gone"))), Verdict::Missing);
        rule.approve(&out.join("page.html"));
        assert_eq!(rule.judge(&url(&out.join("page.html"))), Verdict::Load);
        assert_eq!(rule.judge(&url(&out.join(".env"))), Verdict::Refuse);
        for other in [
            "file://elsewhere/etc/passwd",
            "http://127.0.0.1/",
            "not a url",
        ] {
            assert_eq!(rule.judge(other), Verdict::Refuse, "{other}");
        }
        assert_eq!(rule.take_blocked(), 0);
    }
}
