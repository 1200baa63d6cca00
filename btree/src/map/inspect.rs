//! Host copies of the tree: export, statistics and validation.

use super::*;
use crate::node::Node;
use crate::validate::walk;

impl<K: TreeKey, V: TreeValue> GpuBTreeMap<K, V> {
    /// Every pair in key order, read from a host copy of the node pool. Synchronizes.
    pub fn to_vec(&self) -> Result<Vec<(K, V)>> {
        Ok(self.walk(true)?.1)
    }

    /// Checks the tree on a host copy of the pool (see [`crate::validate::walk`]) and that
    /// every unit in use is a reachable node; with `collect`, every pair in key order.
    fn walk(&self, collect: bool) -> Result<(TreeShape, Vec<(K, V)>)> {
        let snapshot = self.runner.pool().snapshot()?;
        let fetch = |a: u32| {
            if snapshot.is_allocated(a) {
                snapshot
                    .unit(a)
                    .and_then(|w| Node::<K, V>::decode(self.layout, w))
            } else {
                None
            }
        };
        let (shape, pairs) = walk(self.root, fetch, collect).map_err(Error::Invalid)?;
        let in_use = snapshot.units_in_use();
        if in_use != shape.nodes() {
            return Err(Error::Invalid(format!(
                "{} nodes are reachable from the root but the pool has {in_use} units in use",
                shape.nodes()
            )));
        }
        Ok((shape, pairs))
    }

    /// Height, nodes and fill per level, pairs and memory, from a host copy of the pool
    /// (which is also checked as by [`GpuBTreeMap::validate`]). Synchronizes.
    ///
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = gpuds_btree::GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// let keys: Vec<u32> = (0..10_000).collect();
    /// tree.bulk_build(&keys, &keys)?;
    /// let stats = tree.stats()?;
    /// assert_eq!(stats.shape.height, 4); // 1000, 100, 10 and 1 nodes
    /// println!("fill per level: {:?}", stats.shape.fill_per_level());
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    pub fn stats(&self) -> Result<BTreeStats> {
        let (shape, _) = self.walk(false)?;
        Ok(BTreeStats {
            len: self.len()? as u64,
            units_in_use: shape.nodes(),
            capacity_units: self.runner.pool().capacity_units(),
            bytes_per_node: self.layout.node_bytes,
            shape,
        })
    }

    /// Copies the tree to the host and checks every invariant (see
    /// [`crate::validate::walk`]), that every node in the pool is reachable from the root,
    /// that the pair count agrees with [`GpuBTreeMap::len`], and the status words.
    /// Synchronizes.
    pub fn validate(&self) -> Result<()> {
        self.check()?;
        let (shape, _) = self.walk(false)?;
        let len = self.len()? as u64;
        if shape.keys() != len {
            return Err(Error::Invalid(format!(
                "the leaves hold {} pairs but the size counter says {len}",
                shape.keys()
            )));
        }
        Ok(())
    }
}
