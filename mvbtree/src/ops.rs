//! The update modes and the operations of a mixed batch.

/// How an update batch changes nodes that a snapshot may see (§4.3.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Updates {
    /// ViB-Tree: no snapshot is taken while the batch runs (host-side snapshots, taken
    /// between batches). A node is changed in place when no live snapshot can see it;
    /// otherwise it is copied once (the copy keeps the snapshot's view) and then changed
    /// in place. With no live snapshot nothing is copied.
    #[default]
    InPlace,
    /// VoB-Tree: snapshots may be taken while the batch runs (on another stream, or by
    /// tiles in kernels). Every change of a leaf makes a new version whose timestamp is
    /// set by whoever meets it first (the vCAS rule), so every snapshot sees the change
    /// entirely or not at all.
    OutOfPlace,
}

impl Updates {
    /// The code the kernels take.
    pub(crate) fn code(self) -> u32 {
        match self {
            Updates::InPlace => 0,
            Updates::OutOfPlace => 1,
        }
    }
}

/// One operation of [`crate::VersionedBTreeMap::apply`]: a mixed batch that runs in one
/// kernel, updates out of place, each query at a snapshot it takes when it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MvOp<K, V> {
    /// Insert or replace.
    Insert(K, V),
    /// Remove.
    Remove(K),
    /// The value of a key at the operation's snapshot.
    Get(K),
    /// The first pair with a key greater than this one, at the operation's snapshot.
    Successor(K),
    /// The number of keys in `[lo, hi]` at the operation's snapshot.
    RangeCount(K, K),
    /// The pairs with keys in `[lo, hi]` at the operation's snapshot (at most the batch's
    /// `range_cap` of them; the count is exact).
    Range(K, K),
}

impl<K, V> MvOp<K, V> {
    /// True for the queries (they report the snapshot they used).
    pub fn is_query(&self) -> bool {
        !matches!(self, MvOp::Insert(..) | MvOp::Remove(_))
    }
}

/// The result of one [`MvOp`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MvReply<K, V> {
    /// The snapshot a query ran at; [`crate::node::UNSET_TS`] for updates.
    pub ts: u32,
    /// Insert: replaced an existing value; Remove: removed; Get / Successor: found.
    pub found: bool,
    /// Get: the value; Remove: the removed value.
    pub value: Option<V>,
    /// Successor: the pair.
    pub successor: Option<(K, V)>,
    /// RangeCount and Range: the number of keys in the range.
    pub count: u32,
    /// Range: the first `min(count, range_cap)` pairs in key order.
    pub pairs: Vec<(K, V)>,
}
