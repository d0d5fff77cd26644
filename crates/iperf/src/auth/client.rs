//! The client's side: its credentials and the password.

use super::{MAX_PASSWORD, PASSWORD_ENV, Padding, PublicKey, client_err};
use wirespeed_core::config::ClientAuth;
use wirespeed_core::error::errno_text as io_words;
use wirespeed_core::error::{Code, Error};
use wirespeed_proto::iperf3::auth::{FieldError, base64_encode, check_field, token_text};

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
    match wirespeed_sys::term::read_secret("Password: ", MAX_PASSWORD, cancelled) {
        Ok(Some(p)) => String::from_utf8(p).map_err(|_| client_err("the password is not valid UTF-8")),
        Ok(None) => Err(Error::interrupted(Code::NONE, "client", 0)),
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
