//! Helpers shared by the GPU tests.
#![allow(dead_code)]

use std::collections::HashMap;

use gpuds_slabhash::{OpResult, SlabHashMap};
use gpuds_testkit::check::Reply;

pub const RESERVED: [u32; 2] = [u32::MAX, u32::MAX - 1];

/// The map's pairs as a HashMap (unique keys).
pub fn contents(map: &SlabHashMap) -> HashMap<u32, u32> {
    let pairs = map.to_vec().expect("to_vec");
    let m: HashMap<u32, u32> = pairs.iter().copied().collect();
    assert_eq!(m.len(), pairs.len(), "a key is live twice");
    m
}

/// A multimap's instances per key, least recent first (SEARCHALL follows list order).
pub fn instances(map: &SlabHashMap) -> HashMap<u32, Vec<u32>> {
    let mut keys: Vec<u32> = map.to_vec().expect("to_vec").iter().map(|p| p.0).collect();
    keys.sort_unstable();
    keys.dedup();
    let all = map.get_all_many(&keys).expect("get_all_many");
    keys.iter()
        .enumerate()
        .map(|(i, &k)| (k, all.get(i).to_vec()))
        .collect()
}

/// What a GPU result tells the concurrency checks.
pub fn reply(r: OpResult<u32>) -> Reply<u32> {
    match r {
        OpResult::Added => Reply::Unknown,
        other => Reply::Value(other.value()),
    }
}
