//! iperf3's error numbers and their words, and the errors of the codecs.
//!
//! iperf3's `i_errno` codes travel on the wire inside SERVER_ERROR, so they are
//! part of the protocol, and their messages are what scripts grep for. A
//! codec that fails says which code and, where the table's words would not
//! do, its own ([`ProtoError`]); the tool's error type, which also carries
//! the OS's errno and how a failure is introduced when printed, is the core
//! crate's.

use std::fmt;

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
    pub fn appends_errno(self) -> bool {
        matches!(self.0, 14 | 17 | 31 | 32 | 33 | 36 | 100..=108 | 111..=118 | 122..=126 | 128..=133 | 135 | 136 | 140 | 148 | 150..=160 | 200..=206 | 300 | 301)
    }
}

/// A codec's failure: iperf3's code for it, and words of its own where
/// the table's would not say enough.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtoError {
    /// iperf3 code (travels in SERVER_ERROR).
    pub code: Code,
    /// Replaces the table text when set.
    pub detail: Option<String>,
}

impl ProtoError {
    /// A failure with the table's words.
    pub fn new(code: Code) -> ProtoError {
        ProtoError { code, detail: None }
    }

    /// A failure with words of its own.
    pub fn msg(code: Code, msg: impl Into<String>) -> ProtoError {
        ProtoError {
            code,
            detail: Some(msg.into()),
        }
    }

    /// What a reader is told.
    pub fn text(&self) -> String {
        match (&self.detail, self.code.message()) {
            (Some(d), _) => d.clone(),
            (None, Some(m)) => m.to_string(),
            (None, None) => format!("int_errno={}", self.code.0),
        }
    }
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl std::error::Error for ProtoError {}
