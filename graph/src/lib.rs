//! gpuds-graph: `DynamicGraph`, the GPU dynamic graph of Awad (2022), chapter 5: a vertex
//! dictionary and one slab hash table per vertex, all tables sharing one slab pool.
#![warn(missing_docs)]

pub mod csr;
pub mod input;
