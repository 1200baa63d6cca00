//! Graph inputs: seeded generators of the dissertation's graph families (Table 5.1), a
//! Matrix Market loader, and CPU references (CSR, triangle count) to check the GPU
//! graph against.
//!
//! All of them exchange graphs as a [`Coo`].
//!
//! # Examples
//!
//! ```
//! use gpuds_graph::input::{reference, Family};
//!
//! let (family, vertices) = Family::from_name("delaunay_n20", 8).unwrap();
//! let graph = family.generate(vertices, 1);
//! // A Delaunay triangulation of n points has about 2n triangles.
//! let triangles = reference::triangle_count(&graph);
//! assert!(triangles > 2 * u64::from(vertices) - 100);
//! ```

mod coo;
mod generate;
pub mod mtx;
pub mod reference;

pub use coo::{Coo, CooError};
pub use generate::{
    delaunay, hollywood_like, random_geometric, rmat, road_grid, soc_livejournal_like, Family,
    RmatParams,
};
