//! The normalisation rules, one test per rule.

use super::*;

fn line(s: &str) -> String {
    Normaliser::plain().line(s)
}

/// Each (input, normalised) pair of lines.
fn same(cases: &[(&str, &str)]) {
    for (input, want) in cases {
        assert_eq!(line(input), *want, "{input:?}");
    }
}

fn text(s: &str) -> Vec<String> {
    Normaliser::plain().normalise(s, Format::Text)
}

#[test]
fn numbers_of_every_form() {
    same(&[
        (
            "a 12 b 3.25 c -7 d 1.5e+09 e 2E-3 f 0x1F g -0.5",
            "a N b N c N d N e N f N g N",
        ),
        ("(0%) 10/76 (13.2%)", "(N%) N/N (N%)"),
        ("irtt=319/32741/117 ct=0.51 ms", "irtt=N/N/N ct=N ms"),
        ("1023K/54(21) us", "NK/N(N) us"),
        ("(peer 2.1.8) wirespeed 0.1.0", "(peer N) wirespeed N"),
        ("0/0 (-nan%) x nan, inf -inf NaN", "N/N (N%) x N, N N N"),
        ("info nano inference", "info nano inference"),
    ]);
}

#[test]
fn digits_inside_words_stay() {
    same(&[
        ("iperf3 x86_64 T8(f)-PDF ipv6", "iperf3 x86_64 T8(f)-PDF ipv6"),
        ("--iperf2 -P 2", "--iperf2 -P N"),
    ]);
}

#[test]
fn ranges() {
    // Where an interval starts does not matter: how many intervals a
    // test prints (one, when a loaded machine starves the reporter for
    // a second) is timing.
    same(&[
        ("[  6]   0.00-1.00   sec", "[ N] N-N sec"),
        ("[  6]   1.00-2.00   sec", "[ N] N-N sec"),
        ("[SUM] 0.0000-2.0011 sec", "[SUM] N-N sec"),
        // A dash between numbers is not a minus sign.
        ("2026-11-23 21:55:11", "N-N-N N:N:N"),
        ("x -3-4", "x N-N"),
    ]);
}

#[test]
fn addresses() {
    same(&[
        (
            "[  6] local 127.0.0.1 port 50916 connected to 127.0.0.1 port 45123",
            "[ N] local ADDR port N connected to ADDR port N",
        ),
        (
            "host ::1, fe80::1%lo and ::ffff:127.0.0.1.",
            "host ADDR, ADDR%lo and ADDR.",
        ),
        ("to 127.0.0.1:5201 now", "to ADDR:N now"),
        ("local 127.0.0.1%lo port", "local ADDR%lo port"),
        // Times and hex-looking words are not addresses.
        ("at 21:55:11 add cafe", "at N:N:N add cafe"),
        ("41271=4292:0:0:5595:4001:0:0:27383", "N=N:N:N:N:N:N:N:N"),
        ("2001:db8:1:2:3:4:5:6 and 1:2::3", "ADDR and ADDR"),
    ]);
}

#[test]
fn cookies() {
    same(&[
        ("Cookie: v33dfyffpsvgu23tbigyakx4xsqmm2k3z6p7", "Cookie: COOKIE"),
        ("Cookie: 7j4xul4n3tdpdl7aorqeqlyqc7piy7is4o22", "Cookie: COOKIE"),
        // Long ordinary words are not cookies.
        ("abcdefghijklmnopqrstuvwxyzabc", "abcdefghijklmnopqrstuvwxyzabc"),
    ]);
}

#[test]
fn dates_and_time_zones() {
    same(&[
        ("Time: Mon, 23 Nov 2026 21:56:21 GMT", "Time: DAY, N MON N N:N:N GMT"),
        (
            "connected on 2026-11-23 21:55:11 (UTC)",
            "connected on N-N-N N:N:N (TZ)",
        ),
        ("20261123215516,127.0.0.1,57612", "N,ADDR,N"),
    ]);
}

#[test]
fn units_lose_their_prefix() {
    same(&[
        (
            "[  6]   0.00-1.00   sec  3.28 GBytes  28.1 Gbits/sec   14   1023 KBytes",
            "[ N] N-N sec N ?Bytes N ?bits/sec N N ?Bytes",
        ),
        (
            "2.00-2.00 sec   640 KBytes  20.1 bits/sec",
            "N-N sec N ?Bytes N ?bits/sec",
        ),
        (
            "Read buffer size:  128 KByte (Dist bin width=16.0 KByte)",
            "Read buffer size: N ?Byte (Dist bin width=N ?Byte)",
        ),
        (
            "18944060 Bytes  36564486 Bytes/sec 5 MBytes/sec",
            "N ?Bytes N ?Bytes/sec N ?Bytes/sec",
        ),
        // Words that merely contain a unit stay.
        ("131072 byte blocks, Bitrate", "N byte blocks, Bitrate"),
    ]);
    let keep = Normaliser {
        uname: None,
        keep_rate_units: true,
    };
    assert_eq!(keep.line("2.90 GBytes  24923 Mbits/sec"), "N ?Bytes N Mbits/sec");
}

#[test]
fn machine_specific_words() {
    same(&[
        ("snd_tcp_congestion bbr", "snd_tcp_congestion CC"),
        ("rcv_tcp_congestion cubic", "rcv_tcp_congestion CC"),
    ]);
    let n = Normaliser {
        uname: Some("Linux vm 6.1.0 #1 SMP x86_64".into()),
        keep_rate_units: false,
    };
    assert_eq!(n.line("Linux vm 6.1.0 #1 SMP x86_64"), "UNAME");
}

#[test]
fn histogram_bins_fold() {
    assert_eq!(
        line(concat!(
            "[  1] 0.00-1.00 sec T8-PDF: bin(w=100us):cnt(849)=1:848,2:1 ",
            "(5.00/95.00/99.7%=1/1/2,Outliers=0,obl/obu=0/0)"
        )),
        "[ N] N-N sec T8-PDF: bin(w=Nus):cnt(N)=BINS (N/N/N%=N/N/N,Outliers=N,obl/obu=N/N)"
    );
    same(&[
        ("cnt(9)=3:9 (x)", "cnt(N)=BINS (x)"),
        ("44198=5002:1:1:6413:4711:9:0:28061", "N=N:N:N:N:N:N:N:N"),
    ]);
}

#[test]
fn blanks_collapse_and_lines_trim() {
    assert_eq!(line("   a    b\t c   "), "a b c");
}

#[test]
fn repetition_collapses() {
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(collapse(v(&["a", "a", "a", "b"])), v(&["a", "b"]));
    // Interval groups, however many, fold into one.
    assert_eq!(
        collapse(v(&[
            "h", "x", "x", "s", "-", "x", "x", "s", "-", "x", "x", "s", "-", "t"
        ])),
        v(&["h", "x", "s", "-", "t"])
    );
    assert_eq!(
        collapse(v(&["a", "b", "a", "b", "c", "a", "b"])),
        v(&["a", "b", "c", "a", "b"])
    );
    // An iperf3 client: two intervals and a sliver have one shape.
    let out = "[  6]   0.00-1.00   sec  3.28 GBytes  28.1 Gbits/sec\n\
               [  6]   1.00-2.00   sec  2.82 GBytes  24.3 Gbits/sec\n\
               [  6]   2.00-2.00   sec   640 KBytes  20.1 Gbits/sec\n\
               [  6]   0.00-2.00   sec  6.10 GBytes  26.2 Gbits/sec  sender\n";
    assert_eq!(
        text(out),
        v(&[
            "[ N] N-N sec N ?Bytes N ?bits/sec",
            "[ N] N-N sec N ?Bytes N ?bits/sec sender"
        ])
    );
}

#[test]
fn csv_rows() {
    let n = Normaliser::plain();
    let out = "20261123215516,127.0.0.1,57612,127.0.0.1,45124,1,0.0-1.0,4076994620,32615956960\n\
               20261123215517,127.0.0.1,57612,127.0.0.1,45124,1,1.0-2.0,4681891840,37455134720\n\
               20261123215517,127.0.0.1,57612,127.0.0.1,45124,1,0.0-2.0,8758886460,35021336615\n\
               20261123215517,::1,57612,127.0.0.1,45124,-1,0.0-2.0,0.002,,text\n";
    assert_eq!(
        n.normalise(out, Format::Csv),
        vec![
            "csv 9 columns: int,ip,int,ip,int,int,range,int,int",
            "csv 10 columns: int,ip,int,ip,int,int,range,float,empty,text",
        ]
    );
    // Lines that are not CSV rows are text.
    assert_eq!(n.normalise("WARNING: 5 things", Format::Csv), vec!["WARNING: N things"]);
}

#[test]
fn json_documents() {
    let n = Normaliser::plain();
    let doc = r#"{"start": {"cookie": "abc", "n": 1, "ok": true, "x": null},
                  "intervals": [{"streams": [{"bytes": 5}]}, {"streams": [{"bytes": 6.5}]}],
                  "empty": [], "error": "unable to connect to server - 127.0.0.1 port 5"}
                 {"a": 1}
                 trailing 5 words"#;
    assert_eq!(
        n.normalise(doc, Format::Json),
        vec![
            "JSON document 1:",
            ".empty: array",
            ".error: string \"unable to connect to server - ADDR port N\"",
            ".intervals: array",
            ".intervals[]: object",
            ".intervals[].streams: array",
            ".intervals[].streams[]: object",
            ".intervals[].streams[].bytes: number",
            ".start: object",
            ".start.cookie: string",
            ".start.n: number",
            ".start.ok: bool",
            ".start.x: null",
            "JSON document 2:",
            ".a: number",
            "(not JSON from here on:)",
            "trailing N words",
        ]
    );
}

#[test]
fn window_advice_keys_follow_limited_by() {
    let n = Normaliser::plain();
    let shape = |doc: &str| n.normalise(doc, Format::Json);
    let window = shape(
        r#"{"end": {"advice": {"limited_by": "receive_window", "target_bits_per_second": 1.5,
            "suggested_window_bytes": 16384, "suggested_option": "-w 16K"}}}"#,
    );
    let path = shape(r#"{"end": {"advice": {"limited_by": "path"}}}"#);
    assert_eq!(window, path);
    assert!(window.contains(&".end.advice.suggested_option: string exactly when limited_by is a window".to_string()));
    // Keys that break the rule show as they are.
    let wrong = shape(r#"{"end": {"advice": {"limited_by": "path", "suggested_option": "-w 16K"}}}"#);
    assert_ne!(wrong, path);
    assert!(
        wrong.contains(&".end.advice.suggested_option: string".to_string()),
        "{wrong:?}"
    );
    let missing = shape(r#"{"end": {"advice": {"limited_by": "send_buffer"}}}"#);
    assert_ne!(missing, path);
}

#[test]
fn json_streams() {
    let n = Normaliser::plain();
    let s = "{\"event\":\"start\",\"data\":{\"a\":1}}\n\
             {\"event\":\"interval\",\"data\":{\"b\":1}}\n\
             {\"event\":\"interval\",\"data\":{\"b\":null}}\n\
             {\"event\":\"end\",\"data\":{}}\n";
    assert_eq!(
        n.normalise(s, Format::JsonStream),
        vec![
            "Events:",
            "event start",
            "event interval",
            "event end",
            "Event end:",
            ".data: object",
            ".event: string",
            "Event interval:",
            ".data: object",
            ".data.b: null|number",
            ".event: string",
            "Event start:",
            ".data: object",
            ".data.a: number",
            ".event: string",
        ]
    );
}

#[test]
fn flows_regroup() {
    let out = concat!(
        "banner\n[  1] local\n[  2] local\n[ ID] h\n[  1] a\n",
        "[ ID] h2\n[  2] b\n[  1] c\n[  2] d\nx\n[  1] e\ntail\n"
    );
    assert_eq!(
        by_flow(out),
        concat!(
            "banner\n[ ID] h\n[ ID] h2\n[  1] local\n[  1] a\n[  1] c\nx\n[  1] e\n",
            "[  2] local\n[  2] b\n[  2] d\ntail\n"
        )
    );
    // The same flows in another interleaving.
    let other = concat!(
        "banner\n[  2] local\n[  1] local\n[ ID] h2\n[  2] b\n[ ID] h\n",
        "[  1] a\n[  2] d\n[  1] c\nx\n[  1] e\ntail\n"
    );
    assert_eq!(by_flow(other), by_flow(out));
}

#[test]
fn either_ending_of_the_window_needed_line_is_one() {
    let a = "Window needed to let the rate grow Nx: N ?bits/sec x N ms = N ?Bytes -> try -w NK (on both ends; repeat until the test is no longer window-limited).";
    let b = "Window needed to let the rate grow Nx: N ?bits/sec x N ms = N ?Bytes, less than the N ?Bytes window that held the test back, which is too small to keep segments flowing: double it -> try -w NK.";
    let one = "Window needed to let the rate grow Nx: N ?bits/sec x N ms = N ?Bytes -> try -w NK";
    assert_eq!(advice_tail(a), one);
    assert_eq!(advice_tail(b), one);
    assert_eq!(advice_tail("In flight: N"), "In flight: N");
}

#[test]
fn formats_from_arguments() {
    assert_eq!(Format::of("-c h -J"), Format::Json);
    assert_eq!(Format::of("-c h --json-stream"), Format::JsonStream);
    assert_eq!(Format::of("--iperf2 -c h -y C"), Format::Csv);
    assert_eq!(Format::of("-c h -t 2"), Format::Text);
}

#[test]
fn diffs_show_both_sides() {
    let d = diff("a\nb\nc\n", "a\nx\nc\n");
    assert!(d.contains("-b\n") && d.contains("+x\n") && d.contains(" a\n"), "{d}");
}
