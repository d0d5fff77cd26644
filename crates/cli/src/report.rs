//! `wirespeed report RESULT.json [-o FILE.html]`: renders saved `-J`
//! output (ours or iperf3's) as the HTML report.

use std::io::Read;
use std::path::{Path, PathBuf};

use wirespeed_core::error::{Code, Error};
use wirespeed_report::html;

/// Usage of the `report` command.
pub fn usage(prog: &str) -> String {
    format!(
        "Usage: {prog} report RESULT.json [-o FILE.html]\n\
         \n\
         Renders iperf3 JSON (from `{prog} -J`, `iperf3 -J`, a server's -J log with\n\
         one document per test, or --json-stream output) as one self-contained\n\
         HTML page with plots. RESULT.json may be `-` for standard input.\n\
         \n\
         \x20 -o, --output FILE   where to write the page (default: RESULT with .html,\n\
         \x20                     or report.html when reading standard input)\n\
         \x20 -h, --help          show this message and quit\n"
    )
}

/// What the `report` command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportCommand {
    /// Render `input` into `output`.
    Render {
        /// JSON file, or `-`.
        input: String,
        /// HTML file.
        output: PathBuf,
    },
    /// Print usage.
    Help,
}

fn perr(msg: impl Into<String>) -> Error {
    Error::param_msg(Code::NONE, msg)
}

/// Parses the arguments after `report`.
pub fn parse(args: &[String]) -> Result<ReportCommand, Error> {
    let mut input: Option<String> = None;
    let mut output: Option<PathBuf> = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        match a.as_str() {
            "-h" | "--help" => return Ok(ReportCommand::Help),
            "-o" | "--output" => {
                let v = args
                    .get(i)
                    .ok_or_else(|| perr(format!("option requires an argument -- '{a}'")))?;
                output = Some(PathBuf::from(v));
                i += 1;
            }
            s if s.starts_with("--output=") => output = Some(PathBuf::from(&s["--output=".len()..])),
            s if s.starts_with("-o") && s.len() > 2 => output = Some(PathBuf::from(&s[2..])),
            s if s.starts_with('-') && s != "-" => return Err(perr(format!("unrecognized option '{s}'"))),
            s => {
                if input.is_some() {
                    return Err(perr("report takes one RESULT.json"));
                }
                input = Some(s.to_string());
            }
        }
    }
    let input = input.ok_or_else(|| perr("report needs a RESULT.json to render (or - for standard input)"))?;
    let output = output.unwrap_or_else(|| {
        if input == "-" {
            PathBuf::from("report.html")
        } else {
            Path::new(&input).with_extension("html")
        }
    });
    if output.as_os_str() == input.as_str() {
        return Err(perr("the report would overwrite its input; give -o FILE.html"));
    }
    Ok(ReportCommand::Render { input, output })
}

fn read_input(input: &str) -> Result<String, Error> {
    let mut buf = Vec::new();
    let limit = html::MAX_INPUT + 1;
    let r = if input == "-" {
        std::io::stdin().lock().take(limit).read_to_end(&mut buf)
    } else {
        std::fs::File::open(input).and_then(|f| f.take(limit).read_to_end(&mut buf))
    };
    r.map_err(|e| {
        let why = match e.raw_os_error() {
            Some(n) => wirespeed_core::error::strerror(n),
            None => e.to_string(),
        };
        Error::msg(Code::FILE, format!("unable to read {input}: {why}"))
    })?;
    if buf.len() as u64 > html::MAX_INPUT {
        return Err(Error::msg(
            Code::FILE,
            format!("{input} is larger than {} MiB", html::MAX_INPUT >> 20),
        ));
    }
    String::from_utf8(buf).map_err(|_| Error::msg(Code::FILE, format!("{input} is not UTF-8 text")))
}

/// Runs the command; returns the exit code.
pub fn run(args: &[String], prog: &str) -> i32 {
    let cmd = match parse(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{prog}: {}", e.line());
            eprintln!("Usage: {prog} report RESULT.json [-o FILE.html]");
            return 1;
        }
    };
    let (input, output) = match cmd {
        ReportCommand::Help => {
            print!("{}", usage(prog));
            return 0;
        }
        ReportCommand::Render { input, output } => (input, output),
    };
    let name = if input == "-" { "standard input" } else { input.as_str() };
    let r = read_input(&input)
        .and_then(|text| html::parse_documents(&text, name))
        .and_then(|docs| {
            let n = docs.len();
            let page = html::render_documents(&docs, &format!("Rendered from {name}"));
            html::write_atomic(&output, &page).map(|_| n)
        });
    match r {
        Ok(n) => {
            let tests = if n == 1 {
                "1 test".to_string()
            } else {
                format!("{n} tests")
            };
            println!("wrote {} ({tests})", output.display());
            0
        }
        Err(e) => {
            eprintln!("{prog}: {}", e.line());
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<ReportCommand, Error> {
        let a: Vec<String> = s.split_whitespace().map(String::from).collect();
        parse(&a)
    }

    #[test]
    fn output_defaults_next_to_the_input() {
        assert_eq!(
            p("run.json").unwrap(),
            ReportCommand::Render {
                input: "run.json".into(),
                output: "run.html".into()
            }
        );
        assert_eq!(
            p("- -o x.html").unwrap(),
            ReportCommand::Render {
                input: "-".into(),
                output: "x.html".into()
            }
        );
        assert!(
            matches!(p("a.json -ox.html").unwrap(), ReportCommand::Render { output, .. } if output == Path::new("x.html"))
        );
    }

    #[test]
    fn mistakes_are_parameter_errors() {
        assert!(p("").is_err());
        assert!(p("a.json b.json").is_err());
        assert!(p("a.json -o").is_err());
        assert!(p("a.json --bogus").is_err());
        assert!(p("a.html").is_err(), "would overwrite its input");
        assert_eq!(p("--help").unwrap(), ReportCommand::Help);
    }
}
