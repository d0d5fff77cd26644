//! The end-of-test ECN line both dialects' text prints when ECN is in
//! play: for UDP, what was sent, what arrived, and what the path did to
//! the field; for TCP, what the connection's kernel says (negotiated, and
//! a sender's segments acked under ECE), named for what it is.

use wirespeed_core::events::{Ecn, EcnCounts, EcnTotals, EcnVerdict, TcpEcn, TcpEcnSum};

/// A TCP connection's ECN line (without a newline), from this host's
/// kernel: `sender` when this host sent on it. A kernel without AccECN
/// counts no CE marks, so none are claimed: a sender's ACKs echo ECE from
/// a mark until its CWR, and it counts the segments they acknowledge.
pub fn tcp_line(e: &TcpEcn, sender: bool) -> String {
    if !e.negotiated {
        return "ECN: asked for (net.ipv4.tcp_ecn=1) but not negotiated: the peer did not agree; nothing to count"
            .to_string();
    }
    match (sender, e.acked_under_ece) {
        (true, Some(n)) => format!(
            "ECN: negotiated, {n} {} acked under ECE (the kernel cannot count CE marks without AccECN)",
            if n == 1 { "segment" } else { "segments" }
        ),
        (true, None) => {
            "ECN: negotiated; this kernel's TCP_INFO has no count of segments acked under ECE (tcpi_delivered_ce, Linux 4.18)"
                .to_string()
        }
        (false, _) if e.seen => {
            "ECN: negotiated, the sender's segments arrived ECT (a receiver's kernel counts no CE marks without AccECN)"
                .to_string()
        }
        (false, _) => "ECN: negotiated, but no segment arrived with ECT or CE (the path cleared the field?)".to_string(),
    }
}

/// The sending peer's kernel's view of a TCP connection (a wirespeed peer
/// says it in the results exchange): the line [`tcp_line`] gives a sender,
/// naming whose kernel it is.
pub fn peer_sender_line(e: &TcpEcn) -> String {
    let own = tcp_line(e, true);
    let rest = own.strip_prefix("ECN:").unwrap_or(&own);
    format!("ECN at the sender (the peer's kernel):{rest}")
}

/// Said once where this host received with ECN in play and the sending
/// peer's results carried no view of its own kernel (iperf3 sends none).
pub const PEER_SENDER_UNKNOWN: &str =
    "ECN at the sender: not known (the peer's results carry no TCP ECN; only a wirespeed peer sends it)";

/// The `[SUM]` line of several TCP streams' ECN (without a newline): the
/// sending ends' kernels (`sender`) or the receiving ends'.
pub fn tcp_sum_line(e: &TcpEcnSum, sender: bool) -> String {
    let n = e.streams;
    if e.negotiated == 0 {
        return format!("ECN: asked for but negotiated on none of {n} streams; nothing to count");
    }
    let head = format!("ECN: negotiated on {} of {n} streams", e.negotiated);
    match (sender, e.acked_under_ece) {
        (true, Some(a)) => format!(
            "{head}, {a} {} acked under ECE (the kernels cannot count CE marks without AccECN)",
            if a == 1 { "segment" } else { "segments" }
        ),
        (true, None) => format!(
            "{head}; not every sender's kernel counts segments acked under ECE (tcpi_delivered_ce, Linux 4.18), so no total"
        ),
        (false, _) => format!(
            "{head}, the sender's segments arrived ECT on {} (a receiver's kernel counts no CE marks without AccECN)",
            e.seen
        ),
    }
}

/// `ECN: sent ECT(1), arrived Not-ECT 0, ECT(0) 0, ECT(1) 8877, CE 123:
/// CE-marked 123 of 9000 (1.37%)` and its kin (without a newline).
pub fn line(e: &EcnTotals) -> String {
    let mut s = String::from("ECN:");
    match e.sent {
        Some(x) => s.push_str(&format!(" sent {}", x.label())),
        None => s.push_str(" sent unknown"),
    }
    if let Some(c) = &e.impossible {
        s.push_str(&format!(
            ", but the peer's counts are impossible ({} arrived, {} CE, of {} sent); not used",
            c.total(),
            c.ce,
            e.sent_packets.unwrap_or(0)
        ));
        return s;
    }
    let Some(a) = &e.arrived else {
        if let Some(n) = e.sent_packets {
            s.push_str(&format!(" ({n} datagrams); the receiver did not say what arrived"));
        }
        return s;
    };
    s.push_str(&format!(", arrived {}", counts(a)));
    if let Some(v) = &e.verdict {
        s.push_str(": ");
        s.push_str(&verdict(e.sent.unwrap_or(Ecn::NotEct), v, e.l4s));
    }
    s
}

/// `Not-ECT 0, ECT(0) 0, ECT(1) 8877, CE 123`.
fn counts(c: &EcnCounts) -> String {
    [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce]
        .iter()
        .map(|e| format!("{} {}", e.label(), c.get(*e)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the path did: `kept`, or any of CE-marked, bleached and remarked,
/// each with how many of how many.
fn verdict(sent: Ecn, v: &EcnVerdict, l4s: bool) -> String {
    if v.kept_all() {
        return format!("the path kept {}", sent.label());
    }
    let n = v.arrived;
    let mut parts = Vec::new();
    if v.ce > 0 {
        parts.push(format!("CE-marked {} of {n} ({:.2}%)", v.ce, v.ce_percent));
    }
    if v.bleached > 0 && l4s {
        // Once told (the acks' flag), an L4S sender sends Not-ECT: this
        // end cannot tell those from bleached ones.
        parts.push(format!(
            "bleached the field: {} of {n} arrived Not-ECT (the path's, and the L4S sender's own once the acks told it)",
            v.bleached
        ));
    } else if v.bleached > 0 {
        parts.push(format!("bleached {} of {n} (arrived Not-ECT)", v.bleached));
    }
    if v.remarked > 0 {
        let to = v.remarked_to.map_or("", |e| e.label());
        parts.push(format!(
            "remarked {} of {n} ({} arrived {to})",
            v.remarked,
            sent.label()
        ));
    }
    format!("the path {}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tcp_line_names_what_the_kernel_counts() {
        let e = |negotiated, seen, acked_under_ece| TcpEcn {
            negotiated,
            seen,
            acked_under_ece,
        };
        assert_eq!(
            tcp_line(&e(true, false, Some(179)), true),
            "ECN: negotiated, 179 segments acked under ECE (the kernel cannot count CE marks without AccECN)"
        );
        assert!(tcp_line(&e(true, false, Some(1)), true).contains(" 1 segment acked "));
        assert!(tcp_line(&e(true, false, None), true).contains("no count of segments acked under ECE"));
        assert!(tcp_line(&e(true, true, None), false).contains("arrived ECT"));
        assert!(tcp_line(&e(true, false, None), false).contains("no segment arrived with ECT or CE"));
        let refused = tcp_line(&e(false, false, None), true);
        assert!(
            refused.contains("not negotiated") && !refused.contains(" 0 "),
            "{refused}"
        );
    }

    fn totals(sent: Ecn, arrived: EcnCounts) -> EcnTotals {
        EcnTotals {
            sent: Some(sent),
            sent_packets: Some(arrived.total()),
            arrived: Some(arrived),
            verdict: Some(EcnVerdict::judge(sent, &arrived)),
            impossible: None,
            l4s: false,
        }
    }

    #[test]
    fn each_verdict_in_one_line() {
        let c = |not_ect, ect0, ect1, ce| EcnCounts {
            not_ect,
            ect0,
            ect1,
            ce,
        };
        assert_eq!(
            line(&totals(Ecn::Ect1, c(0, 0, 100, 0))),
            "ECN: sent ECT(1), arrived Not-ECT 0, ECT(0) 0, ECT(1) 100, CE 0: the path kept ECT(1)"
        );
        assert_eq!(
            line(&totals(Ecn::Ect1, c(0, 0, 96, 4))),
            "ECN: sent ECT(1), arrived Not-ECT 0, ECT(0) 0, ECT(1) 96, CE 4: the path CE-marked 4 of 100 (4.00%)"
        );
        assert!(line(&totals(Ecn::Ect0, c(100, 0, 0, 0))).ends_with("the path bleached 100 of 100 (arrived Not-ECT)"));
        assert!(
            line(&totals(Ecn::Ect0, c(0, 0, 100, 0))).ends_with("the path remarked 100 of 100 (ECT(0) arrived ECT(1))")
        );
        let l4s = EcnTotals {
            l4s: true,
            ..totals(Ecn::Ect1, c(100, 0, 0, 0))
        };
        assert!(
            line(&l4s).ends_with(
                "the path bleached the field: 100 of 100 arrived Not-ECT (the path's, and the L4S sender's own once the acks told it)"
            ),
            "{}",
            line(&l4s)
        );
        let bogus = EcnTotals {
            sent: Some(Ecn::Ect1),
            sent_packets: Some(10),
            impossible: Some(c(0, 0, 0, 50)),
            ..EcnTotals::default()
        };
        assert_eq!(
            line(&bogus),
            "ECN: sent ECT(1), but the peer's counts are impossible (50 arrived, 50 CE, of 10 sent); not used"
        );
    }
}
