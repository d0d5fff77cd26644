//! Control-channel framing: single state bytes, `u32`-length-prefixed JSON,
//! and the big-endian `i32` pair after SERVER_ERROR.
//!
//! The [`Framer`] only buffers: the driver pushes whatever the socket gave
//! and asks for the frame it expects next (the protocol is strictly ordered,
//! so the expected kind is always known). A length prefix is checked against
//! the caller's cap before anything is stored for it.

/// Why a frame could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// A zero length prefix (iperf3 rejects it).
    EmptyJson,
    /// A length prefix above the cap.
    TooLong(u32),
}

/// Accumulates control-connection bytes and splits them into frames.
#[derive(Debug, Default)]
pub struct Framer {
    buf: Vec<u8>,
    pos: usize,
}

impl Framer {
    /// An empty framer.
    pub fn new() -> Framer {
        Framer::default()
    }

    /// Appends bytes read from the connection.
    pub fn push(&mut self, data: &[u8]) {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// Bytes received but not yet consumed.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn avail(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Takes one raw state byte.
    pub fn take_byte(&mut self) -> Option<u8> {
        let b = *self.avail().first()?;
        self.pos += 1;
        Some(b)
    }

    /// Takes exactly `n` bytes.
    pub fn take_exact(&mut self, n: usize) -> Option<Vec<u8>> {
        if self.buffered() < n {
            return None;
        }
        let v = self.avail()[..n].to_vec();
        self.pos += n;
        Some(v)
    }

    /// Takes a big-endian `i32`.
    pub fn take_i32(&mut self) -> Option<i32> {
        let b = self.take_exact(4)?;
        Some(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// How many more bytes the next JSON frame needs (0 = complete), or an
    /// error for an unacceptable length prefix. Lets the driver read no more
    /// than the frame.
    pub fn json_needs(&self, max: usize) -> Result<usize, FrameError> {
        let a = self.avail();
        if a.len() < 4 {
            return Ok(4 - a.len() + 1);
        }
        let len = u32::from_be_bytes([a[0], a[1], a[2], a[3]]);
        if len == 0 {
            return Err(FrameError::EmptyJson);
        }
        if len as usize > max {
            return Err(FrameError::TooLong(len));
        }
        Ok((4 + len as usize).saturating_sub(a.len()))
    }

    /// Takes a length-prefixed JSON body if it is complete.
    pub fn take_json(&mut self, max: usize) -> Result<Option<Vec<u8>>, FrameError> {
        if self.json_needs(max)? > 0 {
            return Ok(None);
        }
        let a = self.avail();
        let len = u32::from_be_bytes([a[0], a[1], a[2], a[3]]) as usize;
        let body = a[4..4 + len].to_vec();
        self.pos += 4 + len;
        Ok(Some(body))
    }
}

/// A JSON body with its length prefix, ready to write.
pub fn json_frame(body: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(4 + body.len());
    v.extend_from_slice(&(body.len() as u32).to_be_bytes());
    v.extend_from_slice(body.as_bytes());
    v
}

/// SERVER_ERROR with its two big-endian ints.
pub fn server_error_frame(code: i32, errno: i32) -> [u8; 9] {
    let mut f = [0u8; 9];
    f[0] = super::State::ServerError.to_byte();
    f[1..5].copy_from_slice(&code.to_be_bytes());
    f[5..9].copy_from_slice(&errno.to_be_bytes());
    f
}

/// The errno of a wirespeed server's SERVER_ERROR refusing a client its
/// `--allow`/`--deny` does not admit. The code is iperf3's "test
/// authorization failed" (what an iperf3 client prints: its "busy" would
/// be untrue, and "try again later" futile); EACCES beside it tells a
/// wirespeed client that it was the address, not a login.
pub const POLICY_ERRNO: i32 = 13;

/// SERVER_ERROR refusing a client by its address (see [`POLICY_ERRNO`]).
pub fn policy_refusal_frame() -> [u8; 9] {
    server_error_frame(crate::error::Code::AUTHTEST.0, POLICY_ERRNO)
}

/// Whether a SERVER_ERROR's code and errno are a refusal by address.
pub fn is_policy_refusal(code: i32, errno: i32) -> bool {
    code == crate::error::Code::AUTHTEST.0 && errno == POLICY_ERRNO
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_frames_split_across_reads() {
        let frame = json_frame("{\"a\":1}");
        let mut f = Framer::new();
        f.push(&frame[..3]);
        assert_eq!(f.take_json(100), Ok(None));
        f.push(&frame[3..6]);
        assert_eq!(f.take_json(100), Ok(None));
        f.push(&frame[6..]);
        f.push(&[0x0e]);
        assert_eq!(f.take_json(100).unwrap().unwrap(), b"{\"a\":1}");
        assert_eq!(f.take_byte(), Some(0x0e));
        assert_eq!(f.take_byte(), None);
    }

    #[test]
    fn oversize_and_empty_lengths_are_refused_before_buffering() {
        let mut f = Framer::new();
        f.push(&[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(f.take_json(8192), Err(FrameError::TooLong(u32::MAX)));
        let mut f = Framer::new();
        f.push(&[0, 0, 0, 0]);
        assert_eq!(f.take_json(8192), Err(FrameError::EmptyJson));
    }

    #[test]
    fn server_error_payload() {
        let fr = server_error_frame(205, 9);
        assert_eq!(fr, [0xfe, 0, 0, 0, 0xcd, 0, 0, 0, 9]);
        let mut f = Framer::new();
        f.push(&fr);
        assert_eq!(f.take_byte(), Some(0xfe));
        assert_eq!(f.take_i32(), Some(205));
        assert_eq!(f.take_i32(), Some(9));
    }

    #[test]
    fn json_needs_reports_remaining() {
        let mut f = Framer::new();
        assert_eq!(f.json_needs(10), Ok(5));
        f.push(&[0, 0, 0, 3, b'1']);
        assert_eq!(f.json_needs(10), Ok(2));
    }
}
