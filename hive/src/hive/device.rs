//! The device side of HiveMap: the ref mirror, the kernel module and its kernels.

use cudarc::driver::DeviceRepr;
use gpuds_core::{Gpu, Kernel, Program};

use super::config::HashPair;
use super::types::{HiveKey, HiveValue};
use crate::error::Result;

const SOURCE: &str = include_str!("../../cuda/kernels/hive.cu");

/// Control-block words, as in `gpuds/hive/detail/hive_locate.cuh`: the stash's tail
/// (entries taken) and claims (entries taken or promised; see `detail/stash.cuh`), then
/// the striped counters (one 128-byte line per stripe, summed here).
pub(crate) const CTRL_STASH_TAIL: usize = 0;
pub(crate) const CTRL_STASH_CLAIMS: usize = 1;
const CTRL_STRIPE_BASE: usize = 16;
const CTRL_STRIPE_WORDS: usize = 16;
const CTRL_STRIPES: usize = 32;
const STRIPE_LEN: usize = 0;
const STRIPE_STEPS: usize = 1;
const STRIPE_MOVES: usize = 5;
pub(crate) const CTRL_WORDS: usize = CTRL_STRIPE_BASE + CTRL_STRIPES * CTRL_STRIPE_WORDS;

/// The sums of the striped counters of a control block copied to the host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counters {
    /// Pairs stored.
    pub len: u64,
    /// Inserts finished in each step.
    pub steps: [u64; 4],
    /// Keys displaced by evictions.
    pub moves: u64,
}

impl Counters {
    pub fn of(ctrl: &[u64]) -> Self {
        let mut c = Counters::default();
        for stripe in ctrl[CTRL_STRIPE_BASE..].chunks_exact(CTRL_STRIPE_WORDS) {
            c.len = c.len.wrapping_add(stripe[STRIPE_LEN]);
            for (sum, &x) in c
                .steps
                .iter_mut()
                .zip(&stripe[STRIPE_STEPS..STRIPE_STEPS + 4])
            {
                *sum += x;
            }
            c.moves += stripe[STRIPE_MOVES];
        }
        c
    }

    /// Zeroes the step and eviction counts of every stripe, keeping the lengths.
    pub fn reset_history(ctrl: &mut [u64]) {
        for stripe in ctrl[CTRL_STRIPE_BASE..].chunks_exact_mut(CTRL_STRIPE_WORDS) {
            for word in &mut stripe[STRIPE_STEPS..=STRIPE_MOVES] {
                *word = 0;
            }
        }
    }
}

/// Every word of an empty slot or stash entry (packed: key `u32::MAX`; wide: key
/// `u64::MAX`, and the value word all ones too).
pub(crate) const EMPTY: u64 = u64::MAX;

/// `#[repr(C)]` twin of `gpuds::hive::hive_ref<K, V>` for every key and value type (the
/// three instantiations share one layout: pointers and counts): the non-owning device
/// view of a [`HiveMap`](super::HiveMap), passed by value into kernels. Compile kernels
/// that use it with [`HiveMap::defines`](super::HiveMap::defines), naming the type
/// [`HiveMap::cuda_ref_type`](super::HiveMap::cuda_ref_type) gives.
///
/// The pointers are device addresses of memory the map owns: a ref is valid until the
/// map's next `&mut self` call (which may resize and move the arrays).
///
/// # Examples
/// ```no_run
/// use gpuds_hive::HiveMap;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let map = HiveMap::<u32, u32>::new(&gpu, 1 << 20)?;
/// let r = map.device_ref();
/// assert_eq!(r.buckets as usize * map.config().slots_per_bucket as usize, map.capacity());
/// # Ok::<(), gpuds_hive::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct HiveRef {
    /// The buckets' words: per bucket, `slots_per_bucket` packed 8-byte pairs (`u32`
    /// keys), or `slots_per_bucket` 8-byte keys followed by as many values (`u64` keys:
    /// 8 or 4 bytes each; with `u64` values and 16 slots, two parts of 8 keys each
    /// followed by their 8 values).
    pub slots: u64,
    /// One 64-bit word per bucket: free mask (low half), then lock, SPILL and STASHED
    /// flags and a version (high half).
    pub meta: u64,
    /// The stash's entries (a packed word, or a 16-byte key and value word, per pair).
    pub stash: u64,
    /// The control block (stash tail, striped length and step counts).
    pub ctrl: u64,
    /// The status word kernels report to: the table's own in a ref for user kernels
    /// (read by [`HiveMap::refresh`](super::HiveMap::refresh)), a call's own in the
    /// table's batches.
    pub status: u64,
    /// Failure bits: bit `i` (word `i / 32`, bit `i % 32`) set when operation `i` was not
    /// applied, for `i < failed_capacity`.
    pub failed: u64,
    /// `2^level - 1`.
    pub level_mask: u32,
    /// The split pointer.
    pub split: u32,
    /// Buckets in use: `level_mask + 1 + split`.
    pub buckets: u32,
    /// Stash capacity in entries.
    pub stash_capacity: u32,
    /// Operations that have a failure bit.
    pub failed_capacity: u32,
    /// Eviction rounds before the stash.
    pub eviction_bound: u32,
}

// SAFETY: plain old data with the layout of its C++ twin (checked by a layout test).
unsafe impl DeviceRepr for HiveRef {}

/// The suffix stamped into the kernel names of the `K`, `V` instantiation (`u64_u32`).
pub(crate) fn suffix<K: HiveKey, V: HiveValue<K>>() -> String {
    format!("{}_{}", K::SUFFIX, V::SUFFIX)
}

/// The C++ type of the device ref of a `HiveMap<K, V>`.
pub(crate) fn ref_type<K: HiveKey, V: HiveValue<K>>() -> String {
    format!("gpuds::hive::hive_ref<{}, {}>", K::CUDA_TYPE, V::CUDA_TYPE)
}

/// The module of one (key type, value type, slots per bucket, hash pair) combination.
pub(crate) fn program<K: HiveKey, V: HiveValue<K>>(slots: u32, hash: HashPair) -> Program {
    let suffix = suffix::<K, V>();
    Program::new(format!("hive_s{slots}_{}_{suffix}", hash.name()), SOURCE)
        .headers(crate::cuda_headers())
        .define("HIVE_SLOTS", slots)
        .define("HIVE_HASH", hash.define())
        .define("KEY_T", K::CUDA_TYPE)
        .define("VALUE_T", V::CUDA_TYPE)
        .define("KERNEL_SUFFIX", suffix)
}

/// The instantiations of one key and value type the crate tests compile: each bucket
/// size with the default pair, each other pair with 16-slot buckets.
fn programs_of<K: HiveKey, V: HiveValue<K>>() -> Vec<Program> {
    let mut programs: Vec<Program> = [8, 16, 32]
        .into_iter()
        .map(|s| program::<K, V>(s, HashPair::BitHash))
        .collect();
    programs.extend(
        HashPair::ALL
            .into_iter()
            .filter(|&h| h != HashPair::BitHash)
            .map(|h| program::<K, V>(16, h)),
    );
    programs
}

/// Every instantiation the crate tests compile, for the three key and value types.
pub(crate) fn programs() -> Vec<Program> {
    let mut programs = programs_of::<u32, u32>();
    programs.extend(programs_of::<u64, u32>());
    programs.extend(programs_of::<u64, u64>());
    programs
}

/// The loaded kernels of one instantiation.
#[derive(Clone, Debug)]
pub(crate) struct Kernels {
    pub init: Kernel,
    pub first_reserved: Kernel,
    pub insert: Kernel,
    pub insert_queued: Kernel,
    pub reinsert: Kernel,
    pub find: Kernel,
    pub erase: Kernel,
    pub apply: Kernel,
    pub split: Kernel,
    pub merge_check: Kernel,
    pub merge: Kernel,
    pub clear_stashed: Kernel,
}

impl Kernels {
    pub fn load<K: HiveKey, V: HiveValue<K>>(
        gpu: &Gpu,
        slots: u32,
        hash: HashPair,
    ) -> Result<Self> {
        let module = gpu.load(&program::<K, V>(slots, hash))?;
        let suffix = suffix::<K, V>();
        let get = |name: &str| module.kernel(&format!("hive_{name}_{suffix}"));
        Ok(Kernels {
            init: get("init")?,
            first_reserved: get("first_reserved")?,
            insert: get("insert")?,
            insert_queued: get("insert_queued")?,
            reinsert: get("reinsert")?,
            find: get("find")?,
            erase: get("erase")?,
            apply: get("apply")?,
            split: get("split")?,
            merge_check: get("merge_check")?,
            merge: get("merge")?,
            clear_stashed: get("clear_stashed")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn striped_counters_sum_and_reset() {
        let mut ctrl = vec![0u64; CTRL_WORDS];
        ctrl[CTRL_STASH_TAIL] = 9;
        let line = |i: usize| CTRL_STRIPE_BASE + i * CTRL_STRIPE_WORDS;
        ctrl[line(0) + STRIPE_LEN] = 5;
        ctrl[line(31) + STRIPE_LEN] = (-2i64) as u64;
        ctrl[line(3) + STRIPE_STEPS + 1] = 7;
        ctrl[line(4) + STRIPE_STEPS + 1] = 1;
        ctrl[line(4) + STRIPE_MOVES] = 2;
        let c = Counters::of(&ctrl);
        assert_eq!(c.len, 3);
        assert_eq!(c.steps, [0, 8, 0, 0]);
        assert_eq!(c.moves, 2);
        Counters::reset_history(&mut ctrl);
        let c = Counters::of(&ctrl);
        assert_eq!((c.len, c.steps, c.moves), (3, [0; 4], 0));
        assert_eq!(ctrl[CTRL_STASH_TAIL], 9);
    }
}
