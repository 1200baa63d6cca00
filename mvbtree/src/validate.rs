//! Validation (placeholder until the helper's version lands).
use gpuds_btree::node::NodeLayout;
use gpuds_btree::validate::TreeShape;
/// Walk.
pub struct VersionWalk<K, V> {
    /// Shape.
    pub shape: TreeShape,
    /// Pairs.
    pub pairs: Vec<(K, V)>,
    /// Heads.
    pub heads: u64,
    /// Copies.
    pub copies: u64,
    /// Versions per node.
    pub versions_per_node: Vec<u64>,
    /// Oldest.
    pub oldest_ts: Option<u32>,
}
/// Walk versions.
pub fn walk_versions<K: gpuds_btree::TreeKey, V: gpuds_btree::TreeValue>(
    _layout: NodeLayout,
    _root: u32,
    _fetch: &dyn Fn(u32) -> Option<Vec<u32>>,
    _live: &[u32],
    _clock: u32,
    _collect: bool,
) -> Result<VersionWalk<K, V>, String> {
    Err("not yet".into())
}
