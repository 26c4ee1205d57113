//! The browser's network guard: the admission rule of the proxy every Chromium request goes
//! through (navigations, redirects, subresources, fetches), hop by hop.
//!
//! For each request it parses the host, resolves a name once, judges every answer with
//! [`policies::web`], and hands the proxy exactly the addresses it judged, which the proxy then
//! connects to: there is no second lookup, so no window for DNS rebinding between the check and
//! the connection.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Mutex;

use classifier::Class;
use policies::web::{self, WebHost};

use crate::network::proxy::{Admit, AdmitFuture, Denial, Overrides};
use crate::network::{AllowList, NetworkMode, Refusal};

/// Chromium's own services, which it calls on start-up whatever its flags say (component and
/// time updates, sign-in, optimization hints). Always refused, and not reported as refusals of
/// the call that happened to be running: no page asked for them.
pub const BACKGROUND_HOSTS: &[&str] = &[
    "update.googleapis.com",
    "clients2.google.com",
    "clients2.googleusercontent.com",
    "optimizationguide-pa.googleapis.com",
    "accounts.google.com",
    "safebrowsing.googleapis.com",
    "content-autofill.googleapis.com",
];

/// How long describing a navigation may wait for DNS.
pub const DESCRIBE_LOOKUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// What the browser may reach.
pub struct Guard {
    /// The run's network setting: `Off` refuses everything, `AllowList` adds the list (loopback
    /// stays reachable: the project's own dev server), `On` judges addresses only.
    mode: NetworkMode,
    list: AllowList,
    /// `browser.allowPrivateHosts` from config.
    private: AllowList,
    /// Hosts a person approved a dangerous navigation to, this session.
    approved: Mutex<HashSet<String>>,
    /// Names resolved without DNS (tests only, see [`crate::network::test_resolver`]).
    overrides: Overrides,
    /// The home whose ggd ports are never reached (`tools::network::own_ports`).
    home: Option<std::path::PathBuf>,
}

impl Guard {
    pub fn new(
        mode: NetworkMode,
        list: AllowList,
        private: AllowList,
        overrides: Overrides,
        home: Option<std::path::PathBuf>,
    ) -> Guard {
        Guard {
            mode,
            list,
            private,
            approved: Mutex::new(HashSet::new()),
            overrides,
            home,
        }
    }

    /// The run's network setting the guard applies.
    pub fn mode(&self) -> NetworkMode {
        self.mode
    }

    /// Whether a config rule or a person's approval covers `host` (a name or an IP literal).
    pub fn allows_special(&self, host: &str) -> bool {
        self.private.check_host(host).is_ok()
            || self
                .approved
                .lock()
                .map(|a| a.contains(&host.to_ascii_lowercase()))
                .unwrap_or(false)
    }

    /// Records that a person approved a navigation to `host`.
    pub fn approve(&self, host: &str) {
        if let Ok(mut a) = self.approved.lock() {
            a.insert(host.to_ascii_lowercase());
        }
    }

    /// The addresses `name` resolves to (test overrides first).
    pub async fn resolve(
        &self,
        name: &str,
        port: u16,
    ) -> Result<Vec<SocketAddr>, super::BrowserError> {
        if let Some(addrs) = self.overrides.get(name) {
            return Ok(addrs.iter().map(|a| SocketAddr::new(*a, port)).collect());
        }
        tokio::net::lookup_host((name, port))
            .await
            .map(|it| it.collect())
            .map_err(|source| super::BrowserError::Resolve {
                name: name.to_string(),
                source,
            })
    }

    /// The blocking form of [`Guard::resolve`], for describing a call (classification only: the
    /// connection is judged again by the proxy). Bounded by [`DESCRIBE_LOOKUP_TIMEOUT`]: a name
    /// that does not resolve in time is judged unresolved, and the proxy decides at connect time.
    pub fn resolve_now(&self, name: &str) -> Vec<IpAddr> {
        if let Some(addrs) = self.overrides.get(name) {
            return addrs.clone();
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let owned = name.to_string();
        let spawned = std::thread::Builder::new()
            .name("gg-browser-lookup".into())
            .spawn(move || {
                use std::net::ToSocketAddrs;
                let addrs: Vec<IpAddr> = (owned.as_str(), 0)
                    .to_socket_addrs()
                    .map(|it| it.map(|a| a.ip()).collect())
                    .unwrap_or_default();
                let _ = tx.send(addrs);
            });
        if spawned.is_err() {
            return Vec::new();
        }
        rx.recv_timeout(DESCRIBE_LOOKUP_TIMEOUT).unwrap_or_default()
    }

    /// The addresses a connection to `host:port` may use, or why it may not.
    async fn check(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Denial> {
        let addrs = self.judge(host, port).await?;
        // gg's own daemon: a page must never drive ggd's API, whatever its token and CORS say.
        // Canonical: `[::ffff:127.0.0.1]` is the same loopback address. The unspecified address
        // counts too: a connection to `0.0.0.0` (or `[::]`) reaches this host's own listeners.
        if addrs.iter().any(|a| {
            let ip = a.ip().to_canonical();
            ip.is_loopback() || ip.is_unspecified()
        }) && self
            .home
            .as_deref()
            .is_some_and(|home| crate::network::own_ports::is_own(home, port))
        {
            return Err(denial(
                host,
                port,
                "ggd-port",
                "it is gg's own daemon (ggd), which the browser never reaches".into(),
            ));
        }
        Ok(addrs)
    }

    async fn judge(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Denial> {
        let deny = |rule: &str, why: String| denial(host, port, rule, why);
        let lower = host.trim_end_matches('.').to_ascii_lowercase();
        if BACKGROUND_HOSTS.contains(&lower.as_str()) {
            return Err(deny(
                "browser-background",
                "the browser's own background service".into(),
            ));
        }
        if self.mode == NetworkMode::Off {
            return Err(deny(
                "network-off",
                "the run's network setting is off".into(),
            ));
        }
        // The same parser as the tools: numeric IPv4 spellings become the address they mean.
        let target =
            web::parse(&format!("http://{host}:{port}/")).map_err(|e| deny("bad-host", e))?;
        let web::Target::Web { host: parsed, .. } = target else {
            return Err(deny("bad-host", "not a host".into()));
        };
        let key = parsed.display();
        let listed =
            |h: &str| self.mode != NetworkMode::AllowList || self.list.check_host(h).is_ok();
        match &parsed {
            WebHost::Localhost(_) => Ok(vec![
                SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
                SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), port),
            ]),
            WebHost::Ip(ip) => match web::ip_kind(*ip) {
                web::IpKind::Loopback => Ok(vec![SocketAddr::new(*ip, port)]),
                web::IpKind::Public if listed(&key) => Ok(vec![SocketAddr::new(*ip, port)]),
                web::IpKind::Public => Err(deny(
                    "not-on-allow-list",
                    "the run's network allow-list does not name it".into(),
                )),
                web::IpKind::Special(what) if self.allows_special(&key) => {
                    let _ = what;
                    Ok(vec![SocketAddr::new(*ip, port)])
                }
                web::IpKind::Special(what) => {
                    Err(deny("private-address", format!("{ip} is a {what} address")))
                }
            },
            WebHost::Name(name) => {
                if !listed(name) {
                    return Err(deny(
                        "not-on-allow-list",
                        "the run's network allow-list does not name it".into(),
                    ));
                }
                let addrs = self
                    .resolve(name, port)
                    .await
                    .map_err(|e| deny("unresolved", e.to_string()))?;
                if addrs.is_empty() {
                    return Err(deny("unresolved", format!("{name} has no address")));
                }
                let ips: Vec<IpAddr> = addrs.iter().map(SocketAddr::ip).collect();
                let judged = web::judge_web(&parsed, &ips, false, self.allows_special(name));
                if judged.class == Class::Dangerous {
                    return Err(deny("private-address", judged.reason));
                }
                Ok(addrs)
            }
        }
    }
}

/// A refused connection, in the words the proxy answers with.
fn denial(host: &str, port: u16, rule: &str, why: String) -> Denial {
    let shown: String = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .escape_debug()
        .collect();
    Denial {
        quiet: rule == "browser-background",
        message: if rule == "ggd-port" {
            format!("gg browser guard: connection to {shown}:{port} refused ({rule}): {why}.\n")
        } else {
            format!(
                "gg browser guard: connection to {shown}:{port} refused ({rule}): {why}. \
                 A person can approve browser_navigate to it, or add the host to \
                 \"browser.allowPrivateHosts\" in ~/.gg/config.json.\n"
            )
        },
        refusal: Refusal {
            host: shown,
            port,
            rule: rule.to_string(),
        },
    }
}

impl Admit for Guard {
    fn admit<'a>(&'a self, host: &'a str, port: u16) -> AdmitFuture<'a> {
        Box::pin(self.check(host, port))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(mode: NetworkMode, list: &[&str], private: &[&str]) -> Guard {
        let mut overrides = Overrides::new();
        overrides.insert("public.test".into(), vec!["93.184.216.34".parse().unwrap()]);
        overrides.insert("rebind.test".into(), vec!["127.0.0.1".parse().unwrap()]);
        overrides.insert("meta.test".into(), vec!["169.254.169.254".parse().unwrap()]);
        Guard::new(
            mode,
            AllowList::parse(list).unwrap(),
            AllowList::parse(private).unwrap(),
            overrides,
            None,
        )
    }

    async fn rule(g: &Guard, host: &str) -> Result<Vec<SocketAddr>, String> {
        g.check(host, 80).await.map_err(|d| d.refusal.rule)
    }

    #[tokio::test]
    async fn judges_every_hop_by_address() {
        let g = guard(NetworkMode::On, &[], &[]);
        assert!(rule(&g, "127.0.0.1").await.is_ok());
        assert!(rule(&g, "localhost").await.is_ok());
        assert!(rule(&g, "[::1]").await.is_ok());
        assert_eq!(
            rule(&g, "public.test").await.unwrap(),
            vec!["93.184.216.34:80".parse().unwrap()]
        );
        for bad in [
            "169.254.169.254",
            "10.0.0.1",
            "0xa9fea9fe",
            "[fd00::1]",
            "meta.test",
            "rebind.test",
        ] {
            assert_eq!(rule(&g, bad).await.unwrap_err(), "private-address", "{bad}");
        }
        // Chromium's own phoning home is refused quietly, in every mode.
        let d = g.check("update.googleapis.com", 443).await.unwrap_err();
        assert!(d.quiet);
        assert_eq!(d.refusal.rule, "browser-background");
        assert!(!g.check("10.0.0.1", 80).await.unwrap_err().quiet);
        // A person's approval (or a config rule) opens exactly that host.
        g.approve("10.0.0.1");
        assert!(rule(&g, "10.0.0.1").await.is_ok());
        assert!(rule(&g, "10.0.0.2").await.is_err());
        let g = guard(NetworkMode::On, &[], &["meta.test"]);
        assert!(rule(&g, "meta.test").await.is_ok());
    }

    #[tokio::test]
    async fn the_run_network_setting_applies() {
        let g = guard(NetworkMode::Off, &[], &[]);
        assert_eq!(rule(&g, "127.0.0.1").await.unwrap_err(), "network-off");
        let g = guard(NetworkMode::AllowList, &["docs.test"], &[]);
        assert!(rule(&g, "127.0.0.1").await.is_ok());
        assert_eq!(
            rule(&g, "public.test").await.unwrap_err(),
            "not-on-allow-list"
        );
        assert_eq!(
            rule(&g, "93.184.216.34").await.unwrap_err(),
            "not-on-allow-list"
        );
    }

    /// ggd's port is refused however its address is spelled, a person's approval included:
    /// the unspecified address (`0.0.0.0`, `[::]`) reaches this host's listeners too.
    #[tokio::test]
    async fn ggds_own_port_is_never_reached() {
        let home = tempfile::tempdir().unwrap();
        let _record = crate::network::own_ports::record(home.path(), 4711).unwrap();
        let g = Guard::new(
            NetworkMode::On,
            AllowList::parse::<&str>(&[]).unwrap(),
            AllowList::parse::<&str>(&[]).unwrap(),
            Overrides::new(),
            Some(home.path().to_path_buf()),
        );
        for host in [
            "127.0.0.1",
            "[::ffff:127.0.0.1]",
            "[::1]",
            "0.0.0.0",
            "[::]",
        ] {
            g.approve(host.trim_start_matches('[').trim_end_matches(']'));
            g.approve(host);
            let refused = g.check(host, 4711).await.unwrap_err().refusal.rule;
            assert_eq!(refused, "ggd-port", "{host}");
        }
        assert!(g.check("127.0.0.1", 4712).await.is_ok());
    }
}
