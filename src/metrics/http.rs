//! A minimal HTTP/1.1 endpoint for the metrics: `GET /metrics` (and `/`),
//! one request per connection, on one thread, every read and write with a
//! deadline — a scraper that stalls costs at most a few seconds, and a
//! request is capped in size before it is read.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Metrics;
use crate::config::Family;
use crate::error::{Code, Error};

/// Longest request head read.
const MAX_REQUEST: usize = 8 * 1024;
/// Time a client has to send its request, and to take the answer.
const IO_DEADLINE: Duration = Duration::from_secs(2);

/// A bound metrics listener, not yet serving (a server that daemonizes
/// binds first, to report a busy address, and serves after the fork).
pub struct Endpoint {
    listener: TcpListener,
    addr: String,
}

/// The serving thread; stops when dropped.
pub struct Serving {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Splits `ADDR:PORT`, `[V6]:PORT`, `:PORT` or `PORT` into host and port.
pub fn split_address(spec: &str) -> Option<(Option<String>, u16)> {
    let (host, port) = match spec.rsplit_once(':') {
        Some((h, p)) => (h, p),
        None => ("", spec),
    };
    let port: u16 = port.parse().ok().filter(|p| *p > 0)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.contains(':') && !spec.contains('[') {
        // "::1:9100" is ambiguous; IPv6 needs brackets.
        return None;
    }
    Some(((!host.is_empty()).then(|| host.to_string()), port))
}

fn bind_error(spec: &str, e: &Error) -> Error {
    let why = match e.errno {
        Some(n) => crate::error::strerror(n),
        None => e.text(),
    };
    Error::msg(
        Code::LISTEN,
        format!("unable to start the metrics endpoint on {spec}: {why}"),
    )
}

impl Endpoint {
    /// Binds `spec` (`ADDR:PORT`; `:PORT` for every address).
    pub fn bind(spec: &str) -> Result<Endpoint, Error> {
        let (host, port) = split_address(spec).ok_or_else(|| {
            Error::param_msg(
                Code::NONE,
                format!("--metrics wants ADDR:PORT (or :PORT, or [IPv6]:PORT), not '{spec}'"),
            )
        })?;
        let listener =
            crate::net::listen_tcp(host.as_deref(), port, Family::Any, false, 64).map_err(|e| bind_error(spec, &e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| bind_error(spec, &Error::io(Code::LISTEN, &e)))?;
        Ok(Endpoint {
            listener,
            addr: spec.to_string(),
        })
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    /// The address as given.
    pub fn address(&self) -> &str {
        &self.addr
    }

    /// Serves `metrics` on a thread until the returned handle is dropped.
    pub fn serve(self, metrics: Arc<Metrics>) -> Result<Serving, Error> {
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("ws-metrics".into())
            .spawn(move || {
                while !stop2.load(Relaxed) {
                    match self.listener.accept() {
                        Ok((s, _)) => answer(s, &metrics),
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        // EMFILE and friends: back off, keep serving.
                        Err(_) => std::thread::sleep(Duration::from_millis(200)),
                    }
                }
            })
            .map_err(|e| Error::io(Code::PTHREADCREATE, &e))?;
        Ok(Serving {
            stop,
            thread: Some(thread),
        })
    }
}

/// Reads the request head, up to [`MAX_REQUEST`] bytes and [`IO_DEADLINE`].
fn read_head(s: &mut TcpStream) -> Option<String> {
    let deadline = Instant::now() + IO_DEADLINE;
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && !buf.windows(2).any(|w| w == b"\n\n") {
        let left = deadline.checked_duration_since(Instant::now())?;
        s.set_read_timeout(Some(left.max(Duration::from_millis(1)))).ok()?;
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
        if buf.len() > MAX_REQUEST {
            return None;
        }
    }
    String::from_utf8(buf).ok()
}

/// What to answer a request line with: (status, content type, body, head only).
pub fn route(request_line: &str, metrics: &Metrics) -> (&'static str, &'static str, String, bool) {
    let mut parts = request_line.split_whitespace();
    let (method, target, version) = (parts.next(), parts.next(), parts.next());
    let (Some(method), Some(target), Some(version)) = (method, target, version) else {
        return (
            "400 Bad Request",
            "text/plain; charset=utf-8",
            "bad request\n".into(),
            false,
        );
    };
    if !version.starts_with("HTTP/1.") {
        return (
            "505 HTTP Version Not Supported",
            "text/plain; charset=utf-8",
            "HTTP/1.x only\n".into(),
            false,
        );
    }
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "GET or HEAD only\n".into(),
            false,
        );
    }
    let path = target.split('?').next().unwrap_or("");
    match path {
        "/metrics" => (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            metrics.render(),
            head_only,
        ),
        "/" => (
            "200 OK",
            "text/html; charset=utf-8",
            format!(
                "<!DOCTYPE html><html><head><title>wirespeed</title></head><body><h1>{}</h1><p><a href=\"/metrics\">/metrics</a></p></body></html>\n",
                crate::report::html::escape(&crate::version_string())
            ),
            head_only,
        ),
        _ => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "not found: try /metrics\n".into(),
            head_only,
        ),
    }
}

fn answer(mut s: TcpStream, metrics: &Metrics) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_write_timeout(Some(IO_DEADLINE));
    let (status, ctype, body, head_only) = match read_head(&mut s) {
        Some(head) => route(head.lines().next().unwrap_or(""), metrics),
        None => (
            "400 Bad Request",
            "text/plain; charset=utf-8",
            "bad request\n".to_string(),
            false,
        ),
    };
    let mut reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if status.starts_with("405") {
        reply.push_str("Allow: GET, HEAD\r\n");
    }
    reply.push_str("\r\n");
    if !head_only {
        reply.push_str(&body);
    }
    let _ = s.write_all(reply.as_bytes());
    let _ = s.shutdown(std::net::Shutdown::Write);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_take_iperf_like_forms() {
        assert_eq!(split_address("127.0.0.1:9100"), Some((Some("127.0.0.1".into()), 9100)));
        assert_eq!(split_address(":9100"), Some((None, 9100)));
        assert_eq!(split_address("9100"), Some((None, 9100)));
        assert_eq!(split_address("[::1]:9100"), Some((Some("::1".into()), 9100)));
        assert_eq!(split_address("::1:9100"), None);
        assert_eq!(split_address("host:0"), None);
        assert_eq!(split_address("host:http"), None);
    }

    #[test]
    fn routes_answer_like_a_small_http_server() {
        let m = Metrics::new();
        assert!(route("GET /metrics HTTP/1.1", &m).2.contains("wirespeed_up 1"));
        assert!(route("HEAD /metrics HTTP/1.0", &m).3);
        assert_eq!(route("POST /metrics HTTP/1.1", &m).0, "405 Method Not Allowed");
        assert_eq!(route("GET /nope HTTP/1.1", &m).0, "404 Not Found");
        assert_eq!(route("GET /metrics", &m).0, "400 Bad Request");
        assert_eq!(route("GET /metrics?x=1 HTTP/1.1", &m).0, "200 OK");
    }
}
