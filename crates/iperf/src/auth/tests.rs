//! Tests of the keys, tokens and refusals.

use std::path::{Path, PathBuf};

use aws_lc_rs::digest;
use aws_lc_rs::rsa::PrivateDecryptingKey;

use std::collections::HashMap;

use super::server::{REPLAY_MEMORY, ReplayGuard};
use super::*;
use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der, PublicKeyX509Der};
use aws_lc_rs::rsa::KeySize;
use std::sync::OnceLock;
use wirespeed_proto::iperf3::auth::{base64_encode, hex, salted};

/// One generated 2048-bit key for all tests (PKCS#8 DER, SPKI DER).
fn keypair() -> &'static (Vec<u8>, Vec<u8>) {
    static K: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    K.get_or_init(|| {
        let k = PrivateDecryptingKey::generate(KeySize::Rsa2048).unwrap();
        let p8 = AsDer::<Pkcs8V1Der>::as_der(&k).unwrap().as_ref().to_vec();
        let spki = AsDer::<PublicKeyX509Der>::as_der(&k.public_key())
            .unwrap()
            .as_ref()
            .to_vec();
        (p8, spki)
    })
}

fn pem(label: &str, der: &[u8]) -> String {
    let b = base64_encode(der);
    let body: Vec<&str> = b
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!("-----BEGIN {label}-----\n{}\n-----END {label}-----\n", body.join("\n"))
}

struct Dir(PathBuf);
impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
fn tempdir(tag: &str) -> Dir {
    let d = std::env::temp_dir().join(format!("ws-auth-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Dir(d)
}

fn users_line(user: &str, password: &str) -> String {
    let h = hex(digest::digest(&digest::SHA256, salted(user, password).as_bytes()).as_ref());
    format!("{user},{h}\n")
}

fn server(dir: &Dir, accept_pkcs1: bool) -> ServerAuth {
    let users = dir.0.join("users.csv");
    std::fs::write(&users, format!("# test users\n{}", users_line("mario", "rossi"))).unwrap();
    let key = PrivateKey::from_file_contents(pem("PRIVATE KEY", &keypair().0).as_bytes()).unwrap();
    ServerAuth::new(key, users, 10, accept_pkcs1).unwrap()
}

fn client(password: &str, padding: Padding) -> ClientCredentials {
    let key = PublicKey::from_file_contents(pem("PUBLIC KEY", &keypair().1).as_bytes()).unwrap();
    ClientCredentials::new("mario", password, key, padding).unwrap()
}

#[test]
fn oaep_token_is_accepted_once() {
    let d = tempdir("oaep");
    let s = server(&d, false);
    let t = client("rossi", Padding::Oaep).token(1000).unwrap();
    assert_eq!(t.len(), 344, "base64 of a 2048-bit block");
    assert_eq!(s.check(Some(&t), 1005), Ok(("mario".into(), 1000)));
    assert_eq!(
        s.check(Some(&t), 1005),
        Err(Refusal::Replayed {
            user: "mario".into(),
            ts: 1000
        })
    );
    // A new token for the same test is fine: the padding is random.
    let t2 = client("rossi", Padding::Oaep).token(1000).unwrap();
    assert_ne!(t, t2);
    assert!(s.check(Some(&t2), 1000).is_ok());
}

#[test]
fn pkcs1_tokens_need_the_servers_consent() {
    let d = tempdir("pkcs1");
    let t = client("rossi", Padding::Pkcs1).token(1000).unwrap();
    assert_eq!(server(&d, false).check(Some(&t), 1000), Err(Refusal::Undecryptable));
    let s = server(&d, true);
    assert!(s.check(Some(&t), 1000).is_ok());
    // OAEP still works on a server that also takes PKCS#1.
    let t = client("rossi", Padding::Oaep).token(1000).unwrap();
    assert!(s.check(Some(&t), 1000).is_ok());
}

#[test]
fn wrong_password_unknown_user_and_skew_are_refused() {
    let d = tempdir("refusals");
    let s = server(&d, false);
    let wrong = client("luigi", Padding::Oaep).token(1000).unwrap();
    assert_eq!(
        s.check(Some(&wrong), 1000),
        Err(Refusal::WrongPassword {
            user: "mario".into(),
            ts: 1000
        })
    );
    let key = PublicKey::from_file_contents(pem("PUBLIC KEY", &keypair().1).as_bytes()).unwrap();
    let peach = ClientCredentials::new("peach", "rossi", key, Padding::Oaep)
        .unwrap()
        .token(1000)
        .unwrap();
    assert!(matches!(s.check(Some(&peach), 1000), Err(Refusal::UnknownUser { .. })));
    let old = client("rossi", Padding::Oaep).token(1000).unwrap();
    assert!(matches!(s.check(Some(&old), 1011), Err(Refusal::Skew { ts: 1000, .. })));
    let future = client("rossi", Padding::Oaep).token(1000).unwrap();
    assert!(matches!(s.check(Some(&future), 989), Err(Refusal::Skew { .. })));
    assert_eq!(s.check(None, 1000), Err(Refusal::NoToken));
}

#[test]
fn hostile_tokens_are_refused_without_panicking() {
    let d = tempdir("hostile");
    for accept_pkcs1 in [false, true] {
        let s = server(&d, accept_pkcs1);
        let huge = "A".repeat(1 << 20);
        for t in [
            "",
            "not base64!",
            huge.as_str(),
            "AAAA",
            &base64_encode(&[0u8; 256]),
            &base64_encode(&[0xffu8; 256]),
            &base64_encode(&[7u8; 255]),
        ] {
            let r = s.check(Some(t), 1000);
            assert!(
                matches!(r, Err(Refusal::Malformed | Refusal::Undecryptable)),
                "{accept_pkcs1} {:?}: {r:?}",
                &t[..t.len().min(20)]
            );
        }
    }
}

#[test]
fn users_file_read_error_is_a_refusal() {
    let d = tempdir("nofile");
    let s = server(&d, false);
    std::fs::remove_file(d.0.join("users.csv")).unwrap();
    let t = client("rossi", Padding::Oaep).token(1000).unwrap();
    assert!(matches!(s.check(Some(&t), 1000), Err(Refusal::UsersFile { .. })));
    assert_eq!(
        check_users_file(&d.0.join("users.csv")).unwrap_err().code,
        Code::SERVERAUTHUSERS
    );
}

#[test]
fn key_files_in_every_shape_openssl_writes_load() {
    let (p8, spki) = keypair();
    assert!(PrivateKey::from_file_contents(pem("PRIVATE KEY", p8).as_bytes()).is_ok());
    assert!(PrivateKey::from_file_contents(p8).is_ok(), "PKCS#8 DER");
    assert!(PublicKey::from_file_contents(pem("PUBLIC KEY", spki).as_bytes()).is_ok());
    assert!(PublicKey::from_file_contents(spki).is_ok(), "SPKI DER");
    // PKCS#1 forms are the inner parts of the PKCS#8 / SPKI wrappers.
    let p1 = &p8[26..];
    assert_eq!(pem::pkcs1_private_to_pkcs8(p1), *p8);
    assert!(PrivateKey::from_file_contents(pem("RSA PRIVATE KEY", p1).as_bytes()).is_ok());
    let rsa_pub = &spki[24..];
    assert_eq!(pem::pkcs1_public_to_spki(rsa_pub), *spki);
    assert_eq!(
        PublicKey::from_file_contents(pem("RSA PUBLIC KEY", rsa_pub).as_bytes())
            .unwrap()
            .bits(),
        2048
    );
}

#[test]
fn key_loading_errors_say_what_is_wrong() {
    let (p8, spki) = keypair();
    let err = |r: Result<PrivateKey, String>| r.err().unwrap();
    assert!(
        err(PrivateKey::from_file_contents(
            pem("ENCRYPTED PRIVATE KEY", p8).as_bytes()
        ))
        .contains("password-protected")
    );
    let traditional = pem("RSA PRIVATE KEY", &p8[26..]).replace(
        "-----BEGIN RSA PRIVATE KEY-----\n",
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0011\n\n",
    );
    assert!(err(PrivateKey::from_file_contents(traditional.as_bytes())).contains("password-protected"));
    assert!(err(PrivateKey::from_file_contents(pem("PUBLIC KEY", spki).as_bytes())).contains("no PEM private key"));
    assert!(err(PrivateKey::from_file_contents(b"hello")).contains("not a valid RSA key"));
    let pub_err = |r: Result<PublicKey, String>| r.err().unwrap();
    assert!(pub_err(PublicKey::from_file_contents(pem("PRIVATE KEY", p8).as_bytes())).contains("holds a private key"));
    assert!(pub_err(PublicKey::from_file_contents(b"")).contains("not a valid RSA key"));
    let e = PublicKey::load(Path::new("/nonexistent/ws.pem")).err().unwrap();
    assert_eq!(e.code, Code::SETCLIENTAUTH);
    assert!(e.text().contains("No such file or directory"), "{}", e.text());
    let e = PrivateKey::load(Path::new("/nonexistent/ws.pem")).err().unwrap();
    assert_eq!(e.code, Code::SETSERVERAUTH);
}

#[test]
fn credentials_that_cannot_travel_are_refused() {
    let key = || PublicKey::from_file_contents(pem("PUBLIC KEY", &keypair().1).as_bytes()).unwrap();
    let e = |u: &str, p: &str| ClientCredentials::new(u, p, key(), Padding::Oaep).err().unwrap().text();
    assert!(e("ma rio", "x").contains("user name has white space"));
    assert!(e("mario", "").contains("password is empty"));
    assert!(e("mario", "a b").contains("password has white space"));
    assert!(e("mario", &"x".repeat(200)).contains("too long for a 2048-bit RSA key"));
    // PKCS#1 carries a little more than OAEP.
    let p = "x".repeat(180);
    assert!(ClientCredentials::new("mario", &p, key(), Padding::Oaep).is_err());
    assert!(ClientCredentials::new("mario", &p, key(), Padding::Pkcs1).is_ok());
}

#[test]
fn refusals_log_user_names_without_control_characters() {
    let r = Refusal::WrongPassword {
        user: "ma\x1b[2Jrio".into(),
        ts: 7,
    };
    assert_eq!(
        r.to_string(),
        "Authentication failed for user 'ma?[2Jrio' ts 7: wrong password"
    );
}

#[test]
fn replay_memory_is_bounded() {
    let mut g = ReplayGuard { seen: HashMap::new() };
    for i in 0..REPLAY_MEMORY + 10 {
        let mut id = [0u8; 32];
        id[..8].copy_from_slice(&(i as u64).to_le_bytes());
        assert!(g.first_use(id, 100 + i as i64, 50));
    }
    assert_eq!(g.seen.len(), REPLAY_MEMORY);
    let mut last = [0u8; 32];
    last[..8].copy_from_slice(&((REPLAY_MEMORY + 9) as u64).to_le_bytes());
    assert!(!g.first_use(last, 0, 50));
}
