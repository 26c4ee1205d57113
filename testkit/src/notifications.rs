//! The freedesktop notification service played on a test's private session bus: it records the
//! (summary, body) of every notification sent to it. gg's computer tools and gg-desktop both
//! notify a person; their tests check what arrived here.

use std::sync::{Arc, Mutex};

/// The service, owning the connection (and the runtime that serves it) for as long as it lives.
pub struct NotificationService {
    received: Arc<Mutex<Vec<(String, String)>>>,
    _connection: zbus::Connection,
    _runtime: tokio::runtime::Runtime,
}

impl NotificationService {
    /// Takes the name `org.freedesktop.Notifications` on the bus at `bus_address`.
    pub fn start(bus_address: &str) -> NotificationService {
        let received = Arc::new(Mutex::new(Vec::new()));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let connection = runtime.block_on(async {
            zbus::connection::Builder::address(bus_address)
                .name("org.freedesktop.Notifications")
                .serve_at(
                    "/org/freedesktop/Notifications",
                    Recorder(Arc::clone(&received)),
                )
                .build()
                .await
                .unwrap()
        });
        NotificationService {
            received,
            _connection: connection,
            _runtime: runtime,
        }
    }

    /// The (summary, body) of each notification so far, in arrival order.
    pub fn received(&self) -> Vec<(String, String)> {
        self.received.lock().unwrap().clone()
    }
}

struct Recorder(Arc<Mutex<Vec<(String, String)>>>);

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl Recorder {
    #[allow(clippy::too_many_arguments)]
    async fn notify(
        &self,
        _app_name: String,
        _replaces_id: u32,
        _app_icon: String,
        summary: String,
        body: String,
        _actions: Vec<String>,
        _hints: std::collections::HashMap<String, zbus::OwnedVariant>,
        _expire_timeout: i32,
    ) -> u32 {
        self.0.lock().unwrap().push((summary, body));
        1
    }

    fn get_capabilities(&self) -> Vec<String> {
        vec!["body".to_string()]
    }

    fn get_server_information(&self) -> (String, String, String, String) {
        (
            "recorder".to_string(),
            "gg tests".to_string(),
            "1".to_string(),
            "1.2".to_string(),
        )
    }
}
