//! Host copies of the tree: statistics, validation, and the build from scratch.

use super::*;
use crate::validate::{walk_at, walk_versions, VersionWalk};
use gpuds_btree::validate::TreeShape;

/// Shape, versions and memory of a map: what [`VersionedBTreeMap::stats`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct VersionStats {
    /// Height, nodes and pairs per level of the newest state.
    pub shape: TreeShape,
    /// Pairs in the newest state.
    pub len: u64,
    /// Nodes of the newest state (version list heads).
    pub heads: u64,
    /// Older versions kept for live snapshots (or not collected yet).
    pub versions: u64,
    /// `[i]`: heads whose list holds `i + 1` versions.
    pub versions_per_node: Vec<u64>,
    /// Slab units in use (heads and older versions).
    pub units_in_use: u64,
    /// Slab units the pool holds.
    pub capacity_units: u64,
    /// Bytes per node (one slab unit).
    pub bytes_per_node: u32,
    /// Older versions freed by the collector since the map was made (units).
    pub reclaimed_units: u64,
    /// Times the collector ran.
    pub collector_runs: u64,
    /// Older versions kernels handed to the epoch-based reclaimer (units).
    pub retired_in_kernels: u64,
    /// Of those, units handed back to the pool.
    pub reclaimed_in_kernels: u64,
    /// The global timestamp (the next snapshot's).
    pub clock: u32,
    /// The oldest live snapshot, if any.
    pub oldest_live_snapshot: Option<u32>,
    /// Live snapshots (distinct timestamps).
    pub live_snapshots: usize,
}

impl VersionStats {
    /// Bytes of units in use.
    pub fn bytes_in_use(&self) -> u64 {
        self.units_in_use * self.bytes_per_node as u64
    }

    /// Bytes of older versions.
    pub fn version_bytes(&self) -> u64 {
        self.versions * self.bytes_per_node as u64
    }

    /// Bytes the collector has freed.
    pub fn reclaimed_bytes(&self) -> u64 {
        self.reclaimed_units * self.bytes_per_node as u64
    }
}

impl<K: TreeKey, V: TreeValue> VersionedBTreeMap<K, V> {
    /// The global timestamp. Synchronizes.
    fn clock_now(&self) -> Result<u32> {
        Ok(self
            .gpu
            .stream()
            .clone_dtoh(&self.clock)?
            .first()
            .copied()
            .unwrap_or(0))
    }

    /// Checks the whole structure on a host copy of the pool (see
    /// [`crate::validate::walk_versions`]): the newest state and the state at every live
    /// snapshot are valid B-link trees; version lists are well formed; every unit in use
    /// is a head or an older version; the pair count matches.
    fn walk(&self, collect: bool) -> Result<VersionWalk<K, V>> {
        let pool = self.runner.pool().snapshot()?;
        let fetch = |a: u32| {
            if pool.is_allocated(a) {
                pool.unit(a).map(|w| w.to_vec())
            } else {
                None
            }
        };
        let live = self.snapshots.timestamps();
        let walk = walk_versions::<K, V>(
            self.layout,
            self.root,
            &fetch,
            &live,
            self.clock_now()?,
            collect,
        )
        .map_err(Error::Invalid)?;
        let in_use = pool.units_in_use();
        if in_use != walk.heads + walk.copies {
            return Err(Error::Invalid(format!(
                "{} heads and {} older versions are reachable but the pool has {in_use} units in use",
                walk.heads, walk.copies
            )));
        }
        Ok(walk)
    }

    /// The pairs a query at `ts` sees (LATEST: the newest state), from a host copy of the
    /// pool: the tree at `ts` is walked and checked as by validation.
    pub(super) fn pairs_at(&self, ts: u32) -> Result<Vec<(K, V)>> {
        let pool = self.runner.pool().snapshot()?;
        let fetch = |a: u32| {
            if pool.is_allocated(a) {
                pool.unit(a).map(|w| w.to_vec())
            } else {
                None
            }
        };
        let (_, pairs) =
            walk_at::<K, V>(self.layout, self.root, &fetch, ts).map_err(Error::Invalid)?;
        Ok(pairs)
    }

    /// Shape, versions and memory, from a host copy of the pool (checked as by
    /// [`VersionedBTreeMap::validate`]). Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_mvbtree::VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// map.insert_many(&[1, 2], &[10, 20])?;
    /// let s = map.snapshot()?;
    /// map.insert_many(&[3], &[30])?;
    /// let stats = map.stats()?;
    /// assert_eq!(stats.versions, 1); // the leaf as s sees it
    /// assert_eq!(stats.oldest_live_snapshot, Some(s.timestamp()));
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn stats(&self) -> Result<VersionStats> {
        let walk = self.walk(false)?;
        let live = self.snapshots.timestamps();
        let ebr = self.reclaimer.stats()?;
        Ok(VersionStats {
            len: self.len()? as u64,
            heads: walk.heads,
            versions: walk.copies,
            versions_per_node: walk.versions_per_node,
            units_in_use: walk.heads + walk.copies,
            capacity_units: self.runner.pool().capacity_units(),
            bytes_per_node: self.layout.node_bytes,
            reclaimed_units: self.collector.freed,
            collector_runs: self.collector.runs,
            retired_in_kernels: ebr.retired,
            reclaimed_in_kernels: ebr.reclaimed,
            clock: self.clock_now()?,
            oldest_live_snapshot: live.first().copied(),
            live_snapshots: live.len(),
            shape: walk.shape,
        })
    }

    /// Copies the tree to the host and checks every invariant: those of
    /// [`gpuds_btree::GpuBTreeMap::validate`] on the newest state and on the state at
    /// every live snapshot, that version lists never increase in timestamp and hold only
    /// older versions, that no unit is reached twice and every unit in use is reached,
    /// that the pair count agrees with [`VersionedBTreeMap::len`], and the status words.
    /// Synchronizes.
    pub fn validate(&self) -> Result<()> {
        self.check()?;
        let walk = self.walk(false)?;
        let len = self.len()? as u64;
        if walk.shape.keys() != len {
            return Err(Error::Invalid(format!(
                "the leaves hold {} pairs but the size counter says {len}",
                walk.shape.keys()
            )));
        }
        Ok(())
    }

    /// Replaces the contents with the given pairs (for a repeated key the last pair
    /// wins), inserted in key order into an empty tree. Refused while a snapshot is live
    /// (the old contents are freed). Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = gpuds_mvbtree::VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// map.bulk_build(&[5, 3, 5, 1], &[50, 30, 51, 10])?;
    /// assert_eq!(map.to_vec()?, vec![(1, 10), (3, 30), (5, 51)]);
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn bulk_build(&mut self, keys: &[K], values: &[V]) -> Result<()> {
        same_len(keys.len(), values.len(), "values")?;
        if self.snapshots.bounds().is_some() {
            return Err(gpuds_core::Error::InvalidArgument(
                "bulk_build replaces the contents, which live snapshots still read".into(),
            )
            .into());
        }
        let mut pairs: Vec<(K, V)> = keys.iter().copied().zip(values.iter().copied()).collect();
        // Stable: among equal keys the later pair stays later, and the last one is kept.
        pairs.sort_by_key(|p| p.0);
        let mut unique: Vec<(K, V)> = Vec::with_capacity(pairs.len());
        for p in pairs {
            match unique.last_mut() {
                Some(last) if last.0 == p.0 => *last = p,
                _ => unique.push(p),
            }
        }
        // Nothing may stay in the reclaimer's limbo: it would be freed again after the reset.
        self.reclaimer.drain(self.runner.pool())?;
        self.runner.pool_mut().reset()?;
        self.init_root()?;
        let (k, v): (Vec<K>, Vec<V>) = unique.into_iter().unzip();
        self.insert_many(&k, &v)
    }
}
