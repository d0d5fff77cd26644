//! TLS 1.3 for both roles (rustls on AWS-LC): the server's certificate,
//! loaded from PEM files or made self-signed (ECDSA P-256, which every
//! perf client offers: picoquic's offers no Ed25519), and the client's
//! verifier, which checks the handshake's signature but trusts any
//! certificate, as the perf clients of quic-go and picoquic do: the test
//! measures a path, the server's name is not what it proves.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use wirespeed_core::error::{Code, Error};

use crate::wire::ALPN;

/// A certificate chain and its key.
pub(crate) type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// Reads the certificate chain and key files (PEM).
pub(crate) fn load_pem(cert: &Path, key: &Path) -> Result<Identity, Error> {
    let bad = |opt: &str, p: &Path, why: String| Error::param_msg(Code::NONE, format!("{opt} {}: {why}", p.display()));
    let why = |e: pem::Error, what: &str| match e {
        pem::Error::Io(e) => wirespeed_core::error::errno_text(&e),
        pem::Error::NoItemsFound => format!("no {what} in it"),
        e => format!("not a PEM file ({e})"),
    };
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| bad("--tls-cert", cert, why(e, "certificate")))?;
    if chain.is_empty() {
        return Err(bad("--tls-cert", cert, "no certificate (PEM CERTIFICATE) in it".into()));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| bad("--tls-key", key, why(e, "private key")))?;
    Ok((chain, key))
}

/// A self-signed ECDSA P-256 certificate for `names` and `localhost`.
pub(crate) fn make_self_signed(names: &[String]) -> Result<Identity, Error> {
    make_self_signed_for(names, "--quic-perf-listen")
}

/// The same; `what` names it in an error.
pub(crate) fn make_self_signed_for(names: &[String], what: &str) -> Result<Identity, Error> {
    let mut all = vec!["localhost".to_string()];
    all.extend(names.iter().cloned());
    all.dedup();
    let made = rcgen::generate_simple_self_signed(all).map_err(|e| {
        Error::msg(
            Code::NONE,
            format!("{what}: cannot make a self-signed certificate: {e}"),
        )
    })?;
    let key = PrivateKeyDer::Pkcs8(made.signing_key.serialize_der().into());
    Ok((vec![made.cert.der().clone()], key))
}

/// SHA-256 of a certificate, as `openssl x509 -fingerprint -sha256`
/// writes it.
pub(crate) fn fingerprint(cert: &CertificateDer<'_>) -> String {
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, cert.as_ref());
    d.as_ref()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
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
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(p)))
        .with_no_client_auth();
    c.alpn_protocols = vec![alpn.to_vec()];
    quinn::crypto::rustls::QuicClientConfig::try_from(c).map_err(|e| bad(e.to_string()))
}

/// Trusts any certificate, but checks that the server holds its key.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
