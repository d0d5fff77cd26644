//! Cloudflare's mach (`mach rpm`, cf-mach, draft-ietf-ippm-responsiveness-09)
//! as a real networkQuality client of our `--rpm-listen` server on
//! loopback. mach is built outside this repository (its BoringSSL needs
//! cmake and libclang); WIRESPEED_MACH names it, else the test says it
//! skipped.

use std::path::PathBuf;
use std::time::Duration;

use crate::common::*;

#[test]
fn mach_measures_against_our_rpm_server() {
    let Some(mach) = std::env::var_os("WIRESPEED_MACH").map(PathBuf::from) else {
        eprintln!("SKIPPED: WIRESPEED_MACH does not name Cloudflare's mach");
        return;
    };
    let port = free_port();
    let rpm = free_port();
    let mport = free_port();
    let listen = format!("127.0.0.1:{rpm}");
    let maddr = format!("127.0.0.1:{mport}");
    let _srv = wirespeed_server(port, &["--rpm-listen", &listen, "--metrics", &maddr]);
    wait_listening(rpm);
    let url = format!("https://127.0.0.1:{rpm}/.well-known/nq");
    let r = run(
        &mach,
        &["rpm", "--config", &url, "--insecure"],
        Duration::from_secs(120),
    );
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let doc = json(&r.stdout);
    assert!(doc["unloaded_latency_ms"].as_f64().is_some_and(|v| v > 0.0), "{doc}");
    for way in ["download", "upload"] {
        let w = &doc[way];
        assert!(w["throughput"].as_f64().is_some_and(|v| v > 100e6), "{way}: {doc}");
        assert!(w["rpm"].as_f64().is_some_and(|v| v > 0.0), "{way}: {doc}");
        assert!(w["loaded_latency_ms"].as_f64().is_some_and(|v| v > 0.0), "{way}: {doc}");
        // No load connection was turned away (mach keeps every probe's
        // connection open: hundreds on loopback).
        assert!(w.get("failed_connections").is_none(), "{way}: {doc}");
    }
    // The server counted mach's requests; nobody was answered 429.
    let (_, text) = http_get(mport, "/metrics", &[]);
    let value = |series: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series).and_then(|v| v.strip_prefix(' ')))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {series} in {text}"))
    };
    assert!(
        value("wirespeed_rpm_server_requests_total{path=\"small\"}") > 20.0,
        "{text}"
    );
    assert!(
        value("wirespeed_rpm_server_requests_total{path=\"large\"}") >= 1.0,
        "{text}"
    );
    assert!(
        value("wirespeed_rpm_server_requests_total{path=\"upload\"}") >= 1.0,
        "{text}"
    );
    assert_eq!(
        value("wirespeed_rpm_server_turned_away_total{how=\"busy\"}"),
        0.0,
        "{text}"
    );
}
