//! A stand-in endpoint on 127.0.0.1 that resets its first connection (accepts it and
//! closes it at once with SO_LINGER 0: the client reads ECONNRESET), then answers
//! every request on the next ones with what `answer` makes of its path and body.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

type Answer = dyn Fn(&str, &Value) -> Value + Send + Sync;

#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    resets: AtomicUsize,
    /// (path, body) of every request answered.
    requests: Mutex<Vec<(String, Value)>>,
}

pub struct Resetting {
    pub addr: SocketAddr,
    seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
}

impl Resetting {
    /// Resets the first `resets` connections, answers on every later one.
    pub fn start(
        resets: usize,
        answer: impl Fn(&str, &Value) -> Value + Send + Sync + 'static,
    ) -> Resetting {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Seen::default());
        let stop = Arc::new(AtomicBool::new(false));
        let answer: Arc<Answer> = Arc::new(answer);
        let (s, halt) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if halt.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let n = s.connections.fetch_add(1, Ordering::SeqCst);
                if n < resets {
                    s.resets.fetch_add(1, Ordering::SeqCst);
                    reset(stream);
                    continue;
                }
                let (s, answer) = (s.clone(), answer.clone());
                std::thread::spawn(move || {
                    let _ = reply(stream, &s, &*answer);
                });
            }
        });
        Resetting { addr, seen, stop }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn connections(&self) -> usize {
        self.seen.connections.load(Ordering::SeqCst)
    }

    pub fn resets(&self) -> usize {
        self.seen.resets.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> Vec<(String, Value)> {
        self.seen.requests.lock().unwrap().clone()
    }
}

impl Drop for Resetting {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // wakes the accept loop to see it
        let _ = TcpStream::connect(self.addr);
    }
}

/// Closes the connection with a reset: SO_LINGER on with a zero timeout.
fn reset(stream: TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid descriptor, a linger struct of the size given
    let done = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(done, 0, "SO_LINGER: {}", std::io::Error::last_os_error());
    drop(stream);
}

/// Reads one request (headers, then `Content-Length` bytes of body) and answers it as
/// JSON, closing the connection after.
fn reply(stream: TcpStream, seen: &Seen, answer: &Answer) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut first = String::new();
    reader.read_line(&mut first)?;
    let path = first.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let text = answer(&path, &body).to_string();
    seen.requests.lock().unwrap().push((path, body));
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    )?;
    stream.flush()
}
