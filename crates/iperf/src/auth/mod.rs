//! Authentication compatible with iperf3's (`--username`,
//! `--rsa-public-key-path`, `--rsa-private-key-path`,
//! `--authorized-users-path`, `--time-skew-threshold`,
//! `--use-pkcs1-padding`): key files, the password, and the RSA around the
//! token text of [`wirespeed_proto::iperf3::auth`].
//!
//! Padding. iperf3 3.17 and newer encrypt the token with RSA-OAEP (SHA-1,
//! MGF1-SHA-1, no label); 3.16 and older, Debian 12's 3.12 among them, with
//! PKCS#1 v1.5, which 3.17+ accepts only when started with
//! `--use-pkcs1-padding`. wirespeed does the same: its client sends OAEP
//! unless given `--use-pkcs1-padding` (needed against a 3.16-or-older
//! server); its server accepts OAEP, and PKCS#1 v1.5 as well when given
//! `--use-pkcs1-padding` (needed for 3.16-or-older clients).
//!
//! All RSA is AWS-LC's (through `aws-lc-rs`), whose private-key operations
//! are constant-time and blinded. A server that accepts PKCS#1 v1.5 also
//! rejects implicitly: a token whose padding is wrong is replaced by bytes
//! derived from it with a per-process secret and goes through the same
//! steps as one that decrypted to noise, so the answer and its timing do not
//! tell a Bleichenbacher-style attacker which it was.
//!
//! Every call into AWS-LC is in `keys.rs`. A build without the `rsa`
//! feature (for targets with no C cross-compiler for AWS-LC) has
//! `keys_absent.rs` instead, whose keys refuse to load with one line.

pub mod pem;

mod client;
#[cfg(feature = "rsa")]
mod keys;
#[cfg(not(feature = "rsa"))]
#[path = "keys_absent.rs"]
mod keys;
mod server;
#[cfg(all(test, feature = "rsa"))]
mod tests;

use std::path::Path;

pub use client::{ClientCredentials, password, unix_now};
pub use keys::{PrivateKey, PublicKey};
pub use server::{Refusal, ServerAuth, check_users_file};

use wirespeed_core::error::{Code, Error};

/// The variable a client takes its password from before asking.
pub(crate) const PASSWORD_ENV: &str = "IPERF3_PASSWORD";

/// Longest password read from the terminal.
const MAX_PASSWORD: usize = 4096;

/// Largest key file read.
#[cfg(feature = "rsa")]
const MAX_KEY_FILE: u64 = 1 << 20;

/// Largest users file read.
const MAX_USERS_FILE: u64 = 64 << 20;

/// How a token is padded before RSA encryption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Padding {
    /// RSA-OAEP, SHA-1 and MGF1-SHA-1, no label (iperf3 3.17+).
    Oaep,
    /// PKCS#1 v1.5 (iperf3 3.16 and older).
    Pkcs1,
}

pub(crate) fn client_err(msg: impl Into<String>) -> Error {
    Error::param_msg(Code::SETCLIENTAUTH, msg)
}

pub(crate) fn server_err(msg: impl Into<String>) -> Error {
    Error::param_msg(Code::SETSERVERAUTH, msg)
}

pub(crate) fn read_capped(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut data = Vec::new();
    std::fs::File::open(path)?.take(cap + 1).read_to_end(&mut data)?;
    if data.len() as u64 > cap {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "file too large"));
    }
    Ok(data)
}
