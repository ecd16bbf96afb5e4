//! Why a tunnel did not open, as one line with the provider's last words.

use super::PROVIDERS;
use std::fmt;

/// Why a tunnel did not open.
#[derive(Clone, Debug, PartialEq)]
pub enum TunnelError {
    /// The provider's program is not on PATH.
    NotInstalled { provider: String, program: String },
    /// The program exists but could not be started.
    Spawn { program: String, error: String },
    /// The provider's process ended before it gave a URL.
    Exited {
        provider: String,
        status: String,
        last_lines: Vec<String>,
    },
    /// No URL within the time limit; the process was stopped.
    NoUrl {
        provider: String,
        seconds: f64,
        /// What else was learned (ngrok's API answer), if anything.
        detail: Option<String>,
        last_lines: Vec<String>,
    },
    /// `[tunnel] url_regex` does not compile.
    BadRegex(String),
}

/// The last few output lines, on one line.
pub(super) fn said(last_lines: &[String]) -> String {
    if last_lines.is_empty() {
        return "it printed nothing".into();
    }
    let start = last_lines.len().saturating_sub(3);
    let shown: Vec<String> = last_lines[start..]
        .iter()
        .map(|l| clip(l.trim(), 200))
        .collect();
    format!("its last lines: {}", shown.join(" | "))
}

pub(super) fn clip(s: &str, chars: usize) -> String {
    match s.char_indices().nth(chars) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

impl fmt::Display for TunnelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TunnelError::NotInstalled { provider, program } => {
                let others: Vec<&str> = PROVIDERS
                    .iter()
                    .copied()
                    .filter(|p| p != provider)
                    .collect();
                write!(
                    f,
                    "{program} is not installed (not on PATH): install it, or use --provider {}",
                    others.join("|")
                )
            }
            TunnelError::Spawn { program, error } => write!(f, "cannot start {program}: {error}"),
            TunnelError::Exited {
                provider,
                status,
                last_lines,
            } => write!(
                f,
                "the {provider} tunnel exited before giving a URL ({status}); {}",
                said(last_lines)
            ),
            TunnelError::NoUrl {
                provider,
                seconds,
                detail,
                last_lines,
            } => {
                write!(
                    f,
                    "no public URL from {provider} within {seconds} s (stopped it"
                )?;
                if let Some(detail) = detail {
                    write!(f, "; {detail}")?;
                }
                write!(f, "); {}", said(last_lines))
            }
            TunnelError::BadRegex(e) => write!(f, "rwb.toml [tunnel] url_regex: {e}"),
        }
    }
}

impl std::error::Error for TunnelError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_installed_names_the_program_and_the_other_providers() {
        let e = TunnelError::NotInstalled {
            provider: "ngrok".into(),
            program: "ngrok".into(),
        };
        assert_eq!(
            e.to_string(),
            "ngrok is not installed (not on PATH): install it, or use --provider serveo|cloudflared|command"
        );
        let e = TunnelError::NotInstalled {
            provider: "serveo".into(),
            program: "ssh".into(),
        };
        assert!(e
            .to_string()
            .starts_with("ssh is not installed (not on PATH)"));
    }
}
