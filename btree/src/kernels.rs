//! The kernel modules, one instantiation per key type, value type (and, for the query
//! module, tile): `btree_update.cu` (whole-warp updates and the bulk build) and
//! `btree_query.cu`. Kernel names carry the instantiation: `btree_insert_u64_u32`,
//! `btree_get_u64_u32_t8`.

use gpuds_core::{DeviceType, Gpu, Kernel, Program};

use crate::error::Result;
use crate::keys::{TreeKey, TreeValue, Word};
use crate::node::NodeLayout;

const UPDATE_SOURCE: &str = include_str!("../cuda/kernels/btree_update.cu");
const QUERY_SOURCE: &str = include_str!("../cuda/kernels/btree_query.cu");

/// The name part of an instantiation: `u64_u32`.
fn types<K: TreeKey, V: TreeValue>() -> String {
    format!("{}_{}", K::SUFFIX, V::SUFFIX)
}

/// Module `name` of `K`, `V` (kernel names suffixed `_<k>_<v><tag>`) with the defines every
/// module takes: the types, and for wide pairs the node size (in the module's name too, so
/// that both layouts can be loaded side by side).
fn instance<K: TreeKey, V: TreeValue>(
    name: &str,
    tag: &str,
    source: &'static str,
    wide_node_bytes: u32,
) -> Program {
    let layout = NodeLayout::of::<K, V>(wide_node_bytes);
    let suffix = format!("{}{tag}", types::<K, V>());
    let mut name = format!("{name}_{suffix}");
    if layout != NodeLayout::NARROW {
        name.push_str(&format!("_n{}", layout.node_bytes));
    }
    let program = Program::new(name, source)
        .headers(crate::cuda_headers())
        .define("BTREE_BLOCK", crate::map::BLOCK)
        .define("KEY_T", K::CUDA_TYPE)
        .define("VALUE_T", V::CUDA_TYPE)
        .define("WORD_T", <Word<K, V> as DeviceType>::CUDA_TYPE)
        .define("KERNEL_SUFFIX", suffix);
    if layout == NodeLayout::NARROW {
        program
    } else {
        program.define("GPUDS_BTREE_WIDE_NODE_BYTES", layout.node_bytes)
    }
}

/// The update module of `K`, `V`.
pub(crate) fn update_program<K: TreeKey, V: TreeValue>(wide_node_bytes: u32) -> Program {
    instance::<K, V>("btree_update", "", UPDATE_SOURCE, wide_node_bytes)
}

/// The query module of `K`, `V` for tiles of `tile` lanes; its kernels are suffixed
/// `_<k>_<v>_t8`, `_t16`, `_t32`.
pub(crate) fn query_program<K: TreeKey, V: TreeValue>(tile: u32, wide_node_bytes: u32) -> Program {
    instance::<K, V>(
        "btree_query",
        &format!("_t{tile}"),
        QUERY_SOURCE,
        wide_node_bytes,
    )
    .define("QUERY_TILE", tile)
}

/// Every kernel one map launches, loaded once.
#[derive(Clone, Debug)]
pub(crate) struct Kernels {
    pub init: Kernel,
    pub insert: Kernel,
    pub apply: Kernel,
    pub last_of_run: Kernel,
    pub count_repeats: Kernel,
    pub bulk_build: Kernel,
    pub check_increasing: Kernel,
    pub get: Kernel,
    pub successor: Kernel,
    pub range_count: Kernel,
    pub range_collect: Kernel,
    pub range_collect_capped: Kernel,
    pub remove: Kernel,
}

impl Kernels {
    pub fn load<K: TreeKey, V: TreeValue>(
        gpu: &Gpu,
        tile: u32,
        wide_node_bytes: u32,
    ) -> Result<Self> {
        let update = gpu.load(&update_program::<K, V>(wide_node_bytes))?;
        let query = gpu.load(&query_program::<K, V>(tile, wide_node_bytes))?;
        let ty = types::<K, V>();
        let u = |name: &str| update.kernel(&format!("{name}_{ty}"));
        let q = |name: &str| query.kernel(&format!("{name}_{ty}_t{tile}"));
        Ok(Self {
            init: u("btree_init")?,
            insert: u("btree_insert")?,
            apply: u("btree_apply")?,
            last_of_run: u("btree_last_of_run")?,
            count_repeats: u("btree_count_repeats")?,
            bulk_build: u("btree_bulk_build")?,
            check_increasing: u("btree_check_increasing")?,
            get: q("btree_get")?,
            successor: q("btree_successor")?,
            range_count: q("btree_range_count")?,
            range_collect: q("btree_range_collect")?,
            range_collect_capped: q("btree_range_collect_capped")?,
            remove: q("btree_remove")?,
        })
    }
}
