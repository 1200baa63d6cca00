//! Helpers shared by the GPU tests.
#![allow(dead_code)]

use std::collections::HashMap;

use gpuds_alloc::SlabAllocConfig;
use gpuds_core::Status;
use gpuds_slabhash::{Error, OpResult, SlabHashConfig, SlabHashMap};
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

/// A table of `buckets` buckets whose slab pool is one memory block (1,024 slabs) that
/// cannot grow.
pub fn small_pool(buckets: u32) -> SlabHashConfig {
    SlabHashConfig {
        buckets,
        alloc: SlabAllocConfig {
            initial_units: 1024,
            max_units: 1024,
            ..SlabAllocConfig::default()
        },
        ..Default::default()
    }
}

/// The requests a call reports not applied, with `flag` among its flags (none when the
/// call succeeded); any other error fails the test.
pub fn not_applied(result: Result<(), Error>, flag: Status) -> Vec<usize> {
    match result {
        Ok(()) => Vec::new(),
        Err(Error::Core(e)) => gpuds_testkit::failed::not_applied(&e, flag),
        Err(e) => panic!("expected requests not applied ({flag}), got {e}"),
    }
}
