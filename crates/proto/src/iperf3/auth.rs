//! iperf3's authentication token and authorized-users file, without I/O or
//! cryptography (`docs/protocols.md`, iperf3: authentication).
//!
//! A client sends `authtoken` in its parameters: the standard base64 of one
//! RSA block that encrypts the text `user: U\npwd:  P\nts:   T` (two spaces
//! after `pwd:`, three after `ts:`; `T` the client's Unix time). The server
//! decrypts it, refuses a `T` more than `--time-skew-threshold` seconds from
//! its own clock, and looks for the line `U,H` in its users file, `H` being
//! the lower-case hex SHA-256 of the string `{U}P`.
//!
//! The RSA part lives in the tool's `auth`; this module is the text around it.

/// The fields a token carries.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// User name.
    pub user: String,
    /// Password, in clear.
    pub password: String,
    /// The client's Unix time when it made the token.
    pub ts: i64,
}

impl std::fmt::Debug for Credentials {
    // Never print a password, not even in a test failure.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("ts", &self.ts)
            .finish_non_exhaustive()
    }
}

/// Why a user name or password cannot travel in a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldError {
    /// Empty.
    Empty,
    /// Contains white space, which ends a field in iperf3's token format.
    Whitespace,
}

/// Checks that `s` can be a token field: the server splits the token at
/// white space, so a field that has some would reach it cut in two.
pub fn check_field(s: &str) -> Result<(), FieldError> {
    if s.is_empty() {
        Err(FieldError::Empty)
    } else if s.bytes().any(is_c_space) {
        Err(FieldError::Whitespace)
    } else {
        Ok(())
    }
}

/// The token's plaintext, exactly as iperf3 writes it.
pub fn token_text(user: &str, password: &str, ts: i64) -> String {
    format!("user: {user}\npwd:  {password}\nts:   {ts}")
}

/// C's `isspace` in the "C" locale (what `sscanf` skips).
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// A cursor over the plaintext that reads it the way iperf3's `sscanf`
/// format `"user: %s\npwd:  %s\nts:   %ld"` does: white space in the format
/// matches any run of white space (or none), `%s` is a run of non-space.
struct Scan<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn skip_space(&mut self) {
        while self.s.get(self.at).copied().is_some_and(is_c_space) {
            self.at += 1;
        }
    }

    fn literal(&mut self, lit: &str) -> Option<()> {
        self.skip_space();
        let end = self.at.checked_add(lit.len())?;
        (self.s.get(self.at..end)? == lit.as_bytes()).then(|| self.at = end)
    }

    fn word(&mut self) -> Option<&'a [u8]> {
        self.skip_space();
        let start = self.at;
        while self.s.get(self.at).is_some_and(|b| !is_c_space(*b) && *b != 0) {
            self.at += 1;
        }
        (self.at > start).then(|| &self.s[start..self.at])
    }
}

/// Reads a decrypted token. `None` if it is not one (a wrong key or padding
/// decrypts to noise). Trailing white space and NULs are allowed; anything
/// else after the time is not.
pub fn parse_token(plain: &[u8]) -> Option<Credentials> {
    let mut sc = Scan { s: plain, at: 0 };
    sc.literal("user:")?;
    let user = sc.word()?;
    sc.literal("pwd:")?;
    let password = sc.word()?;
    sc.literal("ts:")?;
    let ts = sc.word()?;
    if !plain[sc.at..].iter().all(|b| is_c_space(*b) || *b == 0) {
        return None;
    }
    let ts_text = std::str::from_utf8(ts).ok()?;
    let digits = ts_text.strip_prefix(['-', '+']).unwrap_or(ts_text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(Credentials {
        user: String::from_utf8(user.to_vec()).ok()?,
        password: String::from_utf8(password.to_vec()).ok()?,
        ts: ts_text.parse().ok()?,
    })
}

/// Whether a token made at `ts` is acceptable at `now` (both Unix seconds):
/// iperf3 refuses a difference of more than `threshold` either way.
pub fn within_skew(now: i64, ts: i64, threshold: u64) -> bool {
    (i128::from(now) - i128::from(ts)).unsigned_abs() <= u128::from(threshold)
}

/// The string whose SHA-256 the users file holds for `user`/`password`.
pub fn salted(user: &str, password: &str) -> String {
    format!("{{{user}}}{password}")
}

/// Lower-case hex of `bytes` (how the users file writes a hash).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One account line of an authorized-users file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserLine<'a> {
    /// 1-based line number.
    pub line: usize,
    /// User name.
    pub user: &'a str,
    /// Hex SHA-256 of `{user}password`.
    pub hash: &'a str,
}

/// The account lines of an authorized-users file, read as iperf3 reads it:
/// each line ends at its first CR or LF; empty lines, lines starting with
/// `#` and lines without a comma are skipped; the first two non-empty
/// comma-separated fields are the user and the hash. (wirespeed also
/// trims blanks around the fields, which iperf3 would keep and then fail
/// to match.)
pub fn user_lines(text: &str) -> impl Iterator<Item = UserLine<'_>> {
    text.split('\n').enumerate().filter_map(|(i, raw)| {
        let line = raw.split('\r').next().unwrap_or("");
        if line.is_empty() || line.starts_with('#') || !line.contains(',') {
            return None;
        }
        let mut fields = line.split(',').map(str::trim).filter(|f| !f.is_empty());
        let user = fields.next()?;
        let hash = fields.next().unwrap_or("");
        Some(UserLine {
            line: i + 1,
            user,
            hash,
        })
    })
}

/// What the users file says about a user and the hash of the password
/// they gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// A line has this user and this hash.
    Match,
    /// The user has lines, none with this hash.
    WrongPassword,
    /// No line names the user.
    UnknownUser,
}

/// Looks `user` with password hash `hash_hex` (lower-case hex) up in the
/// text of a users file. Hashes compare without regard to case, and in
/// time that does not depend on where they differ.
pub fn lookup(text: &str, user: &str, hash_hex: &str) -> Lookup {
    let mut known = false;
    let mut matched = false;
    for l in user_lines(text) {
        if l.user == user {
            known = true;
            matched |= !l.hash.is_empty() && same_hex(l.hash, hash_hex);
        }
    }
    match (known, matched) {
        (_, true) => Lookup::Match,
        (true, false) => Lookup::WrongPassword,
        (false, _) => Lookup::UnknownUser,
    }
}

fn same_hex(a: &str, b: &str) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| {
        acc | (x.to_ascii_lowercase() ^ y.to_ascii_lowercase())
    }) == 0
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with `=` padding and no line breaks (what iperf3 sends).
pub fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64. Line breaks and other ASCII white space are
/// skipped (PEM bodies have them); `=` may only end the text, and may be
/// left out. `None` for anything else.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 3);
    let mut acc: u32 = 0;
    let mut bits = 0u32;
    let mut padding = 0usize;
    let mut symbols = 0usize;
    for c in text.bytes() {
        if c.is_ascii_whitespace() {
            continue;
        }
        if c == b'=' {
            padding += 1;
            continue;
        }
        if padding > 0 {
            return None;
        }
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        symbols += 1;
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // A lone symbol in the last group carries no whole byte; padding, if
    // given, must complete the group.
    if symbols % 4 == 1 || padding > 2 || (padding > 0 && !(symbols + padding).is_multiple_of(4)) {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_text_has_iperf3s_spacing() {
        assert_eq!(
            token_text("mario", "rossi", 1_700_000_000),
            "user: mario\npwd:  rossi\nts:   1700000000"
        );
    }

    #[test]
    fn a_token_reads_back() {
        let t = token_text("mario", "rossi", 1_700_000_000);
        let c = parse_token(t.as_bytes()).unwrap();
        assert_eq!(
            c,
            Credentials {
                user: "mario".into(),
                password: "rossi".into(),
                ts: 1_700_000_000
            }
        );
        // As sscanf reads it: any white space between the parts, a NUL at the end.
        let c = parse_token(b"user:mario pwd: rossi\r\nts:\t-5\n\0").unwrap();
        assert_eq!((c.user.as_str(), c.password.as_str(), c.ts), ("mario", "rossi", -5));
    }

    #[test]
    fn noise_is_not_a_token() {
        for bad in [
            &b""[..],
            b"user: mario",
            b"user: mario\npwd:  rossi",
            b"user: mario\npwd:  rossi\nts:   ",
            b"user: mario\npwd:  rossi\nts:   12x",
            b"user: mario\npwd:  rossi\nts:   99999999999999999999",
            b"user: mario\npwd:  rossi\nts:   12 extra",
            b"usr: mario\npwd:  rossi\nts:   12",
            b"user: mario\npass: rossi\nts:   12",
            b"user: \xff\npwd:  rossi\nts:   12",
            b"\x00\x02\x17\x99garbage",
        ] {
            assert_eq!(parse_token(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn fields_with_white_space_cannot_travel() {
        assert_eq!(check_field("mario"), Ok(()));
        assert_eq!(check_field(""), Err(FieldError::Empty));
        assert_eq!(check_field("ma rio"), Err(FieldError::Whitespace));
        assert_eq!(check_field("pa\tss"), Err(FieldError::Whitespace));
    }

    #[test]
    fn skew_is_checked_both_ways_without_overflow() {
        assert!(within_skew(1000, 990, 10));
        assert!(within_skew(1000, 1010, 10));
        assert!(!within_skew(1000, 989, 10));
        assert!(!within_skew(1000, 1011, 10));
        assert!(!within_skew(i64::MAX, i64::MIN, u64::MAX / 2));
        assert!(within_skew(i64::MAX, i64::MIN, u64::MAX));
    }

    #[test]
    fn users_file_is_read_like_iperf3() {
        let text = "# comment,with comma\n\
                    \n\
                    nocomma\n\
                    mario,ABC\r\n\
                    ,,luigi,,def,ignored\n\
                    \x20peach , 0123 \n\
                    toad,\n";
        let lines: Vec<_> = user_lines(text).map(|l| (l.line, l.user, l.hash)).collect();
        assert_eq!(
            lines,
            vec![
                (4, "mario", "ABC"),
                (5, "luigi", "def"),
                (6, "peach", "0123"),
                (7, "toad", "")
            ]
        );
        assert_eq!(lookup(text, "mario", "abc"), Lookup::Match);
        assert_eq!(lookup(text, "luigi", "def"), Lookup::Match);
        assert_eq!(lookup(text, "luigi", "de"), Lookup::WrongPassword);
        assert_eq!(
            lookup(text, "toad", ""),
            Lookup::WrongPassword,
            "an empty hash matches nothing"
        );
        assert_eq!(lookup(text, "bowser", "abc"), Lookup::UnknownUser);
        assert_eq!(lookup(text, "# comment", "with comma"), Lookup::UnknownUser);
    }

    #[test]
    fn salted_string_is_braced_user_then_password() {
        assert_eq!(salted("mario", "rossi"), "{mario}rossi");
        assert_eq!(hex(&[0x00, 0xab, 0x10]), "00ab10");
    }

    #[test]
    fn base64_round_trips_and_matches_known_vectors() {
        for (plain, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64_encode(plain.as_bytes()), enc);
            assert_eq!(base64_decode(enc).unwrap(), plain.as_bytes());
        }
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(base64_decode(&base64_encode(&all)).unwrap(), all);
        assert_eq!(base64_decode("Zm9v\nYmE").unwrap(), b"fooba");
        assert_eq!(base64_decode("+/+/").unwrap(), vec![0xfb, 0xff, 0xbf]);
    }

    proptest::proptest! {
        #[test]
        fn decoders_never_panic_on_hostile_bytes(data in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
            let _ = parse_token(&data);
            let text = String::from_utf8_lossy(&data);
            let _ = base64_decode(&text);
            let _ = lookup(&text, "mario", "00");
        }

        #[test]
        fn base64_round_trips(data in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
            proptest::prop_assert_eq!(base64_decode(&base64_encode(&data)), Some(data));
        }
    }

    #[test]
    fn base64_rejects_what_is_not_base64() {
        for bad in ["Z", "Zm9vY", "Zg=", "Zg===", "Z=g=", "Zm9v!", "Zm-_", "Zg==Zg=="] {
            assert_eq!(base64_decode(bad), None, "{bad}");
        }
    }
}
