//! Other platforms: wirespeed.exe under Wine against Linux peers.
//!
//! One test binary for the tier, a module per file.

#[path = "../common/mod.rs"]
mod common;

mod wine;
