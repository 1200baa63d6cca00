//! GPU tests of the device forms of the flat and range tables (`get_many_device`,
//! `remove_many_device`) against their host forms and a `HashMap` oracle, on every
//! placement and the tiered one, with batches split into several sorted chunks; and of
//! `RangeTable::reserve`. Without a GPU each test prints `skipped: no CUDA device` and
//! passes (fails with GPUDS_REQUIRE_GPU=1).

use std::collections::HashMap;

use cudarc::driver::CudaSlice;
use gpuds_core::Gpu;
use gpuds_oversub::{Error, FlatTable, Placement, RangeTable, RangeTableConfig};
use gpuds_testkit::gpu;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

mod common;

use common::tables::Table;

/// The device forms this file compares with the host forms of [`Table`], on either
/// table.
trait Forms: Table {
    fn get_device(
        &mut self,
        k: &CudaSlice<u32>,
        v: Option<&mut CudaSlice<u32>>,
        f: &mut CudaSlice<u32>,
    ) -> Result<(), Error>;
    fn remove_device(&mut self, k: &CudaSlice<u32>, r: &mut CudaSlice<u32>) -> Result<(), Error>;
}

macro_rules! forms {
    ($t:ty) => {
        impl Forms for $t {
            fn get_device(
                &mut self,
                k: &CudaSlice<u32>,
                v: Option<&mut CudaSlice<u32>>,
                f: &mut CudaSlice<u32>,
            ) -> Result<(), Error> {
                self.get_many_device(k, v, f)
            }
            fn remove_device(
                &mut self,
                k: &CudaSlice<u32>,
                r: &mut CudaSlice<u32>,
            ) -> Result<(), Error> {
                self.remove_many_device(k, r)
            }
        }
    };
}
forms!(FlatTable);
forms!(RangeTable);

fn bit(words: &[u32], i: usize) -> bool {
    words[i / 32] >> (i % 32) & 1 == 1
}

/// Inserts random keys, then compares device lookups (with and without values) with the
/// host form and the oracle, refuses bad arguments without changing anything, and removes
/// half the keys on the device (each named twice: removed once).
fn device_forms_match(gpu: &Gpu, t: &mut dyn Forms, seed: u64, what: &str) {
    let s = gpu.stream();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut keys: Vec<u32> = (0..5050)
        .map(|i| match i < 5000 {
            true => rng.random_range(1..1u32 << 17),
            false => rng.random_range(1..u32::MAX - 1),
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let values: Vec<u32> = keys.iter().map(|_| rng.random_range(0..u32::MAX)).collect();
    t.insert(&keys, &values).unwrap();
    let oracle: HashMap<u32, u32> = keys.iter().copied().zip(values.iter().copied()).collect();
    // Present, absent and repeated queries, in random order; 4,111 is no multiple of 32.
    let queries: Vec<u32> = (0..4111)
        .map(|i| match i % 3 {
            0 => keys[rng.random_range(0..keys.len())],
            1 => rng.random_range(1..1u32 << 18),
            _ => rng.random_range(1..u32::MAX - 1),
        })
        .collect();
    let dq = s.clone_htod(&queries).unwrap();
    let mut dv = s.alloc_zeros::<u32>(queries.len()).unwrap();
    let mut df = s
        .clone_htod(&vec![u32::MAX; queries.len().div_ceil(32)])
        .unwrap();
    t.get_device(&dq, Some(&mut dv), &mut df).unwrap();
    let (got_v, got_f) = (s.clone_dtoh(&dv).unwrap(), s.clone_dtoh(&df).unwrap());
    let host = t.get(&queries).unwrap();
    for (i, q) in queries.iter().enumerate() {
        let want = oracle.get(q).copied();
        assert_eq!(host[i], want, "{what}: host get of {q}");
        assert_eq!(
            bit(&got_f, i),
            want.is_some(),
            "{what}: found bit {i} ({q})"
        );
        assert_eq!(
            got_v[i],
            want.unwrap_or(u32::MAX),
            "{what}: value {i} ({q})"
        );
    }
    // Without values: the same bits.
    let mut df2 = s.alloc_zeros::<u32>(queries.len().div_ceil(32)).unwrap();
    t.get_device(&dq, None, &mut df2).unwrap();
    assert_eq!(
        s.clone_dtoh(&df2).unwrap(),
        got_f,
        "{what}: bits without values"
    );
    // Bad arguments: a reserved key (named by index), outputs too short; nothing changes.
    let mut bad = queries.clone();
    bad[77] = u32::MAX;
    let dbad = s.clone_htod(&bad).unwrap();
    match t.get_device(&dbad, None, &mut df2) {
        Err(Error::ReservedKey { index: 77, .. }) => {}
        other => panic!("{what}: reserved key: {other:?}"),
    }
    let mut short = s
        .alloc_zeros::<u32>(queries.len().div_ceil(32) - 1)
        .unwrap();
    assert!(
        matches!(
            t.get_device(&dq, None, &mut short),
            Err(Error::LengthMismatch { .. })
        ),
        "{what}: short bits"
    );
    let mut short_v = s.alloc_zeros::<u32>(queries.len() - 1).unwrap();
    assert!(
        matches!(
            t.get_device(&dq, Some(&mut short_v), &mut df2),
            Err(Error::LengthMismatch { .. })
        ),
        "{what}: short values"
    );
    let mut removed = s.alloc_zeros::<u32>(bad.len().div_ceil(32)).unwrap();
    assert!(
        matches!(
            t.remove_device(&dbad, &mut removed),
            Err(Error::ReservedKey { index: 77, .. })
        ),
        "{what}: reserved key in a removal"
    );
    assert_eq!(t.len(), keys.len() as u64, "{what}: nothing applied");
    // Removal on the device: every other key, each named twice.
    let gone: Vec<u32> = keys.iter().step_by(2).flat_map(|&k| [k, k]).collect();
    let dg = s.clone_htod(&gone).unwrap();
    let mut dr = s.alloc_zeros::<u32>(gone.len().div_ceil(32)).unwrap();
    t.remove_device(&dg, &mut dr).unwrap();
    let r = s.clone_dtoh(&dr).unwrap();
    for pair in 0..gone.len() / 2 {
        let (a, b) = (bit(&r, 2 * pair), bit(&r, 2 * pair + 1));
        assert!(
            a ^ b,
            "{what}: key {} removed exactly once ({a}, {b})",
            gone[2 * pair]
        );
    }
    assert_eq!(
        t.len(),
        (keys.len() - keys.len().div_ceil(2)) as u64,
        "{what}: len"
    );
    t.check().unwrap();
    let after = t.get(&keys).unwrap();
    for (i, k) in keys.iter().enumerate() {
        let want = (i % 2 == 1).then(|| oracle[k]);
        assert_eq!(after[i], want, "{what}: key {k} after removal");
    }
}

#[test]
fn device_forms_of_the_flat_table_match_the_host_forms() {
    let Some(gpu) = gpu() else { return };
    for placement in Placement::ALL {
        let mut t = FlatTable::new(&gpu, 20_000, placement).unwrap();
        device_forms_match(&gpu, &mut t, 11, &format!("flat {}", placement.name()));
    }
}

#[test]
fn device_forms_of_the_range_table_match_the_host_forms() {
    let Some(gpu) = gpu() else { return };
    let inner_bytes = (1u64 << 15) * 8; // range_bits 14 at load factor 0.5
    let tiered = Placement::Tiered {
        device_budget_bytes: 3 * inner_bytes,
    };
    for placement in Placement::ALL.into_iter().chain([tiered]) {
        // Batches of 1,000 keys: a call runs several sorted chunks, whose positions
        // index the whole call's outputs.
        let config = RangeTableConfig {
            range_bits: 14,
            placement,
            batch: 1000,
            ..Default::default()
        };
        let mut t = RangeTable::with_config(&gpu, config).unwrap();
        device_forms_match(&gpu, &mut t, 12, &format!("range {}", placement.name()));
    }
}

#[test]
fn reserved_ranges_take_their_inner_tables_up_front() {
    let Some(gpu) = gpu() else { return };
    let tiered = Placement::Tiered {
        device_budget_bytes: 2 * (1u64 << 15) * 8,
    };
    for placement in [Placement::Device, Placement::HostMapped, tiered] {
        let config = RangeTableConfig {
            range_bits: 14,
            placement,
            ..Default::default()
        };
        let mut t = RangeTable::with_config(&gpu, config).unwrap();
        t.reserve(1..=(5 << 14) - 1).unwrap();
        assert_eq!(t.stats().containers, 5, "{}", placement.name());
        t.reserve(3 << 14..=4 << 14).unwrap(); // held already: nothing new
        let (lo, hi) = (10, 9);
        t.reserve(lo..=hi).unwrap(); // empty
        assert_eq!(t.stats().containers, 5, "{}", placement.name());
        // Lookups and removals in reserved, empty tables copy nothing (tiered: a fresh
        // table stays in its home; an insert clears a cache slot on the device for it).
        assert_eq!(t.get_many(&[1, 1 << 14, 3 << 14]).unwrap(), vec![None; 3]);
        assert_eq!(t.remove_many(&[2, 2 << 14]).unwrap(), vec![false; 2]);
        assert_eq!(t.stats().link_bytes, 0, "{}", placement.name());
        let keys: Vec<u32> = (1..(5 << 14)).step_by(7).collect();
        let values: Vec<u32> = keys.iter().map(|k| k ^ 0x5555).collect();
        t.insert_many(&keys, &values).unwrap();
        assert_eq!(
            t.stats().containers,
            5,
            "{}: no new inner table",
            placement.name()
        );
        if let Placement::Tiered { .. } = placement {
            // Five fresh tables through two slots: three written back, none copied in.
            let s = t.stats();
            assert_eq!((s.moved_in, s.moved_out), (0, 3), "{s:?}");
        }
        assert_eq!(t.len().unwrap(), keys.len() as u64);
        let got = t.get_many(&keys).unwrap();
        assert!(got.iter().zip(&values).all(|(g, v)| *g == Some(*v)));
        t.validate().unwrap();
        // The last range of the key space too.
        t.reserve(u32::MAX - 5..=u32::MAX).unwrap();
        assert_eq!(t.stats().containers, 6, "{}", placement.name());
        t.insert_many(&[u32::MAX - 2], &[9]).unwrap();
        assert_eq!(t.get_many(&[u32::MAX - 2]).unwrap(), vec![Some(9)]);
        t.validate().unwrap();
    }
}
