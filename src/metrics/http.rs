//! The metrics endpoint: `GET /metrics` (and `/`) over [`crate::http`], one
//! request per connection, on one thread — a scraper that stalls costs at
//! most a few seconds.

use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::Duration;

use super::Metrics;
use crate::config::Family;
use crate::error::{Code, Error};
use crate::http::{self, Reject, Request, Response};

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

/// What to answer a request with (`HEAD` gets the head only).
pub fn route(req: &Request, metrics: &Metrics) -> Response {
    if req.method != "GET" && req.method != "HEAD" {
        return Response::text("405 Method Not Allowed", "GET or HEAD only\n").with_header("Allow: GET, HEAD");
    }
    match req.path.as_str() {
        "/metrics" => Response::new("200 OK", "text/plain; version=0.0.4; charset=utf-8", metrics.render()),
        "/" => Response::new(
            "200 OK",
            "text/html; charset=utf-8",
            format!(
                "<!DOCTYPE html><html><head><title>wirespeed</title></head><body><h1>{}</h1><p><a href=\"/metrics\">/metrics</a></p></body></html>\n",
                crate::report::html::escape(&crate::version_string())
            ),
        ),
        _ => Response::text("404 Not Found", "not found: try /metrics\n"),
    }
}

fn answer(mut s: TcpStream, metrics: &Metrics) {
    let _ = s.set_nonblocking(false);
    let _ = s.set_write_timeout(Some(IO_DEADLINE));
    match http::read_request(&mut s, 0, IO_DEADLINE) {
        Ok(req) => route(&req, metrics).send(&mut s, req.method == "HEAD"),
        Err(Reject::Timeout) => {}
        Err(r) => Response::text(r.status(), "bad request\n").send(&mut s, false),
    }
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
        let get = |line: &str| route(&http::parse_head(line.as_bytes()).unwrap(), &m);
        assert!(
            String::from_utf8(get("GET /metrics HTTP/1.1").body)
                .unwrap()
                .contains("wirespeed_up 1")
        );
        assert_eq!(get("HEAD /metrics HTTP/1.0").status, "200 OK");
        assert_eq!(get("POST /metrics HTTP/1.1").status, "405 Method Not Allowed");
        assert_eq!(get("GET /nope HTTP/1.1").status, "404 Not Found");
        assert_eq!(get("GET /metrics?x=1 HTTP/1.1").status, "200 OK");
    }
}
