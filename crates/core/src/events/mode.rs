//! What the modes that run many tests to answer one question tell: the
//! responsiveness test (`--rpm`) and the UDP rate search (`--udp-search`).
//!
//! Each mode computes its numbers (`modes::rpm`, `modes::search`) and
//! emits them as [`ModeEvent`]s through the normal reporter; the text,
//! `-J`, `--json-stream`, HTML and metrics sinks format them from here.
//! An RPM is told as `RpmStart`, one `RpmInterval` a second and `RpmEnd`
//! (a failure as `Event::Error` and `Event::Done`, as a client's); a search
//! as `SearchStart`, one `SearchProbe` per probe, `SearchFloor` when the
//! probes show a loss floor, and `SearchEnd` with the answer or the failure.

use crate::error::Error;

/// One event of a mode.
#[derive(Debug, Clone, PartialEq)]
pub enum ModeEvent {
    /// The responsiveness test starts.
    RpmStart(Box<RpmStart>),
    /// One evaluation interval of the responsiveness test.
    RpmInterval(Box<RpmInterval>),
    /// The responsiveness test's result.
    RpmEnd(Box<RpmEnd>),
    /// The search starts.
    SearchStart(Box<SearchStart>),
    /// A probe of the search ended.
    SearchProbe(Box<SearchProbe>),
    /// The probes so far show a loss floor (said once, where it is found).
    SearchFloor(LossFloor),
    /// The search's answer, or why there is none.
    SearchEnd(Box<SearchEnd>),
}

/// How the responsiveness test is set up.
#[derive(Debug, Clone, PartialEq)]
pub struct RpmStart {
    /// Server as typed.
    pub host: String,
    /// Server port.
    pub port: u16,
    /// The method's name.
    pub method: String,
    /// Seconds between evaluations (and added flows).
    pub interval_seconds: f64,
    /// Moving-average distance, intervals.
    pub mad: usize,
    /// Standard-deviation tolerance (fraction).
    pub sdt: f64,
    /// Most load flows.
    pub max_flows: u32,
    /// Foreign probes per second.
    pub probes_per_second: u32,
    /// Share of the samples the trimmed mean keeps.
    pub trimmed_mean_keep: f64,
    /// The test's time limit, seconds.
    pub time_limit_seconds: f64,
}

/// One interval's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct RpmInterval {
    /// Seconds since the load started (end of the interval).
    pub at: f64,
    /// Load flows running.
    pub flows: u32,
    /// Goodput in the interval, bit/s.
    pub goodput: f64,
    /// Moving average of the last MAD intervals' goodput.
    pub goodput_avg: f64,
    /// Foreign RPM from the last MAD intervals' probes.
    pub foreign: Option<f64>,
    /// Loaded RPM from the load flows' RTTs.
    pub loaded: Option<f64>,
    /// The responsiveness.
    pub rpm: Option<f64>,
    /// Goodput saturated.
    pub saturated: bool,
}

/// The responsiveness test's result.
#[derive(Debug, Clone, PartialEq)]
pub struct RpmEnd {
    /// The final responsiveness (the last interval's), if any probe came
    /// back under load.
    pub rpm: Option<f64>,
    /// The draft's word for it ("Poor" .. "Excellent").
    pub class: Option<String>,
    /// "high", "medium" or "low".
    pub confidence: String,
    /// "upload", "download" or "upload and download".
    pub direction: String,
    /// The last interval's goodput moving average, bit/s.
    pub goodput: f64,
    /// Load flows at the end.
    pub flows: u32,
    /// Idle foreign RPM (before the load).
    pub idle_rpm: Option<f64>,
    /// Idle probes' trimmed means, ms (TCP handshake, round trip).
    pub idle_ms: Option<(f64, f64)>,
    /// Loaded trimmed means, ms: TCP handshake, round trip, load flows' RTT.
    pub tm_ms: (Option<f64>, Option<f64>, Option<f64>),
    /// `--rpm=URL`: the self probes' trimmed mean, ms (GETs on the load
    /// connections; its load has no TCP_INFO round trips).
    pub self_probe_ms: Option<f64>,
    /// 90th percentile of the loaded foreign probes' round trip, ms.
    pub p90_ms: Option<f64>,
    /// Probes that failed.
    pub failures: u64,
}

/// How the search is set up.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchStart {
    /// `--max-loss`, percent.
    pub max_loss_percent: f64,
    /// One probe's length, seconds.
    pub probe_seconds: f64,
    /// Streams of each probe.
    pub streams: u32,
    /// Datagram size.
    pub blksize: u32,
    /// The server sends (`-R`).
    pub reverse: bool,
    /// The search stops when good and bad rates are this close (fraction).
    pub resolution: f64,
}

/// What one probe measured, and how the search judged it.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// Rate asked of all streams together, bit/s.
    pub rate: u64,
    /// Rate the sender reached, bit/s.
    pub sent_bps: f64,
    /// Rate the receiver counted, bit/s.
    pub received_bps: f64,
    /// Datagrams the receiver expected (its highest sequence numbers).
    pub packets: i64,
    /// Datagrams lost.
    pub lost: i64,
    /// Loss, percent.
    pub lost_percent: f64,
    /// Receiver's jitter, ms.
    pub jitter_ms: f64,
    /// The sender fell well short of the asked rate.
    pub sender_limited: bool,
    /// Loss within the threshold and the sender reached the rate.
    pub ok: bool,
    /// This probe re-checks a rate whose first probe lost too much.
    pub retry: bool,
    /// The loss was within the threshold (whatever rate was reached).
    pub loss_ok: bool,
    /// This probe checks whether the loss grows with the rate.
    pub floor_check: bool,
}

/// A probe as it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchProbe {
    /// Its number, from 1.
    pub n: usize,
    /// What it measured and the verdict so far.
    pub probe: Probe,
    /// The search runs the same rate again next.
    pub retrying: bool,
}

/// Loss that does not depend on the rate: the path drops about this
/// fraction at rates far apart, so it is not the rate's doing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossFloor {
    /// Fraction of the datagrams lost (0..1), pooled over the probes at
    /// rates up to `up_to`.
    pub loss: f64,
    /// Datagrams the estimate pools.
    pub packets: i64,
    /// Highest rate whose probes are pooled, bit/s.
    pub up_to: u64,
}

/// Why the search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// Good and bad rates are within the resolution.
    Converged,
    /// Every rate up to the ceiling was good.
    Ceiling,
    /// The sender could not reach higher rates: the answer is the sender's.
    SenderLimited,
    /// Even the lowest rate lost too much.
    NoGoodRate,
    /// The probe budget ran out.
    ProbeLimit,
}

impl Finish {
    /// The name the JSON outputs use.
    pub fn name(self) -> &'static str {
        match self {
            Finish::Converged => "converged",
            Finish::Ceiling => "ceiling",
            Finish::SenderLimited => "sender_limited",
            Finish::NoGoodRate => "no_good_rate",
            Finish::ProbeLimit => "probe_limit",
        }
    }
}

/// The search's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchAnswer {
    /// The highest good rate, bit/s.
    pub rate: u64,
    /// What the receiver counted at it, bit/s.
    pub received_bps: f64,
    /// Its loss, percent.
    pub lost_percent: f64,
    /// Why the search ended.
    pub finish: Finish,
}

/// The end of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchEnd {
    /// Every probe, with its final verdict (a floor found late turns
    /// earlier probes good).
    pub probes: Vec<Probe>,
    /// The loss floor, if the probes showed one.
    pub floor: Option<LossFloor>,
    /// The answer, or why there is none.
    pub outcome: Result<SearchAnswer, Error>,
}
