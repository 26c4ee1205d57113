//! The person's desktop: clipboard (through `arboard`, X11 on Linux) and notifications (through
//! `notify-rust`, the freedesktop notification service on the session D-Bus).
//!
//! Both need a desktop session; without one they fail at once with an error that says what is
//! missing, instead of hanging on a connection that cannot exist.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use super::ComputerError;

/// The longest text `clipboard_write` accepts, in characters.
pub const MAX_CLIPBOARD_WRITE: usize = 100_000;
/// Notification title and body limits, in characters.
pub const MAX_TITLE: usize = 200;
pub const MAX_BODY: usize = 2000;
/// How long a notification service gets to answer.
pub const NOTIFY_TIMEOUT: Duration = Duration::from_secs(30);

/// Why there is no clipboard here, if there is none.
pub fn clipboard_missing() -> Option<String> {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if cfg!(target_os = "macos") || set("DISPLAY") || set("WAYLAND_DISPLAY") {
        None
    } else {
        Some("no clipboard: no display (neither DISPLAY nor WAYLAND_DISPLAY is set)".to_string())
    }
}

/// Why there is no notification service here, if there is none: on Linux the session bus must
/// be named (`DBUS_SESSION_BUS_ADDRESS`) or sit at `$XDG_RUNTIME_DIR/bus`.
pub fn notifications_missing() -> Option<String> {
    if cfg!(target_os = "macos") {
        return None;
    }
    if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some_and(|v| !v.is_empty()) {
        return None;
    }
    let runtime_bus = std::env::var_os("XDG_RUNTIME_DIR").map(|d| PathBuf::from(d).join("bus"));
    if runtime_bus.is_some_and(|bus| bus.exists()) {
        return None;
    }
    Some(
        "no notification service: no session D-Bus (DBUS_SESSION_BUS_ADDRESS is not set)"
            .to_string(),
    )
}

/// The clipboard connection, kept for the session: on X11 the owner of a selection must stay
/// alive to serve it, so text written by `clipboard_write` stays pasteable while gg runs (and
/// after, where a clipboard manager takes it over).
#[derive(Default)]
pub struct Clipboard {
    connection: Mutex<Option<arboard::Clipboard>>,
}

impl Clipboard {
    fn with<T>(
        &self,
        action: impl FnOnce(&mut arboard::Clipboard) -> Result<T, arboard::Error>,
    ) -> Result<T, ComputerError> {
        if let Some(why) = clipboard_missing() {
            return Err(ComputerError::Desktop(why));
        }
        let mut slot = self.connection.lock().map_err(|_| {
            ComputerError::Desktop("clipboard state is unusable after a failed call".to_string())
        })?;
        if slot.is_none() {
            *slot = Some(
                arboard::Clipboard::new()
                    .map_err(|e| ComputerError::Desktop(format!("no clipboard: {e}")))?,
            );
        }
        match slot.as_mut() {
            Some(clipboard) => {
                action(clipboard).map_err(|e| ComputerError::Desktop(format!("clipboard: {e}")))
            }
            None => Err(ComputerError::Desktop("no clipboard".to_string())),
        }
    }

    /// The clipboard's text (empty when it holds none).
    pub fn read(&self) -> Result<String, ComputerError> {
        self.with(|c| match c.get_text() {
            Err(arboard::Error::ContentNotAvailable) => Ok(String::new()),
            other => other,
        })
    }

    pub fn write(&self, text: &str) -> Result<(), ComputerError> {
        self.with(|c| c.set_text(text.to_string()))
    }
}

/// Shows a desktop notification.
pub async fn notify(title: &str, body: &str) -> Result<(), ComputerError> {
    if let Some(why) = notifications_missing() {
        return Err(ComputerError::Desktop(why));
    }
    let mut notification = notify_rust::Notification::new();
    notification.appname("gg").summary(title).body(body);
    match tokio::time::timeout(NOTIFY_TIMEOUT, notification.show_async()).await {
        Ok(Ok(_handle)) => Ok(()),
        Ok(Err(e)) => Err(ComputerError::Desktop(format!("notification service: {e}"))),
        Err(_) => Err(ComputerError::Desktop(format!(
            "notification service did not answer within {} s",
            NOTIFY_TIMEOUT.as_secs()
        ))),
    }
}
