//! Shell completions (bash, zsh, fish), generated from the option tables and
//! the `--help` text, so they cannot drift from what the parser accepts:
//! `wirespeed --completions bash|zsh|fish` prints a script.
//!
//! The generator takes a personality's options as [`OptionDoc`]s; the iperf
//! 2 personality adds its own list (from its table and usage text) the same
//! way when it lands.

use super::getopt::{ArgKind, OptionRow};
use super::iperf3;

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
    pub fn from_name(s: &str) -> Option<Shell> {
        match s {
            "bash" => Some(Shell::Bash),
            "zsh" => Some(Shell::Zsh),
            "fish" => Some(Shell::Fish),
            _ => None,
        }
    }
}

/// Descriptions from a usage text in iperf's layout: an option line starts
/// with two spaces and a dash; the description follows the last run of two
/// or more spaces, or the option and argument words when only one space
/// separates them. Returns (names, description) per option line.
pub fn help_descriptions(usage: &str) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    for line in usage.lines() {
        let Some(body) = line.strip_prefix("  ") else { continue };
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
pub fn documented<R: OptionRow>(table: &[R], available: impl Fn(R::Key) -> bool, usage: &str) -> Vec<OptionDoc> {
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
pub fn iperf3_options() -> Vec<OptionDoc> {
    documented(iperf3::TABLE, iperf3::available, &iperf3::long_usage("wirespeed"))
}

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
        Some("file" | "pidfile" | "logfile" | "report" | "rsa-private-key-path" | "authorized-users-path")
        | Some("rsa-public-key-path") => ValueKind::File,
        Some("client") => ValueKind::Host,
        Some("format") => ValueKind::Format,
        Some("congestion" | "linux-congestion") => ValueKind::Congestion,
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

fn bash(prog: &str, opts: &[OptionDoc]) -> String {
    let func = format!("_{}", prog.replace(['-', '.'], "_"));
    let all: Vec<String> = opts.iter().flat_map(flags).collect();
    let pick = |want: fn(&ValueKind) -> bool| -> String {
        opts.iter()
            .filter(|o| o.arg == ArgKind::Required && want(&value_kind(o)))
            .flat_map(flags)
            .collect::<Vec<_>>()
            .join("|")
    };
    let files = pick(|k| matches!(k, ValueKind::File));
    let hosts = pick(|k| matches!(k, ValueKind::Host));
    let formats = pick(|k| matches!(k, ValueKind::Format));
    let congestion = pick(|k| matches!(k, ValueKind::Congestion));
    let devices = pick(|k| matches!(k, ValueKind::Device));
    let others = pick(|k| matches!(k, ValueKind::Other));
    format!(
        r#"# bash completion for {prog}; generated by `{prog} --completions bash`.
{func}() {{
    local cur prev
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    if [[ ${{COMP_WORDS[1]}} == report ]]; then
        if [[ $prev == -o || $prev == --output || $cur != -* ]]; then
            COMPREPLY=( $(compgen -f -- "$cur") )
        else
            COMPREPLY=( $(compgen -W "-o --output -h --help" -- "$cur") )
        fi
        return
    fi
    case "$prev" in
        --completions) COMPREPLY=( $(compgen -W "bash zsh fish" -- "$cur") ); return ;;
        {files}) COMPREPLY=( $(compgen -f -- "$cur") ); return ;;
        {hosts}) COMPREPLY=( $(compgen -A hostname -- "$cur") ); return ;;
        {formats}) COMPREPLY=( $(compgen -W "k m g t K M G T" -- "$cur") ); return ;;
        {congestion}) COMPREPLY=( $(compgen -W "$(cat {CONGESTION} 2>/dev/null)" -- "$cur") ); return ;;
        {devices}) COMPREPLY=( $(compgen -W "$(ls /sys/class/net 2>/dev/null)" -- "$cur") ); return ;;
        {others}) return ;;
    esac
    if [[ $COMP_CWORD -eq 1 && $cur != -* ]]; then
        COMPREPLY=( $(compgen -W "report" -- "$cur") )
        return
    fi
    COMPREPLY=( $(compgen -W "--completions {all}" -- "$cur") )
}}
complete -F {func} {prog}
"#,
        all = all.join(" "),
    )
}

fn zsh_text(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\'', "'\\''")
        .replace('[', "(")
        .replace(']', ")")
        .replace(':', " -")
}

fn zsh(prog: &str, opts: &[OptionDoc]) -> String {
    let mut specs = Vec::new();
    for o in opts {
        let help = zsh_text(&o.help);
        let action = match (o.arg, value_kind(o)) {
            (ArgKind::Required, ValueKind::File) => ":file:_files".to_string(),
            (ArgKind::Required, ValueKind::Host) => ":host:_hosts".to_string(),
            (ArgKind::Required, ValueKind::Format) => ":format:(k m g t K M G T)".to_string(),
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
    specs.push("'--completions=[print a shell completion script]:shell:(bash zsh fish)'".to_string());
    format!(
        "#compdef {prog}\n# zsh completion for {prog}; generated by `{prog} --completions zsh`.\n\
         if [[ $words[2] == report ]]; then\n  _arguments '1: :(report)' '(-o --output)'{{-o+,--output=}}'[HTML file to write]:file:_files' '*:JSON file:_files'\n  return\nfi\n\
         _arguments -s \\\n  {} \\\n  '1:: :(report)'\n",
        specs.join(" \\\n  ")
    )
}

fn fish_text(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\'', "\\'")
}

fn fish(prog: &str, opts: &[OptionDoc]) -> String {
    let mut s = format!(
        "# fish completion for {prog}; generated by `{prog} --completions fish`.\n\
         complete -c {prog} -n '__fish_use_subcommand' -a report -d 'render saved -J output as an HTML report'\n\
         complete -c {prog} -n '__fish_seen_subcommand_from report' -s o -l output -r -F -d 'HTML file to write'\n\
         complete -c {prog} -l completions -x -a 'bash zsh fish' -d 'print a shell completion script'\n"
    );
    for o in opts {
        let mut line = format!("complete -c {prog} -n 'not __fish_seen_subcommand_from report'");
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
                ValueKind::Format => line.push_str(" -x -a 'k m g t K M G T'"),
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

/// The completion script for `shell`.
pub fn script(shell: Shell, prog: &str, opts: &[OptionDoc]) -> String {
    match shell {
        Shell::Bash => bash(prog, opts),
        Shell::Zsh => zsh(prog, opts),
        Shell::Fish => fish(prog, opts),
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
            print!("{}", script(sh, "wirespeed", &iperf3_options()));
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
}
