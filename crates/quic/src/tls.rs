//! TLS 1.3 for both roles of a QUIC end: the server's configuration (its
//! certificate loaded from PEM files or made self-signed) and the
//! client's, which checks the handshake's signature but trusts any
//! certificate, as the perf clients of quic-go and picoquic do: the test
//! measures a path, the server's name is not what it proves. The pieces
//! are `wirespeed-tls`'s, shared with the HTTPS ends.

use wirespeed_core::error::{Code, Error};
use wirespeed_tls::provider;

use crate::wire::ALPN;

pub(crate) use wirespeed_tls::{Identity, fingerprint, load_pem};

/// A self-signed ECDSA P-256 certificate for `names` and `localhost`.
pub(crate) fn make_self_signed(names: &[String]) -> Result<Identity, Error> {
    wirespeed_tls::self_signed(names, "--quic-perf-listen")
}

/// The same; `what` names it in an error.
pub(crate) fn make_self_signed_for(names: &[String], what: &str) -> Result<Identity, Error> {
    wirespeed_tls::self_signed(names, what)
}

/// The server's TLS: 1.3 only, ALPN `perf` only.
pub(crate) fn server_crypto(id: Identity) -> Result<quinn::crypto::rustls::QuicServerConfig, Error> {
    server_crypto_for(id, ALPN, "--quic-perf-listen")
}

/// The server's TLS for `alpn` alone; `what` names it in a refusal.
pub(crate) fn server_crypto_for(
    id: Identity,
    alpn: &[u8],
    what: &str,
) -> Result<quinn::crypto::rustls::QuicServerConfig, Error> {
    let bad = |e: String| Error::param_msg(Code::NONE, format!("{what}: the certificate cannot be used: {e}"));
    let mut c = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| bad(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(id.0, id.1)
        .map_err(|e| bad(e.to_string()))?;
    c.alpn_protocols = vec![alpn.to_vec()];
    // No 0-RTT: a replayed request would be served twice.
    c.max_early_data_size = 0;
    quinn::crypto::rustls::QuicServerConfig::try_from(c).map_err(|e| bad(e.to_string()))
}

/// The client's TLS: 1.3, ALPN `perf`, any certificate (see the module).
pub(crate) fn client_crypto() -> Result<quinn::crypto::rustls::QuicClientConfig, Error> {
    client_crypto_for(ALPN, "--quic-perf")
}

/// The client's TLS for `alpn`; `what` names it in an error.
pub(crate) fn client_crypto_for(alpn: &[u8], what: &str) -> Result<quinn::crypto::rustls::QuicClientConfig, Error> {
    let p = provider();
    let bad = |e: String| Error::msg(Code::NONE, format!("{what}: TLS: {e}"));
    let mut c = rustls::ClientConfig::builder_with_provider(p.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| bad(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(wirespeed_tls::AnyCertificate::new(p))
        .with_no_client_auth();
    c.alpn_protocols = vec![alpn.to_vec()];
    quinn::crypto::rustls::QuicClientConfig::try_from(c).map_err(|e| bad(e.to_string()))
}
