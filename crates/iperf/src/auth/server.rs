//! The server's side: decrypting and checking a client's token against
//! the users file, refusing replays and skewed clocks.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{MAX_USERS_FILE, PrivateKey, read_capped, unix_now};
use wirespeed_core::config::ServerOptions;
use wirespeed_core::error::errno_text as io_words;
use wirespeed_core::error::{Code, Error, Kind};
use wirespeed_proto::iperf3::auth::{
    Credentials, Lookup, base64_decode, hex, lookup, parse_token, salted, within_skew,
};

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
pub(super) struct ReplayGuard {
    /// SHA-256 of the ciphertext → the server time after which its
    /// timestamp is refused anyway.
    pub(super) seen: HashMap<[u8; 32], i64>,
}

/// Most remembered tokens; past it the oldest are forgotten.
pub(super) const REPLAY_MEMORY: usize = 100_000;

impl ReplayGuard {
    /// Records `id`, valid until `until`; false if it was recorded before.
    pub(super) fn first_use(&mut self, id: [u8; 32], until: i64, now: i64) -> bool {
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
    replay: Mutex<ReplayGuard>,
}

impl ServerAuth {
    /// A checker with the given key, users file, skew threshold (seconds)
    /// and padding policy.
    pub fn new(key: PrivateKey, users: PathBuf, skew: u64, accept_pkcs1: bool) -> Result<ServerAuth, Error> {
        Ok(ServerAuth {
            key,
            users,
            skew,
            accept_pkcs1,
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

    /// Checks the `authtoken` of a client's parameters at server time
    /// `now`. On success returns who it is and the token's time.
    pub fn check(&self, token: Option<&str>, now: i64) -> Result<(String, i64), Refusal> {
        let token = token.ok_or(Refusal::NoToken)?;
        // Bounded before decoding: base64 of one block of this key, plus
        // room for line breaks some encoders add.
        let longest = self.key.bytes().div_ceil(3) * 4;
        if token.len() > longest + longest / 32 + 4 {
            return Err(Refusal::Malformed);
        }
        let block = base64_decode(token).ok_or(Refusal::Malformed)?;
        if block.len() != self.key.bytes() {
            return Err(Refusal::Malformed);
        }
        let plain = self
            .key
            .decrypt(&block, self.accept_pkcs1)
            .ok_or(Refusal::Undecryptable)?;
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
        let hash = hex(&self.key.sha256(salted(&user, &password).as_bytes()));
        match lookup(&text, &user, &hash) {
            Lookup::Match => {}
            Lookup::WrongPassword => return Err(Refusal::WrongPassword { user, ts }),
            Lookup::UnknownUser => return Err(Refusal::UnknownUser { user, ts }),
        }
        let id = self.key.sha256(&block);
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
    pub(crate) fn authorize(&self, token: Option<&str>) -> Result<(), Error> {
        match self.check(token, unix_now()) {
            Ok((user, ts)) => {
                wirespeed_core::debug!(1, "Authentication succeeded for user '{}' ts {ts}", printable(&user));
                Ok(())
            }
            Err(why) => {
                wirespeed_core::debug!(1, "{why}");
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
