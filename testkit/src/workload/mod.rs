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

use rand::rngs::ChaCha8Rng;

/// A workload's seeded ChaCha8 stream. `rand`'s `ChaCha8Rng` is not `Clone` (so that a
/// stream is not duplicated by accident), but the workloads are: a clone here continues
/// the same stream from the same position, as the clone of a workload should.
#[derive(Debug)]
struct StreamRng(ChaCha8Rng);

impl Clone for StreamRng {
    fn clone(&self) -> Self {
        StreamRng(ChaCha8Rng::deserialize_state(&self.0.serialize_state()))
    }
}

#[cfg(test)]
mod stream_rng_tests {
    use rand::{RngExt, SeedableRng};

    use super::*;

    #[test]
    fn a_clone_continues_the_same_stream() {
        let mut a = StreamRng(ChaCha8Rng::seed_from_u64(9));
        // Stop mid-block, so the clone must restore the position, not only the seed.
        let _: [u32; 5] = std::array::from_fn(|_| a.0.random());
        let mut b = a.clone();
        let from_a: Vec<u64> = (0..100).map(|_| a.0.random()).collect();
        let from_b: Vec<u64> = (0..100).map(|_| b.0.random()).collect();
        assert_eq!(from_a, from_b);
    }
}
