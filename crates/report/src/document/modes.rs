//! The documents of the modes: `--rpm` (over the iperf protocol),
//! `--udp-search`, and the standard responsiveness test (`--rpm=URL`).
//! Their `--json-stream` events carry the same parts as `data`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::de;

/// `--rpm`'s document: `start`, one interval a second, `end` (or `error`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RpmDoc {
    /// The intervals.
    #[serde(deserialize_with = "de::items")]
    pub intervals: Vec<RpmInterval>,
    /// The test's settings (the `rpm_start` event's data).
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub start: Option<RpmStart>,
    /// The result (the `rpm_end` event's data).
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub end: Option<RpmEnd>,
    /// Why it failed.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `--rpm`'s `start`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RpmStart {
    /// The server.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Its port.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    /// What was measured how (it says `RPM`).
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// A flow added every this many seconds.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub interval_seconds: Option<f64>,
    /// The moving average's seconds.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub mad: Option<f64>,
    /// The stability's tolerance.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub sdt: Option<f64>,
    /// The most load flows.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub max_flows: Option<i64>,
    /// Probes per second.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub probes_per_second: Option<f64>,
    /// The trimmed means' share kept.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub trimmed_mean_keep: Option<f64>,
    /// `-t`.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub time_limit_seconds: Option<f64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One second of `--rpm` (an `rpm_interval` event's data).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RpmInterval {
    /// Since the start, s.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// Load flows.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub flows: Option<i64>,
    /// Goodput, bit/s.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub goodput_bits_per_second: Option<f64>,
    /// Its moving average, bit/s.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub goodput_moving_average: Option<f64>,
    /// Whether the goodput stopped growing.
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub saturated: Option<bool>,
    /// Round trips per minute.
    #[serde(deserialize_with = "de::f64")]
    pub rpm: Option<f64>,
    /// From the foreign probes.
    #[serde(deserialize_with = "de::f64")]
    pub foreign_rpm: Option<f64>,
    /// From the load flows.
    #[serde(deserialize_with = "de::f64")]
    pub loaded_rpm: Option<f64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `--rpm`'s `end`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RpmEnd {
    /// Round trips per minute under load.
    #[serde(deserialize_with = "de::f64")]
    pub rpm: Option<f64>,
    /// Its class (`High`, ...).
    #[serde(deserialize_with = "de::string")]
    pub class: Option<String>,
    /// `high`, `medium`, `low`.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub confidence: Option<String>,
    /// Which way the load went.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
    /// Goodput, bit/s.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub goodput_bits_per_second: Option<f64>,
    /// Load flows at the end.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub flows: Option<i64>,
    /// Round trips per minute idle.
    #[serde(deserialize_with = "de::f64")]
    pub idle_rpm: Option<f64>,
    /// The idle probes.
    #[serde(deserialize_with = "de::part")]
    pub idle: Option<RpmProbes>,
    /// The loaded probes.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub loaded: Option<RpmProbes>,
    /// Probes that failed.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub probe_failures: Option<i64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The probes' times in `--rpm`'s `end`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RpmProbes {
    /// TCP handshake, ms.
    #[serde(deserialize_with = "de::f64")]
    pub tcp_handshake_ms: Option<f64>,
    /// Round trip, ms.
    #[serde(deserialize_with = "de::f64")]
    pub round_trip_ms: Option<f64>,
    /// The load flows' TCP_INFO RTT, ms (`Some(None)`: written as `null`).
    #[serde(deserialize_with = "de::nullable_f64", skip_serializing_if = "Option::is_none")]
    pub tcp_info_rtt_ms: Option<Option<f64>>,
    /// Round trip, 90th percentile, ms (`Some(None)`: written as `null`).
    #[serde(deserialize_with = "de::nullable_f64", skip_serializing_if = "Option::is_none")]
    pub round_trip_p90_ms: Option<Option<f64>>,
    /// Probes on the load flows, ms.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub self_probe_ms: Option<f64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `--udp-search`'s document: `start` (versions), `search`, and `error`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchDoc {
    /// The program (version, system).
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub start: Option<super::iperf3::Start>,
    /// The search.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub search: Option<Search>,
    /// Why it failed.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `search`: its settings (the `search_start` event's data), probes and
/// answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Search {
    /// `--max-loss`, percent.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub max_loss_percent: Option<f64>,
    /// Each probe's length, s.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub probe_seconds: Option<f64>,
    /// `-P`.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub streams: Option<i64>,
    /// `-l`.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub blksize: Option<i64>,
    /// `-R`.
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub reverse: Option<bool>,
    /// How close good and bad rates end.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub resolution: Option<f64>,
    /// The probes, in order (not in the `search_start` event's data).
    #[serde(deserialize_with = "de::list", skip_serializing_if = "Option::is_none")]
    pub probes: Option<Vec<SearchProbe>>,
    /// The answer.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub result: Option<SearchResult>,
    /// The random loss found, percent (of a failed search; an answer has
    /// its own).
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub loss_floor_percent: Option<f64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Search {
    /// The probes (none when absent).
    pub fn probes(&self) -> &[SearchProbe] {
        self.probes.as_deref().unwrap_or_default()
    }
}

/// One probe of a search (a `probe` event's data).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchProbe {
    /// The rate asked, bit/s.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub bits_per_second: Option<f64>,
    /// What was sent, bit/s.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub sent_bits_per_second: Option<f64>,
    /// What arrived, bit/s.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub received_bits_per_second: Option<f64>,
    /// Datagrams.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub packets: Option<i64>,
    /// Datagrams lost.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<i64>,
    /// Loss, percent.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub lost_percent: Option<f64>,
    /// Jitter, ms.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    /// The sender fell short of the rate.
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub sender_limited: Option<bool>,
    /// Within `--max-loss`.
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    /// A second try of a rate.
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub retry: Option<bool>,
    /// A probe above a lossy rate, asking whether loss grows with rate.
    #[serde(deserialize_with = "de::flag", skip_serializing_if = "Option::is_none")]
    pub floor_check: Option<bool>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A search's answer (a `search_end` event's data).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchResult {
    /// The highest good rate, bit/s.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub bits_per_second: Option<f64>,
    /// What arrived at it, bit/s.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub received_bits_per_second: Option<f64>,
    /// Its loss, percent.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub lost_percent: Option<f64>,
    /// How the search ended (`converged`, ...).
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub finish: Option<String>,
    /// The random loss found, percent.
    #[serde(deserialize_with = "de::f64")]
    pub loss_floor_percent: Option<f64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A `loss_floor` event's data.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LossFloor {
    /// The random loss, percent.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub loss_floor_percent: Option<f64>,
    /// Over this many datagrams.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub packets: Option<i64>,
    /// Seen up to this rate, bit/s.
    #[serde(
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none",
        serialize_with = "de::whole"
    )]
    pub up_to_bits_per_second: Option<f64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The standard responsiveness test's document (`--rpm=URL -J`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NqDoc {
    /// `responsiveness`.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    /// The configuration's URL.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub config_url: Option<String>,
    /// The idle latency, ms.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub unloaded_latency_ms: Option<f64>,
    /// The idle jitter, ms.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    /// The download direction.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub download: Option<NqWay>,
    /// The upload direction.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub upload: Option<NqWay>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One direction of the standard responsiveness test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NqWay {
    /// Goodput, bit/s.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub throughput: Option<f64>,
    /// The self probes' median, ms.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub loaded_latency_ms: Option<f64>,
    /// Round trips per minute.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub rpm: Option<f64>,
    /// Its class.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// `high`, `medium`, `low`.
    #[serde(deserialize_with = "de::string", skip_serializing_if = "Option::is_none")]
    pub confidence: Option<String>,
    /// Load connections at the end.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub flows: Option<i64>,
    /// How long, s.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// The probes' parts, ms.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<NqLatency>,
    /// How many probes.
    #[serde(deserialize_with = "de::part", skip_serializing_if = "Option::is_none")]
    pub probes: Option<NqProbes>,
    /// Each second.
    #[serde(deserialize_with = "de::items")]
    pub intervals: Vec<NqSecond>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The probes' times of one direction, ms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NqLatency {
    /// TCP handshake.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub tcp: Option<f64>,
    /// TLS handshake.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub tls: Option<f64>,
    /// HTTP request.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub http: Option<f64>,
    /// Self probes.
    #[serde(
        rename = "self",
        deserialize_with = "de::f64",
        skip_serializing_if = "Option::is_none"
    )]
    pub self_ms: Option<f64>,
    /// Foreign probes.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub foreign: Option<f64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// How many probes of each kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NqProbes {
    /// Foreign probes.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub foreign: Option<i64>,
    /// Self probes.
    #[serde(
        rename = "self",
        deserialize_with = "de::i64",
        skip_serializing_if = "Option::is_none"
    )]
    pub self_n: Option<i64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One second of a direction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NqSecond {
    /// Since the direction's start, s.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// Goodput, bit/s.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub goodput: Option<f64>,
    /// Its moving average, bit/s.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub moving_average: Option<f64>,
    /// Load connections.
    #[serde(deserialize_with = "de::i64", skip_serializing_if = "Option::is_none")]
    pub flows: Option<i64>,
    /// Round trips per minute.
    #[serde(deserialize_with = "de::f64", skip_serializing_if = "Option::is_none")]
    pub rpm: Option<f64>,
    /// Keys not named above.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
