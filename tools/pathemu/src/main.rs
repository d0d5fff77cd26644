//! A WAN path emulator for tests and benches: two network namespaces, A
//! (10.77.0.1, fd77::1) and B (10.77.0.2, fd77::2), each with a TUN
//! device, and this process forwarding packets between them with a
//! one-way delay, a rate with a tail-drop queue in front of it, random
//! loss, jitter and outages, set per direction and changeable live. It
//! counts every packet's fate exactly. `docs/pathemu.md` describes the
//! model, the commands and the counters, and what it was measured to
//! carry.
//!
//! ```text
//! cargo build --release --example pathemu
//! sudo target/release/examples/pathemu --both delay=25ms,rate=100M,queue=500 --b2a loss=1%
//! ```
//!
//! Prints a JSON `ready` line once both devices answer, then reads
//! commands on stdin (`stats`, `down`, `up`, `set`, `quit`), answering
//! each with one JSON line. Stdin's end, SIGINT, SIGTERM or `--lifetime`
//! stop it: it prints the `final` counters, removes both namespaces and
//! exits 0. Errors are one line on stderr and exit code 1.

mod forward;
mod packet;
mod setup;
mod spec;

use std::fs::File;
use std::io::{BufRead, Read, Write};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use forward::{Clock, Control, Forwarder, Params};
use spec::{DirSettings, Dirs, Outage};

const USAGE: &str = "\
usage: pathemu [options]
  --both SETTINGS      both directions, e.g. delay=50ms,rate=100M,queue=1000,loss=0.5%,jitter=2ms
  --a2b SETTINGS       A to B only (applied after --both)
  --b2a SETTINGS       B to A only (applied after --both)
  --outage [a2b:|b2a:]AT+DURATION
                       link down from AT after ready for DURATION (repeatable), e.g. 5s+3s
  --lifetime SECS      stop after this long (default 600)
  --seed N             seed of the loss and jitter draws (default: random, printed)
  --name BASE          namespaces and devices BASEa and BASEb (default pe<pid>a, pe<pid>b)
  --mtu N              device MTU (default 1500)
  --txqueuelen N       device transmit ring length (default 10000)
  --max-in-flight N    most packets held per direction (default 200000)
  --no-stdin           read no commands; run until a signal or --lifetime
  --napi               open the devices with IFF_NAPI
  --nap-us N           after a round that moved packets, sleep N µs (default 20; 0: never)
  --no-realtime        forwarding threads with normal scheduling (default: realtime, SCHED_RR 10)
settings: delay=DUR rate=BITS/S|unlimited queue=PACKETS loss=P|P% jitter=DUR
stdin commands: stats | down [a2b|b2a|both] | up [...] | set a2b|b2a|both SETTINGS | quit";

/// Everything the command line sets.
struct Opts {
    settings: [DirSettings; 2],
    outages: Vec<Outage>,
    lifetime: Duration,
    seed: u64,
    name: Option<String>,
    dev: setup::DevOptions,
    max_in_flight: usize,
    nap: Duration,
    realtime: bool,
    stdin: bool,
}

fn parse_args(args: &[String]) -> Result<Opts, String> {
    let mut both = Vec::new();
    let mut one: Vec<(usize, String)> = Vec::new();
    let mut o = Opts {
        settings: [DirSettings::default(); 2],
        outages: Vec::new(),
        lifetime: Duration::from_secs(600),
        seed: wirespeed_core::util::random_u64(),
        name: None,
        dev: setup::DevOptions {
            mtu: 1500,
            txqueuelen: 10_000,
            napi: false,
        },
        max_in_flight: 200_000,
        nap: Duration::from_micros(20),
        realtime: true,
        stdin: true,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        if matches!(flag, "--help" | "-h") {
            println!("{USAGE}");
            std::process::exit(0);
        }
        if flag == "--napi" {
            o.dev.napi = true;
            continue;
        }
        if flag == "--no-stdin" {
            o.stdin = false;
            continue;
        }
        if flag == "--no-realtime" {
            o.realtime = false;
            continue;
        }
        let mut value = || -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        let number = |v: String| -> Result<u64, String> {
            v.parse::<u64>()
                .map_err(|_| format!("{flag} {v:?} is not a whole number"))
        };
        match flag {
            "--both" => both.push(value()?),
            "--a2b" => one.push((0, value()?)),
            "--b2a" => one.push((1, value()?)),
            "--outage" => o.outages.push(Outage::parse(&value()?)?),
            "--lifetime" => {
                let v = value()?;
                let secs: f64 = v.parse().map_err(|_| format!("--lifetime {v:?} is not seconds"))?;
                if !(secs > 0.0 && secs <= 7.0 * 86_400.0) {
                    return Err(format!("--lifetime {v:?} is out of range"));
                }
                o.lifetime = Duration::from_secs_f64(secs);
            }
            "--seed" => o.seed = number(value()?)?,
            "--name" => {
                let v = value()?;
                if v.is_empty() || v.len() > 14 || !v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                    return Err(format!("--name {v:?}: 1 to 14 letters, digits or '-'"));
                }
                o.name = Some(v);
            }
            "--mtu" => {
                let v = number(value()?)?;
                if !(1280..=65_535).contains(&v) {
                    return Err(format!("--mtu {v} is out of range (1280 to 65535)"));
                }
                o.dev.mtu = v as u32;
            }
            "--nap-us" => o.nap = Duration::from_micros(number(value()?)?.min(10_000)),
            "--txqueuelen" => o.dev.txqueuelen = number(value()?)?.clamp(1, u32::MAX as u64) as u32,
            "--max-in-flight" => o.max_in_flight = number(value()?)?.clamp(1, u32::MAX as u64 / 2) as usize,
            _ => return Err(format!("unknown option {arg:?} (--help lists them)")),
        }
    }
    for s in &both {
        for d in &mut o.settings {
            d.apply(s)?;
        }
    }
    for (i, s) in &one {
        o.settings[*i].apply(s)?;
    }
    Ok(o)
}

/// Prints one JSON line on stdout now (a reader may be waiting on it).
fn say(v: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

/// Writes an echo request into `tun` as if from `src`, and waits for the
/// kernel behind `tun` to answer through it: the device is up, addressed
/// and routed.
fn probe(tun: &File, src: IpAddr, dst: IpAddr, ident: u16) -> Result<(), String> {
    let req = packet::echo_request(src, dst, ident);
    let mut buf = vec![0u8; 65_536];
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        (&*tun)
            .write_all(&req)
            .map_err(|e| format!("cannot write to the TUN device: {e}"))?;
        let round = Instant::now() + Duration::from_millis(200);
        while let Some(left) = round.checked_duration_since(Instant::now()) {
            let _ = wirespeed_sys::tun::wait_readable(tun, Some(left));
            loop {
                match (&*tun).read(&mut buf) {
                    Ok(n) if packet::is_echo_reply(&buf[..n], ident) => return Ok(()),
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        }
    }
    Err(format!("no answer from {dst} through its TUN device within 5 s"))
}

/// The running emulator, as the control loop sees it.
struct Emulator {
    net: setup::Netns,
    ctl: [Arc<Control>; 2],
    clock: Clock,
    ready_ns: u64,
}

const DIRS: [&str; 2] = ["a2b", "b2a"];

impl Emulator {
    fn settings_json(&self) -> Value {
        json!({"a2b": self.ctl[0].get().to_json(), "b2a": self.ctl[1].get().to_json()})
    }

    fn stats(&self, event: &str, reason: Option<&str>) -> Value {
        let (user, sys) = wirespeed_sys::process::cpu_times();
        let now = self.clock.now();
        let mut v = json!({
            "event": event,
            "t": now.saturating_sub(self.ready_ns) as f64 / 1e9,
            "settings": self.settings_json(),
            "down": {},
            "a2b": self.ctl[0].counters.to_json(),
            "b2a": self.ctl[1].counters.to_json(),
            "tun": self.net.device_stats(),
            "cpu": {"user_s": user.as_secs_f64(), "system_s": sys.as_secs_f64()},
        });
        for (i, d) in DIRS.iter().enumerate() {
            let outages = self.ctl[i].outages.lock().map(|o| o.clone()).unwrap_or_default();
            v["down"][*d] = self.ctl[i].is_down(now, &outages).into();
        }
        if let Some(r) = reason {
            v["reason"] = r.into();
        }
        v
    }

    /// Runs one stdin command; false for `quit`.
    fn command(&self, line: &str) -> bool {
        let mut words = line.split_whitespace();
        let verb = words.next().unwrap_or("");
        let arg = words.next().unwrap_or("");
        let rest = words.collect::<Vec<_>>().join("");
        let result = match verb {
            "" => return true,
            "quit" => return false,
            "stats" => {
                say(&self.stats("stats", None));
                return true;
            }
            "down" | "up" => Dirs::parse(arg).map(|dirs| {
                for (i, c) in self.ctl.iter().enumerate() {
                    if dirs.has(i) {
                        c.down.store(verb == "down", Relaxed);
                    }
                }
            }),
            "set" => Dirs::parse(arg).and_then(|dirs| {
                if arg.is_empty() || rest.is_empty() {
                    return Err("set needs a direction and settings, e.g. set a2b delay=10ms".into());
                }
                let mut next = [self.ctl[0].get(), self.ctl[1].get()];
                for (i, s) in next.iter_mut().enumerate() {
                    if dirs.has(i) {
                        s.apply(&rest)?;
                    }
                }
                for (i, s) in next.into_iter().enumerate() {
                    if dirs.has(i) {
                        self.ctl[i].set(s);
                    }
                }
                Ok(())
            }),
            _ => Err(format!("unknown command {verb:?} (stats, down, up, set, quit)")),
        };
        match result {
            Ok(()) => say(&json!({
                "event": "ok",
                "command": line.trim(),
                "settings": self.settings_json(),
                "down": {"a2b": self.ctl[0].down.load(Relaxed), "b2a": self.ctl[1].down.load(Relaxed)},
            })),
            Err(e) => say(&json!({"event": "error", "command": line.trim(), "error": e})),
        }
        true
    }
}

fn run(o: Opts) -> Result<(), String> {
    if !setup::is_root() {
        return Err("must run as root (it makes network namespaces and TUN devices)".into());
    }
    if !setup::have_ip() {
        return Err("cannot run ip (iproute2 is needed)".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err("/dev/net/tun is missing (no TUN support)".into());
    }
    let term = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, term.clone()).map_err(|e| format!("cannot handle signals: {e}"))?;
    }
    setup::remove_stale();
    let names = setup::names(o.name.as_deref());
    let net = setup::Netns::create(names, &o.dev)?;
    let addr4: [IpAddr; 2] = setup::ADDR4.map(|a| a.parse().unwrap_or(IpAddr::from([0, 0, 0, 0])));
    let addr6: [IpAddr; 2] = setup::ADDR6.map(|a| a.parse().unwrap_or(IpAddr::from([0u16; 8])));
    for (i, tun) in net.tun.iter().enumerate() {
        probe(tun, addr4[1 - i], addr4[i], 0x7e00 + i as u16)?;
        probe(tun, addr6[1 - i], addr6[i], 0x7e10 + i as u16)?;
    }

    let clock = Clock::new();
    let stop = Arc::new(AtomicBool::new(false));
    let ctl = o.settings.map(|s| Arc::new(Control::new(s)));
    let ready_ns = clock.now();
    for (i, c) in ctl.iter().enumerate() {
        let windows = o
            .outages
            .iter()
            .filter(|w| w.dirs.has(i))
            .map(|w| (ready_ns + w.at_ns, ready_ns + w.at_ns + w.dur_ns))
            .collect();
        if let Ok(mut w) = c.outages.lock() {
            *w = windows;
        }
    }
    let files = [
        Arc::new(net.tun[0].try_clone().map_err(|e| format!("dup: {e}"))?),
        Arc::new(net.tun[1].try_clone().map_err(|e| format!("dup: {e}"))?),
    ];
    let mut threads = Vec::new();
    for i in 0..2 {
        let f = Forwarder::new(
            files[i].clone(),
            files[1 - i].clone(),
            ctl[i].clone(),
            Params {
                stop: stop.clone(),
                clock,
                seed: o.seed ^ (i as u64).wrapping_mul(0xA076_1D64_78BD_642F),
                slot: o.dev.mtu as usize + 64,
                max_in_flight: o.max_in_flight,
                nap: o.nap,
                realtime: o.realtime,
            },
        );
        let t = std::thread::Builder::new()
            .name(DIRS[i].into())
            .spawn(move || f.run())
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        threads.push(t);
    }
    let emu = Emulator {
        net,
        ctl,
        clock,
        ready_ns,
    };
    say(&json!({
        "event": "ready",
        "pid": std::process::id(),
        "ns_a": emu.net.ns[0],
        "ns_b": emu.net.ns[1],
        "dev_a": emu.net.ns[0],
        "dev_b": emu.net.ns[1],
        "addr_a": setup::ADDR4[0],
        "addr_b": setup::ADDR4[1],
        "addr6_a": setup::ADDR6[0],
        "addr6_b": setup::ADDR6[1],
        "mtu": o.dev.mtu,
        "seed": o.seed,
        "lifetime_s": o.lifetime.as_secs_f64(),
        "outages": o.outages.iter().map(|w| json!({
            "a2b": w.dirs.has(0), "b2a": w.dirs.has(1),
            "at_s": w.at_ns as f64 / 1e9, "duration_s": w.dur_ns as f64 / 1e9,
        })).collect::<Vec<_>>(),
        "settings": emu.settings_json(),
    }));

    let (tx, rx) = mpsc::channel::<Option<String>>();
    // Without stdin the sender stays here, unused, so the channel never
    // reports its end.
    let _quiet = (!o.stdin).then(|| tx.clone());
    std::thread::spawn(move || {
        if !o.stdin {
            return;
        }
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(Some(line)).is_err() {
                return;
            }
        }
        let _ = tx.send(None);
    });
    let deadline = Instant::now() + o.lifetime;
    let reason = loop {
        if term.load(Relaxed) {
            break "signal";
        }
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            break "lifetime";
        };
        match rx.recv_timeout(left.min(Duration::from_millis(50))) {
            Ok(Some(line)) => {
                if !emu.command(&line) {
                    break "quit";
                }
            }
            Ok(None) | Err(mpsc::RecvTimeoutError::Disconnected) => break "eof",
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    };
    stop.store(true, Relaxed);
    let mut panicked = false;
    for t in threads {
        panicked |= t.join().is_err();
    }
    let mut fin = emu.stats("final", Some(reason));
    if panicked {
        fin["error"] = "a forwarding thread panicked".into();
    }
    say(&fin);
    drop(files);
    drop(emu);
    if panicked {
        return Err("a forwarding thread panicked".into());
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = parse_args(&args).and_then(run);
    if let Err(e) = result {
        eprintln!("pathemu: {e}");
        std::process::exit(1);
    }
}
