//! [`Snapshot`]: a read view of a [`crate::VersionedBTreeMap`] at one timestamp, and the
//! registry of the live ones that the version collector keeps readable.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

/// The timestamps of a map's live snapshots, with how many handles hold each.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    live: BTreeMap<u32, usize>,
}

impl Registry {
    /// Live timestamps, ascending.
    pub fn timestamps(&self) -> Vec<u32> {
        self.live.keys().copied().collect()
    }

    /// The oldest and newest live timestamps.
    pub fn bounds(&self) -> Option<(u32, u32)> {
        Some((*self.live.keys().next()?, *self.live.keys().next_back()?))
    }
}

/// Identity of a map, so that a snapshot of one map is refused by another.
static NEXT_MAP_ID: AtomicU64 = AtomicU64::new(1);

/// The snapshot side of one map: its identity and its registry.
#[derive(Clone, Debug)]
pub(crate) struct Snapshots {
    id: u64,
    registry: Arc<Mutex<Registry>>,
}

impl Snapshots {
    pub fn new() -> Self {
        Self {
            id: NEXT_MAP_ID.fetch_add(1, Ordering::Relaxed),
            registry: Arc::default(),
        }
    }

    /// Registers a handle of timestamp `ts`.
    pub fn hold(&self, ts: u32) -> Snapshot {
        *self.registry.lock().live.entry(ts).or_insert(0) += 1;
        Snapshot {
            ts,
            map: self.id,
            registry: self.registry.clone(),
        }
    }

    /// The timestamp of `snap` when it belongs to this map.
    pub fn check(&self, snap: &Snapshot) -> crate::Result<u32> {
        if snap.map == self.id {
            Ok(snap.ts)
        } else {
            Err(crate::Error::ForeignSnapshot)
        }
    }

    pub fn timestamps(&self) -> Vec<u32> {
        self.registry.lock().timestamps()
    }

    pub fn bounds(&self) -> Option<(u32, u32)> {
        self.registry.lock().bounds()
    }
}

/// A read view of a [`crate::VersionedBTreeMap`] as it was when the snapshot was taken
/// ([`crate::VersionedBTreeMap::snapshot`]). Queries at it (`get_many_at`,
/// `range_many_at`, ...) see exactly the pairs present at that moment, however many
/// update batches ran since (an MVCC read view). The versions it needs stay allocated
/// while it lives; dropping it lets the next version collection free them. It owns no
/// borrow of the map, so the map can be updated while it lives; a snapshot of one map
/// passed to another is refused ([`crate::Error::ForeignSnapshot`]).
///
/// ```no_run
/// use gpuds_mvbtree::VersionedBTreeMap;
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let mut map = VersionedBTreeMap::<u32, u32>::new(&gpu)?;
/// map.insert_many(&[1, 2], &[10, 20])?;
/// let before = map.snapshot()?;
/// map.remove_many(&[1])?;
/// assert_eq!(map.get_many_at(&before, &[1])?, vec![Some(10)]);
/// assert_eq!(map.get_many(&[1])?, vec![None]);
/// drop(before); // its versions are freed by the next collection
/// # Ok::<(), gpuds_mvbtree::Error>(())
/// ```
#[derive(Debug)]
pub struct Snapshot {
    ts: u32,
    map: u64,
    registry: Arc<Mutex<Registry>>,
}

impl Snapshot {
    /// The timestamp: versions stamped at or before it are visible.
    pub fn timestamp(&self) -> u32 {
        self.ts
    }
}

impl Clone for Snapshot {
    /// Another handle of the same snapshot (the versions stay until both are dropped).
    fn clone(&self) -> Self {
        *self.registry.lock().live.entry(self.ts).or_insert(0) += 1;
        Self {
            ts: self.ts,
            map: self.map,
            registry: self.registry.clone(),
        }
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut r = self.registry.lock();
        if let Some(n) = r.live.get_mut(&self.ts) {
            *n -= 1;
            if *n == 0 {
                r.live.remove(&self.ts);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_register_and_release() {
        let s = Snapshots::new();
        let a = s.hold(3);
        let b = s.hold(7);
        let c = a.clone();
        assert_eq!(s.timestamps(), vec![3, 7]);
        assert_eq!(s.bounds(), Some((3, 7)));
        drop(a);
        assert_eq!(s.timestamps(), vec![3, 7]);
        drop(c);
        assert_eq!(s.timestamps(), vec![7]);
        assert_eq!(s.check(&b).unwrap(), 7);
        let other = Snapshots::new();
        assert!(matches!(
            other.check(&b),
            Err(crate::Error::ForeignSnapshot)
        ));
        drop(b);
        assert_eq!(s.bounds(), None);
    }
}
