//! The web UI driven by a real headless browser (chromium and
//! chromium-driver).
//!
//! One test binary for the tier, a module per file.

#[path = "../common/mod.rs"]
mod common;

mod ui;
