//! The manual page and the shell completions cover every option the parser
//! accepts, and render / parse with the real tools.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{peer, run, wirespeed};
use wirespeed::cli::iperf3::{TABLE, available};

const T: Duration = Duration::from_secs(30);

fn man_page() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("man/wirespeed.1")
}

#[test]
fn the_manual_documents_every_accepted_option() {
    let text = std::fs::read_to_string(man_page()).unwrap();
    for o in TABLE.iter().filter(|o| available(o.key)) {
        if let Some(l) = o.long {
            let roff = format!("\\-\\-{}", l.replace('-', "\\-"));
            assert!(text.contains(&roff), "man page lacks --{l}");
        }
        if let Some(c) = o.short {
            assert!(text.contains(&format!("\\-{c}")), "man page lacks -{c}");
        }
    }
    for extra in [
        "wirespeed report",
        "\\-\\-completions",
        "IPERF 2 PERSONALITY",
        "wirespeed_refusals_total",
    ] {
        assert!(text.contains(extra), "man page lacks {extra}");
    }
}

#[test]
fn the_manual_renders_without_warnings() {
    let Some(groff) = peer("groff") else { return };
    let page = man_page();
    let r = run(&groff, &["-man", "-Tutf8", "-ww", "-z", page.to_str().unwrap()], T);
    assert_eq!(r.code, Some(0));
    assert!(r.stderr.is_empty(), "groff warnings:\n{}", r.stderr);
    let Some(man) = peer("man") else { return };
    let r = run(&man, &["-l", page.to_str().unwrap()], T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains("WIRESPEED(1)") && r.stdout.contains("--report"),
        "{}",
        r.stdout
    );
}

#[test]
fn completion_scripts_parse_in_their_shells() {
    for (shell, check) in [("bash", "bash"), ("zsh", "zsh"), ("fish", "fish")] {
        let r = run(&wirespeed(), &["--completions", shell], T);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        for o in TABLE.iter().filter(|o| available(o.key)) {
            if let Some(l) = o.long {
                assert!(r.stdout.contains(l), "{shell} completion lacks --{l}");
            }
        }
        let file = std::env::temp_dir().join(format!("ws-completion-{}.{shell}", std::process::id()));
        std::fs::write(&file, &r.stdout).unwrap();
        let found = std::env::var_os("PATH")
            .and_then(|p| std::env::split_paths(&p).map(|d| d.join(check)).find(|p| p.is_file()));
        match found {
            Some(bin) => {
                let c = run(&bin, &["-n", file.to_str().unwrap()], T);
                assert_eq!(c.code, Some(0), "{shell} -n: {}", c.stderr);
            }
            None => eprintln!("NOTICE: {check} not installed; its completion script is not syntax-checked"),
        }
        let _ = std::fs::remove_file(&file);
    }
    let r = run(&wirespeed(), &["--completions", "tcsh"], T);
    assert_eq!(r.code, Some(1));
    assert_eq!(r.stderr.lines().count(), 1);
}

#[test]
fn help_lists_the_wirespeed_additions() {
    let r = run(&wirespeed(), &["--help"], T);
    assert_eq!(r.code, Some(0));
    for s in [
        "--report",
        "--live",
        "--metrics",
        "--loopback",
        "wirespeed report",
        "--completions",
    ] {
        assert!(r.stdout.contains(s), "--help lacks {s}");
    }
}

/// The long options a subcommand's `--help` lists.
fn help_options(sub: &str) -> Vec<String> {
    let r = run(&wirespeed(), &[sub, "--help"], T);
    assert_eq!(r.code, Some(0), "{sub} --help: {}", r.stderr);
    let mut v: Vec<String> = r
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with('-'))
        .flat_map(|l| l.split([' ', ',']).map(str::to_string).collect::<Vec<_>>())
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .collect();
    v.sort();
    v.dedup();
    v
}

/// What bash completes for `words` (the last one the word being completed).
fn bash_completes(script: &Path, words: &[&str]) -> Option<Vec<String>> {
    let bash = peer("bash")?;
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let prog = format!(
        "source {}; COMP_WORDS=({}); COMP_CWORD={}; _wirespeed; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words.len() - 1
    );
    let r = run(&bash, &["-c", &prog], T);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    Some(r.stdout.lines().filter(|l| !l.is_empty()).map(str::to_string).collect())
}

#[test]
fn each_subcommand_completes_its_own_options() {
    let script = std::env::temp_dir().join(format!("ws-completion-subs-{}.bash", std::process::id()));
    let r = run(&wirespeed(), &["--completions", "bash"], T);
    std::fs::write(&script, &r.stdout).unwrap();
    let first = bash_completes(&script, &["wirespeed", ""]);
    let Some(first) = first else {
        let _ = std::fs::remove_file(&script);
        return;
    };
    assert_eq!(first, ["report", "ui", "exporter"]);
    for sub in ["report", "ui", "exporter"] {
        let mut offered = bash_completes(&script, &["wirespeed", sub, "--"]).unwrap();
        offered.sort();
        assert_eq!(offered, help_options(sub), "bash after `{sub}`");
        // Its option's value is not another option.
        let after_value = bash_completes(&script, &["wirespeed", sub, "--help", "-"]).unwrap();
        assert!(
            !after_value.iter().any(|w| w == "--client" || w == "-c"),
            "{sub}: {after_value:?}"
        );
    }
    // A file option's value is a file; a word option's is left alone.
    assert!(
        bash_completes(&script, &["wirespeed", "ui", "--listen", ""])
            .unwrap()
            .is_empty()
    );
    let dir = std::env::temp_dir().join(format!("ws-completion-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("history.db"), "").unwrap();
    let db = format!("{}/hist", dir.display());
    let files = bash_completes(&script, &["wirespeed", "ui", "--db", &db]).unwrap();
    assert_eq!(files, [format!("{}/history.db", dir.display())]);
    // The test's options stay where they belong.
    let client = bash_completes(&script, &["wirespeed", "-c", "h", "--cl"]).unwrap();
    assert_eq!(client, ["--client"]);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&script);
    for shell in ["zsh", "fish"] {
        let r = run(&wirespeed(), &["--completions", shell], T);
        for sub in ["report", "ui", "exporter"] {
            for o in help_options(sub) {
                let name = o.trim_start_matches('-');
                let spelled = match shell {
                    "zsh" => format!("--{name}"),
                    _ => format!("-l {name} "),
                };
                assert!(r.stdout.contains(&spelled), "{shell} lacks {sub}'s {o}");
            }
        }
    }
}

/// The manual's text as `man` shows it (roff's `\-` as `-`, lines joined).
fn man_text() -> String {
    let raw = std::fs::read_to_string(man_page()).unwrap();
    raw.lines()
        .filter(|l| !l.starts_with(".\\\""))
        .map(|l| l.trim_start_matches(['.', 'B', 'R', 'I', 'P', 'T']).trim())
        .collect::<Vec<_>>()
        .join(" ")
        .replace("\\-", "-")
        .replace("\\fR", "")
        .replace("\\fI", "")
        .replace("\\fB", "")
        .replace('"', "")
}

#[test]
fn the_manual_gives_the_rpm_server_and_clients_limits_of_the_code() {
    use wirespeed::config::nq::{MAX_FLOWS, MOST_FLOWS};
    use wirespeed_rpm_http::server::{IDLE, MAX_CONNECTIONS};
    let text = man_text();
    let thousands = |n: usize| match n {
        n if n >= 1000 => format!("{},{:03}", n / 1000, n % 1000),
        n => n.to_string(),
    };
    for want in [
        format!("At most {} connections at once", thousands(MAX_CONNECTIONS)),
        format!("closed after {} seconds without progress", IDLE.as_secs()),
        format!("up to {MAX_FLOWS} ( -P , at most {MOST_FLOWS})"),
    ] {
        assert!(text.contains(&want), "man page lacks {want:?}");
    }
    // One load connection at a time (the client's FLOWS_PER_STEP).
    assert!(text.contains("starting with one load connection and adding one each second"));
    // The options it lists for --rpm=URL are taken; others are refused.
    let parse = |extra: &str| {
        let args: Vec<String> = format!("--rpm=https://127.0.0.1:4443/config {extra}")
            .split_whitespace()
            .map(String::from)
            .collect();
        wirespeed::cli::iperf3::parse_args(&args).map_err(|e| e.line())
    };
    for listed in [
        "-t 5 -R -P 4 -f m -J --logfile /tmp/x --forceflush --timestamps",
        "--json-stream --report /tmp/x.html --metrics 127.0.0.1:0 --cacert /tmp/ca.pem",
        "--insecure",
    ] {
        assert!(parse(listed).is_ok(), "{listed}: {:?}", parse(listed).err());
        for word in listed.split_whitespace().filter(|w| w.starts_with("--")) {
            assert!(text.contains(word), "the manual's --rpm=URL list lacks {word}");
        }
    }
    for other in ["-u", "-i 1", "-w 1M", "-b 1M", "--bidir", "-c h", "-s"] {
        assert!(parse(other).is_err(), "--rpm=URL {other} is taken");
    }
}
