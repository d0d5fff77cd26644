//! Modes that run many tests to answer one question: the responsiveness
//! test ([`rpm`]) and the search for the highest UDP rate with acceptable
//! loss ([`search`]). Each runs its tests through the normal clients.
pub mod rpm;
pub mod search;
