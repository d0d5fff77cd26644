//! The HTML page around the charts: one self-contained file, inline CSS,
//! no scripts, no fonts or images from anywhere.

use std::fmt::Write as _;

use super::chart;
use super::escape;
use super::model::{Table, TestView};

/// The report's style sheet (the web UI uses it too).
pub const CSS: &str = r#"
:root{color-scheme:light;--fg:#1d2433;--muted:#5b6476;--line:#d9dee7;--bg:#f6f7fa;--card:#fff;--accent:#0072B2}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
header.page{background:#1d2433;color:#fff;padding:14px 20px}
header.page h1{margin:0;font-size:20px;font-weight:600}
header.page p{margin:2px 0 0;color:#c5cbd8;font-size:13px}
main{max-width:1180px;margin:0 auto;padding:12px 16px 40px}
section.test{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 18px;margin:16px 0}
section.test h2{margin:0 0 2px;font-size:19px}
.sub{color:var(--muted);font-size:13px;margin:0 0 12px}
.error{background:#fdecea;border:1px solid #f5c2bd;color:#8a1c12;border-radius:8px;padding:8px 12px;margin:10px 0}
.advice{background:#eef6fc;border:1px solid #c4dff2;border-radius:8px;padding:8px 12px;margin:10px 0;white-space:pre-wrap}
.advice b{display:block;margin-bottom:2px}
.headline{display:flex;flex-wrap:wrap;gap:10px;margin:8px 0 6px}
.headline div{border:1px solid var(--line);border-radius:8px;padding:6px 12px;min-width:140px}
.headline span{display:block;color:var(--muted);font-size:12px}
.headline strong{font-size:18px;font-variant-numeric:tabular-nums}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,400px),1fr));gap:14px;margin:12px 0}
figure{margin:0;border:1px solid var(--line);border-radius:8px;padding:8px 10px 6px}
figcaption{font-weight:600;font-size:14px;margin:0 0 2px}
svg.chart{width:100%;max-width:720px;height:auto;display:block}
svg .grid{stroke:#e6e9ef;stroke-width:1}
svg .axis{stroke:#5b6476;stroke-width:1}
svg .xtick{stroke:#5b6476;stroke-width:1}
svg .tick{fill:#4a5263;font-size:12px;font-variant-numeric:tabular-nums}
svg .label{fill:#1d2433;font-size:13px}
svg .shade{fill:#eceef3}
svg .shade-label{fill:#7b8394;font-size:11px}
ul.legend{list-style:none;margin:2px 0 0;padding:0;display:flex;flex-wrap:wrap;gap:4px 14px;font-size:13px}
ul.legend li{display:flex;align-items:center;gap:6px}
.swatch{display:inline-block;width:18px;height:3px;border-radius:2px}
.swatch.thick{height:5px}
p.note{color:var(--muted);font-size:13px;margin:4px 0}
.tablewrap{overflow-x:auto}
table{border-collapse:collapse;font-size:13.5px;margin:6px 0 10px;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid var(--line);padding:4px 12px 4px 0;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
tr.sum td{font-weight:600}
table.params td{text-align:left;white-space:normal}
table.params td:first-child{color:var(--muted);padding-right:18px;white-space:nowrap}
h3{font-size:15px;margin:14px 0 4px}
nav.toc{font-size:14px}
footer{color:var(--muted);font-size:12px;text-align:center;margin-top:20px}
@media (max-width:640px){svg .tick{font-size:19px}svg .label{font-size:20px}svg .shade-label{font-size:17px}section.test{padding:12px 10px}main{padding:8px 6px 30px}}
"#;

fn table(t: &Table) -> String {
    let mut s = String::from(r#"<div class="tablewrap"><table class="summary"><thead><tr>"#);
    for h in &t.head {
        let _ = write!(s, "<th>{}</th>", escape(h));
    }
    s.push_str("</tr></thead><tbody>");
    for (is_sum, row) in &t.rows {
        s.push_str(if *is_sum { r#"<tr class="sum">"# } else { "<tr>" });
        for c in row {
            let _ = write!(s, "<td>{}</td>", escape(c));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div>");
    s
}

/// One test's section: heading, headline numbers, charts and tables.
pub fn section(i: usize, v: &TestView) -> String {
    let mut s = String::with_capacity(16 * 1024);
    let _ = write!(
        s,
        r#"<section class="test" id="test-{}"><h2>{}</h2><p class="sub">{}</p>"#,
        i + 1,
        escape(&v.heading),
        escape(&v.subtitle)
    );
    if let Some(e) = &v.error {
        let _ = write!(s, r#"<div class="error"><b>Error:</b> {}</div>"#, escape(e));
    }
    if !v.headline.is_empty() {
        s.push_str(r#"<div class="headline">"#);
        for (k, val) in &v.headline {
            let _ = write!(
                s,
                "<div><span>{}</span><strong>{}</strong></div>",
                escape(k),
                escape(val)
            );
        }
        s.push_str("</div>");
    }
    if let Some(a) = &v.advice {
        // The box is titled; the text's own "Window advice: " would repeat it.
        let a = a.strip_prefix("Window advice: ").unwrap_or(a);
        let _ = write!(s, r#"<div class="advice"><b>Window advice</b>{}</div>"#, escape(a));
    }
    if !v.charts.is_empty() {
        s.push_str(r#"<div class="charts">"#);
        for c in &v.charts {
            let _ = write!(s, "<figure><figcaption>{}</figcaption>", escape(&c.title));
            s.push_str(&chart::render(c));
            if let Some(n) = &c.note {
                let _ = write!(s, r#"<p class="note">{}</p>"#, escape(n));
            }
            s.push_str("</figure>");
        }
        s.push_str("</div>");
    }
    for n in &v.notes {
        let _ = write!(s, r#"<p class="note">{}</p>"#, escape(n));
    }
    if !v.summary.rows.is_empty() {
        s.push_str("<h3>Summary</h3>");
        s.push_str(&table(&v.summary));
    }
    if let Some(l) = &v.latency {
        s.push_str("<h3>Latency: idle and under load</h3>");
        s.push_str(&table(l));
    }
    if !v.params.is_empty() {
        s.push_str(r#"<h3>Parameters</h3><div class="tablewrap"><table class="params"><tbody>"#);
        for (k, val) in &v.params {
            let _ = write!(s, "<tr><td>{}</td><td>{}</td></tr>", escape(k), escape(val));
        }
        s.push_str("</tbody></table></div>");
    }
    s.push_str("</section>");
    s
}

/// The whole page for one or more tests.
pub fn page(views: &[TestView], source: &str) -> String {
    let mut s = String::with_capacity(64 * 1024);
    let title = match views {
        [one] => format!("wirespeed report: {}", one.heading),
        _ => format!("wirespeed report: {} tests", views.len()),
    };
    let _ = write!(
        s,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="generator" content="{gen}"><title>{t}</title><style>{CSS}</style></head><body><header class="page"><h1>wirespeed report</h1><p>{src}</p></header><main>"#,
        gen = escape(&wirespeed_core::version::version_string()),
        t = escape(&title),
        src = escape(source),
    );
    if views.len() > 1 {
        s.push_str(r#"<nav class="toc"><ol>"#);
        for (i, v) in views.iter().enumerate() {
            let _ = write!(
                s,
                "<li><a href=\"#test-{}\">{}</a> <span class=\"sub\">{}</span></li>",
                i + 1,
                escape(&v.heading),
                escape(&v.subtitle)
            );
        }
        s.push_str("</ol></nav>");
    }
    for (i, v) in views.iter().enumerate() {
        s.push_str(&section(i, v));
    }
    let _ = writeln!(
        s,
        "<footer>Made by {} from iperf3-format JSON. Hover a point for its value.</footer></main></body></html>",
        escape(&wirespeed_core::version::version_string())
    );
    s
}
