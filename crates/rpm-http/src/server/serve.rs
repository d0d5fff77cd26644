//! The RPM server's listener, TLS and HTTP: one thread running a
//! current-thread tokio runtime (the web ports' lifecycle,
//! `wirespeed_http::spawn`), rustls (AWS-LC) for TLS 1.3, hyper for
//! HTTP/2 and HTTP/1.1. Every connection is held to the limits below; a
//! malformed request is hyper's to refuse, never a panic here.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{Ipv6Addr, SocketAddr, TcpListener};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{ALLOW, CACHE_CONTROL, CONNECTION, CONTENT_TYPE, HOST, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::server::Served;
use wirespeed_core::config::TestConfig;
use wirespeed_core::error::{Code, Error};

/// Connections served at once.
/// Cloudflare's mach keeps every foreign probe's connection open until its
/// test ends: on a fast path a few hundred of them, which must not crowd
/// out its load connections.
pub const MAX_CONNECTIONS: usize = 1024;
/// Connections past [`MAX_CONNECTIONS`] that are still answered, each
/// request with 429 and `Retry-After`; past these, a new one is closed.
const BUSY_EXTRA: usize = 16;
/// What a busy answer asks the client to wait, in seconds.
const RETRY_SECONDS: &str = "5";
/// Most of an unasked-for request body read before the answer.
const SMALL_BODY: usize = 64 * 1024;
/// Longest wait for it.
const SMALL_BODY_WAIT: Duration = Duration::from_secs(2);
/// HTTP/2 streams open at once on one connection.
pub(crate) const MAX_STREAMS: u32 = 32;
/// The largest HTTP/2 header list (decoded).
const MAX_HEADER_LIST: u32 = 16 * 1024;
/// HTTP/1.1's read buffer, which a request head must fit in.
const H1_MAX_BUF: usize = 32 * 1024;
/// From accepting the connection to the end of the TLS handshake.
pub(crate) const HANDSHAKE: Duration = Duration::from_secs(10);
/// An HTTP/1.1 request head must arrive within this.
const HEAD_READ: Duration = Duration::from_secs(10);
/// A connection that makes no progress for this long is closed: nothing
/// written, and less than [`PROGRESS`] read (so a client trickling a
/// request a byte at a time does not hold its place forever).
pub const IDLE: Duration = Duration::from_secs(10);
/// Bytes read that count as progress.
const PROGRESS: u64 = 4096;
/// The same for a connection answered busy.
const BUSY_IDLE: Duration = Duration::from_secs(5);
/// The longest one download of `/large` or one upload lasts.
pub(crate) const TRANSFER: Duration = Duration::from_secs(60);
/// HTTP/2 flow-control windows: what a client may send ahead of our reads.
const H2_STREAM_WINDOW: u32 = 2 << 20;
const H2_CONN_WINDOW: u32 = 4 << 20;

/// What `/large` sends, over and over (never copied: each frame is a
/// view of it).
const CHUNK: usize = 16 * 1024;
static ZEROS: [u8; CHUNK] = [0; CHUNK];

/// The bound listener and its TLS configuration, before serving.
pub struct Endpoint {
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    fingerprint: String,
    self_signed: bool,
}

/// The server running on its thread; stops when dropped.
pub struct Serving {
    _serving: wirespeed_http::Serving,
}

impl Endpoint {
    /// Binds `--rpm-listen` and loads `--tls-cert`/`--tls-key`, or makes
    /// a self-signed certificate for the listener's address and
    /// `localhost`.
    pub fn bind(cfg: &TestConfig) -> Result<Endpoint, Error> {
        super::check_options(cfg)?;
        let spec = cfg.server.rpm_listen.as_deref().unwrap_or("");
        let listener = wirespeed_http::listen(spec, "--rpm-listen", "the RPM server")?;
        let ((chain, key), self_signed) = match (&cfg.server.tls_cert, &cfg.server.tls_key) {
            (Some(c), Some(k)) => (wirespeed_tls::load_pem(c, k)?, false),
            _ => (make_self_signed(&listener)?, true),
        };
        let fingerprint = wirespeed_tls::fingerprint(&chain[0]);
        let tls = tls_config(chain, key)?;
        Ok(Endpoint {
            listener,
            tls,
            fingerprint,
            self_signed,
        })
    }

    /// The line a server says at start: where the config is and the
    /// certificate's SHA-256 fingerprint (for a client to pin or check).
    pub fn announcement(&self) -> String {
        let at = wirespeed_http::reachable(&self.listener)
            .first()
            .copied()
            .or_else(|| self.listener.local_addr().ok())
            .map(|a| a.to_string())
            .unwrap_or_default();
        let whose = if self.self_signed {
            "self-signed certificate"
        } else {
            "certificate"
        };
        format!(
            "RPM server (networkQuality) at https://{at}/.well-known/nq, {whose} SHA-256 {}\n",
            self.fingerprint
        )
    }

    /// Serves on a thread of its own until the handle is dropped,
    /// counting what it serves in `served`.
    pub fn serve(self, served: Arc<Served>) -> Result<Serving, Error> {
        let failed = |e: io::Error| Error::msg(Code::LISTEN, format!("unable to start the RPM server: {e}"));
        let local = self.listener.local_addr().map_err(failed)?;
        // Room for the connections it may hold (the soft open-file limit
        // raised toward the hard one); short of that, an accept that
        // fails waits a moment and the connection is not taken.
        let _ = wirespeed_core::engine::reserve_fds(MAX_CONNECTIONS + BUSY_EXTRA, 1);
        let tls = self.tls;
        let serving = wirespeed_http::spawn(self.listener, "ws-rpm-server", 1, move |listener| {
            accept_loop(listener, tls, local, served)
        })?;
        Ok(Serving { _serving: serving })
    }
}

/// A self-signed certificate for where the listener answers and for
/// `localhost`.
fn make_self_signed(listener: &TcpListener) -> Result<wirespeed_tls::Identity, Error> {
    let names: Vec<String> = wirespeed_http::reachable(listener)
        .iter()
        .map(|a| a.ip().to_string())
        .collect();
    wirespeed_tls::self_signed(&names, "--rpm-listen")
}

/// TLS 1.3 only, ALPN `h2` then `http/1.1`.
fn tls_config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<rustls::ServerConfig>, Error> {
    let provider = wirespeed_tls::provider();
    let bad =
        |e: rustls::Error| Error::param_msg(Code::NONE, format!("--rpm-listen: the certificate cannot be used: {e}"));
    let mut c = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(bad)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(bad)?;
    c.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(c))
}

/// A place among the connections open at once, given back when dropped.
struct Slot(Arc<Served>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Relaxed);
    }
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    local: SocketAddr,
    served: Arc<Served>,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
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
        served.connections.fetch_add(1, Relaxed);
        let n = usize::try_from(served.open.fetch_add(1, Relaxed)).unwrap_or(usize::MAX);
        let slot = Slot(served.clone());
        if n >= MAX_CONNECTIONS + BUSY_EXTRA {
            served.closed_at_once.fetch_add(1, Relaxed);
            continue;
        }
        let busy = n >= MAX_CONNECTIONS;
        if busy {
            served.busy.fetch_add(1, Relaxed);
        }
        let acceptor = acceptor.clone();
        let served = served.clone();
        tokio::spawn(async move {
            let _slot = slot;
            connection(tcp, acceptor, local, busy, served).await;
        });
    }
}

/// What every request of one connection is answered with.
struct Ctx {
    local: SocketAddr,
    busy: bool,
    h2: bool,
    served: Arc<Served>,
}

async fn connection(
    tcp: tokio::net::TcpStream,
    acceptor: tokio_rustls::TlsAcceptor,
    local: SocketAddr,
    busy: bool,
    served: Arc<Served>,
) {
    let _ = tcp.set_nodelay(true);
    let _ = wirespeed_sys::socket::set_notsent_lowat(&socket2::SockRef::from(&tcp), crate::server::UNSENT);
    let Ok(Ok(mut tls)) = tokio::time::timeout(HANDSHAKE, acceptor.accept(tcp)).await else {
        served.tls_failures.fetch_add(1, Relaxed);
        return;
    };
    tls.get_mut().1.set_buffer_limit(Some(crate::server::TLS_SEND_BUFFER));
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let born = Instant::now();
    let last = Arc::new(AtomicU64::new(0));
    let io = TokioIo::new(Watched {
        inner: tls,
        born,
        last: last.clone(),
        served: served.clone(),
        unread_progress: 0,
    });
    let ctx = Arc::new(Ctx {
        local,
        busy,
        h2,
        served,
    });
    let svc = hyper::service::service_fn(move |req| {
        let ctx = ctx.clone();
        async move { Ok::<_, Infallible>(answer(req, &ctx).await) }
    });
    let served: Pin<Box<dyn Future<Output = ()> + Send>> = if h2 {
        let mut b = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
        b.timer(TokioTimer::new())
            .max_concurrent_streams(MAX_STREAMS)
            .max_header_list_size(MAX_HEADER_LIST)
            .initial_stream_window_size(H2_STREAM_WINDOW)
            .initial_connection_window_size(H2_CONN_WINDOW)
            .max_send_buf_size(crate::server::H2_SEND_BUFFER);
        let conn = b.serve_connection(io, svc);
        Box::pin(async move {
            let _ = conn.await;
        })
    } else {
        let mut b = hyper::server::conn::http1::Builder::new();
        b.timer(TokioTimer::new())
            .header_read_timeout(HEAD_READ)
            .max_buf_size(H1_MAX_BUF)
            .keep_alive(!busy);
        let conn = b.serve_connection(io, svc);
        Box::pin(async move {
            let _ = conn.await;
        })
    };
    let idle = if busy { BUSY_IDLE } else { IDLE };
    tokio::select! {
        _ = served => {}
        _ = idle_watch(born, last, idle) => {}
    }
}

/// Returns once the connection has moved nothing for `idle`.
async fn idle_watch(born: Instant, last: Arc<AtomicU64>, idle: Duration) {
    loop {
        let due = born + Duration::from_millis(last.load(Relaxed)) + idle;
        let now = Instant::now();
        if now >= due {
            return;
        }
        tokio::time::sleep(due - now).await;
    }
}

/// A stream that notes when it last made progress (wrote anything, or
/// read [`PROGRESS`] bytes since), and counts what it moved.
struct Watched<T> {
    inner: T,
    born: Instant,
    last: Arc<AtomicU64>,
    served: Arc<Served>,
    /// Read since the last progress.
    unread_progress: u64,
}

impl<T> Watched<T> {
    fn touch(&mut self) {
        let ms = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(ms, Relaxed);
        self.unread_progress = 0;
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut me.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            let n = (buf.filled().len() - before) as u64;
            me.served.received.fetch_add(n, Relaxed);
            me.unread_progress += n;
            if me.unread_progress >= PROGRESS {
                me.touch();
            }
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        let r = Pin::new(&mut me.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r
            && n > 0
        {
            me.served.sent.fetch_add(n as u64, Relaxed);
            me.touch();
        }
        r
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        let r = Pin::new(&mut me.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = r
            && n > 0
        {
            me.served.sent.fetch_add(n as u64, Relaxed);
            me.touch();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// A response body: a few bytes, or `/large`'s stream of zeros until its
/// time is up.
pub(crate) enum Reply {
    Once(Option<Bytes>),
    Endless(Instant),
}

impl Body for Reply {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(match self.get_mut() {
            Reply::Once(b) => b.take().map(|b| Ok(Frame::data(b))),
            Reply::Endless(until) => (Instant::now() < *until).then(|| Ok(Frame::data(Bytes::from_static(&ZEROS)))),
        })
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Reply::Once(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Reply::Once(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            Reply::Endless(_) => SizeHint::default(),
        }
    }
}

/// Where a request goes.
enum Route {
    Config,
    Small,
    Large,
    Slurp,
    /// A known path asked with the wrong method; what it allows.
    Method(&'static str),
    Unknown,
}

impl Route {
    /// Its index in [`crate::server::PATHS`].
    fn counted_as(&self) -> usize {
        match self {
            Route::Config => 0,
            Route::Small => 1,
            Route::Large => 2,
            Route::Slurp => 3,
            Route::Method(_) | Route::Unknown => 4,
        }
    }
}

fn route(path: &str, m: &Method) -> Route {
    let get = *m == Method::GET || *m == Method::HEAD;
    let post = *m == Method::POST || *m == Method::PUT;
    match path {
        "/.well-known/nq" | "/config" if get => Route::Config,
        "/small" if get => Route::Small,
        "/large" if get => Route::Large,
        "/slurp" | "/upload" if post => Route::Slurp,
        "/.well-known/nq" | "/config" | "/small" | "/large" => Route::Method("GET, HEAD"),
        "/slurp" | "/upload" => Route::Method("POST, PUT"),
        _ => Route::Unknown,
    }
}

async fn answer(req: Request<Incoming>, ctx: &Ctx) -> Response<Reply> {
    let route = route(req.uri().path(), req.method());
    if !ctx.busy {
        ctx.served.request(route.counted_as());
    }
    if matches!(route, Route::Slurp) && !ctx.busy {
        return slurp(req.into_body()).await;
    }
    // Every other answer comes after the request's body (a short one),
    // so a client still sending it is not reset before it reads the
    // answer (curl then sees no answer at all).
    let (req, body) = req.into_parts();
    discard(body).await;
    if ctx.busy {
        let mut r = text(
            StatusCode::TOO_MANY_REQUESTS,
            "busy: too many connections, try again later\n",
        );
        r.headers_mut()
            .insert(RETRY_AFTER, RETRY_SECONDS.parse().expect("a valid header value"));
        if !ctx.h2 {
            r.headers_mut()
                .insert(CONNECTION, "close".parse().expect("a valid header value"));
        }
        return r;
    }
    match route {
        Route::Config => {
            let body = config(&req, ctx.local);
            reply(StatusCode::OK, "application/json", Reply::Once(Some(Bytes::from(body))))
        }
        Route::Small => reply(
            StatusCode::OK,
            "application/octet-stream",
            Reply::Once(Some(Bytes::from_static(b"x"))),
        ),
        Route::Large => reply(
            StatusCode::OK,
            "application/octet-stream",
            Reply::Endless(Instant::now() + TRANSFER),
        ),
        // Answered above, by `slurp`.
        Route::Slurp => text(StatusCode::INTERNAL_SERVER_ERROR, "upload routed twice\n"),
        Route::Method(allowed) => {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
            r.headers_mut()
                .insert(ALLOW, allowed.parse().expect("a valid header value"));
            r
        }
        Route::Unknown => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

fn reply(status: StatusCode, content_type: &'static str, body: Reply) -> Response<Reply> {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, content_type.parse().expect("a valid header value"));
    r.headers_mut()
        .insert(CACHE_CONTROL, "no-store".parse().expect("a valid header value"));
    r
}

fn text(status: StatusCode, body: &'static str) -> Response<Reply> {
    reply(
        status,
        "text/plain",
        Reply::Once(Some(Bytes::from_static(body.as_bytes()))),
    )
}

/// A body not asked for: read and dropped, up to [`SMALL_BODY`] bytes and
/// [`SMALL_BODY_WAIT`]; the answer goes out after it either way.
async fn discard(mut body: Incoming) {
    let until = tokio::time::Instant::now() + SMALL_BODY_WAIT;
    let mut seen = 0usize;
    while seen < SMALL_BODY {
        let next = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx));
        match tokio::time::timeout_at(until, next).await {
            Ok(Some(Ok(f))) => seen += f.data_ref().map_or(0, |d| d.len()),
            _ => return,
        }
    }
}

/// Reads a posted body to its end and discards it.
async fn slurp(mut body: Incoming) -> Response<Reply> {
    let until = tokio::time::Instant::now() + TRANSFER;
    loop {
        let next = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx));
        match tokio::time::timeout_at(until, next).await {
            Ok(None) => return reply(StatusCode::OK, "text/plain", Reply::Once(None)),
            Ok(Some(Ok(_))) => {}
            Ok(Some(Err(_))) => return text(StatusCode::BAD_REQUEST, "the upload broke off\n"),
            Err(_) => return text(StatusCode::REQUEST_TIMEOUT, "an upload may last 60 s at most\n"),
        }
    }
}

/// The config document, its URLs on the host the client asked for
/// (`:authority` or `Host`), else on the listener's address.
fn config(req: &hyper::http::request::Parts, local: SocketAddr) -> String {
    let asked = req
        .uri
        .authority()
        .map(|a| a.as_str())
        .or_else(|| req.headers.get(HOST).and_then(|v| v.to_str().ok()));
    let base = asked
        .and_then(|a| base_of(a, local.port()))
        .unwrap_or_else(|| local.to_string());
    let url = |p: &str| format!("https://{base}/{p}");
    let doc = serde_json::json!({
        "version": 1,
        "urls": {
            "small_download_url": url("small"),
            "large_download_url": url("large"),
            "upload_url": url("slurp"),
            "small_https_download_url": url("small"),
            "large_https_download_url": url("large"),
            "https_upload_url": url("slurp"),
        }
    });
    doc.to_string()
}

/// `host:port` from what a client gave as the host: a name or address,
/// with its port or with the listener's. None for anything else.
fn base_of(asked: &str, port: u16) -> Option<String> {
    let allowed = |c: u8| c.is_ascii_alphanumeric() || b".-_:[]".contains(&c);
    if asked.is_empty() || asked.len() > 255 || !asked.bytes().all(allowed) {
        return None;
    }
    let port_ok = |p: &str| p.parse::<u16>().is_ok_and(|p| p > 0);
    if let Some(rest) = asked.strip_prefix('[') {
        let (ip, after) = rest.split_once(']')?;
        ip.parse::<Ipv6Addr>().ok()?;
        return match after {
            "" => Some(format!("[{ip}]:{port}")),
            p => p
                .strip_prefix(':')
                .filter(|p| port_ok(p))
                .map(|p| format!("[{ip}]:{p}")),
        };
    }
    let (host, given) = match asked.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (asked, None),
    };
    if host.is_empty() || host.contains(['[', ']']) || host.starts_with(['.', '-']) {
        return None;
    }
    match given {
        None => Some(format!("{host}:{port}")),
        Some(p) if port_ok(p) => Some(format!("{host}:{p}")),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_of_takes_hosts_and_refuses_the_rest() {
        assert_eq!(base_of("example.net", 443).as_deref(), Some("example.net:443"));
        assert_eq!(base_of("127.0.0.1:8443", 1).as_deref(), Some("127.0.0.1:8443"));
        assert_eq!(base_of("[::1]:8443", 1).as_deref(), Some("[::1]:8443"));
        assert_eq!(base_of("[::1]", 9).as_deref(), Some("[::1]:9"));
        for bad in [
            "",
            "a b",
            "a/b",
            "evil.com/x",
            "h:p",
            "h:0",
            "[::1",
            "[zz]:1",
            "a:1:2",
            "::1",
            "h:99999",
        ] {
            assert_eq!(base_of(bad, 1), None, "{bad}");
        }
    }

    #[test]
    fn routes() {
        assert!(matches!(route("/.well-known/nq", &Method::GET), Route::Config));
        assert!(matches!(route("/config", &Method::HEAD), Route::Config));
        assert!(matches!(route("/small", &Method::GET), Route::Small));
        assert!(matches!(route("/large", &Method::GET), Route::Large));
        assert!(matches!(route("/slurp", &Method::POST), Route::Slurp));
        assert!(matches!(route("/upload", &Method::PUT), Route::Slurp));
        assert!(matches!(route("/small", &Method::POST), Route::Method(_)));
        assert!(matches!(route("/slurp", &Method::GET), Route::Method(_)));
        assert!(matches!(route("/x", &Method::GET), Route::Unknown));
    }
}
