//! The window, the webview and the event loop: what runs on the GTK main thread.

use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use gtk::prelude::*;
use serde_json::json;
use tao::event::{Event, WindowEvent};
use tao::event_loop::{ControlFlow, EventLoopBuilder, EventLoopProxy};
use tao::platform::run_return::EventLoopExtRunReturn;
use tao::platform::unix::WindowExtUnix;
use tao::window::{Window, WindowBuilder};
use webkit2gtk::WebViewExt;
use wry::{
    NewWindowResponse, WebContext, WebView, WebViewBuilder, WebViewBuilderExtUnix, WebViewExtUnix,
};

use crate::ipc::{self, Command};
use crate::links;
use crate::sidecar::Sidecar;

/// What other threads (and GTK callbacks) tell the event loop.
#[derive(Debug)]
enum UserEvent {
    /// The ggd of start number `generation` exited.
    GgdExited { generation: u64, how: String },
    /// A later gg-desktop asked for this window.
    Focus,
    /// A message from the page, with the address of the page that sent it.
    Ipc { page: String, body: String },
    /// A link the page wants opened outside (`openExternal`, or a new-window request).
    Link { reply_to: Option<u64>, url: String },
    /// ggd's answer about a link.
    LinkChecked {
        reply_to: Option<u64>,
        checked: Result<links::Checked, String>,
    },
    /// The webview asked to close (`window.close()`, a WebDriver's Close Window).
    WebViewClosed,
    /// SIGTERM, SIGINT or SIGHUP (a session's logout, Ctrl-C in a terminal): close as the window
    /// would.
    Signal,
}

struct Shell {
    window: Window,
    webview: WebView,
    workspace: PathBuf,
    sidecar: Option<Sidecar>,
    /// Counts ggd starts, so an exit report of a ggd this shell stopped on purpose is ignored.
    generation: u64,
    restarted: bool,
    notice: Option<String>,
    /// The one origin the webview may show: the current ggd's.
    origin: Arc<Mutex<String>>,
    proxy: EventLoopProxy<UserEvent>,
}

pub fn run(
    workspace: PathBuf,
    automation: bool,
    listener: UnixListener,
) -> Result<ExitCode, String> {
    let mut event_loop = EventLoopBuilder::<UserEvent>::with_user_event().build();
    let proxy = event_loop.create_proxy();
    let focus_proxy = proxy.clone();
    crate::single::serve(listener, move || {
        let _ = focus_proxy.send_event(UserEvent::Focus);
    });
    let signal_proxy = proxy.clone();
    std::thread::spawn(move || close_on_signals(&signal_proxy));
    let sidecar = start_ggd(&workspace, 1, &proxy)?;
    let origin = Arc::new(Mutex::new(sidecar.origin()));
    let window = WindowBuilder::new()
        .with_title(title(&workspace))
        .with_inner_size(tao::dpi::LogicalSize::new(1200.0, 850.0))
        .build(&event_loop)
        .map_err(|e| format!("cannot open a window: {e}"))?;
    // The page's own storage (its settings; ggd answers everything `no-store`, and the token is
    // never stored) in gg's 0700 directory rather than a shared default one. Not an incognito
    // context: wry gives that one no automation, which the tests need.
    let data = crate::single::state_dir()?.join("desktop-webview");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&data)
        .map_err(|e| format!("{}: {e}", data.display()))?;
    let mut context = WebContext::new(Some(data));
    context.set_allows_automation(automation);
    let webview = build_webview(&window, &mut context, &sidecar.origin(), &origin, &proxy)?;
    let mut shell = Shell {
        window,
        webview,
        workspace,
        sidecar: Some(sidecar),
        generation: 1,
        restarted: false,
        notice: None,
        origin,
        proxy,
    };
    let mut outcome: Result<(), String> = Ok(());
    let code = event_loop.run_return(|event, _, control_flow| {
        *control_flow = ControlFlow::Wait;
        let quit = match event {
            Event::WindowEvent {
                event: WindowEvent::CloseRequested,
                ..
            } => true,
            Event::UserEvent(event) => match shell.handle(event) {
                Ok(quit) => quit,
                Err(e) => {
                    outcome = Err(e);
                    true
                }
            },
            _ => false,
        };
        if quit {
            if let Some(sidecar) = shell.sidecar.take() {
                let pid = sidecar.pid;
                sidecar.stop();
                eprintln!("gg-desktop: the window closed; its ggd (pid {pid}) has stopped");
            }
            *control_flow = ControlFlow::Exit;
        }
    });
    outcome.map(|()| {
        if code == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        }
    })
}

/// The title of the dialog that asks before a dangerous link is opened.
const CONFIRM_TITLE: &str = "gg: open a link?";

fn close_on_signals(proxy: &EventLoopProxy<UserEvent>) {
    use tokio::signal::unix::{SignalKind, signal};
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("gg-desktop: signals: {e}");
            return;
        }
    };
    runtime.block_on(async {
        let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
            signal(SignalKind::hangup()),
        ) else {
            eprintln!("gg-desktop: cannot watch for signals");
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
            _ = hup.recv() => {}
        }
        let _ = proxy.send_event(UserEvent::Signal);
    });
}

fn title(workspace: &Path) -> String {
    format!("gg — {}", workspace.display())
}

fn start_ggd(
    workspace: &Path,
    generation: u64,
    proxy: &EventLoopProxy<UserEvent>,
) -> Result<Sidecar, String> {
    let proxy = proxy.clone();
    Sidecar::start(workspace, move |how| {
        let _ = proxy.send_event(UserEvent::GgdExited { generation, how });
    })
}

fn build_webview(
    window: &Window,
    context: &mut WebContext,
    start: &str,
    origin: &Arc<Mutex<String>>,
    proxy: &EventLoopProxy<UserEvent>,
) -> Result<WebView, String> {
    let navigation_origin = Arc::clone(origin);
    let ipc_proxy = proxy.clone();
    let link_proxy = proxy.clone();
    let container = window
        .default_vbox()
        .ok_or("the window has no GTK container")?;
    let webview = WebViewBuilder::new_with_web_context(context)
        .with_url(format!("{start}/"))
        .with_navigation_handler(move |url| {
            let allowed = navigation_origin
                .lock()
                .map(|origin| ipc::same_origin(&url, &origin))
                .unwrap_or(false);
            if !allowed {
                eprintln!("gg-desktop: refused navigation to {url:?}");
            }
            allowed
        })
        .with_new_window_req_handler(move |url, _features| {
            let _ = link_proxy.send_event(UserEvent::Link {
                reply_to: None,
                url,
            });
            NewWindowResponse::Deny
        })
        .with_ipc_handler(move |request| {
            let _ = ipc_proxy.send_event(UserEvent::Ipc {
                page: request.uri().to_string(),
                body: request.into_body(),
            });
        })
        .build_gtk(container)
        .map_err(|e| format!("cannot create the web view: {e}"))?;
    let close_proxy = proxy.clone();
    webview.webview().connect_close(move |_| {
        let _ = close_proxy.send_event(UserEvent::WebViewClosed);
    });
    Ok(webview)
}

impl Shell {
    /// Handles one event; `Ok(true)` ends the app.
    fn handle(&mut self, event: UserEvent) -> Result<bool, String> {
        match event {
            UserEvent::WebViewClosed | UserEvent::Signal => return Ok(true),
            UserEvent::Focus => {
                self.window.set_visible(true);
                self.window.set_minimized(false);
                self.window.set_focus();
            }
            UserEvent::GgdExited { generation, how } => {
                let ours = generation == self.generation
                    && self.sidecar.as_ref().is_some_and(Sidecar::has_exited);
                if ours {
                    return self.ggd_stopped(&how);
                }
            }
            UserEvent::Ipc { page, body } => self.ipc(&page, &body),
            UserEvent::Link { reply_to, url } => self.check_link(reply_to, &url),
            UserEvent::LinkChecked { reply_to, checked } => self.open_checked(reply_to, checked),
        }
        Ok(false)
    }

    /// A ggd this shell did not stop has exited: restarted once, with a notice; the second time
    /// the app says so and ends.
    fn ggd_stopped(&mut self, how: &str) -> Result<bool, String> {
        self.sidecar = None;
        if self.restarted {
            eprintln!("gg-desktop: ggd stopped again ({how}); not restarting it");
            self.message(
                gtk::MessageType::Error,
                &format!(
                    "ggd stopped again ({how}). gg-desktop closes; its log is on standard error."
                ),
            );
            return Ok(true);
        }
        self.restarted = true;
        let notice = format!("ggd stopped unexpectedly ({how}) and was restarted.");
        eprintln!("gg-desktop: {notice}");
        self.notice = Some(notice);
        self.switch_ggd(self.workspace.clone())?;
        Ok(false)
    }

    /// Starts a ggd for `workspace` in place of the current one and shows its page.
    fn switch_ggd(&mut self, workspace: PathBuf) -> Result<(), String> {
        if let Some(old) = self.sidecar.take() {
            old.stop();
        }
        self.generation += 1;
        let sidecar = start_ggd(&workspace, self.generation, &self.proxy)?;
        let origin = sidecar.origin();
        if let Ok(mut allowed) = self.origin.lock() {
            allowed.clone_from(&origin);
        }
        self.sidecar = Some(sidecar);
        self.window.set_title(&title(&workspace));
        self.workspace = workspace;
        self.webview
            .load_url(&format!("{origin}/"))
            .map_err(|e| format!("cannot load the page: {e}"))
    }

    fn ipc(&mut self, page: &str, body: &str) {
        let Some(sidecar) = &self.sidecar else { return };
        // Only the page ggd serves may ask anything of the shell.
        if !ipc::same_origin(page, &sidecar.origin()) {
            eprintln!("gg-desktop: refused a message from {page:?}");
            return;
        }
        let message = match ipc::parse(body) {
            Ok(message) => message,
            Err(e) => {
                eprintln!("gg-desktop: refused a message from the page: {e}");
                return;
            }
        };
        let id = message.id;
        match message.command {
            Command::Session => {
                let result = json!({
                    "token": sidecar.token,
                    "workspace": self.workspace.display().to_string(),
                    "notice": self.notice,
                });
                self.reply(id, Ok(result));
            }
            Command::OpenExternal { url } => self.check_link(Some(id), &url),
            Command::ApprovalWaiting { summary } => {
                let notify = !self.window.is_focused();
                if notify {
                    links::notify_approval(&summary);
                }
                self.reply(id, Ok(json!({"notified": notify})));
            }
            Command::ChooseWorkspace => {
                let chosen = self.choose_workspace();
                let result = match chosen {
                    // The page is replaced by the new ggd's: nothing is left to answer.
                    Some(dir) => match self.switch_ggd(dir) {
                        Ok(()) => return,
                        Err(e) => Err(e),
                    },
                    None => Ok(json!({"chosen": false})),
                };
                self.reply(id, result);
            }
        }
    }

    /// Asks ggd about a link on another thread; the answer comes back as `LinkChecked`.
    fn check_link(&self, reply_to: Option<u64>, url: &str) {
        let url = match links::web_link(url) {
            Ok(url) => url,
            Err(e) => {
                self.answer_link(reply_to, Err(e));
                return;
            }
        };
        let Some(sidecar) = &self.sidecar else { return };
        let (port, token) = (sidecar.port, sidecar.token.clone());
        let proxy = self.proxy.clone();
        std::thread::spawn(move || {
            let checked = links::check(port, &token, &url);
            let _ = proxy.send_event(UserEvent::LinkChecked { reply_to, checked });
        });
    }

    /// Opens a checked link: at once when the agent's tool would not call it dangerous, after
    /// the person confirms when it would.
    fn open_checked(&self, reply_to: Option<u64>, checked: Result<links::Checked, String>) {
        let outcome = checked.and_then(|checked| {
            if checked.dangerous
                && !self.confirm(&format!(
                    "Open this link in your browser?\n\n{}\n\n{}",
                    checked.target, checked.reason
                ))
            {
                eprintln!(
                    "gg-desktop: not opening {:?}: {} (not confirmed)",
                    checked.target, checked.reason
                );
                return Ok(json!({"opened": false, "reason": checked.reason}));
            }
            eprintln!(
                "gg-desktop: opening {:?} in the browser ({})",
                checked.target, checked.reason
            );
            links::open(&checked.target)?;
            Ok(json!({"opened": true, "reason": checked.reason}))
        });
        self.answer_link(reply_to, outcome);
    }

    fn answer_link(&self, reply_to: Option<u64>, outcome: Result<serde_json::Value, String>) {
        match reply_to {
            Some(id) => self.reply(id, outcome),
            None => {
                if let Err(e) = outcome {
                    eprintln!("gg-desktop: link not opened: {e}");
                }
            }
        }
    }

    fn reply(&self, id: u64, result: Result<serde_json::Value, String>) {
        if let Err(e) = self.webview.evaluate_script(&ipc::reply_script(id, result)) {
            eprintln!("gg-desktop: cannot answer the page: {e}");
        }
    }

    fn choose_workspace(&self) -> Option<PathBuf> {
        let dialog = gtk::FileChooserDialog::with_buttons(
            Some("Choose a workspace"),
            Some(self.window.gtk_window()),
            gtk::FileChooserAction::SelectFolder,
            &[
                ("Cancel", gtk::ResponseType::Cancel),
                ("Open", gtk::ResponseType::Accept),
            ],
        );
        let _ = dialog.set_current_folder(&self.workspace);
        let chosen = (dialog.run() == gtk::ResponseType::Accept)
            .then(|| dialog.filename())
            .flatten()
            .filter(|dir| dir.is_dir());
        dialog.close();
        chosen
    }

    fn confirm(&self, text: &str) -> bool {
        let dialog = gtk::MessageDialog::new(
            Some(self.window.gtk_window()),
            gtk::DialogFlags::MODAL,
            gtk::MessageType::Warning,
            gtk::ButtonsType::YesNo,
            text,
        );
        dialog.set_title(CONFIRM_TITLE);
        let yes = dialog.run() == gtk::ResponseType::Yes;
        dialog.close();
        yes
    }

    fn message(&self, kind: gtk::MessageType, text: &str) {
        let dialog = gtk::MessageDialog::new(
            Some(self.window.gtk_window()),
            gtk::DialogFlags::MODAL,
            kind,
            gtk::ButtonsType::Close,
            text,
        );
        dialog.run();
        dialog.close();
    }
}
