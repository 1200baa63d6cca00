//! Checks of batches that failed in part ([`gpuds_core::Error::NotApplied`]).

use gpuds_core::{Error, Status};

/// The operations `error` names as not applied, after checking that it is
/// [`Error::NotApplied`] with `flag` among its flags and its indices ascending; any other
/// error fails the test. Crates unwrap their own error's core variant first.
///
/// ```
/// use gpuds_core::{Error, Status};
/// let e = Error::NotApplied { status: Status::STASH_FULL, not_applied: vec![1, 4] };
/// assert_eq!(gpuds_testkit::failed::not_applied(&e, Status::STASH_FULL), vec![1, 4]);
/// ```
pub fn not_applied(error: &Error, flag: Status) -> Vec<usize> {
    match error {
        Error::NotApplied {
            status,
            not_applied,
        } => {
            assert!(status.contains(flag), "{status} lacks {flag}");
            assert!(
                not_applied.windows(2).all(|w| w[0] < w[1]),
                "indices not ascending: {not_applied:?}"
            );
            not_applied.clone()
        }
        e => panic!("expected operations not applied ({flag}), got {e}"),
    }
}

/// The pairs of a batch `(keys[i], values[i])` that took effect, given the indices the
/// call named as not applied: what an oracle map `extend`s with after a batch failed in
/// part (or, with no index skipped, after one that succeeded).
///
/// ```
/// use std::collections::{BTreeMap, HashSet};
/// let mut model = BTreeMap::new();
/// let skipped: HashSet<usize> = [1].into_iter().collect();
/// model.extend(gpuds_testkit::failed::applied(&[5u32, 6, 7], &[50u32, 60, 70], &skipped));
/// assert_eq!(model.into_iter().collect::<Vec<_>>(), vec![(5, 50), (7, 70)]);
/// ```
pub fn applied<'a, K: Copy, V: Copy>(
    keys: &'a [K],
    values: &'a [V],
    skipped: &'a std::collections::HashSet<usize>,
) -> impl Iterator<Item = (K, V)> + 'a {
    keys.iter()
        .zip(values)
        .enumerate()
        .filter(|(i, _)| !skipped.contains(i))
        .map(|(_, (&k, &v))| (k, v))
}
