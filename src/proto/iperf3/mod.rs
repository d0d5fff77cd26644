//! The iperf3 control protocol (`spec/iperf3-protocol.md`).

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
pub use results::{Results, StreamResult};
pub use state::State;

/// Largest parameter JSON a server accepts (iperf3 3.18+).
pub const MAX_PARAMS_LEN: usize = 8 * 1024;
/// Largest results JSON either side accepts.
pub const MAX_RESULTS_LEN: usize = 1024 * 1024;
