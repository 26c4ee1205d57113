//! Where the browser may go: the pure half of the browser tools' guard (gg's `browser_*` tools).
//!
//! The tools parse the URL here, resolve names and files themselves (I/O stays in `tools`), and
//! ask this module for the class:
//!
//! | target | class |
//! |---|---|
//! | `http(s)` to a public address, or to a name resolving only to public addresses | normal |
//! | `http(s)` to loopback (`localhost`, `127.0.0.0/8`, `[::1]`: the project's dev server) | normal |
//! | `http(s)` to a private, link-local (cloud metadata), CGNAT or other special address, or a name resolving to any of them (or a name other than `localhost` resolving to loopback) | dangerous, unless a config rule allows the host |
//! | a URL with a user name or password | dangerous |
//! | `file://` inside the working directory | normal |
//! | `file://` anywhere else, and every other scheme (`chrome:`, `devtools:`, `view-source:`, `data:`, `javascript:`, …) | dangerous |
//!
//! Obfuscated numeric IPv4 forms (`2130706433`, `0x7f.1`, `0177.0.0.1`) are normalised by the URL
//! parser (WHATWG rules, as the browser itself does) before any of this is decided, so they are
//! judged as the address they denote.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use classifier::Class;

/// The longest URL accepted, in bytes.
pub const MAX_URL_BYTES: usize = 8192;

/// What kind of address an IP is, for the browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpKind {
    /// `127.0.0.0/8`, `::1` (and `::ffff:127.x` mapped forms).
    Loopback,
    /// Globally routable unicast.
    Public,
    /// Anything else; the text names the range.
    Special(&'static str),
}

/// Classifies an address. IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry.
pub fn ip_kind(ip: IpAddr) -> IpKind {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    };
    match ip {
        IpAddr::V4(a) => {
            let [o0, o1, o2, _] = a.octets();
            if a.is_loopback() {
                IpKind::Loopback
            } else if a.is_link_local() {
                IpKind::Special("link-local (cloud metadata service)")
            } else if a.is_private() {
                IpKind::Special("private network")
            } else if o0 == 100 && (64..128).contains(&o1) {
                IpKind::Special("shared address space (CGNAT)")
            } else if a.is_unspecified() || o0 == 0 {
                IpKind::Special("\"this network\" (0.0.0.0/8)")
            } else if a.is_multicast() || a.is_broadcast() {
                IpKind::Special("multicast or broadcast")
            } else if a.is_documentation()
                || (o0 == 198 && (18..20).contains(&o1))
                || (o0 == 192 && o1 == 0 && o2 == 0)
                || o0 >= 240
            {
                IpKind::Special("reserved")
            } else {
                IpKind::Public
            }
        }
        IpAddr::V6(a) => {
            let s = a.segments();
            if a.is_loopback() {
                IpKind::Loopback
            } else if (s[0] & 0xffc0) == 0xfe80 {
                IpKind::Special("link-local")
            } else if (s[0] & 0xfe00) == 0xfc00 {
                IpKind::Special("unique local (private network)")
            } else if a.is_unspecified() || a.is_multicast() {
                IpKind::Special("unspecified or multicast")
            } else if s[0] == 0x0064 && s[1] == 0xff9b {
                IpKind::Special("NAT64 (can reach private IPv4)")
            } else if s[0] == 0x2002 || (s[0] == 0x2001 && s[1] == 0) {
                IpKind::Special("6to4 or Teredo (can reach private IPv4)")
            } else if (s[0] == 0x2001 && s[1] == 0x0db8) || s[0] == 0 {
                IpKind::Special("reserved")
            } else {
                IpKind::Public
            }
        }
    }
}

/// The host of an `http(s)` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebHost {
    /// An IP literal (after WHATWG normalisation).
    Ip(IpAddr),
    /// `localhost` or a name under `.localhost`: always loopback, never looked up.
    Localhost(String),
    /// Any other name (lower case, without a trailing dot); the caller resolves it.
    Name(String),
}

impl WebHost {
    /// The host as the proxy and the approval show it.
    pub fn display(&self) -> String {
        match self {
            WebHost::Ip(ip) => ip.to_string(),
            WebHost::Localhost(n) | WebHost::Name(n) => n.clone(),
        }
    }
}

/// A parsed browser target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `http:` or `https:`.
    Web {
        /// The normalised URL (what the browser is sent to).
        url: String,
        host: WebHost,
        port: u16,
        /// A user name or password in the URL.
        credentials: bool,
    },
    /// `file:` naming a local path (not yet resolved: the caller canonicalises it).
    File { url: String, path: PathBuf },
    /// Every other scheme.
    Other { url: String, scheme: String },
}

impl Target {
    /// The normalised URL.
    pub fn url(&self) -> &str {
        match self {
            Target::Web { url, .. } | Target::File { url, .. } | Target::Other { url, .. } => url,
        }
    }
}

/// Parses `text` as a URL. An error is a target that is never opened (empty, too long, control
/// characters, not a URL, a `file:` URL that names no local path).
pub fn parse(text: &str) -> Result<Target, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("the URL is empty".into());
    }
    if text.len() > MAX_URL_BYTES {
        return Err(format!("the URL is longer than {MAX_URL_BYTES} bytes"));
    }
    if text.chars().any(char::is_control) {
        return Err("the URL contains control characters".into());
    }
    let url = url::Url::parse(text).map_err(|e| format!("not a URL ({e}): {text}"))?;
    let scheme = url.scheme().to_string();
    match scheme.as_str() {
        "http" | "https" => {
            let host = match url.host() {
                Some(url::Host::Ipv4(ip)) => WebHost::Ip(IpAddr::V4(ip)),
                Some(url::Host::Ipv6(ip)) => WebHost::Ip(IpAddr::V6(ip)),
                Some(url::Host::Domain(name)) => {
                    let name = name.trim_end_matches('.').to_ascii_lowercase();
                    if name.is_empty() {
                        return Err(format!("no host in {text}"));
                    }
                    if name == "localhost" || name.ends_with(".localhost") {
                        WebHost::Localhost(name)
                    } else {
                        WebHost::Name(name)
                    }
                }
                None => return Err(format!("no host in {text}")),
            };
            let port = url.port_or_known_default().unwrap_or(80);
            Ok(Target::Web {
                credentials: !url.username().is_empty() || url.password().is_some(),
                url: url.to_string(),
                host,
                port,
            })
        }
        "file" => {
            if url
                .host_str()
                .is_some_and(|h| !h.is_empty() && h != "localhost")
            {
                return Err(format!("a file URL on another host is not local: {text}"));
            }
            let path = url
                .to_file_path()
                .map_err(|()| format!("the file URL names no local path: {text}"))?;
            Ok(Target::File {
                url: url.to_string(),
                path,
            })
        }
        _ => Ok(Target::Other {
            url: url.to_string(),
            scheme,
        }),
    }
}

/// A class with its rule id and a one-line reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    pub class: Class,
    /// A stable id, e.g. `browser.private-address`.
    pub rule: &'static str,
    pub reason: String,
}

fn judged(class: Class, rule: &'static str, reason: String) -> Judgement {
    Judgement {
        class,
        rule,
        reason,
    }
}

/// Judges an `http(s)` target. `resolved` is what the caller's resolver answered for a
/// [`WebHost::Name`] (empty when it could not resolve it now: the browser's proxy checks every
/// connection again anyway); `allowed` says whether a config rule names the host.
pub fn judge_web(
    host: &WebHost,
    resolved: &[IpAddr],
    credentials: bool,
    allowed: bool,
) -> Judgement {
    let shown = host.display();
    if credentials {
        return judged(
            Class::Dangerous,
            "browser.credentials",
            format!("the URL for {shown} carries a user name or password"),
        );
    }
    let special = |what: String| {
        if allowed {
            judged(
                Class::Normal,
                "browser.allowed-host",
                format!("{what}; allowed by browser.allowPrivateHosts"),
            )
        } else {
            judged(Class::Dangerous, "browser.private-address", what)
        }
    };
    match host {
        WebHost::Localhost(name) => judged(
            Class::Normal,
            "browser.loopback",
            format!("http(s) on the local host ({name})"),
        ),
        WebHost::Ip(ip) => match ip_kind(*ip) {
            IpKind::Loopback => judged(
                Class::Normal,
                "browser.loopback",
                format!("http(s) on the local host ({ip})"),
            ),
            IpKind::Public => judged(
                Class::Normal,
                "browser.public",
                format!("http(s) on a public address ({ip})"),
            ),
            IpKind::Special(what) => special(format!("{ip} is a {what} address")),
        },
        WebHost::Name(name) => {
            for ip in resolved {
                match ip_kind(*ip) {
                    IpKind::Public => {}
                    IpKind::Loopback => {
                        return special(format!(
                            "{name} resolves to the loopback address {ip} (only localhost may)"
                        ));
                    }
                    IpKind::Special(what) => {
                        return special(format!("{name} resolves to {ip}, a {what} address"));
                    }
                }
            }
            let reason = if resolved.is_empty() {
                format!("http(s) on {name} (not resolved yet; every connection is checked)")
            } else {
                format!("http(s) on a public host ({name})")
            };
            judged(Class::Normal, "browser.public", reason)
        }
    }
}

/// Judges a `file:` target by its canonical path (`None`: it does not resolve) against the
/// canonical working directory.
pub fn judge_file(resolved: Option<&Path>, cwd: &Path) -> Judgement {
    match resolved {
        Some(path) if path.starts_with(cwd) => judged(
            Class::Normal,
            "browser.file",
            format!("a file inside the working directory ({})", path.display()),
        ),
        Some(path) => judged(
            Class::Dangerous,
            "browser.file-outside",
            format!("{} is outside the working directory", path.display()),
        ),
        None => judged(
            Class::Dangerous,
            "browser.file-outside",
            "the file does not resolve to a path inside the working directory".into(),
        ),
    }
}

/// Judges any other scheme: always dangerous.
pub fn judge_other(scheme: &str) -> Judgement {
    let why = match scheme {
        "javascript" => "runs script in the current page",
        "data" | "blob" => "a page made up by the caller, outside any origin's rules",
        "chrome" | "chrome-untrusted" | "devtools" | "about" => {
            "a browser-internal page (settings, debugging)"
        }
        "view-source" => "wraps another URL, bypassing its checks",
        _ => "not http(s) or a file in the working directory",
    };
    judged(
        Class::Dangerous,
        "browser.scheme",
        format!("the {scheme}: scheme: {why}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn class_of(text: &str, resolved: &[&str]) -> Class {
        let resolved: Vec<IpAddr> = resolved.iter().map(|a| a.parse().unwrap()).collect();
        match parse(text).unwrap() {
            Target::Web {
                host, credentials, ..
            } => judge_web(&host, &resolved, credentials, false).class,
            Target::File { path, .. } => judge_file(Some(&path), Path::new("/work/project")).class,
            Target::Other { scheme, .. } => judge_other(&scheme).class,
        }
    }

    #[test]
    fn public_and_loopback_are_normal() {
        for ok in [
            "https://docs.rs/tokio",
            "http://localhost:3000/",
            "http://app.localhost:3000/",
            "http://127.0.0.1:8080/x",
            "http://127.1.2.3/",
            "http://[::1]:8080/",
            "http://8.8.8.8/",
            "http://0x7f.1/", // 127.0.0.1
            "http://2130706433/",
            "file:///work/project/index.html",
        ] {
            assert_eq!(class_of(ok, &[]), Class::Normal, "{ok}");
        }
        assert_eq!(
            class_of("https://example.com/", &["93.184.216.34"]),
            Class::Normal
        );
    }

    #[test]
    fn private_special_and_other_schemes_are_dangerous() {
        for bad in [
            "http://169.254.169.254/latest/meta-data/",
            "http://10.0.0.1/",
            "http://172.16.0.1/",
            "http://192.168.1.1/",
            "http://100.64.0.1/",
            "http://0.0.0.0/",
            "http://[fe80::1]/",
            "http://[fd00::1]/",
            "http://[::ffff:10.0.0.1]/",
            "http://[::ffff:a9fe:a9fe]/", // 169.254.169.254 mapped
            "http://[64:ff9b::a00:1]/",
            "http://0x0a.0.0.1/",
            "http://012.0.0.1/", // octal 10.0.0.1
            "http://167772161/", // 10.0.0.1 as one number
            "http://0xa9fea9fe/",
            "http://10.1/", // 10.0.0.1 short form
            "https://user:pw@example.com/",
            "file:///etc/passwd",
            "file:///work/project/../../etc/passwd",
            "javascript:alert(1)",
            "data:text/html,<script>x</script>",
            "chrome://settings",
            "devtools://devtools/bundled/inspector.html",
            "view-source:http://127.0.0.1/",
            "about:blank",
            "ftp://example.com/",
        ] {
            assert_eq!(class_of(bad, &[]), Class::Dangerous, "{bad}");
        }
        // Names are judged by what they resolve to: any private answer, or loopback for a name
        // other than localhost (DNS rebinding against the dev server), is dangerous.
        assert_eq!(
            class_of("http://evil.test/", &["93.184.216.34", "10.0.0.1"]),
            Class::Dangerous
        );
        assert_eq!(
            class_of("http://evil.test/", &["127.0.0.1"]),
            Class::Dangerous
        );
        assert_eq!(
            class_of("http://evil.test/", &["169.254.169.254"]),
            Class::Dangerous
        );
    }

    #[test]
    fn a_config_rule_makes_a_private_host_normal() {
        let host = WebHost::Ip("10.0.0.5".parse().unwrap());
        let j = judge_web(&host, &[], false, true);
        assert_eq!(j.class, Class::Normal);
        assert_eq!(j.rule, "browser.allowed-host");
        // Credentials stay dangerous whatever the rules say.
        assert_eq!(judge_web(&host, &[], true, true).class, Class::Dangerous);
    }

    #[test]
    fn unusable_input_is_an_error() {
        for bad in [
            "",
            "   ",
            "not a url",
            "http://",
            "http://a\u{1b}b/",
            "file://otherhost/etc/passwd",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert!(parse(&format!("https://x.test/{}", "a".repeat(MAX_URL_BYTES))).is_err());
    }

    proptest! {
        /// Every IPv4 address, in any of the numeric spellings the URL parser accepts, gets the
        /// class of the address itself.
        #[test]
        fn numeric_spellings_are_judged_as_the_address(n in any::<u32>(), form in 0usize..4) {
            let ip = std::net::Ipv4Addr::from(n);
            let [a, b, c, d] = ip.octets();
            let text = match form {
                0 => format!("http://{ip}/"),
                1 => format!("http://{n}/"),
                2 => format!("http://0x{a:x}.0x{b:x}.0x{c:x}.0x{d:x}/"),
                _ => format!("http://0{a:o}.0{b:o}.0{c:o}.0{d:o}/"),
            };
            let expected = match ip_kind(IpAddr::V4(ip)) {
                IpKind::Loopback | IpKind::Public => Class::Normal,
                IpKind::Special(_) => Class::Dangerous,
            };
            prop_assert_eq!(class_of(&text, &[]), expected, "{}", text);
        }

        /// IPv4-mapped IPv6 addresses are never more trusted than the IPv4 address they carry.
        #[test]
        fn mapped_addresses_follow_ipv4(n in any::<u32>()) {
            let v4 = std::net::Ipv4Addr::from(n);
            let mapped = IpAddr::V6(v4.to_ipv6_mapped());
            prop_assert_eq!(ip_kind(mapped), ip_kind(IpAddr::V4(v4)));
        }
    }
}
