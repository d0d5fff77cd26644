//! The responsiveness ("RPM") server a networkQuality client measures
//! against (`--rpm-listen`), as the network-quality/server project's
//! SERVER_SPEC describes it: over TLS 1.3, HTTP/2 (ALPN `h2`) or
//! HTTP/1.1, a config document at `/.well-known/nq` and `/config`, a
//! 1-byte `/small`, an endless `/large` and a `/slurp` (`/upload`) that
//! reads and discards what is posted.
//!
//! It runs beside the iperf ports on a thread of its own with a small
//! tokio runtime (`serve.rs`), so the rest of the program stays
//! thread-based. Binding and loading the certificate happen at start, so
//! a busy address or a bad file is one line and exit 1; serving starts
//! after a daemon detaches. A build without the `rpm-server` feature
//! refuses `--rpm-listen` in one line.

use crate::config::TestConfig;
use crate::error::{Code, Error};

#[cfg(feature = "rpm-server")]
mod serve;

/// Checks the options among themselves: `--tls-cert` and `--tls-key`
/// go together, and only with `--rpm-listen`.
pub fn check_options(cfg: &TestConfig) -> Result<(), Error> {
    let s = &cfg.server;
    let refuse = |m: &str| Err(Error::param_msg(Code::NONE, m));
    match (&s.rpm_listen, &s.tls_cert, &s.tls_key) {
        (None, Some(_), _) | (None, _, Some(_)) => {
            refuse("--tls-cert and --tls-key are the certificate of --rpm-listen: give --rpm-listen too")
        }
        (Some(_), Some(_), None) => refuse("--tls-cert needs --tls-key (the certificate's private key, PEM)"),
        (Some(_), None, Some(_)) => refuse("--tls-key needs --tls-cert (the certificate chain, PEM)"),
        _ => Ok(()),
    }
}

#[cfg(feature = "rpm-server")]
pub use serve::{Endpoint, Serving};

/// Without the `rpm-server` feature: the option is refused at start.
#[cfg(not(feature = "rpm-server"))]
pub struct Endpoint;

/// Without the `rpm-server` feature nothing is ever served.
#[cfg(not(feature = "rpm-server"))]
pub struct Serving;

#[cfg(not(feature = "rpm-server"))]
impl Endpoint {
    /// Refuses: this build has no RPM server.
    pub fn bind(_cfg: &TestConfig) -> Result<Endpoint, Error> {
        Err(Error::param_msg(
            Code::NONE,
            "--rpm-listen: this wirespeed was built without the RPM server (feature rpm-server)",
        ))
    }

    /// Never reached: `bind` refuses.
    pub fn announcement(&self) -> String {
        String::new()
    }

    /// Never reached: `bind` refuses.
    pub fn serve(self) -> Result<Serving, Error> {
        Ok(Serving)
    }
}
