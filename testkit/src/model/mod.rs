//! Serial reference models over `std::collections`.
//!
//! Each model applies a batch of operations one after the other and returns, per
//! operation, what it observed (see [`Op`](crate::Op)): the key's value just before the
//! operation. A GPU batch that ran serially must give exactly these results; one that ran
//! concurrently is judged by [`check`](crate::check), which uses the same per-key
//! transition functions ([`map_step`], [`multimap_step`]).

mod map;
mod multimap;
mod ordered;

pub use map::{map_step, InsertPolicy, MapModel, SetModel};
pub use multimap::{multimap_step, MultimapModel};
pub use ordered::{OrderedMapModel, OrderedReply};
