//! The tunnel providers and the command line that opens each.

/// A tunnel provider, as SPEC §6 runs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Provider {
    /// `ssh -R 80:localhost:PORT serveo.net`; the URL is in its stdout.
    Serveo,
    /// `ngrok http PORT`; the URL comes from its local agent API at `api`.
    Ngrok { api: String },
    /// `cloudflared tunnel --url http://localhost:PORT`; the URL is in its log (stderr).
    Cloudflared,
    /// `sh -c COMMAND` with `{port}` replaced; the URL is the first match of `url_regex`
    /// in its output.
    Command { command: String, url_regex: String },
}

impl Provider {
    /// `serveo`, `ngrok`, `cloudflared` or `command`.
    pub fn name(&self) -> &'static str {
        match self {
            Provider::Serveo => "serveo",
            Provider::Ngrok { .. } => "ngrok",
            Provider::Cloudflared => "cloudflared",
            Provider::Command { .. } => "command",
        }
    }

    /// The program and its arguments that open this tunnel to local `port`.
    pub fn command_line(&self, port: u16) -> (String, Vec<String>) {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match self {
            Provider::Serveo => (
                "ssh".into(),
                strings(&[
                    "-o",
                    "StrictHostKeyChecking=no",
                    "-o",
                    "UserKnownHostsFile=/dev/null",
                    "-R",
                    &format!("80:localhost:{port}"),
                    "serveo.net",
                ]),
            ),
            Provider::Ngrok { .. } => (
                "ngrok".into(),
                strings(&["http", &port.to_string(), "--log=stdout"]),
            ),
            Provider::Cloudflared => (
                "cloudflared".into(),
                strings(&["tunnel", "--url", &format!("http://localhost:{port}")]),
            ),
            Provider::Command { command, .. } => (
                "sh".into(),
                vec!["-c".into(), command.replace("{port}", &port.to_string())],
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ship::tunnel::process::shown_command;
    use crate::ship::tunnel::DEFAULT_NGROK_API;

    #[test]
    fn command_lines_are_the_specs() {
        let line = |p: &Provider| {
            let (program, args) = p.command_line(8001);
            shown_command(&program, &args)
        };
        assert_eq!(
            line(&Provider::Serveo),
            "ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -R 80:localhost:8001 serveo.net"
        );
        assert_eq!(
            line(&Provider::Ngrok {
                api: DEFAULT_NGROK_API.into()
            }),
            "ngrok http 8001 --log=stdout"
        );
        assert_eq!(
            line(&Provider::Cloudflared),
            "cloudflared tunnel --url http://localhost:8001"
        );
        let command = Provider::Command {
            command: "bore local {port} --to bore.pub".into(),
            url_regex: "x".into(),
        };
        assert_eq!(
            command.command_line(8001),
            (
                "sh".into(),
                vec!["-c".into(), "bore local 8001 --to bore.pub".into()]
            )
        );
    }
}
