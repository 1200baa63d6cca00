//! Versioned nodes on the host (placeholder until the helper's version lands).
use gpuds_btree::node::NodeLayout;
/// Unset timestamp.
pub const UNSET_TS: u32 = u32::MAX;
/// Pairs per versioned node.
pub fn pairs_per_node(layout: NodeLayout) -> usize {
    layout.pairs() - 1
}
