//! Mixed batches: the operations of [`SlabHashMap::apply`](crate::SlabHashMap::apply)
//! and [`SlabHashSet::apply`](crate::SlabHashSet::apply), and their results.

/// One operation of a mixed map batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapOp<K, V> {
    /// REPLACE (unique keys) or INSERT (duplicates allowed), as the map was made.
    Insert(K, V),
    /// DELETE: the key's least recent instance.
    Remove(K),
    /// SEARCH: the key's least recent instance.
    Get(K),
}

/// One operation of a mixed set batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SetOp<K> {
    /// Add the key.
    Insert(K),
    /// Remove the key.
    Remove(K),
    /// Look the key up.
    Contains(K),
}

/// What one operation of a mixed batch saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpResult<V> {
    /// The key was not there (an insert added it; a remove or get found nothing).
    Absent,
    /// The key was there with this value (an insert replaced it, a remove removed it, a
    /// get found it). Sets report `()`.
    Present(V),
    /// An INSERT into a map with duplicate keys added an instance (it does not look
    /// for earlier ones).
    Added,
}

impl<V: Copy> OpResult<V> {
    /// The value the operation saw, if any.
    ///
    /// ```
    /// use gpuds_slabhash::OpResult;
    /// assert_eq!(OpResult::Present(3u32).value(), Some(3));
    /// assert_eq!(OpResult::<u32>::Absent.value(), None);
    /// ```
    pub fn value(&self) -> Option<V> {
        match *self {
            OpResult::Present(v) => Some(v),
            _ => None,
        }
    }
}

/// Operation codes of the apply kernel.
pub(crate) const KIND_INSERT: u32 = 0;
pub(crate) const KIND_REMOVE: u32 = 1;
pub(crate) const KIND_GET: u32 = 2;

/// Per-request outcomes written by the kernels (`gpuds/slabhash/slab.cuh`).
pub(crate) const OP_PRESENT: u32 = 1;
pub(crate) const OP_ADDED: u32 = 3;

/// The result of SEARCHALL over a batch of keys: key `i`'s values are
/// `values[offsets[i]..offsets[i] + counts[i]]`, least recent first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MultiValues<V> {
    /// Instances of each key.
    pub counts: Vec<u32>,
    /// Where each key's values start.
    pub offsets: Vec<u32>,
    /// All values, key after key.
    pub values: Vec<V>,
}

impl<V> MultiValues<V> {
    /// The values of the batch's `i`-th key.
    ///
    /// ```
    /// let m = gpuds_slabhash::MultiValues { counts: vec![2, 0], offsets: vec![0, 2], values: vec![7u32, 8] };
    /// assert_eq!(m.get(0), &[7, 8]);
    /// assert!(m.get(1).is_empty());
    /// ```
    pub fn get(&self, i: usize) -> &[V] {
        let start = self.offsets[i] as usize;
        &self.values[start..start + self.counts[i] as usize]
    }
}
