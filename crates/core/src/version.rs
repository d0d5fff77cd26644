//! Which version this is, and which versions of iperf3 and iperf 2 it
//! speaks: a leaf every part of the program may read.

/// wirespeed's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The iperf3 release whose options, output and protocol wirespeed's
/// iperf3 dialect implements.
pub const IPERF3_VERSION: &str = "3.21";

/// What the client announces as `client_version` (informational for servers).
pub const CLIENT_VERSION: &str = concat!("wirespeed-", env!("CARGO_PKG_VERSION"));

/// `"wirespeed x.y.z"`, as JSON `start.version` and `-v` print it.
pub fn version_string() -> String {
    format!("wirespeed {VERSION}")
}
