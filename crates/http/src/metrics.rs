//! The metrics endpoint: `GET /metrics` (and `/`) over this crate's
//! server, whose limits keep a scraper that stalls, or many, from
//! keeping another out.

use std::net::TcpListener;
use std::sync::Arc;

use crate::{Answer, Limits, Request, Response, Router, Serving};
use wirespeed_core::error::Error;
use wirespeed_report::metrics::Metrics;

/// What the endpoint holds its clients to: the server's defaults, with
/// no request body and a few workers (rendering takes microseconds).
const LIMITS: Limits = Limits {
    connections: 128,
    workers: 2,
    ..Limits::DEFAULT
};

/// A bound metrics listener, not yet serving (a server that daemonizes
/// binds first, to report a busy address, and serves after the fork).
pub struct Endpoint {
    listener: TcpListener,
    addr: String,
}

impl Endpoint {
    /// Binds `spec` (`ADDR:PORT`; `:PORT` for every address).
    pub fn bind(spec: &str) -> Result<Endpoint, Error> {
        Ok(Endpoint {
            listener: crate::listen(spec, "--metrics", "the metrics endpoint")?,
            addr: spec.to_string(),
        })
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    /// The address as given.
    pub fn address(&self) -> &str {
        &self.addr
    }

    /// What a server says of its metrics at start: where they are (each
    /// of the host's addresses for a listener on every address), and a
    /// warning when anyone who can reach the host may read them.
    pub fn announcement(&self) -> (String, Option<String>) {
        let text = crate::say(
            "Metrics at ",
            &crate::urls(&self.listener, |a| format!("http://{a}/metrics")),
        );
        let local = self.listener.local_addr().ok();
        let everywhere = local.is_some_and(|a| a.ip().is_unspecified());
        let warning = everywhere.then(|| {
            let port = self.port();
            format!(
                "--metrics {} listens on every address, with no token or access list (--allow and --deny \
                 apply to tests only), and its metrics name the clients served: give it one address \
                 (--metrics 127.0.0.1:{port}) or keep port {port} from others",
                self.addr
            )
        });
        (text, warning)
    }

    /// Serves `metrics` on a thread until the returned handle is dropped.
    pub fn serve(self, metrics: Arc<Metrics>) -> Result<Serving, Error> {
        crate::serve(
            self.listener,
            "ws-metrics",
            LIMITS,
            Arc::new(move |req: Request| Answer::Whole(route(&req, &metrics))),
        )
    }
}

/// What to answer a request with (`HEAD` gets the head only).
pub fn route(req: &Request, metrics: &Metrics) -> Response {
    Router::<Metrics, Response>::new()
        .at(&["GET", "HEAD"], "/metrics", |m, _, _| metrics_page(m))
        .at(&["GET", "HEAD"], "/", |_, _, _| home())
        .route(metrics, req)
        .unwrap_or_else(not_found)
}

fn metrics_page(metrics: &Metrics) -> Response {
    Response::new("200 OK", "text/plain; version=0.0.4; charset=utf-8", metrics.render())
}

fn home() -> Response {
    Response::new(
        "200 OK",
        "text/html; charset=utf-8",
        format!(
            "<!DOCTYPE html><html><head><title>wirespeed</title></head><body><h1>{}</h1><p><a href=\"/metrics\">/metrics</a></p></body></html>\n",
            wirespeed_report::html::escape(&wirespeed_core::version::version_string())
        ),
    )
}

fn not_found() -> Response {
    Response::text("404 Not Found", "not found: try /metrics\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_answer_like_a_small_http_server() {
        let m = Metrics::new();
        let get = |line: &str| route(&crate::parse_head(line.as_bytes()).unwrap(), &m);
        assert!(
            String::from_utf8(get("GET /metrics HTTP/1.1").body)
                .unwrap()
                .contains("wirespeed_up 1")
        );
        assert_eq!(get("HEAD /metrics HTTP/1.0").status, "200 OK");
        assert_eq!(get("POST /metrics HTTP/1.1").status, "405 Method Not Allowed");
        assert_eq!(get("GET /nope HTTP/1.1").status, "404 Not Found");
        assert_eq!(get("GET /metrics?x=1 HTTP/1.1").status, "200 OK");
    }
}
