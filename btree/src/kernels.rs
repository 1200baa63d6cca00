//! The kernel modules: `btree_update.cu` (whole-warp updates and the bulk build) and
//! `btree_query.cu` per query tile (8, 16 or 32 lanes).

use gpuds_core::{Gpu, Kernel, Program};

use crate::error::Result;

const UPDATE_SOURCE: &str = include_str!("../cuda/kernels/btree_update.cu");
const QUERY_SOURCE: &str = include_str!("../cuda/kernels/btree_query.cu");

/// The update module.
pub(crate) fn update_program() -> Program {
    Program::new("btree_update", UPDATE_SOURCE)
        .headers(crate::cuda_headers())
        .define("BTREE_BLOCK", crate::map::BLOCK)
}

/// The query module for tiles of `tile` lanes; its kernels are suffixed `_t8`, `_t16`, `_t32`.
pub(crate) fn query_program(tile: u32) -> Program {
    Program::new(format!("btree_query_t{tile}"), QUERY_SOURCE)
        .headers(crate::cuda_headers())
        .define("BTREE_BLOCK", crate::map::BLOCK)
        .define("QUERY_TILE", tile)
        .define("KERNEL_SUFFIX", format!("t{tile}"))
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
    pub fn load(gpu: &Gpu, tile: u32) -> Result<Self> {
        let update = gpu.load(&update_program())?;
        let query = gpu.load(&query_program(tile))?;
        let q = |name: &str| query.kernel(&format!("{name}_t{tile}"));
        Ok(Self {
            init: update.kernel("btree_init")?,
            insert: update.kernel("btree_insert")?,
            apply: update.kernel("btree_apply")?,
            last_of_run: update.kernel("btree_last_of_run")?,
            count_repeats: update.kernel("btree_count_repeats")?,
            bulk_build: update.kernel("btree_bulk_build")?,
            check_increasing: update.kernel("btree_check_increasing")?,
            get: q("btree_get")?,
            successor: q("btree_successor")?,
            range_count: q("btree_range_count")?,
            range_collect: q("btree_range_collect")?,
            range_collect_capped: q("btree_range_collect_capped")?,
            remove: q("btree_remove")?,
        })
    }
}
