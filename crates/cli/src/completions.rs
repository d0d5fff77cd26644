//! Shell completions (bash, zsh, fish), generated from the option tables and
//! the `--help` text, so they cannot drift from what the parser accepts:
//! `wirespeed --completions bash|zsh|fish` prints a script.
//!
//! The generator takes each personality's options as [`OptionDoc`]s: the
//! iperf3 ones for a plain `wirespeed` command line, the iperf 2 ones once
//! `--iperf2` is on it.

use super::getopt::{ArgKind, OptionRow};
use super::{iperf2, iperf3};

/// One option as completions show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionDoc {
    /// Short letter.
    pub short: Option<char>,
    /// Long name without dashes.
    pub long: Option<String>,
    /// Whether it takes a value.
    pub arg: ArgKind,
    /// One-line description.
    pub help: String,
}

/// Target shell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    /// GNU bash (`complete -F`).
    Bash,
    /// zsh (`#compdef`, `_arguments`).
    Zsh,
    /// fish (`complete -c`).
    Fish,
}

impl Shell {
    /// Parses a shell name.
    pub(crate) fn from_name(s: &str) -> Option<Shell> {
        match s {
            "bash" => Some(Shell::Bash),
            "zsh" => Some(Shell::Zsh),
            "fish" => Some(Shell::Fish),
            _ => None,
        }
    }
}

/// Descriptions from a usage text in iperf's layout: an option line starts
/// with spaces (at least two) and a dash; the description follows the last run of two
/// or more spaces, or the option and argument words when only one space
/// separates them. Returns (names, description) per option line.
pub(crate) fn help_descriptions(usage: &str) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    for line in usage.lines() {
        // iperf3 indents option lines by two spaces, iperf 2 a long
        // option without a short one by six.
        let Some(body) = line.strip_prefix("  ").map(str::trim_start) else {
            continue;
        };
        if !body.starts_with('-') {
            continue;
        }
        let (spec, desc) = match body.rfind("  ") {
            Some(i) => (&body[..i], body[i..].trim()),
            None => {
                // "-B, --bind <host>[%<dev>] bind to ...": names, then argument
                // words (they carry one of #<>[]%/=), then the description.
                let words: Vec<&str> = body.split(' ').collect();
                let n = words
                    .iter()
                    .take_while(|w| w.starts_with('-') || w.contains(['#', '<', '>', '[', ']', '%', '/', '=']))
                    .count();
                let spec_len: usize = words[..n].iter().map(|w| w.len() + 1).sum();
                (
                    &body[..spec_len.min(body.len())],
                    body[spec_len.min(body.len())..].trim(),
                )
            }
        };
        let mut names = Vec::new();
        for w in spec.split([' ', ',']) {
            let w = w.split(['<', '[', '=']).next().unwrap_or("");
            let is_name = w.len() > 1
                && w.starts_with('-')
                && w.trim_start_matches('-')
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphanumeric());
            if is_name && !names.iter().any(|n| n == w) {
                names.push(w.to_string());
            }
        }
        if !names.is_empty() && !desc.is_empty() {
            out.push((names, desc.to_string()));
        }
    }
    out
}

/// The documented options of a table: every row the parser accepts and
/// `available` allows, with its description from `usage`.
pub(crate) fn documented<R: OptionRow>(table: &[R], available: impl Fn(R::Key) -> bool, usage: &str) -> Vec<OptionDoc> {
    let help = help_descriptions(usage);
    let find = |o: &R| {
        help.iter().find_map(|(names, d)| {
            let hit = o.long().is_some_and(|l| names.iter().any(|n| n == &format!("--{l}")))
                || o.short().is_some_and(|c| names.iter().any(|n| n == &format!("-{c}")));
            hit.then(|| d.clone())
        })
    };
    // An alias (`--bandwidth` for `-b`) shares its option's description.
    let help_of = |o: &R| {
        find(o)
            .or_else(|| table.iter().filter(|t| t.key() == o.key()).find_map(find))
            .unwrap_or_default()
    };
    table
        .iter()
        .filter(|o| available(o.key()))
        .map(|o| OptionDoc {
            short: o.short(),
            long: o.long().map(str::to_string),
            arg: o.arg(),
            help: help_of(o),
        })
        .collect()
}

/// The iperf3 personality's options.
pub(crate) fn iperf3_options() -> Vec<OptionDoc> {
    documented(iperf3::TABLE, iperf3::available, &iperf3::long_usage("wirespeed"))
}

/// The iperf 2 personality's options (after `--iperf2`).
pub(crate) fn iperf2_options() -> Vec<OptionDoc> {
    documented(iperf2::TABLE, iperf2::available, &iperf2::long_usage("wirespeed"))
}

/// The `-f` letters each personality takes.
const IPERF3_FORMATS: &str = "k m g t K M G T";
const IPERF2_FORMATS: &str = "a b k m g A B K M G";

/// What a value-taking option's value is, for completing it.
enum ValueKind {
    File,
    Host,
    Format,
    Congestion,
    Device,
    Shell,
    Other,
}

fn value_kind(o: &OptionDoc) -> ValueKind {
    match o.long.as_deref() {
        Some(
            "file" | "pidfile" | "logfile" | "report" | "rsa-private-key-path" | "authorized-users-path" | "cacert",
        )
        | Some("rsa-public-key-path" | "output" | "file_input") => ValueKind::File,
        Some("client") => ValueKind::Host,
        Some("format") => ValueKind::Format,
        Some("congestion" | "linux-congestion" | "tcp-congestion") => ValueKind::Congestion,
        Some("bind-dev") => ValueKind::Device,
        Some("completions") => ValueKind::Shell,
        _ => ValueKind::Other,
    }
}

fn flags(o: &OptionDoc) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(c) = o.short {
        v.push(format!("-{c}"));
    }
    if let Some(l) = &o.long {
        v.push(format!("--{l}"));
    }
    v
}

const CONGESTION: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// What a subcommand's option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubValue {
    /// Nothing.
    Flag,
    /// A file name.
    File,
    /// Anything else (an address, a token, a number).
    Word,
}

/// One option of a subcommand: short letter, long name, value, help.
pub type SubOption = (Option<char>, &'static str, SubValue, &'static str);

/// A command of its own as the first word (`wirespeed report ...`), with
/// the options its own parser takes (its `--help` lists the same).
#[derive(Debug, Clone, Copy)]
pub struct Subcommand {
    /// The first word.
    pub name: &'static str,
    /// What it is, one line.
    pub help: &'static str,
    /// Its options.
    pub options: &'static [SubOption],
    /// Its operands are files.
    pub files: bool,
}

const HELP: SubOption = (Some('h'), "help", SubValue::Flag, "show this message and quit");

/// The subcommands (`app::main` dispatches on these words).
pub const SUBCOMMANDS: &[Subcommand] = &[
    Subcommand {
        name: "report",
        help: "render saved -J output as an HTML report",
        options: &[(Some('o'), "output", SubValue::File, "HTML file to write"), HELP],
        files: true,
    },
    Subcommand {
        name: "ui",
        help: "serve the web UI that sets up, runs and keeps tests",
        options: &[
            (None, "listen", SubValue::Word, "where to listen (address and port)"),
            (None, "token", SubValue::Word, "the token the page's address carries"),
            (None, "max-running", SubValue::Word, "tests that may run at once"),
            (None, "db", SubValue::File, "the history's SQLite file"),
            HELP,
        ],
        files: false,
    },
    Subcommand {
        name: "exporter",
        help: "serve Prometheus probes of iperf servers (/probe?target=HOST)",
        options: &[
            (None, "listen", SubValue::Word, "where to listen (address and port)"),
            (None, "allow", SubValue::Word, "targets that may be probed"),
            (None, "token", SubValue::Word, "the bearer token probes require"),
            (
                None,
                "basic-auth",
                SubValue::Word,
                "the user and password every path requires",
            ),
            (
                None,
                "basic-auth-file",
                SubValue::File,
                "the user and password, read from a file",
            ),
            (None, "max-probes", SubValue::Word, "probes that may run at once"),
            HELP,
        ],
        files: false,
    },
];

/// A subcommand option's spellings (`-o`, `--output`).
fn sub_flags(o: &SubOption) -> Vec<String> {
    let mut v: Vec<String> = o.0.iter().map(|c| format!("-{c}")).collect();
    v.push(format!("--{}", o.1));
    v
}

/// bash: the `case` arm that completes one subcommand's words.
fn bash_subcommand(sub: &Subcommand) -> String {
    let pick = |want: SubValue| {
        sub.options
            .iter()
            .filter(|o| o.2 == want)
            .flat_map(sub_flags)
            .collect::<Vec<_>>()
            .join("|")
    };
    let mut prev = String::new();
    for (pattern, action) in [
        (pick(SubValue::File), r#"COMPREPLY=( $(compgen -f -- "$cur") ); "#),
        (pick(SubValue::Word), ""),
    ] {
        if !pattern.is_empty() {
            prev.push_str(&format!("                    {pattern}) {action}return ;;\n"));
        }
    }
    let words: Vec<String> = sub.options.iter().flat_map(sub_flags).collect();
    let operands = if sub.files {
        r#"COMPREPLY=( $(compgen -f -- "$cur") )"#
    } else {
        "COMPREPLY=()"
    };
    format!(
        "            {name})\n                case \"$prev\" in\n{prev}                esac\n                \
         if [[ $cur == -* ]]; then\n                    COMPREPLY=( $(compgen -W \"{words}\" -- \"$cur\") )\n                \
         else\n                    {operands}\n                fi\n                return ;;\n",
        name = sub.name,
        words = words.join(" "),
    )
}

/// zsh: one subcommand's `_arguments` call.
fn zsh_subcommand(sub: &Subcommand) -> String {
    let mut specs = vec![format!("'1: :({})'", sub.name)];
    for o in sub.options {
        let help = zsh_text(o.3);
        let (short_sfx, long_sfx, action) = match o.2 {
            SubValue::Flag => ("", "", String::new()),
            SubValue::File => ("+", "=", ":file:_files".to_string()),
            SubValue::Word => ("+", "=", ":value: ".to_string()),
        };
        specs.push(match o.0 {
            Some(c) => format!(
                "'(-{c} --{l})'{{-{c}{short_sfx},--{l}{long_sfx}}}'[{help}]{action}'",
                l = o.1
            ),
            None => format!("'--{l}{long_sfx}[{help}]{action}'", l = o.1),
        });
    }
    if sub.files {
        specs.push("'*:file:_files'".to_string());
    }
    format!(
        "    {})\n      _arguments {}\n      return ;;\n",
        sub.name,
        specs.join(" ")
    )
}

/// fish: one subcommand's word and its options.
fn fish_subcommand(prog: &str, sub: &Subcommand) -> String {
    let mut s = format!(
        "complete -c {prog} -n '__fish_use_subcommand' -a {} -d '{}'\n",
        sub.name,
        fish_text(sub.help)
    );
    for o in sub.options {
        let mut line = format!("complete -c {prog} -n '__fish_seen_subcommand_from {}'", sub.name);
        if let Some(c) = o.0 {
            line.push_str(&format!(" -s {c}"));
        }
        line.push_str(&format!(" -l {}", o.1));
        match o.2 {
            SubValue::Flag => {}
            SubValue::File => line.push_str(" -r -F"),
            SubValue::Word => line.push_str(" -x"),
        }
        line.push_str(&format!(" -d '{}'\n", fish_text(o.3)));
        s.push_str(&line);
    }
    s
}

/// The subcommands' names, space-separated.
fn sub_names() -> String {
    SUBCOMMANDS.iter().map(|c| c.name).collect::<Vec<_>>().join(" ")
}

/// What `--iperf2` is, in the scripts.
const IPERF2_HELP: &str = "iperf 2.1.8 command line, output and protocol";

/// bash: the `case "$prev"` that completes one personality's option values.
fn bash_values(opts: &[OptionDoc], formats: &str) -> String {
    let pick = |want: fn(&ValueKind) -> bool| -> String {
        opts.iter()
            .filter(|o| o.arg == ArgKind::Required && want(&value_kind(o)))
            .flat_map(flags)
            .collect::<Vec<_>>()
            .join("|")
    };
    let arms = [
        (
            pick(|k| matches!(k, ValueKind::File)),
            r#"COMPREPLY=( $(compgen -f -- "$cur") )"#.to_string(),
        ),
        (
            pick(|k| matches!(k, ValueKind::Host)),
            r#"COMPREPLY=( $(compgen -A hostname -- "$cur") )"#.to_string(),
        ),
        (
            pick(|k| matches!(k, ValueKind::Format)),
            format!(r#"COMPREPLY=( $(compgen -W "{formats}" -- "$cur") )"#),
        ),
        (
            pick(|k| matches!(k, ValueKind::Congestion)),
            format!(r#"COMPREPLY=( $(compgen -W "$(cat {CONGESTION} 2>/dev/null)" -- "$cur") )"#),
        ),
        (
            pick(|k| matches!(k, ValueKind::Device)),
            r#"COMPREPLY=( $(compgen -W "$(ls /sys/class/net 2>/dev/null)" -- "$cur") )"#.to_string(),
        ),
        (pick(|k| matches!(k, ValueKind::Other)), String::new()),
    ];
    let mut case = String::from(
        "    case \"$prev\" in\n        --completions) COMPREPLY=( $(compgen -W \"bash zsh fish\" -- \"$cur\") ); return ;;\n",
    );
    for (pattern, action) in arms.iter().filter(|(p, _)| !p.is_empty()) {
        let action = if action.is_empty() {
            String::new()
        } else {
            format!("{action}; ")
        };
        case.push_str(&format!("        {pattern}) {action}return ;;\n"));
    }
    case.push_str("    esac\n");
    case
}

fn bash(prog: &str, both: &Dialects) -> String {
    let func = format!("_{}", prog.replace(['-', '.'], "_"));
    let all: Vec<String> = both.iperf3.iter().flat_map(flags).collect();
    let (dispatch, iperf2_func, iperf2_word) = if both.iperf2.is_empty() {
        (String::new(), String::new(), "")
    } else {
        let all2: Vec<String> = both.iperf2.iter().flat_map(flags).collect();
        (
            format!(
                "    local w\n    for w in \"${{COMP_WORDS[@]}}\"; do\n        \
                 if [[ $w == --iperf2 ]]; then\n            {func}_iperf2\n            return\n        fi\n    done\n"
            ),
            format!(
                "# After --iperf2: the iperf 2 options (cur and prev are the caller's).\n{func}_iperf2() {{\n{}    \
                 COMPREPLY=( $(compgen -W \"{}\" -- \"$cur\") )\n}}\n",
                bash_values(both.iperf2, IPERF2_FORMATS),
                all2.join(" ")
            ),
            " --iperf2",
        )
    };
    format!(
        r#"# bash completion for {prog}; generated by `{prog} --completions bash`.
{iperf2_func}{func}() {{
    local cur prev
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    if [[ $COMP_CWORD -gt 1 ]]; then
        case "${{COMP_WORDS[1]}}" in
{subs}        esac
    fi
{dispatch}{values}    if [[ $COMP_CWORD -eq 1 && $cur != -* ]]; then
        COMPREPLY=( $(compgen -W "{names}" -- "$cur") )
        return
    fi
    COMPREPLY=( $(compgen -W "--completions{iperf2_word} {all}" -- "$cur") )
}}
complete -F {func} {prog}
"#,
        values = bash_values(both.iperf3, IPERF3_FORMATS),
        all = all.join(" "),
        subs = SUBCOMMANDS.iter().map(bash_subcommand).collect::<String>(),
        names = sub_names(),
    )
}

fn zsh_text(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\'', "'\\''")
        .replace('[', "(")
        .replace(']', ")")
        .replace(':', " -")
}

/// zsh: one personality's `_arguments` specs.
fn zsh_specs(opts: &[OptionDoc], formats: &str) -> Vec<String> {
    let mut specs = Vec::new();
    for o in opts {
        let help = zsh_text(&o.help);
        let action = match (o.arg, value_kind(o)) {
            (ArgKind::Required, ValueKind::File) => ":file:_files".to_string(),
            (ArgKind::Required, ValueKind::Host) => ":host:_hosts".to_string(),
            (ArgKind::Required, ValueKind::Format) => format!(":format:({formats})"),
            (ArgKind::Required, ValueKind::Congestion) => {
                format!(":algorithm:($(cat {CONGESTION} 2>/dev/null))")
            }
            (ArgKind::Required, ValueKind::Device) => ":device:($(ls /sys/class/net 2>/dev/null))".to_string(),
            (ArgKind::Required, _) => ":value: ".to_string(),
            _ => String::new(),
        };
        let (short_sfx, long_sfx) = match o.arg {
            ArgKind::Required => ("+", "="),
            _ => ("", ""),
        };
        let spec = match (o.short, &o.long) {
            (Some(c), Some(l)) => format!("'(-{c} --{l})'{{-{c}{short_sfx},--{l}{long_sfx}}}'[{help}]{action}'"),
            (Some(c), None) => format!("'-{c}{short_sfx}[{help}]{action}'"),
            (None, Some(l)) => format!("'--{l}{long_sfx}[{help}]{action}'"),
            (None, None) => continue,
        };
        specs.push(spec);
    }
    specs
}

fn zsh(prog: &str, both: &Dialects) -> String {
    let mut specs = zsh_specs(both.iperf3, IPERF3_FORMATS);
    specs.push("'--completions=[print a shell completion script]:shell:(bash zsh fish)'".to_string());
    let iperf2 = if both.iperf2.is_empty() {
        String::new()
    } else {
        specs.push(format!("'--iperf2[{IPERF2_HELP}]'"));
        let mut specs2 = zsh_specs(both.iperf2, IPERF2_FORMATS);
        specs2.push(format!("'--iperf2[{IPERF2_HELP}]'"));
        format!(
            "if (( ${{words[(I)--iperf2]}} )); then\n  _arguments -s \\\n  {}\n  return\nfi\n",
            specs2.join(" \\\n  ")
        )
    };
    format!(
        "#compdef {prog}\n# zsh completion for {prog}; generated by `{prog} --completions zsh`.\n\
         if (( CURRENT > 2 )); then\n  case $words[2] in\n{subs}  esac\nfi\n\
         {iperf2}\
         _arguments -s \\\n  {} \\\n  '1:: :({names})'\n",
        specs.join(" \\\n  "),
        subs = SUBCOMMANDS.iter().map(zsh_subcommand).collect::<String>(),
        names = sub_names(),
    )
}

fn fish_text(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\'', "\\'")
}

/// fish: one `complete` line per option, shown when `condition` holds.
fn fish_lines(prog: &str, opts: &[OptionDoc], condition: &str, formats: &str) -> String {
    let mut s = String::new();
    for o in opts {
        let mut line = format!("complete -c {prog} -n '{condition}'");
        if let Some(c) = o.short {
            line.push_str(&format!(" -s {c}"));
        }
        if let Some(l) = &o.long {
            line.push_str(&format!(" -l {l}"));
        }
        if o.arg == ArgKind::Required {
            match value_kind(o) {
                ValueKind::File => line.push_str(" -r -F"),
                ValueKind::Host => line.push_str(" -x -a '(__fish_print_hostnames)'"),
                ValueKind::Format => line.push_str(&format!(" -x -a '{formats}'")),
                ValueKind::Congestion => {
                    line.push_str(&format!(" -x -a '(cat {CONGESTION} 2>/dev/null | string split \" \")'"))
                }
                ValueKind::Device => line.push_str(" -x -a '(ls /sys/class/net 2>/dev/null)'"),
                ValueKind::Shell | ValueKind::Other => line.push_str(" -x"),
            }
        }
        if !o.help.is_empty() {
            line.push_str(&format!(" -d '{}'", fish_text(&o.help)));
        }
        s.push_str(&line);
        s.push('\n');
    }
    s
}

fn fish(prog: &str, both: &Dialects) -> String {
    let mut s = format!("# fish completion for {prog}; generated by `{prog} --completions fish`.\n");
    for sub in SUBCOMMANDS {
        s.push_str(&fish_subcommand(prog, sub));
    }
    let no_sub = format!("not __fish_seen_subcommand_from {}", sub_names());
    s.push_str(&format!(
        "complete -c {prog} -n '{no_sub}' -l completions -x -a 'bash zsh fish' -d 'print a shell completion script'\n"
    ));
    if both.iperf2.is_empty() {
        s.push_str(&fish_lines(prog, both.iperf3, &no_sub, IPERF3_FORMATS));
    } else {
        s.push_str(&format!(
            "complete -c {prog} -n '{no_sub}' -l iperf2 -d '{IPERF2_HELP}'\n"
        ));
        s.push_str(&fish_lines(
            prog,
            both.iperf3,
            &format!("{no_sub}; and not __fish_contains_opt iperf2"),
            IPERF3_FORMATS,
        ));
        s.push_str(&fish_lines(
            prog,
            both.iperf2,
            "__fish_contains_opt iperf2",
            IPERF2_FORMATS,
        ));
    }
    s
}

/// The options of both personalities, for one script.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dialects<'a> {
    /// A plain command line's (iperf3's).
    pub iperf3: &'a [OptionDoc],
    /// After `--iperf2` (iperf 2's); empty leaves `--iperf2` out.
    pub iperf2: &'a [OptionDoc],
}

/// The completion script for `shell`, with one personality's options.
pub fn script(shell: Shell, prog: &str, opts: &[OptionDoc]) -> String {
    script_for(
        shell,
        prog,
        &Dialects {
            iperf3: opts,
            iperf2: &[],
        },
    )
}

/// The completion script for `shell`, with both personalities' options.
pub(crate) fn script_for(shell: Shell, prog: &str, both: &Dialects) -> String {
    match shell {
        Shell::Bash => bash(prog, both),
        Shell::Zsh => zsh(prog, both),
        Shell::Fish => fish(prog, both),
    }
}

/// `--completions SHELL`: prints the script; returns the exit code.
pub fn run(args: &[String], prog: &str) -> i32 {
    let shell = match args {
        [s] => Shell::from_name(s),
        _ => None,
    };
    match shell {
        Some(sh) => {
            let both = Dialects {
                iperf3: &iperf3_options(),
                iperf2: &iperf2_options(),
            };
            print!("{}", script_for(sh, "wirespeed", &both));
            0
        }
        None => {
            eprintln!("{prog}: parameter error - --completions takes one of: bash, zsh, fish");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lines_split_into_names_and_descriptions() {
        let usage = "Usage: x\n  -p, --port      #         server port to listen on/connect to\n\
                     \x20 -B, --bind <host>[%<dev>] bind to the interface\n\
                     \x20 --json-stream-full-output output in JSON format with JSON streams enabled\n\
                     \x20 --timestamps<=format>     emit a timestamp\n\
                     \x20                           (continuation)\n";
        let d = help_descriptions(usage);
        assert_eq!(
            d[0],
            (
                vec!["-p".into(), "--port".into()],
                "server port to listen on/connect to".into()
            )
        );
        assert_eq!(
            d[1],
            (vec!["-B".into(), "--bind".into()], "bind to the interface".into())
        );
        assert_eq!(d[2].1, "output in JSON format with JSON streams enabled");
        assert_eq!(d[3].0, vec!["--timestamps".to_string()]);
        assert_eq!(d.len(), 4);
    }

    #[test]
    fn every_accepted_option_is_documented_in_help() {
        for o in iperf3_options() {
            assert!(!o.help.is_empty(), "no --help text for {:?}/{:?}", o.short, o.long);
        }
    }

    #[test]
    fn bash_script_parses_and_lists_every_option() {
        let s = script(Shell::Bash, "wirespeed", &iperf3_options());
        for o in iperf3_options() {
            for f in flags(&o) {
                assert!(s.contains(&format!(" {f}")) || s.contains(&format!("|{f}")), "{f}");
            }
        }
        let dir = std::env::temp_dir().join(format!("ws-compl-{}.bash", std::process::id()));
        std::fs::write(&dir, &s).unwrap();
        let st = std::process::Command::new("bash").arg("-n").arg(&dir).status();
        let _ = std::fs::remove_file(&dir);
        if let Ok(st) = st {
            assert!(st.success(), "bash -n rejected the script");
        }
    }

    #[test]
    fn every_accepted_iperf2_option_is_documented_in_its_help() {
        for o in iperf2_options() {
            assert!(
                !o.help.is_empty(),
                "no --iperf2 --help text for {:?}/{:?}",
                o.short,
                o.long
            );
        }
    }

    #[test]
    fn scripts_offer_the_iperf2_options_after_iperf2() {
        let both = Dialects {
            iperf3: &iperf3_options(),
            iperf2: &iperf2_options(),
        };
        let bash = script_for(Shell::Bash, "wirespeed", &both);
        assert!(bash.contains("if [[ $w == --iperf2 ]]"), "{bash}");
        for o in both.iperf2 {
            for f in flags(o) {
                assert!(
                    bash.contains(&format!(" {f}")) || bash.contains(&format!("|{f}")),
                    "{f}"
                );
            }
        }
        // iperf 2's -Z takes an algorithm, iperf3's -Z takes nothing.
        assert!(bash.contains("-Z|--tcp-congestion|--linux-congestion)"), "{bash}");
        let zsh = script_for(Shell::Zsh, "wirespeed", &both);
        assert!(zsh.contains("if (( ${words[(I)--iperf2]} )); then"), "{zsh}");
        assert!(
            zsh.contains("'--udp-search[client - find the highest UDP rate"),
            "{zsh}"
        );
        let fish = script_for(Shell::Fish, "wirespeed", &both);
        assert!(
            fish.contains("complete -c wirespeed -n '__fish_contains_opt iperf2' -s J -l json"),
            "{fish}"
        );
        assert!(fish.contains("-l csv"), "{fish}");
    }
}
