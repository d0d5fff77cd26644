//! iperf3 RSA login material made the way perfSONAR's pScheduler makes it
//! for every two-participant throughput run (its iperf3 tool's
//! `participant-data`): a 2048-bit key whose private half is a PKCS#1 PEM
//! (`BEGIN RSA PRIVATE KEY`) and public half an SPKI PEM, a 20-character
//! alphanumeric user, a 20-character password with punctuation, and a
//! users file of one `user,sha256hex("{user}password")` line. Made with
//! `openssl` and `sha256sum`, in a directory removed when dropped.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

pub struct Login {
    pub dir: PathBuf,
    pub user: String,
    pub password: String,
}

impl Drop for Login {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs a tool with `stdin`; its stdout (panics if it fails).
pub fn tool(name: &str, args: &[&str], stdin: &str) -> String {
    let mut c = Command::new(name)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut input = c.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    let o = c.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "{name} {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

impl Login {
    /// Fresh material under a directory named by `tag`.
    pub fn new(tag: &str) -> Login {
        let dir = std::env::temp_dir().join(format!("ws-login-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // Distinct per run, and the punctuation pScheduler's passwords
        // may hold (a comma, quotes, a backslash, braces, a percent).
        let salt = std::process::id() % 100_000;
        let login = Login {
            dir,
            user: format!("psUser{salt:05}abcdefghi"),
            password: format!("p,\"w'{{\\}}%{salt:05}Zq!"),
        };
        assert_eq!(login.user.len(), 20);
        let p = |f: &str| login.path(f);
        tool(
            "openssl",
            &["genrsa", "-traditional", "-out", &p("private-key"), "2048"],
            "",
        );
        tool(
            "openssl",
            &["rsa", "-in", &p("private-key"), "-pubout", "-out", &p("public-key")],
            "",
        );
        assert!(
            std::fs::read_to_string(p("private-key"))
                .unwrap()
                .starts_with("-----BEGIN RSA PRIVATE KEY-----")
        );
        let hash = tool("sha256sum", &[], &format!("{{{}}}{}", login.user, login.password));
        let hash = hash.split_whitespace().next().unwrap();
        std::fs::write(p("credentials"), format!("{},{hash}\n", login.user)).unwrap();
        login
    }

    pub fn path(&self, f: &str) -> String {
        self.dir.join(f).to_str().unwrap().to_string()
    }

    /// The server's options, in pScheduler's order.
    pub fn server_args(&self) -> Vec<String> {
        vec![
            "--authorized-users-path".into(),
            self.path("credentials"),
            "--rsa-private-key-path".into(),
            self.path("private-key"),
        ]
    }

    /// The client's options, in pScheduler's order.
    pub fn client_args(&self) -> Vec<String> {
        vec![
            "--rsa-public-key-path".into(),
            self.path("public-key"),
            "--username".into(),
            self.user.clone(),
        ]
    }
}
