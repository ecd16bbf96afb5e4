//! Finding the public URL in what a provider prints (serveo, cloudflared, a regex).

use super::{Provider, TunnelError};

/// How a provider's URL is found in its output.
pub(super) enum Finder {
    Serveo,
    Cloudflared,
    Regex(regex::Regex),
    Nothing,
}

impl Finder {
    /// serveo and cloudflared print their URL; ngrok's comes from its API instead.
    pub(super) fn for_provider(provider: &Provider) -> Result<Finder, TunnelError> {
        Ok(match provider {
            Provider::Serveo => Finder::Serveo,
            Provider::Cloudflared => Finder::Cloudflared,
            Provider::Ngrok { .. } => Finder::Nothing,
            Provider::Command { url_regex, .. } => Finder::Regex(
                regex::Regex::new(url_regex).map_err(|e| TunnelError::BadRegex(e.to_string()))?,
            ),
        })
    }

    pub(super) fn find(&self, line: &str) -> Option<String> {
        match self {
            Finder::Serveo => serveo_url(line),
            Finder::Cloudflared => cloudflared_url(line),
            Finder::Regex(re) => re.find(line).map(|m| m.as_str().to_string()),
            Finder::Nothing => None,
        }
    }
}

/// Removes terminal escape sequences (colours, cursor moves, titles).
pub(super) fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                // parameters and intermediates, then one final byte in @..~
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                chars.next();
                // an OSC string ends with BEL or ESC \
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            Some(_) => {
                chars.next();
            }
            None => {}
        }
    }
    out
}

/// The URL-looking word at the start of `s`, without trailing punctuation.
fn url_word(s: &str) -> &str {
    let end = s
        .find(|c: char| c.is_whitespace() || "\"'<>`|".contains(c))
        .unwrap_or(s.len());
    s[..end].trim_end_matches(['.', ',', ';', ':', ')', ']', '}', '!'])
}

/// The host part of `http(s)://HOST[:PORT][/...]`.
pub(super) fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    match authority.rfind(':') {
        Some(i) if !authority.ends_with(']') => &authority[..i],
        _ => authority,
    }
}

/// serveo: `Forwarding HTTP traffic from https://NAME.serveo.net` (any http(s) URL
/// after the phrase).
fn serveo_url(line: &str) -> Option<String> {
    const PHRASE: &str = "Forwarding HTTP traffic from";
    let line = strip_ansi(line);
    let at = line.find(PHRASE)?;
    let rest = line[at + PHRASE.len()..].trim_start();
    if !(rest.starts_with("http://") || rest.starts_with("https://")) {
        return None;
    }
    let url = url_word(rest);
    (!host_of(url).is_empty()).then(|| url.to_string())
}

/// cloudflared: the first `https://NAME.trycloudflare.com` in its log, never its API
/// host (`api.trycloudflare.com`, which appears in its error messages).
fn cloudflared_url(line: &str) -> Option<String> {
    let line = strip_ansi(line);
    let mut rest = line.as_str();
    while let Some(at) = rest.find("https://") {
        let url = url_word(&rest[at..]);
        let host = host_of(url).to_ascii_lowercase();
        if let Some(name) = host.strip_suffix(".trycloudflare.com") {
            let valid = !name.is_empty()
                && name != "api"
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
            if valid {
                return Some(format!("https://{host}"));
            }
        }
        rest = &rest[at + "https://".len()..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    // ---- URL parsing from what the providers print ----

    #[test]
    fn serveo_url_from_its_banner() {
        // stderr and stdout of `ssh -R 80:localhost:8001 serveo.net`, colours included
        let output = [
            "Warning: Permanently added 'serveo.net,138.68.79.95' (RSA) to the list of known hosts.",
            "\u{1b}[32mForwarding HTTP traffic from https://4f1e2c0b9d7a3e5f.serveo.net\u{1b}[0m",
            "Press g to start a GUI session and ctrl-c to quit.",
        ];
        let found: Vec<String> = output.iter().filter_map(|l| serveo_url(l)).collect();
        assert_eq!(found, ["https://4f1e2c0b9d7a3e5f.serveo.net"]);
        assert_eq!(
            serveo_url("Forwarding HTTP traffic from https://myname.serveousercontent.com\r"),
            Some("https://myname.serveousercontent.com".into())
        );
        assert_eq!(
            serveo_url("Forwarding HTTP traffic from http://127.0.0.1:8001"),
            Some("http://127.0.0.1:8001".into())
        );
        assert_eq!(
            serveo_url("Forwarding TCP connections from serveo.net:41234"),
            None
        );
        assert_eq!(serveo_url("Forwarding HTTP traffic from"), None);
        assert_eq!(
            serveo_url("ssh: Could not resolve hostname serveo.net: Name or service not known"),
            None
        );
    }

    #[test]
    fn cloudflared_url_from_its_log_box_on_stderr() {
        let log = "\
2024-05-02T10:15:03Z INF Thank you for trying Cloudflare Tunnel. Doing so, without a Cloudflare account, is a quick way to experiment and try it out. However, be aware that these account-less Tunnels have no uptime guarantee. If you intend to use Tunnels in production you should use a pre-created named tunnel by following: https://developers.cloudflare.com/cloudflare-one/connections/connect-apps
2024-05-02T10:15:03Z INF Requesting new quick Tunnel on trycloudflare.com...
2024-05-02T10:15:04Z INF +--------------------------------------------------------------------------------------------+
2024-05-02T10:15:04Z INF |  Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):  |
2024-05-02T10:15:04Z INF |  https://seasonal-deck-organisms-sf.trycloudflare.com                                      |
2024-05-02T10:15:04Z INF +--------------------------------------------------------------------------------------------+
2024-05-02T10:15:04Z INF Cannot determine default configuration path. No file [config.yml config.yaml] in [~/.cloudflared ~/.cloudflare-warp ~/cloudflare-warp /etc/cloudflared /usr/local/etc/cloudflared]
2024-05-02T10:15:04Z INF Version 2024.4.1
2024-05-02T10:15:05Z INF Registered tunnel connection connIndex=0 connection=6f8a1b2c event=0 ip=198.41.200.13 location=ams01 protocol=quic";
        let found: Vec<String> = log.lines().filter_map(cloudflared_url).collect();
        assert_eq!(
            found,
            ["https://seasonal-deck-organisms-sf.trycloudflare.com"]
        );
    }

    #[test]
    fn cloudflared_errors_naming_its_api_host_are_not_the_url() {
        let line = "2024-05-02T10:15:13Z ERR Error unmarshaling QuickTunnel response: failed to request quick Tunnel: Post \"https://api.trycloudflare.com/tunnel\": dial tcp: lookup api.trycloudflare.com: no such host";
        assert_eq!(cloudflared_url(line), None);
        assert_eq!(cloudflared_url("see https://example.com/docs"), None);
        assert_eq!(
            cloudflared_url("|  https://Bright-Owl.trycloudflare.com/  |"),
            Some("https://bright-owl.trycloudflare.com".into())
        );
    }

    #[test]
    fn command_url_is_the_first_match_of_its_regex() {
        let re = regex::Regex::new(r"https://[a-z0-9-]+\.loca\.lt").unwrap();
        let output = [
            "npx: installed 22 in 1.9s",
            "your url is: https://brave-lions-sing.loca.lt",
            "your url is: https://second.loca.lt",
        ];
        let found: Vec<&str> = output
            .iter()
            .filter_map(|l| re.find(l))
            .map(|m| m.as_str())
            .collect();
        assert_eq!(found[0], "https://brave-lions-sing.loca.lt");
        let finder = Finder::Regex(regex::Regex::new(r"tcp://\S+:\d{2,5}").unwrap());
        assert_eq!(
            finder.find("t=2024 lvl=info msg=started url=tcp://0.tcp.eu.ngrok.io:17342 ok"),
            Some("tcp://0.tcp.eu.ngrok.io:17342".into())
        );
    }

    #[test]
    fn ansi_sequences_are_removed() {
        assert_eq!(strip_ansi("\u{1b}[1;32mok\u{1b}[0m done"), "ok done");
        assert_eq!(strip_ansi("\u{1b}]0;title\u{7}text"), "text");
        assert_eq!(strip_ansi("plain"), "plain");
    }
}
