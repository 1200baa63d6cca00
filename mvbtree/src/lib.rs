//! # gpuds-mvbtree
//!
//! `VersionedBTreeMap`, the GPU multiversion B-Tree of Awad (2022), chapter 4: a B-link
//! tree whose nodes are version lists, with snapshots and linearizable range queries.
#![warn(missing_docs)]

mod error;
pub mod node;
mod ops;
mod snapshot;
mod tree_ref;
pub mod validate;

pub use error::{Error, Result};
pub use gpuds_btree::{BTreeConfig, TreeKey, TreeValue};
pub use ops::{MvOp, MvReply, Updates};
pub use snapshot::Snapshot;
pub use tree_ref::VersionedTreeRef;
