//! Operations of a mixed batch and results of range queries.

use gpuds_core::DeviceType;

/// One operation of a mixed concurrent batch ([`crate::GpuBTreeMap::apply`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TreeOp<K, V> {
    /// Insert the pair, replacing the value of an existing key.
    Insert(K, V),
    /// Remove the key.
    Remove(K),
    /// Look the key up.
    Get(K),
    /// The pair with the smallest key greater than this one.
    Successor(K),
    /// Count the pairs with `lo <= key <= hi` (0 when `lo > hi`).
    Count(K, K),
}

impl<K: DeviceType, V: DeviceType> TreeOp<K, V> {
    /// The device operation code, key and argument (value or upper bound) as a word `W`
    /// that holds both a key and a value.
    pub(crate) fn encode<W: DeviceType>(&self) -> (u32, K, W) {
        let zero = W::from_u64(0);
        match *self {
            TreeOp::Insert(k, v) => (0, k, W::from_u64(v.to_u64())),
            TreeOp::Remove(k) => (1, k, zero),
            TreeOp::Get(k) => (2, k, zero),
            TreeOp::Successor(k) => (3, k, zero),
            TreeOp::Count(lo, hi) => (4, lo, W::from_u64(hi.to_u64())),
        }
    }
}

/// What one operation of a mixed batch observed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TreeReply<K, V> {
    /// An insertion: whether it replaced an existing value.
    Inserted {
        /// The key was present.
        replaced: bool,
    },
    /// A removal: the removed value, if the key was present.
    Removed(Option<V>),
    /// A lookup: the value found.
    Value(Option<V>),
    /// A successor query: the next pair.
    Successor(Option<(K, V)>),
    /// A count query: pairs in the range.
    Count(u32),
}

/// The pairs of a batch of range queries, concatenated: query `i`'s pairs, in key order,
/// are `get(i)`.
///
/// # Examples
/// ```
/// use gpuds_btree::Ranges;
/// let r = Ranges::new(vec![0, 2, 2, 3], vec![(1, 10), (2, 20), (7, 70)]);
/// assert_eq!(r.len(), 3);
/// assert_eq!(r.get(0), &[(1, 10), (2, 20)]);
/// assert!(r.get(1).is_empty());
/// assert_eq!(r.iter().nth(2).unwrap(), &[(7, 70)]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ranges<K, V> {
    offsets: Vec<usize>,
    pairs: Vec<(K, V)>,
}

impl<K, V> Ranges<K, V> {
    /// From per-query start offsets (one more than the queries, the last being the total)
    /// and the concatenated pairs.
    pub fn new(offsets: Vec<usize>, pairs: Vec<(K, V)>) -> Self {
        Self { offsets, pairs }
    }

    /// Number of queries.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// True when there are no queries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Query `i`'s pairs (empty when `i` is out of range).
    pub fn get(&self, i: usize) -> &[(K, V)] {
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&a), Some(&b)) if a <= b && b <= self.pairs.len() => &self.pairs[a..b],
            _ => &[],
        }
    }

    /// Every query's pairs, in order.
    pub fn iter(&self) -> impl Iterator<Item = &[(K, V)]> {
        (0..self.len()).map(|i| self.get(i))
    }

    /// All pairs, concatenated.
    pub fn pairs(&self) -> &[(K, V)] {
        &self.pairs
    }
}
