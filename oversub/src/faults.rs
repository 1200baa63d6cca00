//! Fault injection for tests (only with the crate's `fault-injection` feature, enabled in
//! a `[dev-dependencies]` entry; without it nothing here exists and the device checks are
//! not compiled, so no user path reaches them): make a skip list fail chosen operations
//! on purpose, to check that errors name exactly the operations not applied, in the
//! caller's order, and that the list stays valid and gives the oracle's answers.

/// Faults of a [`SkipList`](crate::SkipList) or [`RangeSkipList`](crate::RangeSkipList)
/// (`Faults::default()` injects none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Insertions, additions and removals of keys in `lo ..= hi` give up as a lock wait
    /// past its cap does: `RETRY_LIMIT`, nothing applied, the operation named failed.
    pub fail_updates: Option<(u32, u32)>,
    /// Every raise is dropped (as when no node is free), and counted: the index misses
    /// the new nodes until a repair once the fault is lifted.
    pub drop_raises: bool,
}
