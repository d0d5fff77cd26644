//! Control state bytes (one signed byte each on the wire).

/// A control message: the single byte both ends exchange on the control
/// connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i8)]
pub enum State {
    /// Server: all streams are up; start clocks.
    TestStart = 1,
    /// Server: start moving data.
    TestRunning = 2,
    /// Defined, never used.
    ResultRequest = 3,
    /// Client: the test is over.
    TestEnd = 4,
    /// Defined, never used.
    StreamBegin = 5,
    /// Defined, never used.
    StreamRunning = 6,
    /// Defined, never used.
    StreamEnd = 7,
    /// Defined, never used.
    AllStreamsEnd = 8,
    /// Server: send your parameters.
    ParamExchange = 9,
    /// Server: open your data streams.
    CreateStreams = 10,
    /// Server got a signal.
    ServerTerminate = 11,
    /// Client got a signal.
    ClientTerminate = 12,
    /// Server: send your results.
    ExchangeResults = 13,
    /// Server: results exchanged, print them.
    DisplayResults = 14,
    /// Server-local idle state; never on the wire.
    IperfStart = 15,
    /// Client: finished; the last byte it sends.
    IperfDone = 16,
    /// Server: busy or bad cookie; then it closes.
    AccessDenied = -1,
    /// Server: an error; two big-endian i32 (code, errno) follow.
    ServerError = -2,
}

impl State {
    /// The byte on the wire.
    pub fn to_byte(self) -> u8 {
        self as i8 as u8
    }

    /// Decodes a wire byte; `None` for values iperf3 never defined.
    pub fn from_byte(b: u8) -> Option<State> {
        use State::*;
        Some(match b as i8 {
            1 => TestStart,
            2 => TestRunning,
            3 => ResultRequest,
            4 => TestEnd,
            5 => StreamBegin,
            6 => StreamRunning,
            7 => StreamEnd,
            8 => AllStreamsEnd,
            9 => ParamExchange,
            10 => CreateStreams,
            11 => ServerTerminate,
            12 => ClientTerminate,
            13 => ExchangeResults,
            14 => DisplayResults,
            15 => IperfStart,
            16 => IperfDone,
            -1 => AccessDenied,
            -2 => ServerError,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_bytes_match_the_spec() {
        assert_eq!(State::ParamExchange.to_byte(), 0x09);
        assert_eq!(State::AccessDenied.to_byte(), 0xFF);
        assert_eq!(State::ServerError.to_byte(), 0xFE);
        assert_eq!(State::IperfDone.to_byte(), 0x10);
        for b in 0..=255u8 {
            if let Some(s) = State::from_byte(b) {
                assert_eq!(s.to_byte(), b);
            }
        }
        assert_eq!(State::from_byte(0), None);
        assert_eq!(State::from_byte(17), None);
    }
}
