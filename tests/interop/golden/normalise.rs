//! Output normalised to its shape (the rules are in the module's
//! documentation; `normalise_tests` pins each).

use super::*;

// ---------------------------------------------------------------------------
// Normalisation.

/// Normalises output to its shape; see the module comment for the rules.
#[derive(Clone)]
pub(super) struct Normaliser {
    /// The machine's `uname -snrvm` text (iperf3 -V prints it).
    pub(super) uname: Option<String>,
    pub(super) keep_rate_units: bool,
}

pub(super) const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
pub(super) const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

impl Normaliser {
    pub(super) fn new() -> Normaliser {
        let read = |f: &str| std::fs::read_to_string(format!("/proc/sys/kernel/{f}")).ok();
        let uname = (|| {
            Some(format!(
                "{} {} {} {} {}",
                read("ostype")?.trim(),
                read("hostname")?.trim(),
                read("osrelease")?.trim(),
                read("version")?.trim(),
                std::env::consts::ARCH
            ))
        })();
        Normaliser {
            uname,
            keep_rate_units: false,
        }
    }

    /// Plain rules only (for the unit tests: no machine-specific strings).
    #[cfg(test)]
    pub(super) fn plain() -> Normaliser {
        Normaliser {
            uname: None,
            keep_rate_units: false,
        }
    }

    pub(super) fn normalise(&self, text: &str, fmt: Format) -> Vec<String> {
        match fmt {
            Format::Text => collapse(text.lines().map(|l| advice_tail(&self.line(l))).collect()),
            Format::Csv => collapse(
                text.lines()
                    .map(|l| csv_row(l).unwrap_or_else(|| self.line(l)))
                    .collect(),
            ),
            Format::Json => self.json(text),
            Format::JsonStream => self.json_stream(text),
        }
    }

    /// One line of text.
    pub(super) fn line(&self, line: &str) -> String {
        let mut line = line.trim_end().to_string();
        if let Some(u) = &self.uname {
            line = line.replace(u.as_str(), "UNAME");
        }
        let words = histogram_bins(&scan(&line));
        let mut out: Vec<String> = Vec::new();
        let mut prev_word = String::new();
        for w in words.split_whitespace() {
            let mut w = w.to_string();
            // Split off punctuation around the word proper.
            let core_start = w
                .find(|c: char| c.is_ascii_alphanumeric() || c == '?')
                .unwrap_or(w.len());
            let core_end = w
                .rfind(|c: char| c.is_ascii_alphanumeric())
                .map(|i| i + 1)
                .unwrap_or(core_start)
                .max(core_start);
            let core = &w[core_start..core_end];
            let replaced = if DAYS.contains(&core) {
                Some("DAY".to_string())
            } else if MONTHS.contains(&core) {
                Some("MON".to_string())
            } else if let Some(u) = unit(core, self.keep_rate_units) {
                Some(u)
            } else if (prev_word == "snd_tcp_congestion" || prev_word == "rcv_tcp_congestion") && !core.is_empty() {
                Some("CC".to_string())
            } else if prev_word.ends_with("N:N:N")
                && w.starts_with('(')
                && w.ends_with(')')
                && core.chars().all(|c| c.is_ascii_uppercase())
            {
                Some("TZ".to_string())
            } else {
                None
            };
            if let Some(r) = replaced {
                w = format!("{}{}{}", &w[..core_start], r, &w[core_end..]);
            }
            prev_word = w.clone();
            out.push(w);
        }
        out.join(" ")
    }

    pub(super) fn json(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>();
        let mut n = 0;
        loop {
            let at = stream.byte_offset();
            match stream.next() {
                Some(Ok(v)) => {
                    n += 1;
                    out.push(format!("JSON document {n}:"));
                    for (path, types) in json_types(&v, self) {
                        out.push(format!("{path}: {types}"));
                    }
                }
                Some(Err(_)) => {
                    out.push("(not JSON from here on:)".to_string());
                    out.extend(collapse(
                        text[at..].trim_start().lines().map(|l| self.line(l)).collect(),
                    ));
                    break;
                }
                None => break,
            }
        }
        out
    }

    pub(super) fn json_stream(&self, text: &str) -> Vec<String> {
        let mut events = Vec::new();
        let mut kinds: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
        for l in text.lines() {
            match serde_json::from_str::<serde_json::Value>(l) {
                Ok(v) => {
                    let name = v
                        .get("event")
                        .and_then(|e| e.as_str())
                        .unwrap_or("(no event name)")
                        .to_string();
                    events.push(format!("event {name}"));
                    let set = kinds.entry(name).or_default();
                    for (path, types) in json_types(&v, self) {
                        set.entry(path).or_default().insert(types);
                    }
                }
                Err(_) => events.push(format!("(not JSON) {}", self.line(l))),
            }
        }
        let mut out = vec!["Events:".to_string()];
        out.extend(collapse(events));
        for (name, paths) in kinds {
            out.push(format!("Event {name}:"));
            for (path, types) in paths {
                out.push(format!("{path}: {}", types.into_iter().collect::<Vec<_>>().join("|")));
            }
        }
        out
    }
}

/// Replaces addresses, cookies and numbers in `line` (character rules).
pub(super) fn scan(line: &str) -> String {
    let ch: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < ch.len() {
        let prev = if i > 0 { Some(ch[i - 1]) } else { None };
        let word_start = !prev.is_some_and(|p| p.is_ascii_alphanumeric() || p == '_');
        if word_start {
            if let Some((len, rep)) = address_at(&ch, i) {
                out.push_str(rep);
                i += len;
                continue;
            }
            if let Some(len) = cookie_at(&ch, i) {
                out.push_str("COOKIE");
                i += len;
                continue;
            }
        }
        if word_start && let Some(len) = non_finite_at(&ch, i) {
            out.push('N');
            i += len;
            continue;
        }
        if ch[i].is_ascii_alphabetic() || ch[i] == '_' {
            // A word: digits inside it (`iperf3`, `x86_64`) are part of it.
            while i < ch.len() && (ch[i].is_ascii_alphanumeric() || ch[i] == '_') {
                out.push(ch[i]);
                i += 1;
            }
            continue;
        }
        if let Some(len) = number_at(&ch, i) {
            out.push('N');
            i += len;
            continue;
        }
        out.push(ch[i]);
        i += 1;
    }
    out
}

/// A histogram's bin list (`cnt(N)=N:N,N:N,N:N`: bin:count pairs, as many as
/// the latencies fell into) becomes `=BINS`; an 8-bucket `Reads=Dist`
/// (`N=N:N:N:N:N:N:N:N`) stays.
pub(super) fn histogram_bins(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find("=N:N") {
        let after = &rest[at + 4..];
        let mut tail = after;
        while let Some(t) = tail.strip_prefix(",N:N") {
            tail = t;
        }
        let ends = !tail.starts_with(|c: char| c == ':' || c.is_ascii_alphanumeric());
        out.push_str(&rest[..at]);
        if ends {
            out.push_str("=BINS");
            rest = tail;
        } else {
            out.push_str("=N:N");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// An IPv4/IPv6 address (IPv4 with an optional `:port`) starting at `i`:
/// its length and replacement.
pub(super) fn address_at(ch: &[char], i: usize) -> Option<(usize, &'static str)> {
    let mut j = i;
    while j < ch.len() && (ch[j].is_ascii_hexdigit() || ch[j] == ':' || ch[j] == '.') {
        j += 1;
    }
    if j == i || ch.get(j).is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_') {
        return None;
    }
    // Sentence punctuation after an address is not part of it.
    while j > i && (ch[j - 1] == '.' || ch[j - 1] == ':') {
        j -= 1;
    }
    let run: String = ch[i..j].iter().collect();
    // An IPv6 address as printed has a `::` or a hex letter; eight groups of
    // decimal digits (iperf 2's `Reads=Dist` histogram) are not one.
    let v6_like = run.contains("::") || run.chars().any(|c| c.is_ascii_alphabetic());
    if v6_like && run.matches(':').count() >= 2 && run.parse::<std::net::Ipv6Addr>().is_ok() {
        return Some((j - i, "ADDR"));
    }
    if run.parse::<std::net::Ipv4Addr>().is_ok() {
        return Some((j - i, "ADDR"));
    }
    if let Some((a, p)) = run.rsplit_once(':')
        && a.parse::<std::net::Ipv4Addr>().is_ok()
        && !p.is_empty()
        && p.chars().all(|c| c.is_ascii_digit())
    {
        return Some((j - i, "ADDR:N"));
    }
    None
}

/// An iperf3 cookie (a word of 26+ base32 characters, letters and digits)
/// starting at `i`: its length.
pub(super) fn cookie_at(ch: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    while j < ch.len() && ch[j].is_ascii_alphanumeric() {
        j += 1;
    }
    let w = &ch[i..j];
    (w.len() >= 26
        && w.iter().all(|c| c.is_ascii_lowercase() || ('2'..='7').contains(c))
        && w.iter().any(|c| c.is_ascii_digit())
        && w.iter().any(|c| c.is_ascii_lowercase())
        && ch.get(j) != Some(&'_'))
    .then_some(j - i)
}

/// A printed non-finite float (`nan`, `-nan`, `inf`, `-inf`, any case) as a
/// whole word starting at `i`: its length. (iperf 2.1.8 prints `(-nan%)`
/// loss for an interval a loaded machine left without datagrams.)
pub(super) fn non_finite_at(ch: &[char], i: usize) -> Option<usize> {
    let prev = if i > 0 { Some(ch[i - 1]) } else { None };
    let mut j = i;
    if ch[j] == '-' {
        if prev.is_some_and(|p| p.is_ascii_alphanumeric() || p == ')' || p == '.') {
            return None;
        }
        j += 1;
    }
    let start = j;
    while ch.get(j).is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_') {
        j += 1;
    }
    let w: String = ch[start..j].iter().collect::<String>().to_ascii_lowercase();
    (w == "nan" || w == "inf").then_some(j - i)
}

/// A number starting at `i` (not inside a word): its length. Decimal with
/// any number of `.digits` groups (so versions are one number), an exponent,
/// a leading minus where it cannot be a range's dash, or `0x` hex.
pub(super) fn number_at(ch: &[char], i: usize) -> Option<usize> {
    let digit = |k: usize| ch.get(k).is_some_and(|c| c.is_ascii_digit());
    let prev = if i > 0 { Some(ch[i - 1]) } else { None };
    if prev.is_some_and(|p| p.is_ascii_alphabetic() || p == '_') {
        return None;
    }
    let mut j = i;
    if ch[j] == '-' {
        if prev.is_some_and(|p| p.is_ascii_alphanumeric() || p == ')' || p == '.') || !digit(j + 1) {
            return None;
        }
        j += 1;
    }
    if !digit(j) {
        return None;
    }
    if ch[j] == '0' && matches!(ch.get(j + 1), Some('x' | 'X')) && ch.get(j + 2).is_some_and(|c| c.is_ascii_hexdigit())
    {
        j += 2;
        while ch.get(j).is_some_and(|c| c.is_ascii_hexdigit()) {
            j += 1;
        }
        return Some(j - i);
    }
    while digit(j) {
        j += 1;
    }
    while ch.get(j) == Some(&'.') && digit(j + 1) {
        j += 1;
        while digit(j) {
            j += 1;
        }
    }
    if matches!(ch.get(j), Some('e' | 'E')) {
        let mut k = j + 1;
        if matches!(ch.get(k), Some('+' | '-')) {
            k += 1;
        }
        if digit(k) {
            while digit(k) {
                k += 1;
            }
            if !ch.get(k).is_some_and(|c| c.is_ascii_alphabetic()) {
                j = k;
            }
        }
    }
    Some(j - i)
}

/// A unit word with its magnitude prefix replaced by `?`.
pub(super) fn unit(word: &str, keep_rate_units: bool) -> Option<String> {
    const BASES: [&str; 5] = ["Bytes", "Byte", "bits/sec", "Bytes/sec", "Byte/sec"];
    let (prefixed, base) = match word.chars().next() {
        Some('K' | 'M' | 'G' | 'T') if BASES.contains(&&word[1..]) => (true, &word[1..]),
        _ => (false, word),
    };
    if !BASES.contains(&base) || (keep_rate_units && base.ends_with("/sec")) {
        return None;
    }
    let _ = prefixed;
    Some(format!("?{base}"))
}

/// A CSV row's shape: column count and a type per column.
pub(super) fn csv_row(line: &str) -> Option<String> {
    let line = line.trim_end();
    if line.matches(',').count() < 2 || line.contains(char::is_whitespace) {
        return None;
    }
    let cols: Vec<&str> = line.split(',').collect();
    let types: Vec<&str> = cols.iter().map(|c| csv_type(c)).collect();
    Some(format!("csv {} columns: {}", cols.len(), types.join(",")))
}

pub(super) fn csv_type(c: &str) -> &'static str {
    let int = |s: &str| {
        let s = s.strip_prefix('-').unwrap_or(s);
        !s.is_empty() && s.chars().all(|c| c.is_ascii_digit())
    };
    let float = |s: &str| {
        int(s)
            || (s.parse::<f64>().is_ok()
                && s.chars()
                    .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
    };
    if c.is_empty() {
        "empty"
    } else if int(c) {
        "int"
    } else if float(c) {
        "float"
    } else if c.parse::<std::net::IpAddr>().is_ok() {
        "ip"
    } else if let Some((a, b)) = c.split_once('-')
        && float(a)
        && float(b)
    {
        "range"
    } else {
        "text"
    }
}

/// Keys of the window advice (`end.advice`) that exist exactly when the
/// advice says a window held the sender back, and their types.
pub(super) const ADVICE_WINDOW_KEYS: [(&str, &str); 3] = [
    ("target_bits_per_second", "number"),
    ("suggested_window_bytes", "number"),
    ("suggested_option", "string"),
];

/// The `Window needed ...` line of the window advice (already normalised)
/// with either of its endings as one: what it suggests, not why.
pub(super) fn advice_tail(line: &str) -> String {
    if !line.starts_with("Window needed") {
        return line.to_string();
    }
    let Some(at) = line.rfind("-> try -w ") else {
        return line.to_string();
    };
    let head = line.split(", less than the ").next().unwrap_or(line);
    let head = head.split(" -> try -w ").next().unwrap_or(head);
    let option = line[at..].split_whitespace().nth(3).unwrap_or("").trim_end_matches('.');
    format!("{head} -> try -w {option}")
}

/// What limits a full-speed loopback test (the receive window, the send
/// buffer, the path or the CPU) depends on the machine's load, and with it
/// whether the advice has the keys above. When they are there exactly as
/// `limited_by` says they should be, they are shown the same either way
/// (the keys returned here); otherwise they are shown as found, and differ.
pub(super) fn advice_keys(m: &serde_json::Map<String, serde_json::Value>) -> Vec<&'static str> {
    let window = matches!(
        m.get("limited_by").and_then(|v| v.as_str()),
        Some("receive_window" | "send_buffer")
    );
    let types_ok = ADVICE_WINDOW_KEYS.iter().all(|(k, t)| match m.get(*k) {
        None => true,
        Some(v) => (*t == "number" && v.is_number()) || (*t == "string" && v.is_string()),
    });
    let all_there = ADVICE_WINDOW_KEYS.iter().all(|(k, _)| m.contains_key(*k));
    let none_there = ADVICE_WINDOW_KEYS.iter().all(|(k, _)| !m.contains_key(*k));
    if m.contains_key("limited_by") && types_ok && ((window && all_there) || (!window && none_there)) {
        ADVICE_WINDOW_KEYS.iter().map(|(k, _)| *k).collect()
    } else {
        Vec::new()
    }
}

/// The JSON type of every path in `v` (array elements as `[]`); the text of
/// `error` strings. Paths in order, types joined with `|`.
pub(super) fn json_types(v: &serde_json::Value, n: &Normaliser) -> Vec<(String, String)> {
    fn walk(v: &serde_json::Value, path: &str, n: &Normaliser, out: &mut BTreeMap<String, BTreeSet<String>>) {
        use serde_json::Value;
        let t = match v {
            Value::Null => "null".to_string(),
            Value::Bool(_) => "bool".to_string(),
            Value::Number(_) => "number".to_string(),
            Value::String(s) if path.ends_with(".error") => format!("string {:?}", n.line(s)),
            Value::String(_) => "string".to_string(),
            Value::Array(_) => "array".to_string(),
            Value::Object(_) => "object".to_string(),
        };
        if !path.is_empty() {
            out.entry(path.to_string()).or_default().insert(t);
        }
        match v {
            Value::Object(m) => {
                let conditional = if path.ends_with(".advice") {
                    advice_keys(m)
                } else {
                    Vec::new()
                };
                for (k, x) in m {
                    if !conditional.contains(&k.as_str()) {
                        walk(x, &format!("{path}.{k}"), n, out);
                    }
                }
                for (k, t) in ADVICE_WINDOW_KEYS {
                    if conditional.contains(&k) {
                        out.entry(format!("{path}.{k}"))
                            .or_default()
                            .insert(format!("{t} exactly when limited_by is a window"));
                    }
                }
            }
            Value::Array(a) => {
                for x in a {
                    walk(x, &format!("{path}[]"), n, out);
                }
            }
            _ => {}
        }
    }
    let mut m = BTreeMap::new();
    walk(v, "", n, &mut m);
    m.into_iter()
        .map(|(p, t)| (p, t.into_iter().collect::<Vec<_>>().join("|")))
        .collect()
}

/// Collapses repetition: a block of 1 to 8 lines repeated back to back
/// becomes one copy, until nothing changes.
pub(super) fn collapse(mut v: Vec<String>) -> Vec<String> {
    loop {
        let mut changed = false;
        for k in 1..=8 {
            let mut i = 0;
            while i + 2 * k <= v.len() {
                if v[i..i + k] == v[i + k..i + 2 * k] {
                    v.drain(i + k..i + 2 * k);
                    changed = true;
                } else {
                    i += 1;
                }
            }
        }
        if !changed {
            return v;
        }
    }
}
