//! The few PEM and DER shapes RSA key files come in, as `openssl` writes
//! them: `PUBLIC KEY` (SubjectPublicKeyInfo), `RSA PUBLIC KEY` (PKCS#1),
//! `PRIVATE KEY` (PKCS#8), `RSA PRIVATE KEY` (PKCS#1, "traditional"), and
//! the password-protected forms, which are recognised so they can be
//! refused by name.
// The PEM helpers serve the keys of the `rsa` feature.
#![cfg_attr(not(feature = "rsa"), allow(dead_code))]

use wirespeed_proto::iperf3::auth::base64_decode;

/// One `-----BEGIN X-----` ... `-----END X-----` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The `X`.
    pub label: String,
    /// RFC 1421 headers say the body is encrypted (`Proc-Type: 4,ENCRYPTED`).
    pub encrypted: bool,
    /// The decoded body; `None` if it is not valid base64.
    pub der: Option<Vec<u8>>,
}

/// The PEM blocks of `text`, in order. Text outside blocks is ignored (as
/// OpenSSL ignores it); a block without its END line is dropped.
pub fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(label) = line
            .trim()
            .strip_prefix("-----BEGIN ")
            .and_then(|l| l.strip_suffix("-----"))
        else {
            continue;
        };
        let end = format!("-----END {label}-----");
        let mut body = String::new();
        let mut encrypted = false;
        let mut closed = false;
        for l in lines.by_ref() {
            let l = l.trim();
            if l == end {
                closed = true;
                break;
            }
            if let Some((name, value)) = l.split_once(':') {
                if name.eq_ignore_ascii_case("Proc-Type") && value.contains("ENCRYPTED") {
                    encrypted = true;
                }
                continue;
            }
            body.push_str(l);
        }
        if closed {
            out.push(Block {
                label: label.to_string(),
                encrypted,
                der: base64_decode(&body),
            });
        }
    }
    out
}

/// DER length octets.
fn der_len(n: usize, out: &mut Vec<u8>) {
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes = n.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
}

fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(content.len() + 6);
    out.push(tag);
    der_len(content.len(), &mut out);
    out.extend_from_slice(content);
    out
}

/// AlgorithmIdentifier { rsaEncryption (1.2.840.113549.1.1.1), NULL }.
const RSA_ALGORITHM: [u8; 15] = [
    0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
];

/// Wraps a PKCS#1 `RSAPrivateKey` in a PKCS#8 v1 `PrivateKeyInfo`.
pub(crate) fn pkcs1_private_to_pkcs8(rsa_private_key: &[u8]) -> Vec<u8> {
    let mut content = vec![0x02, 0x01, 0x00];
    content.extend_from_slice(&RSA_ALGORITHM);
    content.extend(tlv(0x04, rsa_private_key));
    tlv(0x30, &content)
}

/// Wraps a PKCS#1 `RSAPublicKey` in an X.509 `SubjectPublicKeyInfo`.
pub(crate) fn pkcs1_public_to_spki(rsa_public_key: &[u8]) -> Vec<u8> {
    let mut bits = vec![0x00];
    bits.extend_from_slice(rsa_public_key);
    let mut content = RSA_ALGORITHM.to_vec();
    content.extend(tlv(0x03, &bits));
    tlv(0x30, &content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_found_with_their_labels_and_headers() {
        let text = "junk before\n\
                    -----BEGIN PUBLIC KEY-----\n\
                    Zm9v\n\
                    YmFy\n\
                    -----END PUBLIC KEY-----\n\
                    -----BEGIN RSA PRIVATE KEY-----\n\
                    Proc-Type: 4,ENCRYPTED\n\
                    DEK-Info: AES-128-CBC,00\n\
                    \n\
                    Zm9v\n\
                    -----END RSA PRIVATE KEY-----\n\
                    -----BEGIN PRIVATE KEY-----\n\
                    !!!!\n\
                    -----END PRIVATE KEY-----\n\
                    -----BEGIN CERTIFICATE-----\n\
                    Zm9v\n";
        let b = blocks(text);
        assert_eq!(b.len(), 3, "the unterminated block is dropped: {b:?}");
        assert_eq!((b[0].label.as_str(), b[0].encrypted), ("PUBLIC KEY", false));
        assert_eq!(b[0].der.as_deref(), Some(&b"foobar"[..]));
        assert_eq!((b[1].label.as_str(), b[1].encrypted), ("RSA PRIVATE KEY", true));
        assert_eq!(b[1].der.as_deref(), Some(&b"foo"[..]));
        assert_eq!(b[2].der, None);
    }

    #[test]
    fn der_wrappers_encode_lengths() {
        let mut v = Vec::new();
        der_len(0x7f, &mut v);
        der_len(0x80, &mut v);
        der_len(0x1234, &mut v);
        assert_eq!(v, [0x7f, 0x81, 0x80, 0x82, 0x12, 0x34]);
        let p8 = pkcs1_private_to_pkcs8(&[0xaa; 3]);
        assert_eq!(&p8[..5], &[0x30, 0x17, 0x02, 0x01, 0x00]);
        assert_eq!(&p8[20..], &[0x04, 0x03, 0xaa, 0xaa, 0xaa]);
        let spki = pkcs1_public_to_spki(&[0xbb; 200]);
        assert_eq!(&spki[..3], &[0x30, 0x81, 0xdb]);
        assert_eq!(&spki[18..22], &[0x03, 0x81, 0xc9, 0x00]);
        assert_eq!(spki.len(), 3 + 15 + 4 + 200);
    }

    proptest::proptest! {
        #[test]
        fn pem_text_never_panics(data in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
            let _ = blocks(&String::from_utf8_lossy(&data));
        }
    }
}
