//! The UI's HTTP side: the page, its JSON API, and the live stream of a
//! run as server-sent events. Every request but the page itself carries
//! the token; requests that change anything are POSTs with the token in a
//! header (which a page of another origin cannot send without a preflight
//! we never grant); a loopback listener answers only to loopback host
//! names (no DNS rebinding).

use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::board::{Board, Mode, Run, State};
use super::{export, form, history, history_view, schedule};
use wirespeed_http as http;
use wirespeed_http::{Events, Limits, Request, Response, Router};
use wirespeed_report::html::{model, page};

/// What the UI holds its clients to: the server's defaults, with a
/// form's body and a few live streams.
const LIMITS: Limits = Limits {
    body_size: 16 * 1024,
    streams: 16,
    ..Limits::DEFAULT
};
/// Longest quiet on a live stream before a comment goes (which finds a
/// page that has gone).
const QUIET: Duration = Duration::from_secs(5);
/// Least time between two renders of one live run.
const RENDER_EVERY: Duration = Duration::from_millis(200);

const PAGE: &str = include_str!("app.html");

/// What the handlers share.
pub(crate) struct Site {
    /// The runs.
    pub board: Arc<Board>,
    /// The token requests carry.
    pub token: String,
    /// The listener's address.
    pub addr: SocketAddr,
}

impl Site {
    fn loopback(&self) -> bool {
        self.addr.ip().is_loopback()
    }

    /// A loopback listener answers only to names of the loopback.
    fn host_ok(&self, req: &Request) -> bool {
        if !self.loopback() {
            return true;
        }
        let Some(host) = req.header("host") else {
            return false;
        };
        let name = match host.rsplit_once(':') {
            Some((h, p)) if p.bytes().all(|c| c.is_ascii_digit()) && !h.ends_with(':') => h,
            _ => host,
        };
        let name = name.trim_start_matches('[').trim_end_matches(']');
        name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }

    fn token_in(&self, given: Option<&str>) -> bool {
        // Compared in time independent of where they differ.
        given.is_some_and(|g| {
            g.len() == self.token.len() && g.bytes().zip(self.token.bytes()).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0
        })
    }

    /// GETs may carry the token in the query (links, EventSource); POSTs
    /// only in the header, and from the page's own origin. The refusal
    /// says which of the two was wrong.
    fn authorized(&self, req: &Request) -> Result<(), Response> {
        let header = req.header("x-wirespeed-token");
        let token = if req.method == "POST" {
            header
        } else {
            header.or(req.param("token"))
        };
        if !self.token_in(token) {
            return Err(error("401 Unauthorized", "this request needs the UI's token"));
        }
        if req.method == "POST"
            && let Some(origin) = req.header("origin")
            && req
                .header("host")
                .is_none_or(|h| origin.strip_prefix("http://") != Some(h))
        {
            return Err(error(
                "403 Forbidden",
                format!("this request comes from another origin ({origin}): the UI takes it from its own page only"),
            ));
        }
        Ok(())
    }
}

/// What a UI request is routed to: a whole response, or a run's live
/// stream (which the server turns into server-sent events).
pub enum Routed {
    /// A whole response.
    Whole(Response),
    /// The live stream of a run.
    Live(u64),
}

fn json_response(status: &'static str, v: &Value) -> Response {
    Response::new(
        status,
        "application/json",
        wirespeed_proto::json::to_formatted(v).into_bytes(),
    )
}

fn error(status: &'static str, msg: impl Into<String>) -> Response {
    json_response(status, &json!({ "error": msg.into() }))
}

/// The page, with what its script needs; `nonce` marks the one script
/// and the one style sheet the page's content security policy lets apply.
fn page_html(site: &Site, nonce: &str) -> String {
    let mode = match site.board.mode {
        Mode::Client { .. } => "client",
        Mode::Server => "server",
    };
    let cfg = json!({"token": site.token, "mode": mode, "version": wirespeed_core::version::version_string()});
    // Inside <script>, "</" must not appear.
    let cfg = cfg.to_string().replace("</", "<\\/");
    PAGE.replace("/*REPORT_CSS*/", page::CSS)
        .replace("{/*CONFIG*/}", &cfg)
        .replace("{/*NONCE*/}", nonce)
}

fn document(board: &Board, id: u64) -> Option<(Value, String)> {
    if !board.recall(id) {
        return None;
    }
    let runs = board.runs();
    let r = runs.iter().find(|r| r.id == id)?;
    Some((r.document(), format!("run {}", r.id)))
}

/// The documents a run's report draws (one per direction of `--rpm=URL`).
fn documents(board: &Board, id: u64) -> Vec<Value> {
    let runs = board.runs();
    runs.iter().find(|r| r.id == id).map(Run::documents).unwrap_or_default()
}

/// Routes one request.
pub fn route(site: &Site, req: &Request) -> Routed {
    let whole = Routed::Whole;
    if !site.host_ok(req) {
        return whole(Response::text(
            "403 Forbidden",
            "this address answers to loopback names only\n",
        ));
    }
    let head = req.method == "HEAD";
    if req.method != "GET" && !head && req.method != "POST" {
        return whole(
            Response::text("405 Method Not Allowed", "GET, HEAD or POST\n").with_header("Allow: GET, HEAD, POST"),
        );
    }
    if req.path == "/" {
        if req.method == "POST" {
            return whole(Response::text("405 Method Not Allowed", "GET the page\n").with_header("Allow: GET, HEAD"));
        }
        // The page carries the token: on loopback anyone local may have
        // it; elsewhere only who already has it (the printed address).
        if !site.loopback() && !site.token_in(req.param("token")) {
            return whole(Response::new(
                "401 Unauthorized",
                "text/html; charset=utf-8",
                "<!DOCTYPE html><title>wirespeed</title><p>Open the address <code>wirespeed ui</code> printed: it carries the token.</p>\n",
            ));
        }
        // Only the page's own script and style sheet apply (markup the
        // live reports insert cannot bring handlers or styles of its own;
        // the charts colour their legends with SVG attributes).
        let Ok(nonce) = super::random_token() else {
            return whole(Response::text("500 Internal Server Error", "no random numbers\n"));
        };
        let csp = format!(
            "Content-Security-Policy: default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; connect-src 'self'; img-src data:; frame-ancestors 'none'"
        );
        return whole(
            Response::new("200 OK", "text/html; charset=utf-8", page_html(site, &nonce))
                .with_header(csp)
                .with_header("X-Frame-Options: DENY"),
        );
    }
    if req.path == "/metrics" {
        // Prometheus reads the schedules' newest results: on loopback
        // freely (it changes nothing), elsewhere with the token as a
        // bearer token or ?token=.
        let bearer = req.header("authorization").and_then(|h| h.strip_prefix("Bearer "));
        if !site.loopback() && !site.token_in(bearer.or(req.param("token"))) {
            return whole(
                Response::text("401 Unauthorized", "the metrics need the UI's token\n")
                    .with_header("WWW-Authenticate: Bearer"),
            );
        }
        if req.method == "POST" {
            return whole(
                Response::text("405 Method Not Allowed", "GET the metrics\n").with_header("Allow: GET, HEAD"),
            );
        }
        return whole(Response::new(
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            schedule::metrics(&site.board.history).into_bytes(),
        ));
    }
    if !req.path.starts_with("/api/") {
        return whole(Response::text("404 Not Found", "not found\n"));
    }
    if let Err(refusal) = site.authorized(req) {
        return whole(refusal);
    }
    API.route(site, req)
        .unwrap_or_else(|| whole(error("404 Not Found", "no such API")))
}

impl From<Response> for Routed {
    fn from(r: Response) -> Routed {
        Routed::Whole(r)
    }
}

const GET: &[&str] = &["GET", "HEAD"];
const POST: &[&str] = &["POST"];

/// The API, once a request has passed the host, method and token checks
/// of [`route`].
static API: LazyLock<Router<Site, Routed>> = LazyLock::new(|| {
    Router::new()
        .at(GET, "/api/runs", runs)
        .at(GET, "/api/history", history_summary)
        .at(GET, "/api/history.csv", history_file)
        .at(GET, "/api/history.json", history_file)
        .at(GET, "/api/chart", chart)
        .at(GET, "/api/schedules", schedules)
        .at(POST, "/api/schedules", add_schedule)
        .at(POST, "/api/schedules/{}/delete", delete_schedule)
        .at(POST, "/api/check", check)
        .at(POST, "/api/runs", start_run)
        .at(POST, "/api/runs/{}/stop", stop_run)
        .at(GET, "/api/runs/{}/events", live_run)
        .at(GET, "/api/runs/{}/{}", run_file)
        .at(GET, "/api/compare", compare)
});

fn id(s: &str) -> Option<u64> {
    s.parse::<u64>().ok()
}

fn query(site: &Site, req: &Request, limit: usize, cap: usize) -> Result<history::Query, String> {
    history_view::query(&site.board, req, limit, cap)
}

fn runs(site: &Site, req: &Request, _: &[&str]) -> Routed {
    let board = &site.board;
    Routed::Whole(
        match query(site, req, history_view::DEFAULT_LIMIT, history::MAX_LIST)
            .and_then(|q| history_view::list(board, &q))
        {
            Ok(v) => json_response("200 OK", &v),
            Err(e) => error("400 Bad Request", e),
        },
    )
}

fn history_summary(site: &Site, _: &Request, _: &[&str]) -> Routed {
    let board = &site.board;
    Routed::Whole(json_response(
        "200 OK",
        &json!({
            "db": board.history.path(),
            "trouble": board.history.trouble(),
            "targets": board.history.targets().iter().map(|(t, n, last)| json!({"target": t, "runs": n, "last_ms": last})).collect::<Vec<_>>(),
        }),
    ))
}

fn history_file(site: &Site, req: &Request, _: &[&str]) -> Routed {
    let board = &site.board;
    let file = req.path.trim_start_matches("/api/");
    let runs = match query(site, req, history::MAX_LIST, history::MAX_LIST).and_then(|q| history_view::all(board, &q)) {
        Ok(r) => r,
        Err(e) => return Routed::Whole(error("400 Bad Request", e)),
    };
    let (ctype, body) = if file == "history.csv" {
        ("text/csv; charset=utf-8", history_view::csv(&runs))
    } else {
        (
            "application/json",
            wirespeed_proto::json::to_formatted(&history_view::json_export(&runs)),
        )
    };
    Routed::Whole(Response::new("200 OK", ctype, body.into_bytes()).with_header(format!(
        "Content-Disposition: attachment; filename=\"wirespeed-{file}\""
    )))
}

fn chart(site: &Site, req: &Request, _: &[&str]) -> Routed {
    let board = &site.board;
    Routed::Whole(
        match query(site, req, history::MAX_POINTS, history::MAX_POINTS).and_then(|q| history_view::charts(board, &q)) {
            Ok(html) => Response::new("200 OK", "text/html; charset=utf-8", html.into_bytes()),
            Err(e) => error("400 Bad Request", e),
        },
    )
}

fn schedules(site: &Site, _: &Request, _: &[&str]) -> Routed {
    Routed::Whole(json_response("200 OK", &schedule::listing(&site.board.history)))
}

fn client_only(site: &Site) -> Result<(), Response> {
    match site.board.mode {
        Mode::Client { .. } => Ok(()),
        Mode::Server => Err(error("409 Conflict", "this page watches a server; it runs no tests")),
    }
}

fn add_schedule(site: &Site, req: &Request, _: &[&str]) -> Routed {
    let board = &site.board;
    Routed::Whole(match client_only(site).and_then(|()| parse_form(req)) {
        Err(r) => r,
        Ok(mut f) => {
            let every = f
                .as_object_mut()
                .and_then(|m| m.remove("every"))
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default();
            match schedule::check(&f, &every).and_then(|s| schedule::add(&board.history, &s).map(|id| (id, s))) {
                Ok((id, s)) => json_response(
                    "201 Created",
                    &json!({"id": id, "command": s.title, "every_s": s.every_s}),
                ),
                Err(e) => error("400 Bad Request", e),
            }
        }
    })
}

fn delete_schedule(site: &Site, _: &Request, p: &[&str]) -> Routed {
    Routed::Whole(match id(p[0]) {
        Some(n) if site.board.history.remove_schedule(n) => json_response("200 OK", &json!({"removed": n})),
        _ => error("404 Not Found", "no such schedule"),
    })
}

fn check(_: &Site, req: &Request, _: &[&str]) -> Routed {
    Routed::Whole(match parse_form(req) {
        Err(r) => r,
        Ok(f) => match form::plan(&f) {
            Ok(p) => json_response("200 OK", &json!({"command": p.command_line(), "error": null})),
            Err(e) => json_response("200 OK", &json!({"command": null, "error": e})),
        },
    })
}

fn start_run(site: &Site, req: &Request, _: &[&str]) -> Routed {
    Routed::Whole(match parse_form(req) {
        Err(r) => r,
        Ok(f) => match form::plan(&f) {
            Err(e) => error("400 Bad Request", e),
            Ok(p) => match site.board.launch(&p) {
                Ok(id) => json_response("201 Created", &json!({"id": id, "command": p.command_line()})),
                Err(e) => error("409 Conflict", e),
            },
        },
    })
}

fn stop_run(site: &Site, _: &Request, p: &[&str]) -> Routed {
    Routed::Whole(match id(p[0]) {
        Some(n) if site.board.stop(n) => json_response("200 OK", &json!({"stopping": n})),
        _ => error("409 Conflict", "no such run is running"),
    })
}

fn live_run(site: &Site, _: &Request, p: &[&str]) -> Routed {
    match id(p[0]).filter(|n| site.board.recall(*n)) {
        Some(n) => Routed::Live(n),
        None => Routed::Whole(error("404 Not Found", "no such run")),
    }
}

fn run_file(site: &Site, _: &Request, p: &[&str]) -> Routed {
    let (n, file) = (p[0], p[1]);
    let Some((num, (doc, name))) = id(n).and_then(|n| Some((n, document(&site.board, n)?))) else {
        return Routed::Whole(error("404 Not Found", "no such run"));
    };
    let stem = format!("wirespeed-run-{n}");
    let (ctype, body) = match file {
        "result.json" => ("application/json", wirespeed_proto::json::to_formatted(&doc)),
        "result.csv" => ("text/csv; charset=utf-8", export::csv(&doc)),
        "report.html" => (
            "text/html; charset=utf-8",
            wirespeed_report::html::render_documents(&documents(&site.board, num), &name),
        ),
        _ => return Routed::Whole(error("404 Not Found", "no such file")),
    };
    let ext = file.rsplit('.').next().unwrap_or("txt");
    Routed::Whole(
        Response::new("200 OK", ctype, body.into_bytes())
            .with_header(format!("Content-Disposition: attachment; filename=\"{stem}.{ext}\"")),
    )
}

fn compare(site: &Site, req: &Request, _: &[&str]) -> Routed {
    let pick = |k: &str| req.param(k).and_then(id).and_then(|n| document(&site.board, n));
    Routed::Whole(match (pick("a"), pick("b")) {
        (Some((a, la)), Some((b, lb))) => {
            Response::new("200 OK", "text/html; charset=utf-8", export::compare(&a, &la, &b, &lb))
        }
        _ => error("404 Not Found", "compare needs two runs: ?a=N&b=M"),
    })
}

fn parse_form(req: &Request) -> Result<Value, Response> {
    serde_json::from_slice(&req.body).map_err(|e| error("400 Bad Request", format!("the form is not JSON: {e}")))
}

/// Streams run `id` to `s`: a `render` event (the report's section, as the
/// HTML report draws it) and a `state` event each time it changes, then
/// `done` when it ends. Ends early when the page goes away.
fn live(site: &Site, s: &mut Events, id: u64) -> std::io::Result<()> {
    let mut seen: Option<(usize, &str)> = None;
    let mut last_render = Instant::now() - RENDER_EVERY;
    loop {
        let mut runs = site.board.runs();
        let now_of = |runs: &Vec<super::board::Run>| {
            runs.iter()
                .find(|r| r.id == id)
                .map(|r| (r.events.len(), r.state.word()))
        };
        let mut now = now_of(&runs);
        if now == seen {
            runs = site.board.wait(runs, QUIET);
            now = now_of(&runs);
            if now == seen {
                drop(runs);
                // A comment: finds a page that has gone.
                s.comment("idle")?;
                continue;
            }
        }
        let Some(r) = runs.iter().find(|r| r.id == id) else {
            return Ok(());
        };
        let wait = RENDER_EVERY.saturating_sub(last_render.elapsed());
        let running = r.state == State::Running;
        if running && !wait.is_zero() {
            drop(runs);
            std::thread::sleep(wait);
            continue;
        }
        let (docs, state) = (r.documents(), r.summary());
        seen = now;
        drop(runs);
        last_render = Instant::now();
        let html: String = (docs.iter().enumerate())
            .map(|(i, doc)| page::section(i, &model::view(doc)))
            .collect();
        s.event("render", &html)?;
        s.event("state", &state.to_string())?;
        if !running {
            return s.event("done", &state.to_string());
        }
    }
}

/// Serves the UI on `listener` until the handle is dropped: each request
/// routed on a worker thread, a live run streamed from a thread of its
/// own.
pub(crate) fn serve(listener: TcpListener, site: Arc<Site>) -> Result<http::Serving, wirespeed_core::error::Error> {
    let handler = move |req: Request| match route(&site, &req) {
        Routed::Whole(resp) => http::Answer::Whole(resp),
        Routed::Live(id) => {
            let site = site.clone();
            http::Answer::Events(Box::new(move |mut events| {
                let _ = live(&site, &mut events, id);
            }))
        }
    };
    http::serve(listener, "ws-ui", LIMITS, Arc::new(handler))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(addr: &str) -> Site {
        Site {
            board: Board::new(
                Mode::Client { max_running: 1 },
                Arc::new(super::super::history::History::open(":memory:").unwrap()),
            ),
            token: "0123456789abcdef".into(),
            addr: addr.parse().unwrap(),
        }
    }

    fn req(text: &str, body: &str) -> Request {
        let mut r = http::parse_head(text.replace('|', "\r\n").as_bytes()).unwrap();
        r.body = body.as_bytes().to_vec();
        r
    }

    fn status(a: Routed) -> &'static str {
        match a {
            Routed::Whole(r) => r.status,
            Routed::Live(_) => "live",
        }
    }

    #[test]
    fn loopback_pages_carry_the_token_and_answer_loopback_names_only() {
        let s = site("127.0.0.1:5280");
        let Routed::Whole(r) = route(&s, &req("GET / HTTP/1.1|Host: 127.0.0.1:5280", "")) else {
            panic!()
        };
        assert_eq!(r.status, "200 OK");
        assert!(
            String::from_utf8(r.body)
                .unwrap()
                .contains("\"token\":\"0123456789abcdef\"")
        );
        assert_eq!(
            status(route(&s, &req("GET / HTTP/1.1|Host: localhost:5280", ""))),
            "200 OK"
        );
        assert_eq!(status(route(&s, &req("GET / HTTP/1.1|Host: [::1]:5280", ""))), "200 OK");
        assert_eq!(
            status(route(&s, &req("GET / HTTP/1.1|Host: evil.example:5280", ""))),
            "403 Forbidden"
        );
        assert_eq!(status(route(&s, &req("GET / HTTP/1.1", ""))), "403 Forbidden");
    }

    #[test]
    fn requests_without_the_token_are_refused() {
        let s = site("0.0.0.0:5280");
        assert_eq!(
            status(route(&s, &req("GET / HTTP/1.1|Host: h", ""))),
            "401 Unauthorized"
        );
        assert_eq!(
            status(route(&s, &req("GET /?token=0123456789abcdef HTTP/1.1|Host: h", ""))),
            "200 OK"
        );
        assert_eq!(
            status(route(&s, &req("GET /api/runs HTTP/1.1|Host: h", ""))),
            "401 Unauthorized"
        );
        assert_eq!(
            status(route(
                &s,
                &req("GET /api/runs?token=0123456789abcdeX HTTP/1.1|Host: h", "")
            )),
            "401 Unauthorized"
        );
        assert_eq!(
            status(route(
                &s,
                &req("GET /api/runs?token=0123456789abcdef HTTP/1.1|Host: h", "")
            )),
            "200 OK"
        );
        let form = r#"{"host": "127.0.0.1", "parallel": "0"}"#;
        // A POST's token must come in the header, and from this origin.
        assert_eq!(
            status(route(
                &s,
                &req("POST /api/check?token=0123456789abcdef HTTP/1.1|Host: h", form)
            )),
            "401 Unauthorized"
        );
        // The right token from the wrong origin: the refusal says so.
        let Routed::Whole(r) = route(
            &s,
            &req(
                "POST /api/check HTTP/1.1|Host: h|Origin: http://evil|X-Wirespeed-Token: 0123456789abcdef",
                form,
            ),
        ) else {
            panic!()
        };
        assert_eq!(r.status, "403 Forbidden");
        let body = String::from_utf8(r.body).unwrap();
        assert!(body.contains("another origin (http://evil)"), "{body}");
        assert!(!body.contains("token"), "{body}");
        // A wrong token is the token's fault, whatever the origin.
        assert_eq!(
            status(route(
                &s,
                &req(
                    "POST /api/check HTTP/1.1|Host: h|Origin: http://evil|X-Wirespeed-Token: 0123456789abcdeX",
                    form
                )
            )),
            "401 Unauthorized"
        );
        let Routed::Whole(r) = route(
            &s,
            &req(
                "POST /api/check HTTP/1.1|Host: h|Origin: http://h|X-Wirespeed-Token: 0123456789abcdef",
                form,
            ),
        ) else {
            panic!()
        };
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .starts_with("wirespeed: parameter error - "),
            "{v}"
        );
    }

    #[test]
    fn a_refused_form_starts_nothing() {
        let s = site("127.0.0.1:5280");
        let a = route(
            &s,
            &req(
                "POST /api/runs HTTP/1.1|Host: 127.0.0.1|X-Wirespeed-Token: 0123456789abcdef",
                r#"{"host":"127.0.0.1","time":"-1"}"#,
            ),
        );
        assert_eq!(status(a), "400 Bad Request");
        let a = route(
            &s,
            &req(
                "POST /api/runs HTTP/1.1|Host: 127.0.0.1|X-Wirespeed-Token: 0123456789abcdef",
                "not json",
            ),
        );
        assert_eq!(status(a), "400 Bad Request");
        assert!(s.board.runs().is_empty());
        let a = route(
            &s,
            &req(
                "GET /api/runs/1/events?token=0123456789abcdef HTTP/1.1|Host: 127.0.0.1",
                "",
            ),
        );
        assert_eq!(status(a), "404 Not Found");
        let a = route(&s, &req("DELETE /api/runs HTTP/1.1|Host: 127.0.0.1", ""));
        assert_eq!(status(a), "405 Method Not Allowed");
    }
}
