//! The allow-list: which hosts the proxy lets sandboxed commands reach. Pure (no I/O).

use std::net::IpAddr;

use super::NetworkError;

/// Hosts that builds need, allowed by default: package registries and source hosts.
pub const DEFAULT_ALLOW_DOMAINS: &[&str] = &[
    // Rust: crates.io, its sparse index, downloads and the static host.
    "crates.io",
    "index.crates.io",
    "static.crates.io",
    "static.rust-lang.org",
    // npm
    "registry.npmjs.org",
    // PyPI and its file host
    "pypi.org",
    "files.pythonhosted.org",
    // Go module proxy and checksum database
    "proxy.golang.org",
    "sum.golang.org",
    // RubyGems
    "rubygems.org",
    "index.rubygems.org",
    // Maven Central
    "repo.maven.apache.org",
    "repo1.maven.org",
    // GitHub and its content hosts
    "github.com",
    "api.github.com",
    "codeload.github.com",
    "objects.githubusercontent.com",
    "raw.githubusercontent.com",
    "release-assets.githubusercontent.com",
];

/// One entry of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// Exactly this host name (lower case, no trailing dot).
    Host(String),
    /// Any subdomain of this name (`*.example.com`; not `example.com` itself).
    Subdomains(String),
    /// This address, named explicitly (the only way to reach an IP literal or a private,
    /// loopback or link-local address).
    Address(IpAddr),
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rule::Host(h) => f.write_str(h),
            Rule::Subdomains(h) => write!(f, "*.{h}"),
            Rule::Address(a) => write!(f, "{a}"),
        }
    }
}

/// Why a host was refused (the `rule` recorded in the audit trail).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No rule names the host.
    NotAllowed,
    /// The host is an IP address that no rule names.
    IpLiteral,
    /// The name resolved only to loopback, link-local, private or otherwise non-public
    /// addresses that no rule names.
    PrivateAddress,
    /// Not a valid host name.
    BadHost,
}

impl Refused {
    /// The identifier stored in the audit trail and events.
    pub fn as_str(self) -> &'static str {
        match self {
            Refused::NotAllowed => "not-on-allow-list",
            Refused::IpLiteral => "ip-literal",
            Refused::PrivateAddress => "private-address",
            Refused::BadHost => "bad-host",
        }
    }
}

/// A parsed allow-list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    rules: Vec<Rule>,
}

impl AllowList {
    /// Parses entries (`host`, `*.domain`, or an IP address). A malformed entry is an error,
    /// never silently dropped.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<AllowList, NetworkError> {
        let mut list = AllowList::default();
        for entry in entries {
            let rule = parse_rule(entry.as_ref())?;
            if !list.rules.contains(&rule) {
                list.rules.push(rule);
            }
        }
        Ok(list)
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The entries as the user writes them.
    pub fn entries(&self) -> Vec<String> {
        self.rules.iter().map(ToString::to_string).collect()
    }

    /// Only the entries that `other` also allows (a project setting may only tighten).
    pub fn intersect(&self, other: &AllowList) -> AllowList {
        AllowList {
            rules: self
                .rules
                .iter()
                .filter(|r| other.covers(r))
                .cloned()
                .collect(),
        }
    }

    fn covers(&self, rule: &Rule) -> bool {
        match rule {
            Rule::Host(h) => self.match_name(h).is_some(),
            Rule::Address(a) => self.rules.contains(&Rule::Address(*a)),
            Rule::Subdomains(d) => self.rules.iter().any(|r| match r {
                Rule::Subdomains(o) => d == o || d.ends_with(&format!(".{o}")),
                _ => false,
            }),
        }
    }

    /// Whether the host part of a request (`example.com`, `[::1]`, `10.0.0.1`) may be tried:
    /// `Ok(None)` for a name to resolve, `Ok(Some(addr))` for an address a rule names.
    pub fn check_host(&self, host: &str) -> Result<Option<IpAddr>, Refused> {
        let host = normalize(host).ok_or(Refused::BadHost)?;
        if let Some(addr) = parse_ip(&host) {
            return if self.names_address(addr) {
                Ok(Some(addr))
            } else {
                Err(Refused::IpLiteral)
            };
        }
        match self.match_name(&host) {
            Some(_) => Ok(None),
            None => Err(Refused::NotAllowed),
        }
    }

    /// Whether a resolved address may be connected to: public addresses always, others only
    /// when a rule names them.
    pub fn address_allowed(&self, addr: IpAddr) -> bool {
        is_public(addr) || self.names_address(addr)
    }

    fn names_address(&self, addr: IpAddr) -> bool {
        let addr = canonical_ip(addr);
        self.rules.contains(&Rule::Address(addr))
    }

    fn match_name(&self, host: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| match r {
            Rule::Host(h) => h == host,
            Rule::Subdomains(d) => host.len() > d.len() + 1 && host.ends_with(&format!(".{d}")),
            Rule::Address(_) => false,
        })
    }
}

fn parse_rule(entry: &str) -> Result<Rule, NetworkError> {
    let trimmed = entry.trim();
    let bad = || NetworkError::BadEntry {
        entry: entry.to_string(),
    };
    if let Some(rest) = trimmed.strip_prefix("*.") {
        let name = normalize(rest).ok_or_else(bad)?;
        if parse_ip(&name).is_some() || !name.contains('.') && name != "localhost" {
            // `*.com` would allow a whole top-level domain.
            return Err(NetworkError::WideWildcard {
                entry: entry.to_string(),
            });
        }
        return Ok(Rule::Subdomains(name));
    }
    let name = normalize(trimmed).ok_or_else(bad)?;
    if let Some(addr) = parse_ip(&name) {
        return Ok(Rule::Address(canonical_ip(addr)));
    }
    Ok(Rule::Host(name))
}

/// Lower case, brackets and one trailing dot removed; `None` unless it is a plausible host.
fn normalize(host: &str) -> Option<String> {
    let host = host.trim();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    if host.is_empty() || host.len() > 253 {
        return None;
    }
    if parse_ip(&host).is_some() {
        return Some(host);
    }
    let labels_ok = host.split('.').all(|l| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    labels_ok.then_some(host)
}

fn parse_ip(host: &str) -> Option<IpAddr> {
    host.parse::<IpAddr>().ok().map(canonical_ip)
}

/// IPv4-mapped IPv6 addresses (`::ffff:127.0.0.1`) are the IPv4 address they carry.
fn canonical_ip(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

/// Globally routable unicast: not loopback, unspecified, private, shared (CGNAT), link-local,
/// multicast, broadcast, documentation, benchmarking or reserved.
pub fn is_public(addr: IpAddr) -> bool {
    match canonical_ip(addr) {
        IpAddr::V4(a) => {
            let [o0, o1, ..] = a.octets();
            !(a.is_loopback()
                || a.is_unspecified()
                || a.is_private()
                || a.is_link_local()
                || a.is_multicast()
                || a.is_broadcast()
                || a.is_documentation()
                || o0 == 0
                || (o0 == 100 && (64..128).contains(&o1))
                || (o0 == 198 && (18..20).contains(&o1))
                || (o0 == 192 && o1 == 0 && a.octets()[2] == 0)
                || o0 >= 240)
        }
        IpAddr::V6(a) => {
            let s = a.segments();
            !(a.is_loopback()
                || a.is_unspecified()
                || a.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link-local
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || (s[0] == 0x0064 && s[1] == 0xff9b) // NAT64 can reach private IPv4
                || s[0] == 0) // IPv4-compatible and other reserved forms
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_and_wildcard_names() {
        let l = AllowList::parse(&["crates.io", "*.example.com", "Registry.Test."]).unwrap();
        assert_eq!(l.check_host("crates.io"), Ok(None));
        assert_eq!(l.check_host("CRATES.IO."), Ok(None));
        assert_eq!(l.check_host("registry.test"), Ok(None));
        assert_eq!(l.check_host("a.example.com"), Ok(None));
        assert_eq!(l.check_host("a.b.example.com"), Ok(None));
        assert_eq!(l.check_host("example.com"), Err(Refused::NotAllowed));
        assert_eq!(l.check_host("evilexample.com"), Err(Refused::NotAllowed));
        assert_eq!(l.check_host("crates.io.evil.com"), Err(Refused::NotAllowed));
        assert_eq!(l.check_host("collector.example"), Err(Refused::NotAllowed));
        assert_eq!(l.check_host("a b"), Err(Refused::BadHost));
        assert_eq!(l.check_host(""), Err(Refused::BadHost));
    }

    #[test]
    fn ip_literals_need_a_rule_naming_them() {
        let l = AllowList::parse(&["10.1.2.3", "::1"]).unwrap();
        assert_eq!(l.check_host("127.0.0.1"), Err(Refused::IpLiteral));
        assert_eq!(l.check_host("93.184.216.34"), Err(Refused::IpLiteral));
        assert_eq!(l.check_host("[::ffff:127.0.0.1]"), Err(Refused::IpLiteral));
        assert_eq!(
            l.check_host("10.1.2.3"),
            Ok(Some("10.1.2.3".parse().unwrap()))
        );
        assert_eq!(l.check_host("[::1]"), Ok(Some("::1".parse().unwrap())));
        assert!(l.address_allowed("10.1.2.3".parse().unwrap()));
        assert!(!l.address_allowed("10.1.2.4".parse().unwrap()));
    }

    #[test]
    fn non_public_addresses() {
        for a in [
            "127.0.0.1",
            "0.0.0.0",
            "10.0.0.1",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
        ] {
            assert!(!is_public(a.parse().unwrap()), "{a}");
        }
        for a in ["93.184.216.34", "2606:4700::1111", "8.8.8.8"] {
            assert!(is_public(a.parse().unwrap()), "{a}");
        }
    }

    #[test]
    fn bad_entries_are_errors() {
        assert!(AllowList::parse(&["*.com"]).is_err());
        assert!(AllowList::parse(&["*.1.2.3.4"]).is_err());
        assert!(AllowList::parse(&["exa mple.com"]).is_err());
        assert!(AllowList::parse(&["https://x.com/"]).is_err());
        assert!(AllowList::parse(&[""]).is_err());
        assert!(AllowList::parse(DEFAULT_ALLOW_DOMAINS).is_ok());
    }

    #[test]
    fn intersection_only_tightens() {
        let user = AllowList::parse(&["crates.io", "*.example.com", "10.0.0.1"]).unwrap();
        let project =
            AllowList::parse(&["crates.io", "a.example.com", "*.b.example.com", "evil.com"])
                .unwrap();
        let both = project.intersect(&user);
        assert_eq!(
            both.entries(),
            vec!["crates.io", "a.example.com", "*.b.example.com"]
        );
    }

    proptest::proptest! {
        #[test]
        fn any_host_text_is_handled(host in "\\PC{0,80}") {
            let l = AllowList::parse(DEFAULT_ALLOW_DOMAINS).unwrap();
            let _ = l.check_host(&host);
        }
    }
}
