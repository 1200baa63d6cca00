//! The input sequences of Table 2: each sequence's defining property, determinism, and
//! no reserved key ever.

use std::collections::{HashMap, HashSet};

use gpuds_oversub::workload::{absent_keys, search_queries, values, Sequence, KEY_MAX, KEY_MIN};
use proptest::prelude::*;

fn distinct(keys: &[u32]) -> usize {
    keys.iter().collect::<HashSet<_>>().len()
}

/// The fraction of positions whose key appeared at an earlier position.
fn repeat_rate(keys: &[u32]) -> f64 {
    (keys.len() - distinct(keys)) as f64 / keys.len() as f64
}

fn in_key_range(keys: &[u32]) -> bool {
    keys.iter().all(|&k| (KEY_MIN..=KEY_MAX).contains(&k))
}

/// The value window `(lo, hi]` of the block starting at `first` (module documentation).
fn window(first: usize, len: usize, n: usize, largest: u32) -> (u64, u64) {
    let edge = |p: usize| (p as u128 * largest as u128 / n as u128) as u64;
    (edge(first), edge(first + len))
}

/// Checks that block `b` (position order) of `keys` stays inside its window.
fn blocks_stay_in_windows(keys: &[u32], block: usize, largest: u32) {
    let n = keys.len();
    for (b, chunk) in keys.chunks(block).enumerate() {
        let (lo, hi) = window(b * block, chunk.len(), n, largest);
        for &k in chunk {
            assert!(
                (lo + 1..=hi).contains(&(k as u64)),
                "block {b}: {k} outside ({lo}, {hi}]"
            );
        }
    }
}

#[test]
fn every_sequence_has_its_length_and_no_reserved_key() {
    for seq in Sequence::ALL {
        for n in [0, 1, 2, 3, 7, 8, 9, 100, 1001, 12_345] {
            for block in [1, 3, 64, (n / 8).max(1), n.max(1), n + 5] {
                let keys = seq.keys_with(n, 11, block);
                assert_eq!(keys.len(), n, "{seq} n {n} block {block}");
                assert!(in_key_range(&keys), "{seq} n {n} block {block}");
                assert!(
                    keys.iter().all(|k| seq.key_range(n).contains(k)),
                    "{seq} n {n}"
                );
                if !seq.repeats() {
                    assert_eq!(distinct(&keys), n, "{seq} n {n} block {block}: a repeat");
                }
            }
        }
    }
}

#[test]
fn monotone_increasing_is_one_to_n() {
    assert_eq!(
        Sequence::Mi.keys(10_000, 3),
        (1..=10_000).collect::<Vec<u32>>()
    );
}

#[test]
fn zigzag_alternates_between_the_ends() {
    let zz = Sequence::Zz.keys(100_001, 0);
    for (j, &k) in zz.iter().enumerate() {
        let half = (j / 2) as u32;
        let expected = if j % 2 == 0 {
            1 + half
        } else {
            u32::MAX - 1 - half
        };
        assert_eq!(k, expected, "position {j}");
    }
    assert_eq!(&zz[..4], &[1, u32::MAX - 1, 2, u32::MAX - 2]);
}

#[test]
fn dense_unique_permutes_each_block_of_keys_in_place() {
    let (n, block) = (10_000, 1_300);
    let du = Sequence::Du.keys_with(n, 5, block);
    for (b, chunk) in du.chunks(block).enumerate() {
        let mut sorted = chunk.to_vec();
        sorted.sort_unstable();
        let lo = (b * block) as u32 + 1;
        assert_eq!(
            sorted,
            (lo..lo + chunk.len() as u32).collect::<Vec<_>>(),
            "block {b}"
        );
        assert_ne!(sorted, chunk, "block {b} is not shuffled");
    }
    // The default blocks: about eight, each a window of its own.
    let du = Sequence::Du.keys(n, 5);
    blocks_stay_in_windows(&du, n / 8, n as u32);
}

#[test]
fn dense_repeat_repeats_a_fifth_inside_the_blocks() {
    for (n, block) in [
        (10_000, 1_250),
        (10_007, 999),
        (100_000, 12_500),
        (5_000, 7),
    ] {
        let dr = Sequence::Dr.keys_with(n, 2, block);
        let rate = repeat_rate(&dr);
        assert!(
            (0.18..=0.22).contains(&rate),
            "n {n} block {block}: repeat rate {rate}"
        );
        assert!(dr.iter().all(|&k| k as usize <= n));
        blocks_stay_in_windows(&dr, block, n as u32);
    }
    // With blocks of a multiple of five keys exactly a fifth repeats.
    let dr = Sequence::Dr.keys_with(10_000, 2, 1_000);
    assert_eq!(distinct(&dr), 8_000);
}

#[test]
fn sparse_unique_spreads_over_the_whole_range() {
    let su = Sequence::Su.keys(200_000, 8);
    assert_eq!(distinct(&su), su.len());
    assert!(in_key_range(&su));
    // Every eighth of the key range is hit.
    let eighths: HashSet<u32> = su.iter().map(|&k| k / (u32::MAX / 8 + 1)).collect();
    assert_eq!(eighths.len(), 8);
    let ascending = su.windows(2).filter(|w| w[0] < w[1]).count();
    assert!(
        (90_000..110_000).contains(&ascending),
        "{ascending} ascending neighbours"
    );
}

#[test]
fn sparse_repeat_repeats_a_fifth_of_keys_that_occur_elsewhere() {
    let n = 100_000;
    let sr = Sequence::Sr.keys(n, 4);
    assert_eq!(distinct(&sr), n - n / 5);
    assert!(in_key_range(&sr));
    let mut counts: HashMap<u32, usize> = HashMap::new();
    for &k in &sr {
        *counts.entry(k).or_default() += 1;
    }
    let repeated: usize = counts.values().filter(|&&c| c > 1).map(|c| c - 1).sum();
    assert_eq!(repeated, n / 5);
    // The repeats are spread over the stream, not bunched at its end.
    let late_repeats = {
        let mut seen = HashSet::new();
        sr.iter().take(n / 2).for_each(|k| {
            seen.insert(*k);
        });
        n / 2 - seen.len()
    };
    assert!(
        late_repeats > n / 50,
        "only {late_repeats} repeats in the first half"
    );
}

#[test]
fn sparse_unique_random_keeps_each_block_in_its_window_and_shuffles_the_blocks() {
    let (n, block) = (80_000, 10_000);
    let sur = Sequence::Sur.keys_with(n, 6, block);
    assert_eq!(distinct(&sur), n);
    assert!(in_key_range(&sur));
    let order = window_runs(&sur, block);
    for (i, chunk) in sur.chunks(block).enumerate() {
        let ascending = chunk.windows(2).filter(|p| p[0] < p[1]).count();
        assert!(ascending < block * 6 / 10, "block {i} looks sorted");
    }
    assert_eq!(
        order.len(),
        n / block,
        "a window split over two runs: {order:?}"
    );
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..n / block).collect::<Vec<_>>());
    assert_ne!(order, sorted, "the blocks are not shuffled");
    // A short last block may come anywhere: every window is still one run.
    let sur = Sequence::Sur.keys_with(10_500, 6, 1_000);
    assert_eq!(window_runs(&sur, 1_000).len(), 11);
}

/// The value windows (blocks in value order, module documentation) met in output order,
/// one entry per run of keys of one window.
fn window_runs(keys: &[u32], block: usize) -> Vec<usize> {
    let n = keys.len();
    let windows: Vec<(u64, u64)> = (0..n.div_ceil(block))
        .map(|b| window(b * block, block.min(n - b * block), n, KEY_MAX))
        .collect();
    let mut runs: Vec<usize> = keys
        .iter()
        .map(|&k| {
            let k = k as u64;
            windows
                .iter()
                .position(|&(lo, hi)| lo < k && k <= hi)
                .expect("a key outside every window")
        })
        .collect();
    runs.dedup();
    runs
}

#[test]
fn dense_unique_like_draws_from_the_rounded_up_range() {
    let n = 12_345;
    let dul = Sequence::Dul.keys(n, 1);
    assert_eq!(Sequence::Dul.key_range(n), 1..=20_000);
    assert_eq!(distinct(&dul), n);
    assert!(dul.iter().all(|&k| (1..=20_000).contains(&k)));
    assert!(dul.iter().filter(|&&k| k as usize > n).count() > n / 4);
    blocks_stay_in_windows(&dul, n / 8, 20_000);
    // A round n is DU itself.
    let mut round = Sequence::Dul.keys(30_000, 1);
    round.sort_unstable();
    assert_eq!(round, (1..=30_000).collect::<Vec<u32>>());
}

#[test]
fn sequences_are_deterministic_and_seeded() {
    for seq in Sequence::ALL {
        let a = seq.keys(5_000, 42);
        assert_eq!(a, seq.keys(5_000, 42), "{seq}");
        let seeded = !matches!(seq, Sequence::Mi | Sequence::Zz);
        assert_eq!(a != seq.keys(5_000, 43), seeded, "{seq}");
    }
}

#[test]
fn names_round_trip() {
    for seq in Sequence::ALL {
        assert_eq!(Sequence::from_name(seq.name()), Some(seq));
        assert_eq!(Sequence::from_name(&seq.name().to_lowercase()), Some(seq));
        assert_eq!(seq.to_string(), seq.name());
    }
    let names: Vec<&str> = Sequence::ALL.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["MI", "DU", "DR", "SU", "SR", "SUR", "DUL", "ZZ"]);
    assert_eq!(Sequence::from_name("M"), None);
}

#[test]
fn values_follow_their_keys() {
    let keys = Sequence::Sr.keys(10_000, 9);
    let v = values(&keys, 9);
    assert_eq!(v, values(&keys, 9));
    assert_ne!(v, values(&keys, 10));
    let mut by_key = HashMap::new();
    for (k, x) in keys.iter().zip(&v) {
        assert_eq!(
            *by_key.entry(*k).or_insert(*x),
            *x,
            "key {k} has two values"
        );
    }
}

#[test]
#[should_panic(expected = "at least one key")]
fn a_zero_block_is_refused() {
    Sequence::Du.keys_with(10, 0, 0);
}

proptest! {
    #[test]
    fn any_size_and_block(n in 0usize..3_000, block in 1usize..4_000, seed: u64, which in 0usize..8) {
        let seq = Sequence::ALL[which];
        let keys = seq.keys_with(n, seed, block);
        prop_assert_eq!(keys.len(), n);
        prop_assert!(in_key_range(&keys));
        let range = seq.key_range(n);
        prop_assert!(keys.iter().all(|k| range.contains(k)));
        if seq == Sequence::Sr {
            prop_assert_eq!(distinct(&keys), n - n / 5);
        } else if seq == Sequence::Dr {
            // ⌊n/5⌋ repeats spread over the blocks, each keeping one key of its own.
            let repeats: usize = (0..n.div_ceil(block))
                .map(|b| {
                    let (first, end) = (b * block, ((b + 1) * block).min(n));
                    (end / 5 - first / 5).min(end - first - 1)
                })
                .sum();
            prop_assert_eq!(distinct(&keys), n - repeats);
        } else {
            prop_assert_eq!(distinct(&keys), n);
        }
        if matches!(seq, Sequence::Du | Sequence::Dr | Sequence::Dul) && n > 0 {
            blocks_stay_in_windows(&keys, block, *range.end());
        }
    }
}

/// The properties at the benchmarks' size, where windows are wide and the sparse
/// permutation runs over most of its domain. Run with
/// `cargo test --release -p gpuds-oversub --test workload -- --ignored --nocapture`
/// (it prints each sequence's generation time; speed is not asserted).
#[test]
#[ignore = "large: run in release"]
fn every_sequence_at_two_to_the_26() {
    let n = 1 << 26;
    for seq in Sequence::ALL {
        let start = std::time::Instant::now();
        let keys = seq.keys(n, 1);
        println!("{seq}: {:?}", start.elapsed());
        assert_eq!(keys.len(), n);
        assert!(in_key_range(&keys), "{seq}");
        let mut sorted = keys;
        sorted.sort_unstable();
        sorted.dedup();
        let expected = if seq.repeats() { n - n / 5 } else { n };
        assert_eq!(sorted.len(), expected, "{seq}");
    }
}

#[test]
fn absent_keys_are_absent_distinct_and_seeded() {
    for seq in Sequence::ALL {
        let keys = seq.keys(20_000, 3);
        let present: HashSet<u32> = keys.iter().copied().collect();
        let misses = absent_keys(&keys, 7_000, 4);
        assert_eq!(misses.len(), 7_000);
        assert!(in_key_range(&misses), "{seq}");
        assert!(
            misses.iter().all(|m| !present.contains(m)),
            "{seq}: a miss is present"
        );
        assert_eq!(distinct(&misses), 7_000, "{seq}");
        assert_eq!(misses, absent_keys(&keys, 7_000, 4));
        assert_ne!(misses, absent_keys(&keys, 7_000, 5));
    }
    // Present keys that are reserved do not count against the range.
    assert_eq!(absent_keys(&[0, u32::MAX], 3, 1).len(), 3);
}

#[test]
fn search_queries_replace_one_in_every() {
    let keys = Sequence::Sr.keys(10_000, 8);
    let present: HashSet<u32> = keys.iter().copied().collect();
    assert_eq!(search_queries(&keys, 0, 1), keys);
    for every in [3, 4, 5] {
        let queries = search_queries(&keys, every, 1);
        assert_eq!(queries.len(), keys.len());
        for (j, (q, k)) in queries.iter().zip(&keys).enumerate() {
            if j % every == every - 1 {
                assert!(!present.contains(q), "position {j}: {q} is present");
            } else {
                assert_eq!(q, k, "position {j}");
            }
        }
    }
    assert_eq!(search_queries(&[5, 6], 3, 1), vec![5, 6]);
}
