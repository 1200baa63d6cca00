//! The device side of HiveMap: the ref mirror, the kernel module and its kernels.

use cudarc::driver::DeviceRepr;
use gpuds_core::{Gpu, Kernel, Program};

use super::config::HashPair;
use crate::error::Result;

const SOURCE: &str = include_str!("../../cuda/kernels/hive.cu");

/// Control-block words, as in `gpuds/hive/hive_ref.cuh`.
pub(crate) const CTRL_LEN: usize = 0;
pub(crate) const CTRL_STASH_TAIL: usize = 1;
pub(crate) const CTRL_FAILED: usize = 2;
pub(crate) const CTRL_STEPS: usize = 3;
pub(crate) const CTRL_MOVES: usize = 7;
pub(crate) const CTRL_WORDS: usize = 8;

/// The empty slot word (key `u32::MAX`, which is therefore reserved).
pub(crate) const EMPTY: u64 = u64::MAX;

/// `#[repr(C)]` twin of `gpuds::hive::hive_ref`: the non-owning device view of a
/// [`HiveMap`](super::HiveMap), passed by value into kernels. Compile kernels that use it
/// with [`HiveMap::defines`](super::HiveMap::defines).
///
/// The pointers are device addresses of memory the map owns: a ref is valid until the
/// map's next `&mut self` call (which may resize and move the arrays).
///
/// # Examples
/// ```no_run
/// use gpuds_hive::HiveMap;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let map = HiveMap::new(&gpu, 1 << 20)?;
/// let r = map.device_ref();
/// assert_eq!(r.buckets as usize * map.config().slots_per_bucket as usize, map.capacity());
/// # Ok::<(), gpuds_hive::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct HiveRef {
    /// Packed slot words, `slots_per_bucket` per bucket.
    pub slots: u64,
    /// Two words per bucket: free mask, version (odd = locked).
    pub meta: u64,
    /// The stash's words.
    pub stash: u64,
    /// The control block (length, stash tail, failures, step counts).
    pub ctrl: u64,
    /// The table's status word.
    pub status: u64,
    /// Indices of failed operations.
    pub failed: u64,
    /// `2^level - 1`.
    pub level_mask: u32,
    /// The split pointer.
    pub split: u32,
    /// Buckets in use: `level_mask + 1 + split`.
    pub buckets: u32,
    /// Stash capacity in words.
    pub stash_capacity: u32,
    /// Capacity of the failed-index list.
    pub failed_capacity: u32,
    /// Eviction rounds before the stash.
    pub eviction_bound: u32,
}

// SAFETY: plain old data with the layout of its C++ twin (checked by a layout test).
unsafe impl DeviceRepr for HiveRef {}

/// The module of one (slots per bucket, hash pair) combination.
pub(crate) fn program(slots: u32, hash: HashPair) -> Program {
    Program::new(format!("hive_s{slots}_{}", hash.name()), SOURCE)
        .headers(crate::cuda_headers())
        .define("HIVE_SLOTS", slots)
        .define("HIVE_HASH", hash.define())
}

/// Every instantiation the crate tests compile: each bucket size with the default pair,
/// each pair with 16-slot buckets.
pub(crate) fn programs() -> Vec<Program> {
    let mut programs: Vec<Program> = [8, 16, 32]
        .into_iter()
        .map(|s| program(s, HashPair::BitHash))
        .collect();
    programs.extend(
        HashPair::ALL
            .into_iter()
            .filter(|&h| h != HashPair::BitHash)
            .map(|h| program(16, h)),
    );
    programs
}

/// The loaded kernels of one instantiation.
#[derive(Clone, Debug)]
pub(crate) struct Kernels {
    pub init: Kernel,
    pub first_reserved: Kernel,
    pub insert: Kernel,
    pub reinsert: Kernel,
    pub find: Kernel,
    pub erase: Kernel,
    pub apply: Kernel,
    pub split: Kernel,
    pub merge_check: Kernel,
    pub merge: Kernel,
}

impl Kernels {
    pub fn load(gpu: &Gpu, slots: u32, hash: HashPair) -> Result<Self> {
        let module = gpu.load(&program(slots, hash))?;
        let get = |name: &str| module.kernel(&format!("hive_{name}"));
        Ok(Kernels {
            init: get("init")?,
            first_reserved: get("first_reserved")?,
            insert: get("insert")?,
            reinsert: get("reinsert")?,
            find: get("find")?,
            erase: get("erase")?,
            apply: get("apply")?,
            split: get("split")?,
            merge_check: get("merge_check")?,
            merge: get("merge")?,
        })
    }
}
