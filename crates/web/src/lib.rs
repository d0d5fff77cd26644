//! wirespeed's web side: the HTTP layer ([`http`]), the web UI with its
//! history and schedules ([`ui`]), the Prometheus exporter
//! ([`exporter`]) and the `--metrics` endpoint ([`metrics`]). The only
//! crate that links SQLite.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod exporter;
pub mod http;
pub mod metrics;
pub mod ui;
