//! gpuds-oversub: hash tables and skip lists whose contents may be larger than GPU memory
//! (Patel et al., 2026): [`FlatTable`] (the paper's HT-UVM baseline, §3.1), [`RangeTable`]
//! (HT-OVS, §4.1), [`SkipList`] (GFSL / SL-UVM, §3.2) and [`RangeSkipList`] (SL-OVS,
//! §4.2.2), on device memory, managed memory (guarded) or host-mapped memory
//! ([`Placement`]; range tables also tiered), and the paper's workloads.
//!
//! Keys and values are u32; keys 0 and u32::MAX are reserved (empty slot, tombstone)
//! and rejected with an error naming the index and key.
//!
//! ```no_run
//! use gpuds_oversub::{FlatTable, RangeTable, RangeTableConfig, Placement};
//! let gpu = gpuds_core::Gpu::new(0)?;
//! let keys: Vec<u32> = (1..=1000).collect();
//! let mut flat = FlatTable::new(&gpu, 1000, Placement::HostMapped)?;
//! flat.insert_many(&keys, &keys)?;
//! let mut ranges = RangeTable::with_config(&gpu, RangeTableConfig { placement: Placement::HostMapped, ..Default::default() })?;
//! ranges.insert_many(&keys, &keys)?;
//! assert_eq!(flat.get_many(&[7])?, ranges.get_many(&[7])?);
//! # Ok::<(), gpuds_oversub::Error>(())
//! ```
#![warn(missing_docs)]

mod batch;
mod error;
#[cfg(feature = "fault-injection")]
pub mod faults;
mod flat;
mod kernels;
pub mod kmer;
mod placement;
mod range;
mod skiplist;
mod streams;
pub mod workload;

pub use batch::RESERVED_KEYS;
pub use error::{Error, Result};
pub use flat::{FlatTable, FlatTableConfig, WINDOW};
pub use placement::{managed_bytes, Placement, Region};
pub use range::{RangeTable, RangeTableConfig};
pub use skiplist::{
    NodeLayout, PoolLayout, RangePairs, RangeSkipList, RangeSkipListConfig, SkipList,
    SkipListConfig,
};

/// Memory of a table per tier, and its containers (a flat table: 1; a range table: its
/// inner tables in use).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableStats {
    /// Bytes in device memory.
    pub device_bytes: u64,
    /// Bytes in managed memory.
    pub managed_bytes: u64,
    /// Bytes in pinned host memory mapped into the device.
    pub host_bytes: u64,
    /// Containers (inner tables) allocated.
    pub containers: u64,
    /// `Tiered`: containers copied into the device cache.
    pub moved_in: u64,
    /// `Tiered`: of `moved_in`, the containers copied in on the copy stream while the
    /// previous run's kernel could still run (the rest waited for it).
    pub overlapped_in: u64,
    /// `Tiered`: containers written back out of it.
    pub moved_out: u64,
    /// `Tiered`: bytes copied over the host link (in and out).
    pub link_bytes: u64,
    /// `Tiered`: device time (ns) the kernels waited for copies to finish.
    pub copy_wait_ns: u64,
}

impl TableStats {
    pub(crate) fn add(&mut self, placement: Placement, bytes: u64) {
        match placement {
            Placement::Device => self.device_bytes += bytes,
            Placement::Managed => self.managed_bytes += bytes,
            Placement::HostMapped | Placement::Tiered { .. } => self.host_bytes += bytes,
        }
    }
}

/// The kernel modules of gpuds-oversub, for a compile test without a GPU.
pub fn programs() -> Vec<gpuds_core::Program> {
    vec![
        kernels::program(),
        kernels::skiplist_program(),
        kernels::workload_program(),
    ]
}

/// gpuds-oversub's device headers and those of gpuds-core, as (include name, text).
pub fn cuda_headers() -> Vec<(&'static str, &'static str)> {
    let mut headers = gpuds_core::cuda_headers();
    headers.push((
        "gpuds/oversub/flat.cuh",
        include_str!("../cuda/include/gpuds/oversub/flat.cuh"),
    ));
    headers.push((
        "gpuds/oversub/skiplist.cuh",
        include_str!("../cuda/include/gpuds/oversub/skiplist.cuh"),
    ));
    headers.push((
        "gpuds/oversub/workload.cuh",
        include_str!("../cuda/include/gpuds/oversub/workload.cuh"),
    ));
    headers.push((
        "gpuds/oversub/kmer.cuh",
        include_str!("../cuda/include/gpuds/oversub/kmer.cuh"),
    ));
    headers
}
