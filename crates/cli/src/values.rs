//! Option values both dialects read the same way: `host%dev`, DSCP names,
//! and the wirespeed additions' values (`--max-loss`, `--udp-search`).
//!
//! Each dialect wraps the result in its own error style (iperf3's
//! `parameter error - ...`, iperf 2's `ERROR: ...`).

use wirespeed_core::config::SearchOptions;

/// Splits `host%dev` into the host and the device after `%` (an empty
/// device is no device: `host%` is the host `host%`).
pub(crate) fn split_dev(s: &str) -> (String, Option<String>) {
    match s.split_once('%') {
        Some((h, d)) if !d.is_empty() => (h.to_string(), Some(d.to_string())),
        _ => (s.to_string(), None),
    }
}

/// The DSCP code point of a name both iperfs know (any case): the assured
/// forwarding classes `af11`..`af43`, the class selectors `cs0`..`cs7`,
/// `ef`, and the old TOS names `lowdelay`, `throughput` and `reliability`
/// (whose TOS bits sit in the DSCP field shifted right by two).
pub(crate) fn dscp_by_name(name: &str) -> Option<u8> {
    let v = match name.to_ascii_lowercase().as_str() {
        "cs0" => 0,
        "cs1" => 8,
        "cs2" => 16,
        "cs3" => 24,
        "cs4" => 32,
        "cs5" => 40,
        "cs6" => 48,
        "cs7" => 56,
        "af11" => 10,
        "af12" => 12,
        "af13" => 14,
        "af21" => 18,
        "af22" => 20,
        "af23" => 22,
        "af31" => 26,
        "af32" => 28,
        "af33" => 30,
        "af41" => 34,
        "af42" => 36,
        "af43" => 38,
        "ef" => 46,
        "lowdelay" => 4,
        "throughput" => 2,
        "reliability" => 1,
        _ => return None,
    };
    Some(v)
}

/// `--max-loss P[%]`: the loss a UDP search accepts, percent; the error is
/// the line to show.
pub fn max_loss(v: &str) -> Result<f64, String> {
    wirespeed_iperf::modes::search::parse_max_loss(v)
        .ok_or_else(|| format!("invalid --max-loss '{v}': a percentage from 0 up to (not including) 100"))
}

/// `--latency[=N]`: probes per second (default 10, at most
/// [`wirespeed_iperf::latency::MAX_RATE`]); the error is the line to show.
pub fn latency_rate(v: Option<&str>) -> Result<u32, String> {
    let max = wirespeed_iperf::latency::MAX_RATE;
    match v {
        None => Ok(10),
        Some(t) => t
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| format!("invalid --latency '{t}': probes per second, from 1 to {max}")),
    }
}

/// What `--udp-search` and `--max-loss` asked for, gathered while the
/// options are applied.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SearchRequest {
    /// `--udp-search` was given.
    pub search: bool,
    /// `--max-loss`, percent.
    pub max_loss: Option<f64>,
}

impl SearchRequest {
    /// The search to run, if any; `--max-loss` without `--udp-search` is an
    /// error (the line to show).
    pub fn resolve(self) -> Result<Option<SearchOptions>, &'static str> {
        if self.max_loss.is_some() && !self.search {
            return Err("--max-loss is a setting of --udp-search");
        }
        Ok(self.search.then(|| {
            let mut so = SearchOptions::default();
            if let Some(p) = self.max_loss {
                so.max_loss_percent = p;
            }
            so
        }))
    }
}

/// A subcommand's next word (`wirespeed ui`, `wirespeed exporter`): the
/// word, its option name and the value written into it (`--name=value`),
/// if any.
pub fn next_option<'a>(it: &mut std::slice::Iter<'a, String>) -> Option<(&'a str, &'a str, Option<String>)> {
    let arg = it.next()?;
    Some(match arg.split_once('=') {
        Some((n, v)) if n.starts_with("--") => (arg, n, Some(v.to_string())),
        _ => (arg, arg, None),
    })
}

/// The value of a subcommand's option `name`: the one written into it, or
/// the next word.
pub fn option_value(
    name: &str,
    inline: &Option<String>,
    it: &mut std::slice::Iter<'_, String>,
) -> Result<String, wirespeed_core::error::Error> {
    inline.clone().or_else(|| it.next().cloned()).ok_or_else(|| {
        wirespeed_core::error::Error::param_msg(
            wirespeed_core::error::Code::NONE,
            format!("option '{name}' requires an argument"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_follows_the_percent_sign() {
        assert_eq!(split_dev("fe80::1%eth0"), ("fe80::1".into(), Some("eth0".into())));
        assert_eq!(split_dev("h"), ("h".into(), None));
        assert_eq!(split_dev("h%"), ("h%".into(), None));
    }

    #[test]
    fn dscp_names_are_case_insensitive() {
        assert_eq!(dscp_by_name("EF"), Some(46));
        assert_eq!(dscp_by_name("af41"), Some(34));
        assert_eq!(dscp_by_name("va"), None);
    }

    #[test]
    fn max_loss_needs_a_search() {
        let only_loss = SearchRequest {
            search: false,
            max_loss: Some(1.0),
        };
        assert!(only_loss.resolve().is_err());
        let both = SearchRequest {
            search: true,
            max_loss: Some(1.0),
        };
        assert_eq!(both.resolve().unwrap().unwrap().max_loss_percent, 1.0);
        assert_eq!(SearchRequest::default().resolve(), Ok(None));
        assert!(max_loss("100").is_err());
    }
}
