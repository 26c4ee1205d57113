//! The network policy for everything the agent runs: `off`, `on`, or `allow-list` (the default
//! when the sandbox is on), and the session proxy that enforces the allow-list.
//!
//! One setting everywhere: `"network"` and `"allowDomains"` in `~/.gg/config.json` and in the
//! project's `.gg/settings.json` (which may only tighten), `--network` and `--allow-domain` on
//! `gg`, `gg sandbox`, `ggd` and `gg job add`. The sandbox crate only builds the route
//! ([`sandbox::Network::Proxy`]); the list is enforced here, outside the sandbox.

mod error;
pub mod own_ports;
pub mod proxy;
pub mod rules;

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

pub use error::NetworkError;
pub use proxy::{CallScope, ProxyHandle, Refusal};
pub use rules::{AllowList, DEFAULT_ALLOW_DOMAINS};

/// The network setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkMode {
    /// No network at all; host Unix sockets hidden.
    Off,
    /// Only allow-listed hosts, through the session proxy.
    AllowList,
    /// Not isolated.
    On,
}

impl NetworkMode {
    /// The name used in settings and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMode::Off => "off",
            NetworkMode::AllowList => "allow-list",
            NetworkMode::On => "on",
        }
    }
}

impl std::fmt::Display for NetworkMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for NetworkMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(NetworkMode::Off),
            "on" => Ok(NetworkMode::On),
            "allow-list" => Ok(NetworkMode::AllowList),
            other => Err(format!(
                "unknown network setting {other:?} (off, on, allow-list)"
            )),
        }
    }
}

/// The network keys of a settings file (`~/.gg/config.json` or `.gg/settings.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkSettings {
    /// `"off"`, `"on"` or `"allow-list"`.
    #[serde(default)]
    pub network: Option<NetworkMode>,
    /// Hosts added to the default list (user) or the only hosts kept (project).
    #[serde(default)]
    pub allow_domains: Option<Vec<String>>,
}

/// The effective policy of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkPolicy {
    /// The mode.
    pub mode: NetworkMode,
    /// The hosts the proxy lets through (meaningful for `allow-list`).
    pub allow: AllowList,
}

impl Default for NetworkPolicy {
    /// `allow-list` with the default hosts.
    fn default() -> Self {
        NetworkPolicy {
            mode: NetworkMode::AllowList,
            allow: AllowList::parse(DEFAULT_ALLOW_DOMAINS).unwrap_or_default(),
        }
    }
}

impl NetworkPolicy {
    /// Builds the policy from, in order: the user's config, the command line (which overrides the
    /// user's mode and adds hosts), and the project's settings (which can only tighten: a lower
    /// mode, and a list that keeps only hosts the user's list also allows).
    pub fn resolve(
        user: &NetworkSettings,
        cli_mode: Option<NetworkMode>,
        cli_domains: &[String],
        project: Option<&NetworkSettings>,
    ) -> Result<NetworkPolicy, NetworkError> {
        let mut mode = cli_mode.or(user.network).unwrap_or(NetworkMode::AllowList);
        let mut entries: Vec<String> = DEFAULT_ALLOW_DOMAINS
            .iter()
            .map(|s| s.to_string())
            .collect();
        entries.extend(user.allow_domains.iter().flatten().cloned());
        entries.extend(cli_domains.iter().cloned());
        let mut allow = AllowList::parse(&entries)?;
        if let Some(project) = project {
            if let Some(p) = project.network {
                mode = mode.min(p);
            }
            if let Some(list) = &project.allow_domains {
                allow = AllowList::parse(list)
                    .map_err(|e| NetworkError::ProjectSettings(Box::new(e)))?
                    .intersect(&allow);
            }
        }
        Ok(NetworkPolicy { mode, allow })
    }

    /// The sandbox crate's network mode.
    pub fn sandbox_network(&self) -> sandbox::Network {
        match self.mode {
            NetworkMode::Off => sandbox::Network::Off,
            NetworkMode::On => sandbox::Network::On,
            NetworkMode::AllowList => sandbox::Network::Proxy,
        }
    }

    /// One line for the system prompt, so the model asks instead of retrying.
    pub fn prompt_line(&self, sandboxed: bool) -> String {
        if !sandboxed {
            return "Network: not restricted (the sandbox is off).".into();
        }
        match self.mode {
            NetworkMode::Off => "Network: off — commands cannot reach the network; if a task \
                                 needs it, ask the user to allow it instead of retrying."
                .into(),
            NetworkMode::On => "Network: on.".into(),
            NetworkMode::AllowList => format!(
                "Network: only these hosts are reachable, through an HTTP proxy already set in \
                 HTTP_PROXY/HTTPS_PROXY: {}. Other hosts get 403; ask the user to allow a host \
                 (--allow-domain) instead of retrying or working around it.",
                self.allow.entries().join(", ")
            ),
        }
    }

    /// The line printed when the sandbox is off and the policy cannot be enforced.
    pub fn unenforced_warning(&self) -> Option<String> {
        (self.mode != NetworkMode::On).then(|| {
            format!(
                "gg: network policy \"{}\" cannot be enforced without the sandbox (use --sandbox); \
                 commands have full network access",
                self.mode
            )
        })
    }

    /// For `gg sandbox --explain`.
    pub fn explain(&self) -> serde_json::Value {
        let mut v = serde_json::json!({ "mode": self.mode.as_str() });
        if self.mode == NetworkMode::AllowList {
            v["allowDomains"] = serde_json::json!(self.allow.entries());
        }
        v
    }
}

/// Reads the project's `.gg/settings.json` (next to `.gg/policy.toml`). A file that exists but
/// cannot be parsed is an error: a half-read policy must not run.
pub fn load_project_settings(cwd: &Path) -> Result<Option<NetworkSettings>, NetworkError> {
    let path = crate::security::project_policy_path(cwd).with_file_name("settings.json");
    // Not `fs::read`: a command may have made it a FIFO (see `read_settings_file`).
    match sandbox::protected::read_settings_file(&path, sandbox::protected::SETTINGS_LIMIT) {
        Ok(bytes) => serde_json::from_slice::<NetworkSettings>(&bytes)
            .map(Some)
            .map_err(|source| NetworkError::Parse { path, source }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(NetworkError::Read { path, source }),
    }
}

/// The session policy for `cwd`: the user's config, the command line, then the project's
/// `.gg/settings.json`. The second value says whether anything named a network setting (then,
/// with the sandbox off, gg says that it cannot be enforced).
pub fn session_policy(
    user: &NetworkSettings,
    cli_mode: Option<NetworkMode>,
    cli_domains: &[String],
    cwd: &Path,
) -> Result<(NetworkPolicy, bool), NetworkError> {
    let project = load_project_settings(cwd)?;
    let explicit = cli_mode.is_some()
        || !cli_domains.is_empty()
        || user.network.is_some()
        || project.as_ref().is_some_and(|p| p.network.is_some());
    let policy = NetworkPolicy::resolve(user, cli_mode, cli_domains, project.as_ref())?;
    Ok((policy, explicit))
}

/// Reads only the network keys of `~/.gg/config.json` (for commands such as `gg sandbox` that
/// need no provider). A missing file is the default; an unreadable or malformed one is an error.
pub fn load_user_settings(home: &Path) -> Result<NetworkSettings, NetworkError> {
    let path = home.join(".gg").join("config.json");
    let settings = match std::fs::read(&path) {
        Ok(bytes) => match serde_json::from_slice::<NetworkSettings>(&bytes) {
            Ok(settings) => settings,
            Err(source) => return Err(NetworkError::Parse { path, source }),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => NetworkSettings::default(),
        Err(source) => return Err(NetworkError::Read { path, source }),
    };
    if let Some(domains) = &settings.allow_domains
        && let Err(e) = AllowList::parse(domains)
    {
        return Err(NetworkError::AllowDomains {
            path,
            source: Box::new(e),
        });
    }
    Ok(settings)
}

/// The environment a command needs to use the proxy at `url`.
pub fn proxy_env(url: &str) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        v.push((name.to_string(), url.to_string()));
        v.push((name.to_ascii_lowercase(), url.to_string()));
    }
    // An inherited NO_PROXY would send those hosts around the proxy, where there is no route.
    v.push(("NO_PROXY".into(), String::new()));
    v.push(("no_proxy".into(), String::new()));
    v
}

/// Puts [`proxy_env`] into a complete environment, replacing inherited values.
pub fn set_proxy_env(env: &mut Vec<(std::ffi::OsString, std::ffi::OsString)>, url: &str) {
    let vars = proxy_env(url);
    env.retain(|(k, _)| !vars.iter().any(|(name, _)| k == name.as_str()));
    env.extend(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
}

/// Names the proxy resolves without DNS, from `GG_TEST_RESOLVE` (`name=ip[,name=ip…]`).
///
/// Honoured only in debug builds (the test binaries): a release build ignores the variable. It
/// can only redirect names that are already on the allow-list, the sandboxed command never sees
/// it (`GG_*` variables are scrubbed from every child environment), and the proxy runs in gg's
/// own process, so nothing inside the sandbox can set it.
pub fn test_resolver() -> proxy::Overrides {
    let mut out = proxy::Overrides::new();
    if !cfg!(debug_assertions) {
        return out;
    }
    let Ok(spec) = std::env::var("GG_TEST_RESOLVE") else {
        return out;
    };
    for pair in spec.split(',') {
        if let Some((name, addr)) = pair.split_once('=')
            && let Ok(addr) = addr.trim().parse()
        {
            out.entry(name.trim().to_ascii_lowercase())
                .or_default()
                .push(addr);
        }
    }
    out
}

/// A session's network: the policy, and the proxy started on first use.
#[derive(Debug, Default)]
pub struct SessionNetwork {
    pub policy: NetworkPolicy,
    proxy: Mutex<Option<Arc<ProxyHandle>>>,
}

impl SessionNetwork {
    pub fn new(policy: NetworkPolicy) -> SessionNetwork {
        SessionNetwork {
            policy,
            proxy: Mutex::new(None),
        }
    }

    /// The proxy, started the first time a sandboxed command needs it.
    pub fn proxy(&self) -> Result<Arc<ProxyHandle>, NetworkError> {
        let mut slot = self.proxy.lock().map_err(|_| NetworkError::Poisoned)?;
        if let Some(p) = slot.as_ref() {
            return Ok(Arc::clone(p));
        }
        let p = Arc::new(ProxyHandle::start(
            self.policy.allow.clone(),
            test_resolver(),
        )?);
        *slot = Some(Arc::clone(&p));
        Ok(p)
    }

    /// Sets `policy` up for one command: its network mode and, for the allow-list, the proxy
    /// route; returns the call scope whose URL goes into the command's environment.
    pub fn apply(&self, policy: &mut sandbox::Policy) -> Result<Option<CallScope>, NetworkError> {
        match self.route(policy)? {
            Some(proxy) => Ok(Some(proxy.begin_call())),
            None => Ok(None),
        }
    }

    /// Sets `policy`'s network mode and, for the allow-list, the proxy route (starting the
    /// proxy), without beginning a call: what the session's sandbox is started with.
    pub fn route(
        &self,
        policy: &mut sandbox::Policy,
    ) -> Result<Option<Arc<ProxyHandle>>, NetworkError> {
        policy.network = self.policy.sandbox_network();
        if self.policy.mode != NetworkMode::AllowList {
            return Ok(None);
        }
        let proxy = self.proxy()?;
        policy.proxy = Some(proxy.route());
        Ok(Some(proxy))
    }

    /// [`SessionNetwork::apply`], and the call's proxy variables put into `env` (the command's
    /// complete environment).
    pub fn prepare(
        &self,
        policy: &mut sandbox::Policy,
        env: &mut Vec<(std::ffi::OsString, std::ffi::OsString)>,
    ) -> Result<Option<CallScope>, NetworkError> {
        let scope = self.apply(policy)?;
        if let Some(scope) = &scope {
            set_proxy_env(env, &scope.url());
        }
        Ok(scope)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(mode: Option<&str>, domains: Option<&[&str]>) -> NetworkSettings {
        NetworkSettings {
            network: mode.map(|m| m.parse().unwrap()),
            allow_domains: domains.map(|d| d.iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn defaults_cli_and_project_layers() {
        let p = NetworkPolicy::resolve(&NetworkSettings::default(), None, &[], None).unwrap();
        assert_eq!(p.mode, NetworkMode::AllowList);
        assert!(p.allow.check_host("crates.io").is_ok());
        assert!(p.allow.check_host("registry.npmjs.org").is_ok());

        let user = settings(Some("on"), Some(&["registry.test"]));
        let p = NetworkPolicy::resolve(&user, None, &["*.corp.test".into()], None).unwrap();
        assert_eq!(p.mode, NetworkMode::On);
        assert!(p.allow.check_host("registry.test").is_ok());
        assert!(p.allow.check_host("a.corp.test").is_ok());

        let p = NetworkPolicy::resolve(&user, Some(NetworkMode::AllowList), &[], None).unwrap();
        assert_eq!(p.mode, NetworkMode::AllowList);

        // The project tightens the mode and narrows the list, never the reverse.
        let project = settings(Some("off"), Some(&["crates.io", "evil.test"]));
        let p = NetworkPolicy::resolve(&user, None, &[], Some(&project)).unwrap();
        assert_eq!(p.mode, NetworkMode::Off);
        assert_eq!(p.allow.entries(), vec!["crates.io"]);
        let project = settings(Some("on"), None);
        let user_off = settings(Some("off"), None);
        let p = NetworkPolicy::resolve(&user_off, None, &[], Some(&project)).unwrap();
        assert_eq!(p.mode, NetworkMode::Off);
    }

    #[test]
    fn bad_values_are_errors() {
        assert!("allowlist".parse::<NetworkMode>().is_err());
        assert!(serde_json::from_str::<NetworkSettings>(r#"{"network": "open"}"#).is_err());
        let user = settings(None, Some(&["*.com"]));
        assert!(NetworkPolicy::resolve(&user, None, &[], None).is_err());
        assert!(
            NetworkPolicy::resolve(&NetworkSettings::default(), None, &["a b".into()], None)
                .is_err()
        );
    }

    #[test]
    fn proxy_env_sets_both_cases_and_clears_no_proxy() {
        let env = proxy_env("http://gg:t@127.0.0.1:1");
        for name in ["HTTP_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"] {
            assert!(
                env.iter()
                    .any(|(k, v)| k == name && v == "http://gg:t@127.0.0.1:1")
            );
        }
        assert!(env.iter().any(|(k, v)| k == "NO_PROXY" && v.is_empty()));
    }
}
