//! `wirespeed exporter`: a Prometheus probe in the manner of the blackbox
//! exporter and iperf3_exporter. `GET /probe?target=HOST&...` runs one
//! client test (either dialect, through the normal client) and answers
//! its numbers under iperf3_exporter's metric names; `GET /metrics` is the
//! exporter's own. Every request is checked before anything runs: its
//! credentials (`--token` for probes; `--basic-auth` for every path), its
//! parameters ([`probe::parse`]), the target against `--allow`, and the
//! number of probes running (`--max-probes`).

pub mod probe;

use std::fmt::Write as _;
use std::net::{IpAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wirespeed_core::error::{Code, Error};
use wirespeed_http as http;
use wirespeed_http::{Answer, Limits, Request, Response};
use wirespeed_iperf::server::access::{AccessPolicy, split_list};
use wirespeed_proto::iperf3::auth::base64_decode;
use wirespeed_report::metrics::{head, number};

/// iperf3_exporter's port.
pub(crate) const DEFAULT_LISTEN: &str = ":9579";
/// Probes that may run at once unless told.
pub(crate) const DEFAULT_MAX_PROBES: usize = 4;
/// Requests answered at once beyond the probes (scrapes of /metrics,
/// refusals); more wait their turn.
const SPARE_WORKERS: usize = 16;
const PROM: &str = "text/plain; version=0.0.4; charset=utf-8";
/// The realm a 401 names for `--basic-auth`.
const REALM: &str = "wirespeed exporter";
/// The longest `--basic-auth-file` read.
const MAX_BASIC_AUTH_FILE: u64 = 4096;

/// The command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    /// `ADDR:PORT`.
    pub listen: String,
    /// `--allow` entries.
    pub allow: Vec<String>,
    /// `--token`.
    pub token: Option<String>,
    /// `--basic-auth USER:PASSWORD` (or the line of `--basic-auth-file`).
    pub basic_auth: Option<String>,
    /// `--max-probes`.
    pub max_probes: usize,
}

/// Usage of the `exporter` command.
pub fn usage(prog: &str) -> String {
    format!(
        "Usage: {prog} exporter [--listen ADDR:PORT] [--allow LIST] [--token TOKEN]\n\
         \x20      [--basic-auth USER:PASSWORD | --basic-auth-file PATH] [--max-probes N]\n\
         \n\
         A Prometheus probe, like iperf3_exporter: GET /probe?target=HOST runs one test\n\
         against HOST and answers its numbers (iperf3_up, iperf3_sent_bytes, ...);\n\
         GET /metrics answers the exporter's own. Probe parameters: port, reverse_mode,\n\
         udp_mode, quic_mode (a wirespeed server), bitrate, period, bind, parallel,\n\
         dialect (iperf3 or iperf2),\n\
         latency (true: round trips idle and under load, wirespeed_probe_latency_*),\n\
         rpm (true: the responsiveness test instead, wirespeed_probe_rpm*).\n\
         \n\
         \x20 --listen ADDR:PORT        where to listen (default {DEFAULT_LISTEN}, every address)\n\
         \x20 --allow LIST              targets that may be probed (addresses, networks, names)\n\
         \x20 --token TOKEN             probes require 'Authorization: Bearer TOKEN' or ?token=TOKEN\n\
         \x20 --basic-auth USER:PASS    every path requires 'Authorization: Basic ...' (HTTP basic\n\
         \x20                           auth; with --token, either is accepted)\n\
         \x20 --basic-auth-file PATH    the same, USER:PASSWORD read from the file's first line\n\
         \x20 --max-probes N            probes that may run at once (default {DEFAULT_MAX_PROBES})\n\
         \x20 -h, --help                show this message and quit\n"
    )
}

/// Parses the command line (`None`: help was asked for).
pub fn parse(args: &[String]) -> Result<Option<Args>, Error> {
    let perr = |m: String| Error::param_msg(Code::NONE, m);
    let mut a = Args {
        listen: DEFAULT_LISTEN.into(),
        allow: Vec::new(),
        token: None,
        basic_auth: None,
        max_probes: DEFAULT_MAX_PROBES,
    };
    let mut it = args.iter();
    while let Some((arg, name, inline)) = wirespeed_cli::values::next_option(&mut it) {
        let mut value = || wirespeed_cli::values::option_value(name, &inline, &mut it);
        match name {
            "-h" | "--help" => return Ok(None),
            "--listen" => a.listen = value()?,
            "--allow" => a.allow.extend(split_list("--allow", &value()?).map_err(perr)?),
            "--token" => {
                let t = value()?;
                if t.is_empty() || !t.bytes().all(|c| c.is_ascii_graphic()) {
                    return Err(perr("--token wants printable characters without spaces".into()));
                }
                a.token = Some(t);
            }
            "--basic-auth" | "--basic-auth-file" => {
                if a.basic_auth.is_some() {
                    return Err(perr("give one of --basic-auth and --basic-auth-file, once".into()));
                }
                let v = value()?;
                let pair = if name == "--basic-auth" {
                    v
                } else {
                    read_basic_auth_file(&v).map_err(perr)?
                };
                a.basic_auth = Some(basic_pair(name, pair).map_err(perr)?);
            }
            "--max-probes" => {
                let v = value()?;
                a.max_probes = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=64).contains(n))
                    .ok_or_else(|| perr(format!("--max-probes wants 1 to 64, not '{v}'")))?;
            }
            _ => return Err(perr(format!("exporter: unrecognized argument '{arg}'"))),
        }
    }
    Ok(Some(a))
}

/// A `USER:PASSWORD` pair as HTTP basic auth carries it: a user without
/// ':', and neither with control characters.
fn basic_pair(option: &str, pair: String) -> Result<String, String> {
    let ok = pair
        .split_once(':')
        .is_some_and(|(user, _)| !user.is_empty() && !pair.chars().any(char::is_control));
    if ok {
        Ok(pair)
    } else {
        Err(format!(
            "{option} wants USER:PASSWORD (a user without ':', no control characters)"
        ))
    }
}

/// The first line of `--basic-auth-file` (its line ending dropped).
fn read_basic_auth_file(path: &str) -> Result<String, String> {
    use std::io::Read as _;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_BASIC_AUTH_FILE).read_to_string(&mut text))
        .map_err(|e| format!("--basic-auth-file {path}: {e}"))?;
    Ok(text.lines().next().unwrap_or("").to_string())
}

/// How probes ended, for `/metrics`.
#[derive(Debug, Default)]
struct Counts {
    up: u64,
    down: u64,
    invalid: u64,
    unauthorized: u64,
    forbidden: u64,
    busy: u64,
    /// Per duration bucket (not cumulative), then past the last bound.
    hist: [u64; DURATION_BUCKETS.len() + 1],
    sum: f64,
}

/// Probe durations' histogram bounds, seconds.
const DURATION_BUCKETS: [f64; 9] = [0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0];

/// What the exporter shares between its connections.
pub struct Exporter {
    policy: AccessPolicy,
    token: Option<String>,
    /// `USER:PASSWORD`, as a basic `Authorization` header decodes.
    basic: Option<String>,
    max_probes: usize,
    in_flight: AtomicUsize,
    counts: Mutex<Counts>,
}

impl Exporter {
    /// An exporter of `args` (host names in `--allow` resolved now).
    pub fn new(args: &Args) -> Result<Exporter, Error> {
        let policy = AccessPolicy::from_config(&wirespeed_core::config::TestConfig {
            server: wirespeed_core::config::ServerOptions {
                allow: args.allow.clone(),
                ..Default::default()
            },
            ..Default::default()
        })?;
        Ok(Exporter {
            policy,
            token: args.token.clone(),
            basic: args.basic_auth.clone(),
            max_probes: args.max_probes,
            in_flight: AtomicUsize::new(0),
            counts: Mutex::new(Counts::default()),
        })
    }

    fn count(&self, f: impl FnOnce(&mut Counts)) {
        if let Ok(mut c) = self.counts.lock() {
            f(&mut c);
        }
    }

    /// The exporter's own metrics.
    pub fn render(&self) -> String {
        let mut o = String::new();
        let c = self.counts.lock().map(|c| {
            (
                [
                    ("up", c.up),
                    ("down", c.down),
                    ("invalid", c.invalid),
                    ("unauthorized", c.unauthorized),
                    ("forbidden", c.forbidden),
                    ("busy", c.busy),
                ],
                c.hist,
                c.sum,
            )
        });
        let Ok((outcomes, hist, sum)) = c else {
            return o;
        };
        head(
            &mut o,
            "wirespeed_exporter_probes_total",
            "counter",
            "Probe requests by outcome.",
        );
        for (k, v) in outcomes {
            let _ = writeln!(o, "wirespeed_exporter_probes_total{{outcome=\"{k}\"}} {v}");
        }
        head(
            &mut o,
            "wirespeed_exporter_probe_duration_seconds",
            "histogram",
            "How long the probes that ran took.",
        );
        let mut cumulative = 0;
        for (b, n) in DURATION_BUCKETS.iter().zip(hist) {
            cumulative += n;
            let _ = writeln!(
                o,
                "wirespeed_exporter_probe_duration_seconds_bucket{{le=\"{b}\"}} {cumulative}"
            );
        }
        cumulative += hist[DURATION_BUCKETS.len()];
        let _ = writeln!(
            o,
            "wirespeed_exporter_probe_duration_seconds_bucket{{le=\"+Inf\"}} {cumulative}"
        );
        let _ = writeln!(o, "wirespeed_exporter_probe_duration_seconds_sum {}", number(sum));
        let _ = writeln!(o, "wirespeed_exporter_probe_duration_seconds_count {cumulative}");
        head(
            &mut o,
            "wirespeed_exporter_probes_in_flight",
            "gauge",
            "Probes running now.",
        );
        let _ = writeln!(
            o,
            "wirespeed_exporter_probes_in_flight {}",
            self.in_flight.load(Relaxed)
        );
        head(
            &mut o,
            "wirespeed_exporter_max_probes",
            "gauge",
            "Probes that may run at once.",
        );
        let _ = writeln!(o, "wirespeed_exporter_max_probes {}", self.max_probes);
        o
    }

    /// Whether `req` carries a credential the exporter was given (the
    /// token, or the basic-auth pair); true when it was given none.
    fn authorized(&self, req: &Request) -> bool {
        if self.token.is_none() && self.basic.is_none() {
            return true;
        }
        let auth = req.header("authorization").unwrap_or("");
        let (scheme, rest) = auth.trim().split_once(' ').unwrap_or((auth, ""));
        let bearer = self.token.as_ref().is_some_and(|t| {
            (scheme == "Bearer" && same(rest.trim().as_bytes(), t.as_bytes()))
                || req.param("token").is_some_and(|q| same(q.as_bytes(), t.as_bytes()))
        });
        let basic = self.basic.as_ref().is_some_and(|pair| {
            scheme.eq_ignore_ascii_case("basic")
                && base64_decode(rest.trim()).is_some_and(|d| same(&d, pair.as_bytes()))
        });
        bearer || basic
    }

    /// The 401 for a request without an accepted credential, naming the
    /// ones the exporter takes.
    fn unauthorized(&self) -> Response {
        let mut ways = Vec::new();
        if self.basic.is_some() {
            ways.push("HTTP basic auth (Authorization: Basic ...)");
        }
        if self.token.is_some() {
            ways.push("a token (Authorization: Bearer TOKEN or ?token=TOKEN)");
        }
        let mut r = Response::text(
            "401 Unauthorized",
            format!("credentials are required: {}\n", ways.join(" or ")),
        );
        if self.basic.is_some() {
            r = r.with_header(format!("WWW-Authenticate: Basic realm=\"{REALM}\""));
        }
        if self.token.is_some() {
            r = r.with_header("WWW-Authenticate: Bearer");
        }
        r
    }

    /// Answers one request (a probe runs here, on the connection's thread).
    pub fn route(&self, req: &Request) -> Response {
        if req.method != "GET" && req.method != "HEAD" {
            return Response::text("405 Method Not Allowed", "GET or HEAD only\n").with_header("Allow: GET, HEAD");
        }
        // Basic auth guards every path (the token, probes only: /metrics
        // stays open to a scraper given only a --token, as it was).
        if self.basic.is_some() && req.path != "/probe" && !self.authorized(req) {
            return self.unauthorized();
        }
        match req.path.as_str() {
            "/metrics" => Response::new("200 OK", PROM, self.render()),
            "/probe" => self.probe(req),
            "/" => Response::new(
                "200 OK",
                "text/html; charset=utf-8",
                "<!DOCTYPE html><html><head><title>wirespeed exporter</title></head><body><h1>wirespeed exporter</h1>\
                 <p><a href=\"/probe?target=127.0.0.1\">/probe?target=127.0.0.1</a></p><p><a href=\"/metrics\">/metrics</a></p></body></html>\n",
            ),
            _ => Response::text("404 Not Found", "not found: try /probe?target=HOST or /metrics\n"),
        }
    }

    fn probe(&self, req: &Request) -> Response {
        if !self.authorized(req) {
            self.count(|c| c.unauthorized += 1);
            return self.unauthorized();
        }
        let spec = match probe::parse(req) {
            Ok(s) => s,
            Err(why) => {
                self.count(|c| c.invalid += 1);
                return Response::text("400 Bad Request", format!("{why}\n"));
            }
        };
        let (spec, budget) = match probe::fit_spec(spec, req.header("x-prometheus-scrape-timeout-seconds")) {
            Ok(f) => f,
            Err(why) => {
                self.count(|c| c.invalid += 1);
                return Response::text("400 Bad Request", format!("{why}\n"));
            }
        };
        // A place among the probes, or 503.
        let taken = self
            .in_flight
            .fetch_update(Relaxed, Relaxed, |n| (n < self.max_probes).then_some(n + 1))
            .is_ok();
        if !taken {
            self.count(|c| c.busy += 1);
            return Response::text(
                "503 Service Unavailable",
                format!(
                    "{} probes are running already (--max-probes): try again later\n",
                    self.max_probes
                ),
            );
        }
        let r = self.run_probe(&spec, budget);
        self.in_flight.fetch_sub(1, Relaxed);
        r
    }

    fn run_probe(&self, spec: &probe::Spec, budget: Duration) -> Response {
        let t0 = Instant::now();
        let until = t0 + budget;
        // The target's address: checked against --allow, and the one the
        // client connects to (a name that resolves anew cannot slip past).
        let host = if self.policy.is_open() {
            spec.target.clone()
        } else {
            let ips: Vec<IpAddr> = match spec.target.parse::<IpAddr>() {
                Ok(ip) => vec![ip],
                Err(_) => resolve(&spec.target, budget),
            };
            match ips.into_iter().find(|ip| self.policy.permits(*ip)) {
                Some(ip) => ip.to_string(),
                None => {
                    self.count(|c| c.forbidden += 1);
                    return Response::text(
                        "403 Forbidden",
                        format!("target '{}' is not in the exporter's --allow list\n", spec.target),
                    );
                }
            }
        };
        let left = until.saturating_duration_since(Instant::now());
        let outcome = match probe::config(spec, &host, left) {
            Err(e) => probe::Outcome {
                error: Some(e.text()),
                ..Default::default()
            },
            Ok(cfg) => bounded(cfg, host, left),
        };
        let took = t0.elapsed();
        let up = outcome.up();
        self.count(|c| {
            if up {
                c.up += 1
            } else {
                c.down += 1
            }
            let d = took.as_secs_f64();
            c.hist[DURATION_BUCKETS
                .iter()
                .position(|b| d <= *b)
                .unwrap_or(DURATION_BUCKETS.len())] += 1;
            c.sum += d;
        });
        let mut r = Response::new("200 OK", PROM, probe::render(spec, &outcome, took));
        if let Some(e) = outcome.error.or(outcome.latency_error) {
            // Why it was down, or else why the latency probes were not
            // answered, for whoever looks (one line, no newlines).
            let line: String = e.chars().filter(|c| !c.is_control()).take(200).collect();
            r = r.with_header(format!("X-Wirespeed-Probe-Error: {line}"));
        }
        r
    }
}

/// Compares credentials without stopping at the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The addresses of `name`, or none if they are not known within `limit`.
fn resolve(name: &str, limit: Duration) -> Vec<IpAddr> {
    let (tx, rx) = std::sync::mpsc::channel();
    let name = name.to_string();
    let spawned = std::thread::Builder::new()
        .name("ws-exp-resolve".into())
        .spawn(move || {
            let r = wirespeed_core::net::resolve(&name, 0, wirespeed_core::config::Family::Any)
                .map(|a| a.into_iter().map(|s| s.ip()).collect())
                .unwrap_or_default();
            let _ = tx.send(r);
        });
    if spawned.is_err() {
        return Vec::new();
    }
    rx.recv_timeout(limit).unwrap_or_default()
}

/// Runs the probe on a thread of its own, and stops it (as a signal would)
/// when it passes `limit`.
fn bounded(cfg: wirespeed_core::config::TestConfig, host: String, limit: Duration) -> probe::Outcome {
    let signal = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let sig = signal.clone();
    let until = Instant::now() + limit;
    let spawned = std::thread::Builder::new().name("ws-exp-probe".into()).spawn(move || {
        let _ = tx.send(probe::run(&cfg, &host, &sig, until));
    });
    if let Err(e) = spawned {
        return probe::Outcome {
            error: Some(format!("cannot start the probe: {e}")),
            ..Default::default()
        };
    }
    match rx.recv_timeout(limit) {
        Ok(o) => o,
        Err(_) => {
            signal.store(15, Relaxed);
            // Give it a moment to end and say so; past that, it is down.
            let _ = rx.recv_timeout(Duration::from_millis(300));
            probe::Outcome {
                error: Some(format!("the probe did not finish within {:.1} s", limit.as_secs_f64())),
                ..Default::default()
            }
        }
    }
}

/// What the exporter says as it starts: where it listens, and a warning
/// when anyone who reaches the host may run probes through it.
pub fn announcement(listener: &TcpListener, args: &Args) -> (String, Option<String>) {
    let text = http::say(
        "Exporter at ",
        &http::urls(listener, |a| format!("http://{a}/probe?target=HOST")),
    );
    let local = listener.local_addr().ok();
    let everywhere = local.is_some_and(|a| a.ip().is_unspecified());
    let warning = (everywhere && args.token.is_none() && args.basic_auth.is_none()).then(|| {
        let port = local.map_or(0, |a| a.port());
        format!(
            "the exporter listens on every address with no --token or --basic-auth: anyone who reaches port \
             {port} can make this host run tests{}; give it one address (--listen 127.0.0.1:{port}), a --token \
             or --basic-auth",
            if args.allow.is_empty() {
                " against any target"
            } else {
                ""
            }
        )
    });
    (text, warning)
}

/// `wirespeed exporter ...`: serves until interrupted.
pub fn run(args: &[String], prog: &str) -> i32 {
    let a = match parse(args) {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{}", usage(prog));
            return 0;
        }
        Err(e) => {
            eprintln!("{prog}: {}", e.line());
            return 1;
        }
    };
    let started = Exporter::new(&a).and_then(|ex| {
        let listener = http::listen(&a.listen, "--listen", "the exporter")?;
        Ok((ex, listener))
    });
    let (ex, listener) = match started {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{prog}: {}", e.line());
            return 1;
        }
    };
    let (text, warning) = announcement(&listener, &a);
    print!("{text}");
    if let Some(w) = warning {
        eprintln!("{prog}: warning: {w}");
    }
    println!("(Ctrl-C to quit)");
    // A probe takes seconds on its worker: as many workers as probes,
    // and some for the rest.
    let limits = Limits {
        workers: ex.max_probes + SPARE_WORKERS,
        ..Limits::DEFAULT
    };
    let ex = Arc::new(ex);
    let serving = http::serve(
        listener,
        "ws-exporter",
        limits,
        Arc::new(move |req: Request| Answer::Whole(ex.route(&req))),
    );
    let _serving = match serving {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{prog}: {}", e.line());
            return 1;
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, stop.clone());
    }
    while !stop.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(extra: &[&str]) -> Exporter {
        let args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        Exporter::new(&parse(&args).unwrap().unwrap()).unwrap()
    }

    fn get(e: &Exporter, line: &str) -> Response {
        e.route(&http::parse_head(line.as_bytes()).unwrap())
    }

    #[test]
    fn the_command_line_takes_its_four_options() {
        let a = parse(&[
            "--listen=127.0.0.1:0".into(),
            "--allow".into(),
            "10.0.0.0/8,::1".into(),
            "--max-probes".into(),
            "2".into(),
        ])
        .unwrap()
        .unwrap();
        assert_eq!((a.listen.as_str(), a.allow.len(), a.max_probes), ("127.0.0.1:0", 2, 2));
        assert!(parse(&["--max-probes".into(), "0".into()]).is_err());
        assert!(parse(&["--allow".into(), "not/an/entry".into()]).is_err());
        assert!(parse(&["--bogus".into()]).is_err());
        assert!(parse(&["--token".into(), "a b".into()]).is_err());
        assert!(parse(&["-h".into()]).unwrap().is_none());
    }

    #[test]
    fn refusals_come_before_any_test() {
        let e = ex(&["--token", "sekrit", "--allow", "192.0.2.0/24"]);
        assert_eq!(
            get(&e, "GET /probe?target=127.0.0.1 HTTP/1.1").status,
            "401 Unauthorized"
        );
        assert_eq!(
            get(&e, "GET /probe?target=127.0.0.1&token=sekrit HTTP/1.1").status,
            "403 Forbidden"
        );
        assert_eq!(
            get(&e, "GET /probe?target=-s HTTP/1.1\r\nAuthorization: Bearer sekrit").status,
            "400 Bad Request"
        );
        assert_eq!(get(&e, "POST /probe HTTP/1.1").status, "405 Method Not Allowed");
        let m = String::from_utf8(get(&e, "GET /metrics HTTP/1.1").body).unwrap();
        for outcome in ["unauthorized", "forbidden", "invalid"] {
            assert!(
                m.contains(&format!("wirespeed_exporter_probes_total{{outcome=\"{outcome}\"}} 1")),
                "{m}"
            );
        }
        assert!(m.contains("wirespeed_exporter_probes_in_flight 0"), "{m}");
        assert!(same(b"abc", b"abc") && !same(b"abc", b"abd") && !same(b"abc", b"ab"));
    }

    fn basic(pair: &str) -> String {
        format!(
            "Authorization: Basic {}",
            wirespeed_proto::iperf3::auth::base64_encode(pair.as_bytes())
        )
    }

    #[test]
    fn basic_auth_is_read_from_the_command_line_or_a_file() {
        let one = |v: &[&str]| parse(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let a = one(&["--basic-auth", "prom:pa:ss word"]).unwrap().unwrap();
        assert_eq!(a.basic_auth.as_deref(), Some("prom:pa:ss word"));
        for bad in ["nocolon", ":pw", "us\ter:pw"] {
            assert!(one(&["--basic-auth", bad]).is_err(), "{bad}");
        }
        let dir = std::env::temp_dir().join(format!("ws-exp-basic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("pw");
        std::fs::write(&file, "prom:from-file\r\nignored\n").unwrap();
        let path = file.to_str().unwrap();
        let a = one(&["--basic-auth-file", path]).unwrap().unwrap();
        assert_eq!(a.basic_auth.as_deref(), Some("prom:from-file"));
        assert!(one(&["--basic-auth-file", path, "--basic-auth", "a:b"]).is_err());
        std::fs::write(&file, "").unwrap();
        assert!(one(&["--basic-auth-file", path]).is_err());
        let _ = std::fs::remove_dir_all(&dir);
        assert!(one(&["--basic-auth-file", "/nonexistent/wirespeed/pw"]).is_err());
    }

    #[test]
    fn basic_auth_guards_every_path_and_the_token_still_works() {
        let e = ex(&["--basic-auth", "prom:s3cret", "--allow", "192.0.2.0/24"]);
        for path in ["/metrics", "/probe?target=127.0.0.1", "/"] {
            for auth in [
                String::new(),
                basic("prom:wrong"),
                basic("other:s3cret"),
                basic("prom:s3cret2"),
            ] {
                let r = get(&e, &format!("GET {path} HTTP/1.1\r\n{auth}"));
                assert_eq!(r.status, "401 Unauthorized", "{path} {auth}");
                assert!(
                    r.headers
                        .contains(&"WWW-Authenticate: Basic realm=\"wirespeed exporter\"".to_string()),
                    "{:?}",
                    r.headers
                );
            }
        }
        for garbage in [
            "Basic",
            "Basic !!!!",
            "Basic cHJvbTpzM2Ny",
            "Bearer prom:s3cret",
            "Basic ====",
        ] {
            let r = get(&e, &format!("GET /metrics HTTP/1.1\r\nAuthorization: {garbage}"));
            assert_eq!(r.status, "401 Unauthorized", "{garbage}");
        }
        assert_eq!(
            get(&e, &format!("GET /metrics HTTP/1.1\r\n{}", basic("prom:s3cret"))).status,
            "200 OK"
        );
        // The scheme's case is free; past the credentials, the allow list.
        let lower = basic("prom:s3cret").replace("Basic", "basic");
        assert_eq!(
            get(&e, &format!("GET /probe?target=127.0.0.1 HTTP/1.1\r\n{lower}")).status,
            "403 Forbidden"
        );
        // Both given: either credential, on every path.
        let both = ex(&["--basic-auth", "prom:s3cret", "--token", "tok"]);
        assert_eq!(
            get(&both, "GET /metrics HTTP/1.1\r\nAuthorization: Bearer tok").status,
            "200 OK"
        );
        assert_eq!(
            get(&both, &format!("GET /metrics HTTP/1.1\r\n{}", basic("prom:s3cret"))).status,
            "200 OK"
        );
        let r = get(&both, "GET /probe?target=h HTTP/1.1\r\nAuthorization: Bearer nope");
        assert_eq!(r.status, "401 Unauthorized");
        assert_eq!(
            r.headers.iter().filter(|h| h.starts_with("WWW-Authenticate:")).count(),
            2,
            "{:?}",
            r.headers
        );
        // A token alone keeps /metrics open, as before.
        let token = ex(&["--token", "tok"]);
        assert_eq!(get(&token, "GET /metrics HTTP/1.1").status, "200 OK");
        let m = String::from_utf8(get(&e, &format!("GET /metrics HTTP/1.1\r\n{}", basic("prom:s3cret"))).body).unwrap();
        // Refused probes count; refused scrapes of other paths do not.
        assert!(
            m.contains("wirespeed_exporter_probes_total{outcome=\"unauthorized\"} 4"),
            "{m}"
        );
    }
}
