//! Search batches with negative queries (Fig. 10: one third, fourth or fifth of the
//! queries ask for keys that are not in the table).

use super::permute::{derive_seed, Permutation};
use super::{salt, KEY_MAX, KEY_MIN};

/// `count` distinct keys of `[KEY_MIN, KEY_MAX]` that are not in `present`, drawn
/// uniformly at random (seeded). For dense sequences most of them fall outside the
/// sequence's range, as a table's negative queries do when it holds `[1, n]`.
///
/// ```
/// use gpuds_oversub::workload::{absent_keys, Sequence};
/// let keys = Sequence::Su.keys(1000, 1);
/// let misses = absent_keys(&keys, 300, 2);
/// assert_eq!(misses.len(), 300);
/// assert!(misses.iter().all(|m| !keys.contains(m)));
/// ```
///
/// # Panics
/// If the key range has fewer than `count` keys outside `present`.
pub fn absent_keys(present: &[u32], count: usize, seed: u64) -> Vec<u32> {
    let mut sorted = present.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let in_range = sorted
        .iter()
        .filter(|&&k| (KEY_MIN..=KEY_MAX).contains(&k))
        .count();
    let free = (KEY_MAX - KEY_MIN + 1) as usize - in_range;
    assert!(count <= free, "{count} absent keys asked, {free} exist");
    let order = Permutation::new(derive_seed(seed, salt::ABSENT, 0), KEY_MAX - KEY_MIN);
    (0..=KEY_MAX - KEY_MIN)
        .map(|i| KEY_MIN + order.apply(i))
        .filter(|k| sorted.binary_search(k).is_err())
        .take(count)
        .collect()
}

/// The search batch of a table holding `keys`: `keys` in their order, with the position
/// `every - 1` of each group of `every` replaced by a key absent from `keys`
/// (`every` = 3, 4, 5 for the paper's one third, fourth, fifth of negative queries;
/// 0 for positive queries only).
///
/// ```
/// use gpuds_oversub::workload::{search_queries, Sequence};
/// let keys = Sequence::Du.keys(12, 1);
/// let queries = search_queries(&keys, 3, 7);
/// assert_eq!(queries.len(), 12);
/// assert_eq!(queries.iter().filter(|q| !keys.contains(q)).count(), 4);
/// assert_eq!(queries[0], keys[0]);
/// ```
///
/// # Panics
/// As [`absent_keys`].
pub fn search_queries(keys: &[u32], every: usize, seed: u64) -> Vec<u32> {
    let mut queries = keys.to_vec();
    if every == 0 {
        return queries;
    }
    let misses = absent_keys(keys, keys.len() / every, seed);
    for (slot, miss) in queries
        .iter_mut()
        .skip(every - 1)
        .step_by(every)
        .zip(misses)
    {
        *slot = miss;
    }
    queries
}
