//! The stand-in OpenAI-compatible server (`tests/standins/openai_server.py`, which
//! answers as vLLM's does) started for one test, and what it saw.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub const MODEL: &str = "policy";

/// The stand-in, listening on 127.0.0.1 until dropped (then killed and waited for).
pub struct Server {
    child: Child,
    pub port: u16,
}

impl Server {
    pub fn start() -> Server {
        Server::with(&[])
    }

    /// With extra arguments (`--key K`, `--latency-ms MS`, `--model NAME`).
    pub fn with(args: &[&str]) -> Server {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/standins/openai_server.py");
        let mut child = Command::new("python3")
            .arg(script)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the stand-in");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the stand-in said {line:?}"));
        Server { child, port }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request it got: `path`, `body`, `authorization`, `at`.
    pub fn requests(&self) -> Vec<Value> {
        let (status, body) = super::common::exchange(
            &self.url(),
            &format!(
                "GET /stats HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
                self.port
            ),
        );
        assert_eq!(status, 200, "{body}");
        let stats: Value = serde_json::from_str(&body).unwrap();
        stats["requests"].as_array().unwrap().clone()
    }

    /// The requests for chat or text completions (what a generation asked).
    pub fn asked(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["path"].as_str().unwrap_or("").ends_with("completions"))
            .collect()
    }

    pub fn reset(&self) {
        let (status, _) = super::common::exchange(
            &self.url(),
            &format!(
                "POST /stats/reset HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                self.port
            ),
        );
        assert_eq!(status, 200);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text the stand-in gives `prompt` (its last user turn or its text) for `seed`.
pub fn text_for(prompt: &str, seed: i64) -> String {
    let digest = Command::new("python3")
        .args([
            "-c",
            "import hashlib, sys; print(hashlib.sha256(sys.argv[1].encode()).hexdigest()[:8])",
            &format!("{prompt}|{seed}"),
        ])
        .output()
        .unwrap();
    let digest = String::from_utf8(digest.stdout).unwrap();
    let head: String = prompt.chars().take(20).collect();
    format!("The answer is {} ({head})", digest.trim())
}
