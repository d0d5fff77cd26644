//! The iperf3 control protocol (`docs/protocols.md`, the iperf3 sections).

pub mod auth;
pub mod cookie;
pub mod framing;
pub mod machine;
pub mod params;
pub mod results;
pub mod state;
pub mod udp;

pub use cookie::{COOKIE_LEN, Cookie};
pub use framing::Framer;
pub use params::{ParamsIn, encode_params};
pub use results::{Results, StreamResult, TcpEcnResult};
pub use state::State;

/// Largest parameter JSON a server accepts (iperf3 3.18+).
pub const MAX_PARAMS_LEN: usize = 8 * 1024;
/// Largest results JSON either side accepts from a test of few streams.
pub const MAX_RESULTS_LEN: usize = 1024 * 1024;
/// Room for the server's own report in its results (`--get-server-output`).
pub const SERVER_OUTPUT_ROOM: usize = 32 * 1024 * 1024;

/// Largest results JSON accepted from the peer of a test with `streams`
/// data streams: [`MAX_RESULTS_LEN`], plus 1 KiB per stream (an entry is
/// about 200 bytes, so `-P 10000` needs some 2 MB), plus
/// [`SERVER_OUTPUT_ROOM`] when the server's report was asked for.
pub fn max_results_len(streams: usize, server_output: bool) -> usize {
    let room = if server_output { SERVER_OUTPUT_ROOM } else { 0 };
    MAX_RESULTS_LEN + streams.saturating_mul(1024) + room
}
