//! The ECN field (RFC 3168): the low two bits of the IPv4 TOS byte or the
//! IPv6 traffic class, and datagrams counted per codepoint.

/// One value of the ECN field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ecn {
    /// `00`: the sender does not take part.
    NotEct,
    /// `01`: ECN-capable, L4S (RFC 9331).
    Ect1,
    /// `10`: ECN-capable, classic.
    Ect0,
    /// `11`: congestion experienced (set by the path).
    Ce,
}

impl Ecn {
    /// Every codepoint, in the order of their field values.
    pub const ALL: [Ecn; 4] = [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce];

    /// The codepoint of a TOS byte or traffic class (its low two bits).
    pub fn of_tos(tos: u8) -> Ecn {
        Ecn::ALL[usize::from(tos & 3)]
    }

    /// The field's value (0-3).
    pub fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0,
            Ecn::Ect1 => 1,
            Ecn::Ect0 => 2,
            Ecn::Ce => 3,
        }
    }

    /// ECT(0) or ECT(1).
    pub fn is_ect(self) -> bool {
        matches!(self, Ecn::Ect0 | Ecn::Ect1)
    }

    /// The name in JSON (`not_ect`, `ect0`, `ect1`, `ce`).
    pub fn key(self) -> &'static str {
        match self {
            Ecn::NotEct => "not_ect",
            Ecn::Ect0 => "ect0",
            Ecn::Ect1 => "ect1",
            Ecn::Ce => "ce",
        }
    }

    /// The codepoint named `key` (as [`Ecn::key`] writes it).
    pub fn from_key(key: &str) -> Option<Ecn> {
        Ecn::ALL.into_iter().find(|e| e.key() == key)
    }

    /// The name in text (`Not-ECT`, `ECT(0)`, `ECT(1)`, `CE`).
    pub fn label(self) -> &'static str {
        match self {
            Ecn::NotEct => "Not-ECT",
            Ecn::Ect0 => "ECT(0)",
            Ecn::Ect1 => "ECT(1)",
            Ecn::Ce => "CE",
        }
    }
}

/// Datagrams per ECN codepoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EcnCounts {
    /// Not-ECT.
    pub not_ect: u64,
    /// ECT(0).
    pub ect0: u64,
    /// ECT(1).
    pub ect1: u64,
    /// CE.
    pub ce: u64,
}

impl EcnCounts {
    /// Counts indexed by the field's value (as a receiver keeps them).
    pub fn from_field(by_value: [u64; 4]) -> EcnCounts {
        EcnCounts {
            not_ect: by_value[0],
            ect1: by_value[1],
            ect0: by_value[2],
            ce: by_value[3],
        }
    }

    /// `n` datagrams, all with codepoint `e` (what a sender sent).
    pub fn all(e: Ecn, n: u64) -> EcnCounts {
        let mut c = EcnCounts::default();
        *c.get_mut(e) = n;
        c
    }

    /// The count of codepoint `e`.
    pub fn get(&self, e: Ecn) -> u64 {
        match e {
            Ecn::NotEct => self.not_ect,
            Ecn::Ect0 => self.ect0,
            Ecn::Ect1 => self.ect1,
            Ecn::Ce => self.ce,
        }
    }

    /// The count of codepoint `e`, to change.
    pub fn get_mut(&mut self, e: Ecn) -> &mut u64 {
        match e {
            Ecn::NotEct => &mut self.not_ect,
            Ecn::Ect0 => &mut self.ect0,
            Ecn::Ect1 => &mut self.ect1,
            Ecn::Ce => &mut self.ce,
        }
    }

    /// Datagrams counted.
    pub fn total(&self) -> u64 {
        self.not_ect
            .saturating_add(self.ect0)
            .saturating_add(self.ect1)
            .saturating_add(self.ce)
    }

    /// Anything but Not-ECT counted.
    pub fn any_ecn(&self) -> bool {
        self.ect0 + self.ect1 + self.ce > 0
    }

    /// These counts plus `o`'s.
    pub fn plus(&self, o: &EcnCounts) -> EcnCounts {
        EcnCounts {
            not_ect: self.not_ect.saturating_add(o.not_ect),
            ect0: self.ect0.saturating_add(o.ect0),
            ect1: self.ect1.saturating_add(o.ect1),
            ce: self.ce.saturating_add(o.ce),
        }
    }

    /// These counts less `o`'s (each at least 0).
    pub fn minus(&self, o: &EcnCounts) -> EcnCounts {
        EcnCounts {
            not_ect: self.not_ect.saturating_sub(o.not_ect),
            ect0: self.ect0.saturating_sub(o.ect0),
            ect1: self.ect1.saturating_sub(o.ect1),
            ce: self.ce.saturating_sub(o.ce),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codepoints_round_trip() {
        for e in Ecn::ALL {
            assert_eq!(Ecn::of_tos(0xb8 | e.bits()), e);
            assert_eq!(Ecn::from_key(e.key()), Some(e));
        }
        assert_eq!(Ecn::of_tos(0x01), Ecn::Ect1);
        assert_eq!(Ecn::of_tos(0x02), Ecn::Ect0);
        let c = EcnCounts::from_field([1, 2, 3, 4]);
        assert_eq!((c.not_ect, c.ect1, c.ect0, c.ce), (1, 2, 3, 4));
        assert_eq!(c.total(), 10);
        assert_eq!(c.plus(&c).minus(&c), c);
        assert_eq!(EcnCounts::all(Ecn::Ect1, 7).ect1, 7);
    }
}
