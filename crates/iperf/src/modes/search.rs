//! `--udp-search`: the highest UDP rate a path carries with acceptable loss.
//!
//! The tutorials' method, automated: run a short UDP test, raise `-b` while
//! the loss stays under the threshold, lower it when it does not. The rate
//! goes up by doubling until a probe loses too much (or down by halving if
//! the first one already does), then bisects between the highest good and
//! the lowest bad rate until they are within [`RESOLUTION`] of each other.
//!
//! A path with random loss (a lossy radio link, say) loses about the same
//! fraction at every rate, so "loss under the threshold" would walk the
//! search down to nothing. Congestion loss grows with the rate instead:
//! above a capacity C, what gets through stays C. The search tells the two
//! apart by comparing rates at least twice apart that both lost too much
//! (probing twice a bad rate when it has no such pair yet); alike losses,
//! with the higher rate delivering clearly more, are a loss floor
//! ([`LossFloor`]). From then on, and for the probes before, a probe is good
//! when it loses at most `--max-loss` more than the floor, within sampling
//! error, and the search goes on as before.
//!
//! [`Searcher`] is the pure part (which rate to try next, and which probes
//! were good, given every probe so far) and is unit-tested against synthetic
//! paths; [`run`] drives it with
//! real probes, each a complete client test whose numbers come from its
//! `End` event, the same numbers `-J` would print.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use wirespeed_core::config::{Direction, EndCondition, Protocol, TestConfig};
use wirespeed_core::error::{Code, Error, Kind};
use wirespeed_core::events::{Event, ModeEvent, SearchAnswer, SearchEnd, SearchProbe, SearchStart};
use wirespeed_report::mode::{percent, rate_text, trim_num};
use wirespeed_report::{Recorder, Reporter};

pub use wirespeed_core::config::{DEFAULT_MAX_LOSS, SearchOptions};
pub use wirespeed_core::events::{Finish, LossFloor, Probe};

/// Between two probes against an iperf 2 server.
const IPERF2_PAUSE: Duration = Duration::from_millis(400);

/// Length of one probe when `-t` is not given.
pub const DEFAULT_PROBE: Duration = Duration::from_secs(2);
/// First rate tried when `-b` is not given, bit/s (all streams together).
pub(crate) const DEFAULT_START: u64 = 1_000_000;
/// The search stops when the highest good and the lowest bad rate are
/// closer than this fraction.
pub(crate) const RESOLUTION: f64 = 0.02;
/// Highest rate the search asks for, bit/s.
pub(crate) const CEILING: u64 = 400_000_000_000;
/// Most rates one search tries (a rate that loses too much is probed twice).
pub const MAX_PROBES: usize = 40;
/// A sender that reaches less than this fraction of the asked rate is
/// the limit, not the path.
const SENDER_SHORTFALL: f64 = 0.97;

/// Parses `--max-loss`: a percentage, with or without `%`.
pub fn parse_max_loss(s: &str) -> Option<f64> {
    let v: f64 = s.trim().trim_end_matches('%').trim().parse().ok()?;
    (v.is_finite() && (0.0..100.0).contains(&v)).then_some(v)
}

/// Why a probe is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeKind {
    /// A new rate on the way up, down or between.
    Search,
    /// The same rate again: its first probe lost too much.
    Retry,
    /// Twice the lowest rate that lost too much, to see whether the loss
    /// grows with the rate (congestion) or stays (random loss).
    FloorCheck,
}

/// The next probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Rate for all streams together, bit/s.
    pub rate: u64,
    /// Why.
    pub kind: ProbeKind,
}

/// One probe as the searcher sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// Rate asked, bit/s.
    pub rate: u64,
    /// Why it was run.
    pub kind: ProbeKind,
    /// Datagrams the receiver expected.
    pub packets: i64,
    /// Datagrams lost.
    pub lost: i64,
    /// For a sender that fell short of `rate`: the rate it reached.
    pub reached: Option<u64>,
}

/// Two bad rates at least this far apart (less the sender's shortfall)
/// are compared to tell random loss from congestion. Above a capacity C a
/// rate r loses 1 - C/r: twice the rate delivers no more, and its loss is
/// higher by half of what got through, while random loss stays put.
const FLOOR_SPAN: f64 = 2.0 * SENDER_SHORTFALL;
/// Standard errors by which two losses (and two delivered counts) may
/// differ and still be called alike (not clearly apart).
const ALIKE_Z: f64 = 3.0;
/// Lost datagrams the probes at and below the lower rate need before they
/// are a floor: one or two say nothing about how the loss depends on the
/// rate. (The higher rate's count is weighed by the comparison itself.)
const FLOOR_MIN_LOST: i64 = 3;
/// Standard errors above floor + max-loss that a probe may lose and still
/// be good: its own count and the floor's estimate are both samples. As
/// many as [`ALIKE_Z`], so that a probe found alike with the floor is not
/// then judged to have lost clearly more than it.
const JUDGE_Z: f64 = ALIKE_Z;
/// Floor checks one search may make. On a congested path the first one
/// shows it (one probe at up to four times the capacity); a path whose
/// loss grows gently with the rate may use them all.
const MAX_FLOOR_CHECKS: usize = 4;
/// A floor check is not made above a rate that lost more than this: a
/// path that drops half of everything at every rate is not searched.
const FLOOR_CHECK_MAX_LOSS: f64 = 0.5;
/// Bad rates at least this far above another, none delivering clearly
/// more than it, show the path saturated there: it needs no floor check.
const SATURATION_SPAN: f64 = 1.25;

/// The pure search: which rate to try next, and which probes were good.
///
/// Every verdict is derived from all the probes so far, so a loss floor
/// found late re-judges the earlier probes too.
#[derive(Debug, Clone)]
pub(crate) struct Searcher {
    start: u64,
    lowest: u64,
    /// `--max-loss` as a fraction.
    max_loss: f64,
    /// `--max-loss` as given, percent: without a floor a probe's loss is
    /// compared with it exactly.
    max_loss_percent: f64,
    runs: Vec<Run>,
    // Derived from `runs` by `refresh`.
    loss_floor: Option<LossFloor>,
    good: Option<u64>,
    bad: Option<u64>,
    sender_limited: bool,
}

/// The runs at one asked rate, pooled.
#[derive(Debug, Clone, Copy)]
struct Pool {
    rate: u64,
    runs: u32,
    packets: i64,
    lost: i64,
    /// Every run lost more than `--max-loss`.
    all_bad: bool,
}

impl Pool {
    fn loss(&self) -> f64 {
        self.lost as f64 / self.packets as f64
    }

    /// Datagrams delivered per run (the runs at one rate are equally long).
    fn delivered(&self) -> f64 {
        (self.packets - self.lost) as f64 / self.runs as f64
    }

    /// Variance of `delivered`, counted as Poisson.
    fn delivered_var(&self) -> f64 {
        (self.packets - self.lost) as f64 / (self.runs as f64 * self.runs as f64)
    }
}

impl Searcher {
    /// A search starting at `start` bit/s that never goes below `lowest`,
    /// with `--max-loss` `max_loss_percent`.
    pub fn new(start: u64, lowest: u64, max_loss_percent: f64) -> Searcher {
        let lowest = lowest.max(1);
        Searcher {
            start: start.clamp(lowest, CEILING),
            lowest,
            max_loss: max_loss_percent / 100.0,
            max_loss_percent,
            runs: Vec::new(),
            loss_floor: None,
            good: None,
            bad: None,
            sender_limited: false,
        }
    }

    /// The next probe, or why the search is over.
    pub fn next(&self) -> Result<Step, Finish> {
        // A probe that loses too much is run once more before its rate is
        // called bad: a stall on a busy host (the sender repays it at
        // twice the rate) or a burst of other traffic can cost a good rate
        // its probe, and one spurious failure would cap the whole search.
        // A floor check is not repeated while it only confirms a rate above
        // one already bad; once a floor is known it is a probe of its rate
        // like any other. A sender that fell short is given a second try
        // too: on a busy host one slow second is not the sender's limit.
        if let Some(last) = self.runs.last()
            && (last.kind == ProbeKind::Search || (last.kind == ProbeKind::FloorCheck && self.loss_floor.is_some()))
            && (last.reached.is_some() || !self.judge(last))
        {
            return Ok(Step {
                rate: last.rate,
                kind: ProbeKind::Retry,
            });
        }
        let tried = self.runs.iter().filter(|r| r.kind != ProbeKind::Retry).count();
        if tried >= MAX_PROBES {
            return Err(Finish::ProbeLimit);
        }
        if let Some(rate) = self.floor_check() {
            return Ok(Step {
                rate,
                kind: ProbeKind::FloorCheck,
            });
        }
        let search = |rate| {
            Ok(Step {
                rate,
                kind: ProbeKind::Search,
            })
        };
        match (self.good, self.bad) {
            (None, None) => search(self.start),
            (Some(g), None) => {
                if g >= CEILING {
                    Err(Finish::Ceiling)
                } else {
                    search(g.saturating_mul(2).min(CEILING))
                }
            }
            (None, Some(b)) => {
                let down = b / 2;
                if down < self.lowest {
                    Err(Finish::NoGoodRate)
                } else {
                    search(down)
                }
            }
            (Some(g), Some(b)) => {
                if (b as f64) <= g as f64 * (1.0 + RESOLUTION) {
                    Err(if self.sender_limited {
                        Finish::SenderLimited
                    } else {
                        Finish::Converged
                    })
                } else {
                    search(g + (b - g) / 2)
                }
            }
        }
    }

    /// Records a probe.
    pub fn record(&mut self, run: Run) {
        self.runs.push(run);
        self.refresh();
    }

    /// Whether the `i`th probe recorded was good (its loss within the
    /// threshold, against the loss floor known now), whatever rate the
    /// sender reached.
    pub fn loss_ok(&self, i: usize) -> bool {
        self.runs.get(i).is_some_and(|r| self.judge(r))
    }

    /// The loss floor, once the probes show one.
    pub fn loss_floor(&self) -> Option<LossFloor> {
        self.loss_floor
    }

    /// The highest good rate so far.
    pub(crate) fn best(&self) -> Option<u64> {
        self.good
    }

    /// A probe's loss against the threshold: `--max-loss` alone, or with a
    /// floor, the floor plus `--max-loss` plus the sampling error of both.
    fn judge(&self, run: &Run) -> bool {
        if run.packets <= 0 {
            return false;
        }
        match self.loss_floor {
            None => 100.0 * run.lost as f64 / run.packets as f64 <= self.max_loss_percent,
            Some(f) => {
                let p = run.lost as f64 / run.packets as f64;
                let q = (f.loss + self.max_loss).min(1.0);
                let var = q * (1.0 - q) / run.packets as f64 + f.loss * (1.0 - f.loss) / f.packets as f64;
                p <= q + JUDGE_Z * var.sqrt()
            }
        }
    }

    /// Derives the loss floor, then the highest good and lowest bad rate,
    /// from every probe so far.
    fn refresh(&mut self) {
        self.loss_floor = loss_floor(&self.pools());
        let mut good: Option<u64> = None;
        let mut bad: Vec<u64> = Vec::new();
        let mut sender_limited = false;
        let mut rates: Vec<u64> = self.runs.iter().map(|r| r.rate).collect();
        rates.sort_unstable();
        rates.dedup();
        for rate in rates {
            let mut rate_good = false;
            for run in self.runs.iter().filter(|r| r.rate == rate) {
                let ok = self.judge(run);
                match run.reached {
                    // The sender is the limit: what it reached was good,
                    // the asked rate is out of reach.
                    Some(reached) => {
                        if ok {
                            sender_limited = true;
                            good = good.max(Some(reached.min(rate)));
                        }
                        bad.push(rate);
                    }
                    None => rate_good |= ok,
                }
            }
            if rate_good {
                good = good.max(Some(rate));
            } else {
                bad.push(rate);
            }
        }
        // A bad rate below a good one is noise, not the limit.
        self.bad = bad.into_iter().filter(|&b| good.is_none_or(|g| b > g)).min();
        self.good = good;
        self.sender_limited = sender_limited;
    }

    /// Each asked rate's runs pooled, leaving out a sender that fell short
    /// (its rate is not the one asked) and probes the receiver never saw.
    fn pools(&self) -> Vec<Pool> {
        let mut pools: Vec<Pool> = Vec::new();
        for r in self.runs.iter().filter(|r| r.reached.is_none() && r.packets > 0) {
            let bad = 100.0 * r.lost as f64 / r.packets as f64 > self.max_loss_percent;
            match pools.iter_mut().find(|p| p.rate == r.rate) {
                Some(p) => {
                    p.runs += 1;
                    p.packets += r.packets;
                    p.lost += r.lost;
                    p.all_bad &= bad;
                }
                None => pools.push(Pool {
                    rate: r.rate,
                    runs: 1,
                    packets: r.packets,
                    lost: r.lost,
                    all_bad: bad,
                }),
            }
        }
        pools
    }

    /// The rate of a floor check to make now, if one is due: the search is
    /// bisecting below a bad rate B, no floor is known, and nothing probed
    /// so far says B's loss is congestion. Probing 2B tells: random loss
    /// stays, while congestion at least doubles what is not delivered.
    /// A check too small to tell (its losses alike but too few) is
    /// followed by one at twice its rate, which counts more datagrams.
    fn floor_check(&self) -> Option<u64> {
        if self.loss_floor.is_some() || self.good.is_none() {
            return None;
        }
        let b = self.bad?;
        let checks = self.runs.iter().filter(|r| r.kind == ProbeKind::FloorCheck).count();
        if checks >= MAX_FLOOR_CHECKS {
            return None;
        }
        let pools = self.pools();
        let lo = *pools.iter().find(|p| p.rate == b)?;
        // A sender-limited rate has no pool; one that lost most of
        // everything is not random loss worth searching above.
        if !lo.all_bad || lo.loss() > FLOOR_CHECK_MAX_LOSS || saturated(&lo, &pools) || grows(&lo, &pools) {
            return None;
        }
        let mut prev = lo;
        let mut rate = b;
        loop {
            rate = rate.checked_mul(2).filter(|&r| r <= CEILING)?;
            if !self.runs.iter().any(|r| r.rate == rate) {
                return Some(rate);
            }
            // Already probed: go on only past a bad rate whose loss was
            // alike (too few lost to tell, or it would be a floor).
            let p = *pools.iter().find(|p| p.rate == rate)?;
            if !p.all_bad || !alike_loss(&prev, &p) {
                return None;
            }
            prev = p;
        }
    }
}

/// Whether a bad rate above `lo`'s, and less than [`FLOOR_SPAN`] above, lost
/// clearly more: the loss grows with the rate there, so it is not random.
/// (Further above, more loss may be congestion beyond a capacity that `lo`
/// is still below.)
fn grows(lo: &Pool, pools: &[Pool]) -> bool {
    pools.iter().any(|hi| {
        hi.all_bad
            && hi.rate > lo.rate
            && (hi.rate as f64) < lo.rate as f64 * FLOOR_SPAN
            && hi.loss() > lo.loss()
            && !alike_loss(lo, hi)
    })
}

/// Whether the path is saturated at `lo`'s rate: every bad rate well above
/// it delivered no more than halfway (geometrically) between as much as
/// `lo` (congestion: what gets through is the capacity) and as much more
/// as it asked (random loss). With no such rate, nothing says so.
fn saturated(lo: &Pool, pools: &[Pool]) -> bool {
    let mut above = pools
        .iter()
        .filter(|hi| hi.all_bad && hi.rate as f64 >= lo.rate as f64 * SATURATION_SPAN)
        .peekable();
    above.peek().is_some()
        && above.all(|hi| hi.delivered() <= lo.delivered() * (hi.rate as f64 / lo.rate as f64).sqrt())
}

/// The loss floor the pooled probes show, if any: a rate that lost too
/// much, and one at least [`FLOOR_SPAN`] above it that lost too much too,
/// by a fraction alike with every probe at or below the lower rate, while
/// delivering clearly more.
///
/// Congestion fails the test: at rates above a capacity C, what gets
/// through stays about C, so the higher rate's loss is clearly larger and
/// it delivers no more. A path whose loss falls steeply as the rate drops
/// fails it too, on the loss.
///
/// The floor is the loss of every probe at or below the highest such lower
/// rate, pooled; random loss is the same at all of them, whether or not a
/// small probe happened to lose too much. The higher rate is left out: it
/// passes the test with some congestion in its loss as long as that is
/// within the lower rates' sampling error, and a large probe would then
/// pull the estimate up by all of it.
fn loss_floor(pools: &[Pool]) -> Option<LossFloor> {
    let below = |rate: u64| {
        pools.iter().filter(|p| p.rate <= rate).fold(
            Pool {
                rate,
                runs: 1,
                packets: 0,
                lost: 0,
                all_bad: true,
            },
            |acc, p| Pool {
                packets: acc.packets + p.packets,
                lost: acc.lost + p.lost,
                ..acc
            },
        )
    };
    let up_to = pools
        .iter()
        .filter(|lo| lo.all_bad)
        .filter(|lo| {
            let floor = below(lo.rate);
            floor.lost >= FLOOR_MIN_LOST
                && pools.iter().any(|hi| {
                    hi.all_bad
                        && hi.rate as f64 >= lo.rate as f64 * FLOOR_SPAN
                        && alike_loss(&floor, hi)
                        && delivers_more(lo, hi)
                })
        })
        .map(|lo| lo.rate)
        .max()?;
    let floor = below(up_to);
    Some(LossFloor {
        loss: floor.loss(),
        packets: floor.packets,
        up_to,
    })
}

/// Two losses are alike: a two-proportion test finds them no more than
/// [`ALIKE_Z`] standard errors apart.
fn alike_loss(a: &Pool, b: &Pool) -> bool {
    let pooled = (a.lost + b.lost) as f64 / (a.packets + b.packets) as f64;
    let se = (pooled * (1.0 - pooled) * (1.0 / a.packets as f64 + 1.0 / b.packets as f64)).sqrt();
    (b.loss() - a.loss()).abs() <= ALIKE_Z * se
}

/// The higher rate delivered clearly more datagrams per probe: the path
/// was not saturated between them.
fn delivers_more(lo: &Pool, hi: &Pool) -> bool {
    let se = (lo.delivered_var() + hi.delivered_var()).sqrt();
    hi.delivered() - lo.delivered() > ALIKE_Z * se
}

/// Checks the options a search cannot honour; returns a parameter error
/// naming the first one. `given` says which were given on the command line.
pub fn check_config(cfg: &TestConfig, interval_given: bool) -> Result<(), Error> {
    let no = |what: &str| Error::param_msg(Code::UNIMP, format!("--udp-search cannot be used with {what}"));
    if cfg.params.protocol != Protocol::Udp {
        return Err(no("a protocol other than UDP"));
    }
    if cfg.params.direction == Direction::Bidir {
        return Err(no("--bidir (it measures one direction)"));
    }
    match cfg.params.end {
        EndCondition::Bytes(_) => return Err(no("-n (each probe runs for -t seconds)")),
        EndCondition::Blocks(_) => return Err(no("-k (each probe runs for -t seconds)")),
        EndCondition::Time(_) => {}
    }
    if cfg.params.pps.is_some() {
        return Err(no("a packet rate (-b Npps); give the start rate in bits/s"));
    }
    if cfg.file.is_some() {
        return Err(no("-F"));
    }
    if interval_given {
        return Err(no("-i (it prints one line per probe)"));
    }
    if cfg.params.get_server_output {
        return Err(no("--get-server-output"));
    }
    if cfg.output.live {
        return Err(no("--live"));
    }
    Ok(())
}

/// Runs one client test with the given configuration and reporter.
type ProbeFn<'a> = dyn FnMut(&TestConfig, &mut Reporter) -> Result<(), Error> + 'a;

/// Runs the search against a server, telling each probe and the answer to
/// `reporter` as [`ModeEvent`]s (its sinks print them as text, a `-J`
/// document or `--json-stream` lines). `probe` runs one client test
/// (against `host:port`, or the loopback server).
pub fn run(
    cfg: &TestConfig,
    opts: SearchOptions,
    reporter: &mut Reporter,
    signal: &Arc<AtomicUsize>,
    probe: &mut ProbeFn<'_>,
) -> Result<(), Error> {
    let streams = cfg.params.streams.max(1) as u64;
    let secs = match cfg.params.end {
        EndCondition::Time(t) if !t.is_zero() => t,
        _ => DEFAULT_PROBE,
    };
    let len = cfg
        .params
        .block_len
        .unwrap_or(wirespeed_core::config::DEFAULT_UDP_BLOCK) as f64;
    // A probe must carry enough datagrams per stream for its loss to mean
    // something: at least 20.
    let lowest = ((20.0 * len * 8.0 / secs.as_secs_f64()).ceil() as u64 * streams).max(1000);
    let start = if cfg.params.rate > 0 {
        cfg.params.rate.saturating_mul(streams)
    } else {
        DEFAULT_START
    };
    // Every probe logs in: ask for the password once, not once a probe.
    let owned;
    let mut cfg = cfg;
    if cfg.auth.username.is_some() && cfg.auth.password.is_none() {
        let p = crate::auth::password(&|| signal.load(Relaxed) != 0)?;
        let mut c = cfg.clone();
        c.auth.password = Some(wirespeed_core::config::Secret(p));
        owned = c;
        cfg = &owned;
    }
    let mut search = Searcher::new(start, lowest, opts.max_loss_percent);
    let tell = |r: &mut Reporter, m: ModeEvent| r.emit(Event::Mode(m));
    tell(
        reporter,
        ModeEvent::SearchStart(Box::new(SearchStart {
            max_loss_percent: opts.max_loss_percent,
            probe_seconds: secs.as_secs_f64(),
            streams: cfg.params.streams.max(1),
            blksize: cfg
                .params
                .block_len
                .unwrap_or(wirespeed_core::config::DEFAULT_UDP_BLOCK),
            reverse: cfg.params.direction == Direction::Reverse,
            resolution: RESOLUTION,
        })),
    );
    let end = |r: &mut Reporter, probes: Vec<Probe>, floor: Option<LossFloor>, outcome| {
        r.emit(Event::Mode(ModeEvent::SearchEnd(Box::new(SearchEnd {
            probes,
            floor,
            outcome,
        }))))
    };
    let mut probes: Vec<Probe> = Vec::new();
    let mut floor_told = false;
    let finish = loop {
        let step = match search.next() {
            Ok(s) => s,
            Err(f) => break f,
        };
        // iperf 2.1.8's UDP server crashes (SIGSEGV) when a test starts
        // within ~0.2 s of the previous one (2.2.1 does not): probes of
        // the iperf 2 dialect leave it a pause.
        if cfg.dialect == wirespeed_core::config::Dialect::Iperf2 && !probes.is_empty() {
            std::thread::sleep(IPERF2_PAUSE);
        }
        let mut p = match one_probe(cfg, step.rate, streams, secs, signal, probe) {
            Ok(p) => p,
            Err(e) => {
                end(reporter, probes, search.loss_floor(), Err(e.clone()));
                return Err(e);
            }
        };
        p.retry = step.kind == ProbeKind::Retry;
        p.floor_check = step.kind == ProbeKind::FloorCheck;
        search.record(Run {
            rate: step.rate,
            kind: step.kind,
            packets: p.packets,
            lost: p.lost,
            reached: p.sender_limited.then_some(p.sent_bps as u64),
        });
        p.loss_ok = search.loss_ok(probes.len());
        p.ok = p.loss_ok && !p.sender_limited;
        let retrying = matches!(search.next(), Ok(s) if s.kind == ProbeKind::Retry);
        tell(
            reporter,
            ModeEvent::SearchProbe(Box::new(SearchProbe {
                n: probes.len() + 1,
                probe: p.clone(),
                retrying,
            })),
        );
        probes.push(p);
        if let (false, Some(f)) = (floor_told, search.loss_floor()) {
            tell(reporter, ModeEvent::SearchFloor(f));
            floor_told = true;
        }
    };
    // The document's verdicts are the final ones: a floor found late
    // turns earlier probes good.
    for (i, p) in probes.iter_mut().enumerate() {
        p.loss_ok = search.loss_ok(i);
        p.ok = p.loss_ok && !p.sender_limited;
    }
    let loss_floor = search.loss_floor();
    let best = search.best().and_then(|b| {
        // The probe that established the answer (the sender-limited case
        // records what was reached, not what was asked).
        probes
            .iter()
            .rfind(|p| (p.ok && p.rate == b) || (p.sender_limited && p.loss_ok && p.sent_bps as u64 == b))
            .cloned()
            .map(|p| (b, p))
    });
    match (finish, best) {
        (Finish::NoGoodRate, _) | (_, None) => {
            let lowest = probes.iter().map(|p| p.rate).min().unwrap_or(start);
            let above = loss_floor
                .map(|f| format!(" above the {}% loss floor", percent(100.0 * f.loss)))
                .unwrap_or_default();
            let e = Error::msg(
                Code::UNIMP,
                format!(
                    "no rate with loss under {}%{above} was found: {} still lost too much",
                    trim_num(opts.max_loss_percent),
                    rate_text(lowest as f64, 'a')
                ),
            );
            end(reporter, probes, loss_floor, Err(e.clone()));
            Err(e)
        }
        (finish, Some((rate, p))) => {
            let answer = SearchAnswer {
                rate,
                received_bps: p.received_bps,
                lost_percent: p.lost_percent,
                finish,
            };
            end(reporter, probes, loss_floor, Ok(answer));
            Ok(())
        }
    }
}

fn one_probe(
    cfg: &TestConfig,
    rate: u64,
    streams: u64,
    secs: Duration,
    signal: &Arc<AtomicUsize>,
    probe: &mut ProbeFn<'_>,
) -> Result<Probe, Error> {
    let mut pc = cfg.clone();
    pc.params.rate = (rate / streams).max(1);
    pc.params.end = EndCondition::Time(secs);
    pc.output.json = false;
    pc.output.json_stream = false;
    pc.output.interval = None;
    pc.search = None;
    pc.output.html_report = None;
    pc.output.live = false;
    let mut attempt = 0;
    loop {
        let rec = Recorder::default();
        let mut reporter = Reporter::new();
        reporter.add(Box::new(rec.clone()));
        let r = probe(&pc, &mut reporter);
        if signal.load(Relaxed) != 0 {
            return Err(Error {
                kind: Kind::Interrupt,
                detail: Some("the search was interrupted by a signal".into()),
                ..Error::new(Code::CLIENTTERM)
            });
        }
        match r {
            Err(e) if e.code == Code::ACCESSDENIED && attempt < 10 => {
                // A one-test-at-a-time server (iperf3) may still be
                // finishing the previous probe.
                attempt += 1;
                std::thread::sleep(Duration::from_millis(300));
                continue;
            }
            Err(e) => return Err(e),
            Ok(()) => {}
        }
        let events = rec.events.lock().map(|e| e.clone()).unwrap_or_default();
        let Some(end) = events.iter().rev().find_map(|e| match e {
            Event::End(s) => Some(s.clone()),
            _ => None,
        }) else {
            return Err(Error::msg(Code::RECVRESULTS, "a probe ended without results"));
        };
        let d = &end.forward;
        let Some(seen) = received(&end, &events, cfg.dialect) else {
            let hint = if cfg.dialect == wirespeed_core::config::Dialect::Iperf2 {
                " (an iperf 2 server must run with -u, and not with --no-udp-fin)"
            } else {
                ""
            };
            return Err(Error::msg(
                Code::RECVRESULTS,
                format!("the server did not report the probe's loss{hint}"),
            ));
        };
        let lost_percent = if seen.packets > 0 {
            100.0 * seen.lost as f64 / seen.packets as f64
        } else {
            100.0
        };
        let sent_bps = d.sent.bits_per_second;
        let sender_limited = sent_bps < rate as f64 * SENDER_SHORTFALL;
        // The verdicts are the searcher's (`run` fills them in).
        return Ok(Probe {
            rate,
            sent_bps,
            received_bps: seen.bits_per_second,
            packets: seen.packets,
            lost: seen.lost,
            lost_percent,
            jitter_ms: seen.jitter_ms,
            sender_limited,
            ok: false,
            retry: false,
            loss_ok: false,
            floor_check: false,
        });
    }
}

/// What the receiver saw of a probe.
struct Received {
    packets: i64,
    lost: i64,
    jitter_ms: f64,
    bits_per_second: f64,
}

/// The receiver's side of a probe: from the results exchange (iperf3),
/// or from the UDP server's reports (iperf 2); `None` if it did not say.
fn received(
    end: &wirespeed_core::events::Summary,
    events: &[Event],
    dialect: wirespeed_core::config::Dialect,
) -> Option<Received> {
    let reports: Vec<&wirespeed_core::events::StreamSample> = events
        .iter()
        .filter_map(|e| match e {
            Event::PeerReport(wirespeed_core::events::PeerReport::Report(l)) => Some(&**l),
            _ => None,
        })
        .collect();
    // An iperf 2 sender hears of loss only from a server report: without
    // one (a server that is gone, or not listening for UDP), nothing is
    // known, which is not 100% loss.
    let missing = events
        .iter()
        .any(|e| matches!(e, Event::PeerReport(wirespeed_core::events::PeerReport::Missing { .. })));
    if missing || (dialect == wirespeed_core::config::Dialect::Iperf2 && reports.is_empty()) {
        return None;
    }
    if !reports.is_empty() {
        let udp: Vec<_> = reports.iter().filter_map(|l| l.udp).collect();
        return Some(Received {
            packets: udp.iter().map(|u| u.packets).sum(),
            lost: udp.iter().map(|u| u.lost.max(0)).sum(),
            jitter_ms: udp.iter().map(|u| u.jitter_ms).sum::<f64>() / udp.len().max(1) as f64,
            bits_per_second: reports.iter().map(|l| l.bits_per_second).sum(),
        });
    }
    let udp = end.forward.udp?;
    Some(Received {
        packets: udp.packets,
        lost: udp.lost?,
        jitter_ms: udp.jitter_ms,
        bits_per_second: end.forward.received.bits_per_second,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_report::Output;
    use wirespeed_report::document as doc;

    /// Datagram length and probe time of the synthetic paths.
    const LEN: f64 = 1448.0;
    const SECS: f64 = 1.0;

    /// The lowest rate `run` allows for these probes: 20 datagrams.
    fn lowest() -> u64 {
        (20.0 * LEN * 8.0 / SECS).ceil() as u64
    }

    /// splitmix64: a fixed sequence per seed, so every test is repeatable.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }

        /// Lost datagrams out of `n` at loss `p`: drawn one by one for
        /// small counts, from the normal approximation for large ones.
        fn binomial(&mut self, n: i64, p: f64) -> i64 {
            if p <= 0.0 {
                return 0;
            }
            if p >= 1.0 {
                return n;
            }
            if n <= 20_000 {
                return (0..n).filter(|_| self.unit() < p).count() as i64;
            }
            let z = (-2.0 * (1.0 - self.unit()).ln()).sqrt() * (2.0 * std::f64::consts::PI * self.unit()).cos();
            let mean = n as f64 * p;
            (mean + z * (mean * (1.0 - p)).sqrt()).round().clamp(0.0, n as f64) as i64
        }
    }

    /// A synthetic path: the loss fraction at a rate, and the fastest the
    /// sender goes.
    struct Sim<F: Fn(f64) -> f64> {
        loss: F,
        sender: u64,
        /// Draw each probe's losses (else exactly n × loss, rounded).
        seed: Option<u64>,
        max_loss_percent: f64,
    }

    struct Outcome {
        best: Option<u64>,
        finish: Finish,
        floor: Option<LossFloor>,
        runs: Vec<Run>,
    }

    impl Outcome {
        fn checks(&self) -> usize {
            self.runs.iter().filter(|r| r.kind == ProbeKind::FloorCheck).count()
        }
        fn highest(&self) -> u64 {
            self.runs.iter().map(|r| r.rate).max().unwrap_or(0)
        }
    }

    fn sim<F: Fn(f64) -> f64>(loss: F) -> Sim<F> {
        Sim {
            loss,
            sender: u64::MAX,
            seed: None,
            max_loss_percent: DEFAULT_MAX_LOSS,
        }
    }

    impl<F: Fn(f64) -> f64> Sim<F> {
        fn sender(mut self, bps: u64) -> Self {
            self.sender = bps;
            self
        }
        fn seed(mut self, seed: u64) -> Self {
            self.seed = Some(seed);
            self
        }
        fn max_loss(mut self, percent: f64) -> Self {
            self.max_loss_percent = percent;
            self
        }

        fn run(&self, start: u64) -> Outcome {
            let mut s = Searcher::new(start, lowest(), self.max_loss_percent);
            let mut rng = Rng(self.seed.unwrap_or(0));
            let finish = loop {
                match s.next() {
                    Ok(step) => {
                        let reached = step.rate.min(self.sender);
                        let short = (reached as f64) < step.rate as f64 * SENDER_SHORTFALL;
                        let n = ((reached as f64 * SECS / (8.0 * LEN)).round() as i64).max(1);
                        let p = (self.loss)(reached as f64).clamp(0.0, 1.0);
                        let lost = match self.seed {
                            Some(_) => rng.binomial(n, p),
                            None => (n as f64 * p).round() as i64,
                        };
                        s.record(Run {
                            rate: step.rate,
                            kind: step.kind,
                            packets: n,
                            lost,
                            reached: short.then_some(reached),
                        });
                    }
                    Err(f) => break f,
                }
            };
            Outcome {
                best: s.best(),
                finish,
                floor: s.loss_floor(),
                runs: s.runs.clone(),
            }
        }
    }

    /// Congestion: a link of `capacity` bit/s drops what exceeds it.
    fn congestion(capacity: f64) -> impl Fn(f64) -> f64 {
        move |rate| (1.0 - capacity / rate).max(0.0)
    }

    /// Random loss `p` at every rate, and congestion above `capacity`.
    fn random_and_congestion(p: f64, capacity: f64) -> impl Fn(f64) -> f64 {
        move |rate| 1.0 - (1.0 - p) * (capacity / rate).min(1.0)
    }

    #[test]
    fn the_search_lands_within_its_resolution_below_the_capacity() {
        for capacity in [3_000_000, 48_600_000, 941_000_000, 9_400_000_000] {
            let o = sim(congestion(capacity as f64)).run(DEFAULT_START);
            let best = o.best.unwrap();
            assert_eq!(o.finish, Finish::Converged);
            assert!(best <= capacity, "{best} > {capacity}");
            assert!(
                best as f64 >= capacity as f64 * (1.0 - 2.0 * RESOLUTION),
                "{best} too far below {capacity}"
            );
            assert!(o.runs.len() < 30, "{} probes for {capacity}", o.runs.len());
            assert_eq!(o.floor, None, "{capacity}");
            // The one floor check is twice the first bad rate: at most
            // four times the capacity, for one probe.
            assert!(o.checks() <= 1, "{capacity}: {} checks", o.checks());
            assert!(o.highest() <= 4 * capacity, "{capacity}: {}", o.highest());
        }
    }

    #[test]
    fn a_start_above_the_capacity_searches_down() {
        let o = sim(congestion(48e6)).run(1_000_000_000);
        assert_eq!(o.finish, Finish::Converged);
        let best = o.best.unwrap();
        assert!((47_000_000..=48_000_000).contains(&best), "{best}");
        assert_eq!(o.floor, None);
    }

    #[test]
    fn a_path_that_loses_everything_has_no_answer() {
        let o = sim(|_| 1.0).run(DEFAULT_START);
        assert_eq!(o.best, None);
        assert_eq!(o.finish, Finish::NoGoodRate);
        assert_eq!(o.floor, None);
    }

    #[test]
    fn a_slow_sender_bounds_the_answer_and_says_so() {
        let o = sim(|_| 0.0).sender(5_000_000_000).run(DEFAULT_START);
        assert_eq!(o.finish, Finish::SenderLimited);
        let best = o.best.unwrap();
        // A rate the sender reaches to within its shortfall counts as reached.
        let most = (5_000_000_000.0 / SENDER_SHORTFALL) as u64;
        assert!((4_500_000_000..=most).contains(&best), "{best}");
    }

    fn probe(s: &mut Searcher, rate: u64, lost: i64) {
        let n = (rate as f64 / (8.0 * LEN)) as i64;
        let kind = match s.next() {
            Ok(step) if step.rate == rate => step.kind,
            _ => ProbeKind::Search,
        };
        s.record(Run {
            rate,
            kind,
            packets: n,
            lost,
            reached: None,
        });
    }

    #[test]
    fn a_noisy_good_rate_above_a_bad_one_reopens_the_search_upward() {
        let mut s = Searcher::new(1_000_000, 1000, DEFAULT_MAX_LOSS);
        probe(&mut s, 1_000_000, 0);
        probe(&mut s, 2_000_000, 50);
        assert_eq!(
            s.next(),
            Ok(Step {
                rate: 2_000_000,
                kind: ProbeKind::Retry
            })
        );
        probe(&mut s, 2_000_000, 50);
        probe(&mut s, 1_500_000, 0);
        probe(&mut s, 3_000_000, 0);
        assert_eq!(s.best(), Some(3_000_000));
        assert_eq!(s.next().map(|s| s.rate), Ok(6_000_000));
    }

    #[test]
    fn a_bad_rate_is_run_twice_and_either_clean_run_makes_it_good() {
        let mut s = Searcher::new(1_000_000, 1000, DEFAULT_MAX_LOSS);
        probe(&mut s, 1_000_000, 0);
        probe(&mut s, 2_000_000, 3);
        assert_eq!(s.next().map(|s| s.kind), Ok(ProbeKind::Retry));
        probe(&mut s, 2_000_000, 0);
        assert!(!s.loss_ok(1) && s.loss_ok(2));
        assert_eq!(s.best(), Some(2_000_000));
        assert_eq!(s.next().map(|s| (s.rate, s.kind)), Ok((4_000_000, ProbeKind::Search)));
    }

    #[test]
    fn a_sender_that_falls_short_once_is_given_a_second_try() {
        let mut s = Searcher::new(16_000_000, 1000, DEFAULT_MAX_LOSS);
        probe(&mut s, 16_000_000, 0);
        // A slow second: 30.3 of 32 Mbit/s left the sender.
        s.record(Run {
            rate: 32_000_000,
            kind: ProbeKind::Search,
            packets: 2705,
            lost: 0,
            reached: Some(30_300_000),
        });
        assert_eq!(s.next().map(|s| (s.rate, s.kind)), Ok((32_000_000, ProbeKind::Retry)));
        probe(&mut s, 32_000_000, 0);
        assert_eq!(s.best(), Some(32_000_000));
        assert_eq!(s.next().map(|s| (s.rate, s.kind)), Ok((64_000_000, ProbeKind::Search)));
        // Short twice: what it reached is the answer's bound.
        for kind in [ProbeKind::Search, ProbeKind::Retry] {
            s.record(Run {
                rate: 64_000_000,
                kind,
                packets: 5000,
                lost: 0,
                reached: Some(40_000_000),
            });
        }
        assert_eq!(s.best(), Some(40_000_000));
        assert_ne!(s.next().map(|s| s.kind), Ok(ProbeKind::Retry));
    }

    /// The floor is within three standard errors of the path's random
    /// loss, counted over the datagrams it pools.
    fn floor_near(floor: &LossFloor, p: f64) -> bool {
        (floor.loss - p).abs() <= 3.0 * (p * (1.0 - p) / floor.packets as f64).sqrt()
    }

    #[test]
    fn a_floor_found_late_rejudges_the_probes_before_it() {
        // 1 % random loss: 4 Mbit/s loses too much twice, so the rate
        // twice that is checked; it loses alike while delivering twice as
        // much, which is a floor, and the probes that lost too much are
        // now good.
        let mut s = Searcher::new(1_000_000, 1000, DEFAULT_MAX_LOSS);
        probe(&mut s, 1_000_000, 0);
        probe(&mut s, 2_000_000, 0);
        probe(&mut s, 4_000_000, 4);
        probe(&mut s, 4_000_000, 3);
        assert!(!s.loss_ok(2) && !s.loss_ok(3));
        assert_eq!(s.loss_floor(), None);
        assert_eq!(
            s.next().map(|s| (s.rate, s.kind)),
            Ok((8_000_000, ProbeKind::FloorCheck))
        );
        probe(&mut s, 8_000_000, 7);
        let floor = s.loss_floor().expect("a floor");
        assert_eq!(floor.up_to, 4_000_000);
        // Every probe at or below 4 Mbit/s: 7 of 86 + 172 + 2 × 345.
        assert_eq!(floor.packets, 86 + 172 + 2 * 345);
        assert!((floor.loss - 7.0 / 948.0).abs() < 1e-12);
        assert!((2..5).all(|i| s.loss_ok(i)));
        assert_eq!(s.best(), Some(8_000_000));
        assert_eq!(s.next().map(|s| (s.rate, s.kind)), Ok((16_000_000, ProbeKind::Search)));
    }

    #[test]
    fn congestion_with_sampling_noise_shows_no_floor() {
        for capacity in [2e6, 48.6e6, 941e6] {
            for seed in 0..40 {
                let o = sim(congestion(capacity)).seed(seed).run(DEFAULT_START);
                let why = format!("capacity {capacity} seed {seed}");
                assert_eq!(o.floor, None, "{why}");
                // Just above the capacity a small probe can still lose
                // nothing, so the noisy answer may be a little over.
                let best = o.best.unwrap() as f64;
                assert!((best / capacity - 1.0).abs() <= 2.0 * RESOLUTION, "{why}: {best}");
                assert!(o.checks() <= 1, "{why}: {} checks", o.checks());
            }
        }
    }

    #[test]
    fn random_loss_alone_is_a_floor_and_the_sender_is_the_limit() {
        for p in [0.005, 0.01, 0.05, 0.2] {
            for seed in 0..40 {
                let o = sim(move |_| p).sender(2_000_000_000).seed(seed).run(DEFAULT_START);
                let why = format!("p {p} seed {seed}");
                let floor = o.floor.unwrap_or_else(|| panic!("{why}: no floor"));
                assert!(floor_near(&floor, p), "{why}: {floor:?}");
                assert_eq!(o.finish, Finish::SenderLimited, "{why}");
                assert!(o.best.unwrap() >= 1_900_000_000, "{why}: {:?}", o.best);
            }
        }
    }

    #[test]
    fn random_loss_below_a_capacity_finds_the_capacity_and_the_floor() {
        for p in [0.003, 0.01, 0.03] {
            for capacity in [49e6, 941e6] {
                for seed in 0..40 {
                    let o = sim(random_and_congestion(p, capacity)).seed(seed).run(DEFAULT_START);
                    let why = format!("p {p} capacity {capacity} seed {seed}");
                    let floor = o.floor.unwrap_or_else(|| panic!("{why}: no floor"));
                    assert!(floor_near(&floor, p), "{why}: {floor:?}");
                    let best = o.best.unwrap_or_else(|| panic!("{why}: no answer")) as f64;
                    assert!((best / capacity - 1.0).abs() <= 2.0 * RESOLUTION, "{why}: {best}");
                    assert_eq!(o.finish, Finish::Converged, "{why}");
                }
            }
        }
    }

    #[test]
    fn random_loss_from_a_start_above_the_capacity() {
        for seed in 0..40 {
            let o = sim(random_and_congestion(0.01, 49e6)).seed(seed).run(1_000_000_000);
            let floor = o.floor.unwrap_or_else(|| panic!("seed {seed}: no floor"));
            assert!(floor_near(&floor, 0.01), "seed {seed}: {floor:?}");
            let best = o.best.unwrap() as f64;
            assert!((best / 49e6 - 1.0).abs() <= 2.0 * RESOLUTION, "seed {seed}: {best}");
            // Halving down from 1 Gbit/s pairs rates twice apart by itself.
            assert_eq!(o.checks(), 0, "seed {seed}");
        }
    }

    #[test]
    fn few_datagrams_a_probe_widen_the_margin() {
        // 5 Mbit/s in 1 s probes is about 430 datagrams, 4 to 13 of them
        // lost at random: the floor and each probe are known to within a
        // percent or so, and a rate a few percent over the capacity loses
        // within the margin. The bad rate that starts the checks can also
        // lie between half the capacity and the capacity, where every check
        // lands above it and the rates below lose too few to pair: then no
        // floor is found, as before this search knew of floors.
        for p in [0.01, 0.03] {
            let mut found = 0;
            for seed in 0..40 {
                let o = sim(random_and_congestion(p, 5e6)).seed(seed).run(DEFAULT_START);
                let why = format!("p {p} seed {seed}");
                if let Some(floor) = o.floor {
                    found += 1;
                    assert!(floor_near(&floor, p), "{why}: {floor:?}");
                    let best = o.best.unwrap() as f64 / 5e6;
                    assert!((1.0 - 2.0 * RESOLUTION..=1.1).contains(&best), "{why}: {best}");
                }
            }
            assert!(found >= 34, "p {p}: {found} of 40 found the floor");
        }
    }

    #[test]
    fn loss_that_falls_steeply_as_the_rate_drops_is_congestion() {
        // 5 % at 50 Mbit/s, a sixty-fourth of that at half the rate: the
        // highest rate within 0.1 % is 50 × 0.02^(1/6), about 26 Mbit/s,
        // where a probe loses two or three datagrams, so the answers
        // scatter.
        let expect = 50e6 * 0.02f64.powf(1.0 / 6.0);
        for seed in 0..40 {
            let o = sim(|rate: f64| 0.05 * (rate / 50e6).powi(6))
                .seed(seed)
                .run(DEFAULT_START);
            assert_eq!(o.floor, None, "seed {seed}");
            let best = o.best.unwrap() as f64 / expect;
            assert!((0.85..=1.3).contains(&best), "seed {seed}: {best}");
            assert!(o.checks() <= MAX_FLOOR_CHECKS, "seed {seed}");
        }
    }

    #[test]
    fn a_floor_within_max_loss_is_not_looked_for() {
        // 0.5 % random loss is within --max-loss 2: the old search.
        let o = sim(random_and_congestion(0.005, 49e6))
            .seed(1)
            .max_loss(2.0)
            .run(DEFAULT_START);
        assert_eq!(o.floor, None);
        let best = o.best.unwrap() as f64;
        assert!((best / 49e6 - 1.0).abs() <= 2.0 * RESOLUTION, "{best}");
    }

    /// Runs the whole search, printer included, against a synthetic path:
    /// each probe ends with the `End` event a client test would emit, its
    /// loss `loss(rate)` of `-l 1400` datagrams over 1 s. Returns what the
    /// search wrote and how it ended.
    fn drive(loss: impl Fn(f64) -> f64, json: bool, stream: bool) -> (String, Result<(), Error>) {
        use std::sync::Mutex;
        use wirespeed_core::events::{DirectionSums, Summary, Totals, UdpTotals};
        let mut cfg = TestConfig::default();
        cfg.params.protocol = Protocol::Udp;
        cfg.params.block_len = Some(1400);
        cfg.params.end = EndCondition::Time(Duration::from_secs(1));
        cfg.output.json = json;
        cfg.output.json_stream = stream;
        cfg.search = Some(SearchOptions::default());
        let buf = Arc::new(Mutex::new(String::new()));
        let mut probe = |pc: &TestConfig, r: &mut Reporter| {
            let rate = pc.params.rate as f64;
            let n = (rate / (8.0 * 1400.0)).round() as i64;
            let lost = (n as f64 * loss(rate)).round() as i64;
            let totals = |bps| Totals {
                bits_per_second: bps,
                ..Totals::default()
            };
            r.emit(Event::End(Box::new(Summary {
                forward: DirectionSums {
                    sent: totals(rate),
                    received: totals(rate * (n - lost) as f64 / n as f64),
                    udp: Some(UdpTotals {
                        packets: n,
                        lost: Some(lost),
                        ..UdpTotals::default()
                    }),
                    ..DirectionSums::default()
                },
                ..Summary::default()
            })));
            Ok(())
        };
        let out = Output::buffer(buf.clone());
        let signal = Arc::new(AtomicUsize::new(0));
        let mut rep = Reporter::for_config(&cfg, out, wirespeed_core::events::Side::Client);
        let r = run(&cfg, SearchOptions::default(), &mut rep, &signal, &mut probe);
        drop(rep);
        let text = buf.lock().unwrap().clone();
        (text, r)
    }

    #[test]
    fn the_text_says_when_the_loss_is_random_and_what_the_answer_means() {
        let (text, r) = drive(random_and_congestion(0.01, 49e6), false, false);
        assert!(r.is_ok(), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        // The floor is announced where it is found, between the probes.
        let at = lines
            .iter()
            .position(|l| l.starts_with("Random loss: rates twice apart lost alike, about 1"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            lines[at].ends_with("a probe is now ok when it loses at most 0.1% more"),
            "{text}"
        );
        assert!(lines[at + 1].trim_start().starts_with(char::is_numeric), "{text}");
        assert!(text.contains("(does the loss grow with the rate?)"), "{text}");
        let end = lines.len();
        assert!(
            lines[end - 4].starts_with("The path loses about 1% at every rate probed, however low: that much is taken as random loss, and the rate reported is the highest whose loss stays within 0.1% of it."),
            "{text}"
        );
        assert!(
            lines[end - 3].starts_with("Highest rate with loss <= 0.1% above the 1% floor: 4"),
            "{text}"
        );
        assert_eq!(lines[end - 1], "iperf Done.");
        // Without random loss, the old wording and no floor.
        let (text, r) = drive(congestion(49e6), false, false);
        assert!(r.is_ok(), "{text}");
        assert!(!text.contains("floor") && !text.contains("Random loss"), "{text}");
        assert!(text.contains("\nHighest rate with loss <= 0.1%: 4"), "{text}");
    }

    /// The search's part of a `-J` document.
    fn search_of(text: &str) -> doc::Search {
        match doc::Document::parse(text) {
            Ok(doc::Document::Search(d)) => d.search.unwrap_or_default(),
            other => panic!("not a search's document: {other:?}"),
        }
    }

    #[test]
    fn the_json_document_has_the_floor_and_the_final_verdicts() {
        let (text, r) = drive(random_and_congestion(0.01, 49e6), true, false);
        assert!(r.is_ok(), "{text}");
        let s = search_of(&text);
        let result = s.result.clone().unwrap();
        let floor = result.loss_floor_percent.unwrap();
        assert!((0.7..=1.3).contains(&floor), "{floor}");
        let answer = result.bits_per_second.unwrap();
        assert!((answer / 49e6 - 1.0).abs() <= 2.0 * RESOLUTION, "{answer}");
        assert_eq!(result.finish.as_deref(), Some("converged"));
        let probes = s.probes();
        assert!(probes.iter().any(|p| p.floor_check == Some(true)));
        // Judged against the floor in the end: every probe that lost about
        // 1 % is ok, including those run before the floor was known.
        for p in probes {
            let lost = p.lost_percent.unwrap();
            if lost <= 1.2 {
                assert_eq!(p.ok, Some(true), "{p:?}");
            }
        }
        assert!(
            probes
                .iter()
                .any(|p| p.ok == Some(true) && p.bits_per_second == Some(answer))
        );
        let (text, _) = drive(congestion(49e6), true, false);
        let s = search_of(&text);
        assert_eq!(s.result.unwrap().loss_floor_percent, None, "{text}");
    }

    #[test]
    fn the_json_stream_has_an_event_for_the_floor_and_it_in_the_end() {
        let (text, r) = drive(random_and_congestion(0.01, 49e6), false, true);
        assert!(r.is_ok(), "{text}");
        let events: Vec<doc::StreamEvent> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
        assert_eq!(names.first(), Some(&"search_start"));
        assert_eq!(names.last(), Some(&"search_end"));
        assert_eq!(names.iter().filter(|n| **n == "loss_floor").count(), 1, "{text}");
        let found: doc::LossFloor = events[names.iter().position(|n| *n == "loss_floor").unwrap()]
            .data_as()
            .unwrap();
        assert!(found.loss_floor_percent.unwrap() > 0.0);
        assert!(found.packets.unwrap() > 0);
        assert!(found.up_to_bits_per_second.unwrap() > 0.0);
        let end: doc::SearchResult = events.last().unwrap().data_as().unwrap();
        assert!((0.7..=1.3).contains(&end.loss_floor_percent.unwrap()), "{end:?}");
        let (text, _) = drive(congestion(49e6), false, true);
        assert!(!text.contains("\"loss_floor\""), "{text}");
        let end: doc::StreamEvent = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        let end: doc::SearchResult = end.data_as().unwrap();
        assert_eq!(end.loss_floor_percent, None, "{end:?}");
    }

    #[test]
    fn max_loss_takes_a_percentage_with_or_without_the_sign() {
        assert_eq!(parse_max_loss("0.1%"), Some(0.1));
        assert_eq!(parse_max_loss("2"), Some(2.0));
        assert_eq!(parse_max_loss("0"), Some(0.0));
        assert_eq!(parse_max_loss("100"), None);
        assert_eq!(parse_max_loss("-1%"), None);
        assert_eq!(parse_max_loss("abc"), None);
        assert_eq!(parse_max_loss("nan"), None);
    }
}
