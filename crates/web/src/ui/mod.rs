//! The web UI: `wirespeed ui` serves a page on which a user sets up a test
//! in either dialect, runs it, and watches it draw itself; `wirespeed -s
//! --ui ADDR` serves the same page watching the server's tests. Runs are
//! kept on a [`board::Board`]; the page is rendered from their
//! `--json-stream` events by the HTML report's code (`docs/ui.md`).

pub mod board;
pub mod export;
pub mod form;
pub mod history;
mod history_view;
pub mod schedule;
mod web;

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use board::{Board, Mode};

use wirespeed_core::error::{Code, Error};

/// Where `wirespeed ui` listens unless told.
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:5280";

/// A bound UI, not yet serving.
pub struct Endpoint {
    listener: TcpListener,
    token: String,
    /// The history's file, checked (see [`Endpoint::keep_history`]).
    db: String,
}

/// The page being served; stops when dropped.
pub struct Serving {
    _thread: wirespeed_http::Serving,
    /// The page's addresses (with the token when one is needed to open
    /// it): one, or for a listener on every address, each of this host's.
    pub urls: Vec<String>,
}

impl Serving {
    /// `lead` and the page's address, then a line for each other address
    /// it can be opened at, aligned under the first.
    pub fn say(&self, lead: &str) -> String {
        wirespeed_http::say(lead, &self.urls)
    }
}

/// 128 random bits in hex, from the system's source (no weaker fallback:
/// tokens and nonces must not be guessable).
fn random_token() -> Result<String, Error> {
    let mut b = [0u8; 16];
    wirespeed_sys::os_random(&mut b).map_err(|e| Error::io(Code::NONE, &e))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

impl Endpoint {
    /// Binds `spec` (`ADDR:PORT`, `[V6]:PORT`, or `:PORT` for every
    /// address). `token` is the one requests must carry (a random one if
    /// none is given).
    pub fn bind(spec: &str, token: Option<String>) -> Result<Endpoint, Error> {
        let token = match token {
            Some(t) if t.len() >= 16 && t.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_') => t,
            Some(_) => {
                return Err(Error::param_msg(
                    Code::NONE,
                    "--token wants at least 16 letters, digits, '-' or '_'",
                ));
            }
            None => random_token()?,
        };
        let listener = wirespeed_http::listen(spec, "--ui/--listen", "the web UI")?;
        Ok(Endpoint {
            listener,
            token,
            db: ":memory:".into(),
        })
    }

    /// Keeps the runs in the history at `given` (`--db`; the user's data
    /// directory unless given): the file is opened once here, so a path
    /// that cannot be used is refused before anything serves.
    pub fn keep_history(mut self, given: Option<&str>) -> Result<Endpoint, Error> {
        let perr = |m: String| Error::param_msg(Code::NONE, m);
        let path = history::resolve(given).map_err(perr)?;
        drop(history::History::open(&path).map_err(perr)?);
        self.db = path;
        Ok(self)
    }

    /// Where the history is kept.
    pub fn db(&self) -> &str {
        &self.db
    }

    /// A board for `mode`, recording into this endpoint's history (open
    /// it in the process that serves: a database does not cross a fork).
    pub fn board(&self, mode: Mode) -> Result<Arc<Board>, Error> {
        let h = Arc::new(history::History::open(&self.db).map_err(|m| Error::param_msg(Code::NONE, m))?);
        h.keep_alive();
        Ok(Board::new(mode, h))
    }

    /// Serves `board` on a thread until the handle is dropped.
    pub fn serve(self, board: Arc<Board>) -> Result<Serving, Error> {
        let addr = self.listener.local_addr().map_err(|e| Error::io(Code::LISTEN, &e))?;
        // The page needs the token unless it is served on loopback alone.
        let url = |shown: &str| {
            if addr.ip().is_loopback() {
                format!("http://{shown}/")
            } else {
                format!("http://{shown}/?token={}", self.token)
            }
        };
        // On every address: where another machine can open it (an
        // address of 0.0.0.0 opens nothing elsewhere).
        let urls = wirespeed_http::urls(&self.listener, url);
        let site = Arc::new(web::Site {
            board,
            token: self.token,
            addr,
        });
        Ok(Serving {
            _thread: web::serve(self.listener, site)?,
            urls,
        })
    }
}

/// Usage of the `ui` command.
pub fn usage(prog: &str) -> String {
    let db = history::default_path().map_or("none: no HOME".into(), |p| p.display().to_string());
    format!(
        "Usage: {prog} ui [--listen ADDR:PORT] [--token TOKEN] [--max-running N] [--db PATH]\n\
         \n\
         Serves a web page on which you set up a test (either dialect, against a\n\
         wirespeed, iperf3 or iperf 2 server), run it, watch it live, and keep,\n\
         download and compare the results in a history that outlives it, and\n\
         run tests on a schedule. Open the address it prints.\n\
         \n\
         \x20 --listen ADDR:PORT  where to listen (default {DEFAULT_LISTEN}); any address\n\
         \x20                     but loopback needs the token, which the printed\n\
         \x20                     address carries\n\
         \x20 --token TOKEN       the token (default: a random one); 16+ characters\n\
         \x20 --max-running N     tests that may run at once (default 1)\n\
         \x20 --db PATH           the history's SQLite file (default {db};\n\
         \x20                     :memory: keeps nothing once the UI ends)\n\
         \x20 -h, --help          show this message and quit\n"
    )
}

struct UiArgs {
    listen: String,
    token: Option<String>,
    max_running: usize,
    db: Option<String>,
}

fn parse(args: &[String]) -> Result<Option<UiArgs>, Error> {
    let perr = |m: String| Error::param_msg(Code::NONE, m);
    let mut a = UiArgs {
        listen: DEFAULT_LISTEN.into(),
        token: None,
        max_running: 1,
        db: None,
    };
    let mut it = args.iter();
    while let Some((arg, name, inline)) = wirespeed_cli::values::next_option(&mut it) {
        let mut value = || wirespeed_cli::values::option_value(name, &inline, &mut it);
        match name {
            "-h" | "--help" => return Ok(None),
            "--listen" => a.listen = value()?,
            "--token" => a.token = Some(value()?),
            "--db" => a.db = Some(value()?),
            "--max-running" => {
                let v = value()?;
                a.max_running = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=64).contains(n))
                    .ok_or_else(|| perr(format!("--max-running wants 1 to 64, not '{v}'")))?;
            }
            _ => return Err(perr(format!("ui: unrecognized argument '{arg}'"))),
        }
    }
    Ok(Some(a))
}

/// `wirespeed ui ...`: serves until interrupted.
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
    let started = Endpoint::bind(&a.listen, a.token)
        .and_then(|ep| ep.keep_history(a.db.as_deref()))
        .and_then(|ep| {
            let board = ep.board(Mode::Client {
                max_running: a.max_running,
            })?;
            let db = ep.db().to_string();
            Ok((ep.serve(board.clone())?, board, db))
        });
    let (serving, board, db) = match started {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{prog}: {}", e.line());
            return 1;
        }
    };
    let _scheduler = schedule::Scheduler::start(board);
    print!("{}", serving.say("wirespeed UI at "));
    println!("History in {db}");
    println!("(Ctrl-C to quit)");
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, stop.clone());
    }
    while !stop.load(Relaxed) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_takes_its_three_options() {
        let a = parse(&["--listen".into(), ":0".into(), "--max-running=2".into()])
            .unwrap()
            .unwrap();
        assert_eq!((a.listen.as_str(), a.max_running), (":0", 2));
        assert!(parse(&["--max-running".into(), "0".into()]).is_err());
        assert!(parse(&["--bogus".into()]).is_err());
        assert!(parse(&["--token".into()]).is_err());
        assert!(parse(&["-h".into()]).unwrap().is_none());
        assert!(Endpoint::bind("127.0.0.1:0", Some("short".into())).is_err());
        assert!(Endpoint::bind("nonsense", None).is_err());
        assert_eq!(random_token().unwrap().len(), 32);
    }

    #[test]
    fn the_printed_addresses_can_be_opened() {
        let token = Some("0123456789abcdef".to_string());
        let board = || {
            Board::new(
                Mode::Client { max_running: 1 },
                Arc::new(history::History::open(":memory:").unwrap()),
            )
        };
        let free = || TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        // On loopback: one address, no token needed.
        let s = Endpoint::bind(&format!("127.0.0.1:{}", free()), token.clone())
            .unwrap()
            .serve(board())
            .unwrap();
        assert_eq!(s.urls.len(), 1);
        assert!(
            s.urls[0].starts_with("http://127.0.0.1:") && s.urls[0].ends_with('/'),
            "{:?}",
            s.urls
        );
        // On every address: never 0.0.0.0 (which opens nothing elsewhere),
        // but the host's addresses, each with the token, loopback last.
        let s = Endpoint::bind(&format!("0.0.0.0:{}", free()), token)
            .unwrap()
            .serve(board())
            .unwrap();
        let said = s.say("wirespeed UI at ");
        assert!(!said.contains("http://0.0.0.0:"), "{said}");
        assert!(said.starts_with("wirespeed UI at http://"), "{said}");
        assert!(said.lines().all(|l| l.ends_with("/?token=0123456789abcdef")), "{said}");
        assert!(
            said.lines().skip(1).all(|l| l.starts_with("             or http://")),
            "{said}"
        );
        assert!(said.lines().last().unwrap().contains("http://127.0.0.1:"), "{said}");
    }
}
