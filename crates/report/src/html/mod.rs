//! The HTML report: one self-contained page with SVG plots over time.
//!
//! One implementation serves both entry points: `--report FILE.html` (a
//! [`HtmlSink`] of the event stream that builds the `-J` document with the
//! same code that prints `-J`, and renders it when the test is done) and
//! `wirespeed report RESULT.json -o FILE.html`, which renders saved
//! documents — ours or real iperf3's, one or several (a server's log holds
//! one per test), or a `--json-stream` capture.
//!
//! A page is written whole or not at all: it goes to a temporary file in the
//! target directory that is renamed over the target.

pub mod chart;
pub mod model;
pub mod page;
mod sink;

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::document::StreamEvent;

pub use sink::HtmlSink;

use wirespeed_core::error::{Code, Error};

/// Largest JSON input `wirespeed report` reads.
pub const MAX_INPUT: u64 = 256 * 1024 * 1024;
/// Most documents one page shows.
pub(crate) const MAX_DOCUMENTS: usize = 1000;

/// Escapes text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

fn report_error(msg: String) -> Error {
    Error::msg(Code::FILE, msg)
}

/// Parses the iperf3 JSON in `text` (named `name` in messages): one
/// document, several concatenated (a server's `-J` log), or `--json-stream`
/// lines. Every document must look like iperf3's.
pub fn parse_documents(text: &str, name: &str) -> Result<Vec<Value>, Error> {
    if text.trim().is_empty() {
        return Err(report_error(format!("{name} is empty")));
    }
    let mut values = Vec::new();
    for v in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        let v = v.map_err(|e| report_error(format!("{name} is not valid JSON: {e}")))?;
        values.push(v);
        if values.len() > MAX_DOCUMENTS * 10_000 {
            return Err(report_error(format!("{name} holds too many JSON values")));
        }
    }
    let is_event = StreamEvent::is_event;
    let docs: Vec<Value> = if values.iter().all(is_event) {
        // --json-stream: a new test (or mode) begins at each start event.
        let mut groups: Vec<Vec<Value>> = Vec::new();
        for v in values {
            let first = matches!(StreamEvent::name_of(&v), Some("start" | "rpm_start" | "search_start"));
            if first || groups.is_empty() {
                groups.push(Vec::new());
            }
            if let Some(g) = groups.last_mut() {
                g.push(v);
            }
        }
        groups.iter().filter_map(|g| model::from_stream_events(g)).collect()
    } else {
        values
    };
    if docs.len() > MAX_DOCUMENTS {
        return Err(report_error(format!(
            "{name} holds {} documents; at most {MAX_DOCUMENTS} fit one report",
            docs.len()
        )));
    }
    for (i, d) in docs.iter().enumerate() {
        model::check_document(d).map_err(|why| {
            let which = if docs.len() > 1 {
                format!(" (document {})", i + 1)
            } else {
                String::new()
            };
            report_error(format!("{name}{which} is not an iperf3 JSON document: {why}"))
        })?;
    }
    Ok(docs)
}

/// Renders checked documents as one page; `source` says where they came from.
pub fn render_documents(docs: &[Value], source: &str) -> String {
    let views: Vec<model::TestView> = docs.iter().map(model::view).collect();
    page::page(&views, source)
}

fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = format!(".{name}.{}.tmp", std::process::id());
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.join(tmp),
        _ => PathBuf::from(tmp),
    }
}

fn write_error(path: &Path, e: &std::io::Error) -> Error {
    let why = match e.raw_os_error() {
        Some(n) => wirespeed_core::error::strerror(n),
        None => e.to_string(),
    };
    report_error(format!("unable to write report {}: {why}", path.display()))
}

/// Checks, before a test runs, that a report can be written to `path`.
pub fn check_writable(path: &Path) -> Result<(), Error> {
    if path.is_dir() {
        return Err(report_error(format!(
            "unable to write report {}: Is a directory",
            path.display()
        )));
    }
    let tmp = temp_path(path);
    std::fs::File::create(&tmp).map_err(|e| write_error(path, &e))?;
    let _ = std::fs::remove_file(&tmp);
    Ok(())
}

/// Writes `contents` to `path` whole: a temporary file, then a rename.
pub fn write_atomic(path: &Path, contents: &str) -> Result<(), Error> {
    let tmp = temp_path(path);
    let r = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(contents.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = r {
        let _ = std::fs::remove_file(&tmp);
        return Err(write_error(path, &e));
    }
    Ok(())
}

/// A server writes one report per test: `report.html` becomes
/// `report-N.html`, N being the test number its banner announced.
pub fn numbered_path(path: &Path, n: u64) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{n}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{n}"),
    };
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_quotes() {
        assert_eq!(
            escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn server_reports_are_numbered_per_test() {
        assert_eq!(numbered_path(Path::new("/tmp/r.html"), 3), Path::new("/tmp/r-3.html"));
        assert_eq!(numbered_path(Path::new("r"), 12), Path::new("r-12"));
        assert_eq!(numbered_path(Path::new("a.b.html"), 1), Path::new("a.b-1.html"));
    }

    #[test]
    fn non_iperf3_json_is_refused_with_a_reason() {
        let e = parse_documents("{\"a\": 1}", "x.json").unwrap_err();
        assert_eq!(
            e.text(),
            "x.json is not an iperf3 JSON document: it has no \"start\" object"
        );
        let e = parse_documents("{\"start\": ", "x.json").unwrap_err();
        assert!(e.text().starts_with("x.json is not valid JSON: "), "{}", e.text());
        assert_eq!(parse_documents("  \n", "x.json").unwrap_err().text(), "x.json is empty");
        let e = parse_documents("[1,2]", "x.json").unwrap_err();
        assert!(e.text().ends_with("the JSON value is not an object"));
    }

    #[test]
    fn json_stream_lines_become_documents() {
        let text = concat!(
            "{\"event\":\"start\",\"data\":{\"test_start\":{\"protocol\":\"TCP\"}}}\n",
            "{\"event\":\"interval\",\"data\":{\"streams\":[],\"sum\":{\"end\":1,\"bits_per_second\":5}}}\n",
            "{\"event\":\"end\",\"data\":{}}\n",
            "{\"event\":\"start\",\"data\":{}}\n",
            "{\"event\":\"end\",\"data\":{}}\n",
        );
        let docs = parse_documents(text, "s").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0]["intervals"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn atomic_write_leaves_nothing_behind_on_failure() {
        let dir = std::env::temp_dir().join(format!("ws-html-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let target = dir.join("r.html");
        write_atomic(&target, "<p>hi</p>").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "<p>hi</p>");
        let missing = dir.join("no/such/dir/r.html");
        let e = write_atomic(&missing, "x").unwrap_err();
        assert!(e.text().contains("No such file or directory"), "{}", e.text());
        assert!(check_writable(&missing).is_err());
        assert!(check_writable(&dir).unwrap_err().text().ends_with("Is a directory"));
        let leftovers: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(leftovers.len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
