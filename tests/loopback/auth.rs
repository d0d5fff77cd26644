//! Authentication, iperf3's way: RSA keys made here with `openssl`, a users
//! file of `user,sha256("{user}password")` lines (hashed with `sha256sum`),
//! wirespeed both ends, and the real iperf3 3.12 on either end (3.12 pads
//! its tokens with PKCS#1 v1.5, hence `--use-pkcs1-padding` on our side).

use crate::common;
use crate::common::login;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Proc, Ran, free_port, iperf3_server, json, peer, run, wait_listening, wirespeed, wirespeed_server};
use wirespeed::auth::{ClientCredentials, Padding, PublicKey, unix_now};

const T: Duration = Duration::from_secs(60);

/// A key pair and a users file in a directory of their own, removed when
/// dropped.
struct Keys {
    dir: PathBuf,
}

impl Drop for Keys {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn tool(name: &str, args: &[&str], stdin: Option<&str>) -> String {
    login::tool(name, args, stdin.unwrap_or(""))
}

/// `sha256sum` of `{user}password`: the reference for the users file.
fn users_hash(user: &str, password: &str) -> String {
    let out = tool("sha256sum", &[], Some(&format!("{{{user}}}{password}")));
    out.split_whitespace().next().unwrap().to_string()
}

impl Keys {
    /// A 2048-bit key pair (PKCS#8 `private.pem`, PKCS#1 `private-rsa.pem`,
    /// `public.pem`) and `users.csv` with mario/rossi and luigi/verdi.
    fn new(tag: &str) -> Keys {
        let dir = std::env::temp_dir().join(format!("ws-auth-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let k = Keys { dir };
        let p = |f: &str| k.path(f);
        tool("openssl", &["genrsa", "-out", &p("private.pem"), "2048"], None);
        tool(
            "openssl",
            &[
                "rsa",
                "-in",
                &p("private.pem"),
                "-traditional",
                "-out",
                &p("private-rsa.pem"),
            ],
            None,
        );
        tool(
            "openssl",
            &["rsa", "-in", &p("private.pem"), "-pubout", "-out", &p("public.pem")],
            None,
        );
        std::fs::write(
            k.dir.join("users.csv"),
            format!(
                "# authorized users\n\nmario,{}\r\nluigi,{}\n",
                users_hash("mario", "rossi"),
                users_hash("luigi", "verdi")
            ),
        )
        .unwrap();
        k
    }

    fn path(&self, f: &str) -> String {
        self.dir.join(f).to_str().unwrap().to_string()
    }

    /// Server options requiring authentication (with the PKCS#8 key, or
    /// the PKCS#1 one).
    fn server_args(&self, pkcs1_key_file: bool) -> Vec<String> {
        let key = if pkcs1_key_file {
            "private-rsa.pem"
        } else {
            "private.pem"
        };
        vec![
            "--rsa-private-key-path".into(),
            self.path(key),
            "--authorized-users-path".into(),
            self.path("users.csv"),
        ]
    }

    fn client_args(&self, user: &str) -> Vec<String> {
        vec![
            "--username".into(),
            user.into(),
            "--rsa-public-key-path".into(),
            self.path("public.pem"),
        ]
    }

    /// An `authtoken` made by our library for `ts`.
    fn token(&self, user: &str, password: &str, ts: i64) -> String {
        let key = PublicKey::load(Path::new(&self.path("public.pem"))).unwrap();
        ClientCredentials::new(user, password, key, Padding::Oaep)
            .unwrap()
            .token(ts)
            .unwrap()
    }
}

/// Runs `prog args` with `IPERF3_PASSWORD` set to `password`, or unset.
fn with_password(prog: &Path, password: Option<&str>, args: &[String]) -> Ran {
    let env = PathBuf::from("/usr/bin/env");
    let pw = password.map(|p| format!("IPERF3_PASSWORD={p}"));
    let mut a: Vec<&str> = match &pw {
        Some(p) => vec![p.as_str()],
        None => vec!["-u", "IPERF3_PASSWORD"],
    };
    a.push(prog.to_str().unwrap());
    a.extend(args.iter().map(String::as_str));
    run(&env, &a, T)
}

fn client_args(port: u16, keys: &Keys, user: &str, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = vec!["-c".into(), "127.0.0.1".into(), "-p".into(), port.to_string()];
    a.extend(["-t".into(), "1".into()]);
    a.extend(keys.client_args(user));
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn ws_client(port: u16, keys: &Keys, user: &str, password: Option<&str>, extra: &[&str]) -> Ran {
    with_password(&wirespeed(), password, &client_args(port, keys, user, extra))
}

fn ws_server(keys: &Keys, extra: &[&str]) -> (u16, Proc) {
    let port = free_port();
    let mut a: Vec<String> = keys.server_args(false);
    a.extend(extra.iter().map(|s| s.to_string()));
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    (port, wirespeed_server(port, &a))
}

fn assert_refused(r: &Ran, who: &str) {
    assert_eq!(r.code, Some(1), "{who}: {}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("test authorization failed"),
        "{who}: {}{}",
        r.stdout,
        r.stderr
    );
    assert!(!r.stdout.contains("iperf Done."), "{who}: {}", r.stdout);
}

fn assert_ran(r: &Ran, who: &str) {
    assert_eq!(r.code, Some(0), "{who}: {}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains(" receiver\n"), "{who}: {}", r.stdout);
}

#[test]
fn our_client_authenticates_to_our_server_with_oaep() {
    let keys = Keys::new("oaep");
    let (port, srv) = ws_server(&keys, &[]);
    assert_ran(&ws_client(port, &keys, "mario", Some("rossi"), &[]), "mario");
    assert_ran(&ws_client(port, &keys, "luigi", Some("verdi"), &["-R"]), "luigi");
    let out = common::stop_server(srv);
    assert_eq!(out.matches("Accepted connection").count(), 2, "{out}");
}

#[test]
fn a_server_without_authentication_ignores_credentials() {
    let keys = Keys::new("ignored");
    let port = free_port();
    let _srv = wirespeed_server(port, &[]);
    assert_ran(
        &ws_client(port, &keys, "mario", Some("anything"), &[]),
        "to a plain server",
    );
}

#[test]
fn pkcs1_padding_is_accepted_only_by_a_server_that_allows_it() {
    let keys = Keys::new("pkcs1");
    let (port, _srv) = ws_server(&keys, &[]);
    let r = ws_client(port, &keys, "mario", Some("rossi"), &["--use-pkcs1-padding"]);
    assert_refused(&r, "PKCS#1 token, OAEP-only server");

    // The PKCS#1 ("BEGIN RSA PRIVATE KEY") key file, and both paddings.
    let port = free_port();
    let mut a = keys.server_args(true);
    a.push("--use-pkcs1-padding".into());
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let _srv = wirespeed_server(port, &a);
    assert_ran(
        &ws_client(port, &keys, "mario", Some("rossi"), &["--use-pkcs1-padding"]),
        "PKCS#1",
    );
    assert_ran(&ws_client(port, &keys, "mario", Some("rossi"), &[]), "OAEP");
}

#[test]
fn wrong_password_and_unknown_user_are_refused_and_the_server_keeps_serving() {
    let keys = Keys::new("wrong");
    let (port, srv) = ws_server(&keys, &["-1"]);
    assert_refused(&ws_client(port, &keys, "mario", Some("verdi"), &[]), "wrong password");
    assert_refused(&ws_client(port, &keys, "peach", Some("rossi"), &[]), "unknown user");
    // Refusals do not count for -1: this test is the one it serves.
    assert_ran(&ws_client(port, &keys, "mario", Some("rossi"), &[]), "after refusals");
    let mut srv = srv;
    assert!(
        srv.wait(Duration::from_secs(10)).is_some(),
        "-1 server exits after its test"
    );
    let err = srv.err();
    assert_eq!(err.matches("error - test authorization failed").count(), 2, "{err}");
    assert!(
        !err.contains("rossi") && !err.contains("verdi"),
        "no password in the log: {err}"
    );
}

#[test]
fn a_client_without_credentials_is_refused_by_a_server_that_requires_them() {
    let keys = Keys::new("none");
    let (port, _srv) = ws_server(&keys, &[]);
    let p = port.to_string();
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "1"], T);
    assert_refused(&r, "no token");
    let r = run(&wirespeed(), &["-c", "127.0.0.1", "-p", &p, "-t", "1", "-J"], T);
    assert_eq!(r.code, Some(1));
    let v = json(&r.stdout);
    assert!(
        v["error"].as_str().unwrap().contains("test authorization failed"),
        "{}",
        r.stdout
    );
}

#[test]
fn auth_failure_with_json_is_one_document_with_error() {
    let keys = Keys::new("json");
    let (port, _srv) = ws_server(&keys, &[]);
    let r = ws_client(port, &keys, "mario", Some("nope"), &["-J"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let v = json(&r.stdout);
    assert!(
        v["error"].as_str().unwrap().contains("test authorization failed"),
        "{v}"
    );
    assert!(r.stderr.is_empty(), "{}", r.stderr);
}

/// A hand-made control connection: cookie, then the parameters with
/// `authtoken`; returns the server's answer: Ok(state byte) or the
/// SERVER_ERROR code.
fn raw_params(port: u16, token: Option<&str>) -> Result<u8, i32> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    // A cookie of its own: a server refuses one that a running test has.
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut x = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed) ^ (u64::from(std::process::id()) << 20);
    let cookie: String = (0..36)
        .map(|_| {
            let c = b"abcdefghijklmnopqrstuvwxyz234567"[(x % 32) as usize] as char;
            x = x / 32 + 7919;
            c
        })
        .collect();
    s.write_all(cookie.as_bytes()).unwrap();
    s.write_all(&[0]).unwrap();
    let mut b = [0u8; 1];
    s.read_exact(&mut b).unwrap();
    assert_eq!(b[0], 9, "PARAM_EXCHANGE");
    let mut m = serde_json::Map::new();
    m.insert("tcp".into(), true.into());
    for (k, v) in [
        ("omit", 0),
        ("time", 1),
        ("num", 0),
        ("blockcount", 0),
        ("parallel", 1),
        ("len", 131072),
    ] {
        m.insert(k.into(), v.into());
    }
    if let Some(t) = token {
        m.insert("authtoken".into(), t.into());
    }
    m.insert("client_version".into(), "auth-test".into());
    let body = serde_json::Value::Object(m).to_string();
    s.write_all(&(body.len() as u32).to_be_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    s.read_exact(&mut b).unwrap();
    if b[0] != 0xfe {
        return Ok(b[0]);
    }
    let mut code = [0u8; 4];
    s.read_exact(&mut code).unwrap();
    Err(i32::from_be_bytes(code))
}

const CREATE_STREAMS: u8 = 10;
const IEAUTHTEST: i32 = 142;

#[test]
fn tokens_outside_the_time_skew_are_refused() {
    let keys = Keys::new("skew");
    let (port, _srv) = ws_server(&keys, &["--time-skew-threshold", "30"]);
    let now = unix_now();
    assert_eq!(
        raw_params(port, Some(&keys.token("mario", "rossi", now - 60))),
        Err(IEAUTHTEST)
    );
    assert_eq!(
        raw_params(port, Some(&keys.token("mario", "rossi", now + 60))),
        Err(IEAUTHTEST)
    );
    assert_eq!(
        raw_params(port, Some(&keys.token("mario", "rossi", now - 20))),
        Ok(CREATE_STREAMS)
    );
    // The default threshold is 10 s.
    let (port, _srv) = ws_server(&keys, &[]);
    assert_eq!(
        raw_params(port, Some(&keys.token("mario", "rossi", now - 25))),
        Err(IEAUTHTEST)
    );
}

#[test]
fn a_replayed_token_is_refused() {
    let keys = Keys::new("replay");
    let (port, _srv) = ws_server(&keys, &[]);
    let t = keys.token("mario", "rossi", unix_now());
    assert_eq!(raw_params(port, Some(&t)), Ok(CREATE_STREAMS));
    assert_eq!(raw_params(port, Some(&t)), Err(IEAUTHTEST));
}

#[test]
fn hostile_tokens_get_the_same_refusal() {
    let keys = Keys::new("hostile");
    let (port, _srv) = ws_server(&keys, &["--use-pkcs1-padding"]);
    let long = "QUFB".repeat(1500);
    for t in [None, Some(""), Some("!!!"), Some("QUFB"), Some(long.as_str())] {
        assert_eq!(
            raw_params(port, t),
            Err(IEAUTHTEST),
            "{:?}",
            t.map(|t| &t[..t.len().min(8)])
        );
    }
    let ok = keys.token("mario", "rossi", unix_now());
    assert_eq!(raw_params(port, Some(&ok)), Ok(CREATE_STREAMS), "still serving");
}

#[test]
fn a_client_with_no_password_and_no_terminal_says_so() {
    let keys = Keys::new("notty");
    // setsid: a new session, without a controlling terminal.
    let setsid = PathBuf::from("/usr/bin/setsid");
    let mut a = vec![wirespeed().to_str().unwrap().to_string()];
    a.extend(client_args(free_port(), &keys, "mario", &[]));
    let r = with_password(&setsid, None, &a);
    assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .starts_with("wirespeed: parameter error - no password: set IPERF3_PASSWORD"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    a.push("-J".into());
    let r = with_password(&setsid, None, &a);
    assert_eq!(r.code, Some(1));
    assert!(json(&r.stdout)["error"].as_str().unwrap().contains("IPERF3_PASSWORD"));
}

#[test]
fn the_password_is_asked_on_the_terminal_with_echo_off() {
    let script = PathBuf::from("/usr/bin/script");
    if !script.exists() {
        eprintln!("NOTICE: script(1) not installed; skipping the terminal test");
        return;
    }
    let keys = Keys::new("prompt");
    let (port, _srv) = ws_server(&keys, &[]);
    let cmd = format!(
        "env -u IPERF3_PASSWORD {} {}",
        wirespeed().display(),
        client_args(port, &keys, "mario", &[]).join(" ")
    );
    // script(1) runs the client on a pseudo-terminal fed from our pipe.
    /// Kills (by pid) and reaps the child on every way out of the test.
    struct Reaped(std::process::Child);
    impl Drop for Reaped {
        fn drop(&mut self) {
            if let Ok(None) = self.0.try_wait() {
                let _ = self.0.kill();
            }
            let _ = self.0.wait();
        }
    }
    let mut child = Reaped(
        Command::new(&script)
            .args(["-qefc", &cmd, "/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut out = child.0.stdout.take().unwrap();
    let s2 = seen.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = out.read(&mut buf) {
            if n == 0 {
                break;
            }
            s2.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let text = || String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
    common::wait::text("the password prompt", T, text, |t| t.contains("Password: "));
    // Echo is off once the prompt shows (input typed before would be flushed).
    let mut stdin = child.0.stdin.take().unwrap();
    stdin.write_all(b"rossi\n").unwrap();
    let status = common::wait::within(T, || child.0.try_wait().unwrap());
    drop(stdin);
    drop(child);
    let _ = reader.join();
    let all = text();
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{all:?}");
    assert!(all.contains(" receiver"), "{all:?}");
    assert!(!all.contains("rossi"), "the password was echoed: {all:?}");
}

#[test]
fn key_and_users_file_problems_are_parameter_errors() {
    let keys = Keys::new("files");
    let ws = |args: &[String]| with_password(&wirespeed(), Some("rossi"), args);
    let err_of = |r: &Ran| {
        assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "one line: {}", r.stderr);
        r.stderr.clone()
    };
    let server = |key: &str, users: &str, extra: &[&str]| {
        let mut a: Vec<String> = vec!["-s".into(), "-p".into(), free_port().to_string()];
        a.extend(["--rsa-private-key-path".into(), key.into()]);
        a.extend(["--authorized-users-path".into(), users.into()]);
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let users = keys.path("users.csv");
    let e = err_of(&ws(&server("/nonexistent/key.pem", &users, &[])));
    assert!(
        e.contains("parameter error - cannot read RSA private key /nonexistent/key.pem: No such file"),
        "{e}"
    );
    tool(
        "openssl",
        &[
            "rsa",
            "-in",
            &keys.path("private.pem"),
            "-aes128",
            "-passout",
            "pass:x",
            "-out",
            &keys.path("enc.pem"),
        ],
        None,
    );
    let e = err_of(&ws(&server(&keys.path("enc.pem"), &users, &[])));
    assert!(e.contains("password-protected"), "{e}");
    tool("openssl", &["genrsa", "-out", &keys.path("small.pem"), "1024"], None);
    let e = err_of(&ws(&server(&keys.path("small.pem"), &users, &[])));
    assert!(e.contains("smaller than 2048 bits"), "{e}");
    let e = err_of(&ws(&server(&keys.path("public.pem"), &users, &[])));
    assert!(e.contains("no PEM private key"), "{e}");
    let e = err_of(&ws(&server(&keys.path("private.pem"), "/nonexistent/users", &[])));
    assert!(
        e.contains("cannot access authorized users file /nonexistent/users"),
        "{e}"
    );

    let client = |key: &str, extra: &[&str]| {
        let mut a: Vec<String> = [
            "-c",
            "127.0.0.1",
            "-p",
            "9",
            "--username",
            "mario",
            "--rsa-public-key-path",
            key,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let e = err_of(&ws(&client(&keys.path("private.pem"), &[])));
    assert!(e.contains("holds a private key"), "{e}");
    let e = err_of(&ws(&client("/nonexistent/pub.pem", &[])));
    assert!(e.contains("cannot read RSA public key"), "{e}");
    let r = ws(&client("/nonexistent/pub.pem", &["-J"]));
    assert_eq!(r.code, Some(1));
    assert!(
        json(&r.stdout)["error"]
            .as_str()
            .unwrap()
            .contains("cannot read RSA public key")
    );

    // Options that only mean something with authentication need it.
    let e = err_of(&ws(&["-c".into(), "h".into(), "--use-pkcs1-padding".into()]));
    assert!(e.contains("--use-pkcs1-padding needs authentication"), "{e}");
    let e = err_of(&ws(&["-s".into(), "--time-skew-threshold".into(), "5".into()]));
    assert!(e.contains("--time-skew-threshold needs authentication"), "{e}");
    let e = err_of(&ws(&server(
        &keys.path("private.pem"),
        &users,
        &["--time-skew-threshold", "0"],
    )));
    assert!(e.contains("skew threshold must be a positive number"), "{e}");
    let e = err_of(&ws(&["-c".into(), "h".into(), "--username".into(), "mario".into()]));
    assert!(
        e.contains("you must specify a username, password, and path to a valid RSA public key"),
        "{e}"
    );
}

/// Waits until a real iperf3 server announces its next test (3.12 closes
/// and reopens its listener between tests; a client that connects in
/// between is reset).
fn wait_next_test(srv: &Proc, n: usize) {
    common::wait::stdout_has(srv, &format!("(test #{n})"), Duration::from_secs(20));
}

#[test]
fn iperf3_client_authenticates_to_our_server() {
    let Some(iperf3) = peer("iperf3") else { return };
    let keys = Keys::new("iperf3-client");
    let port = free_port();
    let mut a = keys.server_args(false);
    a.push("--use-pkcs1-padding".into());
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let srv = wirespeed_server(port, &a);
    let args = client_args(port, &keys, "mario", &[]);
    assert_ran(&with_password(&iperf3, Some("rossi"), &args), "iperf3, right password");
    let r = with_password(&iperf3, Some("wrong"), &args);
    assert_refused(&r, "iperf3, wrong password");
    assert!(
        r.stderr.contains("iperf3: error - test authorization failed"),
        "{}",
        r.stderr
    );
    let r = with_password(&iperf3, Some("rossi"), &client_args(port, &keys, "peach", &[]));
    assert_refused(&r, "iperf3, unknown user");
    drop(srv);

    // Without --use-pkcs1-padding our server takes only OAEP, which 3.12 does not send.
    let (port, _srv) = ws_server(&keys, &[]);
    let r = with_password(&iperf3, Some("rossi"), &client_args(port, &keys, "mario", &[]));
    assert_refused(&r, "iperf3 PKCS#1 token, OAEP-only server");
}

#[test]
fn our_client_authenticates_to_iperf3_server() {
    let Some(iperf3) = peer("iperf3") else { return };
    let keys = Keys::new("iperf3-server");
    let port = free_port();
    let a = keys.server_args(true);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let srv = iperf3_server(&iperf3, port, &a);
    wait_listening(port);
    wait_next_test(&srv, 1);
    let pkcs1 = ["--use-pkcs1-padding"];
    assert_ran(
        &ws_client(port, &keys, "mario", Some("rossi"), &pkcs1),
        "right password",
    );
    wait_next_test(&srv, 2);
    assert_refused(
        &ws_client(port, &keys, "mario", Some("wrong"), &pkcs1),
        "wrong password",
    );
    wait_next_test(&srv, 3);
    assert_refused(&ws_client(port, &keys, "peach", Some("rossi"), &pkcs1), "unknown user");
    wait_next_test(&srv, 4);
    // 3.12 cannot decrypt OAEP: our default needs a 3.17+ server.
    assert_refused(&ws_client(port, &keys, "mario", Some("rossi"), &[]), "OAEP to 3.12");
    wait_next_test(&srv, 5);
    let r = ws_client(
        port,
        &keys,
        "luigi",
        Some("verdi"),
        &["--use-pkcs1-padding", "-R", "-J"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(json(&r.stdout)["end"]["sum_received"]["bytes"].as_u64().unwrap() > 0);
}
