//! The operations of a mixed batch, shared by workloads, strategies, models and checks.

/// One operation of a batch on a map, set or multimap keyed by `K` with values `V`
/// (sets use `V = ()`).
///
/// Every operation *observes* the value its key had just before it (for multimaps: the
/// least recent instance): an insert sees the value it replaced, a remove the value it
/// removed, a get the value it found. Models return that observation per operation, and
/// the concurrency checks accept a GPU's results when some serial order explains them.
///
/// # Examples
/// ```
/// use gpuds_testkit::Op;
/// let op: Op<u32, u32> = Op::Insert(1, 10);
/// assert_eq!(op.key(), 1);
/// assert!(op.is_update());
/// assert!(!Op::<u32, u32>::Get(1).is_update());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op<K, V> {
    /// Insert `(key, value)` (maps: replace the value if the key is present).
    Insert(K, V),
    /// Remove the key (multimaps: its least recent instance).
    Remove(K),
    /// Look the key up (multimaps: its least recent instance).
    Get(K),
}

impl<K: Copy, V: Copy> Op<K, V> {
    /// The key the operation acts on.
    pub fn key(&self) -> K {
        match *self {
            Op::Insert(k, _) | Op::Remove(k) | Op::Get(k) => k,
        }
    }

    /// `true` for inserts and removes.
    pub fn is_update(&self) -> bool {
        !matches!(self, Op::Get(_))
    }
}

/// One operation on an ordered map: the point operations of [`Op`] plus the multipoint
/// queries of the B-Tree paper (Awad, 2022, §3.4): `Range(lo, hi)` returns every pair
/// with `lo <= key <= hi` in key order, `Successor(k)` the pair with the smallest key
/// strictly greater than `k`.
///
/// # Examples
/// ```
/// use gpuds_testkit::{Op, OrderedOp};
/// let ops: Vec<OrderedOp<u32, u32>> =
///     vec![Op::Insert(5, 50).into(), OrderedOp::Range(0, 9), OrderedOp::Successor(4)];
/// assert_eq!(ops[0], OrderedOp::Point(Op::Insert(5, 50)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OrderedOp<K, V> {
    /// A point operation.
    Point(Op<K, V>),
    /// Every pair with `lo <= key <= hi`.
    Range(K, K),
    /// The pair with the smallest key strictly greater than the given key.
    Successor(K),
}

impl<K, V> From<Op<K, V>> for OrderedOp<K, V> {
    fn from(op: Op<K, V>) -> Self {
        OrderedOp::Point(op)
    }
}
