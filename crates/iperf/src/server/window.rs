//! A client's `-w` on a listener that many tests share.
//!
//! A TCP connection's window scale and first window are fixed by the
//! SYN-ACK, which the kernel sends from the listener's settings before
//! anyone calls accept. Setting SO_RCVBUF on the accepted socket is too
//! late for a small window: the client may already send into the 64 KiB
//! the handshake offered, which a buffer of a few KiB cannot hold (the
//! kernel drops it and the sender waits for retransmission timeouts:
//! `-w 4K` ran at well under 1 Mbit/s), and the window scale chosen for a
//! large buffer makes the small window coarse. iperf3 serves one test and
//! re-creates its listener with the buffer set; a shared listener cannot
//! be re-created under other tests' feet, and SO_RCVBUF, once set on it,
//! cannot be taken back.
//!
//! TCP_WINDOW_CLAMP can: on a listener it sets both the window scale and
//! the first window of every SYN-ACK to what a buffer of that size gives
//! (the kernel's `tcp_select_initial_window`), as iperf3's re-created
//! listener does, and setting it back to the largest window TCP can scale
//! to restores the default. So while a test that asked for a window below
//! [`LEASE_BELOW`] collects its streams, the listener carries that clamp:
//! a lease. The accepted streams then get SO_SNDBUF, SO_RCVBUF and the
//! clamp itself (`net::apply_data_options`), before any data moves.
//!
//! The lease is exclusive: while one is held, other tests wait before
//! asking their client for streams, and a lease waits for tests already
//! collecting theirs, so no other test's streams are offered the small
//! window. Each wait and each lease lasts at most [`LEASE_MAX`]; a stream
//! that arrives later gets the window after accept only, as before. What
//! the lease cannot steer are connections that are not an iperf3 test's
//! streams (a new control connection, an iperf 2 client on the shared
//! port, a latency probe): one that arrives during a lease gets its clamp
//! back at accept ([`Windows::admit`]) but keeps the window scale of the
//! SYN-ACK, so its window cannot grow past 64 KiB (`docs/limits.md`).
//! A window of 64 KiB or more needs no lease: the first window fits its
//! buffer and the default scale expresses it, so the accepted socket's
//! SO_RCVBUF and clamp suffice.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use wirespeed_core::config::{Direction, Protocol, TestParams};

/// Windows below this are leased; at or above it the accepted socket's
/// options alone give the asked window (the SYN-ACK offers at most 64 KiB).
pub(crate) const LEASE_BELOW: u32 = 64 * 1024;
/// The longest a lease lasts, and the longest a test waits for one or for
/// the tests collecting before it: long enough for a client across a path
/// of a second's round trip to connect its streams.
pub(crate) const LEASE_MAX: Duration = Duration::from_secs(2);
/// Connections accepted this long after a lease may have been offered its
/// window (they waited in the accept queue): they get their clamp back too.
const GRACE: Duration = Duration::from_secs(1);
/// TCP_WINDOW_CLAMP with no effect: the largest window TCP can scale to
/// (65535 << 14), which is what the kernel takes an unset clamp for.
const NO_CLAMP: u32 = 65535 << 14;

/// The shared listeners' window leases.
pub(crate) struct Windows {
    /// The TCP listeners (handles to the acceptor's sockets).
    listeners: Vec<socket2::Socket>,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Tests collecting streams without a lease.
    readers: usize,
    /// The lease held now: its number and when it began.
    held: Option<(u64, Instant)>,
    /// Numbers the next lease.
    next: u64,
    /// When the last lease ended.
    ended: Option<Instant>,
}

/// A test's place while it collects its streams: a lease, a reader's
/// place, or nothing (UDP). Dropping it ends it.
pub(crate) struct Collecting<'a> {
    windows: &'a Windows,
    role: Role,
}

enum Role {
    None,
    Reader,
    Lease(u64),
}

impl Windows {
    /// Leases over `listeners` (none: every test is served without one).
    pub fn new(listeners: Vec<socket2::Socket>) -> Windows {
        Windows {
            listeners,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        }
    }

    /// The window a test's streams need on the listener: a TCP test whose
    /// server receives, with `-w` below [`LEASE_BELOW`].
    pub(crate) fn lease_for(p: &TestParams) -> Option<u32> {
        let receives = p.direction != Direction::Reverse;
        p.window
            .filter(|w| p.protocol == Protocol::Tcp && receives && *w < LEASE_BELOW)
    }

    /// Called before a test asks its client for streams; holds its place
    /// until dropped (after the last stream arrived, or the test failed).
    pub fn collecting(&self, p: &TestParams) -> Collecting<'_> {
        if p.protocol != Protocol::Tcp || self.listeners.is_empty() {
            return Collecting {
                windows: self,
                role: Role::None,
            };
        }
        let Ok(mut st) = self.state.lock() else {
            return Collecting {
                windows: self,
                role: Role::None,
            };
        };
        let deadline = Instant::now() + LEASE_MAX;
        let role = match Self::lease_for(p) {
            Some(w) => {
                // Wait for another lease to end, then for the tests
                // collecting without one; past the deadline, lease anyway.
                st = self.wait(st, deadline, |s| s.held.is_some() || s.readers > 0);
                self.expire(&mut st, true);
                if self.clamp(w) {
                    let n = st.next;
                    st.next += 1;
                    st.held = Some((n, Instant::now()));
                    Role::Lease(n)
                } else {
                    // The kernel refused the clamp (no TCP_WINDOW_CLAMP
                    // here): the streams get the window after accept only.
                    st.readers += 1;
                    Role::Reader
                }
            }
            None => {
                st = self.wait(st, deadline, |s| s.held.is_some());
                self.expire(&mut st, true);
                st.readers += 1;
                Role::Reader
            }
        };
        Collecting { windows: self, role }
    }

    /// Waits while `busy` says so, expiring an old lease, until `deadline`.
    fn wait<'g>(
        &self,
        mut st: MutexGuard<'g, State>,
        deadline: Instant,
        busy: impl Fn(&State) -> bool,
    ) -> MutexGuard<'g, State> {
        loop {
            self.expire(&mut st, false);
            let now = Instant::now();
            if !busy(&st) || now >= deadline {
                return st;
            }
            // Woken when a place is given back; a lease's end is checked
            // at least every 100 ms.
            let step = (deadline - now).min(Duration::from_millis(100));
            st = match self.changed.wait_timeout(st, step) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }

    /// Ends a lease older than [`LEASE_MAX`] (every lease, with `all`: its
    /// holder is past its wait and takes over).
    fn expire(&self, st: &mut State, all: bool) {
        if let Some((_, since)) = st.held
            && (all || since.elapsed() >= LEASE_MAX)
        {
            self.clamp(NO_CLAMP);
            st.held = None;
            st.ended = Some(Instant::now());
        }
    }

    /// Ends a lease that outlived [`LEASE_MAX`] (the acceptor calls this
    /// every turn, so a test slow to collect does not keep the clamp).
    pub fn tick(&self) {
        if self.listeners.is_empty() {
            return;
        }
        if let Ok(mut st) = self.state.lock() {
            self.expire(&mut st, false);
        }
    }

    /// A connection the acceptor just accepted: if its SYN-ACK may have
    /// carried a lease's window, its clamp goes back to the default (a
    /// leased test's own streams get theirs again with their options).
    pub fn admit(&self, s: &impl wirespeed_sys::AsSock) {
        if self.listeners.is_empty() {
            return;
        }
        let recent = self
            .state
            .lock()
            .map(|st| st.held.is_some() || st.ended.is_some_and(|e| e.elapsed() < GRACE))
            .unwrap_or(false);
        if recent {
            let _ = wirespeed_sys::socket::set_window_clamp(&s.sock_ref(), NO_CLAMP);
        }
    }

    /// Sets every listener's clamp; false if the kernel refused.
    fn clamp(&self, bytes: u32) -> bool {
        self.listeners
            .iter()
            .all(|l| wirespeed_sys::socket::set_window_clamp(l, bytes).is_ok())
    }

    fn give_back(&self, role: &Role) {
        let Ok(mut st) = self.state.lock() else { return };
        match role {
            Role::None => return,
            Role::Reader => st.readers = st.readers.saturating_sub(1),
            Role::Lease(n) => {
                if st.held.is_some_and(|(h, _)| h == *n) {
                    self.clamp(NO_CLAMP);
                    st.held = None;
                    st.ended = Some(Instant::now());
                }
            }
        }
        self.changed.notify_all();
    }
}

impl Collecting<'_> {
    /// Whether this test holds a lease now.
    #[cfg(all(test, target_os = "linux"))]
    fn leased(&self) -> bool {
        matches!(self.role, Role::Lease(_))
    }
}

impl Drop for Collecting<'_> {
    fn drop(&mut self) {
        self.windows.give_back(&self.role);
    }
}

// TCP_WINDOW_CLAMP is Linux's.
#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn clamp_of(s: &impl wirespeed_sys::AsSock) -> i32 {
        wirespeed_sys::socket::get_int_option(s, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP).unwrap()
    }

    fn params(window: Option<u32>, direction: Direction) -> TestParams {
        TestParams {
            window,
            direction,
            ..TestParams::default()
        }
    }

    fn windows() -> (TcpListener, Windows) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let handle = socket2::Socket::from(l.try_clone().unwrap());
        (l, Windows::new(vec![handle]))
    }

    #[test]
    fn only_small_windows_a_server_receives_are_leased() {
        assert_eq!(Windows::lease_for(&params(Some(4096), Direction::Forward)), Some(4096));
        assert_eq!(Windows::lease_for(&params(Some(4096), Direction::Bidir)), Some(4096));
        assert_eq!(Windows::lease_for(&params(Some(4096), Direction::Reverse)), None);
        assert_eq!(Windows::lease_for(&params(Some(LEASE_BELOW), Direction::Forward)), None);
        assert_eq!(Windows::lease_for(&params(None, Direction::Forward)), None);
        let mut udp = params(Some(4096), Direction::Forward);
        udp.protocol = Protocol::Udp;
        assert_eq!(Windows::lease_for(&udp), None);
    }

    #[test]
    fn a_lease_offers_its_window_in_the_handshake_and_ends() {
        let (l, w) = windows();
        let addr = l.local_addr().unwrap();
        let lease = w.collecting(&params(Some(4096), Direction::Forward));
        assert!(lease.leased());
        // Accepted during the lease: the clamp came from the listener.
        let _c = TcpStream::connect(addr).unwrap();
        let (s, _) = l.accept().unwrap();
        assert_eq!(clamp_of(&s), 4096);
        drop(lease);
        // After it: the default again (the kernel clamps to the buffer).
        let _c2 = TcpStream::connect(addr).unwrap();
        let (s2, _) = l.accept().unwrap();
        assert!(clamp_of(&s2) > 4096, "{}", clamp_of(&s2));
    }

    #[test]
    fn a_connection_accepted_during_a_lease_gets_its_clamp_back() {
        let (l, w) = windows();
        let lease = w.collecting(&params(Some(4096), Direction::Forward));
        let _c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        w.admit(&s);
        assert_eq!(clamp_of(&s) as u32, NO_CLAMP);
        drop(lease);
    }

    #[test]
    fn leases_and_readers_exclude_each_other_for_a_bounded_time() {
        let (_l, w) = windows();
        let reader = w.collecting(&params(None, Direction::Forward));
        assert!(!reader.leased());
        // A lease waits for the reader, then (past LEASE_MAX) takes over.
        let t = Instant::now();
        let lease = w.collecting(&params(Some(8192), Direction::Forward));
        assert!(lease.leased());
        assert!(t.elapsed() >= LEASE_MAX, "{:?}", t.elapsed());
        drop(reader);
        // A reader waits while the lease is held, and is let in when it ends.
        std::thread::scope(|sc| {
            let h = sc.spawn(|| {
                let t = Instant::now();
                let r = w.collecting(&params(None, Direction::Forward));
                (t.elapsed(), r.leased())
            });
            std::thread::sleep(Duration::from_millis(300));
            drop(lease);
            let (waited, leased) = h.join().unwrap();
            assert!(!leased);
            assert!(waited >= Duration::from_millis(250) && waited < LEASE_MAX, "{waited:?}");
        });
    }

    #[test]
    fn udp_and_unshared_servers_take_no_place() {
        let w = Windows::new(Vec::new());
        let c = w.collecting(&params(Some(4096), Direction::Forward));
        assert!(!c.leased());
        let (_l, w) = windows();
        let mut udp = params(Some(4096), Direction::Forward);
        udp.protocol = Protocol::Udp;
        let c = w.collecting(&udp);
        assert!(!c.leased());
        assert_eq!(w.state.lock().unwrap().readers, 0);
    }
}
