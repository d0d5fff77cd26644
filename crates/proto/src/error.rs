//! Errors as iperf3 numbers and words them.
//!
//! iperf3's `i_errno` codes travel on the wire inside SERVER_ERROR, so they are
//! part of the protocol, and their messages are what scripts grep for. An
//! [`Error`] carries a code, an optional OS errno and an optional detail that
//! replaces the table text (for messages that embed a value).

use std::fmt;
use std::io;

/// An iperf3 `i_errno` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Code(pub i32);

#[allow(missing_docs)]
impl Code {
    pub const NONE: Code = Code(0);
    pub const SERVCLIENT: Code = Code(1);
    pub const NOROLE: Code = Code(2);
    pub const SERVERONLY: Code = Code(3);
    pub const CLIENTONLY: Code = Code(4);
    pub const DURATION: Code = Code(5);
    pub const NUMSTREAMS: Code = Code(6);
    pub const BLOCKSIZE: Code = Code(7);
    pub const BUFSIZE: Code = Code(8);
    pub const INTERVAL: Code = Code(9);
    pub const MSS: Code = Code(10);
    pub const NOSENDFILE: Code = Code(11);
    pub const OMIT: Code = Code(12);
    pub const UNIMP: Code = Code(13);
    pub const FILE: Code = Code(14);
    pub const BURST: Code = Code(15);
    pub const ENDCONDITIONS: Code = Code(16);
    pub const LOGFILE: Code = Code(17);
    pub const NOSCTP: Code = Code(18);
    pub const UDPBLOCKSIZE: Code = Code(20);
    pub const BADTOS: Code = Code(21);
    pub const SETCLIENTAUTH: Code = Code(22);
    pub const SETSERVERAUTH: Code = Code(23);
    pub const BADFORMAT: Code = Code(24);
    pub const REVERSEBIDIR: Code = Code(25);
    pub const BADPORT: Code = Code(26);
    pub const TOTALRATE: Code = Code(27);
    pub const TOTALINTERVAL: Code = Code(28);
    pub const SKEWTHRESHOLD: Code = Code(29);
    pub const IDLETIMEOUT: Code = Code(30);
    pub const RCVTIMEOUT: Code = Code(31);
    pub const RVRSONLYRCVTIMEOUT: Code = Code(32);
    pub const SNDTIMEOUT: Code = Code(33);
    pub const UDPFILETRANSFER: Code = Code(34);
    pub const SERVERAUTHUSERS: Code = Code(35);
    pub const CNTLKA: Code = Code(36);
    pub const MAXSERVERTESTDURATIONEXCEEDED: Code = Code(37);
    pub const UNITVAL: Code = Code(38);
    pub const BADDSCP: Code = Code(40);
    pub const NEWTEST: Code = Code(100);
    pub const INITTEST: Code = Code(101);
    pub const LISTEN: Code = Code(102);
    pub const CONNECT: Code = Code(103);
    pub const ACCEPT: Code = Code(104);
    pub const SENDCOOKIE: Code = Code(105);
    pub const RECVCOOKIE: Code = Code(106);
    pub const CTRLWRITE: Code = Code(107);
    pub const CTRLREAD: Code = Code(108);
    pub const CTRLCLOSE: Code = Code(109);
    pub const MESSAGE: Code = Code(110);
    pub const SENDMESSAGE: Code = Code(111);
    pub const RECVMESSAGE: Code = Code(112);
    pub const SENDPARAMS: Code = Code(113);
    pub const RECVPARAMS: Code = Code(114);
    pub const PACKAGERESULTS: Code = Code(115);
    pub const SENDRESULTS: Code = Code(116);
    pub const RECVRESULTS: Code = Code(117);
    pub const SELECT: Code = Code(118);
    pub const CLIENTTERM: Code = Code(119);
    pub const SERVERTERM: Code = Code(120);
    pub const ACCESSDENIED: Code = Code(121);
    pub const SETNODELAY: Code = Code(122);
    pub const SETMSS: Code = Code(123);
    pub const SETBUF: Code = Code(124);
    pub const SETTOS: Code = Code(125);
    pub const SETCOS: Code = Code(126);
    pub const SETFLOW: Code = Code(127);
    pub const REUSEADDR: Code = Code(128);
    pub const NONBLOCKING: Code = Code(129);
    pub const SETWINDOWSIZE: Code = Code(130);
    pub const PROTOCOL: Code = Code(131);
    pub const AFFINITY: Code = Code(132);
    pub const DAEMON: Code = Code(133);
    pub const SETCONGESTION: Code = Code(134);
    pub const PIDFILE: Code = Code(135);
    pub const V6ONLY: Code = Code(136);
    pub const SETPACING: Code = Code(140);
    pub const SETBUF2: Code = Code(141);
    pub const AUTHTEST: Code = Code(142);
    pub const BINDDEV: Code = Code(143);
    pub const NOMSG: Code = Code(144);
    pub const SETDONTFRAGMENT: Code = Code(145);
    pub const SETUSERTIMEOUT: Code = Code(148);
    pub const PTHREADCREATE: Code = Code(150);
    pub const SETCNTLKA: Code = Code(155);
    pub const SERVERTESTDURATIONEXPIRED: Code = Code(160);
    pub const CREATESTREAM: Code = Code(200);
    pub const INITSTREAM: Code = Code(201);
    pub const STREAMLISTEN: Code = Code(202);
    pub const STREAMCONNECT: Code = Code(203);
    pub const STREAMACCEPT: Code = Code(204);
    pub const STREAMWRITE: Code = Code(205);
    pub const STREAMREAD: Code = Code(206);
    pub const STREAMCLOSE: Code = Code(207);
    pub const STREAMID: Code = Code(208);
}

impl Code {
    /// iperf3's message for this code (master wording).
    pub fn message(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "no error",
            1 => "cannot be both server and client",
            2 => "must either be a client (-c) or server (-s)",
            3 => "some option you are trying to set is server only",
            4 => "some option you are trying to set is client only",
            5 => "test duration valid values are 0 to 86400 seconds",
            6 => "invalid number of parallel streams",
            7 => "block size too large (maximum = 1048576 bytes)",
            8 => "socket buffer size too large (maximum = 536870912 bytes)",
            9 => "invalid report interval (min = 0.1, max = 60 seconds)",
            10 => "TCP MSS too large (maximum = 32767 bytes)",
            11 => "this OS does not support sendfile",
            12 => "bogus value for --omit (maximum = 600 seconds)",
            13 => "an option you are trying to set is not implemented yet",
            14 => "unable to open -F file",
            15 => "invalid burst count (maximum = 1000)",
            16 => "only one test end condition (-t, -n, -k) may be specified",
            17 => "unable to open log file",
            18 => "no SCTP support available",
            19 => "--bind must be specified to use --cport",
            20 => "block size invalid (minimum = 16 bytes, maximum = 65507 bytes)",
            21 => "bad TOS value (must be between 0 and 255 inclusive)",
            22 => "you must specify a username, password, and path to a valid RSA public key",
            23 => "you must specify a path to a valid RSA private key and a user credential file",
            24 => "bad format specifier (valid formats are in the set [kmgtKMGT])",
            25 => "cannot be both reverse and bidirectional",
            26 => "port number must be between 1 and 65535 inclusive",
            27 => "total required bandwidth is larger than server limit",
            28 => "invalid time interval for calculating average data rate",
            29 => "skew threshold must be a positive number",
            30 => "idle timeout parameter is not positive or larger than allowed limit",
            31 => "receive timeout value is incorrect or not in range",
            32 => "client receive timeout is valid only in receiving mode",
            33 => "send timeout value is incorrect or not in range",
            34 => "cannot transfer file using UDP",
            35 => "cannot access authorized users file",
            36 => "control connection Keepalive period should be larger than the full retry period (interval * count)",
            37 => "client's requested duration exceeds the server's maximum permitted limit",
            38 => "invalid unit value or suffix",
            39 => "this OS does not support --skip-rx-copy",
            40 => {
                "bad DSCP value (numeric: 0-63 inclusive, symbolic: one of [af11-13, af21-23, af31-33, af41-43, cs1-7, ef, va, lowdelay, throughput, reliability])"
            }
            100 => "unable to create a new test",
            101 => "test initialization failed",
            102 => "unable to start listener for connections",
            103 => {
                "unable to connect to server - server may have stopped running or use a different port, firewall issue, etc."
            }
            104 => "unable to accept connection from client",
            105 => "unable to send cookie to server",
            106 => "unable to receive cookie at server",
            107 => "unable to write to the control socket",
            108 => "unable to read from the control socket",
            109 => "control socket has closed unexpectedly",
            110 => "received an unknown control message (ensure other side is iperf3 and not iperf)",
            111 => {
                "unable to send control message - port may not be available, the other side may have stopped running, etc."
            }
            112 => {
                "unable to receive control message - port may not be available, the other side may have stopped running, etc."
            }
            113 => "unable to send parameters to server",
            114 => "unable to receive parameters from client",
            115 => "unable to package results",
            116 => "unable to send results",
            117 => "unable to receive results",
            118 => "select failed",
            119 => "the client has terminated",
            120 => "the server has terminated",
            121 => "the server is busy running a test. try again later",
            122 => "unable to set TCP/SCTP NODELAY",
            123 => "unable to set TCP/SCTP MSS",
            124 => "unable to set socket buffer size",
            125 => "unable to set IP TOS",
            126 => "unable to set IPv6 traffic class",
            127 => "unable to set IPv6 flow label",
            128 => "unable to reuse address on socket",
            129 => "unable to set socket to non-blocking",
            130 => "unable to set socket window size",
            131 => "protocol does not exist",
            132 => "unable to set CPU affinity",
            133 => "unable to become a daemon",
            134 => "unable to set TCP_CONGESTION: Supplied congestion control algorithm not supported on this host",
            135 => "unable to write PID file",
            136 => "Unable to set/reset IPV6_V6ONLY",
            137 => "unable to set SCTP_DISABLE_FRAGMENTS",
            138 => "unable to set SCTP_INIT num of SCTP streams",
            140 => "unable to set socket pacing",
            141 => "socket buffer size not set correctly",
            142 => "test authorization failed",
            143 => "Unable to bind-to-device (check perror, maybe permissions?)",
            144 => "idle timeout for receiving data",
            145 => "unable to set IP Do-Not-Fragment flag",
            148 => "unable to set TCP USER_TIMEOUT",
            150 => "unable to create thread",
            155 => "unable to set socket keepalive (SO_KEEPALIVE) option",
            156 => "unable to set socket keepalive TCP period (TCP_KEEPIDLE) option",
            157 => "unable to set/get socket keepalive TCP retry interval (TCP_KEEPINTVL) option",
            158 => "unable to set/get socket keepalive TCP number of retries (TCP_KEEPCNT) option",
            160 => "server test duration expired",
            200 => "unable to create a new stream",
            201 => "unable to initialize stream",
            202 => "unable to start stream listener",
            203 => "unable to connect stream",
            204 => "unable to accept stream connection",
            205 => "unable to write to stream socket",
            206 => "unable to read from stream socket",
            207 => "stream socket has closed unexpectedly",
            208 => "stream has an invalid id",
            300 => "unable to create new timer",
            301 => "unable to update timer",
            _ => return None,
        })
    }

    /// Codes whose message gets `: <strerror>` appended when an errno is known.
    fn appends_errno(self) -> bool {
        matches!(self.0, 14 | 17 | 31 | 32 | 33 | 36 | 100..=108 | 111..=118 | 122..=126 | 128..=133 | 135 | 136 | 140 | 148 | 150..=160 | 200..=206 | 300 | 301)
    }
}

/// How the error is introduced when printed (`error - `, `parameter error - `...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A bad command line: `parameter error - ...`, exit 1.
    Parameter,
    /// A runtime failure: `error - ...`, exit 1.
    Runtime,
    /// The peer reported an error (`SERVER ERROR - ...`).
    Server,
    /// Ended by a signal: `interrupt - ...`.
    Interrupt,
}

/// A failure to report to the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    /// iperf3 code (travels in SERVER_ERROR).
    pub code: Code,
    /// OS error number, if any.
    pub errno: Option<i32>,
    /// Replaces the table text when set (messages with embedded values).
    pub detail: Option<String>,
    /// How it is introduced when printed.
    pub kind: Kind,
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A runtime error with the table message.
    pub fn new(code: Code) -> Error {
        Error {
            code,
            errno: None,
            detail: None,
            kind: Kind::Runtime,
        }
    }

    /// A runtime error caused by an OS error.
    pub fn io(code: Code, e: &io::Error) -> Error {
        let mut err = Error::new(code);
        err.errno = e.raw_os_error();
        if err.errno.is_none() {
            // Timeouts and EOFs synthesised by std carry no errno; keep their words.
            err.detail = Some(format!("{}: {}", code.message().unwrap_or(""), io_words(e)));
        }
        err
    }

    /// `-A`: pinning to `cpu` failed. When the CPU is not among the host's
    /// `online` ones (if known), says so and which are, where the OS's word
    /// ("Invalid argument") would leave the user guessing.
    pub fn affinity(cpu: usize, e: &io::Error, online: Option<&[usize]>) -> Error {
        let words = Code::AFFINITY.message().unwrap_or("");
        match online {
            Some(online) if !online.contains(&cpu) => {
                let has = match online {
                    [one] => format!("CPU {one}"),
                    _ => format!("CPUs {}", cpu_list(online)),
                };
                Error::msg(
                    Code::AFFINITY,
                    format!("{words}: CPU {cpu} does not exist (this host has {has})"),
                )
            }
            _ => Error::io(Code::AFFINITY, e),
        }
    }

    /// A parameter (command-line) error with the table message.
    pub fn param(code: Code) -> Error {
        Error {
            kind: Kind::Parameter,
            ..Error::new(code)
        }
    }

    /// A parameter error with custom words.
    pub fn param_msg(code: Code, msg: impl Into<String>) -> Error {
        Error {
            kind: Kind::Parameter,
            detail: Some(msg.into()),
            ..Error::new(code)
        }
    }

    /// An end by signal `sig` (0: none known), in iperf3 3.21's words:
    /// `interrupt - the {who} has terminated by signal Interrupt(2)`.
    pub fn interrupted(code: Code, who: &str, sig: usize) -> Error {
        let detail = match sig {
            0 => format!("the {who} has terminated"),
            s => format!("the {who} has terminated by signal {}", signal_name(s)),
        };
        Error {
            kind: Kind::Interrupt,
            detail: Some(detail),
            ..Error::new(code)
        }
    }

    /// A runtime error with custom words.
    pub fn msg(code: Code, msg: impl Into<String>) -> Error {
        Error {
            detail: Some(msg.into()),
            ..Error::new(code)
        }
    }

    /// The text after `error - ` (what JSON's `"error"` holds).
    pub fn text(&self) -> String {
        if let Some(d) = &self.detail {
            return d.clone();
        }
        let base = match self.code.message() {
            Some(m) => m.to_string(),
            None => format!("int_errno={}", self.code.0),
        };
        match self.errno {
            Some(e) if e != 0 && (self.code.appends_errno() || self.code.message().is_none()) => {
                format!("{base}: {}", strerror(e))
            }
            _ => base,
        }
    }

    /// The whole line after `prog: `.
    pub fn line(&self) -> String {
        match self.kind {
            Kind::Parameter => format!("parameter error - {}", self.text()),
            Kind::Runtime => format!("error - {}", self.text()),
            Kind::Server => format!("error - {}", self.text()),
            Kind::Interrupt => format!("interrupt - {}", self.text()),
        }
    }
}

fn io_words(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => "Connection timed out".into(),
        io::ErrorKind::UnexpectedEof => "Unexpected end of stream".into(),
        _ => e.to_string(),
    }
}

/// CPU numbers as the kernel lists them: runs become ranges (`0-3,6`).
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", cpus[i], cpus[j])
        } else {
            cpus[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

/// `strerror(3)` wording without std's " (os error N)" suffix.
pub fn strerror(errno: i32) -> String {
    let s = io::Error::from_raw_os_error(errno).to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The words for an I/O error, as `strerror(3)` says them when it has an
/// errno (`Connection refused`), else std's description.
pub fn errno_text(e: &io::Error) -> String {
    e.raw_os_error().map(strerror).unwrap_or_else(|| e.to_string())
}

impl Error {
    /// The system's words for this error's errno, else its own text
    /// (`tcp connect failed: Connection refused`).
    pub fn why(&self) -> String {
        self.errno.map(strerror).unwrap_or_else(|| self.text())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.line())
    }
}

impl std::error::Error for Error {}

/// iperf3's words for a signal: `Interrupt(2)`.
pub fn signal_name(sig: usize) -> String {
    // The numbers are POSIX's (and Windows' C runtime's for the two it has).
    let name = match sig {
        2 => "Interrupt",
        15 => "Terminated",
        #[cfg(unix)]
        1 => "Hangup",
        _ => "Signal",
    };
    format!("{name}({sig})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_read_like_the_kernels() {
        assert_eq!(cpu_list(&[0, 1]), "0-1");
        assert_eq!(cpu_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert_eq!(cpu_list(&[5]), "5");
        // A CPU beyond any the host has fails with its words kept when
        // the host's list is unknown, else with the list.
        let einval = io::Error::from_raw_os_error(libc::EINVAL);
        let e = Error::affinity(1 << 20, &einval, None);
        assert_eq!(e.text(), "unable to set CPU affinity: Invalid argument");
        let e = Error::affinity(1 << 20, &einval, Some(&[0, 1]));
        assert_eq!(
            e.text(),
            "unable to set CPU affinity: CPU 1048576 does not exist (this host has CPUs 0-1)"
        );
        let e = Error::affinity(3, &einval, Some(&[2]));
        assert_eq!(
            e.text(),
            "unable to set CPU affinity: CPU 3 does not exist (this host has CPU 2)"
        );
        // Other failures keep the system's words.
        let e = Error::affinity(0, &io::Error::from_raw_os_error(libc::EPERM), Some(&[0, 1]));
        assert_eq!(e.text(), "unable to set CPU affinity: Operation not permitted");
    }

    #[test]
    fn messages_read_like_iperf3() {
        assert_eq!(
            Error::new(Code::ACCESSDENIED).line(),
            "error - the server is busy running a test. try again later"
        );
        let e = Error::io(Code::CONNECT, &io::Error::from_raw_os_error(libc::ECONNREFUSED));
        assert!(e.text().ends_with(": Connection refused"), "{}", e.text());
        assert_eq!(
            Error::param(Code::REVERSEBIDIR).line(),
            "parameter error - cannot be both reverse and bidirectional"
        );
    }

    #[test]
    fn unknown_codes_print_int_errno() {
        let mut e = Error::new(Code(999));
        assert_eq!(e.text(), "int_errno=999");
        e.errno = Some(libc::EBADF);
        assert_eq!(e.text(), "int_errno=999: Bad file descriptor");
    }

    #[test]
    fn errno_is_appended_only_where_iperf3_does() {
        let mut e = Error::new(Code::CTRLCLOSE);
        e.errno = Some(libc::EPIPE);
        assert_eq!(e.text(), "control socket has closed unexpectedly");
        let mut e = Error::new(Code::CTRLREAD);
        e.errno = Some(libc::EPIPE);
        assert_eq!(e.text(), "unable to read from the control socket: Broken pipe");
    }
}
