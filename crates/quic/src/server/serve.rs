//! The perf server's socket, TLS and streams (quinn on a current-thread
//! tokio runtime).

use std::net::{IpAddr, Ipv6Addr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;
use quinn::VarInt;
use tokio::time::timeout;

use super::{CONNECTION_WINDOW, HANDSHAKE, IDLE, LIFETIME, MAX_CONNECTIONS, MAX_STREAMS, STALL, STREAM_WINDOW, Served};
use crate::tls;
use crate::wire::{REQUEST_LEN, parse_request};
use wirespeed_core::config::TestConfig;
use wirespeed_core::error::{Code, Error};

/// What a response is cut from: views of it, never copies.
const CHUNK: usize = 64 * 1024;
static ZEROS: [u8; CHUNK] = [0; CHUNK];

/// Application error codes the server closes or resets with.
const STALLED: u32 = 1;
const PAST_LIFETIME: u32 = 2;

/// The bound socket and the QUIC/TLS configuration, before serving.
pub struct Endpoint {
    socket: UdpSocket,
    config: quinn::ServerConfig,
    fingerprint: String,
    self_signed: bool,
}

/// The server running on its thread (until the process ends).
pub struct Serving;

impl Endpoint {
    /// Binds `--quic-perf-listen` (UDP) and loads `--tls-cert`/`--tls-key`,
    /// or makes a self-signed certificate for the address and `localhost`.
    pub fn bind(cfg: &TestConfig) -> Result<Endpoint, Error> {
        let spec = cfg.server.quic_perf_listen.as_deref().unwrap_or("");
        let (host, port) = super::listen_address(spec)?;
        let failed = |why: String| {
            Error::msg(
                Code::LISTEN,
                format!("unable to start the QUIC perf server on {spec}: {why}"),
            )
        };
        let addr = match &host {
            None => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port),
            Some(h) => (h.as_str(), port)
                .to_socket_addrs()
                .map_err(|e| failed(e.to_string()))?
                .next()
                .ok_or_else(|| failed("no address".into()))?,
        };
        let socket =
            crate::net::bind_udp(addr, host.is_none()).map_err(|e| failed(wirespeed_core::error::errno_text(&e)))?;
        let id = match (&cfg.server.tls_cert, &cfg.server.tls_key) {
            (Some(c), Some(k)) => tls::load_pem(c, k)?,
            _ => {
                let names: Vec<String> = host.iter().cloned().collect();
                tls::make_self_signed(&names)?
            }
        };
        let self_signed = cfg.server.tls_cert.is_none();
        let fingerprint = tls::fingerprint(&id.0[0]);
        let crypto = tls::server_crypto(id)?;
        let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        config.transport_config(Arc::new(transport()));
        // Handshakes waiting to be taken, and what their first datagrams
        // may hold meanwhile.
        config.max_incoming(MAX_CONNECTIONS * 2);
        config.incoming_buffer_size(64 * 1024);
        config.incoming_buffer_size_total(4 << 20);
        Ok(Endpoint {
            socket,
            config,
            fingerprint,
            self_signed,
        })
    }

    /// The line a server says at start: where it answers and the
    /// certificate's SHA-256 fingerprint.
    pub fn announcement(&self) -> String {
        let at = self.socket.local_addr().map(|a| a.to_string()).unwrap_or_default();
        let whose = if self.self_signed {
            "self-signed certificate"
        } else {
            "certificate"
        };
        format!(
            "QUIC perf server (ALPN perf) on UDP {at}, {whose} SHA-256 {}\n",
            self.fingerprint
        )
    }

    /// Serves on a thread of its own, from now until the process ends,
    /// counting what it serves in `served`.
    pub fn serve(self, served: Arc<Served>) -> Result<Serving, Error> {
        let failed = |e: std::io::Error| Error::msg(Code::LISTEN, format!("unable to start the QUIC perf server: {e}"));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(failed)?;
        let endpoint = {
            let _in = rt.enter();
            quinn::Endpoint::new(
                quinn::EndpointConfig::default(),
                Some(self.config),
                self.socket,
                Arc::new(quinn::TokioRuntime),
            )
            .map_err(failed)?
        };
        std::thread::Builder::new()
            .name("ws-quic-perf".into())
            .spawn(move || rt.block_on(accept_loop(endpoint, served)))
            .map_err(|e| Error::io(Code::PTHREADCREATE, &e))?;
        Ok(Serving)
    }
}

/// The server's transport limits (see the module).
fn transport() -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    t.max_concurrent_bidi_streams(VarInt::from_u32(MAX_STREAMS));
    t.max_concurrent_uni_streams(VarInt::from_u32(0));
    t.max_idle_timeout(Some(IDLE.try_into().expect("idle timeout fits")));
    t.stream_receive_window(VarInt::from_u32(STREAM_WINDOW));
    t.receive_window(VarInt::from_u32(CONNECTION_WINDOW));
    t.send_window(u64::from(CONNECTION_WINDOW));
    t.datagram_receive_buffer_size(None);
    t
}

/// A place among the connections open at once, given back when dropped.
struct Slot(Arc<Served>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Relaxed);
    }
}

async fn accept_loop(endpoint: quinn::Endpoint, served: Arc<Served>) {
    while let Some(incoming) = endpoint.accept().await {
        if served.open.load(Relaxed) >= MAX_CONNECTIONS as u64 {
            Served::add(&served.refused, 1);
            incoming.refuse();
            continue;
        }
        served.open.fetch_add(1, Relaxed);
        let slot = Slot(served.clone());
        tokio::spawn(connection(incoming, slot));
    }
}

/// One client: its handshake within [`HANDSHAKE`], then its streams until
/// it closes, idles out or reaches [`LIFETIME`].
async fn connection(incoming: quinn::Incoming, slot: Slot) {
    let served = slot.0.clone();
    let conn = match incoming.accept() {
        Ok(connecting) => match timeout(HANDSHAKE, connecting).await {
            Ok(Ok(c)) => c,
            _ => {
                Served::add(&served.handshake_failures, 1);
                return;
            }
        },
        Err(_) => {
            Served::add(&served.handshake_failures, 1);
            return;
        }
    };
    Served::add(&served.connections, 1);
    let streams = async {
        while let Ok((send, recv)) = conn.accept_bi().await {
            tokio::spawn(stream(send, recv, served.clone()));
        }
    };
    if timeout(LIFETIME, streams).await.is_err() {
        conn.close(VarInt::from_u32(PAST_LIFETIME), b"connection lifetime reached");
    }
    drop(slot);
}

/// One stream: the request, the upload to its FIN, the response and ours.
async fn stream(mut send: quinn::SendStream, mut recv: quinn::RecvStream, served: Arc<Served>) {
    let cut = |send: &mut quinn::SendStream, recv: &mut quinn::RecvStream| {
        let _ = recv.stop(VarInt::from_u32(STALLED));
        let _ = send.reset(VarInt::from_u32(STALLED));
        Served::add(&served.streams_cut, 1);
    };
    let mut head = [0u8; REQUEST_LEN];
    match timeout(STALL, recv.read_exact(&mut head)).await {
        Ok(Ok(())) => {}
        Ok(Err(_)) => {
            Served::add(&served.streams_cut, 1);
            return;
        }
        Err(_) => return cut(&mut send, &mut recv),
    }
    let mut left = parse_request(head);
    loop {
        match timeout(STALL, recv.read_chunk(CHUNK, false)).await {
            Ok(Ok(Some(c))) => Served::add(&served.received, c.bytes.len() as u64),
            Ok(Ok(None)) => break,
            Ok(Err(_)) => {
                Served::add(&served.streams_cut, 1);
                return;
            }
            Err(_) => return cut(&mut send, &mut recv),
        }
    }
    while left > 0 {
        let n = left.min(CHUNK as u64) as usize;
        match timeout(STALL, send.write_chunk(Bytes::from_static(&ZEROS[..n]))).await {
            Ok(Ok(())) => {
                left -= n as u64;
                Served::add(&served.sent, n as u64);
            }
            Ok(Err(_)) => {
                Served::add(&served.streams_cut, 1);
                return;
            }
            Err(_) => return cut(&mut send, &mut recv),
        }
    }
    let _ = send.finish();
    Served::add(&served.streams, 1);
    // Keep the stream until the client has it all (or gives up), so the
    // connection is not torn down under it.
    let _ = timeout(IDLE, send.stopped()).await;
}
