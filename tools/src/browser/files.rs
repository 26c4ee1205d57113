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
//! rule of a top-level navigation ([`FileRule::classify`]), and answers a regular file itself
//! from the object it judged (Chromium opening the name a round trip later would follow a link
//! swapped in since), lets Chromium load a directory's listing, or fails the request
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
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use classifier::Class;
use policies::web::{self, Target};
use rustix::fs::{Mode, OFlags};
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
        self.classify_opened(path).map(|(judgement, _)| judgement)
    }

    /// [`FileRule::classify`], and what was judged, held open (`O_PATH`: nothing is read, a FIFO
    /// or device is not touched) when there is anything: the kernel says where it really is,
    /// and whether it is a hard link to a secret, which no path rule sees. A load serves that
    /// very object ([`read_judged`]), not the name again.
    fn classify_opened(
        &self,
        path: &Path,
    ) -> Result<(web::Judgement, Option<OwnedFd>), BrowserError> {
        let opened = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).ok();
        let resolved = opened.as_ref().and_then(crate::paths::fd_path);
        if self.hidden.covers(path)
            || opened
                .as_ref()
                .is_some_and(|fd| self.hidden.covers_open(fd))
        {
            return Err(BrowserError::Hidden {
                path: path.to_path_buf(),
            });
        }
        Ok((web::judge_file(resolved.as_deref(), &self.cwd), opened))
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
        self.judge_opened(url).0
    }

    /// [`FileRule::judge`], and for a load the object judged, held open.
    fn judge_opened(&self, url: &str) -> (Verdict, Option<OwnedFd>) {
        let Ok(Target::File { path, .. }) = web::parse(url) else {
            return (Verdict::Refuse, None);
        };
        match self.classify_opened(&path) {
            Ok((j, fd)) if j.class != Class::Dangerous || self.approved(&path) => {
                (Verdict::Load, fd)
            }
            Ok(_) if std::fs::symlink_metadata(&path).is_err() => (Verdict::Missing, None),
            _ => (Verdict::Refuse, None),
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
    let (verdict, judged) = rule.judge_opened(url);
    crate::store::pause_point("browser.file-judged");
    let (method, params) = match verdict {
        // A regular file is served from the object judged: Chromium opening the name again
        // would read whatever a link swapped in since leads to. Anything else (a directory's
        // listing: names only) Chromium loads itself.
        Verdict::Load => match judged.as_ref().and_then(read_judged) {
            Some(body) => ("Fetch.fulfillRequest", fulfilment(&id, url, &body)),
            None => ("Fetch.continueRequest", json!({"requestId": id})),
        },
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

/// Files larger than this are not served from the judged descriptor (the whole body goes over
/// DevTools, base64): such a load is failed.
const SERVED_MAX: u64 = 32 * 1024 * 1024;

/// The contents of the object `judged` (an `O_PATH` descriptor) when it is a regular file,
/// opened again through its own descriptor (`/proc/self/fd`: the same inode, whatever its
/// name leads to now); `None` for anything else. A regular file that cannot be read, or is
/// larger than [`SERVED_MAX`], is served empty: never loaded by name instead.
fn read_judged(judged: &OwnedFd) -> Option<Vec<u8>> {
    use std::io::Read;
    let stat = rustix::fs::fstat(judged).ok()?;
    if stat.st_mode & 0o170000 != 0o100000 {
        return None;
    }
    let reopened = rustix::fs::open(
        format!("/proc/self/fd/{}", judged.as_raw_fd()),
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
        Mode::empty(),
    );
    let mut body = Vec::new();
    if let Ok(fd) = reopened
        && std::fs::File::from(fd)
            .take(SERVED_MAX + 1)
            .read_to_end(&mut body)
            .is_ok()
        && body.len() as u64 <= SERVED_MAX
    {
        return Some(body);
    }
    tracing::warn!("browser: a judged file: load could not be read; served empty");
    Some(Vec::new())
}

/// The `Fetch.fulfillRequest` parameters that answer request `id` for `url` with `body`, typed
/// by the extension as Chromium types a `file:` load (others left for it to sniff).
fn fulfilment(id: &str, url: &str, body: &[u8]) -> Value {
    use base64::Engine;
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let ext = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    let mime = match ext.as_str() {
        "html" | "htm" => Some("text/html"),
        "xhtml" => Some("application/xhtml+xml"),
        "css" => Some("text/css"),
        "js" | "mjs" => Some("text/javascript"),
        "json" => Some("application/json"),
        "svg" => Some("image/svg+xml"),
        "png" => Some("image/png"),
        "gif" => Some("image/gif"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "webp" => Some("image/webp"),
        "txt" | "md" => Some("text/plain"),
        _ => None,
    };
    let headers: Vec<Value> = mime
        .map(|m| json!({"name": "Content-Type", "value": m}))
        .into_iter()
        .collect();
    json!({
        "requestId": id,
        "responseCode": 200,
        "responseHeaders": headers,
        "body": base64::engine::general_purpose::STANDARD.encode(body),
    })
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
