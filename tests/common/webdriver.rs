//! A small WebDriver client for the UI tests: Debian's `chromedriver`
//! drives a headless `chromium`. Each request is one HTTP/1.1 exchange on
//! loopback with a deadline; the driver is a bounded child ended by pid,
//! and the browser session is closed when dropped.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Proc, free_port, wait_listening};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// The browser and its driver, or `None` with a visible notice. With
/// `WIRESPEED_REQUIRE_BROWSER=1` (CI) a missing browser fails the test.
pub fn tools() -> Option<(PathBuf, PathBuf)> {
    let find = |names: &[&str]| {
        names.iter().find_map(|n| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|d| d.join(n))
                .find(|p| p.is_file())
        })
    };
    let found = find(&["chromedriver"]).zip(find(&["chromium", "chromium-browser", "google-chrome"]));
    if found.is_none() {
        if std::env::var("WIRESPEED_REQUIRE_BROWSER").as_deref() == Ok("1") {
            panic!("chromium and chromedriver are required (WIRESPEED_REQUIRE_BROWSER=1)");
        }
        eprintln!("NOTICE: chromium/chromedriver not installed; skipping the browser test");
    }
    found
}

/// One HTTP exchange; (status, body).
pub fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    try_http(port, method, path, headers, body).unwrap_or_else(|| panic!("no answer from port {port}"))
}

/// One HTTP exchange, `None` when the connection fails.
pub fn try_http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).ok()?;
    // Read the head, then as much body as it announces (a driver may
    // keep the connection open).
    let mut raw = Vec::new();
    let mut chunk = [0u8; 65536];
    let head_end = loop {
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    let chunked = head.contains("transfer-encoding: chunked");
    loop {
        let have = raw.len() - head_end;
        let done = match length {
            Some(n) => have >= n,
            None if chunked => raw[head_end..].windows(5).any(|w| w == b"0\r\n\r\n"),
            None => false,
        };
        if done {
            break;
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
        }
    }
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = String::from_utf8_lossy(&raw[head_end..]).into_owned();
    let body = if chunked { dechunk(&body) } else { body };
    Some((status, body))
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Decodes standard base64 (screenshots).
pub fn base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for v in s.bytes().filter_map(val) {
        acc = acc << 6 | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// A browser session.
pub struct Browser {
    driver: Proc,
    port: u16,
    session: String,
    profile: PathBuf,
}

impl Browser {
    /// Starts chromedriver and a headless chromium.
    pub fn start(driver: &PathBuf, chromium: &PathBuf) -> Browser {
        let port = free_port();
        let p = format!("--port={port}");
        let proc_ = Proc::spawn(driver, &[&p]);
        wait_listening(port);
        let profile = std::env::temp_dir().join(format!("ws-ui-chromium-{}-{port}", std::process::id()));
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1400,1200", format!("--user-data-dir={}", profile.display())]
            }
        }}});
        let (status, body) = http(
            port,
            "POST",
            "/session",
            &[("Content-Type", "application/json")],
            &caps.to_string(),
        );
        let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let session = v["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no browser session ({status}): {body}"))
            .to_string();
        Browser {
            driver: proc_,
            port,
            session,
            profile,
        }
    }

    fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let path = format!("/session/{}{path}", self.session);
        let body = if method == "GET" {
            String::new()
        } else {
            body.to_string()
        };
        let (status, text) = http(self.port, method, &path, &[("Content-Type", "application/json")], &body);
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        assert!(status == 200, "webdriver {method} {path}: {status} {text}");
        v["value"].clone()
    }

    /// Opens `url`.
    pub fn go(&self, url: &str) {
        self.call("POST", "/url", json!({ "url": url }));
    }

    /// The element `css` selects.
    pub fn find(&self, css: &str) -> String {
        let v = self.call("POST", "/element", json!({"using": "css selector", "value": css}));
        v[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}"))
            .to_string()
    }

    /// Replaces the text of the input `css` by `text` (typed).
    pub fn fill(&self, css: &str, text: &str) {
        let e = self.find(css);
        self.call("POST", &format!("/element/{e}/clear"), json!({}));
        self.call("POST", &format!("/element/{e}/value"), json!({ "text": text }));
    }

    /// Clicks the element `css`.
    pub fn click(&self, css: &str) {
        let e = self.find(css);
        self.call("POST", &format!("/element/{e}/click"), json!({}));
    }

    /// Runs `script` in the page; its return value.
    pub fn eval(&self, script: &str) -> Value {
        self.call("POST", "/execute/sync", json!({"script": script, "args": []}))
    }

    /// Runs `script`, which calls `done(value)` (its last argument) when
    /// finished.
    pub fn eval_async(&self, script: &str) -> Value {
        let wrapped = format!("const done = arguments[arguments.length - 1]; {script}");
        self.call("POST", "/execute/async", json!({"script": wrapped, "args": []}))
    }

    /// Polls `script` until it returns something truthy, or panics after
    /// `timeout`.
    pub fn wait_for(&self, script: &str, timeout: Duration) -> Value {
        super::wait::until(format_args!("the page: {script}"), timeout, || {
            let v = self.eval(script);
            (!(v.is_null() || v == json!(false) || v == json!("") || v == json!(0))).then_some(v)
        })
    }

    /// Saves a screenshot of the page to `path` (PNG).
    pub fn screenshot(&self, path: &std::path::Path) {
        let v = self.call("GET", "/screenshot", Value::Null);
        let png = base64(v.as_str().expect("screenshot data"));
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let path = format!("/session/{}", self.session);
        let _ = try_http(self.port, "DELETE", &path, &[], "");
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}
