//! The one HTTP server of the web ports: hyper's HTTP/1.1 on a
//! current-thread tokio runtime of its own thread, and the handlers on
//! that runtime's worker threads (they block: probes, SQLite). Every
//! connection is watched: its first request's head must come whole
//! within [`Limits::head`] of the connection (a later one's, of its first
//! byte), a kept-alive connection idle for [`Limits::idle`] is closed, a
//! response the client stops taking is cut after [`Limits::write_stall`],
//! a body must come within [`Limits::body_time`]. Past
//! [`Limits::connections`], a new connection cuts the open one that has
//! done least (no request being answered; fewest bytes a second since it
//! opened, the oldest first), so neither idle nor trickling clients can
//! keep a newcomer out.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::TcpListener;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HOST, HeaderName, HeaderValue, X_CONTENT_TYPE_OPTIONS};
use hyper::{StatusCode, ext::ReasonPhrase};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{Notify, mpsc, oneshot};

use super::{Request, Response, parse_pairs, percent_decode};
use wirespeed_core::error::{Code, Error};

/// What a port holds its clients to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once. A new one past these cuts the open one
    /// that has done least; when every one is being answered, the new
    /// one is answered 503 and closed.
    pub connections: usize,
    /// A request's head must be whole within this: the first request's
    /// from the connection's start, a later one's from its first byte.
    pub head: Duration,
    /// A kept-alive connection with no request for this long is closed.
    pub idle: Duration,
    /// A request's body must be whole within this.
    pub body_time: Duration,
    /// A response the client takes nothing of for this long is cut.
    pub write_stall: Duration,
    /// The longest request head (request line and headers): 431 past it.
    pub head_size: usize,
    /// The most headers: 431 past them.
    pub headers: usize,
    /// The longest body: 413 past it.
    pub body_size: usize,
    /// Handlers running at once (worker threads); more wait their turn.
    pub workers: usize,
    /// Event streams open at once; 503 past them.
    pub streams: usize,
}

impl Limits {
    /// What a port is held to unless it says otherwise.
    pub const DEFAULT: Limits = Limits {
        connections: 256,
        head: Duration::from_secs(5),
        idle: Duration::from_secs(15),
        body_time: Duration::from_secs(10),
        write_stall: Duration::from_secs(10),
        head_size: 16 * 1024,
        headers: 64,
        body_size: 0,
        workers: 8,
        streams: 0,
    };
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::DEFAULT
    }
}

/// What a handler answers.
pub enum Answer {
    /// A whole response.
    Whole(Response),
    /// Server-sent events: the function runs on a thread of its own,
    /// writing events until it returns or the client goes away (a write
    /// then fails).
    Events(Box<dyn FnOnce(Events) + Send>),
}

/// Answers a request. It may block: it runs on a worker thread.
pub type Handler = Arc<dyn Fn(Request) -> Answer + Send + Sync>;

/// The writing end of an event stream.
pub struct Events {
    tx: mpsc::Sender<Bytes>,
}

impl Events {
    /// Sends one event (`data` may hold newlines); fails once the client
    /// has gone.
    pub fn event(&mut self, name: &str, data: &str) -> io::Result<()> {
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
        self.put(msg)
    }

    /// Sends a comment, which keeps the stream moving and finds a client
    /// that has gone.
    pub fn comment(&mut self, text: &str) -> io::Result<()> {
        self.put(format!(": {text}\n\n"))
    }

    fn put(&mut self, msg: String) -> io::Result<()> {
        self.tx
            .blocking_send(Bytes::from(msg))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"))
    }
}

/// A port being served; stops (and closes every connection) when
/// dropped or [`Serving::stop`]ped.
pub struct Serving {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Serving {
    /// Stops serving and waits for the server's thread (at most about
    /// [`SHUTDOWN`] for handlers still running).
    pub fn stop(self) {}
}

impl Drop for Serving {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How long stopping waits for handlers still running.
const SHUTDOWN: Duration = Duration::from_millis(500);
/// How often a connection's watch looks at it (the precision of the
/// deadlines).
const CHECK: Duration = Duration::from_millis(250);
/// Descriptors kept beyond the connections (the listener, the handlers'
/// files).
const SPARE_FDS: usize = 32;

/// Serves `listener` (from [`super::listen`]) with `handler` under
/// `limits`, on a thread named `name`, until the handle is dropped.
pub fn serve(listener: TcpListener, name: &str, limits: Limits, handler: Handler) -> Result<Serving, Error> {
    // Room for the connections it may hold (the soft open-file limit
    // raised toward the hard one).
    let _ = wirespeed_core::engine::reserve_fds(limits.connections + SPARE_FDS, 1);
    let shared = Arc::new(Shared {
        limits,
        handler,
        epoch: Instant::now(),
        conns: Mutex::new(HashMap::new()),
        next: AtomicU64::new(0),
        streams: AtomicUsize::new(0),
    });
    spawn(listener, name, limits.workers + limits.streams, move |l| {
        accept(l, shared)
    })
}

/// The lifecycle of every port (the RPM server's too): runs `run` with
/// `listener` on a current-thread tokio runtime on a thread named `name`,
/// whose blocking work gets at most `workers` threads, until the handle
/// is dropped (which closes the listener and every connection, and joins
/// the thread).
pub fn spawn<F, Fut>(listener: TcpListener, name: &str, workers: usize, run: F) -> Result<Serving, Error>
where
    F: FnOnce(tokio::net::TcpListener) -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    let failed = |e: io::Error| Error::io(Code::LISTEN, &e);
    listener.set_nonblocking(true).map_err(failed)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(workers.max(1))
        .thread_name(format!("{name}-work"))
        .build()
        .map_err(failed)?;
    let (stop, stopped) = oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            rt.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                tokio::select! {
                    _ = run(listener) => {}
                    _ = stopped => {}
                }
            });
            rt.shutdown_timeout(SHUTDOWN);
        })
        .map_err(|e| Error::io(Code::PTHREADCREATE, &e))?;
    Ok(Serving {
        stop: Some(stop),
        thread: Some(thread),
    })
}

/// Where a connection is.
const WAITING: u8 = 0;
const HEAD: u8 = 1;
const HANDLING: u8 = 2;
const SENDING: u8 = 3;
/// No write waiting.
const NONE: u64 = u64::MAX;

/// One open connection, as its watch and the eviction see it. Times are
/// milliseconds since [`Shared::epoch`].
struct Conn {
    id: u64,
    born: u64,
    /// Bytes read from it.
    read: AtomicU64,
    /// Requests it has made.
    requests: AtomicU64,
    phase: AtomicU8,
    /// When the phase began.
    since: AtomicU64,
    /// Since when a write has been waiting for the client ([`NONE`]).
    blocked: AtomicU64,
    /// Cuts the connection.
    cut: Notify,
}

impl Conn {
    fn enter(&self, phase: u8, now: u64) {
        self.phase.store(phase, Relaxed);
        self.since.store(now, Relaxed);
    }

    /// When the watch cuts it, as things stand (`None`: not for now).
    fn due(&self, l: &Limits) -> Option<u64> {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX / 4);
        let since = self.since.load(Relaxed);
        match self.phase.load(Relaxed) {
            WAITING if self.requests.load(Relaxed) == 0 => Some(since + ms(l.head)),
            WAITING => Some(since + ms(l.idle)),
            HEAD => Some(since + ms(l.head)),
            SENDING => match self.blocked.load(Relaxed) {
                NONE => None,
                t => Some(t + ms(l.write_stall)),
            },
            _ => None,
        }
    }
}

/// What the connections share.
struct Shared {
    limits: Limits,
    handler: Handler,
    epoch: Instant,
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
    next: AtomicU64,
    streams: AtomicUsize,
}

impl Shared {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX / 4)
    }

    /// A place for a new connection: when every place is taken, the one
    /// of a connection that is not being answered and has moved the
    /// fewest bytes a second (the oldest of equals) is taken from it.
    /// `None` when every connection is being answered.
    fn admit(&self) -> Option<Arc<Conn>> {
        let now = self.now();
        let mut conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        if conns.len() >= self.limits.connections {
            let victim = conns
                .values()
                .filter(|c| matches!(c.phase.load(Relaxed), WAITING | HEAD))
                .min_by_key(|c| {
                    let age = now.saturating_sub(c.born) + 1;
                    (c.read.load(Relaxed).saturating_mul(1000) / age, c.born)
                })
                .map(|c| c.id)?;
            if let Some(v) = conns.remove(&victim) {
                v.cut.notify_one();
            }
        }
        let id = self.next.fetch_add(1, Relaxed);
        let c = Arc::new(Conn {
            id,
            born: now,
            read: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            phase: AtomicU8::new(WAITING),
            since: AtomicU64::new(now),
            blocked: AtomicU64::new(NONE),
            cut: Notify::new(),
        });
        conns.insert(id, c.clone());
        Some(c)
    }

    fn forget(&self, id: u64) {
        self.conns.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
    }
}

/// Takes the connection off the books when its task ends.
struct Gone(Arc<Shared>, u64);

impl Drop for Gone {
    fn drop(&mut self) {
        self.0.forget(self.1);
    }
}

/// The answer to a connection that finds every place taken by one being
/// answered.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n\
Content-Length: 21\r\nRetry-After: 5\r\nConnection: close\r\n\r\ntoo many connections\n";

async fn accept(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    loop {
        let tcp = match listener.accept().await {
            Ok((tcp, _)) => tcp,
            Err(_) => {
                // Out of descriptors, or the peer gone before we took it:
                // pause rather than spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        match shared.admit() {
            Some(conn) => {
                tokio::spawn(connection(tcp, conn, shared.clone()));
            }
            None => {
                let _ = tcp.try_write(BUSY);
            }
        }
    }
}

async fn connection(tcp: tokio::net::TcpStream, conn: Arc<Conn>, shared: Arc<Shared>) {
    let _gone = Gone(shared.clone(), conn.id);
    let _ = tcp.set_nodelay(true);
    let io = TokioIo::new(Watched {
        inner: tcp,
        conn: conn.clone(),
        shared: shared.clone(),
    });
    let svc = {
        let (conn, shared) = (conn.clone(), shared.clone());
        hyper::service::service_fn(move |req| {
            let (conn, shared) = (conn.clone(), shared.clone());
            async move { Ok::<_, Infallible>(respond(req, conn, shared).await) }
        })
    };
    let l = &shared.limits;
    let mut b = hyper::server::conn::http1::Builder::new();
    // The heads' deadlines are the watch's: hyper's would start at once
    // on a kept-alive connection, leaving it no idle time.
    b.timer(TokioTimer::new())
        .header_read_timeout(None)
        // Header names as they are usually written (`Content-Type`), as
        // the hand-written server wrote them.
        .title_case_headers(true)
        .max_header_size(l.head_size)
        .max_buf_size((2 * l.head_size).max(16 * 1024))
        .max_headers(l.headers)
        .keep_alive(true);
    let served = b.serve_connection(io, svc);
    tokio::select! {
        _ = served => {}
        _ = watch(&conn, &shared) => {}
        _ = conn.cut.notified() => {}
    }
}

/// Returns when the connection is past its deadline.
async fn watch(conn: &Conn, shared: &Shared) {
    loop {
        let now = shared.now();
        let due = conn.due(&shared.limits);
        if due.is_some_and(|d| now >= d) {
            return;
        }
        let wait = due.map_or(CHECK, |d| Duration::from_millis(d - now).min(CHECK));
        tokio::time::sleep(wait).await;
    }
}

/// The socket, noting what moves on it for the connection's watch.
struct Watched {
    inner: tokio::net::TcpStream,
    conn: Arc<Conn>,
    shared: Arc<Shared>,
}

impl AsyncRead for Watched {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut me.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        if matches!(r, Poll::Ready(Ok(()))) && n > 0 {
            let c = &me.conn;
            c.read.fetch_add(n as u64, Relaxed);
            // A later request's first byte starts its head's deadline.
            if c.requests.load(Relaxed) > 0 && c.phase.compare_exchange(WAITING, HEAD, Relaxed, Relaxed).is_ok() {
                c.since.store(me.shared.now(), Relaxed);
            }
        }
        r
    }
}

impl Watched {
    fn wrote<T>(&self, r: &Poll<io::Result<T>>) {
        match r {
            Poll::Pending => {
                let _ = self
                    .conn
                    .blocked
                    .compare_exchange(NONE, self.shared.now(), Relaxed, Relaxed);
            }
            Poll::Ready(_) => self.conn.blocked.store(NONE, Relaxed),
        }
    }
}

impl AsyncWrite for Watched {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        let r = Pin::new(&mut me.inner).poll_write(cx, buf);
        me.wrote(&r);
        r
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        let r = Pin::new(&mut me.inner).poll_write_vectored(cx, bufs);
        me.wrote(&r);
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        let r = Pin::new(&mut me.inner).poll_flush(cx);
        me.wrote(&r);
        r
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// A response's body: whole, or the events of a stream as they come.
enum Kind {
    Once(Option<Bytes>),
    Stream(mpsc::Receiver<Bytes>),
}

/// A response's body, which puts its connection back to waiting for a
/// request when hyper is done with it.
struct Out {
    kind: Kind,
    _sent: Sent,
}

struct Sent(Arc<Conn>, Arc<Shared>);

impl Drop for Sent {
    fn drop(&mut self) {
        self.0.blocked.store(NONE, Relaxed);
        self.0.enter(WAITING, self.1.now());
    }
}

impl Body for Out {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.get_mut().kind {
            Kind::Once(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Kind::Stream(rx) => rx.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.kind, Kind::Once(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Once(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            Kind::Stream(_) => SizeHint::default(),
        }
    }
}

async fn respond(req: hyper::Request<Incoming>, conn: Arc<Conn>, shared: Arc<Shared>) -> hyper::Response<Out> {
    conn.requests.fetch_add(1, Relaxed);
    conn.enter(HANDLING, shared.now());
    let r = answer(req, &shared).await;
    conn.enter(SENDING, shared.now());
    r.map(|kind| Out {
        kind,
        _sent: Sent(conn, shared),
    })
}

/// A plain-text refusal.
fn refuse(status: &'static str, text: &str) -> hyper::Response<Kind> {
    whole(Response::text(status, text))
}

async fn answer(req: hyper::Request<Incoming>, shared: &Arc<Shared>) -> hyper::Response<Kind> {
    let (parts, body) = req.into_parts();
    let mut r = match to_request(&parts) {
        Ok(r) => r,
        Err(why) => return refuse("400 Bad Request", why),
    };
    let l = &shared.limits;
    if body.size_hint().lower() > l.body_size as u64 {
        return refuse("413 Content Too Large", "the request's body is too large\n");
    }
    r.body = match read_body(body, l.body_size, l.body_time).await {
        Ok(b) => b,
        Err((status, why)) => return refuse(status, why),
    };
    let handler = shared.handler.clone();
    let Ok(answered) = tokio::task::spawn_blocking(move || handler(r)).await else {
        return refuse("500 Internal Server Error", "the request could not be answered\n");
    };
    match answered {
        Answer::Whole(resp) => whole(resp),
        Answer::Events(stream) => {
            let taken = shared
                .streams
                .fetch_update(Relaxed, Relaxed, |n| (n < l.streams).then_some(n + 1))
                .is_ok();
            if !taken {
                return refuse("503 Service Unavailable", "too many live streams open\n");
            }
            let (tx, rx) = mpsc::channel(8);
            let s = shared.clone();
            tokio::task::spawn_blocking(move || {
                stream(Events { tx });
                s.streams.fetch_sub(1, Relaxed);
            });
            let mut r = hyper::Response::new(Kind::Stream(rx));
            let h = r.headers_mut();
            h.insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream; charset=utf-8"),
            );
            h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
            h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
            r
        }
    }
}

/// Reads a request's body: at most `cap` bytes, within `time`.
async fn read_body(mut body: Incoming, cap: usize, time: Duration) -> Result<Vec<u8>, (&'static str, &'static str)> {
    let until = tokio::time::Instant::now() + time;
    let mut out = Vec::new();
    loop {
        let next = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx));
        match tokio::time::timeout_at(until, next).await {
            Err(_) => return Err(("408 Request Timeout", "the request's body did not come in time\n")),
            Ok(None) => return Ok(out),
            Ok(Some(Err(_))) => return Err(("400 Bad Request", "the request's body broke off\n")),
            Ok(Some(Ok(f))) => {
                if let Ok(d) = f.into_data() {
                    if out.len() + d.len() > cap {
                        return Err(("413 Content Too Large", "the request's body is too large\n"));
                    }
                    out.extend_from_slice(&d);
                }
            }
        }
    }
}

/// The request a handler sees: the path percent-decoded, the query split
/// into decoded pairs, header names in lower case. A target that is not
/// a path (`http://...`, `*`), a broken escape and a second `Host` (a
/// check could read one and a proxy the other) are refused.
fn to_request(parts: &hyper::http::request::Parts) -> Result<Request, &'static str> {
    let bad = "bad request\n";
    if parts.uri.scheme().is_some() || parts.uri.authority().is_some() || !parts.uri.path().starts_with('/') {
        return Err(bad);
    }
    if parts.headers.get_all(HOST).iter().count() > 1 {
        return Err(bad);
    }
    Ok(Request {
        method: parts.method.as_str().to_string(),
        path: percent_decode(parts.uri.path(), false).ok_or(bad)?,
        query: parse_pairs(parts.uri.query().unwrap_or("")).ok_or(bad)?,
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).trim().to_string(),
                )
            })
            .collect(),
        body: Vec::new(),
    })
}

/// A [`Response`] as hyper sends it (its status line's words kept), with
/// the headers every answer carries.
fn whole(resp: Response) -> hyper::Response<Kind> {
    let (code, words) = resp.status.split_once(' ').unwrap_or((resp.status, ""));
    let code = code
        .parse::<u16>()
        .ok()
        .and_then(|c| StatusCode::from_u16(c).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = hyper::Response::new(Kind::Once(Some(Bytes::from(resp.body))));
    *r.status_mut() = code;
    if let Ok(p) = ReasonPhrase::try_from(words.as_bytes().to_vec())
        && code.canonical_reason() != Some(words)
    {
        r.extensions_mut().insert(p);
    }
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(resp.content_type) {
        h.insert(CONTENT_TYPE, v);
    }
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    for line in &resp.headers {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        if let (Ok(k), Ok(v)) = (
            HeaderName::from_bytes(k.trim().as_bytes()),
            HeaderValue::from_str(v.trim()),
        ) {
            h.append(k, v);
        }
    }
    r
}

/// The request `head` (a request line and headers, without the blank
/// line) would reach a handler as: what the unit tests build requests
/// with (parsed by httparse, hyper's parser).
pub fn parse_head(head: &[u8]) -> Result<Request, String> {
    let mut text = head.to_vec();
    text.extend_from_slice(b"\r\n\r\n");
    let mut hs = [httparse::EMPTY_HEADER; 64];
    let mut p = httparse::Request::new(&mut hs);
    match p.parse(&text) {
        Ok(httparse::Status::Complete(_)) => {}
        other => return Err(format!("{other:?}")),
    }
    let mut b = hyper::Request::builder()
        .method(p.method.unwrap_or(""))
        .uri(p.path.unwrap_or(""));
    for h in p.headers.iter() {
        b = b.header(h.name, h.value);
    }
    let (parts, ()) = b.body(()).map_err(|e| e.to_string())?.into_parts();
    to_request(&parts).map_err(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_reach_handlers_decoded() {
        let r =
            parse_head(b"GET /api/runs/3/events?token=a%20b&x=1+2 HTTP/1.1\r\nHost: 127.0.0.1:5280\r\nX-Token:  t ")
                .unwrap();
        assert_eq!(r.method, "GET");
        assert_eq!(r.path, "/api/runs/3/events");
        assert_eq!(r.param("token"), Some("a b"));
        assert_eq!(r.param("x"), Some("1 2"));
        assert_eq!(r.header("host"), Some("127.0.0.1:5280"));
        assert_eq!(r.header("x-token"), Some("t"));
        for bad in [
            "GET /%zz HTTP/1.1",
            "GET /?a=%ff HTTP/1.1",
            "GET http://evil/ HTTP/1.1",
            "GET / HTTP/1.1\r\nHost: a\r\nHost: b",
        ] {
            assert!(parse_head(bad.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn responses_keep_their_words_and_headers() {
        let r = whole(Response::text("413 Content Too Large", "x").with_header("Allow: GET, HEAD"));
        assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            r.extensions().get::<ReasonPhrase>().map(|p| p.as_bytes()),
            Some(&b"Content Too Large"[..])
        );
        assert_eq!(r.headers()["allow"], "GET, HEAD");
        assert_eq!(r.headers()["cache-control"], "no-store");
        let r = whole(Response::text("200 OK", "x"));
        assert!(r.extensions().get::<ReasonPhrase>().is_none());
    }

    #[test]
    fn the_connection_that_did_least_makes_room() {
        let shared = Shared {
            limits: Limits {
                connections: 3,
                ..Limits::default()
            },
            handler: Arc::new(|_| Answer::Whole(Response::text("200 OK", ""))),
            epoch: Instant::now() - Duration::from_secs(10),
            conns: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            streams: AtomicUsize::new(0),
        };
        let a = shared.admit().unwrap();
        let b = shared.admit().unwrap();
        let c = shared.admit().unwrap();
        a.read.store(5000, Relaxed);
        c.phase.store(HANDLING, Relaxed);
        // b has read nothing: it goes.
        let _d = shared.admit().unwrap();
        assert!(!shared.conns.lock().unwrap().contains_key(&b.id));
        // Of a (fast) and d (new, nothing read), d goes; c is being answered.
        let _e = shared.admit().unwrap();
        assert!(shared.conns.lock().unwrap().contains_key(&a.id));
        assert!(shared.conns.lock().unwrap().contains_key(&c.id));
        // With every connection being answered, none is cut.
        for c in shared.conns.lock().unwrap().values() {
            c.phase.store(HANDLING, Relaxed);
        }
        assert!(shared.admit().is_none());
    }
}
