//! The tool's errors, worded as iperf3 words them: a code of iperf3's
//! table (`crate::error::Code`, re-exported here), the OS's errno
//! where one caused it, words of its own where the table's would not do,
//! and how it is introduced when printed (`error - `, `parameter error - `,
//! `interrupt - `).

use std::fmt;
use std::io;

pub use wirespeed_proto::error::{Code, ProtoError};

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

/// Shorthand for results.
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

impl From<ProtoError> for Error {
    fn from(e: ProtoError) -> Error {
        Error {
            detail: e.detail,
            ..Error::new(e.code)
        }
    }
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
