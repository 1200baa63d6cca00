//! Proptest strategies for operation sequences on maps, sets, multimaps and ordered maps.
//!
//! Keys come from a small pool ([`small_keys`]) so that operations collide on the same
//! keys (replacing, removing what was inserted, duplicate inserts), and values from a
//! small pool ([`small_values`]) so that equal values meet. [`batches`] cuts a sequence
//! into batches, the unit of work of every gpuds structure, including empty batches and
//! batches of one.
//!
//! # Examples
//! ```
//! use proptest::prelude::*;
//! use gpuds_testkit::{model::MapModel, strategy};
//! proptest!(ProptestConfig::with_cases(16), |(batches in strategy::batches(
//!     strategy::map_op(strategy::small_keys::<u32>(8, &[u32::MAX]), strategy::small_values::<u32>(4)),
//!     4, 16))| {
//!     let mut model = MapModel::new();
//!     for batch in &batches {
//!         prop_assert_eq!(model.apply(batch).len(), batch.len());
//!     }
//! });
//! ```

use std::fmt::Debug;

use gpuds_core::{DeviceKey, DeviceValue};
use proptest::prelude::*;
use proptest::sample::select;

use crate::workload::UniqueKeys;
use crate::{Op, OrderedOp};

/// `n` distinct keys, none in `reserved`: the smallest allowed key, the largest allowed
/// key below the reserved top values, and the rest spread over the range (so that hashes
/// differ in all bits). Deterministic.
///
/// # Examples
/// ```
/// let keys = gpuds_testkit::strategy::small_keys::<u32>(6, &[u32::MAX, u32::MAX - 1]);
/// assert_eq!(keys.len(), 6);
/// assert!(keys.contains(&0) && keys.contains(&(u32::MAX - 2)));
/// ```
pub fn small_keys<K: DeviceKey>(n: usize, reserved: &[K]) -> Vec<K> {
    let gen = UniqueKeys::new(0x7e57, reserved);
    let edges = [gen.nth_allowed(0), gen.nth_allowed(gen.max_index())];
    let mut keys: Vec<K> = Vec::with_capacity(n);
    for k in edges.into_iter().chain((0..).map(|i| gen.key(i))) {
        if keys.len() == n {
            break;
        }
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys
}

/// The values `1..=n`: few, so that equal values meet.
pub fn small_values<V: DeviceValue>(n: u64) -> Vec<V> {
    (1..=n).map(V::from_u64).collect()
}

/// Map operations on `keys` with `values`: inserts, removes and gets in the ratio 4:2:3.
pub fn map_op<K: Copy + Debug + 'static, V: Copy + Debug + 'static>(
    keys: Vec<K>,
    values: Vec<V>,
) -> impl Strategy<Value = Op<K, V>> {
    let (k1, k2) = (keys.clone(), keys.clone());
    prop_oneof![
        4 => (select(keys), select(values)).prop_map(|(k, v)| Op::Insert(k, v)),
        2 => select(k1).prop_map(Op::Remove),
        3 => select(k2).prop_map(Op::Get),
    ]
}

/// Set operations on `keys`.
pub fn set_op<K: Copy + Debug + 'static>(keys: Vec<K>) -> impl Strategy<Value = Op<K, ()>> {
    map_op(keys, vec![()])
}

/// Multimap operations on `keys` with `values`, insert-heavy (5:2:3) so that keys gather
/// several instances.
pub fn multimap_op<K: Copy + Debug + 'static, V: Copy + Debug + 'static>(
    keys: Vec<K>,
    values: Vec<V>,
) -> impl Strategy<Value = Op<K, V>> {
    let (k1, k2) = (keys.clone(), keys.clone());
    prop_oneof![
        5 => (select(keys), select(values)).prop_map(|(k, v)| Op::Insert(k, v)),
        2 => select(k1).prop_map(Op::Remove),
        3 => select(k2).prop_map(Op::Get),
    ]
}

/// Ordered-map operations: point operations (as [`map_op`]), ranges and successor
/// queries. Query bounds are pool keys or arbitrary non-reserved keys, so they fall both
/// on and between stored keys; some ranges are empty (`lo > hi`).
pub fn ordered_op<K: DeviceKey, V: Copy + Debug + 'static>(
    keys: Vec<K>,
    values: Vec<V>,
    reserved: Vec<K>,
) -> impl Strategy<Value = OrderedOp<K, V>> {
    let probe = prop_oneof![
        3 => select(keys.clone()),
        1 => any::<u64>().prop_map(K::from_u64),
    ]
    .prop_filter("reserved key", move |k| !reserved.contains(k));
    prop_oneof![
        6 => map_op(keys, values).prop_map(OrderedOp::Point),
        2 => (probe.clone(), probe.clone()).prop_map(|(a, b)| OrderedOp::Range(a, b)),
        2 => probe.prop_map(OrderedOp::Successor),
    ]
}

/// Up to `max_batches` batches of up to `max_len` operations each (at least one batch;
/// batches may be empty).
pub fn batches<T: Debug, S: Strategy<Value = T>>(
    op: S,
    max_batches: usize,
    max_len: usize,
) -> impl Strategy<Value = Vec<Vec<T>>> {
    proptest::collection::vec(
        proptest::collection::vec(op, 0..=max_len),
        1..=max_batches.max(1),
    )
}

/// The capacity-like numbers every constructor and `reserve`/`resize`-like call is tried
/// with: 0, 1, powers of two and their neighbours (2^k - 1, 2^k, 2^k + 1 for every k),
/// `u32::MAX` and its neighbours, `u64::MAX - k` for small k and `1 << 63`. Ascending,
/// without repeats.
///
/// # Examples
/// ```
/// let edges = gpuds_testkit::strategy::capacity_edges();
/// for x in [0, 1, 2, 1023, 1024, 1025, u32::MAX as u64 + 1, 1 << 63, u64::MAX - 50, u64::MAX] {
///     assert!(edges.contains(&x), "{x}");
/// }
/// assert!(edges.windows(2).all(|w| w[0] < w[1]));
/// ```
pub fn capacity_edges() -> Vec<u64> {
    let mut edges = vec![0u64, 1];
    for k in 1..64 {
        let p = 1u64 << k;
        edges.extend([p - 1, p, p + 1]);
    }
    let u32_max = u64::from(u32::MAX);
    edges.extend([u32_max - 1, u32_max, u32_max + 1]);
    edges.extend((0..=64).map(|k| u64::MAX - k));
    edges.sort_unstable();
    edges.dedup();
    edges
}

/// A capacity-like number: one of [`capacity_edges`] (most draws), or any `u64` (so that
/// numbers between the edges are tried too).
///
/// # Examples
/// ```
/// use proptest::prelude::*;
/// proptest!(ProptestConfig::with_cases(64), |(n in gpuds_testkit::strategy::capacities())| {
///     // A size computed from `n` must be checked, never wrapped.
///     match n.checked_next_power_of_two() {
///         Some(p) => prop_assert!(p >= n),
///         None => prop_assert!(n > 1 << 63),
///     }
/// });
/// ```
pub fn capacities() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => select(capacity_edges()),
        1 => any::<u64>(),
    ]
}

/// Capacity-like numbers at most `max` ([`capacity_edges`] up to it): for GPU tests, where
/// requests that succeed allocate what they ask for, so that only small ones may succeed.
///
/// # Examples
/// ```
/// let small = gpuds_testkit::strategy::capacity_edges_up_to(1 << 12);
/// assert_eq!(*small.last().unwrap(), 1 << 12);
/// ```
pub fn capacity_edges_up_to(max: u64) -> Vec<u64> {
    capacity_edges().into_iter().filter(|&x| x <= max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{MultimapModel, OrderedMapModel, SetModel};
    use std::collections::HashSet;

    #[test]
    fn small_keys_avoid_reserved_and_include_edges() {
        let keys = small_keys::<u64>(10, &[u64::MAX, 0]);
        assert_eq!(keys.len(), 10);
        assert_eq!(keys.iter().collect::<HashSet<_>>().len(), 10);
        assert!(keys.contains(&1) && keys.contains(&(u64::MAX - 1)));
        assert!(!keys.contains(&0) && !keys.contains(&u64::MAX));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn map_ops_collide(ops in proptest::collection::vec(
            map_op(small_keys::<u32>(4, &[u32::MAX]), small_values::<u32>(3)), 40..41)) {
            let distinct: HashSet<u32> = ops.iter().map(|o| o.key()).collect();
            prop_assert!(distinct.len() <= 4);
        }

        #[test]
        fn set_and_multimap_ops_drive_models(
            set_ops in proptest::collection::vec(set_op(small_keys::<u32>(3, &[])), 0..30),
            mm in batches(multimap_op(small_keys::<u64>(3, &[]), small_values::<u64>(3)), 3, 10),
        ) {
            let mut set = SetModel::new();
            prop_assert_eq!(set.apply(&set_ops).len(), set_ops.len());
            let mut model = MultimapModel::new();
            let inserts = mm.iter().flatten().filter(|o| matches!(o, Op::Insert(..))).count();
            for batch in &mm {
                model.apply(batch);
            }
            prop_assert!(model.len() <= inserts);
        }

        #[test]
        fn ordered_ops_avoid_reserved_bounds(ops in proptest::collection::vec(
            ordered_op(small_keys::<u32>(5, &[u32::MAX]), small_values::<u32>(3), vec![u32::MAX]), 0..40)) {
            let mut model = OrderedMapModel::new();
            for op in &ops {
                match *op {
                    OrderedOp::Range(a, b) => prop_assert!(a != u32::MAX && b != u32::MAX),
                    OrderedOp::Successor(k) => prop_assert!(k != u32::MAX),
                    OrderedOp::Point(_) => {}
                }
                model.step(op);
            }
        }
    }
}
