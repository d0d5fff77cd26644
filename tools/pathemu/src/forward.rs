//! One direction of the path: a thread that reads packets from one TUN
//! device, decides each one's fate, and writes the survivors into the
//! other device when they are due.
//!
//! The model, per direction, in the order a packet meets it:
//! 1. outage: while the direction is down (by command or schedule), every
//!    arriving packet is dropped;
//! 2. loss: a Bernoulli draw drops the packet;
//! 3. queue: with a rate set, an arrival that finds `queue` packets
//!    waiting for the link (not counting the one being sent) is dropped;
//! 4. link: departure = max(arrival, previous departure) + size × 8 / rate;
//! 5. delivery = departure + max(0, delay + uniform(±jitter)), written in
//!    delivery-time order (a heap, so jitter reorders).
//!
//! Counters are atomics written only by the direction's own thread (a load
//! and a store, no locked instruction) and read by the control thread at
//! any time. Buffers come from a pool that grows in chunks up to a bound
//! and is reused afterwards, so the steady state allocates nothing.

use std::cmp::Ordering as CmpOrdering;
use std::collections::{BinaryHeap, VecDeque};
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::packet::{self, CLASSES, NON_IP, PROTOS};
use crate::spec::{DirSettings, EcnMode};

/// What the ECN rewrite did to packets, in counter order.
pub const ECN_ACTS: [&str; 3] = ["marked", "bleached", "remarked"];
const MARKED: u8 = 1;
const BLEACHED: u8 = 2;
const REMARKED: u8 = 3;

/// What happened to packets, in counter order.
pub const FATES: [&str; 7] = ["in", "delivered", "loss", "queue", "outage", "limit", "write_error"];
const IN: usize = 0;
const DELIVERED: usize = 1;
const LOSS: usize = 2;
const QUEUE: usize = 3;
const OUTAGE: usize = 4;
const LIMIT: usize = 5;
const WRITE_ERROR: usize = 6;
const NFATES: usize = FATES.len();

/// Longest sleep with nothing due, so a stop or a changed setting is seen
/// promptly without a wake-up channel.
const IDLE_WAIT: Duration = Duration::from_millis(10);
/// Most packets read in a row before the loop looks at its clock-driven
/// work again (delivery happens between reads as well).
const READ_BURST: usize = 256;
/// Realtime priority of the forwarding threads: any beats every normal
/// thread; a low one leaves the kernel's realtime threads ahead.
const REALTIME_PRIORITY: i32 = 10;
/// Buffers added to the pool at a time.
const POOL_CHUNK: usize = 1024;

/// Nanoseconds on one monotonic clock shared by every thread.
#[derive(Clone, Copy)]
pub struct Clock(Instant);

impl Clock {
    /// A clock whose zero is now.
    pub fn new() -> Clock {
        Clock(Instant::now())
    }
    /// Nanoseconds since the clock's zero.
    pub fn now(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
}

/// splitmix64: small, fast, and the same sequence for the same seed.
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One counter, written by one thread only.
fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Relaxed).wrapping_add(n), Relaxed);
}

/// A direction's counters.
pub struct Counters {
    packets: [[AtomicU64; NFATES]; CLASSES],
    bytes: [[AtomicU64; NFATES]; CLASSES],
    /// Packets delivered after a packet of their class that arrived later.
    reordered: [AtomicU64; CLASSES],
    /// Per UDP payload length (from the UDP header), per fate.
    udp_len: Box<[[AtomicU64; NFATES]]>,
    /// Packets delivered with their ECN field rewritten, per class and
    /// action (see [`ECN_ACTS`]).
    ecn: [[AtomicU64; 3]; CLASSES],
    in_flight: AtomicU64,
    queue_max: AtomicU64,
    read_errors: AtomicU64,
    late_count: AtomicU64,
    late_sum_ns: AtomicU64,
    late_max_ns: AtomicU64,
    late_over_100us: AtomicU64,
    late_over_1ms: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl Counters {
    fn new() -> Counters {
        Counters {
            packets: Default::default(),
            bytes: Default::default(),
            reordered: Default::default(),
            ecn: Default::default(),
            udp_len: (0..=u16::MAX as usize).map(|_| Default::default()).collect(),
            in_flight: AtomicU64::new(0),
            queue_max: AtomicU64::new(0),
            read_errors: AtomicU64::new(0),
            late_count: AtomicU64::new(0),
            late_sum_ns: AtomicU64::new(0),
            late_max_ns: AtomicU64::new(0),
            late_over_100us: AtomicU64::new(0),
            late_over_1ms: AtomicU64::new(0),
            last_error: Mutex::new(None),
        }
    }

    fn count(&self, kind: packet::Kind, fate: usize, len: usize) {
        let c = kind.class as usize;
        bump(&self.packets[c][fate], 1);
        bump(&self.bytes[c][fate], len as u64);
        if let Some(l) = kind.udp_len {
            bump(&self.udp_len[l as usize][fate], 1);
        }
    }

    fn note_error(&self, what: &str, e: &std::io::Error) {
        if let Ok(mut last) = self.last_error.lock() {
            *last = Some(format!("{what}: {e}"));
        }
    }

    /// Packets and bytes of counter rows `rows`, by fate.
    fn fates(&self, rows: &[usize]) -> Value {
        let mut m = Map::new();
        for (f, name) in FATES.iter().enumerate() {
            let (p, b) = rows.iter().fold((0, 0), |(p, b), &r| {
                (p + self.packets[r][f].load(Relaxed), b + self.bytes[r][f].load(Relaxed))
            });
            m.insert((*name).into(), json!({"packets": p, "bytes": b}));
        }
        let r: u64 = rows.iter().map(|&r| self.reordered[r].load(Relaxed)).sum();
        m.insert("reordered".into(), json!({ "packets": r }));
        let ecn: Map<String, Value> = ECN_ACTS
            .iter()
            .enumerate()
            .map(|(a, name)| {
                let n: u64 = rows.iter().map(|&r| self.ecn[r][a].load(Relaxed)).sum();
                ((*name).to_string(), n.into())
            })
            .collect();
        m.insert("ecn".into(), Value::Object(ecn));
        Value::Object(m)
    }

    /// Everything, as the stats line reports it.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("total".into(), self.fates(&(0..CLASSES).collect::<Vec<_>>()));
        for (i, p) in PROTOS.iter().enumerate() {
            let mut rows = vec![i, 4 + i];
            if *p == "other" {
                rows.push(NON_IP);
            }
            m.insert((*p).into(), self.fates(&rows));
        }
        for (fam, base) in [("ipv4", 0), ("ipv6", 4)] {
            let per: Map<String, Value> = PROTOS
                .iter()
                .enumerate()
                .map(|(i, p)| ((*p).to_string(), self.fates(&[base + i])))
                .collect();
            m.insert(fam.into(), Value::Object(per));
        }
        m.insert("non_ip".into(), self.fates(&[NON_IP]));
        let mut by_len = Map::new();
        for (len, row) in self.udp_len.iter().enumerate() {
            if row[IN].load(Relaxed) == 0 {
                continue;
            }
            let fates: Map<String, Value> = FATES
                .iter()
                .zip(row)
                .map(|(f, c)| ((*f).to_string(), c.load(Relaxed).into()))
                .collect();
            by_len.insert(len.to_string(), Value::Object(fates));
        }
        m.insert("udp_by_len".into(), Value::Object(by_len));
        m.insert("in_flight".into(), self.in_flight.load(Relaxed).into());
        m.insert("queue_max".into(), self.queue_max.load(Relaxed).into());
        m.insert("read_errors".into(), self.read_errors.load(Relaxed).into());
        let n = self.late_count.load(Relaxed);
        let mean = if n > 0 {
            self.late_sum_ns.load(Relaxed) as f64 / n as f64 / 1e3
        } else {
            0.0
        };
        m.insert(
            "late_us".into(),
            json!({
                "mean": (mean * 10.0).round() / 10.0,
                "max": self.late_max_ns.load(Relaxed) as f64 / 1e3,
                "over_100us": self.late_over_100us.load(Relaxed),
                "over_1ms": self.late_over_1ms.load(Relaxed),
            }),
        );
        let last = self.last_error.lock().ok().and_then(|l| l.clone());
        m.insert("last_error".into(), last.into());
        Value::Object(m)
    }
}

/// What the control thread shares with one direction's thread.
pub struct Control {
    /// Current settings; the thread rereads them when `generation` moves.
    pub settings: Mutex<DirSettings>,
    /// Bumped after every change to `settings`.
    pub generation: AtomicU64,
    /// Down by command.
    pub down: AtomicBool,
    /// Scheduled outages as [start, end) on the shared clock; fixed once
    /// the thread starts.
    pub outages: Mutex<Vec<(u64, u64)>>,
    /// The direction's counters.
    pub counters: Counters,
}

impl Control {
    /// Control for a direction with `settings`.
    pub fn new(settings: DirSettings) -> Control {
        Control {
            settings: Mutex::new(settings),
            generation: AtomicU64::new(0),
            down: AtomicBool::new(false),
            outages: Mutex::new(Vec::new()),
            counters: Counters::new(),
        }
    }

    /// Whether packets arriving at `t` are dropped as an outage.
    pub fn is_down(&self, t: u64, outages: &[(u64, u64)]) -> bool {
        self.down.load(Relaxed) || outages.iter().any(|&(s, e)| s <= t && t < e)
    }

    /// Replaces the settings; the thread picks them up at its next turn.
    pub fn set(&self, s: DirSettings) {
        if let Ok(mut cur) = self.settings.lock() {
            *cur = s;
        }
        self.generation.fetch_add(1, Relaxed);
    }

    /// The current settings.
    pub fn get(&self) -> DirSettings {
        self.settings.lock().map(|s| *s).unwrap_or_default()
    }
}

/// Fixed-size packet buffers, handed out by index.
struct Pool {
    slot: usize,
    chunks: Vec<Box<[u8]>>,
    free: Vec<u32>,
    total: usize,
    max: usize,
}

impl Pool {
    fn new(slot: usize, max: usize) -> Pool {
        let mut p = Pool {
            slot,
            chunks: Vec::new(),
            free: Vec::with_capacity(max),
            total: 0,
            max,
        };
        p.grow();
        p
    }

    fn grow(&mut self) {
        let n = POOL_CHUNK.min(self.max - self.total);
        if n == 0 {
            return;
        }
        self.chunks.push(vec![0u8; n * self.slot].into_boxed_slice());
        // Handed out lowest first, so a quiet path keeps touching the same
        // few buffers.
        self.free.extend((self.total..self.total + n).rev().map(|i| i as u32));
        self.total += n;
    }

    fn take(&mut self) -> Option<u32> {
        if self.free.is_empty() {
            self.grow();
        }
        self.free.pop()
    }

    fn put(&mut self, id: u32) {
        self.free.push(id);
    }

    fn buf(&mut self, id: u32) -> &mut [u8] {
        let (c, i) = (id as usize / POOL_CHUNK, id as usize % POOL_CHUNK);
        &mut self.chunks[c][i * self.slot..(i + 1) * self.slot]
    }
}

/// A packet on its way: due at `due`, in buffer `id`.
struct Entry {
    due: u64,
    seq: u64,
    id: u32,
    len: u32,
    kind: packet::Kind,
    /// What the ECN rewrite did (0: nothing; MARKED, BLEACHED, REMARKED).
    ecn_act: u8,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.seq) == (o.due, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap pops its greatest, and the earliest is wanted.
    fn cmp(&self, o: &Self) -> CmpOrdering {
        (o.due, o.seq).cmp(&(self.due, self.seq))
    }
}

/// How a direction's thread is set up, besides its devices and control.
pub struct Params {
    /// Set to end the thread.
    pub stop: Arc<AtomicBool>,
    /// The clock outages are scheduled on.
    pub clock: Clock,
    /// Seed of the loss and jitter draws.
    pub seed: u64,
    /// Buffer size: above the MTU, so no packet is cut.
    pub slot: usize,
    /// Most packets held at once; beyond it arrivals are dropped as "limit".
    pub max_in_flight: usize,
    /// Sleep after a round that moved packets (zero: wait for the next
    /// arrival or due time, however close).
    pub nap: Duration,
    /// Run the thread with realtime (round-robin) scheduling.
    pub realtime: bool,
}

/// One direction's thread state.
pub struct Forwarder {
    rx: Arc<File>,
    tx: Arc<File>,
    ctl: Arc<Control>,
    stop: Arc<AtomicBool>,
    clock: Clock,
    settings: DirSettings,
    generation: u64,
    outages: Vec<(u64, u64)>,
    rng: Rng,
    pool: Pool,
    scratch: Vec<u8>,
    heap: BinaryHeap<Entry>,
    /// Transmission start times of packets still waiting for the link.
    waiting: VecDeque<u64>,
    /// When the link finishes sending what it has been given.
    link_free: u64,
    seq: u64,
    /// Arrival number of the latest-arriving packet delivered, per class.
    delivered_seq: [u64; CLASSES],
    nap: Duration,
    realtime: bool,
}

impl Forwarder {
    /// A direction reading `rx` and writing `tx`.
    pub fn new(rx: Arc<File>, tx: Arc<File>, ctl: Arc<Control>, p: Params) -> Forwarder {
        let Params {
            stop,
            clock,
            seed,
            slot,
            max_in_flight,
            nap,
            realtime,
        } = p;
        let settings = ctl.get();
        let outages = ctl.outages.lock().map(|o| o.clone()).unwrap_or_default();
        let mut f = Forwarder {
            rx,
            tx,
            ctl,
            stop,
            clock,
            settings,
            generation: 0,
            outages,
            rng: Rng::new(seed),
            pool: Pool::new(slot, max_in_flight),
            scratch: vec![0u8; slot],
            heap: BinaryHeap::with_capacity(max_in_flight),
            waiting: VecDeque::new(),
            link_free: 0,
            seq: 0,
            delivered_seq: [0; CLASSES],
            nap,
            realtime,
        };
        f.reserve_queue();
        f
    }

    fn reserve_queue(&mut self) {
        let want = (self.settings.queue as usize).min(self.pool.max) + 1;
        if self.waiting.capacity() < want {
            self.waiting.reserve(want - self.waiting.len());
        }
    }

    /// Runs until `stop` is set. Packets still held then are left
    /// undelivered (reported as in flight).
    pub fn run(mut self) {
        // A sleeping thread wakes when its timer fires plus the slack; the
        // default 50 µs would blur delays and rates.
        let _ = wirespeed_sys::udp::set_thread_timer_slack(1_000);
        // Ahead of the endpoints and anything else on a shared machine: a
        // network's timing does not depend on the load of its hosts. The
        // thread sleeps whenever it has nothing to do, so it cannot starve
        // them beyond the work the traffic brings.
        if self.realtime
            && let Err(e) = wirespeed_sys::netif::set_realtime_priority(REALTIME_PRIORITY)
        {
            eprintln!("pathemu: realtime scheduling refused ({e}); timing will suffer when CPUs are busy");
        }
        while !self.stop.load(Relaxed) {
            let g = self.ctl.generation.load(Relaxed);
            if g != self.generation {
                self.generation = g;
                self.settings = self.ctl.get();
                self.reserve_queue();
            }
            let mut moved = self.deliver_due();
            let mut idle = false;
            for _ in 0..READ_BURST {
                if !self.read_one() {
                    idle = true;
                    break;
                }
                moved += 1 + self.deliver_due();
            }
            if !idle {
                continue;
            }
            if moved > 0 && !self.nap.is_zero() {
                // Busy: let packets gather for a moment rather than waking
                // for each arrival and each departure (a context switch
                // apiece, most of the cost at high packet rates).
                std::thread::sleep(self.nap);
                continue;
            }
            let now = self.clock.now();
            let wait = match self.heap.peek() {
                Some(e) if e.due <= now => continue,
                Some(e) => Duration::from_nanos(e.due - now).min(IDLE_WAIT),
                None => IDLE_WAIT,
            };
            if let Err(e) = wirespeed_sys::tun::wait_readable(&*self.rx, Some(wait)) {
                self.ctl.counters.note_error("poll", &e);
                std::thread::sleep(IDLE_WAIT);
            }
        }
    }

    /// Reads and admits one packet; false when none is waiting.
    fn read_one(&mut self) -> bool {
        let Some(id) = self.pool.take() else {
            return self.read_beyond_limit();
        };
        let got = (&*self.rx).read(self.pool.buf(id));
        match got {
            Ok(n) => {
                let now = self.clock.now();
                self.admit(id, n, now);
                true
            }
            Err(e) => {
                self.pool.put(id);
                self.read_failed(e)
            }
        }
    }

    /// With every buffer in use, a packet is read only to be counted and
    /// dropped: the ring behind it must keep draining, or the kernel would
    /// drop uncounted.
    fn read_beyond_limit(&mut self) -> bool {
        match (&*self.rx).read(&mut self.scratch) {
            Ok(n) => {
                let kind = packet::classify(&self.scratch[..n]);
                let c = &self.ctl.counters;
                c.count(kind, IN, n);
                c.count(kind, LIMIT, n);
                true
            }
            Err(e) => self.read_failed(e),
        }
    }

    fn read_failed(&mut self, e: std::io::Error) -> bool {
        match e.kind() {
            ErrorKind::WouldBlock => false,
            ErrorKind::Interrupted => true,
            _ => {
                bump(&self.ctl.counters.read_errors, 1);
                self.ctl.counters.note_error("read", &e);
                false
            }
        }
    }

    fn admit(&mut self, id: u32, n: usize, now: u64) {
        let kind = packet::classify(&self.pool.buf(id)[..n]);
        let s = self.settings;
        let c = &self.ctl.counters;
        c.count(kind, IN, n);
        let fate = if self.ctl.is_down(now, &self.outages) {
            Some(OUTAGE)
        } else if s.loss > 0.0 && self.rng.unit() < s.loss {
            Some(LOSS)
        } else {
            None
        };
        if let Some(f) = fate {
            c.count(kind, f, n);
            self.pool.put(id);
            return;
        }
        // How long the packet waits for the link (its queue delay).
        let mut sojourn = 0;
        let departure = match s.rate_bps {
            None => now,
            Some(rate) => {
                while self.waiting.front().is_some_and(|&start| start <= now) {
                    self.waiting.pop_front();
                }
                if self.waiting.len() as u64 >= s.queue && self.link_free > now {
                    c.count(kind, QUEUE, n);
                    self.pool.put(id);
                    return;
                }
                let start = self.link_free.max(now);
                sojourn = start - now;
                let tx_ns = ((n as u128 * 8_000_000_000) / rate as u128) as u64;
                self.link_free = start + tx_ns;
                if start > now {
                    self.waiting.push_back(start);
                    let depth = self.waiting.len() as u64;
                    if depth > c.queue_max.load(Relaxed) {
                        c.queue_max.store(depth, Relaxed);
                    }
                }
                self.link_free
            }
        };
        let mut delay = s.delay_ns as i64;
        if s.jitter_ns > 0 {
            let j = s.jitter_ns as f64;
            delay += ((self.rng.unit() * 2.0 - 1.0) * j) as i64;
        }
        // After the queue: the marking step reads the queue delay.
        let ecn_act = match s.ecn {
            EcnMode::Off => 0,
            mode => self.rewrite_ecn(id, n, mode, sojourn, s.mark_at_ns),
        };
        self.seq += 1;
        let c = &self.ctl.counters;
        self.heap.push(Entry {
            due: departure + delay.max(0) as u64,
            seq: self.seq,
            id,
            len: n as u32,
            kind,
            ecn_act,
        });
        bump(&c.in_flight, 1);
    }

    /// Rewrites the ECN field of the packet in buffer `id` as `mode` says,
    /// given how long it waits for the link; returns what it did.
    fn rewrite_ecn(&mut self, id: u32, n: usize, mode: EcnMode, sojourn: u64, mark_at: u64) -> u8 {
        let p = &self.pool.buf(id)[..n];
        let Some(field) = packet::ecn(p) else { return 0 };
        let (to, act) = match (mode, field) {
            // ECT(1), L4S: a step at the threshold.
            (EcnMode::Mark, 1) if sojourn >= mark_at => (3, MARKED),
            // ECT(0), classic: a probability rising with the queue.
            (EcnMode::Mark, 2) if sojourn >= mark_at => {
                let span = (mark_at.max(1) * 9) as f64;
                let p = ((sojourn - mark_at) as f64 / span).min(1.0);
                if self.rng.unit() < p {
                    (3, MARKED)
                } else {
                    return 0;
                }
            }
            (EcnMode::Bleach, 1..=3) => (0, BLEACHED),
            (EcnMode::Remark0to1, 2) => (1, REMARKED),
            (EcnMode::Remark1to0, 1) => (2, REMARKED),
            _ => return 0,
        };
        packet::set_ecn(&mut self.pool.buf(id)[..n], to);
        act
    }

    /// Writes every packet whose time has come, earliest first; returns
    /// how many.
    fn deliver_due(&mut self) -> usize {
        let mut n = 0;
        loop {
            // Read per packet: writing takes time, and more may come due.
            let now = self.clock.now();
            if self.heap.peek().is_none_or(|e| e.due > now) {
                return n;
            }
            let Some(e) = self.heap.pop() else { return n };
            n += 1;
            let late = now - e.due;
            let len = e.len as usize;
            let res = (&*self.tx).write(&self.pool.buf(e.id)[..len]);
            let c = &self.ctl.counters;
            match res {
                Ok(_) => {
                    c.count(e.kind, DELIVERED, len);
                    if e.ecn_act > 0 {
                        bump(&c.ecn[e.kind.class as usize][e.ecn_act as usize - 1], 1);
                    }
                }
                Err(err) => {
                    c.count(e.kind, WRITE_ERROR, len);
                    c.note_error("write", &err);
                }
            }
            let last = &mut self.delivered_seq[e.kind.class as usize];
            if e.seq < *last {
                bump(&c.reordered[e.kind.class as usize], 1);
            } else {
                *last = e.seq;
            }
            self.pool.put(e.id);
            c.in_flight.store(c.in_flight.load(Relaxed) - 1, Relaxed);
            bump(&c.late_count, 1);
            bump(&c.late_sum_ns, late);
            if late > c.late_max_ns.load(Relaxed) {
                c.late_max_ns.store(late, Relaxed);
            }
            if late > 100_000 {
                bump(&c.late_over_100us, 1);
            }
            if late > 1_000_000 {
                bump(&c.late_over_1ms, 1);
            }
        }
    }
}
