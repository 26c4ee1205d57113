//! The macOS Seatbelt (SBPL) profile for a [`Policy`], used with `/usr/bin/sandbox-exec -p`.
//!
//! A pure function of the policy so that it is tested on every platform. Paths are embedded as
//! SBPL string literals (escaped); rules are emitted allows first, denies last, because in SBPL
//! the last matching rule wins.

use std::path::Path;

use crate::policy::{Network, Policy};

/// Absolute path of `sandbox-exec` (never looked up in `$PATH`).
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// Renders the profile. `tmp_dirs` are the writable temporary directories (canonical, e.g.
/// `/private/tmp` and the per-user `/private/var/folders/…/T`).
pub fn profile(policy: &Policy, tmp_dirs: &[&Path]) -> String {
    let mut s = String::from(
        "(version 1)\n\
         (deny default)\n\
         (allow process-exec process-fork)\n\
         (allow signal process-info* (target same-sandbox))\n\
         (allow sysctl-read)\n\
         (allow mach-lookup (global-name \"com.apple.system.opendirectoryd.libinfo\")\n\
         \x20                  (global-name \"com.apple.trustd.agent\"))\n\
         (allow ipc-posix-sem ipc-posix-shm)\n\
         (allow file-read*)\n\
         (allow file-ioctl (literal \"/dev/null\") (literal \"/dev/tty\"))\n",
    );
    s.push_str("(allow file-write*\n");
    for root in policy.all_writable() {
        s.push_str(&format!("  (subpath {})\n", quote(root)));
    }
    for tmp in tmp_dirs {
        s.push_str(&format!("  (subpath {})\n", quote(tmp)));
    }
    s.push_str("  (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/tty\")\n");
    s.push_str("  (literal \"/dev/stdout\") (literal \"/dev/stderr\"))\n");
    if policy.network == Network::On {
        s.push_str("(allow network*)\n");
        s.push_str("(allow mach-lookup (global-name \"com.apple.SystemConfiguration.configd\")\n");
        s.push_str("                   (global-name \"com.apple.dnssd.service\"))\n");
    }
    if let (Network::Proxy, Some(route)) = (policy.network, &policy.proxy) {
        // Only the host proxy on loopback; it enforces the allow-list.
        s.push_str(&format!(
            "(allow network-outbound (remote ip \"localhost:{}\"))\n",
            route.port
        ));
    }
    for path in &policy.read_only {
        s.push_str(&format!("(deny file-write* (subpath {}))\n", quote(path)));
    }
    for path in &policy.pinned {
        // Renaming or removing the directory itself would detach the carve-outs below it.
        s.push_str(&format!(
            "(deny file-write-unlink (literal {}))\n",
            quote(path)
        ));
    }
    for path in &policy.deny_read {
        s.push_str(&format!(
            "(deny file-read* file-write* (subpath {}))\n",
            quote(path)
        ));
    }
    s
}

/// An SBPL string literal.
fn quote(path: &Path) -> String {
    let mut out = String::from("\"");
    for c in path.to_string_lossy().chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn policy(network: Network) -> Policy {
        Policy {
            workdir: PathBuf::from("/Users/me/proj"),
            workdir_writable: true,
            writable_roots: vec![PathBuf::from("/Users/me/cache")],
            read_only: vec![
                PathBuf::from("/Users/me/proj/.git/hooks"),
                PathBuf::from("/Users/me/proj/.gg"),
            ],
            pinned: vec![PathBuf::from("/Users/me/proj/.git")],
            deny_read: vec![PathBuf::from("/Users/me/.ssh")],
            network,
            proxy: None,
            private_tmp: true,
            create_if_missing: Vec::new(),
            sockets: Vec::new(),
            local_sockets: false,
        }
    }

    #[test]
    fn profile_allows_workdir_and_tmp_then_denies_carve_outs() {
        let text = profile(&policy(Network::Off), &[Path::new("/private/tmp")]);
        assert!(text.starts_with("(version 1)\n(deny default)\n"));
        let write = text.find("(allow file-write*\n  (subpath \"/Users/me/proj\")\n  (subpath \"/Users/me/cache\")\n  (subpath \"/private/tmp\")").unwrap();
        let hooks = text
            .find("(deny file-write* (subpath \"/Users/me/proj/.git/hooks\"))")
            .unwrap();
        let gg = text
            .find("(deny file-write* (subpath \"/Users/me/proj/.gg\"))")
            .unwrap();
        let pin = text
            .find("(deny file-write-unlink (literal \"/Users/me/proj/.git\"))")
            .unwrap();
        let ssh = text
            .find("(deny file-read* file-write* (subpath \"/Users/me/.ssh\"))")
            .unwrap();
        assert!(write < hooks && hooks < gg && gg < pin && pin < ssh);
        assert!(!text.contains("network"));
        assert!(!text.contains("launchservicesd"));
    }

    /// What macOS gives a command classified read-only: the same reads and secrets hidden,
    /// writes only to the temporary directories, no network (untested on a Mac here: the
    /// profile is what can be checked on every platform).
    #[test]
    fn the_read_only_profile_writes_nothing_but_tmp_and_has_no_network() {
        let text = profile(
            &policy(Network::On).read_only(),
            &[Path::new("/private/tmp")],
        );
        assert!(text.contains("(allow file-write*\n  (subpath \"/private/tmp\")\n  (literal"));
        assert!(!text.contains("(subpath \"/Users/me/proj\")\n"));
        assert!(!text.contains("(subpath \"/Users/me/cache\")"));
        assert!(!text.contains("network"));
        assert!(text.contains("(deny file-read* file-write* (subpath \"/Users/me/.ssh\"))"));
    }

    #[test]
    fn network_on_is_allowed_explicitly() {
        let text = profile(&policy(Network::On), &[]);
        assert!(text.contains("(allow network*)\n"));
    }

    #[test]
    fn paths_are_escaped() {
        let mut p = policy(Network::Off);
        p.workdir = PathBuf::from("/x/\"q\"\\y");
        let text = profile(&p, &[]);
        assert!(text.contains("(subpath \"/x/\\\"q\\\"\\\\y\")"));
    }

    proptest::proptest! {
        /// Whatever a path contains, it stays one SBPL string literal: the profile cannot be
        /// extended through a directory name.
        #[test]
        fn any_path_is_one_string_literal(name in "(?s).{0,40}") {
            let quoted = quote(Path::new(&format!("/w/{name}")));
            let inner = &quoted[1..quoted.len() - 1];
            proptest::prop_assert!(quoted.starts_with('"') && quoted.ends_with('"'));
            let mut escaped = false;
            for c in inner.chars() {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else {
                    proptest::prop_assert!(c != '"' && c != '\n');
                }
            }
            proptest::prop_assert!(!escaped);
        }
    }
}
