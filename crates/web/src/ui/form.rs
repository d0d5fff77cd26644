//! The UI's form, turned into a command line: each field becomes one
//! option of the chosen dialect and its value one separate argument (no
//! shell, no free text), and the line goes through the same parser the
//! command line uses, so the UI refuses what the CLI refuses, in its words.

use serde_json::Value;

use wirespeed_core::config::Dialect;

/// Longest value a field may hold.
const MAX_VALUE: usize = 256;

/// A test as the form describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Which dialect's options (and which servers it talks to).
    pub dialect: Dialect,
    /// The arguments after the program name (and after `--iperf2`).
    pub args: Vec<String>,
    /// `-t` (seconds), bounding how long the run may take.
    pub time: f64,
    /// The server it tests against.
    pub host: String,
}

impl Plan {
    /// The command line a user would type for this test.
    pub(crate) fn command_line(&self) -> String {
        let mut words = vec!["wirespeed".to_string()];
        if self.dialect == Dialect::Iperf2 {
            words.push("--iperf2".into());
        }
        words.extend(self.args.iter().map(|a| quote(a)));
        words.join(" ")
    }

    /// The arguments of the process that runs it: the line, reporting as a
    /// JSON stream.
    pub(crate) fn process_args(&self) -> Vec<String> {
        let mut a = Vec::with_capacity(self.args.len() + 2);
        if self.dialect == Dialect::Iperf2 {
            a.push("--iperf2".into());
        }
        a.extend(self.args.iter().cloned());
        a.push("--json-stream".into());
        a
    }
}

/// Quotes a word for a POSIX shell, if it needs it (for display only).
fn quote(w: &str) -> String {
    if !w.is_empty()
        && w.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"-_.:/,=+%@[]".contains(&c))
    {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

fn field<'a>(form: &'a Value, name: &str) -> Result<Option<&'a str>, String> {
    match form.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            let s = s.trim();
            if s.is_empty() {
                return Ok(None);
            }
            if s.len() > MAX_VALUE || s.chars().any(char::is_control) {
                return Err(format!("{name}: the value is too long or holds control characters"));
            }
            // A value never becomes an option of its own.
            if s.starts_with('-') {
                return Err(format!("{name}: a value may not start with '-'"));
            }
            Ok(Some(s))
        }
        Some(Value::Number(_) | Value::Bool(_)) => Err(format!("{name}: send the value as a string")),
        Some(_) => Err(format!("{name}: not a value")),
    }
}

fn checked(form: &Value, name: &str) -> bool {
    matches!(form.get(name), Some(Value::Bool(true)))
}

/// Reads the form (a JSON object of strings and booleans) into a plan,
/// and has the dialect's parser judge it. The error is the line the
/// command line would print.
pub fn plan(form: &Value) -> Result<Plan, String> {
    if !form.is_object() {
        return Err("the form must be a JSON object".into());
    }
    let known = [
        "dialect",
        "host",
        "port",
        "protocol",
        "time",
        "interval",
        "parallel",
        "direction",
        "bitrate",
        "length",
        "window",
        "congestion",
        "latency",
        "mode",
        "insecure",
    ];
    if let Some(k) = form
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
        .find(|k| !known.contains(&k.as_str()))
    {
        return Err(format!("unknown field '{k}'"));
    }
    let dialect = match field(form, "dialect")? {
        None | Some("iperf3") => Dialect::Iperf3,
        Some("iperf2") => Dialect::Iperf2,
        Some(d) => return Err(format!("dialect: '{d}' is neither iperf3 nor iperf2")),
    };
    let host = field(form, "host")?.ok_or("host: give the server to test against")?;
    let mode = field(form, "mode")?;
    // A networkQuality server's configuration URL as the server: the
    // standard responsiveness test (--rpm=URL), which names its own
    // server and reports every second (the form's default -i 1 says no
    // more than that).
    let standard_rpm = mode == Some("rpm") && host.starts_with("https://");
    let mut args = match standard_rpm {
        true => vec![format!("--rpm={host}")],
        false => vec!["-c".to_string(), host.to_string()],
    };
    let mut opt = |name: &str, flag: &str| -> Result<(), String> {
        if let Some(v) = field(form, name)?
            && !(standard_rpm && name == "interval" && v == "1")
        {
            args.push(flag.into());
            args.push(match (dialect, name) {
                (Dialect::Iperf2, "bitrate") => iperf2_units(v, Power::Thousand),
                (Dialect::Iperf2, "length" | "window") => iperf2_units(v, Power::K1024),
                _ => v.into(),
            });
        }
        Ok(())
    };
    opt("port", "-p")?;
    opt("time", "-t")?;
    opt("interval", "-i")?;
    opt("parallel", "-P")?;
    opt("bitrate", "-b")?;
    opt("length", "-l")?;
    opt("window", "-w")?;
    opt(
        "congestion",
        if dialect == Dialect::Iperf3 {
            "-C"
        } else {
            "--tcp-congestion"
        },
    )?;
    match field(form, "protocol")? {
        None | Some("tcp") => {}
        Some("udp") => args.push("-u".into()),
        // Only a wirespeed server answers it; the dialect's parser says
        // what -q cannot be used with.
        Some("quic") if dialect == Dialect::Iperf3 => args.push("-q".into()),
        Some("quic") => return Err("protocol: QUIC is the iperf3 dialect's (-q)".into()),
        Some(p) => return Err(format!("protocol: '{p}' is neither tcp, udp nor quic")),
    }
    let direction = match (dialect, field(form, "direction")?) {
        (_, None | Some("normal")) => None,
        (_, Some("reverse")) => Some("-R"),
        (Dialect::Iperf3, Some("bidir")) => Some("--bidir"),
        (Dialect::Iperf2, Some("dual")) => Some("-d"),
        (Dialect::Iperf2, Some("tradeoff")) => Some("-r"),
        (Dialect::Iperf2, Some("full-duplex")) => Some("--full-duplex"),
        (_, Some(d)) => return Err(format!("direction: '{d}' is not a direction of this dialect")),
    };
    args.extend(direction.map(String::from));
    if checked(form, "latency") {
        args.push("--latency".into());
    }
    if checked(form, "insecure") {
        args.push("--insecure".into());
    }
    // A mode runs many tests to answer one question; each dialect's parser
    // says what it takes (a search is UDP: it gets -u unless given).
    match mode {
        None | Some("normal") => {}
        Some("rpm") if standard_rpm => {}
        Some("rpm") => args.push("--rpm".into()),
        Some("search") => {
            if !args.iter().any(|a| a == "-u") {
                args.push("-u".into());
            }
            args.push("--udp-search".into());
        }
        Some(m) => return Err(format!("mode: '{m}' is neither normal, rpm nor search")),
    }
    if dialect == Dialect::Iperf2 {
        // The enhanced report: what iperf 2 users read, and the JSON's extras.
        args.push("-e".into());
    }
    let mut time = check(dialect, &args)?;
    if mode == Some("search") {
        // Each probe runs -t seconds, with a pause between them.
        time = (time + 1.0) * wirespeed_iperf::modes::search::MAX_PROBES as f64;
    }
    Ok(Plan {
        dialect,
        args,
        time,
        host: host.to_string(),
    })
}

/// What a unit letter multiplies by.
#[derive(Clone, Copy)]
enum Power {
    Thousand,
    K1024,
}

/// The form's numbers mean what the fields say, in both dialects (as
/// iperf3 reads them): a rate's k/M/G/T are powers of 1000, a size's
/// powers of 1024. iperf 2 tells the two by the letter's case, for rates
/// and sizes alike (lower case 1000, upper case 1024: its `-b 20M` is
/// 20.97 Mbit/s), so its command line gets the letters that give the same
/// number.
fn iperf2_units(v: &str, power: Power) -> String {
    v.chars()
        .map(|c| match (c, power) {
            ('K' | 'M' | 'G' | 'T', Power::Thousand) => c.to_ascii_lowercase(),
            ('k' | 'm' | 'g' | 't', Power::K1024) => c.to_ascii_uppercase(),
            _ => c,
        })
        .collect()
}

/// Parses `args` as the dialect's command line would (with `--json-stream`
/// added, as the run has it); returns the test's length.
fn check(dialect: Dialect, args: &[String]) -> Result<f64, String> {
    let mut full = args.to_vec();
    full.push("--json-stream".into());
    let cfg = match dialect {
        Dialect::Iperf3 => match wirespeed_cli::iperf3::parse_args(&full) {
            Ok(wirespeed_cli::iperf3::Command::Run(cfg, _)) => cfg,
            Ok(_) => return Err("not a test".into()),
            Err(e) => return Err(format!("wirespeed: {}", e.line())),
        },
        Dialect::Iperf2 => match wirespeed_cli::iperf2::parse_args_with_env(&full, &|_| None) {
            Ok(wirespeed_cli::iperf2::Command::Run(cfg, _)) => cfg,
            Ok(_) => return Err("not a test".into()),
            Err(e) => return Err(e.line("iperf")),
        },
    };
    let secs = match (&cfg.nq, cfg.params.end) {
        // Download, then upload, each up to its time, and the handshakes.
        (Some(nq), _) => 2.0 * nq.time.as_secs_f64() + 10.0,
        (None, wirespeed_core::config::EndCondition::Time(d)) => d.as_secs_f64(),
        _ => 0.0,
    };
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err("time: the UI runs tests of 1 second to 1 day".into());
    }
    Ok(secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_form_becomes_the_dialects_command_line() {
        let p = plan(&json!({"host": "127.0.0.1", "port": "5201", "time": "3", "protocol": "udp", "bitrate": "10M", "direction": "bidir", "latency": true}))
            .unwrap();
        assert_eq!(
            p.command_line(),
            "wirespeed -c 127.0.0.1 -p 5201 -t 3 -b 10M -u --bidir --latency"
        );
        assert_eq!(p.time, 3.0);
        assert_eq!(p.process_args().last().unwrap(), "--json-stream");
        let p =
            plan(&json!({"dialect": "iperf2", "host": "::1", "time": "2", "direction": "dual", "congestion": "reno"}))
                .unwrap();
        assert_eq!(
            p.command_line(),
            "wirespeed --iperf2 -c ::1 -t 2 --tcp-congestion reno -d -e"
        );
        assert_eq!(p.process_args()[0], "--iperf2");
    }

    #[test]
    fn a_value_means_the_same_number_in_both_dialects() {
        let cfg = |dialect: &str, extra: Value| {
            let mut f = json!({"dialect": dialect, "host": "127.0.0.1", "time": "2"});
            f.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            let p = plan(&f).unwrap();
            let c = match p.dialect {
                Dialect::Iperf3 => match wirespeed_cli::iperf3::parse_args(&p.args).unwrap() {
                    wirespeed_cli::iperf3::Command::Run(c, _) => c,
                    _ => unreachable!(),
                },
                Dialect::Iperf2 => match wirespeed_cli::iperf2::parse_args_with_env(&p.args, &|_| None).unwrap() {
                    wirespeed_cli::iperf2::Command::Run(c, _) => c,
                    _ => unreachable!(),
                },
            };
            (p, c)
        };
        // 20M is 20,000,000 bit/s in both (iperf 2's own "20M" is 20.97 Mbit/s).
        for rate in ["20M", "20m"] {
            let (_, a) = cfg("iperf3", json!({ "bitrate": rate }));
            let (p, b) = cfg("iperf2", json!({ "bitrate": rate }));
            assert_eq!((a.params.rate, b.params.rate), (20_000_000, 20_000_000), "{rate}");
            assert!(p.command_line().contains(" -b 20m "), "{}", p.command_line());
        }
        // UDP packet rates too: 2k datagrams/s.
        let (p, b) = cfg("iperf2", json!({"bitrate": "2Kpps", "protocol": "udp"}));
        assert_eq!(b.params.pps, Some(2000), "{}", p.command_line());
        // Sizes are powers of 1024 in both (iperf 2's own "128k" is 128,000).
        for len in ["128K", "128k"] {
            let (_, a) = cfg("iperf3", json!({ "length": len, "window": "256k" }));
            let (p, b) = cfg("iperf2", json!({ "length": len, "window": "256k" }));
            assert_eq!(a.params.block_len, Some(131_072), "{len}");
            assert_eq!(a.params.block_len, b.params.block_len, "{len}: {}", p.command_line());
            assert_eq!(a.params.window, b.params.window, "{}", p.command_line());
            assert!(p.command_line().contains(" -l 128K -w 256K"), "{}", p.command_line());
        }
    }

    #[test]
    fn the_mode_choice_adds_rpm_or_the_udp_search() {
        let p = plan(&json!({"host": "127.0.0.1", "time": "5", "mode": "rpm"})).unwrap();
        assert_eq!(p.command_line(), "wirespeed -c 127.0.0.1 -t 5 --rpm");
        assert_eq!(p.time, 5.0);
        let p = plan(&json!({"dialect": "iperf2", "host": "127.0.0.1", "time": "4", "mode": "rpm"})).unwrap();
        assert_eq!(p.command_line(), "wirespeed --iperf2 -c 127.0.0.1 -t 4 --rpm -e");
        // A search is UDP, its -t one probe's length: the run may take
        // every probe's.
        let p = plan(&json!({"host": "127.0.0.1", "time": "1", "mode": "search"})).unwrap();
        assert_eq!(p.command_line(), "wirespeed -c 127.0.0.1 -t 1 -u --udp-search");
        assert!(p.time >= 40.0, "{}", p.time);
        let p = plan(&json!({"dialect": "iperf2", "host": "127.0.0.1", "protocol": "udp", "mode": "search"})).unwrap();
        assert_eq!(p.command_line(), "wirespeed --iperf2 -c 127.0.0.1 -u --udp-search -e");
        let p = plan(&json!({"host": "127.0.0.1", "time": "2", "mode": "normal"})).unwrap();
        assert_eq!(p.command_line(), "wirespeed -c 127.0.0.1 -t 2");
        // The dialect's parser judges the mode's line, in its words.
        // A configuration URL as the server: the standard test.
        let p = plan(&json!({"host": "https://h:4443/.well-known/nq", "time": "5", "interval": "1", "mode": "rpm", "insecure": true, "direction": "reverse"})).unwrap();
        assert_eq!(
            p.command_line(),
            "wirespeed --rpm=https://h:4443/.well-known/nq -t 5 -R --insecure"
        );
        assert_eq!(p.time, 20.0);
        let e = plan(&json!({"host": "https://h/", "mode": "rpm", "interval": "2"})).unwrap_err();
        assert!(e.contains("--rpm=URL cannot be used with -i"), "{e}");
        let e = plan(&json!({"host": "https://h/", "mode": "rpm", "port": "5201"})).unwrap_err();
        assert!(e.contains("--rpm=URL cannot be used with -p"), "{e}");
        let e = plan(&json!({"host": "127.0.0.1", "insecure": true})).unwrap_err();
        assert!(e.contains("--insecure go with --rpm=URL"), "{e}");
        let e = plan(&json!({"host": "127.0.0.1", "mode": "rpm", "protocol": "udp"})).unwrap_err();
        assert!(e.contains("--rpm cannot be used with -u"), "{e}");
        let e = plan(&json!({"host": "127.0.0.1", "mode": "search", "interval": "1"})).unwrap_err();
        assert!(e.contains("--udp-search cannot be used with -i"), "{e}");
        assert!(plan(&json!({"host": "127.0.0.1", "mode": "fast"})).is_err());
    }

    #[test]
    fn the_clis_refusals_come_back_in_its_words() {
        let e = plan(&json!({"host": "127.0.0.1", "parallel": "0"})).unwrap_err();
        assert!(e.starts_with("wirespeed: parameter error - "), "{e}");
        let e = plan(&json!({"host": "127.0.0.1", "bitrate": "fast"})).unwrap_err();
        assert!(e.starts_with("wirespeed: "), "{e}");
        let e = plan(&json!({"dialect": "iperf2", "host": "127.0.0.1", "time": "x"})).unwrap_err();
        assert!(!e.is_empty());
    }

    #[test]
    fn quic_is_the_iperf3_dialects_q_with_its_refusals() {
        let p = plan(
            &json!({"host": "127.0.0.1", "time": "2", "protocol": "quic", "parallel": "2", "direction": "reverse"}),
        )
        .unwrap();
        assert_eq!(p.command_line(), "wirespeed -c 127.0.0.1 -t 2 -P 2 -q -R");
        let e = plan(&json!({"dialect": "iperf2", "host": "127.0.0.1", "protocol": "quic"})).unwrap_err();
        assert!(e.contains("QUIC is the iperf3 dialect's"), "{e}");
        // -w and -C are QUIC's windows and controller.
        let p = plan(&json!({"host": "127.0.0.1", "protocol": "quic", "window": "1M", "congestion": "bbr"})).unwrap();
        assert_eq!(p.command_line(), "wirespeed -c 127.0.0.1 -w 1M -C bbr -q");
        // The parser's own refusals, in its words.
        let e = plan(&json!({"host": "127.0.0.1", "protocol": "quic", "mode": "rpm"})).unwrap_err();
        assert!(e.contains("--quic cannot be used with --rpm"), "{e}");
        let e = plan(&json!({"host": "127.0.0.1", "protocol": "quic", "congestion": "vegas"})).unwrap_err();
        assert!(e.contains("--quic has no congestion control 'vegas'"), "{e}");
    }

    #[test]
    fn nothing_but_known_fields_and_plain_values_gets_through() {
        for bad in [
            json!({"host": "-s"}),
            json!({"host": "127.0.0.1", "length": "--daemon"}),
            json!({"host": "127.0.0.1", "extra": "x"}),
            json!({"host": "127.0.0.1", "time": 3}),
            json!({"host": "a\nb"}),
            json!({"host": "127.0.0.1", "direction": "dual"}),
            json!({"dialect": "iperf4", "host": "h"}),
            json!({"host": "127.0.0.1", "protocol": "sctp"}),
            json!({}),
            json!([1]),
        ] {
            assert!(plan(&bad).is_err(), "{bad}");
        }
        assert_eq!(quote("a b'c"), r"'a b'\''c'");
    }
}
