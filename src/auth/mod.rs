//! Authentication compatible with iperf3's (`--username`,
//! `--rsa-public-key-path`, `--rsa-private-key-path`,
//! `--authorized-users-path`, `--time-skew-threshold`,
//! `--use-pkcs1-padding`): key files, the password, and the RSA around the
//! token text of [`crate::proto::iperf3::auth`].
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

pub mod pem;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use aws_lc_rs::rsa::{
    OAEP_SHA1_MGF1SHA1, OaepPrivateDecryptingKey, OaepPublicEncryptingKey, Pkcs1PrivateDecryptingKey,
    Pkcs1PublicEncryptingKey, PrivateDecryptingKey, PublicEncryptingKey,
};
use aws_lc_rs::{digest, hmac, rand};

use crate::config::{ClientAuth, ServerOptions};
use crate::error::{Code, Error, Kind};
use crate::proto::iperf3::auth::{
    Credentials, FieldError, Lookup, base64_decode, base64_encode, check_field, hex, lookup, parse_token, salted,
    token_text, within_skew,
};

/// The variable a client takes its password from before asking.
pub const PASSWORD_ENV: &str = "IPERF3_PASSWORD";

/// Longest password read from the terminal.
const MAX_PASSWORD: usize = 4096;

/// Largest key file read.
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

fn client_err(msg: impl Into<String>) -> Error {
    Error::param_msg(Code::SETCLIENTAUTH, msg)
}

fn server_err(msg: impl Into<String>) -> Error {
    Error::param_msg(Code::SETSERVERAUTH, msg)
}

fn read_capped(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut data = Vec::new();
    std::fs::File::open(path)?.take(cap + 1).read_to_end(&mut data)?;
    if data.len() as u64 > cap {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "file too large"));
    }
    Ok(data)
}

fn io_words(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => crate::error::strerror(n),
        None => e.to_string(),
    }
}

fn rejected_words(e: &aws_lc_rs::error::KeyRejected) -> &'static str {
    match e.description_() {
        "TooSmall" => "the key is smaller than 2048 bits (wirespeed accepts 2048 to 8192)",
        "TooLarge" => "the key is larger than 8192 bits (wirespeed accepts 2048 to 8192)",
        "WrongAlgorithm" => "not an RSA key",
        _ => "not a valid RSA key",
    }
}

/// An RSA public key that encrypts tokens.
pub struct PublicKey {
    key: PublicEncryptingKey,
}

impl PublicKey {
    /// Reads a public key from the contents of a key file: PEM `PUBLIC KEY`
    /// (what `openssl rsa -pubout` writes) or `RSA PUBLIC KEY`, or DER
    /// SubjectPublicKeyInfo. The error says what is wrong, in words.
    pub fn from_file_contents(data: &[u8]) -> Result<PublicKey, String> {
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
    pub fn max_plaintext(&self, padding: Padding) -> usize {
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
}

impl PrivateKey {
    /// Reads a private key from the contents of a key file: PEM `PRIVATE
    /// KEY` (PKCS#8, what OpenSSL 3 writes) or `RSA PRIVATE KEY` (PKCS#1),
    /// or DER of either. Password-protected keys are refused by name.
    pub fn from_file_contents(data: &[u8]) -> Result<PrivateKey, String> {
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
        Ok(PrivateKey {
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
}

/// What a client needs to authenticate: who, the password, the server's
/// key and the padding.
pub struct ClientCredentials {
    user: String,
    password: String,
    key: PublicKey,
    padding: Padding,
}

impl ClientCredentials {
    /// Builds the credentials from fixed parts, checking that they can
    /// travel in a token.
    pub fn new(user: &str, password: &str, key: PublicKey, padding: Padding) -> Result<ClientCredentials, Error> {
        match check_field(user) {
            Ok(()) => {}
            Err(FieldError::Empty) => return Err(client_err("the user name is empty")),
            Err(FieldError::Whitespace) => {
                return Err(client_err(
                    "the user name has white space, which iperf3's token format cannot carry",
                ));
            }
        }
        match check_field(password) {
            Ok(()) => {}
            Err(FieldError::Empty) => return Err(client_err("the password is empty")),
            Err(FieldError::Whitespace) => {
                return Err(client_err(
                    "the password has white space, which iperf3's token format cannot carry",
                ));
            }
        }
        let c = ClientCredentials {
            user: user.to_string(),
            password: password.to_string(),
            key,
            padding,
        };
        // The longest time a token can carry, so a too-long password is
        // found now rather than at the server.
        let longest = token_text(&c.user, &c.password, i64::MIN);
        if longest.len() > c.key.max_plaintext(padding) {
            return Err(client_err(format!(
                "the user name and password are too long for a {}-bit RSA key",
                c.key.bits()
            )));
        }
        Ok(c)
    }

    /// The client's credentials as configured, or `None` without
    /// `--username`: loads the public key and takes the password from
    /// `IPERF3_PASSWORD`, else asks on the terminal. `cancelled` is polled
    /// while waiting for the password (a signal arrived).
    pub fn from_config(auth: &ClientAuth, cancelled: &dyn Fn() -> bool) -> Result<Option<ClientCredentials>, Error> {
        let (Some(user), Some(path)) = (&auth.username, &auth.public_key) else {
            return Ok(None);
        };
        let key = PublicKey::load(path)?;
        let password = match &auth.password {
            Some(p) => p.0.clone(),
            None => password(cancelled)?,
        };
        let padding = if auth.use_pkcs1_padding {
            Padding::Pkcs1
        } else {
            Padding::Oaep
        };
        ClientCredentials::new(user, &password, key, padding).map(Some)
    }

    /// The padding tokens get.
    pub fn padding(&self) -> Padding {
        self.padding
    }

    /// A fresh `authtoken` stamped with `now` (Unix seconds).
    pub fn token(&self, now: i64) -> Result<String, Error> {
        let text = token_text(&self.user, &self.password, now);
        let block = self.key.encrypt(text.as_bytes(), self.padding).map_err(client_err)?;
        Ok(base64_encode(&block))
    }
}

/// The password: `IPERF3_PASSWORD` if set, else asked on the terminal
/// ("Password: ", echo off).
pub fn password(cancelled: &dyn Fn() -> bool) -> Result<String, Error> {
    if let Some(v) = std::env::var_os(PASSWORD_ENV) {
        return v
            .into_string()
            .map_err(|_| client_err(format!("{PASSWORD_ENV} is not valid UTF-8")));
    }
    match crate::sys::term::read_secret("Password: ", MAX_PASSWORD, cancelled) {
        Ok(Some(p)) => String::from_utf8(p).map_err(|_| client_err("the password is not valid UTF-8")),
        Ok(None) => Err(Error {
            kind: Kind::Interrupt,
            ..Error::msg(Code::NONE, "the client has terminated")
        }),
        Err(e) => Err(client_err(format!(
            "no password: set {PASSWORD_ENV}, or run on a terminal to be asked ({})",
            io_words(&e)
        ))),
    }
}

/// Unix time in seconds.
pub fn unix_now() -> i64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// Why a server refused a client's token. Every kind gets the same answer
/// on the wire (iperf3's "test authorization failed"); the kinds are for
/// the server's debug log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The parameters had no `authtoken`.
    NoToken,
    /// Longer than any key's ciphertext in base64, or not base64.
    Malformed,
    /// Did not decrypt to a token (wrong key, wrong padding, noise).
    Undecryptable,
    /// The time in the token is too far from the server's clock.
    Skew {
        /// User named in the token.
        user: String,
        /// The token's time.
        ts: i64,
    },
    /// The users file could not be read.
    UsersFile {
        /// User named in the token.
        user: String,
        /// The token's time.
        ts: i64,
        /// The read error.
        why: String,
    },
    /// No line of the users file names the user.
    UnknownUser {
        /// User named in the token.
        user: String,
        /// The token's time.
        ts: i64,
    },
    /// The user is known; the password is not theirs.
    WrongPassword {
        /// User named in the token.
        user: String,
        /// The token's time.
        ts: i64,
    },
    /// This very token was accepted before.
    Replayed {
        /// User named in the token.
        user: String,
        /// The token's time.
        ts: i64,
    },
}

/// A user name from the network, fit for a log line: control characters
/// (a terminal escape, say) become `?`.
fn printable(user: &str) -> String {
    user.chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let user = match self {
            Refusal::Skew { user, .. }
            | Refusal::UsersFile { user, .. }
            | Refusal::UnknownUser { user, .. }
            | Refusal::WrongPassword { user, .. }
            | Refusal::Replayed { user, .. } => printable(user),
            Refusal::NoToken | Refusal::Malformed | Refusal::Undecryptable => String::new(),
        };
        match self {
            Refusal::NoToken => write!(f, "Authentication failed: the client sent no token"),
            Refusal::Malformed => write!(f, "Authentication failed: the token is not base64 of one RSA block"),
            Refusal::Undecryptable => write!(
                f,
                "Authentication failed: the token does not decrypt with this key and padding"
            ),
            Refusal::Skew { ts, .. } => write!(
                f,
                "Authentication failed for user '{user}' ts {ts}: time skew over the threshold"
            ),
            Refusal::UsersFile { ts, why, .. } => write!(
                f,
                "Authentication failed for user '{user}' ts {ts}: cannot read the authorized users file: {why}"
            ),
            Refusal::UnknownUser { ts, .. } => {
                write!(f, "Authentication failed for user '{user}' ts {ts}: unknown user")
            }
            Refusal::WrongPassword { ts, .. } => {
                write!(f, "Authentication failed for user '{user}' ts {ts}: wrong password")
            }
            Refusal::Replayed { ts, .. } => write!(
                f,
                "Authentication failed for user '{user}' ts {ts}: this token was already used"
            ),
        }
    }
}

/// Tokens accepted recently, so the same token cannot be accepted twice.
/// (iperf3 takes a replayed token as long as its time is within the skew
/// threshold; a genuine client makes a new one, with new random padding,
/// for every test.)
struct ReplayGuard {
    /// SHA-256 of the ciphertext → the server time after which its
    /// timestamp is refused anyway.
    seen: HashMap<[u8; 32], i64>,
}

/// Most remembered tokens; past it the oldest are forgotten.
const REPLAY_MEMORY: usize = 100_000;

impl ReplayGuard {
    /// Records `id`, valid until `until`; false if it was recorded before.
    fn first_use(&mut self, id: [u8; 32], until: i64, now: i64) -> bool {
        if self.seen.contains_key(&id) {
            return false;
        }
        if self.seen.len() >= REPLAY_MEMORY {
            self.seen.retain(|_, u| *u >= now);
        }
        if self.seen.len() >= REPLAY_MEMORY
            && let Some(oldest) = self.seen.iter().min_by_key(|(_, u)| **u).map(|(k, _)| *k)
        {
            self.seen.remove(&oldest);
        }
        self.seen.insert(id, until);
        true
    }
}

/// What a server needs to check tokens.
pub struct ServerAuth {
    key: PrivateKey,
    users: PathBuf,
    skew: u64,
    accept_pkcs1: bool,
    reject_key: hmac::Key,
    replay: Mutex<ReplayGuard>,
}

impl ServerAuth {
    /// A checker with the given key, users file, skew threshold (seconds)
    /// and padding policy.
    pub fn new(key: PrivateKey, users: PathBuf, skew: u64, accept_pkcs1: bool) -> Result<ServerAuth, Error> {
        let reject_key = hmac::Key::generate(hmac::HMAC_SHA256, &rand::SystemRandom::new())
            .map_err(|_| server_err("the system random number generator failed"))?;
        Ok(ServerAuth {
            key,
            users,
            skew,
            accept_pkcs1,
            reject_key,
            replay: Mutex::new(ReplayGuard { seen: HashMap::new() }),
        })
    }

    /// The server's checker as configured, or `None` without
    /// `--rsa-private-key-path`. Loads the key and checks that the users
    /// file can be read (as iperf3 3.16+ does at startup).
    pub fn from_config(opts: &ServerOptions) -> Result<Option<ServerAuth>, Error> {
        let (Some(key), Some(users)) = (&opts.rsa_private_key, &opts.authorized_users) else {
            return Ok(None);
        };
        let key = PrivateKey::load(key)?;
        check_users_file(users)?;
        ServerAuth::new(
            key,
            users.clone(),
            opts.time_skew_threshold.as_secs().max(1),
            opts.use_pkcs1_padding,
        )
        .map(Some)
    }

    /// Decrypts a ciphertext of the key's length. With PKCS#1 v1.5 allowed,
    /// a block whose padding is wrong yields bytes derived from it with a
    /// secret instead of an error (implicit rejection), so the steps after
    /// this one take the same path for it as for a block that decrypted to
    /// noise.
    fn decrypt(&self, block: &[u8]) -> Option<Vec<u8>> {
        let mut out = vec![0u8; self.key.bytes];
        if let Ok(p) = self.key.oaep.decrypt(&OAEP_SHA1_MGF1SHA1, block, &mut out, None) {
            return Some(p.to_vec());
        }
        if !self.accept_pkcs1 {
            return None;
        }
        let stand_in = hmac::sign(&self.reject_key, block);
        match self.key.pkcs1.decrypt(block, &mut out) {
            Ok(p) => Some(p.to_vec()),
            Err(_) => Some(stand_in.as_ref().to_vec()),
        }
    }

    /// Checks the `authtoken` of a client's parameters at server time
    /// `now`. On success returns who it is and the token's time.
    pub fn check(&self, token: Option<&str>, now: i64) -> Result<(String, i64), Refusal> {
        let token = token.ok_or(Refusal::NoToken)?;
        // Bounded before decoding: base64 of one block of this key, plus
        // room for line breaks some encoders add.
        let longest = self.key.bytes.div_ceil(3) * 4;
        if token.len() > longest + longest / 32 + 4 {
            return Err(Refusal::Malformed);
        }
        let block = base64_decode(token).ok_or(Refusal::Malformed)?;
        if block.len() != self.key.bytes {
            return Err(Refusal::Malformed);
        }
        let plain = self.decrypt(&block).ok_or(Refusal::Undecryptable)?;
        let Credentials { user, password, ts } = parse_token(&plain).ok_or(Refusal::Undecryptable)?;
        if !within_skew(now, ts, self.skew) {
            return Err(Refusal::Skew { user, ts });
        }
        let text = read_capped(&self.users, MAX_USERS_FILE).map_err(|e| Refusal::UsersFile {
            user: user.clone(),
            ts,
            why: io_words(&e),
        })?;
        let text = String::from_utf8_lossy(&text);
        let hash = hex(digest::digest(&digest::SHA256, salted(&user, &password).as_bytes()).as_ref());
        match lookup(&text, &user, &hash) {
            Lookup::Match => {}
            Lookup::WrongPassword => return Err(Refusal::WrongPassword { user, ts }),
            Lookup::UnknownUser => return Err(Refusal::UnknownUser { user, ts }),
        }
        let mut id = [0u8; 32];
        id.copy_from_slice(digest::digest(&digest::SHA256, &block).as_ref());
        let until = ts.saturating_add(self.skew as i64).saturating_add(1);
        let fresh = self
            .replay
            .lock()
            .map(|mut g| g.first_use(id, until, now))
            .unwrap_or(false);
        if !fresh {
            return Err(Refusal::Replayed { user, ts });
        }
        Ok((user, ts))
    }
}

impl ServerAuth {
    /// Checks a client's token now, as the server's parameter exchange
    /// does: a refusal is iperf3's "test authorization failed" (what the
    /// client is told), its reason goes to the `-d` log.
    pub fn authorize(&self, token: Option<&str>) -> Result<(), Error> {
        match self.check(token, unix_now()) {
            Ok((user, ts)) => {
                crate::debug!(1, "Authentication succeeded for user '{}' ts {ts}", printable(&user));
                Ok(())
            }
            Err(why) => {
                crate::debug!(1, "{why}");
                Err(Error::new(Code::AUTHTEST))
            }
        }
    }
}

/// Checks that the authorized users file can be read (iperf3's "cannot
/// access authorized users file").
pub fn check_users_file(path: &Path) -> Result<(), Error> {
    read_capped(path, MAX_USERS_FILE).map(|_| ()).map_err(|e| Error {
        kind: Kind::Parameter,
        detail: Some(format!(
            "cannot access authorized users file {}: {}",
            path.display(),
            io_words(&e)
        )),
        ..Error::new(Code::SERVERAUTHUSERS)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der, PublicKeyX509Der};
    use aws_lc_rs::rsa::KeySize;
    use std::sync::OnceLock;

    /// One generated 2048-bit key for all tests (PKCS#8 DER, SPKI DER).
    fn keypair() -> &'static (Vec<u8>, Vec<u8>) {
        static K: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
        K.get_or_init(|| {
            let k = PrivateDecryptingKey::generate(KeySize::Rsa2048).unwrap();
            let p8 = AsDer::<Pkcs8V1Der>::as_der(&k).unwrap().as_ref().to_vec();
            let spki = AsDer::<PublicKeyX509Der>::as_der(&k.public_key())
                .unwrap()
                .as_ref()
                .to_vec();
            (p8, spki)
        })
    }

    fn pem(label: &str, der: &[u8]) -> String {
        let b = base64_encode(der);
        let body: Vec<&str> = b
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        format!("-----BEGIN {label}-----\n{}\n-----END {label}-----\n", body.join("\n"))
    }

    struct Dir(PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    fn tempdir(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("ws-auth-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn users_line(user: &str, password: &str) -> String {
        let h = hex(digest::digest(&digest::SHA256, salted(user, password).as_bytes()).as_ref());
        format!("{user},{h}\n")
    }

    fn server(dir: &Dir, accept_pkcs1: bool) -> ServerAuth {
        let users = dir.0.join("users.csv");
        std::fs::write(&users, format!("# test users\n{}", users_line("mario", "rossi"))).unwrap();
        let key = PrivateKey::from_file_contents(pem("PRIVATE KEY", &keypair().0).as_bytes()).unwrap();
        ServerAuth::new(key, users, 10, accept_pkcs1).unwrap()
    }

    fn client(password: &str, padding: Padding) -> ClientCredentials {
        let key = PublicKey::from_file_contents(pem("PUBLIC KEY", &keypair().1).as_bytes()).unwrap();
        ClientCredentials::new("mario", password, key, padding).unwrap()
    }

    #[test]
    fn oaep_token_is_accepted_once() {
        let d = tempdir("oaep");
        let s = server(&d, false);
        let t = client("rossi", Padding::Oaep).token(1000).unwrap();
        assert_eq!(t.len(), 344, "base64 of a 2048-bit block");
        assert_eq!(s.check(Some(&t), 1005), Ok(("mario".into(), 1000)));
        assert_eq!(
            s.check(Some(&t), 1005),
            Err(Refusal::Replayed {
                user: "mario".into(),
                ts: 1000
            })
        );
        // A new token for the same test is fine: the padding is random.
        let t2 = client("rossi", Padding::Oaep).token(1000).unwrap();
        assert_ne!(t, t2);
        assert!(s.check(Some(&t2), 1000).is_ok());
    }

    #[test]
    fn pkcs1_tokens_need_the_servers_consent() {
        let d = tempdir("pkcs1");
        let t = client("rossi", Padding::Pkcs1).token(1000).unwrap();
        assert_eq!(server(&d, false).check(Some(&t), 1000), Err(Refusal::Undecryptable));
        let s = server(&d, true);
        assert!(s.check(Some(&t), 1000).is_ok());
        // OAEP still works on a server that also takes PKCS#1.
        let t = client("rossi", Padding::Oaep).token(1000).unwrap();
        assert!(s.check(Some(&t), 1000).is_ok());
    }

    #[test]
    fn wrong_password_unknown_user_and_skew_are_refused() {
        let d = tempdir("refusals");
        let s = server(&d, false);
        let wrong = client("luigi", Padding::Oaep).token(1000).unwrap();
        assert_eq!(
            s.check(Some(&wrong), 1000),
            Err(Refusal::WrongPassword {
                user: "mario".into(),
                ts: 1000
            })
        );
        let key = PublicKey::from_file_contents(pem("PUBLIC KEY", &keypair().1).as_bytes()).unwrap();
        let peach = ClientCredentials::new("peach", "rossi", key, Padding::Oaep)
            .unwrap()
            .token(1000)
            .unwrap();
        assert!(matches!(s.check(Some(&peach), 1000), Err(Refusal::UnknownUser { .. })));
        let old = client("rossi", Padding::Oaep).token(1000).unwrap();
        assert!(matches!(s.check(Some(&old), 1011), Err(Refusal::Skew { ts: 1000, .. })));
        let future = client("rossi", Padding::Oaep).token(1000).unwrap();
        assert!(matches!(s.check(Some(&future), 989), Err(Refusal::Skew { .. })));
        assert_eq!(s.check(None, 1000), Err(Refusal::NoToken));
    }

    #[test]
    fn hostile_tokens_are_refused_without_panicking() {
        let d = tempdir("hostile");
        for accept_pkcs1 in [false, true] {
            let s = server(&d, accept_pkcs1);
            let huge = "A".repeat(1 << 20);
            for t in [
                "",
                "not base64!",
                huge.as_str(),
                "AAAA",
                &base64_encode(&[0u8; 256]),
                &base64_encode(&[0xffu8; 256]),
                &base64_encode(&[7u8; 255]),
            ] {
                let r = s.check(Some(t), 1000);
                assert!(
                    matches!(r, Err(Refusal::Malformed | Refusal::Undecryptable)),
                    "{accept_pkcs1} {:?}: {r:?}",
                    &t[..t.len().min(20)]
                );
            }
        }
    }

    #[test]
    fn users_file_read_error_is_a_refusal() {
        let d = tempdir("nofile");
        let s = server(&d, false);
        std::fs::remove_file(d.0.join("users.csv")).unwrap();
        let t = client("rossi", Padding::Oaep).token(1000).unwrap();
        assert!(matches!(s.check(Some(&t), 1000), Err(Refusal::UsersFile { .. })));
        assert_eq!(
            check_users_file(&d.0.join("users.csv")).unwrap_err().code,
            Code::SERVERAUTHUSERS
        );
    }

    #[test]
    fn key_files_in_every_shape_openssl_writes_load() {
        let (p8, spki) = keypair();
        assert!(PrivateKey::from_file_contents(pem("PRIVATE KEY", p8).as_bytes()).is_ok());
        assert!(PrivateKey::from_file_contents(p8).is_ok(), "PKCS#8 DER");
        assert!(PublicKey::from_file_contents(pem("PUBLIC KEY", spki).as_bytes()).is_ok());
        assert!(PublicKey::from_file_contents(spki).is_ok(), "SPKI DER");
        // PKCS#1 forms are the inner parts of the PKCS#8 / SPKI wrappers.
        let p1 = &p8[26..];
        assert_eq!(pem::pkcs1_private_to_pkcs8(p1), *p8);
        assert!(PrivateKey::from_file_contents(pem("RSA PRIVATE KEY", p1).as_bytes()).is_ok());
        let rsa_pub = &spki[24..];
        assert_eq!(pem::pkcs1_public_to_spki(rsa_pub), *spki);
        assert_eq!(
            PublicKey::from_file_contents(pem("RSA PUBLIC KEY", rsa_pub).as_bytes())
                .unwrap()
                .bits(),
            2048
        );
    }

    #[test]
    fn key_loading_errors_say_what_is_wrong() {
        let (p8, spki) = keypair();
        let err = |r: Result<PrivateKey, String>| r.err().unwrap();
        assert!(
            err(PrivateKey::from_file_contents(
                pem("ENCRYPTED PRIVATE KEY", p8).as_bytes()
            ))
            .contains("password-protected")
        );
        let traditional = pem("RSA PRIVATE KEY", &p8[26..]).replace(
            "-----BEGIN RSA PRIVATE KEY-----\n",
            "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0011\n\n",
        );
        assert!(err(PrivateKey::from_file_contents(traditional.as_bytes())).contains("password-protected"));
        assert!(err(PrivateKey::from_file_contents(pem("PUBLIC KEY", spki).as_bytes())).contains("no PEM private key"));
        assert!(err(PrivateKey::from_file_contents(b"hello")).contains("not a valid RSA key"));
        let pub_err = |r: Result<PublicKey, String>| r.err().unwrap();
        assert!(
            pub_err(PublicKey::from_file_contents(pem("PRIVATE KEY", p8).as_bytes())).contains("holds a private key")
        );
        assert!(pub_err(PublicKey::from_file_contents(b"")).contains("not a valid RSA key"));
        let e = PublicKey::load(Path::new("/nonexistent/ws.pem")).err().unwrap();
        assert_eq!(e.code, Code::SETCLIENTAUTH);
        assert!(e.text().contains("No such file or directory"), "{}", e.text());
        let e = PrivateKey::load(Path::new("/nonexistent/ws.pem")).err().unwrap();
        assert_eq!(e.code, Code::SETSERVERAUTH);
    }

    #[test]
    fn credentials_that_cannot_travel_are_refused() {
        let key = || PublicKey::from_file_contents(pem("PUBLIC KEY", &keypair().1).as_bytes()).unwrap();
        let e = |u: &str, p: &str| ClientCredentials::new(u, p, key(), Padding::Oaep).err().unwrap().text();
        assert!(e("ma rio", "x").contains("user name has white space"));
        assert!(e("mario", "").contains("password is empty"));
        assert!(e("mario", "a b").contains("password has white space"));
        assert!(e("mario", &"x".repeat(200)).contains("too long for a 2048-bit RSA key"));
        // PKCS#1 carries a little more than OAEP.
        let p = "x".repeat(180);
        assert!(ClientCredentials::new("mario", &p, key(), Padding::Oaep).is_err());
        assert!(ClientCredentials::new("mario", &p, key(), Padding::Pkcs1).is_ok());
    }

    #[test]
    fn refusals_log_user_names_without_control_characters() {
        let r = Refusal::WrongPassword {
            user: "ma\x1b[2Jrio".into(),
            ts: 7,
        };
        assert_eq!(
            r.to_string(),
            "Authentication failed for user 'ma?[2Jrio' ts 7: wrong password"
        );
    }

    #[test]
    fn replay_memory_is_bounded() {
        let mut g = ReplayGuard { seen: HashMap::new() };
        for i in 0..REPLAY_MEMORY + 10 {
            let mut id = [0u8; 32];
            id[..8].copy_from_slice(&(i as u64).to_le_bytes());
            assert!(g.first_use(id, 100 + i as i64, 50));
        }
        assert_eq!(g.seen.len(), REPLAY_MEMORY);
        let mut last = [0u8; 32];
        last[..8].copy_from_slice(&((REPLAY_MEMORY + 9) as u64).to_le_bytes());
        assert!(!g.first_use(last, 0, 50));
    }
}
