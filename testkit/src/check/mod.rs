//! Concurrency-tolerant checks of a GPU batch.
//!
//! A batch of operations that ran concurrently has no single right answer: it is correct
//! when it is *linearizable*, i.e. some serial order of the batch produces every result
//! the GPU reported and the final state it left. For hash-map semantics that question
//! splits by key, because operations on different keys commute: the batch is acceptable
//! exactly when, for every key, some order of that key's operations explains that key's
//! results, starting from its initial state and ending in its final one.
//!
//! Per key the check is:
//! 1. a closed form where one is exact (replacing maps whose updates all report, or all
//!    do not report, their observation: an Eulerian-trail argument, see `closed.rs`);
//! 2. otherwise an exhaustive search over orders, with identical operations merged and
//!    gets placed greedily, limited to [`SEARCH_BUDGET`] expansions;
//! 3. past the budget, necessary conditions only: the key is accepted when every
//!    observation is a state the key could take and the final state is reachable; such
//!    keys are counted in [`Verdict::relaxed`], so a test can demand zero.
//!
//! A rejection is a [`Mismatch`] naming the key, its operations and replies, its initial
//! and final state and what could not be explained.
//!
//! [`expected_or_erased`] and [`check_expected_or_erased`] are the simpler validators of
//! the versioned B-Tree's tests: a query's result is the expected value, or "not found"
//! if the key may have been erased concurrently.

mod batch;
mod closed;
mod expected;
mod reply;
mod search;

pub use batch::{check_map, check_multimap, check_set, SEARCH_BUDGET};
pub use expected::{check_expected_or_erased, expected_or_erased};
pub use reply::{Mismatch, Reply, Verdict};

#[cfg(test)]
mod tests;
