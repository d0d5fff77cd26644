//! Authentication options (iperf3's RSA-wrapped user tokens).

use std::path::PathBuf;
use std::time::Duration;

use super::{int_arg, perr, value};
use crate::getopt::Occurrence;
use crate::iperf3::opt::Opt;
use crate::iperf3::state::ParseState;
use wirespeed_core::error::{Code, Error};

type Result = std::result::Result<(), Error>;

/// `--rsa-private-key-path file` (server).
pub fn rsa_private_key(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.server.rsa_private_key = Some(PathBuf::from(value(o)));
    Ok(())
}

/// `--authorized-users-path file` (server).
pub fn authorized_users(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.server.authorized_users = Some(PathBuf::from(value(o)));
    Ok(())
}

/// `--time-skew-threshold secs` (server): more than 0.
pub(crate) fn time_skew(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    let secs = int_arg(o, Code::SKEWTHRESHOLD)?;
    if secs <= 0 {
        return Err(perr(Code::SKEWTHRESHOLD));
    }
    s.common.cfg.server.time_skew_threshold = Duration::from_secs(secs as u64);
    Ok(())
}

/// `--use-pkcs1-padding`: as iperf3 3.17+, the client pads its token with
/// PKCS#1 v1.5 and the server accepts such tokens.
pub(crate) fn use_pkcs1(s: &mut ParseState, _: &Occurrence<Opt>) -> Result {
    s.common.cfg.auth.use_pkcs1_padding = true;
    s.common.cfg.server.use_pkcs1_padding = true;
    Ok(())
}

/// `--username user` (client).
pub fn username(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.auth.username = Some(value(o).to_string());
    Ok(())
}

/// `--rsa-public-key-path file` (client).
pub fn rsa_public_key(s: &mut ParseState, o: &Occurrence<Opt>) -> Result {
    s.common.cfg.auth.public_key = Some(PathBuf::from(value(o)));
    Ok(())
}
