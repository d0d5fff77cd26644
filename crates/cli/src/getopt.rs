//! A small GNU `getopt_long` work-alike driven by an option table.
//!
//! Both iperfs parse with `getopt_long`, and their users rely on its habits:
//! bundled short options (`-uP4`), attached values (`-P4`, `--port=5201`),
//! unique prefixes of long names (`--rev`), optional values only after `=`
//! (`--timestamps=%T`), and operands anywhere. Error texts match glibc's so a
//! typo reads the same as it would with iperf.
//!
//! # Abbreviations, and options the peer program lacks
//!
//! A unique prefix of a long name is that name, so adding a long option
//! changes which prefixes are unique: a wirespeed-only `--report` would
//! make iperf 2's `--rep` (for `--reportstyle` or `--reportexclude`) mean
//! something else. Rows therefore come in two [`Tier`]s, and `--name`
//! resolves as follows:
//!
//! 1. a row whose long name is exactly `name` wins, whatever its tier;
//! 2. else the [`Tier::Native`] rows (the peer program's own options) whose
//!    names start with `name`: one of them, or several that are aliases of
//!    one option (same key, same value rule, as glibc's "same has_arg,
//!    flag and val"), wins; several different ones are ambiguous, listed
//!    as glibc lists them (the first match, then each later match that is
//!    not an alias of it, in table order);
//! 3. only when no native row matches, the same among the [`Tier::Extra`]
//!    rows (wirespeed's additions).
//!
//! So every abbreviation the real iperf accepted means what it meant there,
//! every ambiguous one stays ambiguous, and additions can still be
//! abbreviated where no native option is in the way.

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// A flag.
    None,
    /// Always takes a value (`-p 5201`, `-p5201`, `--port 5201`, `--port=5201`).
    Required,
    /// Takes a value only when attached (`-d2`, `--debug=2`).
    Optional,
}

/// One row of an option table: an option's spellings, its value rule,
/// whether the peer program has it, and what a dialect attaches to it —
/// where it applies (`P`) and what it does (`S`).
#[derive(Debug, Clone, Copy)]
pub struct Row<K, P = (), S = ()> {
    /// What the caller matches on (aliases share it).
    pub key: K,
    /// Short letter, if any.
    pub short: Option<char>,
    /// Long name without the leading dashes, if any.
    pub long: Option<&'static str>,
    /// Value rule.
    pub arg: ArgKind,
    /// Whether the peer program has the long option (which decides what
    /// its abbreviations mean), or it is a wirespeed addition.
    pub tier: Tier,
    /// Where it may be used.
    pub place: P,
    /// What it does.
    pub step: S,
}

/// An option that answers the command line on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InfoOption {
    /// `-h`: the long usage.
    Help,
    /// `-v`: the version.
    Version,
}

/// A row of a dialect's table: `row!(N|X, Key, 's'|-, "long"|-, ArgKind,
/// Place, step)`, where `Opt` and `Place` name the calling table's key
/// and place types.
macro_rules! row {
    ($t:ident, $k:ident, $s:tt, $l:tt, $a:ident, $p:ident, $step:expr) => {
        $crate::getopt::Row {
            tier: row!(@tier $t),
            key: Opt::$k,
            short: row!(@opt $s),
            long: row!(@opt $l),
            arg: $crate::getopt::ArgKind::$a,
            place: Place::$p,
            step: $step,
        }
    };
    (@tier N) => {
        $crate::getopt::Tier::Native
    };
    (@tier X) => {
        $crate::getopt::Tier::Extra
    };
    (@opt -) => {
        None
    };
    (@opt $v:literal) => {
        Some($v)
    };
}
pub(crate) use row;

/// Whether the peer program has a row's long option, which decides how
/// abbreviations resolve (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// The peer program (iperf3 3.21, iperf 2.1.8) has this long option.
    Native,
    /// A wirespeed addition: its prefixes count only where no native long
    /// option matches.
    Extra,
}

/// What getopt (and the completions) read of a row: one option's
/// spellings, value rule and tier.
pub trait OptionRow {
    /// What the caller matches on.
    type Key: Copy + PartialEq;
    /// The option's identity.
    fn key(&self) -> Self::Key;
    /// Short letter, if any.
    fn short(&self) -> Option<char>;
    /// Long name without the leading dashes, if any.
    fn long(&self) -> Option<&'static str>;
    /// Value rule.
    fn arg(&self) -> ArgKind;
    /// Whether the peer program has the long option.
    fn tier(&self) -> Tier {
        Tier::Native
    }
}

impl<K: Copy + PartialEq, P, S> OptionRow for Row<K, P, S> {
    type Key = K;
    fn key(&self) -> K {
        self.key
    }
    fn short(&self) -> Option<char> {
        self.short
    }
    fn long(&self) -> Option<&'static str> {
        self.long
    }
    fn arg(&self) -> ArgKind {
        self.arg
    }
    fn tier(&self) -> Tier {
        self.tier
    }
}

/// One recognised option occurrence, in command-line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Occurrence<K> {
    /// Which option.
    pub key: K,
    /// Index of the matched row in the table (aliases share a key, not a row).
    pub row: usize,
    /// Its value, if one was given.
    pub value: Option<String>,
    /// How the user spelled it (`-p`, `--port`), for messages.
    pub spelled: String,
}

/// The parse result: options in order plus the operands (non-options).
#[derive(Debug, Clone)]
pub struct Parsed<K> {
    /// Options, in order.
    pub opts: Vec<Occurrence<K>>,
    /// Non-option arguments, in order.
    pub operands: Vec<String>,
}

/// Parses `args` (without the program name) against `table`.
///
/// Errors are glibc's wording without the program-name prefix.
pub fn parse<R: OptionRow>(table: &[R], args: &[String]) -> Result<Parsed<R::Key>, String> {
    let mut opts = Vec::new();
    let mut operands = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            operands.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(body) = arg.strip_prefix("--") {
            let (name, attached) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            let row = find_long(table, name)?;
            let spec = &table[row];
            let long = spec.long().unwrap_or(name);
            let value = match spec.arg() {
                ArgKind::None => {
                    if attached.is_some() {
                        return Err(format!("option '--{long}' doesn't allow an argument"));
                    }
                    None
                }
                ArgKind::Optional => attached.or_else(|| url_after(long, args, &mut i)),
                ArgKind::Required => match attached {
                    Some(v) => Some(v),
                    None => {
                        if i < args.len() {
                            i += 1;
                            Some(args[i - 1].clone())
                        } else {
                            return Err(format!("option '--{long}' requires an argument"));
                        }
                    }
                },
            };
            opts.push(Occurrence {
                key: spec.key(),
                row,
                value,
                spelled: format!("--{long}"),
            });
            continue;
        }
        if arg.len() > 1 && arg.starts_with('-') {
            let chars: Vec<char> = arg[1..].chars().collect();
            let mut j = 0;
            while j < chars.len() {
                let c = chars[j];
                j += 1;
                let row = table
                    .iter()
                    .position(|s| s.short() == Some(c))
                    .ok_or_else(|| format!("invalid option -- '{c}'"))?;
                let spec = &table[row];
                let rest: String = chars[j..].iter().collect();
                let value = match spec.arg() {
                    ArgKind::None => None,
                    ArgKind::Optional => {
                        j = chars.len();
                        if rest.is_empty() { None } else { Some(rest) }
                    }
                    ArgKind::Required => {
                        j = chars.len();
                        if !rest.is_empty() {
                            Some(rest)
                        } else if i < args.len() {
                            i += 1;
                            Some(args[i - 1].clone())
                        } else {
                            return Err(format!("option requires an argument -- '{c}'"));
                        }
                    }
                };
                opts.push(Occurrence {
                    key: spec.key(),
                    row,
                    value,
                    spelled: format!("-{c}"),
                });
            }
            continue;
        }
        operands.push(arg.clone());
    }
    Ok(Parsed { opts, operands })
}

/// The long options whose optional value may also be the next argument,
/// when that is an `http://` or `https://` URL (`--rpm URL` as
/// `--rpm=URL`): no operand of either dialect is a URL, so nothing else
/// changes meaning.
const URL_MAY_FOLLOW: &[&str] = &["rpm"];

/// The next argument as `long`'s value, when `long` takes a URL that way
/// and the next argument is one.
fn url_after(long: &str, args: &[String], i: &mut usize) -> Option<String> {
    let next = args.get(*i)?;
    let lower = next.to_ascii_lowercase();
    let is_url = lower.starts_with("http://") || lower.starts_with("https://");
    if !URL_MAY_FOLLOW.contains(&long) || !is_url {
        return None;
    }
    *i += 1;
    Some(next.clone())
}

/// The row a long name (without dashes) means: an exact name, else a
/// prefix among the native rows, else a prefix among the extra ones.
fn find_long<R: OptionRow>(table: &[R], name: &str) -> Result<usize, String> {
    if let Some(exact) = table.iter().position(|s| s.long() == Some(name)) {
        return Ok(exact);
    }
    if !name.is_empty() {
        for tier in [Tier::Native, Tier::Extra] {
            let candidates: Vec<usize> = (0..table.len())
                .filter(|&i| table[i].tier() == tier && table[i].long().is_some_and(|l| l.starts_with(name)))
                .collect();
            if !candidates.is_empty() {
                return pick_abbreviated(table, name, &candidates);
            }
        }
    }
    Err(format!("unrecognized option '--{name}'"))
}

/// One of the rows a prefix matches (in table order), as glibc picks: the
/// first, unless a later one is a different option (not an alias: another
/// key or value rule), which makes the prefix ambiguous.
fn pick_abbreviated<R: OptionRow>(table: &[R], name: &str, candidates: &[usize]) -> Result<usize, String> {
    let first = &table[candidates[0]];
    let others: Vec<usize> = candidates[1..]
        .iter()
        .copied()
        .filter(|&i| table[i].key() != first.key() || table[i].arg() != first.arg())
        .collect();
    if others.is_empty() {
        return Ok(candidates[0]);
    }
    let list: Vec<String> = std::iter::once(candidates[0])
        .chain(others)
        .map(|i| format!("'--{}'", table[i].long().unwrap_or_default()))
        .collect();
    Err(format!(
        "option '--{name}' is ambiguous; possibilities: {}",
        list.join(" ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum K {
        Port,
        Udp,
        Par,
        Reverse,
        Repeating,
        Debug,
    }

    const T: &[Row<K>] = &[
        Row {
            key: K::Port,
            short: Some('p'),
            long: Some("port"),
            arg: ArgKind::Required,
            tier: Tier::Native,
            place: (),
            step: (),
        },
        Row {
            key: K::Udp,
            short: Some('u'),
            long: Some("udp"),
            arg: ArgKind::None,
            tier: Tier::Native,
            place: (),
            step: (),
        },
        Row {
            key: K::Par,
            short: Some('P'),
            long: Some("parallel"),
            arg: ArgKind::Required,
            tier: Tier::Native,
            place: (),
            step: (),
        },
        Row {
            key: K::Reverse,
            short: Some('R'),
            long: Some("reverse"),
            arg: ArgKind::None,
            tier: Tier::Native,
            place: (),
            step: (),
        },
        Row {
            key: K::Repeating,
            short: None,
            long: Some("repeating-payload"),
            arg: ArgKind::None,
            tier: Tier::Native,
            place: (),
            step: (),
        },
        Row {
            key: K::Debug,
            short: Some('d'),
            long: Some("debug"),
            arg: ArgKind::Optional,
            tier: Tier::Native,
            place: (),
            step: (),
        },
    ];

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn bundled_and_attached_shorts() {
        let p = parse(T, &args("-uP4 -p 5201 host")).unwrap();
        let keys: Vec<K> = p.opts.iter().map(|o| o.key).collect();
        assert_eq!(keys, vec![K::Udp, K::Par, K::Port]);
        assert_eq!(p.opts[1].value.as_deref(), Some("4"));
        assert_eq!(p.opts[2].value.as_deref(), Some("5201"));
        assert_eq!(p.operands, vec!["host"]);
    }

    #[test]
    fn long_forms_and_prefixes() {
        let p = parse(T, &args("--port=1 --par 3 --rev")).unwrap();
        assert_eq!(p.opts[0].value.as_deref(), Some("1"));
        assert_eq!(p.opts[1].key, K::Par);
        assert_eq!(p.opts[2].key, K::Reverse);
        assert_eq!(p.opts[2].spelled, "--reverse");
    }

    #[test]
    fn ambiguity_and_unknown_and_missing_values() {
        assert_eq!(
            parse(T, &args("--re")).unwrap_err(),
            "option '--re' is ambiguous; possibilities: '--reverse' '--repeating-payload'"
        );
        assert_eq!(parse(T, &args("--foo")).unwrap_err(), "unrecognized option '--foo'");
        assert_eq!(parse(T, &args("-x")).unwrap_err(), "invalid option -- 'x'");
        assert_eq!(parse(T, &args("-P")).unwrap_err(), "option requires an argument -- 'P'");
        assert_eq!(
            parse(T, &args("--port")).unwrap_err(),
            "option '--port' requires an argument"
        );
        assert_eq!(
            parse(T, &args("--udp=1")).unwrap_err(),
            "option '--udp' doesn't allow an argument"
        );
    }

    #[test]
    fn optional_values_only_when_attached() {
        let p = parse(T, &args("-d 3")).unwrap();
        assert_eq!(p.opts[0].value, None);
        assert_eq!(p.operands, vec!["3"]);
        let p = parse(T, &args("-d3 --debug=2")).unwrap();
        assert_eq!(p.opts[0].value.as_deref(), Some("3"));
        assert_eq!(p.opts[1].value.as_deref(), Some("2"));
    }

    #[test]
    fn double_dash_ends_options() {
        let p = parse(T, &args("-u -- -p")).unwrap();
        assert_eq!(p.opts.len(), 1);
        assert_eq!(p.operands, vec!["-p"]);
    }

    /// A table with a wirespeed-only `--report` beside iperf 2's
    /// `--reportstyle`/`--reportexclude`, and an alias pair.
    const fn tiered(key: &'static str, long: &'static str, tier: Tier) -> Row<&'static str> {
        Row {
            key,
            short: None,
            long: Some(long),
            arg: ArgKind::None,
            tier,
            place: (),
            step: (),
        }
    }

    const TIERED: &[Row<&'static str>] = &[
        tiered("exclude", "reportexclude", Tier::Native),
        tiered("style", "reportstyle", Tier::Native),
        tiered("realtime", "realtime", Tier::Native),
        tiered("histograms", "histograms", Tier::Native),
        tiered("histograms", "histogram-alias", Tier::Native),
        tiered("live", "live", Tier::Extra),
        tiered("listen", "listenport", Tier::Native),
        tiered("report", "report", Tier::Extra),
        tiered("report-dir", "report-dir", Tier::Extra),
        tiered("json", "json", Tier::Extra),
    ];

    fn resolve(name: &str) -> Result<&'static str, String> {
        parse(TIERED, &[format!("--{name}")]).map(|p| p.opts[0].key)
    }

    #[test]
    fn an_extra_option_never_changes_what_a_native_prefix_means() {
        // Exact names win in either tier.
        assert_eq!(resolve("report"), Ok("report"));
        assert_eq!(resolve("reportstyle"), Ok("style"));
        // A prefix ambiguous among the peer's own options stays ambiguous,
        // and the addition is not listed.
        assert_eq!(
            resolve("repo").unwrap_err(),
            "option '--repo' is ambiguous; possibilities: '--reportexclude' '--reportstyle'"
        );
        assert_eq!(resolve("reports"), Ok("style"));
        // A native prefix wins over an addition that shares it.
        assert_eq!(resolve("li"), Ok("listen"));
        assert_eq!(resolve("l"), Ok("listen"));
        // Where no native option matches, additions abbreviate as usual.
        assert_eq!(resolve("liv"), Ok("live"));
        assert_eq!(resolve("j"), Ok("json"));
        assert_eq!(resolve("report-"), Ok("report-dir"));
        assert_eq!(
            resolve("rep").unwrap_err(),
            "option '--rep' is ambiguous; possibilities: '--reportexclude' '--reportstyle'"
        );
    }

    #[test]
    fn aliases_of_one_option_are_not_ambiguous_but_other_options_are() {
        // glibc: later matches with the same has_arg, flag and val as the
        // first are the same option.
        assert_eq!(resolve("hist"), Ok("histograms"));
        assert_eq!(
            resolve("r").unwrap_err(),
            "option '--r' is ambiguous; possibilities: '--reportexclude' '--reportstyle' '--realtime'"
        );
    }
}
