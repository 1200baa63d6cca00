//! MVGpuBTree-style validators: a query that ran concurrently with erasures accepts the
//! expected value, or "not found" when the key may have been erased.

use std::fmt::Debug;

use super::Mismatch;

/// Accepts `got` for `key` when it equals `expected`, or when it is `None` and the key
/// may have been erased concurrently (`may_be_erased`).
///
/// # Examples
/// ```
/// use gpuds_testkit::check::expected_or_erased;
/// assert!(expected_or_erased(7u32, Some(70u32), Some(70), false).is_ok());
/// assert!(expected_or_erased(7u32, None, Some(70u32), true).is_ok());
/// assert!(expected_or_erased(7u32, None, Some(70u32), false).is_err());
/// assert!(expected_or_erased(7u32, Some(71), Some(70u32), true).is_err());
/// ```
pub fn expected_or_erased<K: Copy + Debug, V: PartialEq + Debug>(
    key: K,
    got: Option<V>,
    expected: Option<V>,
    may_be_erased: bool,
) -> Result<(), Mismatch<K>> {
    if got == expected || (got.is_none() && may_be_erased) {
        return Ok(());
    }
    Err(Mismatch {
        key,
        ops: vec![format!("query -> {got:?}")],
        initial: format!("{expected:?}"),
        final_state: format!("{got:?}"),
        reason: format!(
            "expected {expected:?}{}, found {got:?}",
            if may_be_erased { " or erased" } else { "" }
        ),
    })
}

/// [`expected_or_erased`] over a batch of queries: `expected(k)` is the value `k` holds
/// unless erased, `may_be_erased(k)` whether an erasure of `k` ran concurrently. Returns
/// the first failure in query order.
///
/// # Examples
/// ```
/// use std::collections::{HashMap, HashSet};
/// use gpuds_testkit::check::check_expected_or_erased;
/// let values = HashMap::from([(1u64, 10u64), (2, 20)]);
/// let erased = HashSet::from([2u64]);
/// let ok = check_expected_or_erased(&[1, 2], &[Some(10), None],
///     |k| values.get(&k).copied(), |k| erased.contains(&k));
/// assert!(ok.is_ok());
/// let bad = check_expected_or_erased(&[1, 2], &[None, None],
///     |k| values.get(&k).copied(), |k| erased.contains(&k));
/// assert_eq!(bad.unwrap_err().key, 1);
/// ```
pub fn check_expected_or_erased<K: Copy + Debug, V: PartialEq + Copy + Debug>(
    keys: &[K],
    got: &[Option<V>],
    expected: impl Fn(K) -> Option<V>,
    may_be_erased: impl Fn(K) -> bool,
) -> Result<(), Mismatch<K>> {
    assert_eq!(keys.len(), got.len(), "one result per query");
    for (&k, &g) in keys.iter().zip(got) {
        expected_or_erased(k, g, expected(k), may_be_erased(k))?;
    }
    Ok(())
}
