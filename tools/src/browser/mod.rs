//! Browser tools: headless Chromium driven over the DevTools Protocol, for reading documentation,
//! looking at the dev server the agent just started, or a failing UI.
//!
//! | tool | class |
//! |---|---|
//! | `browser_navigate {url}` | by target ([`policies::web`]): normal for public and loopback http(s) and files in the working directory, dangerous otherwise |
//! | `browser_read {selector?}` | read-only |
//! | `browser_screenshot {full_page?, selector?, width?, height?}` | pre-approved (writes one PNG under `~/.gg/media/screenshots`) |
//! | `browser_click {selector}`, `browser_type {selector, text}` | normal; only with `browser.click` / `browser.type` in config |
//! | `browser_eval {expression}` | dangerous; only with `browser.eval` in config |
//!
//! One browser per session, started lazily by the first call, killed when the session's tools
//! are dropped, on cancellation, and (with its pipe) when gg dies. Every request it makes goes
//! through [`guard::Guard`]'s proxy; under `--sandbox` the browser runs inside the sandbox too.
//! Every `file:` load, top-level or in any frame or sub-resource, is judged by gg before Chromium
//! opens the file ([`files`]): inside the working directory, or approved, and never deny-read.

mod call;
pub(crate) mod cdp;
mod config;
mod error;
mod files;
pub mod guard;
mod page;
pub mod process;
mod screenshot_file;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use classifier::Class;
use policies::web::{self, Target};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::network::proxy::ProxyHandle;
use crate::network::{AllowList, NetworkMode, NetworkPolicy, Refusal};
use crate::registry::SandboxSetting;
use call::{
    EvalArgs, MAX_DIMENSION, NavigateArgs, Plan, ReadArgs, SelectorArgs, ShotArgs, TypeArgs,
    parse_args,
};
use page::{CALL_TIMEOUT, READ_JS, attach_page, current_url, evaluate};
use screenshot_file::save_screenshot;

pub use call::{BrowserCall, spec};
pub use config::BrowserConfig;
pub use error::BrowserError;
pub use page::PAGE_THREW;
pub use screenshot_file::png_size;

/// Page text returned to the model is cut here, with a marker.
pub const MAX_READ_CHARS: usize = 12_000;
/// How long a page may take to load before the tool answers anyway.
const LOAD_TIMEOUT: Duration = Duration::from_secs(30);
/// The tallest full-page screenshot (CSS pixels).
const MAX_FULL_PAGE_HEIGHT: f64 = 16_384.0;

/// What a finished call hands back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Done {
    /// gg's own lines (URL, status, path, notes).
    pub text: String,
    /// Page-controlled text: `(source URL, label, text)`, wrapped as untrusted content by the
    /// caller after a line with the label.
    pub page_text: Option<(String, &'static str, String)>,
    /// For the audit trail.
    pub record: session::audit::BrowserRecord,
    /// Connections the guard refused during the call.
    pub refused: Vec<Refusal>,
    /// The network setting the guard applied (`on`, `allow-list`, `off`).
    pub network: String,
}

/// The session's browser state.
struct State {
    process: Option<process::Process>,
    proxy: Option<Arc<ProxyHandle>>,
    /// The page target's DevTools session.
    page: Option<String>,
    restarted: bool,
}

/// The browser tools of one session.
pub struct BrowserTools {
    /// Where `file:` loads may go, top-level or not (the working directory, the deny-read list,
    /// the files a person approved); shared with the browser's interception of `file:` requests.
    files: Arc<files::FileRule>,
    executable: PathBuf,
    config: BrowserConfig,
    sandbox: SandboxSetting,
    guard: Arc<guard::Guard>,
    screenshots: PathBuf,
    state: tokio::sync::Mutex<State>,
}

impl BrowserTools {
    /// The tools for a session in `cwd`, or `None` when they are disabled or no Chromium is
    /// found. `home` is where `~/.gg/media/screenshots` lives.
    pub fn new(
        cwd: &Path,
        home: &Path,
        config: &BrowserConfig,
        sandbox: SandboxSetting,
    ) -> Result<Option<BrowserTools>, BrowserError> {
        if !config.enabled {
            return Ok(None);
        }
        let Some(executable) = process::find_executable(config.executable.as_deref()) else {
            if let Some(p) = &config.executable {
                return Err(BrowserError::Executable { path: p.clone() });
            }
            return Ok(None);
        };
        let private =
            AllowList::parse(&config.allow_private_hosts).map_err(BrowserError::PrivateHosts)?;
        // Without the sandbox the run's network setting is not enforced for commands either;
        // the browser then gets `on` (addresses judged, nothing else).
        let network = match &sandbox {
            SandboxSetting::Off => NetworkPolicy {
                mode: NetworkMode::On,
                allow: AllowList::default(),
            },
            SandboxSetting::On { network, .. } => network.policy.clone(),
        };
        let guard = guard::Guard::new(
            network.mode,
            network.allow,
            private,
            crate::network::test_resolver(),
            Some(home.to_path_buf()),
        );
        Ok(Some(BrowserTools {
            files: Arc::new(files::FileRule::new(
                std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf()),
                crate::paths::DenyRead::for_root(cwd).map_err(BrowserError::Sandbox)?,
            )),
            executable,
            config: config.clone(),
            sandbox,
            guard: Arc::new(guard),
            screenshots: home.join(".gg").join("media").join("screenshots"),
            state: tokio::sync::Mutex::new(State {
                process: None,
                proxy: None,
                page: None,
                restarted: false,
            }),
        }))
    }

    /// The tools' names for this config.
    pub fn tool_names(&self) -> Vec<&'static str> {
        self.config.tool_names()
    }

    /// Classifies a navigation target.
    pub fn classify_url(&self, url: &str) -> Result<(web::Judgement, Target), BrowserError> {
        let target = web::parse(url).map_err(BrowserError::Target)?;
        let judged = match &target {
            Target::Web {
                host, credentials, ..
            } => {
                let resolved = match host {
                    web::WebHost::Name(name) => self.guard.resolve_now(name),
                    _ => Vec::new(),
                };
                let allowed = self.guard.allows_special(&host.display());
                web::judge_web(host, &resolved, *credentials, allowed)
            }
            Target::File { path, .. } => self.files.classify(path)?,
            Target::Other { scheme, .. } => web::judge_other(scheme),
        };
        Ok((judged, target))
    }

    /// Parses and classifies a call. Nothing runs here.
    pub fn describe(&self, name: &str, arguments: &str) -> Result<BrowserCall, BrowserError> {
        if !self.config.tool_names().contains(&name) {
            return Err(BrowserError::NotEnabled(name.to_string()));
        }
        let call =
            |class, rule: &str, reason: String, summary: String, grant_key, plan| BrowserCall {
                class,
                rule: rule.to_string(),
                details: reason.clone(),
                reason,
                summary,
                grant_key,
                plan,
            };
        Ok(match name {
            "browser_navigate" => {
                let a: NavigateArgs = parse_args(arguments)?;
                let (judged, target) = self.classify_url(&a.url)?;
                let url = target.url().to_string();
                let dangerous = judged.class == Class::Dangerous;
                let (grant, host, file) = match &target {
                    Target::Web { host, port, .. } => (
                        format!("browser:{}:{port}", host.display()),
                        dangerous.then(|| host.display()),
                        None,
                    ),
                    Target::File { path, .. } => (
                        format!("browser:file:{}", path.display()),
                        None,
                        dangerous.then(|| path.clone()),
                    ),
                    Target::Other { .. } => (format!("browser:{url}"), None, None),
                };
                let mut c = call(
                    judged.class,
                    judged.rule,
                    judged.reason.clone(),
                    format!("browser_navigate {}", termsafe::visible_inline(&url)),
                    grant,
                    Plan::Navigate {
                        url: url.clone(),
                        host,
                        file,
                    },
                );
                c.details = format!(
                    "open {} in the browser\n  - {}: {}",
                    termsafe::visible_inline(&url),
                    judged.rule,
                    judged.reason
                );
                c
            }
            "browser_read" => {
                let a: ReadArgs = parse_args(arguments)?;
                call(
                    Class::ReadOnly,
                    "browser.read",
                    "reads the current page".into(),
                    "browser_read".into(),
                    "browser_read".into(),
                    Plan::Read {
                        selector: a.selector,
                    },
                )
            }
            "browser_screenshot" => {
                let a: ShotArgs = parse_args(arguments)?;
                let width = a.width.unwrap_or(1280).clamp(100, MAX_DIMENSION);
                let height = a.height.unwrap_or(800).clamp(100, MAX_DIMENSION);
                call(
                    Class::ReadOnly,
                    "browser.screenshot",
                    format!("writes one PNG under {}", self.screenshots.display()),
                    format!("browser_screenshot {width}x{height}"),
                    "browser_screenshot".into(),
                    Plan::Screenshot {
                        full_page: a.full_page.unwrap_or(false),
                        selector: a.selector,
                        width,
                        height,
                    },
                )
            }
            "browser_click" => {
                let a: SelectorArgs = parse_args(arguments)?;
                call(
                    Class::Normal,
                    "browser.click",
                    format!("clicks {} (may submit a form or follow a link)", a.selector),
                    format!("browser_click {}", termsafe::visible_inline(&a.selector)),
                    format!("browser_click\0{arguments}"),
                    Plan::Click {
                        selector: a.selector,
                    },
                )
            }
            "browser_type" => {
                let a: TypeArgs = parse_args(arguments)?;
                call(
                    Class::Normal,
                    "browser.type",
                    format!(
                        "types {} characters into {}",
                        a.text.chars().count(),
                        a.selector
                    ),
                    format!("browser_type {}", termsafe::visible_inline(&a.selector)),
                    format!("browser_type\0{arguments}"),
                    Plan::Type {
                        selector: a.selector,
                        text: a.text,
                    },
                )
            }
            "browser_eval" => {
                let a: EvalArgs = parse_args(arguments)?;
                let mut c = call(
                    Class::Dangerous,
                    "browser.eval",
                    "runs arbitrary JavaScript in the page (can read and send anything the page can)"
                        .into(),
                    "browser_eval".into(),
                    format!("browser_eval\0{arguments}"),
                    Plan::Eval {
                        expression: a.expression.clone(),
                    },
                );
                c.details = format!("{}\n\n{}", c.reason, a.expression);
                c
            }
            other => return Err(BrowserError::UnknownTool(other.to_string())),
        })
    }

    /// Runs an approved call. A cancelled call closes the browser.
    pub async fn execute(
        &self,
        call: &BrowserCall,
        cancel: &CancellationToken,
    ) -> Result<Done, BrowserError> {
        let finished = {
            let mut state = self.state.lock().await;
            tokio::select! {
                r = self.run(&mut state, call) => Some(r),
                () = cancel.cancelled() => None,
            }
        };
        match finished {
            Some(r) => r.map_err(BrowserError::Run),
            None => {
                self.close().await;
                Err(BrowserError::Cancelled)
            }
        }
    }

    /// Closes the browser (it starts again on the next call).
    pub async fn close(&self) {
        let mut state = self.state.lock().await;
        state.process = None;
        state.page = None;
    }

    /// Runs the call; when it failed because the browser died under it (a crash mid-call, or
    /// one that was still under way when the call began), the call is tried again, and the
    /// retry's `ensure` decides as for a crash seen before the call: the first restarts the
    /// browser with a note, a second is refused as "crashed again".
    async fn run(&self, state: &mut State, call: &BrowserCall) -> Result<Done, String> {
        match self.attempt(state, call).await {
            Err(e) if state.process.as_mut().is_some_and(|p| !p.alive()) => {
                tracing::warn!(error = %e, "browser died during a call; trying once more");
                self.attempt(state, call).await
            }
            r => r,
        }
    }

    async fn attempt(&self, state: &mut State, call: &BrowserCall) -> Result<Done, String> {
        let note = self.ensure(state).await?;
        let scope = state.proxy.as_ref().map(|p| p.begin_call());
        let (cdp, page, level) = match (&state.process, &state.page) {
            (Some(p), Some(page)) => (Arc::clone(&p.cdp), page.clone(), p.level.clone()),
            _ => return Err("the browser is not running".into()),
        };
        let mut done = match &call.plan {
            Plan::Navigate { url, host, file } => {
                if let Some(h) = host {
                    // A person approved this call: the guard lets exactly this host through.
                    self.guard.approve(h);
                }
                if let Some(f) = file {
                    self.files.approve(f);
                }
                self.navigate(&cdp, &page, url).await?
            }
            Plan::Read { selector } => {
                let url = self.current_url_checked(&cdp, &page).await?;
                self.read(&cdp, &page, &url, selector.as_deref()).await?
            }
            Plan::Screenshot {
                full_page,
                selector,
                width,
                height,
            } => {
                let url = self.current_url_checked(&cdp, &page).await?;
                self.screenshot(
                    &cdp,
                    &page,
                    &url,
                    *full_page,
                    selector.as_deref(),
                    *width,
                    *height,
                )
                .await?
            }
            Plan::Click { selector } => {
                let url = self.current_url_checked(&cdp, &page).await?;
                self.act(&cdp, &page, &url, selector, None).await?
            }
            Plan::Type { selector, text } => {
                let url = self.current_url_checked(&cdp, &page).await?;
                self.act(&cdp, &page, &url, selector, Some(text)).await?
            }
            Plan::Eval { expression } => {
                // A person approved running script in this page, not showing its frames'
                // files: the page's URL is not judged again, its frames are.
                files::check_frames(&cdp, &page, &self.files).await?;
                let url = current_url(&cdp, &page).await?;
                let v = evaluate(&cdp, &page, expression, true).await?;
                let text = serde_json::to_string_pretty(&v).unwrap_or_default();
                Done {
                    text: "the page's URL and the result:".to_string(),
                    page_text: Some((url.clone(), "", format!("url: {url}\nresult:\n{text}"))),
                    record: record(&url, None, None),
                    refused: Vec::new(),
                    network: String::new(),
                }
            }
        };
        if let Some(scope) = scope {
            done.refused = scope.finish();
        }
        done.network = self.guard.mode().to_string();
        // Counted since the last call: a frame may navigate itself (a timer, a `<meta
        // refresh>`) between calls.
        let blocked = self.files.take_blocked();
        if blocked > 0 {
            done.text.push_str(&format!(
                "\n[gg: the browser blocked {blocked} file: load(s) outside the working directory \
                 or in the deny-read list (frames or sub-resources of the page); they show as \
                 error pages and were never read]"
            ));
        }
        if !done.refused.is_empty() {
            done.text.push_str("\n[gg: the browser guard refused: ");
            let list: Vec<String> = done
                .refused
                .iter()
                .map(|r| format!("{}:{} ({})", r.host, r.port, r.rule))
                .collect();
            done.text.push_str(&list.join(", "));
            done.text.push(']');
        }
        if level != "off" {
            done.text
                .push_str(&format!("\n[gg: browser sandbox level: {level}]"));
        }
        if let Some(note) = note {
            done.text = format!("{note}\n{}", done.text);
        }
        Ok(done)
    }

    /// Starts the browser if needed; restarts a crashed one once. Returns a note for the model
    /// when it restarted.
    async fn ensure(&self, state: &mut State) -> Result<Option<String>, String> {
        let mut note = None;
        if let Some(p) = state.process.as_mut() {
            if p.alive() {
                return Ok(None);
            }
            let status = p.exit_status();
            state.process = None;
            state.page = None;
            if state.restarted {
                return Err(format!(
                    "the browser crashed again ({status}); it is not restarted a second time in this session"
                ));
            }
            state.restarted = true;
            note = Some(format!(
                "[gg: the browser had stopped ({status}) and was restarted; open pages and their state were lost]"
            ));
            tracing::warn!(%status, "browser crashed; restarting once");
        }
        let proxy = match &state.proxy {
            Some(p) => Arc::clone(p),
            None => {
                let p = Arc::new(
                    ProxyHandle::start_custom(
                        Arc::clone(&self.guard) as Arc<dyn crate::network::proxy::Admit>
                    )
                    .map_err(|e| e.to_string())?,
                );
                state.proxy = Some(Arc::clone(&p));
                p
            }
        };
        let process = process::launch(&self.executable, proxy, &self.sandbox)?;
        let cdp = Arc::clone(&process.cdp);
        state.process = Some(process);
        // The file: rule is in force before the first navigation, or the browser does not run.
        let attached = match files::start(&cdp, Arc::clone(&self.files)).await {
            Ok(()) => attach_page(&cdp).await,
            Err(e) => Err(e),
        };
        let page = match attached {
            Ok(p) => p,
            Err(e) => {
                let log = state
                    .process
                    .as_ref()
                    .map(|p| process::log_tail(p.profile()))
                    .unwrap_or_default();
                state.process = None;
                return Err(format!("the browser did not start: {e}{log}"));
            }
        };
        state.page = Some(page);
        Ok(note)
    }

    /// The current URL, refused when the page moved itself somewhere dangerous that nobody
    /// approved (a script navigating a file page to another file, say), or when a frame or
    /// sub-resource of it shows a file outside the working directory.
    async fn current_url_checked(&self, cdp: &cdp::Cdp, page: &str) -> Result<String, String> {
        let url = current_url(cdp, page).await?;
        if url != "about:blank" {
            let (judged, target) = self.classify_url(&url).map_err(|e| e.to_string())?;
            let approved = match &target {
                Target::File { path, .. } => self.files.approved(path),
                Target::Web { host, .. } => self.guard.allows_special(&host.display()),
                Target::Other { .. } => false,
            };
            if judged.class == Class::Dangerous && !approved {
                return Err(format!(
                    "the page is now at {url} ({}: {}), which nobody approved; call \
                     browser_navigate with it to ask",
                    judged.rule, judged.reason
                ));
            }
        }
        files::check_frames(cdp, page, &self.files).await?;
        Ok(url)
    }

    async fn navigate(&self, cdp: &cdp::Cdp, page: &str, url: &str) -> Result<Done, String> {
        let mut events = cdp.subscribe();
        let r = cdp
            .call(
                "Page.navigate",
                json!({"url": url}),
                Some(page),
                CALL_TIMEOUT,
            )
            .await?;
        let mut text = String::new();
        if let Some(err) = r.get("errorText").and_then(Value::as_str) {
            text.push_str(&format!("navigation failed: {err}\n"));
        } else if r.get("loaderId").is_some() {
            let waited = tokio::time::timeout(LOAD_TIMEOUT, async {
                loop {
                    match events.recv().await {
                        Ok(e)
                            if e.method == "Page.loadEventFired"
                                && e.session.as_deref() == Some(page) =>
                        {
                            return true;
                        }
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                        Err(_) => return false,
                    }
                }
            })
            .await;
            if waited.is_err() {
                text.push_str(&format!(
                    "[gg: the page was still loading after {}s]\n",
                    LOAD_TIMEOUT.as_secs()
                ));
            }
        }
        let info = evaluate(
            cdp,
            page,
            "[document.title, ((performance.getEntriesByType('navigation')[0] || {}).responseStatus || 0)]",
            false,
        )
        .await?;
        let final_url = current_url(cdp, page).await?;
        let title = info[0].as_str().unwrap_or_default().to_string();
        let status = info[1].as_u64().filter(|s| *s > 0).map(|s| s as u16);
        if let Some(s) = status {
            text.push_str(&format!("status: {s}\n"));
        }
        if final_url != url
            && let Ok((judged, _)) = self.classify_url(&final_url)
        {
            text.push_str(&format!(
                "redirected: the final URL is {} ({})\n",
                judged.class.as_str(),
                judged.rule
            ));
        }
        text.push_str("loaded (the URL as the page reports it, and its title):");
        // The URL comes from the page's history, which its scripts rewrite
        // (`history.replaceState`): page content, inside the untrusted block like the title.
        Ok(Done {
            text,
            page_text: Some((
                final_url.clone(),
                "",
                format!("loaded: {final_url}\ntitle: {title}"),
            )),
            record: record(&final_url, status, None),
            refused: Vec::new(),
            network: String::new(),
        })
    }

    async fn read(
        &self,
        cdp: &cdp::Cdp,
        page: &str,
        url: &str,
        selector: Option<&str>,
    ) -> Result<Done, String> {
        let expression = format!(
            "({READ_JS})({})",
            serde_json::to_string(&selector).unwrap_or_else(|_| "null".into())
        );
        let v = evaluate(cdp, page, &expression, false).await?;
        if let Some(e) = v.get("error").and_then(Value::as_str) {
            return Err(e.to_string());
        }
        let mut body = v
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let total = body.chars().count();
        if total > MAX_READ_CHARS {
            body = body.chars().take(MAX_READ_CHARS).collect();
            body.push_str(&format!(
                "\n[gg: page text truncated: {MAX_READ_CHARS} of {total} characters; pass a selector to read a part]"
            ));
        }
        Ok(Done {
            text: "the page's URL and text:".to_string(),
            page_text: Some((url.to_string(), "", format!("url: {url}\n\n{body}"))),
            record: record(url, None, None),
            refused: Vec::new(),
            network: String::new(),
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn screenshot(
        &self,
        cdp: &cdp::Cdp,
        page: &str,
        url: &str,
        full_page: bool,
        selector: Option<&str>,
        width: u32,
        height: u32,
    ) -> Result<Done, String> {
        cdp.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
            Some(page),
            CALL_TIMEOUT,
        )
        .await?;
        let mut params = json!({"format": "png", "fromSurface": true});
        if let Some(sel) = selector {
            let expr = format!(
                "(() => {{ const e = document.querySelector({}); if (!e) return null; e.scrollIntoView(); const r = e.getBoundingClientRect(); return [r.x + window.scrollX, r.y + window.scrollY, r.width, r.height]; }})()",
                serde_json::to_string(sel).unwrap_or_default()
            );
            let r = evaluate(cdp, page, &expr, false).await?;
            let Some(rect) = r.as_array().filter(|a| a.len() == 4) else {
                return Err(format!("no element matches {sel}"));
            };
            let n = |i: usize| rect[i].as_f64().unwrap_or(0.0);
            if n(2) < 1.0 || n(3) < 1.0 {
                return Err(format!("the element {sel} has no visible size"));
            }
            params["clip"] = json!({"x": n(0), "y": n(1), "width": n(2), "height": n(3).min(MAX_FULL_PAGE_HEIGHT), "scale": 1});
            params["captureBeyondViewport"] = json!(true);
        } else if full_page {
            let m = cdp
                .call("Page.getLayoutMetrics", json!({}), Some(page), CALL_TIMEOUT)
                .await?;
            let size = &m["cssContentSize"];
            let w = size["width"].as_f64().unwrap_or(f64::from(width)).max(1.0);
            let h = size["height"]
                .as_f64()
                .unwrap_or(f64::from(height))
                .max(1.0);
            params["clip"] = json!({"x": 0, "y": 0, "width": w, "height": h.min(MAX_FULL_PAGE_HEIGHT), "scale": 1});
            params["captureBeyondViewport"] = json!(true);
        }
        let shot = cdp
            .call("Page.captureScreenshot", params, Some(page), CALL_TIMEOUT)
            .await?;
        // Frames are judged again after the capture: one may have navigated meanwhile, and the
        // PNG is what shows a framed file to the model.
        files::check_frames(cdp, page, &self.files).await?;
        let data = shot["data"].as_str().unwrap_or_default();
        use base64::Engine as _;
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| format!("the browser sent an undecodable screenshot: {e}"))?;
        let (w, h) = png_size(&png).ok_or("the browser sent something that is not a PNG")?;
        let path = save_screenshot(&self.screenshots, &png)?;
        Ok(Done {
            text: format!(
                "screenshot: {}\nsize: {w}x{h}\nurl: {url}\n(the PNG is saved at that path)",
                path.display()
            ),
            page_text: None,
            record: record(url, None, Some(path.display().to_string())),
            refused: Vec::new(),
            network: String::new(),
        })
    }

    async fn act(
        &self,
        cdp: &cdp::Cdp,
        page: &str,
        url: &str,
        selector: &str,
        text: Option<&str>,
    ) -> Result<Done, String> {
        let sel = serde_json::to_string(selector).unwrap_or_default();
        let expr = match text {
            None => format!(
                "(() => {{ const e = document.querySelector({sel}); if (!e) return false; e.scrollIntoView(); e.click(); return true; }})()"
            ),
            Some(_) => format!(
                "(() => {{ const e = document.querySelector({sel}); if (!e) return false; e.focus(); return true; }})()"
            ),
        };
        let found = evaluate(cdp, page, &expr, false).await?;
        if found != Value::Bool(true) {
            return Err(format!("no element matches {selector}"));
        }
        if let Some(t) = text {
            cdp.call(
                "Input.insertText",
                json!({"text": t}),
                Some(page),
                CALL_TIMEOUT,
            )
            .await?;
        }
        // A click may start a navigation; give it a moment to commit before reporting.
        let now = current_url(cdp, page)
            .await
            .unwrap_or_else(|_| url.to_string());
        Ok(Done {
            text: format!(
                "{} {selector}\nurl: {now}",
                if text.is_some() {
                    "typed into"
                } else {
                    "clicked"
                }
            ),
            page_text: None,
            record: record(&now, None, None),
            refused: Vec::new(),
            network: String::new(),
        })
    }
}

fn record(
    url: &str,
    status: Option<u16>,
    screenshot: Option<String>,
) -> session::audit::BrowserRecord {
    session::audit::BrowserRecord {
        url: url.to_string(),
        status,
        screenshot,
    }
}
