//! The two namespaces and their TUN devices, made and configured with
//! iproute2 and removed when dropped; stale namespaces of an emulator that
//! was killed; and the devices' own counters.

use std::fs::File;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// Side A's addresses, then side B's.
pub const ADDR4: [&str; 2] = ["10.77.0.1", "10.77.0.2"];
/// Side A's IPv6 address, then side B's.
pub const ADDR6: [&str; 2] = ["fd77::1", "fd77::2"];
/// Prefix of the names an emulator derives from its pid.
const PID_PREFIX: &str = "pe";

/// Runs `prog args`; its stdout, or one line naming the command and
/// what it said.
fn cmd(prog: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {prog}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{prog} {}: {}", args.join(" "), err.trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn ip(args: &[&str]) -> Result<String, String> {
    cmd("ip", args)
}

/// Whether iproute2 can be run.
pub fn have_ip() -> bool {
    Command::new("ip")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether this process runs as root (namespaces and TUN devices need it).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

/// The pid in a name this emulator derives from its pid (`pe123a`).
fn pid_of_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix(PID_PREFIX)?.strip_suffix(['a', 'b'])?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Whether `pid` is a running emulator: not a recycled pid, and not a
/// killed one its parent has yet to reap (a zombie keeps its name).
fn emulator_alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // "pid (comm) state ...": the name may hold spaces and parentheses.
    let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
        return false;
    };
    let comm = &stat[open + 1..close];
    let state = stat[close + 1..].split_whitespace().next().unwrap_or("");
    comm.starts_with("pathemu") && !matches!(state, "Z" | "X" | "x")
}

/// Removes namespaces named after an emulator's pid whose emulator is
/// gone (it was SIGKILLed, so it could not remove them itself).
pub fn remove_stale() {
    let Ok(list) = ip(&["netns", "list"]) else { return };
    let me = std::process::id();
    for name in list.lines().filter_map(|l| l.split_whitespace().next()) {
        match pid_of_name(name) {
            Some(pid) if pid != me && !emulator_alive(pid) => match ip(&["netns", "del", name]) {
                Ok(_) => eprintln!("pathemu: removed stale namespace {name} (pid {pid} is gone)"),
                Err(e) => eprintln!("pathemu: could not remove stale namespace {name}: {e}"),
            },
            _ => {}
        }
    }
}

/// The names an emulator uses: namespaces and devices share them.
pub fn names(base: Option<&str>) -> [String; 2] {
    let base = base.map_or_else(|| format!("{PID_PREFIX}{}", std::process::id()), str::to_string);
    [format!("{base}a"), format!("{base}b")]
}

/// Device options for [`Netns::create`].
pub struct DevOptions {
    /// MTU of both devices.
    pub mtu: u32,
    /// Transmit ring length: packets the kernel may queue for the
    /// emulator to read before it drops (and counts in `tx_dropped`).
    pub txqueuelen: u32,
    /// Open the devices with IFF_NAPI.
    pub napi: bool,
}

/// Two namespaces, each with one TUN device whose descriptor this process
/// holds. Dropping it removes the namespaces (and so the devices).
pub struct Netns {
    /// Namespace names, A then B; each namespace's device has its name.
    pub ns: [String; 2],
    /// Device descriptors, A then B.
    pub tun: [File; 2],
    made: Vec<String>,
}

impl Netns {
    /// Creates both namespaces and devices and brings them up with their
    /// addresses. Whatever was made is removed again on failure.
    pub fn create(names: [String; 2], o: &DevOptions) -> Result<Netns, String> {
        let mut made = Guard(Vec::new());
        for n in &names {
            ip(&["netns", "add", n])?;
            made.0.push(n.clone());
        }
        let mut tun = Vec::new();
        for (i, n) in names.iter().enumerate() {
            // Made in this namespace, then moved: the descriptor stays
            // attached to the device wherever it goes.
            let f = wirespeed_sys::tun::open(n, wirespeed_sys::tun::TunOptions { napi: o.napi })
                .map_err(|e| format!("cannot create TUN device {n}: {e}"))?;
            ip(&["link", "set", n, "netns", n])?;
            configure(n, i, o)?;
            tun.push(f);
        }
        let [a, b]: [File; 2] = tun.try_into().map_err(|_| "two devices".to_string())?;
        Ok(Netns {
            ns: names,
            tun: [a, b],
            made: std::mem::take(&mut made.0),
        })
    }

    /// Each device's kernel counters (rx/tx packets, errors, drops), read
    /// with `ip -s -j link show`.
    pub fn device_stats(&self) -> Value {
        let side = |n: &String| -> Value {
            let doc = ip(&["-n", n, "-s", "-j", "link", "show", "dev", n])
                .ok()
                .and_then(|s| serde_json::from_str::<Value>(&s).ok());
            let Some(s) = doc.as_ref().and_then(|d| d.get(0)).and_then(|d| d.get("stats64")) else {
                return json!({"dev": n, "error": "no statistics from ip -s -j link show"});
            };
            let g = |dir: &str, k: &str| s.get(dir).and_then(|d| d.get(k)).cloned().unwrap_or(Value::Null);
            json!({
                "dev": n,
                "rx_packets": g("rx", "packets"),
                "rx_dropped": g("rx", "dropped"),
                "rx_errors": g("rx", "errors"),
                "tx_packets": g("tx", "packets"),
                "tx_dropped": g("tx", "dropped"),
                "tx_errors": g("tx", "errors"),
            })
        };
        json!({"a": side(&self.ns[0]), "b": side(&self.ns[1])})
    }
}

/// Namespaces to remove unless disarmed.
struct Guard(Vec<String>);

impl Drop for Guard {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = ip(&["netns", "del", n]);
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        drop(Guard(std::mem::take(&mut self.made)));
    }
}

/// Addresses, MTU, ring length and state of side `i`'s device `n` in its
/// namespace `n`.
fn configure(n: &str, i: usize, o: &DevOptions) -> Result<(), String> {
    let (mtu, qlen) = (o.mtu.to_string(), o.txqueuelen.to_string());
    // No link-local address: with none the kernel sends no router
    // solicitations, which would otherwise be stray ICMPv6 on the path.
    ip(&[
        "-n",
        n,
        "link",
        "set",
        "dev",
        n,
        "mtu",
        &mtu,
        "txqueuelen",
        &qlen,
        "addrgenmode",
        "none",
    ])?;
    // Up before the addresses: an IPv6 peer address added to a device
    // that is down gets a route to itself instead of to the peer.
    ip(&["-n", n, "link", "set", "dev", n, "up"])?;
    let (me, peer) = (i, 1 - i);
    ip(&["-n", n, "addr", "add", ADDR4[me], "peer", ADDR4[peer], "dev", n])?;
    ip(&[
        "-n",
        n,
        "-6",
        "addr",
        "add",
        ADDR6[me],
        "peer",
        ADDR6[peer],
        "dev",
        n,
        "nodad",
    ])?;
    ip(&["-n", n, "link", "set", "dev", "lo", "up"])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_processes_are_not_emulators() {
        assert!(!emulator_alive(1));
        assert!(!emulator_alive(u32::MAX));
    }

    #[test]
    fn only_pid_names_are_candidates_for_removal() {
        assert_eq!(pid_of_name("pe123a"), Some(123));
        assert_eq!(pid_of_name("pe9b"), Some(9));
        for other in ["pea", "pe12c", "pe1x2a", "wsA1x0", "pe123", "xpe1a"] {
            assert_eq!(pid_of_name(other), None, "{other}");
        }
    }
}
