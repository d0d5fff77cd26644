//! What the kernel itself carries on loopback, with no tool around it:
//! the ceilings `bench/bench.py` measures each tool against, in the same
//! run. One sender thread and one receiver thread in this process; the
//! receiver only counts.
//!
//! ```text
//! cargo run --release --example ceiling -- tcp 131072 3      # write/read loop
//! cargo run --release --example ceiling -- udp-mmsg 64 3     # sendmmsg/recvmmsg, 64 a call
//! cargo run --release --example ceiling -- udp-gso 1400 3    # UDP_SEGMENT sends, UDP_GRO receives
//! ```
//!
//! Prints one JSON object: what was received (bytes, datagrams), its rates,
//! and the process's CPU seconds (both threads), from which the bench takes
//! bytes per CPU-second.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use wirespeed::sys::udp::{RecvBatch, send_batch, set_gro, set_gso};

/// Datagrams per `sendmmsg` / `recvmmsg`, and segments per GSO send at most.
const BATCH: usize = 64;

struct Got {
    bytes: u64,
    datagrams: u64,
    seconds: f64,
}

fn tcp(block: usize, secs: f64) -> std::io::Result<Got> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let sender = std::thread::spawn(move || -> std::io::Result<()> {
        let mut s = TcpStream::connect(addr)?;
        let buf = vec![0x5au8; block];
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < end {
            s.write_all(&buf)?;
        }
        Ok(())
    });
    let (mut r, _) = l.accept()?;
    let mut buf = vec![0u8; block];
    let t0 = Instant::now();
    let mut bytes = 0u64;
    loop {
        match r.read(&mut buf)? {
            0 => break,
            n => bytes += n as u64,
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    sender.join().map_err(|_| std::io::Error::other("sender panicked"))??;
    Ok(Got {
        bytes,
        datagrams: 0,
        seconds,
    })
}

fn udp(size: usize, secs: f64, gso: bool) -> std::io::Result<Got> {
    let rx = UdpSocket::bind("127.0.0.1:0")?;
    let tx = UdpSocket::bind("127.0.0.1:0")?;
    socket2::SockRef::from(&rx).set_recv_buffer_size(8 << 20)?;
    rx.connect(tx.local_addr()?)?;
    tx.connect(rx.local_addr()?)?;
    rx.set_read_timeout(Some(Duration::from_millis(200)))?;
    let segs = if gso { (65_000 / size).clamp(1, BATCH) } else { 1 };
    if gso {
        set_gso(&tx, size as u16)?;
        set_gro(&rx)?;
    }
    let done = Arc::new(AtomicBool::new(false));
    let done2 = done.clone();
    let sender = std::thread::spawn(move || -> std::io::Result<()> {
        let buf = vec![0x5au8; size * segs];
        let msgs: Vec<&[u8]> = (0..BATCH).map(|_| &buf[..]).collect();
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < end {
            let r = if gso {
                tx.send(&buf).map(|_| 1)
            } else {
                send_batch(&tx, &msgs)
            };
            match r {
                Ok(_) => {}
                // A full receive queue on loopback: the datagram is dropped.
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
                Err(e) => return Err(e),
            }
        }
        done2.store(true, Relaxed);
        Ok(())
    });
    let mut batch = RecvBatch::new(if gso { 65_536 } else { size }, BATCH);
    let (mut bytes, mut datagrams) = (0u64, 0u64);
    let t0 = Instant::now();
    let mut last = t0;
    loop {
        match batch.recv(&rx) {
            Ok(n) => {
                for i in 0..n {
                    let m = batch.message(i);
                    bytes += m.data.len() as u64;
                    datagrams += match m.segment {
                        Some(seg) if seg > 0 => m.data.len().div_ceil(seg) as u64,
                        _ => 1,
                    };
                }
                last = Instant::now();
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                if done.load(Relaxed) {
                    break;
                }
            }
            Err(e) => return Err(e),
        }
    }
    sender.join().map_err(|_| std::io::Error::other("sender panicked"))??;
    Ok(Got {
        bytes,
        datagrams,
        seconds: (last - t0).as_secs_f64().max(1e-9),
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (what, size, secs) = match args.as_slice() {
        [w, s, t] => (w.as_str(), s.parse::<usize>().ok(), t.parse::<f64>().ok()),
        _ => ("", None, None),
    };
    let max = if what == "tcp" { 16 << 20 } else { 65_000 };
    let (Some(size), Some(secs)) = (
        size.filter(|s| (1..=max).contains(s)),
        secs.filter(|t| *t > 0.0 && *t <= 60.0),
    ) else {
        eprintln!("usage: ceiling tcp|udp-mmsg|udp-gso SIZE SECONDS");
        std::process::exit(2);
    };
    let cpu0 = wirespeed::sys::process::cpu_times();
    let got = match what {
        "tcp" => tcp(size, secs),
        "udp-mmsg" => udp(size, secs, false),
        "udp-gso" => udp(size, secs, true),
        _ => {
            eprintln!("usage: ceiling tcp|udp-mmsg|udp-gso SIZE SECONDS");
            std::process::exit(2);
        }
    };
    let got = match got {
        Ok(g) => g,
        Err(e) => {
            eprintln!("ceiling {what}: {e}");
            std::process::exit(1);
        }
    };
    let cpu1 = wirespeed::sys::process::cpu_times();
    let cpu = (cpu1.0 + cpu1.1).saturating_sub(cpu0.0 + cpu0.1).as_secs_f64();
    println!(
        "{}",
        serde_json::json!({
            "what": what,
            "size": size,
            "seconds": got.seconds,
            "bytes": got.bytes,
            "datagrams": got.datagrams,
            "bits_per_second": got.bytes as f64 * 8.0 / got.seconds,
            "datagrams_per_second": got.datagrams as f64 / got.seconds,
            "cpu_seconds": cpu,
        })
    );
}
