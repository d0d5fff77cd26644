//! RSA keys in a build without the `rsa` feature (no AWS-LC): every key
//! refuses to load with one line, so `--rsa-public-key-path` and
//! `--rsa-private-key-path` are refused rather than ignored. The types are
//! uninhabited: nothing can hold a key that was never loaded.
// Without the `rsa` feature the key types are shells.
#![cfg_attr(not(feature = "rsa"), allow(dead_code))]

use std::path::Path;

use super::{Padding, client_err, server_err};
use wirespeed_core::error::Error;

const ABSENT: &str = "this wirespeed was built without RSA authentication (the `rsa` feature)";

/// An RSA public key; none exists in this build.
pub enum PublicKey {}

impl PublicKey {
    /// Always refuses: there is no RSA in this build.
    pub(crate) fn from_file_contents(_data: &[u8]) -> Result<PublicKey, String> {
        Err(ABSENT.into())
    }

    /// Always refuses, naming the file.
    pub fn load(path: &Path) -> Result<PublicKey, Error> {
        Err(client_err(format!("{} cannot be used: {ABSENT}", path.display())))
    }

    /// Never called: no key exists.
    pub fn bits(&self) -> usize {
        match *self {}
    }

    /// Never called: no key exists.
    pub(crate) fn max_plaintext(&self, _padding: Padding) -> usize {
        match *self {}
    }

    /// Never called: no key exists.
    pub fn encrypt(&self, _plain: &[u8], _padding: Padding) -> Result<Vec<u8>, String> {
        match *self {}
    }
}

/// An RSA private key; none exists in this build.
pub enum PrivateKey {}

impl PrivateKey {
    /// Always refuses: there is no RSA in this build.
    pub(crate) fn from_file_contents(_data: &[u8]) -> Result<PrivateKey, String> {
        Err(ABSENT.into())
    }

    /// Always refuses, naming the file.
    pub fn load(path: &Path) -> Result<PrivateKey, Error> {
        Err(server_err(format!("{} cannot be used: {ABSENT}", path.display())))
    }

    /// Never called: no key exists.
    pub fn bytes(&self) -> usize {
        match *self {}
    }

    pub(super) fn decrypt(&self, _block: &[u8], _accept_pkcs1: bool) -> Option<Vec<u8>> {
        match *self {}
    }

    pub(super) fn sha256(&self, _data: &[u8]) -> [u8; 32] {
        match *self {}
    }
}
