//! The little HTTP/1.1 the metrics endpoint and the web UI speak: one
//! request per connection, its head and body capped in size before they
//! are read, every read and write under a deadline. The parser is a pure
//! function of the bytes, so it is tested (and fuzzed) without sockets.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use wirespeed_core::config::Family;
use wirespeed_core::error::{Code, Error};

/// Longest request head read.
pub(crate) const MAX_HEAD: usize = 8 * 1024;
/// Most headers a request may carry.
const MAX_HEADERS: usize = 64;

/// Splits `ADDR:PORT`, `[V6]:PORT`, `:PORT` or `PORT` into host and port.
pub(crate) fn split_address(spec: &str) -> Option<(Option<String>, u16)> {
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

/// A non-blocking listener on `spec` (`ADDR:PORT`; `:PORT` for every
/// address) for `option` (named in the refusal of a bad address); `what`
/// names the service in the error when it cannot listen.
pub fn listen(spec: &str, option: &str, what: &str) -> Result<TcpListener, Error> {
    let (host, port) = split_address(spec).ok_or_else(|| {
        Error::param_msg(
            Code::NONE,
            format!("{option} wants ADDR:PORT (or :PORT, or [IPv6]:PORT), not '{spec}'"),
        )
    })?;
    let failed = |e: &Error| {
        let why = e.errno.map(wirespeed_core::error::strerror).unwrap_or_else(|| e.text());
        Error::msg(Code::LISTEN, format!("unable to start {what} on {spec}: {why}"))
    };
    let listener =
        wirespeed_core::net::listen_tcp(host.as_deref(), port, Family::Any, false, 64).map_err(|e| failed(&e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| failed(&Error::io(Code::LISTEN, &e)))?;
    Ok(listener)
}

/// Where `listener` can be reached: its own address; or, for one on every
/// address (`0.0.0.0`, `[::]`, `:PORT`), the addresses of this host that
/// it answers on, those another machine could use first and loopback
/// last (IPv6 link-local ones are left out: they need a zone). Empty when
/// it is on every address and the host's addresses cannot be listed.
pub fn reachable(listener: &TcpListener) -> Vec<SocketAddr> {
    let Ok(addr) = listener.local_addr() else {
        return Vec::new();
    };
    let v6only = socket2::SockRef::from(listener).only_v6().unwrap_or(true);
    reachable_at(addr, v6only, &wirespeed_sys::netif::addresses())
}

fn reachable_at(addr: SocketAddr, v6only: bool, host: &[IpAddr]) -> Vec<SocketAddr> {
    if !addr.ip().is_unspecified() {
        return vec![addr];
    }
    let answers = |ip: &IpAddr| match ip {
        IpAddr::V4(_) => addr.is_ipv4() || !v6only,
        IpAddr::V6(v6) => addr.is_ipv6() && (v6.segments()[0] & 0xffc0) != 0xfe80,
    };
    let mut out: Vec<SocketAddr> = host
        .iter()
        .filter(|ip| answers(ip) && !ip.is_unspecified())
        .map(|ip| SocketAddr::new(*ip, addr.port()))
        .collect();
    out.sort_by_key(|a| (a.ip().is_loopback(), a.is_ipv6()));
    out.dedup();
    out
}

/// A thread accepting connections; stops when dropped.
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

/// How often the accepting thread looks whether it should stop.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// Accepts on `listener` (non-blocking) on a thread named `name`, handing
/// each connection to `answer`, until the returned handle is dropped. The
/// thread waits in poll(2) for a connection, so one is taken as it comes
/// (a sleep between tries cost each request up to the sleep: a probe's
/// answer came 12 ms later on average with 25 ms sleeps).
pub fn serve(
    listener: TcpListener,
    name: &str,
    mut answer: impl FnMut(TcpStream) + Send + 'static,
) -> Result<Serving, Error> {
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let io = |e: std::io::Error| Error::io(Code::LISTEN, &e);
    listener.set_nonblocking(true).map_err(io)?;
    let mut listener = mio::net::TcpListener::from_std(listener);
    let mut poll = mio::Poll::new().map_err(io)?;
    poll.registry()
        .register(&mut listener, mio::Token(0), mio::Interest::READABLE)
        .map_err(io)?;
    let thread = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let mut events = mio::Events::with_capacity(4);
            while !stop2.load(Relaxed) {
                match listener.accept() {
                    // Connections are answered blocking, under deadlines.
                    Ok((s, _)) => {
                        let s = TcpStream::from(s);
                        if s.set_nonblocking(false).is_ok() {
                            answer(s);
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        // Edge-triggered: polled only once accept has
                        // emptied the queue.
                        if poll.poll(&mut events, Some(STOP_CHECK)).is_err() {
                            std::thread::sleep(STOP_CHECK);
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
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

/// A parsed request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Request {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path, percent-decoded, without the query.
    pub path: String,
    /// The query's `key=value` pairs, decoded.
    pub query: Vec<(String, String)>,
    /// Headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body (`Content-Length` bytes).
    pub body: Vec<u8>,
}

impl Request {
    /// A header's value (`name` in lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// A query parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Why a request is refused before any route sees it: the status line to
/// answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reject {
    /// Malformed.
    BadRequest,
    /// The head is longer than [`MAX_HEAD`].
    HeadTooLarge,
    /// The body is longer than the route allows.
    BodyTooLarge,
    /// Not HTTP/1.x.
    Version,
    /// The client sent nothing whole in time (no answer is owed).
    Timeout,
}

impl Reject {
    /// The status line's code and reason.
    pub fn status(self) -> &'static str {
        match self {
            Reject::BadRequest | Reject::Timeout => "400 Bad Request",
            Reject::HeadTooLarge => "431 Request Header Fields Too Large",
            Reject::BodyTooLarge => "413 Content Too Large",
            Reject::Version => "505 HTTP Version Not Supported",
        }
    }
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Decodes `%XX` escapes (and `+` as a space when `plus` is set); `None`
/// for a broken escape or bytes that are not UTF-8.
pub(crate) fn percent_decode(s: &str, plus: bool) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hi = hex(*b.get(i + 1)?)?;
                let lo = hex(*b.get(i + 2)?)?;
                out.push(hi << 4 | lo);
                i += 3;
            }
            b'+' if plus => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Splits `a=1&b=2` (a query, or a form body) into decoded pairs.
pub(crate) fn parse_pairs(s: &str) -> Option<Vec<(String, String)>> {
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            Some((percent_decode(k, true)?, percent_decode(v, true)?))
        })
        .collect()
}

/// Parses a request head (the bytes before the blank line). The body is
/// left empty; its length is [`content_length`].
pub(crate) fn parse_head(head: &[u8]) -> Result<Request, Reject> {
    if head.len() > MAX_HEAD {
        return Err(Reject::HeadTooLarge);
    }
    let text = std::str::from_utf8(head).map_err(|_| Reject::BadRequest)?;
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let first = lines.next().ok_or(Reject::BadRequest)?;
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Reject::BadRequest);
    };
    if !version.starts_with("HTTP/1.") {
        return Err(if version.starts_with("HTTP/") {
            Reject::Version
        } else {
            Reject::BadRequest
        });
    }
    if method.is_empty() || !method.bytes().all(|c| c.is_ascii_uppercase()) || !target.starts_with('/') {
        return Err(Reject::BadRequest);
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let path = percent_decode(path, false).ok_or(Reject::BadRequest)?;
    let query = parse_pairs(query).ok_or(Reject::BadRequest)?;
    let mut headers = Vec::new();
    for line in lines.take_while(|l| !l.is_empty()) {
        let (k, v) = line.split_once(':').ok_or(Reject::BadRequest)?;
        if k.is_empty() || k.bytes().any(|c| c.is_ascii_whitespace() || c.is_ascii_control()) {
            return Err(Reject::BadRequest);
        }
        if headers.len() == MAX_HEADERS {
            return Err(Reject::HeadTooLarge);
        }
        let k = k.to_ascii_lowercase();
        // Two Hosts would let a check read one and a proxy the other.
        if k == "host" && headers.iter().any(|(h, _)| h == "host") {
            return Err(Reject::BadRequest);
        }
        headers.push((k, v.trim().to_string()));
    }
    Ok(Request {
        method: method.to_string(),
        path,
        query,
        headers,
        body: Vec::new(),
    })
}

/// The body length a parsed head announces: 0 without `Content-Length`;
/// chunked bodies are refused (no client of ours sends them).
pub(crate) fn content_length(req: &Request) -> Result<usize, Reject> {
    if req.header("transfer-encoding").is_some() {
        return Err(Reject::BadRequest);
    }
    let mut lens = req.headers.iter().filter(|(k, _)| k == "content-length");
    match (lens.next(), lens.next()) {
        (None, _) => Ok(0),
        (Some((_, v)), None) if !v.is_empty() && v.bytes().all(|c| c.is_ascii_digit()) => {
            v.parse().map_err(|_| Reject::BodyTooLarge)
        }
        _ => Err(Reject::BadRequest),
    }
}

fn head_end(buf: &[u8]) -> Option<(usize, usize)> {
    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
        return Some((i, i + 4));
    }
    buf.windows(2).position(|w| w == b"\n\n").map(|i| (i, i + 2))
}

/// Reads one request from `s`: its head, then at most `max_body` bytes of
/// body, all within `deadline`.
pub(crate) fn read_request(s: &mut TcpStream, max_body: usize, deadline: Duration) -> Result<Request, Reject> {
    let until = Instant::now() + deadline;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let read = |s: &mut TcpStream, chunk: &mut [u8]| -> Result<usize, Reject> {
        loop {
            let left = until.checked_duration_since(Instant::now()).ok_or(Reject::Timeout)?;
            s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .map_err(|_| Reject::Timeout)?;
            match s.read(chunk) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return Err(Reject::Timeout),
            }
        }
    };
    let (head_len, body_at) = loop {
        if let Some(end) = head_end(&buf) {
            break end;
        }
        if buf.len() > MAX_HEAD {
            return Err(Reject::HeadTooLarge);
        }
        match read(s, &mut chunk)? {
            0 => return Err(Reject::Timeout),
            n => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let mut req = parse_head(&buf[..head_len])?;
    let len = content_length(&req)?;
    if len > max_body {
        return Err(Reject::BodyTooLarge);
    }
    let mut body = buf.split_off(body_at);
    while body.len() < len {
        match read(s, &mut chunk)? {
            0 => return Err(Reject::Timeout),
            n => body.extend_from_slice(&chunk[..n]),
        }
    }
    body.truncate(len);
    req.body = body;
    Ok(req)
}

/// An answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// `200 OK`, ...
    pub status: &'static str,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Further header lines (`Name: value`).
    pub headers: Vec<String>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// A response with `body`.
    pub fn new(status: &'static str, content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// A plain-text response.
    pub fn text(status: &'static str, body: impl Into<String>) -> Response {
        Response::new(status, "text/plain; charset=utf-8", body.into().into_bytes())
    }

    /// Adds a header line.
    pub(crate) fn with_header(mut self, line: impl Into<String>) -> Response {
        self.headers.push(line.into());
        self
    }

    /// Writes the response (`head_only` for `HEAD`) and closes the
    /// sending side.
    pub fn send(&self, s: &mut TcpStream, head_only: bool) {
        let mut head = format!(
            "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n",
            self.status,
            self.content_type,
            self.body.len()
        );
        for h in &self.headers {
            head.push_str(h);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        let _ = s.write_all(head.as_bytes());
        if !head_only {
            let _ = s.write_all(&self.body);
        }
        let _ = s.flush();
        let _ = s.shutdown(std::net::Shutdown::Write);
    }
}

/// Starts a server-sent-events answer; each [`sse_event`] follows.
pub(crate) fn sse_start(s: &mut TcpStream) -> std::io::Result<()> {
    s.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-store\r\nConnection: close\r\nX-Content-Type-Options: nosniff\r\n\r\n",
    )
}

/// Writes one server-sent event (`data` may hold newlines).
pub(crate) fn sse_event(s: &mut TcpStream, name: &str, data: &str) -> std::io::Result<()> {
    let mut msg = String::with_capacity(data.len() + 32);
    msg.push_str("event: ");
    msg.push_str(name);
    msg.push('\n');
    for line in data.split('\n') {
        msg.push_str("data: ");
        msg.push_str(line.strip_suffix('\r').unwrap_or(line));
        msg.push('\n');
    }
    msg.push('\n');
    s.write_all(msg.as_bytes())?;
    s.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_on_every_address_is_reached_at_the_hosts_addresses() {
        let host: Vec<IpAddr> = ["127.0.0.1", "::1", "192.0.2.2", "fd00::2", "fe80::1", "10.1.1.1"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
        let at = |addr: &str, v6only: bool| -> Vec<String> {
            reachable_at(addr.parse().unwrap(), v6only, &host)
                .iter()
                .map(|a| a.to_string())
                .collect()
        };
        // Loopback last, link-local left out, the kernel's order kept.
        assert_eq!(
            at("0.0.0.0:5280", false),
            ["192.0.2.2:5280", "10.1.1.1:5280", "127.0.0.1:5280"]
        );
        assert_eq!(at("[::]:5280", true), ["[fd00::2]:5280", "[::1]:5280"]);
        assert_eq!(
            at("[::]:5280", false),
            [
                "192.0.2.2:5280",
                "10.1.1.1:5280",
                "[fd00::2]:5280",
                "127.0.0.1:5280",
                "[::1]:5280"
            ]
        );
        // One address: that one.
        assert_eq!(at("192.0.2.2:9201", false), ["192.0.2.2:9201"]);
        // Addresses unknown: none to offer.
        assert!(reachable_at("0.0.0.0:1".parse().unwrap(), false, &[]).is_empty());
    }

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
    fn heads_parse_into_method_path_query_and_headers() {
        let r = parse_head(
            b"GET /api/runs/3/events?token=a%20b&x=1+2 HTTP/1.1\r\nHost: 127.0.0.1:5280\r\nX-Token:  t \r\n",
        )
        .unwrap();
        assert_eq!(r.method, "GET");
        assert_eq!(r.path, "/api/runs/3/events");
        assert_eq!(r.param("token"), Some("a b"));
        assert_eq!(r.param("x"), Some("1 2"));
        assert_eq!(r.header("host"), Some("127.0.0.1:5280"));
        assert_eq!(r.header("x-token"), Some("t"));
        assert_eq!(content_length(&r), Ok(0));
    }

    #[test]
    fn broken_heads_are_refused_with_a_status() {
        assert_eq!(parse_head(b"GET /metrics"), Err(Reject::BadRequest));
        assert_eq!(parse_head(b"GET /metrics HTTP/2"), Err(Reject::Version));
        assert_eq!(parse_head(b"get / HTTP/1.1"), Err(Reject::BadRequest));
        assert_eq!(parse_head(b"GET x HTTP/1.1"), Err(Reject::BadRequest));
        assert_eq!(parse_head(b"GET /%zz HTTP/1.1"), Err(Reject::BadRequest));
        assert_eq!(parse_head(b"GET / HTTP/1.1\r\nno colon"), Err(Reject::BadRequest));
        assert_eq!(parse_head(b"GET / HTTP/1.1\r\nBad Name: 1"), Err(Reject::BadRequest));
        assert_eq!(
            parse_head(b"GET / HTTP/1.1\r\nHost: a\r\nHost: b"),
            Err(Reject::BadRequest)
        );
        let many = format!("GET / HTTP/1.1\r\n{}", "a: b\r\n".repeat(65));
        assert_eq!(parse_head(many.as_bytes()), Err(Reject::HeadTooLarge));
        let r = parse_head(b"POST / HTTP/1.1\r\nContent-Length: 12\r\n").unwrap();
        assert_eq!(content_length(&r), Ok(12));
        for bad in [
            "Content-Length: -1",
            "Content-Length: 1\r\nContent-Length: 2",
            "Transfer-Encoding: chunked",
        ] {
            let r = parse_head(format!("POST / HTTP/1.1\r\n{bad}\r\n").as_bytes()).unwrap();
            assert_eq!(content_length(&r), Err(Reject::BadRequest), "{bad}");
        }
        let r = parse_head(b"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n").unwrap();
        assert_eq!(content_length(&r), Err(Reject::BodyTooLarge));
    }

    #[test]
    fn pairs_decode_forms() {
        assert_eq!(
            parse_pairs("a=1&b=x%2By&c&=z").unwrap(),
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x+y".into()),
                ("c".into(), "".into()),
                ("".into(), "z".into())
            ]
        );
        assert_eq!(parse_pairs("a=%"), None);
        assert_eq!(parse_pairs("a=%ff"), None);
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_parse_or_are_refused(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
            if let Ok(r) = parse_head(&bytes) {
                proptest::prop_assert!(r.path.starts_with('/'));
                let _ = content_length(&r);
            }
        }

        #[test]
        fn request_like_text_never_panics(s in "[A-Z]{1,6} /[ -~]{0,40} HTTP/1\\.[01](\r\n[a-zA-Z-]{1,12}: [ -~]{0,20}){0,5}") {
            if let Ok(r) = parse_head(s.as_bytes()) {
                proptest::prop_assert!(r.headers.len() <= 5);
            }
        }

        #[test]
        fn encoded_pairs_decode_back(k in "[ -~]{1,12}", v in "[ -~\u{e9}\u{4e2d}]{0,20}") {
            let enc = |s: &str| s.bytes().map(|b| format!("%{b:02X}")).collect::<String>();
            let pairs = parse_pairs(&format!("{}={}", enc(&k), enc(&v))).unwrap();
            proptest::prop_assert_eq!(pairs, vec![(k, v)]);
        }
    }
}
