//! Seeded, reproducible workloads: unique keys, values, the slab hash paper's operation
//! mixes, the oversubscription paper's input sequences and Zipf-skewed keys.
//!
//! Everything here is a pure function of its seed, so a failing GPU test names its seed
//! and reproduces. Unique keys come from a keyed permutation of the key range
//! ([`Permutation`]) instead of a hash set, so 2^26 keys take a fraction of a second.

mod keys;
mod mix;
mod permute;
mod sequence;
mod zipf;

pub use keys::{random_values, unique_keys, UniqueKeys};
pub use mix::{Batch, Mix, MixedWorkload, GAMMA_0, GAMMA_1, GAMMA_2};
pub use permute::Permutation;
pub use sequence::{Sequence, SequenceSpec, SPARSE_MAX};
pub use zipf::{Zipf, ZipfKeys};
