//! Host names as a `Host` header or a URL authority gives them, and which of them
//! are this machine: the server's host check and the plain-http rule for API bases
//! both read them the same way.

use std::net::IpAddr;

/// The host name of a `Host` header or URL authority: lowercase, without the port,
/// the brackets of an IPv6 address, or a trailing dot.
pub fn host_name(host: &str) -> String {
    let host = host.trim();
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None if host.matches(':').count() == 1 => host.split(':').next().unwrap_or(host),
        None => host,
    };
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// `localhost` (and `*.localhost`), 127.0.0.0/8 and `::1`.
pub fn is_loopback_name(name: &str) -> bool {
    let name = host_name(name);
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    match name.parse::<IpAddr>() {
        Ok(ip) => ip.to_canonical().is_loopback(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_and_loopback() {
        assert_eq!(host_name("LocalHost:8001"), "localhost");
        assert_eq!(host_name("[::1]:8001"), "::1");
        assert_eq!(host_name("example.com."), "example.com");
        assert_eq!(host_name("::1"), "::1");
        for name in [
            "localhost",
            "127.0.0.1:9",
            "127.1.2.3",
            "[::1]:80",
            "app.localhost",
        ] {
            assert!(is_loopback_name(name), "{name}");
        }
        for name in [
            "evil.example",
            "127.0.0.1.nip.io",
            "10.0.0.1",
            "localhost.evil.example",
        ] {
            assert!(!is_loopback_name(name), "{name}");
        }
    }
}
