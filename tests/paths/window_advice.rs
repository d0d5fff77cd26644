//! Window advice across a real path: two network namespaces joined by a
//! veth pair (made and removed by the test), shaped with tbf.

use crate::common;
use crate::common::netns;

use std::time::Duration;

use common::{json, wirespeed};
use netns::NetnsPair;

/// Runs a 2 s client in `a` against a one-off server in `b`; returns `end.advice`.
fn advice(path: &NetnsPair, extra: &[&str]) -> serde_json::Value {
    let port = common::free_port().to_string();
    let ws = wirespeed();
    let srv = NetnsPair::spawn(&path.b, &ws, &["-s", "-1", "-p", &port]);
    assert!(srv.wait_for_line("Server listening", Duration::from_secs(10)));
    let mut args = vec!["-c", &path.addr_b, "-p", &port, "-t", "2", "-J"];
    args.extend_from_slice(extra);
    let mut cli = NetnsPair::spawn(&path.a, &ws, &args);
    let st = cli.wait(Duration::from_secs(30)).expect("client finishes");
    assert_eq!(st.code(), Some(0), "{}{}", cli.out(), cli.err());
    let doc = json(&cli.out());
    doc["end"]["advice"].clone()
}

#[test]
fn a_small_window_is_called_out_with_a_bigger_w() {
    let Some(path) = NetnsPair::new() else { return };
    // A fast shaper, so the 4 KiB window (not the shaper) is what binds.
    path.shape("2gbit");
    let a = advice(&path, &["-w", "4K"]);
    assert_eq!(a["limited_by"], "receive_window", "{a:#}");
    let suggested = a["suggested_window_bytes"].as_u64().expect("a -w suggestion");
    assert!(suggested >= 2 * a["peer_window_bytes"].as_u64().unwrap(), "{a:#}");
    let text = a["text"].as_str().unwrap();
    assert!(
        text.contains(" x ") && text.contains("RTT") && text.contains("try -w"),
        "{text}"
    );
    assert_eq!(
        a["suggested_option"].as_str().unwrap(),
        format!(
            "-w {}",
            // The suggestion may end the sentence ("... -> try -w 16K.").
            text.rsplit("try -w ")
                .next()
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .trim_end_matches('.')
        )
    );
}

#[test]
fn a_shaped_path_is_not_blamed_on_the_window() {
    let Some(path) = NetnsPair::new() else { return };
    path.shape("50mbit");
    let a = advice(&path, &[]);
    assert_eq!(a["limited_by"], "path", "{a:#}");
    assert!(a.get("suggested_window_bytes").is_none(), "{a:#}");
    assert!(a["text"].as_str().unwrap().contains("A larger -w will not help"));
}
