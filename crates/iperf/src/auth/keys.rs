//! RSA keys from PEM files: the client's public key encrypts the token,
//! the server's private key decrypts it.

use std::path::Path;

use aws_lc_rs::error::KeyRejected;
use aws_lc_rs::rsa::{
    OAEP_SHA1_MGF1SHA1, OaepPrivateDecryptingKey, OaepPublicEncryptingKey, Pkcs1PrivateDecryptingKey,
    Pkcs1PublicEncryptingKey, PrivateDecryptingKey, PublicEncryptingKey,
};
use aws_lc_rs::{digest, hmac, rand};

use super::{MAX_KEY_FILE, Padding, client_err, pem, read_capped, server_err};
use wirespeed_core::error::Error;
use wirespeed_core::error::errno_text as io_words;

/// An RSA public key that encrypts tokens.
pub struct PublicKey {
    key: PublicEncryptingKey,
}

impl PublicKey {
    /// Reads a public key from the contents of a key file: PEM `PUBLIC KEY`
    /// (what `openssl rsa -pubout` writes) or `RSA PUBLIC KEY`, or DER
    /// SubjectPublicKeyInfo. The error says what is wrong, in words.
    pub(crate) fn from_file_contents(data: &[u8]) -> Result<PublicKey, String> {
        let text = String::from_utf8_lossy(data);
        let der = if text.contains("-----BEGIN ") {
            let blocks = pem::blocks(&text);
            let found = blocks
                .iter()
                .find(|b| b.label == "PUBLIC KEY" || b.label == "RSA PUBLIC KEY");
            match found {
                Some(b) => {
                    let der = b.der.clone().ok_or("its PEM body is not valid base64")?;
                    if b.label == "RSA PUBLIC KEY" {
                        pem::pkcs1_public_to_spki(&der)
                    } else {
                        der
                    }
                }
                None if blocks.iter().any(|b| b.label.contains("PRIVATE KEY")) => {
                    return Err("it holds a private key; a client needs only the public key \
                                (openssl rsa -in PRIVATE.pem -pubout -out PUBLIC.pem)"
                        .into());
                }
                None => return Err("it holds no PEM public key (-----BEGIN PUBLIC KEY-----)".into()),
            }
        } else {
            data.to_vec()
        };
        PublicEncryptingKey::from_der(&der)
            .map(|key| PublicKey { key })
            .map_err(|e| rejected_words(&e).to_string())
    }

    /// Loads `--rsa-public-key-path`; errors are iperf3's
    /// "you must specify ... a valid RSA public key" parameter error, with
    /// the reason.
    pub fn load(path: &Path) -> Result<PublicKey, Error> {
        let data = read_capped(path, MAX_KEY_FILE).map_err(|e| {
            client_err(format!(
                "cannot read RSA public key {}: {}",
                path.display(),
                io_words(&e)
            ))
        })?;
        PublicKey::from_file_contents(&data)
            .map_err(|why| client_err(format!("{} is not a usable RSA public key: {why}", path.display())))
    }

    /// The key size in bits.
    pub fn bits(&self) -> usize {
        self.key.key_size_bits()
    }

    /// Most plaintext bytes one block can carry with `padding`.
    pub(crate) fn max_plaintext(&self, padding: Padding) -> usize {
        let k = self.key.key_size_bytes();
        match padding {
            Padding::Oaep => k.saturating_sub(2 * 20 + 2),
            Padding::Pkcs1 => k.saturating_sub(11),
        }
    }

    /// Encrypts one block.
    pub fn encrypt(&self, plain: &[u8], padding: Padding) -> Result<Vec<u8>, String> {
        if plain.len() > self.max_plaintext(padding) {
            return Err(format!(
                "the user name and password are too long for a {}-bit RSA key",
                self.bits()
            ));
        }
        let mut out = vec![0u8; self.key.key_size_bytes()];
        let n = match padding {
            Padding::Oaep => {
                let k = OaepPublicEncryptingKey::new(self.key.clone()).map_err(|_| "RSA-OAEP is unavailable")?;
                k.encrypt(&OAEP_SHA1_MGF1SHA1, plain, &mut out, None)
                    .map_err(|_| "RSA encryption failed")?
                    .len()
            }
            Padding::Pkcs1 => {
                let k = Pkcs1PublicEncryptingKey::new(self.key.clone()).map_err(|_| "RSA PKCS#1 is unavailable")?;
                k.encrypt(plain, &mut out).map_err(|_| "RSA encryption failed")?.len()
            }
        };
        out.truncate(n);
        Ok(out)
    }
}

/// An RSA private key that decrypts tokens.
pub struct PrivateKey {
    oaep: OaepPrivateDecryptingKey,
    pkcs1: Pkcs1PrivateDecryptingKey,
    bytes: usize,
    /// The per-process secret of implicit rejection.
    reject_key: hmac::Key,
}

impl PrivateKey {
    /// Reads a private key from the contents of a key file: PEM `PRIVATE
    /// KEY` (PKCS#8, what OpenSSL 3 writes) or `RSA PRIVATE KEY` (PKCS#1),
    /// or DER of either. Password-protected keys are refused by name.
    pub(crate) fn from_file_contents(data: &[u8]) -> Result<PrivateKey, String> {
        const ENCRYPTED: &str = "it is password-protected; wirespeed, like iperf3, needs an unencrypted key \
                                 (openssl pkey -in KEY.pem -out PLAIN.pem)";
        let text = String::from_utf8_lossy(data);
        let pkcs8 = if text.contains("-----BEGIN ") {
            let blocks = pem::blocks(&text);
            if blocks.iter().any(|b| b.label == "ENCRYPTED PRIVATE KEY") {
                return Err(ENCRYPTED.into());
            }
            let Some(b) = blocks
                .iter()
                .find(|b| b.label == "PRIVATE KEY" || b.label == "RSA PRIVATE KEY")
            else {
                return Err("it holds no PEM private key (-----BEGIN PRIVATE KEY----- \
                            or -----BEGIN RSA PRIVATE KEY-----)"
                    .into());
            };
            if b.encrypted {
                return Err(ENCRYPTED.into());
            }
            let der = b.der.clone().ok_or("its PEM body is not valid base64")?;
            if b.label == "RSA PRIVATE KEY" {
                pem::pkcs1_private_to_pkcs8(&der)
            } else {
                der
            }
        } else if PrivateDecryptingKey::from_pkcs8(data).is_ok() {
            data.to_vec()
        } else {
            pem::pkcs1_private_to_pkcs8(data)
        };
        let key = PrivateDecryptingKey::from_pkcs8(&pkcs8).map_err(|e| rejected_words(&e).to_string())?;
        let bytes = key.key_size_bytes();
        let reject_key = hmac::Key::generate(hmac::HMAC_SHA256, &rand::SystemRandom::new())
            .map_err(|_| "the system random number generator failed")?;
        Ok(PrivateKey {
            reject_key,
            oaep: OaepPrivateDecryptingKey::new(key.clone()).map_err(|_| "RSA-OAEP is unavailable")?,
            pkcs1: Pkcs1PrivateDecryptingKey::new(key).map_err(|_| "RSA PKCS#1 is unavailable")?,
            bytes,
        })
    }

    /// Loads `--rsa-private-key-path`; errors are iperf3's "you must
    /// specify a path to a valid RSA private key ..." parameter error, with
    /// the reason.
    pub fn load(path: &Path) -> Result<PrivateKey, Error> {
        let data = read_capped(path, MAX_KEY_FILE).map_err(|e| {
            server_err(format!(
                "cannot read RSA private key {}: {}",
                path.display(),
                io_words(&e)
            ))
        })?;
        PrivateKey::from_file_contents(&data)
            .map_err(|why| server_err(format!("{} is not a usable RSA private key: {why}", path.display())))
    }

    /// The key size in bytes (the length of every ciphertext).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Decrypts a ciphertext of the key's length. With PKCS#1 v1.5 allowed,
    /// a block whose padding is wrong yields bytes derived from it with a
    /// secret instead of an error (implicit rejection), so the steps after
    /// this one take the same path for it as for a block that decrypted to
    /// noise.
    pub(super) fn decrypt(&self, block: &[u8], accept_pkcs1: bool) -> Option<Vec<u8>> {
        let mut out = vec![0u8; self.bytes];
        if let Ok(p) = self.oaep.decrypt(&OAEP_SHA1_MGF1SHA1, block, &mut out, None) {
            return Some(p.to_vec());
        }
        if !accept_pkcs1 {
            return None;
        }
        let stand_in = hmac::sign(&self.reject_key, block);
        match self.pkcs1.decrypt(block, &mut out) {
            Ok(p) => Some(p.to_vec()),
            Err(_) => Some(stand_in.as_ref().to_vec()),
        }
    }

    /// SHA-256 of `data`, from the same library as the key (the server's
    /// password hashes and replay memory need it only where a key is).
    pub(super) fn sha256(&self, data: &[u8]) -> [u8; 32] {
        let mut out = [0u8; 32];
        out.copy_from_slice(digest::digest(&digest::SHA256, data).as_ref());
        out
    }
}

fn rejected_words(e: &KeyRejected) -> &'static str {
    match e.description_() {
        "TooSmall" => "the key is smaller than 2048 bits (wirespeed accepts 2048 to 8192)",
        "TooLarge" => "the key is larger than 8192 bits (wirespeed accepts 2048 to 8192)",
        "WrongAlgorithm" => "not an RSA key",
        _ => "not a valid RSA key",
    }
}
