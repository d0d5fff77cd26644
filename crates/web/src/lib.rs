//! wirespeed's web side: the web UI with its history and schedules
//! ([`ui`]) and the Prometheus exporter ([`exporter`]), on the HTTP layer
//! of `wirespeed-http`. The only crate that links SQLite.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod exporter;
pub mod ui;
