//! The skip lists of Patel et al. (2026): [`SkipList`], the GPU-friendly skip list
//! (GFSL, §2.2 and §3.2; SL-UVM when its nodes are host-mapped or managed) with the
//! §4.2.1 options, and [`RangeSkipList`] (SL-OVS, §4.2.2): an outer array of key ranges,
//! each with its own inner skip list, count and min/max key, plus an auxiliary skip list
//! of the non-empty ranges for successor, predecessor and range queries across ranges.
//!
//! Super-nodes are 256 bytes, one 8-byte slot per lane of a warp: 30 (key, value) pairs
//! (index layers: (key, down node)), the node's high key with its next node, and a lock
//! with the node's level and marks. One warp serves one operation. Insertions lock the
//! data node that covers the key, moving right past nodes whose high key is below it
//! (B-link style), and split a full node into two halves, raising the new node's first
//! key into the layer above; removals merge a node that falls to a third full into its
//! right neighbour (splitting the neighbour first when both do not fit). Queries take no
//! locks. The device code's header comment (`gpuds/oversub/skiplist.cuh`) gives the
//! invariants and why a search is never misled by a concurrent split or merge.
//!
//! Keys are 1 ..= 2^32 - 2 (0 and 2^32 - 1 are rejected naming the index and key);
//! values are any u32. Batches are sorted on the device before they run, as the paper's.

mod check;
mod layout;
mod lists;
mod plan;
mod repair;
mod tier;

use gpuds_core::Gpu;

use crate::batch::{check_host_keys, same_len, Failures};
use crate::error::{Error, Result};
use crate::placement::Placement;
use crate::TableStats;
use layout::{MAX_LEVELS, UNSORTED};
use lists::{Lists, Shape};

/// How a data-layer node keeps its keys (§4.2.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NodeLayout {
    /// Sorted (GFSL): an insertion shifts the larger keys right.
    #[default]
    Sorted,
    /// Unsorted: an insertion appends, a removal moves the last key into the hole; nodes
    /// are sorted only when split or merged. Faster insertions, slower range walks.
    Unsorted,
}

/// Which node pools a [`SkipList`] allocates from (§4.2.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PoolLayout {
    /// One pool for every layer.
    #[default]
    Shared,
    /// One pool for the data layer, one for all index layers.
    IndexSeparate,
    /// One pool per layer.
    PerLayer,
}

/// How a [`SkipList`] is built.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SkipListConfig {
    /// Where the data-layer nodes live (and the index layers', unless pinned).
    pub placement: Placement,
    /// Data-node layout.
    pub layout: NodeLayout,
    /// Node pools.
    pub pools: PoolLayout,
    /// Index-layer nodes in device memory whatever the placement (needs a pool layout
    /// other than `Shared`).
    pub pin_index_layers: bool,
    /// Consecutive keys of a sorted batch dealt to one warp (1: the cyclic deal; the
    /// paper's block-cyclic deal uses 300 for SL-UVM).
    pub keys_per_warp: u32,
    /// The most thread blocks (of 128 threads) a kernel that deals keys to warps
    /// launches; 0 (the default): as many as the operations need, up to every block that
    /// can be resident at once. Fewer warps each take more keys of the deal (the paper's
    /// Table 9 varies this).
    pub max_blocks: u32,
    /// Keys per kernel (the paper's GBS, 2.5 × 10^8); larger calls run in batches.
    pub batch: usize,
    /// Nodes each pool starts with (pools grow by doubling).
    pub initial_nodes: u64,
}

impl Default for SkipListConfig {
    fn default() -> Self {
        Self {
            placement: Placement::Device,
            layout: NodeLayout::Sorted,
            pools: PoolLayout::Shared,
            pin_index_layers: false,
            keys_per_warp: 1,
            max_blocks: 0,
            batch: 250_000_000,
            initial_nodes: 1 << 12,
        }
    }
}

fn check_placement(placement: Placement) -> Result<()> {
    if let Placement::Tiered { .. } = placement {
        return Err(Error::Config(
            "the tiered placement is for range tables and range skip lists; a skip list takes \
             device, managed or host-mapped memory"
                .into(),
        ));
    }
    Ok(())
}

fn check_batch(batch: usize) -> Result<()> {
    if batch == 0 {
        return Err(Error::Config("batch must be at least 1".into()));
    }
    Ok(())
}

/// Pairs of a batch of range queries: query `i`'s pairs are `get(i)`, in key order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangePairs {
    offsets: Vec<usize>,
    pairs: Vec<(u32, u32)>,
}

impl RangePairs {
    /// Number of queries.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
    /// True when there were no queries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Query `i`'s pairs (empty past the end).
    pub fn get(&self, i: usize) -> &[(u32, u32)] {
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.pairs[a..b],
            _ => &[],
        }
    }
    /// Every pair, query after query.
    pub fn pairs(&self) -> &[(u32, u32)] {
        &self.pairs
    }
}

/// The operations both skip lists share, on their engine.
macro_rules! skip_list_ops {
    () => {
        /// Inserts or replaces `keys[i] -> values[i]` (duplicates inside a batch keep one
        /// of their values). A reserved key fails the call before anything is applied.
        /// Operations that could not apply (a lock wait given up) fail the call with
        /// [`gpuds_core::Error::NotApplied`] naming their positions in `keys`; every other
        /// operation of the call applied. Synchronizes.
        pub fn insert_many(&mut self, keys: &[u32], values: &[u32]) -> Result<()> {
            same_len("keys and values", keys.len(), values.len())?;
            check_host_keys(keys)?;
            self.insert_batches(keys, values, false)
        }

        /// Adds `deltas[i]` to the value of `keys[i]` (wrapping), inserting the key with
        /// `deltas[i]` when absent: counting (k-mer counts). Reserved keys as
        /// [`insert_many`](Self::insert_many). Synchronizes.
        pub fn add_many(&mut self, keys: &[u32], deltas: &[u32]) -> Result<()> {
            same_len("keys and deltas", keys.len(), deltas.len())?;
            check_host_keys(keys)?;
            self.insert_batches(keys, deltas, true)
        }

        /// Inserts (or with `add` adds) in batches of `batch` keys; a batch whose
        /// operations fail some does not stop the next: the error names every failed
        /// position of the call.
        fn insert_batches(&mut self, keys: &[u32], values: &[u32], add: bool) -> Result<()> {
            let stream = self.lists.gpu.stream().clone();
            let mut failures = Failures::default();
            for (c, (k, v)) in keys
                .chunks(self.batch)
                .zip(values.chunks(self.batch))
                .enumerate()
            {
                let done = self
                    .lists
                    .insert(stream.clone_htod(k)?, stream.clone_htod(v)?, add);
                failures.take(done, c * self.batch)?;
            }
            failures.finish(())
        }

        /// Removes each key; `true` where this call removed it. An error naming
        /// operations (a lock wait given up) names positions in `keys`; every other
        /// removal of the call applied. Synchronizes.
        pub fn remove_many(&mut self, keys: &[u32]) -> Result<Vec<bool>> {
            check_host_keys(keys)?;
            let mut out = Vec::with_capacity(keys.len());
            let mut failures = Failures::default();
            for (c, k) in keys.chunks(self.batch).enumerate() {
                if let Some(removed) = failures.take(self.lists.erase(k), c * self.batch)? {
                    out.extend(removed);
                }
            }
            failures.finish(out)
        }

        /// The value of each key (`None` where absent). Synchronizes.
        pub fn get_many(&mut self, keys: &[u32]) -> Result<Vec<Option<u32>>> {
            check_host_keys(keys)?;
            let mut out = Vec::with_capacity(keys.len());
            let mut failures = Failures::default();
            for (c, k) in keys.chunks(self.batch).enumerate() {
                if let Some((found, values)) =
                    failures.take(self.lists.find(k, true), c * self.batch)?
                {
                    out.extend(found.into_iter().zip(values).map(|(f, v)| f.then_some(v)));
                }
            }
            failures.finish(out)
        }

        /// Whether each key is present. Synchronizes.
        pub fn contains_many(&mut self, keys: &[u32]) -> Result<Vec<bool>> {
            check_host_keys(keys)?;
            let mut out = Vec::with_capacity(keys.len());
            let mut failures = Failures::default();
            for (c, k) in keys.chunks(self.batch).enumerate() {
                if let Some((found, _)) =
                    failures.take(self.lists.find(k, false), c * self.batch)?
                {
                    out.extend(found);
                }
            }
            failures.finish(out)
        }

        /// For each key k, the pair with the smallest key >= k (any u32 may be asked).
        /// Synchronizes.
        pub fn successor_many(&mut self, keys: &[u32]) -> Result<Vec<Option<(u32, u32)>>> {
            let mut out = Vec::with_capacity(keys.len());
            for k in keys.chunks(self.batch) {
                out.extend(self.lists.neighbours(k, false)?);
            }
            Ok(out)
        }

        /// For each key k, the pair with the largest key <= k (any u32 may be asked).
        /// Synchronizes.
        pub fn predecessor_many(&mut self, keys: &[u32]) -> Result<Vec<Option<(u32, u32)>>> {
            let mut out = Vec::with_capacity(keys.len());
            for k in keys.chunks(self.batch) {
                out.extend(self.lists.neighbours(k, true)?);
            }
            Ok(out)
        }

        /// Every pair with `lo <= key <= hi` for each `(lo, hi)`, in key order: a count
        /// pass, an exclusive scan of the counts, a collect pass. `lo > hi` is empty.
        /// Synchronizes.
        pub fn range_many(&mut self, ranges: &[(u32, u32)]) -> Result<RangePairs> {
            let c = self.lists.range(ranges)?;
            Ok(RangePairs {
                offsets: c.offsets,
                pairs: c.keys.into_iter().zip(c.values).collect(),
            })
        }

        /// Nodes the index misses: live nodes holding a key, other than heads, that no
        /// entry of the layer above names (raises dropped for want of a node, or while
        /// another warp made a layer's head, and not yet made again). Searches are
        /// correct without them, only longer. Insertion and removal calls that drop
        /// raises repair the index before they return (best effort: a few passes), so
        /// this is normally 0 between calls. Synchronizes; copies the nodes to the host.
        pub fn unindexed_nodes(&self) -> Result<u64> {
            check::unindexed(&self.lists)
        }

        /// Raises dropped by the kernels so far (each is made again by a repair pass;
        /// see [`unindexed_nodes`](Self::unindexed_nodes)). Does not synchronize.
        pub fn raises_dropped(&self) -> u64 {
            self.lists.raises_dropped()
        }

        /// Raises every node the index misses into the layer above (a repair pass over
        /// every node pool, as the calls that drop raises run on their own): for after
        /// a call whose repair could not finish. Best effort: a raise that still finds
        /// no node is counted and repaired by a later call. Synchronizes.
        pub fn repair_index(&mut self) -> Result<()> {
            self.lists.repair(true)
        }

        /// Test-only: injects `faults` (replacing earlier ones; see
        /// [`crate::faults`]). Synchronizes.
        #[cfg(feature = "fault-injection")]
        pub fn inject_faults(&mut self, faults: crate::faults::Faults) -> Result<()> {
            self.lists.inject_faults(faults)
        }

        /// Live keys. Synchronizes.
        pub fn len(&self) -> Result<u64> {
            self.lists.len()
        }

        /// Whether no key is live. Synchronizes.
        pub fn is_empty(&self) -> Result<bool> {
            Ok(self.len()? == 0)
        }

        /// Every live pair in key order. Synchronizes; copies the nodes to the host.
        pub fn to_vec(&self) -> Result<Vec<(u32, u32)>> {
            self.lists.to_vec()
        }

        /// Checks every invariant on a host copy: each layer's nodes in key order with
        /// increasing high keys ending at 2^32 - 1, keys inside their node's range, sorted
        /// where the layout says so and never repeated, no gap among a node's slots, every
        /// index entry naming a live node of the layer below whose range starts below
        /// it, no dead node linked, the counts and (range lists) bounds exact, every
        /// node handed out either reached once or on its pool's free list, and (range
        /// lists) the auxiliary list naming exactly the non-empty ranges. Synchronizes.
        pub fn validate(&self) -> Result<()> {
            check::validate(&self.lists)
        }

        /// Bytes per tier (node pools; tiered: homes as host bytes, the cache's copies
        /// as device bytes), the containers (lists with a head) and, tiered, the pools
        /// moved into and out of the cache and the bytes they took over the host link.
        /// Synchronizes.
        pub fn stats(&self) -> Result<TableStats> {
            let mut s = TableStats::default();
            self.lists.add_stats(&mut s);
            s.containers = self
                .lists
                .list_descs()?
                .iter()
                .filter(|d| d.heads[0] != layout::NIL)
                .count() as u64;
            Ok(s)
        }
    };
}

/// The GPU-friendly skip list (GFSL; the paper's SL-UVM baseline when its nodes are
/// host-mapped or managed): warp-sized super-nodes, lock-based insertion with splits that
/// raise keys, removal with merges at a third full, lock-free searches.
///
/// ```no_run
/// use gpuds_oversub::{Placement, SkipList};
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let mut s = SkipList::new(&gpu, Placement::HostMapped)?;
/// s.insert_many(&[10, 20, 30], &[1, 2, 3])?;
/// assert_eq!(s.get_many(&[20, 25])?, vec![Some(2), None]);
/// assert_eq!(s.successor_many(&[21])?, vec![Some((30, 3))]);
/// assert_eq!(s.predecessor_many(&[21])?, vec![Some((20, 2))]);
/// assert_eq!(s.range_many(&[(15, 30)])?.get(0), &[(20, 2), (30, 3)]);
/// assert_eq!(s.remove_many(&[10, 11])?, vec![true, false]);
/// s.validate()?;
/// # Ok::<(), gpuds_oversub::Error>(())
/// ```
pub struct SkipList {
    lists: Lists,
    config: SkipListConfig,
    batch: usize,
}

impl std::fmt::Debug for SkipList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkipList")
            .field("config", &self.config)
            .finish()
    }
}

impl SkipList {
    /// An empty skip list with the default configuration in `placement`. Synchronizes.
    pub fn new(gpu: &Gpu, placement: Placement) -> Result<Self> {
        Self::with_config(
            gpu,
            SkipListConfig {
                placement,
                ..Default::default()
            },
        )
    }

    /// An empty skip list. Synchronizes.
    pub fn with_config(gpu: &Gpu, config: SkipListConfig) -> Result<Self> {
        check_placement(config.placement)?;
        check_batch(config.batch)?;
        if config.pin_index_layers && config.pools == PoolLayout::Shared {
            return Err(Error::Config(
                "pin_index_layers needs index nodes in their own pools (IndexSeparate or PerLayer)"
                    .into(),
            ));
        }
        let index = if config.pin_index_layers {
            Placement::Device
        } else {
            config.placement
        };
        let (mode, placements) = match config.pools {
            PoolLayout::Shared => (0, vec![config.placement]),
            PoolLayout::IndexSeparate => (1, vec![config.placement, index]),
            PoolLayout::PerLayer => {
                let mut p = vec![index; MAX_LEVELS];
                p[0] = config.placement;
                (2, p)
            }
        };
        let flags = mode
            | if config.layout == NodeLayout::Unsorted {
                UNSORTED
            } else {
                0
            };
        let lists = Lists::new(
            gpu,
            &placements,
            Shape {
                flags,
                num_lists: 1,
                shift: 32,
                keys_per_warp: config.keys_per_warp.max(1),
                max_blocks: config.max_blocks,
                initial_nodes: config.initial_nodes,
                with_aux: false,
                tiered: None,
            },
        )?;
        Ok(Self {
            lists,
            batch: config.batch,
            config,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &SkipListConfig {
        &self.config
    }

    skip_list_ops!();
}

/// How a [`RangeSkipList`] is built.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RangeSkipListConfig {
    /// Where the nodes live.
    pub placement: Placement,
    /// Data-node layout of the inner lists.
    pub layout: NodeLayout,
    /// Keys per range (the paper's RNG, 2^21): a power of two from 2^12 to 2^31.
    pub keys_per_range: u64,
    /// Consecutive keys of a sorted batch dealt to one warp (default 1, the cyclic deal,
    /// measured faster here; the paper uses 180 for SL-OVS).
    pub keys_per_warp: u32,
    /// The most thread blocks a kernel that deals keys to warps launches (0, the
    /// default: up to every block that can be resident; see
    /// [`SkipListConfig::max_blocks`]).
    pub max_blocks: u32,
    /// Keys per kernel (GBS).
    pub batch: usize,
    /// Nodes the shared pool starts with (tiered: each range's pool).
    pub initial_nodes: u64,
}

impl Default for RangeSkipListConfig {
    fn default() -> Self {
        Self {
            placement: Placement::Device,
            layout: NodeLayout::Sorted,
            keys_per_range: 1 << 21,
            keys_per_warp: 1,
            max_blocks: 0,
            batch: 250_000_000,
            initial_nodes: 1 << 12,
        }
    }
}

/// The two-level skip list (SL-OVS): key k belongs to range k / keys_per_range, each
/// range has its own inner skip list (made when a batch first touches it) with its count
/// and min / max key, and an auxiliary skip list of the non-empty ranges answers
/// successor, predecessor and range queries that leave a range. Inner lists share one
/// node pool in the placement; under [`Placement::Tiered`] each range has a pool of its
/// own, homed in pinned host memory, and a device cache within the budget holds whole
/// pools: every batch runs range run by range run, each run's pools copied in first
/// (least recently used ones evicted, written back when dirty), and queries that leave
/// their range are answered in the one range the list bounds name.
///
/// ```no_run
/// use gpuds_oversub::{Placement, RangeSkipList, RangeSkipListConfig};
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let config = RangeSkipListConfig { placement: Placement::HostMapped, keys_per_range: 1 << 12, ..Default::default() };
/// let mut s = RangeSkipList::with_config(&gpu, config)?;
/// s.insert_many(&[5, 100_000], &[50, 7])?;
/// assert_eq!(s.successor_many(&[6])?, vec![Some((100_000, 7))]);
/// assert_eq!(s.predecessor_many(&[99_999])?, vec![Some((5, 50))]);
/// # Ok::<(), gpuds_oversub::Error>(())
/// ```
pub struct RangeSkipList {
    lists: Lists,
    config: RangeSkipListConfig,
    batch: usize,
}

impl std::fmt::Debug for RangeSkipList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeSkipList")
            .field("config", &self.config)
            .finish()
    }
}

impl RangeSkipList {
    /// An empty range skip list with the default configuration. Synchronizes.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Self::with_config(gpu, RangeSkipListConfig::default())
    }

    /// An empty range skip list. Synchronizes.
    ///
    /// Under [`Placement::Tiered`], a budget below one range's first pool
    /// (`initial_nodes`, at least 16, times 256 bytes) is a configuration error.
    pub fn with_config(gpu: &Gpu, config: RangeSkipListConfig) -> Result<Self> {
        check_batch(config.batch)?;
        let rng = config.keys_per_range;
        if !rng.is_power_of_two() || !((1 << 12)..=(1 << 31)).contains(&rng) {
            return Err(Error::Config(format!(
                "keys_per_range must be a power of two from 2^12 to 2^31, got {rng}"
            )));
        }
        let shift = rng.trailing_zeros();
        let flags = if config.layout == NodeLayout::Unsorted {
            UNSORTED
        } else {
            0
        };
        let (placements, tiered): (&[Placement], _) = match config.placement {
            Placement::Tiered {
                device_budget_bytes,
            } => (&[], Some(device_budget_bytes)),
            _ => (std::slice::from_ref(&config.placement), None),
        };
        let lists = Lists::new(
            gpu,
            placements,
            Shape {
                flags,
                num_lists: 1u64 << (32 - shift),
                shift,
                keys_per_warp: config.keys_per_warp.max(1),
                max_blocks: config.max_blocks,
                initial_nodes: config.initial_nodes,
                with_aux: true,
                tiered,
            },
        )?;
        Ok(Self {
            lists,
            batch: config.batch,
            config,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &RangeSkipListConfig {
        &self.config
    }

    /// Number of ranges (2^32 / keys_per_range).
    pub fn num_ranges(&self) -> u64 {
        self.lists.num_lists
    }

    skip_list_ops!();
}
