//! gpuds-graph: [`DynamicGraph`], the GPU dynamic graph of Awad (2022), chapter 5: a
//! vertex dictionary and one slab hash table per vertex (its adjacency), all tables
//! sharing one SlabAlloc pool for their collision slabs and a few large allocations for
//! their base slabs.
//!
//! - Two variants: a set graph (`DynamicGraph<()>`, destinations only, 30 per slab) and
//!   a map graph (`DynamicGraph<u32>` / `<u64>`, a value per edge).
//! - Directed or undirected ([`GraphConfig::directed`]); no duplicate edge ever
//!   (insertion replaces an existing edge's value); exact per-vertex edge counts.
//! - Batched edge insertion (Algorithm 5.1) and deletion (tombstones, [`flush`]), vertex
//!   insertion and deletion (Algorithm 5.2) with reuse of deleted ids, edge-exists and
//!   value queries, degrees, adjacency, bulk build from COO, export to COO and CSR,
//!   triangle counting, `validate()` and `stats()`.
//! - [`sorted::SortedGraph`]: the same graph with every adjacency list kept sorted on
//!   the device (the dissertation's §5.7 future work), so that triangle counting by
//!   sorted intersection needs no sort.
//! - A device API (`gpuds/graph/graph_ref.cuh`, [`GraphRef`]) for user kernels: the
//!   same edge operations, and an adjacency iterator over a vertex's slabs.
//!
//! [`flush`]: DynamicGraph::flush
//!
//! ```no_run
//! use gpuds_graph::{DynamicGraph, GraphConfig};
//! let gpu = gpuds_core::Gpu::new(0)?;
//! // A directed weighted graph, built in bulk from COO.
//! let config = GraphConfig { directed: true, ..Default::default() };
//! let mut g = DynamicGraph::<u32>::from_edges(&gpu, config, 0, &[0, 0, 1], &[1, 2, 2], Some(&[5, 6, 7]))?;
//! assert_eq!(g.edge_values_many(&[0, 2], &[2, 0])?, vec![Some(6), None]);
//! g.remove_vertices(&[2])?;
//! assert_eq!(g.degree_many(&[0, 1])?, vec![1, 0]);
//! g.validate()?;
//! # Ok::<(), gpuds_graph::Error>(())
//! ```
#![warn(missing_docs)]

mod config;
pub mod csr;
mod error;
mod graph;
mod ids;
mod image;
pub mod input;
mod kernels;
mod refs;
pub mod sorted;
mod value;

pub use config::{BulkPlacement, GraphConfig};
pub use error::{Error, Result};
pub use graph::{Adjacency, Csr, DynamicGraph, EdgeList, EdgeTally};
pub use image::GraphStats;
pub use refs::{GraphRef, VertexEntry};
pub use value::EdgeValue;

/// The largest vertex id (the slab hash reserves all ones and all ones minus one).
pub const MAX_VERTEX_ID: u32 = u32::MAX - 2;

/// Arcs (table entries) per vertex from which a bulk build with
/// [`BulkPlacement::Auto`] places its entries directly: the second step of the placement
/// reads every one-bucket base slab and rewrites those that took arcs, which sparser
/// tables do not repay (H200, 2^20 vertices, rebuilt in place, placement for every
/// build against the ordinary insertion in the same run: rgg_n_2_20_s0's 13 arcs per
/// vertex 1.15x, delaunay_n20's 6 0.85x, road_usa's 2.4 0.78x; the hollywood shape's
/// 68, most of them on hubs' larger tables, 0.91x).
///
/// ```
/// // The rgg_n_2_20_s0 shape, undirected: two arcs an edge, about 13 a vertex.
/// let (edges, vertices) = (6_898_119u64, 1u64 << 20);
/// assert!(2 * edges >= gpuds_graph::PLACE_MIN_ARCS * vertices); // placed directly
/// ```
pub const PLACE_MIN_ARCS: u64 = 8;

/// The most buckets one vertex's table may have (31 bits of its dictionary entry).
pub const MAX_BUCKETS: u32 = 0x7FFF_FFFF;

/// Status flag of the graph's kernels (the second structure bit): a request named a
/// vertex id at or past the dictionary (only user kernels can; host batches are checked
/// first).
pub const BAD_VERTEX: gpuds_core::Status =
    gpuds_core::Status(gpuds_core::Status::FIRST_STRUCTURE_BIT << 1);

/// Every kernel module of gpuds-graph, for a compile test without a GPU.
pub fn programs() -> Vec<gpuds_core::Program> {
    vec![
        kernels::program::<()>(),
        kernels::program::<u32>(),
        kernels::program::<u64>(),
        csr::program(),
        sorted::program(),
    ]
}

/// gpuds-graph's device headers and those of the crates below, as (include name, text).
pub fn cuda_headers() -> Vec<(&'static str, &'static str)> {
    let mut headers = gpuds_slabhash::cuda_headers();
    headers.extend([
        (
            "gpuds/graph/graph_ref.cuh",
            include_str!("../cuda/include/gpuds/graph/graph_ref.cuh"),
        ),
        (
            "gpuds/graph/sorted_lists.cuh",
            include_str!("../cuda/include/gpuds/graph/sorted_lists.cuh"),
        ),
        (
            "gpuds/graph/sorted_segments.cuh",
            include_str!("../cuda/include/gpuds/graph/sorted_segments.cuh"),
        ),
    ]);
    headers
}
