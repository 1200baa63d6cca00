//! The kernel module, one instantiation per key and value type: `mvbtree.cu`. Kernel names
//! carry the instantiation: `mv_insert_u64_u32`.

use gpuds_btree::node::NodeLayout;
use gpuds_btree::{TreeKey, TreeValue};
use gpuds_core::{Gpu, Kernel, Program};

use crate::error::Result;

const SOURCE: &str = include_str!("../cuda/kernels/mvbtree.cu");

/// The module of `K`, `V` with query tiles of `tile` lanes (64-bit pairs: 256-byte nodes,
/// the B-Tree's default); kernels suffixed `_<k>_<v>_t<tile>`.
pub(crate) fn program<K: TreeKey, V: TreeValue>(tile: u32) -> Program {
    let layout = NodeLayout::of::<K, V>(crate::WIDE_NODE_BYTES);
    let suffix = format!("{}_{}_t{tile}", K::SUFFIX, V::SUFFIX);
    let program = Program::new(format!("mvbtree_{suffix}"), SOURCE)
        .headers(crate::cuda_headers())
        .define("KEY_T", K::CUDA_TYPE)
        .define("VALUE_T", V::CUDA_TYPE)
        .define("QUERY_TILE", tile)
        .define("KERNEL_SUFFIX", suffix);
    if layout == NodeLayout::NARROW {
        program
    } else {
        program.define("GPUDS_BTREE_WIDE_NODE_BYTES", layout.node_bytes)
    }
}

/// Every kernel one map launches, loaded once.
#[derive(Clone, Debug)]
pub(crate) struct Kernels {
    pub init: Kernel,
    pub snapshot: Kernel,
    pub insert: Kernel,
    pub insert_plain: Kernel,
    pub erase: Kernel,
    pub erase_plain: Kernel,
    pub find: Kernel,
    pub find_newest: Kernel,
    pub successor: Kernel,
    pub range_count: Kernel,
    pub range_collect: Kernel,
    pub capped_offsets: Kernel,
    pub apply: Kernel,
    pub collect: Kernel,
}

impl Kernels {
    pub fn load<K: TreeKey, V: TreeValue>(gpu: &Gpu, tile: u32) -> Result<Self> {
        let module = gpu.load(&program::<K, V>(tile))?;
        let ty = format!("{}_{}_t{tile}", K::SUFFIX, V::SUFFIX);
        let k = |name: &str| module.kernel(&format!("{name}_{ty}"));
        Ok(Self {
            init: k("mv_init")?,
            snapshot: k("mv_snapshot")?,
            insert: k("mv_insert")?,
            insert_plain: k("mv_insert_plain")?,
            erase: k("mv_erase")?,
            erase_plain: k("mv_erase_plain")?,
            find: k("mv_find")?,
            find_newest: k("mv_find_newest")?,
            successor: k("mv_successor")?,
            range_count: k("mv_range_count")?,
            range_collect: k("mv_range_collect")?,
            capped_offsets: k("mv_capped_offsets")?,
            apply: k("mv_apply")?,
            collect: k("mv_collect")?,
        })
    }
}
