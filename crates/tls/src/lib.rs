//! The TLS pieces wirespeed's QUIC ends (`wirespeed-quic`) and HTTPS ends
//! (`wirespeed-rpm-http`) share, on rustls with AWS-LC:
//!
//! - [`provider`]: the one crypto provider;
//! - a server's [`Identity`]: from PEM files ([`load_pem`], `--tls-cert`
//!   and `--tls-key`) or self-signed ([`self_signed`], ECDSA P-256, which
//!   every peer offers: picoquic's client offers no Ed25519);
//! - [`fingerprint`]: a certificate's SHA-256, as a server prints it for
//!   a client to pin;
//! - [`AnyCertificate`]: a client's verifier that trusts any certificate
//!   but still checks that the server holds its key (the handshake's
//!   signature). A measurement of a path, not of a name: the perf clients
//!   of quic-go and picoquic do the same, and `--insecure` asks for it.

use std::path::Path;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use wirespeed_core::error::{Code, Error};

/// A certificate chain and its key.
pub type Identity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// The crypto provider (AWS-LC).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// Reads a certificate chain and its key from PEM files; an error names
/// the option (`--tls-cert`, `--tls-key`) and the file.
pub fn load_pem(cert: &Path, key: &Path) -> Result<Identity, Error> {
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

/// A self-signed ECDSA P-256 certificate for `localhost` and `names`;
/// `what` (the option that asked) names it in an error.
pub fn self_signed(names: &[String], what: &str) -> Result<Identity, Error> {
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
/// writes it (upper-case hex pairs joined by colons).
pub fn fingerprint(cert: &CertificateDer<'_>) -> String {
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, cert.as_ref());
    d.as_ref()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Trusts any certificate, but checks that the server holds its key.
#[derive(Debug)]
pub struct AnyCertificate(Arc<CryptoProvider>);

impl AnyCertificate {
    /// The verifier, checking signatures with `provider`'s algorithms.
    pub fn new(provider: Arc<CryptoProvider>) -> Arc<AnyCertificate> {
        Arc::new(AnyCertificate(provider))
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_signed_identity_has_one_certificate_and_a_fingerprint() {
        let (chain, _) = self_signed(&["127.0.0.1".into()], "--test").unwrap();
        assert_eq!(chain.len(), 1);
        let f = fingerprint(&chain[0]);
        assert_eq!(f.len(), 32 * 3 - 1, "{f}");
        assert!(
            f.split(':')
                .all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_hexdigit()))
        );
    }

    #[test]
    fn a_missing_pem_file_names_its_option() {
        let e = load_pem(Path::new("/nonexistent/c.pem"), Path::new("/nonexistent/k.pem")).unwrap_err();
        assert!(e.to_string().contains("--tls-cert /nonexistent/c.pem"), "{e}");
    }
}
