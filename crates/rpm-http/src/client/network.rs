//! The network side of `--rpm=URL`: TLS 1.3 (rustls with AWS-LC), HTTP/2
//! (h2) on a tokio runtime of two threads. Every wait has a deadline.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::SendRequest;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;

use super::{
    CONFIG_CAP, Direction, FLOWS_PER_STEP, Idle, Judge, Latencies, NqUrls, PROBE_ROUNDS_PER_SECOND, Progress,
    SMALL_CAP, Sample, Url, Verdict, WayResult,
};
use wirespeed_core::config::NqOptions;
use wirespeed_iperf::modes::rpm::MAD;

/// A connection (TCP, TLS and HTTP/2 handshakes) or one request waits no
/// longer.
const WAIT: Duration = Duration::from_secs(10);
/// GETs of the small object on the idle connection.
const IDLE_PROBES: usize = 20;
/// Load connections one direction may lose (each replaced) before the
/// test ends with the last one's error.
const LOST_LOADS: u32 = 64;
/// Upload chunks.
static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];

type Res<T> = Result<T, String>;

/// Where a URL's connections go.
#[derive(Clone)]
struct Target {
    url: Url,
    addr: SocketAddr,
    name: ServerName<'static>,
}

/// What every connection shares.
#[derive(Clone)]
struct Ctx {
    tls: TlsConnector,
}

/// An open HTTP/2 connection and its handshake times, ms.
struct Conn {
    send: SendRequest<Bytes>,
    driver: JoinHandle<()>,
    tcp_ms: f64,
    tls_ms: f64,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn within<T>(what: &str, f: impl std::future::Future<Output = Res<T>>) -> Res<T> {
    tokio::time::timeout(WAIT, f)
        .await
        .unwrap_or_else(|_| Err(format!("{what}: no answer within {} s", WAIT.as_secs())))
}

/// The TLS settings: TLS 1.3, ALPN h2, and the certificates trusted.
fn tls_config(nq: &NqOptions) -> Res<rustls::ClientConfig> {
    let provider = wirespeed_tls::provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("TLS: {e}"))?;
    let verifier: Arc<dyn rustls::client::danger::ServerCertVerifier> = if nq.insecure {
        wirespeed_tls::AnyCertificate::new(provider)
    } else {
        let (roots, pinned) = verify::roots(nq.cacert.as_deref())?;
        let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| format!("TLS: {e}"))?;
        Arc::new(verify::Pinned { inner, pinned })
    };
    let mut c = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    c.alpn_protocols = vec![b"h2".to_vec()];
    Ok(c)
}

/// Resolves a URL's host.
async fn target(url: &Url) -> Res<Target> {
    let name = ServerName::try_from(url.host.clone()).map_err(|_| format!("bad host name {:?}", url.host))?;
    let addr = within(&url.host, async {
        tokio::net::lookup_host((url.host.as_str(), url.port))
            .await
            .map_err(|e| format!("{}: {e}", url.host))?
            .next()
            .ok_or_else(|| format!("{}: no address", url.host))
    })
    .await?;
    Ok(Target {
        url: url.clone(),
        addr,
        name,
    })
}

/// TCP, TLS and HTTP/2 handshakes to a target.
async fn connect(ctx: &Ctx, t: &Target) -> Res<Conn> {
    within(&t.url.text(), async {
        let start = Instant::now();
        let tcp = TcpStream::connect(t.addr)
            .await
            .map_err(|e| format!("{}: connect: {e}", t.url.authority()))?;
        let _ = tcp.set_nodelay(true);
        let _ = wirespeed_sys::socket::set_notsent_lowat(&socket2::SockRef::from(&tcp), crate::server::UNSENT);
        let tcp_ms = ms(start.elapsed());
        let start = Instant::now();
        let mut tls = ctx
            .tls
            .connect(t.name.clone(), tcp)
            .await
            .map_err(|e| verify::words(&t.url, &e))?;
        tls.get_mut().1.set_buffer_limit(Some(crate::server::TLS_SEND_BUFFER));
        if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
            return Err(format!(
                "{}: the server does not offer HTTP/2 (ALPN h2)",
                t.url.authority()
            ));
        }
        let tls_ms = ms(start.elapsed());
        let (send, conn) = h2::client::Builder::new()
            .initial_window_size(4 << 20)
            .initial_connection_window_size(16 << 20)
            .max_header_list_size(64 << 10)
            .max_send_buffer_size(crate::server::H2_SEND_BUFFER)
            .handshake::<_, Bytes>(tls)
            .await
            .map_err(|e| format!("{}: HTTP/2: {e}", t.url.authority()))?;
        let driver = tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Conn {
            send,
            driver,
            tcp_ms,
            tls_ms,
        })
    })
    .await
}

fn request(method: http::Method, url: &Url) -> Res<http::Request<()>> {
    http::Request::builder()
        .method(method)
        .uri(url.text())
        .header("user-agent", concat!("wirespeed/", env!("CARGO_PKG_VERSION")))
        .body(())
        .map_err(|e| format!("{}: {e}", url.text()))
}

/// A GET on `send`: the body, up to `cap` bytes (more is an error).
async fn get(send: &SendRequest<Bytes>, url: &Url, cap: usize) -> Res<Vec<u8>> {
    within(&url.text(), async {
        let err = |e: h2::Error| format!("{}: {e}", url.text());
        let mut s = send.clone().ready().await.map_err(err)?;
        let (resp, _) = s.send_request(request(http::Method::GET, url)?, true).map_err(err)?;
        let resp = resp.await.map_err(err)?;
        if resp.status() != http::StatusCode::OK {
            return Err(format!("{} answered {}", url.text(), resp.status()));
        }
        let mut body = resp.into_body();
        let mut got = Vec::new();
        while let Some(d) = body.data().await {
            let d = d.map_err(err)?;
            let _ = body.flow_control().release_capacity(d.len());
            if got.len() + d.len() > cap {
                return Err(format!("{}: more than {cap} bytes", url.text()));
            }
            got.extend_from_slice(&d);
        }
        Ok(got)
    })
    .await
}

/// The configuration document.
async fn config(ctx: &Ctx, url: &Url) -> Res<NqUrls> {
    let t = target(url).await?;
    let c = connect(ctx, &t).await?;
    let body = get(&c.send, url, CONFIG_CAP).await;
    c.driver.abort();
    super::parse_config(&body?).map_err(|e| format!("{}: {e}", url.text()))
}

/// Endless GETs of the large object, counting the bytes.
async fn download(send: SendRequest<Bytes>, url: Url, bytes: Arc<AtomicU64>) -> Res<()> {
    let err = |e: h2::Error| format!("{}: {e}", url.text());
    loop {
        let mut s = send.clone().ready().await.map_err(err)?;
        let (resp, _) = s.send_request(request(http::Method::GET, &url)?, true).map_err(err)?;
        let resp = within(&url.text(), async { resp.await.map_err(err) }).await?;
        if resp.status() != http::StatusCode::OK {
            return Err(format!("{} answered {}", url.text(), resp.status()));
        }
        let mut body = resp.into_body();
        while let Some(d) = body.data().await {
            let d = d.map_err(err)?;
            let _ = body.flow_control().release_capacity(d.len());
            bytes.fetch_add(d.len() as u64, Relaxed);
        }
    }
}

/// Endless POSTs of an endless body, counting the bytes handed to HTTP/2
/// as the server's flow control allows.
async fn upload(send: SendRequest<Bytes>, url: Url, bytes: Arc<AtomicU64>) -> Res<()> {
    let err = |e: h2::Error| format!("{}: {e}", url.text());
    loop {
        let mut s = send.clone().ready().await.map_err(err)?;
        let req = request(http::Method::POST, &url)?;
        let (mut resp, mut body) = s.send_request(req, false).map_err(err)?;
        let pump = async {
            loop {
                body.reserve_capacity(ZEROS.len());
                match std::future::poll_fn(|cx| body.poll_capacity(cx)).await {
                    None => return Ok::<(), String>(()),
                    Some(Err(e)) => return Err(err(e)),
                    Some(Ok(n)) => {
                        let n = n.min(ZEROS.len());
                        body.send_data(Bytes::from_static(&ZEROS[..n]), false).map_err(err)?;
                        bytes.fetch_add(n as u64, Relaxed);
                    }
                }
            }
        };
        tokio::select! {
            r = &mut resp => {
                let r = r.map_err(err)?;
                if r.status() != http::StatusCode::OK {
                    return Err(format!("{} answered {}", url.text(), r.status()));
                }
            }
            r = pump => {
                r?;
                let r = within(&url.text(), async { resp.await.map_err(err) }).await?;
                if r.status() != http::StatusCode::OK {
                    return Err(format!("{} answered {}", url.text(), r.status()));
                }
            }
        }
    }
}

/// One load-generating connection: its request for self probes once
/// open, and its tasks.
struct Load {
    send: Arc<Mutex<Option<SendRequest<Bytes>>>>,
    task: JoinHandle<Res<()>>,
    driver: Arc<Mutex<Option<JoinHandle<()>>>>,
}

fn add_load(ctx: &Ctx, t: &Target, direction: Direction, bytes: &Arc<AtomicU64>) -> Load {
    let send = Arc::new(Mutex::new(None));
    let driver = Arc::new(Mutex::new(None));
    let (ctx, t, bytes, s2, d2) = (ctx.clone(), t.clone(), bytes.clone(), send.clone(), driver.clone());
    let task = tokio::spawn(async move {
        let c = connect(&ctx, &t).await?;
        if let Ok(mut g) = s2.lock() {
            *g = Some(c.send.clone());
        }
        if let Ok(mut g) = d2.lock() {
            *g = Some(c.driver);
        }
        match direction {
            Direction::Download => download(c.send, t.url.clone(), bytes).await,
            Direction::Upload => upload(c.send, t.url.clone(), bytes).await,
        }
    });
    Load { send, task, driver }
}

impl Load {
    fn stop(&self) {
        self.task.abort();
        if let Ok(mut g) = self.driver.lock()
            && let Some(d) = g.take()
        {
            d.abort();
        }
        if let Ok(mut g) = self.send.lock() {
            g.take();
        }
    }
}

/// A foreign probe: a new connection and one GET of the small object.
async fn foreign(ctx: Ctx, small: Target) -> Res<Sample> {
    let c = connect(&ctx, &small).await?;
    let start = Instant::now();
    let r = get(&c.send, &small.url, SMALL_CAP).await;
    let http = ms(start.elapsed());
    c.driver.abort();
    r?;
    Ok(Sample::Foreign {
        tcp: c.tcp_ms,
        tls: c.tls_ms,
        http,
    })
}

/// A self probe: a GET of the small object on a loaded connection.
async fn own(send: SendRequest<Bytes>, small: Url) -> Res<Sample> {
    let start = Instant::now();
    get(&send, &small, SMALL_CAP).await?;
    Ok(Sample::SelfProbe(ms(start.elapsed())))
}

/// One direction: load ramped up until goodput and responsiveness are
/// stable, or `-t`.
async fn direction(
    ctx: &Ctx,
    nq: &NqOptions,
    urls: &(Target, Target, Target),
    direction: Direction,
    signal: &AtomicUsize,
    tell: &mut dyn FnMut(Progress<'_>),
) -> Res<WayResult> {
    let (small, large, up) = urls;
    let load_target = match direction {
        Direction::Download => large,
        Direction::Upload => up,
    };
    let bytes = Arc::new(AtomicU64::new(0));
    let samples: Arc<Mutex<Vec<(Instant, Sample)>>> = Arc::new(Mutex::new(Vec::new()));
    let mut loads: Vec<Load> = Vec::new();
    let mut judge = Judge::default();
    let start = Instant::now();
    let every = Duration::from_secs(1) / PROBE_ROUNDS_PER_SECOND;
    // A second closes at the tick nearest its end (the first tick comes
    // at once, so counting ticks closed each second a tick early and a
    // `-t N` direction ran N + 0.9 s).
    let mut second_end = start + Duration::from_secs(1);
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut last_bytes, mut last_at, mut round, mut done) = (0u64, start, 0u64, false);
    let mut probes: Vec<JoinHandle<()>> = Vec::new();
    let mut lost = 0u32;
    let result = loop {
        tick.tick().await;
        if round == 0 {
            for _ in 0..FLOWS_PER_STEP.min(nq.max_flows) {
                loads.push(add_load(ctx, load_target, direction, &bytes));
            }
        }
        round += 1;
        probes.retain(|p| !p.is_finished());
        if let Some(i) = loads.iter().position(|l| l.task.is_finished()) {
            let l = loads.remove(i);
            l.stop();
            let why = match (&mut { l.task }).await {
                Ok(Err(e)) => e,
                _ => format!("{}: a load-generating connection ended", load_target.url.text()),
            };
            // A connection the path lost (its SYN dropped by a full
            // queue, a reset) is replaced, so the load keeps its number
            // of flows; only a path that keeps losing them ends the test.
            lost += 1;
            if lost > LOST_LOADS {
                break Err(format!("{why} ({lost} load-generating connections lost)"));
            }
            loads.push(add_load(ctx, load_target, direction, &bytes));
        }
        // One probe round: a foreign probe and a self probe on the next
        // loaded connection that is open.
        let sink = samples.clone();
        let (c, s) = (ctx.clone(), small.clone());
        probes.push(tokio::spawn(async move {
            if let Ok(x) = foreign(c, s).await
                && let Ok(mut v) = sink.lock()
            {
                v.push((Instant::now(), x));
            }
        }));
        let open: Vec<SendRequest<Bytes>> = loads
            .iter()
            .filter_map(|l| l.send.lock().ok().and_then(|g| g.clone()))
            .collect();
        if !open.is_empty() {
            let send = open[round as usize % open.len()].clone();
            let (sink, url) = (samples.clone(), small.url.clone());
            probes.push(tokio::spawn(async move {
                if let Ok(x) = own(send, url).await
                    && let Ok(mut v) = sink.lock()
                {
                    v.push((Instant::now(), x));
                }
            }));
        }
        let now = Instant::now();
        if now + every / 2 < second_end {
            continue;
        }
        second_end += Duration::from_secs(1);
        // A second: goodput, the last MAD seconds' probes, the verdict.
        let b = bytes.load(Relaxed);
        let goodput = (b - last_bytes) as f64 * 8.0 / now.duration_since(last_at).as_secs_f64().max(1e-3);
        (last_bytes, last_at) = (b, now);
        let window = Duration::from_secs(MAD as u64);
        let lat = samples.lock().ok().and_then(|v| {
            let recent: Vec<Sample> = v
                .iter()
                .filter(|(at, _)| now.duration_since(*at) <= window)
                .map(|(_, s)| *s)
                .collect();
            Latencies::of(&recent)
        });
        let verdict = judge.second(start.elapsed().as_secs_f64(), goodput, loads.len() as u32, lat);
        if let Some(s) = judge.seconds.last() {
            tell(Progress::Second(direction, s));
        }
        if verdict == Verdict::Done {
            done = true;
        }
        if done || start.elapsed() + every / 2 >= nq.time || signal.load(Relaxed) != 0 {
            break match lat {
                Some(lat) => Ok(WayResult {
                    direction,
                    throughput: judge.throughput(),
                    lat,
                    flows: loads.len() as u32,
                    seconds: start.elapsed().as_secs_f64(),
                    confidence: judge.confidence(done),
                    intervals: judge.seconds.clone(),
                }),
                None => Err(format!("{}: no probe succeeded", small.url.text())),
            };
        }
        if verdict == Verdict::MoreLoad {
            let room = nq.max_flows.saturating_sub(loads.len() as u32);
            for _ in 0..FLOWS_PER_STEP.min(room) {
                loads.push(add_load(ctx, load_target, direction, &bytes));
            }
        }
    };
    loads.iter().for_each(Load::stop);
    probes.iter().for_each(JoinHandle::abort);
    result
}

/// The idle path: [`IDLE_PROBES`] GETs of the small object, one after the
/// other, on one connection.
async fn idle(ctx: &Ctx, small: &Target) -> Res<Idle> {
    let c = connect(ctx, small).await?;
    let mut times = Vec::new();
    for _ in 0..IDLE_PROBES {
        let start = Instant::now();
        get(&c.send, &small.url, SMALL_CAP).await?;
        times.push(ms(start.elapsed()));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    c.driver.abort();
    Idle::of(&times).ok_or_else(|| "no idle probe".to_string())
}

/// The whole test: the configuration, the idle path, then download and
/// (without `-R`) upload.
pub(super) fn measure(
    nq: &NqOptions,
    url: &Url,
    signal: &Arc<AtomicUsize>,
    tell: &mut dyn FnMut(Progress<'_>),
) -> Res<(Idle, Vec<WayResult>)> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let ctx = Ctx {
        tls: TlsConnector::from(Arc::new(tls_config(nq)?)),
    };
    let r = rt.block_on(async {
        let urls = config(&ctx, url).await?;
        tell(Progress::Urls(&urls));
        let targets = (
            target(&urls.small).await?,
            target(&urls.large).await?,
            target(&urls.upload).await?,
        );
        let idle = idle(&ctx, &targets.0).await?;
        tell(Progress::Idle(&idle));
        let mut directions = vec![direction(&ctx, nq, &targets, Direction::Download, signal, tell).await?];
        tell(Progress::Ended(&directions[0]));
        if !nq.download_only && signal.load(Relaxed) == 0 {
            let up = direction(&ctx, nq, &targets, Direction::Upload, signal, tell).await?;
            tell(Progress::Ended(&up));
            directions.push(up);
        }
        Ok((idle, directions))
    });
    rt.shutdown_timeout(Duration::from_millis(200));
    r
}

mod verify {
    //! Which server certificates are trusted.

    use super::*;
    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::pki_types::pem::PemObject;
    use rustls::{DigitallySignedStruct, SignatureScheme};

    /// Where systems keep their CA bundle.
    const BUNDLES: &[&str] = &[
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/pki/tls/certs/ca-bundle.crt",
        "/etc/ssl/ca-bundle.pem",
        "/etc/ssl/cert.pem",
        "/usr/local/share/certs/ca-root-nss.crt",
    ];

    /// The trust anchors: `--cacert`'s certificates (also pinned: a
    /// self-signed server certificate given there is trusted as itself),
    /// else `$SSL_CERT_FILE` or the system's bundle.
    pub(super) fn roots(
        cacert: Option<&std::path::Path>,
    ) -> Res<(rustls::RootCertStore, Vec<CertificateDer<'static>>)> {
        let mut roots = rustls::RootCertStore::empty();
        let load = |p: &std::path::Path| -> Res<Vec<CertificateDer<'static>>> {
            let certs: Vec<_> = CertificateDer::pem_file_iter(p)
                .map_err(|e| format!("{}: {e}", p.display()))?
                .collect::<Result<_, _>>()
                .map_err(|e| format!("{}: {e}", p.display()))?;
            Ok(certs)
        };
        if let Some(p) = cacert {
            let certs = load(p)?;
            if certs.is_empty() {
                return Err(format!("{}: no PEM certificate in it", p.display()));
            }
            let (added, _) = roots.add_parsable_certificates(certs.clone());
            if added == 0 {
                return Err(format!("{}: no usable certificate in it", p.display()));
            }
            return Ok((roots, certs));
        }
        let env = std::env::var_os("SSL_CERT_FILE").map(std::path::PathBuf::from);
        let found = env
            .into_iter()
            .chain(BUNDLES.iter().map(std::path::PathBuf::from))
            .find(|p| p.is_file());
        if let Some(p) = found {
            roots.add_parsable_certificates(load(&p)?);
        }
        Ok((roots, Vec::new()))
    }

    /// A TLS failure in one line, with what to do about an untrusted
    /// certificate.
    pub(super) fn words(url: &Url, e: &std::io::Error) -> String {
        let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
        match inner {
            Some(rustls::Error::InvalidCertificate(c)) => format!(
                "{}: the server's certificate is not trusted ({c}); give --cacert FILE or --insecure",
                url.authority()
            ),
            Some(other) => format!("{}: TLS: {other}", url.authority()),
            None => format!("{}: TLS: {e}", url.authority()),
        }
    }

    /// The web PKI's verification, plus `--cacert`'s certificates taken
    /// as themselves.
    #[derive(Debug)]
    pub(super) struct Pinned {
        pub(super) inner: Arc<rustls::client::WebPkiServerVerifier>,
        pub(super) pinned: Vec<CertificateDer<'static>>,
    }

    impl ServerCertVerifier for Pinned {
        fn verify_server_cert(
            &self,
            end_entity: &CertificateDer<'_>,
            intermediates: &[CertificateDer<'_>],
            server_name: &ServerName<'_>,
            ocsp: &[u8],
            now: UnixTime,
        ) -> Result<ServerCertVerified, rustls::Error> {
            match self
                .inner
                .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
            {
                Ok(v) => Ok(v),
                Err(e) if self.pinned.iter().any(|p| p.as_ref() == end_entity.as_ref()) => {
                    let parsed = rustls::server::ParsedCertificate::try_from(end_entity).map_err(|_| e)?;
                    rustls::client::verify_server_name(&parsed, server_name)?;
                    Ok(ServerCertVerified::assertion())
                }
                Err(e) => Err(e),
            }
        }
        fn verify_tls12_signature(
            &self,
            m: &[u8],
            c: &CertificateDer<'_>,
            d: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            self.inner.verify_tls12_signature(m, c, d)
        }
        fn verify_tls13_signature(
            &self,
            m: &[u8],
            c: &CertificateDer<'_>,
            d: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            self.inner.verify_tls13_signature(m, c, d)
        }
        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.inner.supported_verify_schemes()
        }
    }
}
