//! Access policy: which client addresses a server serves.
//!
//! `--allow` and `--deny` (both dialects; iperf 2's `-s -c host` is one more
//! allow entry) each take a comma-separated list and may be repeated. An
//! entry is an address (`10.1.2.3`, `::1`, `[fe80::1]`), a network in CIDR
//! form (`10.0.0.0/8`, `2001:db8::/32`), or a host name, resolved once when
//! the server starts (every address it has). Deny wins: a client matching
//! any deny entry is refused; otherwise, if there are allow entries, it must
//! match one; with none, everyone not denied is served. IPv4-mapped IPv6
//! peers (`::ffff:a.b.c.d`, a dual-stack listener's view of an IPv4 client)
//! are matched as the IPv4 address they carry.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use wirespeed_core::config::TestConfig;
use wirespeed_core::error::{Code, Error};

/// An address with a prefix length: one host (`/32`, `/128`) or a network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Net {
    addr: IpAddr,
    prefix: u8,
}

impl Net {
    /// The network of `addr` with `prefix` leading bits (host bits are
    /// cleared); `None` if the prefix is longer than the address.
    pub fn new(addr: IpAddr, prefix: u8) -> Option<Net> {
        let (addr, prefix) = match addr {
            // `::ffff:10.0.0.0/104` is the IPv4 network 10.0.0.0/8.
            IpAddr::V6(v6) if prefix >= 96 && v6.to_ipv4_mapped().is_some() => {
                (IpAddr::V4(v6.to_ipv4_mapped()?), prefix - 96)
            }
            a => (a, prefix),
        };
        match addr {
            IpAddr::V4(v4) if prefix <= 32 => Some(Net {
                addr: IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask32(prefix))),
                prefix,
            }),
            IpAddr::V6(v6) if prefix <= 128 => Some(Net {
                addr: IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask128(prefix))),
                prefix,
            }),
            _ => None,
        }
    }

    /// One host.
    pub fn host(addr: IpAddr) -> Net {
        let addr = wirespeed_core::net::canonical_ip(addr);
        let prefix = if addr.is_ipv4() { 32 } else { 128 };
        Net { addr, prefix }
    }

    /// Whether `ip` is inside this network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, wirespeed_core::net::canonical_ip(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => u32::from(ip) & mask32(self.prefix) == u32::from(net),
            (IpAddr::V6(net), IpAddr::V6(ip)) => u128::from(ip) & mask128(self.prefix) == u128::from(net),
            _ => false,
        }
    }
}

fn mask32(prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix.min(32))
    }
}

fn mask128(prefix: u8) -> u128 {
    if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - prefix.min(128))
    }
}

/// One entry of an `--allow`/`--deny` list, before names are resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// An address or a network.
    Net(Net),
    /// A host name (resolved when the server starts).
    Host(String),
}

/// Parses one entry. Anything that is not an address or CIDR network must
/// at least look like a host name (letters, digits, `-`, `.`, `_`).
pub(crate) fn parse_entry(s: &str) -> Result<Entry, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty entry".into());
    }
    let (addr, prefix) = match s.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (s, None),
    };
    let bare = addr.strip_prefix('[').and_then(|a| a.strip_suffix(']')).unwrap_or(addr);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => match p.parse::<u8>() {
                Ok(n) if n <= max && !p.starts_with('+') => n,
                _ => return Err(format!("invalid prefix length '/{p}' (0 to {max})")),
            },
        };
        return Net::new(ip, prefix)
            .map(Entry::Net)
            .ok_or_else(|| format!("invalid prefix length '/{prefix}'"));
    }
    if prefix.is_some() {
        return Err("a prefix length needs an IP address".into());
    }
    let name_ok = s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    if !name_ok {
        return Err("not an address, network or host name".into());
    }
    Ok(Entry::Host(s.to_string()))
}

/// Splits an option value into its comma-separated entries, checking each;
/// the error names the option and the entry.
pub fn split_list(option: &str, value: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in value.split(',') {
        parse_entry(item).map_err(|why| format!("invalid {option} entry '{}': {why}", item.trim()))?;
        out.push(item.trim().to_string());
    }
    Ok(out)
}

/// The rules a server applies to each client address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessPolicy {
    allow: Vec<Net>,
    deny: Vec<Net>,
}

impl AccessPolicy {
    /// A policy that serves everyone.
    pub fn open() -> AccessPolicy {
        AccessPolicy::default()
    }

    /// Builds a policy, resolving host names with `resolve`.
    pub fn build(
        allow: &[String],
        deny: &[String],
        resolve: &dyn Fn(&str) -> Result<Vec<IpAddr>, Error>,
    ) -> Result<AccessPolicy, Error> {
        let nets = |list: &[String], option: &str| -> Result<Vec<Net>, Error> {
            let mut out = Vec::new();
            for item in list {
                match parse_entry(item) {
                    Ok(Entry::Net(n)) => out.push(n),
                    Ok(Entry::Host(h)) => {
                        let addrs = resolve(&h).map_err(|e| {
                            Error::msg(
                                Code::NONE,
                                format!("{option} {h}: cannot resolve the host name ({})", e.text()),
                            )
                        })?;
                        out.extend(addrs.into_iter().map(Net::host));
                    }
                    Err(why) => {
                        return Err(Error::msg(
                            Code::NONE,
                            format!("invalid {option} entry '{item}': {why}"),
                        ));
                    }
                }
            }
            out.dedup();
            Ok(out)
        };
        Ok(AccessPolicy {
            allow: nets(allow, "--allow")?,
            deny: nets(deny, "--deny")?,
        })
    }

    /// The policy of a server configuration (`cfg.server.allow`/`deny`),
    /// host names resolved now with the system resolver.
    pub fn from_config(cfg: &TestConfig) -> Result<AccessPolicy, Error> {
        AccessPolicy::build(&cfg.server.allow, &cfg.server.deny, &|h| {
            // Every address of the name, whatever the listener's family:
            // matching decides (an IPv4 rule never matches an IPv6 peer).
            use std::net::ToSocketAddrs;
            let addrs = (h, 0).to_socket_addrs().map_err(|e| {
                let s = e.to_string();
                let why = s.strip_prefix("failed to lookup address information: ").unwrap_or(&s);
                Error::msg(Code::NONE, why.to_string())
            })?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }

    /// Whether a client at `ip` is served.
    pub fn permits(&self, ip: IpAddr) -> bool {
        if self.deny.iter().any(|n| n.contains(ip)) {
            return false;
        }
        self.allow.is_empty() || self.allow.iter().any(|n| n.contains(ip))
    }

    /// Whether the policy serves everyone.
    pub fn is_open(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn policy(allow: &[&str], deny: &[&str]) -> AccessPolicy {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        AccessPolicy::build(&v(allow), &v(deny), &|h| match h {
            "client.example" => Ok(vec![ip("192.0.2.7"), ip("2001:db8::7")]),
            _ => Err(Error::msg(Code::CONNECT, "Name or service not known")),
        })
        .unwrap()
    }

    #[test]
    fn an_empty_policy_serves_everyone() {
        let p = policy(&[], &[]);
        assert!(p.is_open());
        assert!(p.permits(ip("10.0.0.1")) && p.permits(ip("::1")));
    }

    #[test]
    fn allow_lists_admit_only_their_members() {
        let p = policy(&["10.0.0.0/8", "::1"], &[]);
        assert!(p.permits(ip("10.200.3.4")));
        assert!(p.permits(ip("::1")));
        assert!(!p.permits(ip("11.0.0.1")));
        assert!(!p.permits(ip("127.0.0.1")));
    }

    #[test]
    fn deny_wins_over_allow() {
        let p = policy(&["10.0.0.0/8"], &["10.1.0.0/16"]);
        assert!(p.permits(ip("10.2.0.1")));
        assert!(!p.permits(ip("10.1.9.9")));
        let p = policy(&[], &["127.0.0.1"]);
        assert!(!p.permits(ip("127.0.0.1")));
        assert!(p.permits(ip("127.0.0.2")));
    }

    #[test]
    fn mapped_ipv4_peers_match_ipv4_rules() {
        let p = policy(&["127.0.0.0/8"], &[]);
        assert!(p.permits(ip("::ffff:127.0.0.1")));
        let p = policy(&["::ffff:10.0.0.0/104"], &[]);
        assert!(p.permits(ip("10.9.9.9")));
        assert!(!p.permits(ip("11.0.0.1")));
    }

    #[test]
    fn host_names_resolve_to_every_address() {
        let p = policy(&["client.example"], &[]);
        assert!(p.permits(ip("192.0.2.7")) && p.permits(ip("2001:db8::7")));
        assert!(!p.permits(ip("192.0.2.8")));
        let v = vec!["no.such.host".to_string()];
        let e = AccessPolicy::build(&v, &[], &|_| Err(Error::msg(Code::CONNECT, "x"))).unwrap_err();
        assert!(e.text().contains("--allow no.such.host"), "{}", e.text());
    }

    #[test]
    fn networks_ignore_host_bits_and_zero_prefix_matches_a_family() {
        let p = policy(&["10.1.2.3/8"], &[]);
        assert!(p.permits(ip("10.250.0.1")));
        let p = policy(&["0.0.0.0/0"], &[]);
        assert!(p.permits(ip("203.0.113.5")));
        assert!(!p.permits(ip("2001:db8::1")));
    }

    #[test]
    fn entries_are_checked() {
        assert_eq!(parse_entry("[::1]"), Ok(Entry::Net(Net::host(ip("::1")))));
        assert!(parse_entry("10.0.0.0/33").is_err());
        assert!(parse_entry("::/129").is_err());
        assert!(parse_entry("10.0.0.0/x").is_err());
        assert!(parse_entry("host/8").is_err());
        assert!(parse_entry("").is_err());
        assert!(parse_entry("bad host").is_err());
        assert!(parse_entry("a..b").is_err());
        assert_eq!(parse_entry("gw-1.lab"), Ok(Entry::Host("gw-1.lab".into())));
        assert_eq!(
            split_list("--allow", "10.0.0.1, 10.0.0.0/8").unwrap(),
            vec!["10.0.0.1".to_string(), "10.0.0.0/8".to_string()]
        );
        let e = split_list("--deny", "10.0.0.1,,x").unwrap_err();
        assert!(e.contains("invalid --deny entry ''"), "{e}");
    }
}
