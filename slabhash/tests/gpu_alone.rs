//! The lane-alone device operations (`insert_alone_in` / `replace_alone_in`,
//! `erase_alone_in`, `find_alone_in` of `set_ref` and `map_ref`) from a user kernel, for
//! every key and value type (sets and u32/u32 maps run all three alone; the wide maps run
//! `replace_alone_in` alone and look up and delete by tiles of 8 lanes, checked the same
//! way): batches with each duplicate key right after
//! its original (racing in one warp; a replacement must return exactly the value the
//! other request stored), lookups of present and absent keys, deletions and
//! re-insertions, on tables whose lists are one slab, tens of slabs
//! (so that lanes walk long lists alone and leave appends to the warp walk) and in
//! between; `validate()` after every batch, the counters and the host lookups against
//! an oracle.

mod common;

use std::collections::HashMap;

use gpuds_core::cudarc::driver::{DeviceRepr, PushKernelArg};
use gpuds_core::{launch, Arch, DeviceType, Gpu, Program};
use gpuds_slabhash::{SlabHashConfig, SlabHashMap, SlabHashSet, SlabKey};
use gpuds_testkit::gpu;

use common::{n, TestValue};

const ABSENT: u32 = 0;
const PRESENT: u32 = 1;

/// Distinct keys, then the first `dups` of them again (64-bit keys differ in both words).
fn batch_keys<K: SlabKey>(distinct: u64, dups: u64) -> Vec<K> {
    (0..distinct)
        .chain(0..dups)
        .map(|i| n((i << 32) | (i * 7 + 3)))
        .collect()
}

fn absent_keys<K: SlabKey>(count: u64) -> Vec<K> {
    (0..count)
        .map(|i| n(((i + 1_000_003) << 32) | (i + 1_000_003)))
        .collect()
}

/// One launch of the kernel `run` with operation `kind` (0 insert, 1 erase, 2 find):
/// every request's outcome and (maps) value out.
fn launch_ops<K: DeviceType, V: DeviceType>(
    gpu: &Gpu,
    program: &Program,
    table_ref: &impl DeviceRepr,
    kind: u32,
    keys: &[K],
    values: Option<&[V]>,
) -> (Vec<u32>, Vec<V>) {
    let stream = gpu.stream();
    let kernel = gpu.load(program).unwrap().kernel("run").unwrap();
    let d_keys = stream.clone_htod(keys).unwrap();
    let zeros = vec![V::from_u64(0); keys.len()];
    let d_values = stream.clone_htod(values.unwrap_or(&zeros)).unwrap();
    let mut outcomes = stream.alloc_zeros::<u32>(keys.len()).unwrap();
    let mut outs = stream.alloc_zeros::<V>(keys.len()).unwrap();
    let count = keys.len() as u64;
    let mut args = stream.launch_builder(kernel.func());
    args.arg(table_ref)
        .arg(&kind)
        .arg(&d_keys)
        .arg(&d_values)
        .arg(&count)
        .arg(&mut outcomes)
        .arg(&mut outs);
    // A few blocks of 128, each thread several requests (grid-stride rounds).
    unsafe { args.launch(launch::shape(24, 128, 0)) }.unwrap();
    (
        stream.clone_dtoh(&outcomes).unwrap(),
        stream.clone_dtoh(&outs).unwrap(),
    )
}

/// Request order with the `twins` duplicates `first..first + twins` of requests
/// `0..twins` each right after its original (so they race in one warp), the rest after.
fn adjacent_order(len: usize, first: usize, twins: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..twins).flat_map(|i| [i, first + i]).collect();
    order.extend(twins..first);
    order.extend(first + twins..len);
    order
}

/// launch_ops with the requests in `order`, the results back in the requests' order.
fn launch_ordered<K: DeviceType, V: DeviceType>(
    gpu: &Gpu,
    program: &Program,
    table_ref: &impl DeviceRepr,
    kind: u32,
    (keys, values): (&[K], Option<&[V]>),
    order: &[usize],
) -> (Vec<u32>, Vec<V>) {
    let k: Vec<K> = order.iter().map(|&i| keys[i]).collect();
    let v: Option<Vec<V>> = values.map(|v| order.iter().map(|&i| v[i]).collect());
    let (o, x) = launch_ops(gpu, program, table_ref, kind, &k, v.as_deref());
    let (mut outcomes, mut outs) = (vec![0u32; o.len()], vec![V::from_u64(0); x.len()]);
    for (j, &i) in order.iter().enumerate() {
        outcomes[i] = o[j];
        outs[i] = x[j];
    }
    (outcomes, outs)
}

const KERNEL: &str = r#"
using namespace gpuds::slabhash;
using K = KEY_T;
using V = VALUE_T;
extern "C" __global__ void run(REF_T r, unsigned kind, const K* keys, const V* values,
                               unsigned long long n, unsigned* outcomes, V* outs) {
  detail::on_demand_allocator alloc;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  const unsigned long long rounds = (n + stride - 1) / stride;
  for (unsigned long long round = 0; round < rounds; ++round) {
    const unsigned long long i = round * stride + blockIdx.x * blockDim.x + threadIdx.x;
    const bool active = i < n;
    const K key = active ? keys[i] : K(0);
    const unsigned bucket = r.home_of(active, key);
    V out = 0;
    unsigned o;
#if IS_SET
    if (kind == 0) o = r.template insert_alone_in<TEST_GROUPED != 0>(alloc, active, bucket, key);
    else if (kind == 1) o = r.erase_alone_in(active, bucket, key);
    else o = r.find_alone_in(active, bucket, key);
#else
    const V value = active ? values[i] : V(0);
    if (kind == 0) o = r.template replace_alone_in<TEST_GROUPED != 0>(alloc, active, bucket, key, value, out);
    else if (kind == 1) o = r.erase_alone_in(active, bucket, key, out);
    else o = r.find_alone_in(active, bucket, key, out);
#endif
    if (active) {
      outcomes[i] = o;
      outs[i] = out;
    }
  }
}
"#;

/// Per distinct key, exactly one request of `outcomes` says `once` and every other
/// `other` (insertions of one key in one batch: one adds it, the others find it;
/// deletions: one removes it, the others find it gone).
fn one_winner_per_key<K: SlabKey>(keys: &[K], outcomes: &[u32], once: u32, other: u32, what: &str) {
    let mut winners: HashMap<u64, u32> = HashMap::new();
    for (k, &o) in keys.iter().zip(outcomes) {
        let w = winners.entry(k.to_u64()).or_default();
        if o == once {
            *w += 1;
        } else {
            assert_eq!(o, other, "{what}: key {:#x} outcome {o}", k.to_u64());
        }
    }
    for (k, w) in winners {
        assert_eq!(w, 1, "{what}: key {k:#x} won {w} times");
    }
}

/// The deletion batch of each test: the first half of the `DISTINCT` keys, the first
/// `ERASED_TWICE` of them again (each right after its original, so the two race in one
/// warp), then `ERASED_TWICE` absent keys; and the order to launch it in.
fn erase_batch<K: SlabKey>(keys: &[K]) -> (Vec<K>, Vec<usize>) {
    let half = DISTINCT as usize / 2;
    let mut erase = keys[..half].to_vec();
    erase.extend_from_slice(&keys[..ERASED_TWICE]);
    erase.extend(absent_keys::<K>(ERASED_TWICE as u64));
    let order = adjacent_order(erase.len(), half, ERASED_TWICE);
    (erase, order)
}

/// The test kernel for a map of `K` to `V`; `grouped`: insertions claim through
/// `claim_grouped` (the `GROUPED` form of `replace_alone_in`).
fn map_program<K: SlabKey, V: TestValue>(grouped: bool) -> Program {
    Program::new(
        "alone_map",
        format!("#include <gpuds/slabhash/map_ref.cuh>\n{KERNEL}"),
    )
    .define("KEY_T", K::CUDA_TYPE)
    .define("VALUE_T", V::CUDA_TYPE)
    .define(
        "REF_T",
        format!("map_ref<{}, {}>", K::CUDA_TYPE, V::CUDA_TYPE),
    )
    .define("IS_SET", "0")
    .define("TEST_GROUPED", u32::from(grouped))
    .headers(gpuds_slabhash::cuda_headers())
}

/// The test kernel for a set of `K`; `grouped` as [`map_program`]'s.
fn set_program<K: SlabKey>(grouped: bool) -> Program {
    Program::new(
        "alone_set",
        format!("#include <gpuds/slabhash/set_ref.cuh>\n{KERNEL}"),
    )
    .define("KEY_T", K::CUDA_TYPE)
    .define("VALUE_T", "unsigned")
    .define("REF_T", format!("set_ref<{}>", K::CUDA_TYPE))
    .define("IS_SET", "1")
    .define("TEST_GROUPED", u32::from(grouped))
    .headers(gpuds_slabhash::cuda_headers())
}

/// Warps of requests for `CROWD_KEYS` keys: warp w carries keys `(w % 3) * 32 ..` in
/// lane order, so that many warps insert the same keys into the same slabs at once,
/// and in every fourth warp lanes 16-31 repeat lanes 0-15 (duplicates inside a warp).
/// On a table of one or three buckets the lanes of a warp mostly stop at one slab's
/// first empty slot together and claim side by side (alone.cuh, claim_grouped), while
/// other warps claim the same keys below them.
fn crowded_keys<K: SlabKey>() -> Vec<K> {
    (0..CROWD_WARPS)
        .flat_map(|w| {
            (0..32u64).map(move |lane| {
                let lane = if w % 4 == 3 && lane >= 16 {
                    lane - 16
                } else {
                    lane
                };
                n((((w % 3) * 32 + lane) << 32) | ((w % 3) * 32 + lane + 5))
            })
        })
        .collect()
}

const CROWD_WARPS: u64 = 384;
const CROWD_KEYS: usize = 96;

const ERASED_TWICE: usize = 500;
const BUCKETS: [u32; 3] = [7, 97, 4096];
const DISTINCT: u64 = 12_000;
const DUPS: u64 = 2_000;

for_every_map_type!(
    map_alone_forms_match_an_oracle,
    map_crowded_claims_keep_keys_unique,
    map_programs_compile
);

/// The test kernels compile in both forms with NVRTC alone (no GPU): a define of the
/// test's that clashed with a name in the headers would fail here, in CI, and not only on
/// a GPU machine.
fn map_programs_compile<K: SlabKey, V: TestValue>() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    for grouped in [false, true] {
        gpuds_testkit::ptx(&map_program::<K, V>(grouped), Arch::new(9, 0));
    }
}

fn map_alone_forms_match_an_oracle<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpu() else { return };
    // The per-slot claim and the grouped one (GROUPED), against one oracle.
    let programs = [map_program::<K, V>(false), map_program::<K, V>(true)];
    for (program, buckets) in programs.iter().flat_map(|p| BUCKETS.map(|b| (p, b))) {
        let config = SlabHashConfig {
            buckets,
            ..Default::default()
        };
        let mut map = SlabHashMap::<K, V>::with_config(&gpu, config).unwrap();
        map.reserve((DISTINCT + DUPS) as usize).unwrap();
        let r = map.device_ref();
        let keys = batch_keys::<K>(DISTINCT, DUPS);
        let values: Vec<V> = (0..keys.len() as u64)
            .map(|i| n((i << 33) | (3 * i + 1)))
            .collect();
        // Insert (REPLACE), each duplicate right after its original: one request per
        // key adds it, the other replaces exactly the value the first stored, and the
        // key keeps the second one's value (`last`).
        let order = adjacent_order(keys.len(), DISTINCT as usize, DUPS as usize);
        let (outcomes, olds) = launch_ordered(&gpu, program, &r, 0, (&keys, Some(&values)), &order);
        map.refresh().unwrap();
        map.validate().unwrap();
        one_winner_per_key(&keys, &outcomes, ABSENT, PRESENT, "replace");
        let mut last: HashMap<u64, u64> = HashMap::new();
        for i in 0..DISTINCT as usize {
            last.insert(keys[i].to_u64(), values[i].to_u64());
        }
        for i in 0..DUPS as usize {
            let (a, b) = (i, DISTINCT as usize + i);
            let (first, second) = if outcomes[a] == ABSENT {
                (a, b)
            } else {
                (b, a)
            };
            assert_eq!(
                olds[second].to_u64(),
                values[first].to_u64(),
                "old value of {:#x}",
                keys[a].to_u64()
            );
            last.insert(keys[a].to_u64(), values[second].to_u64());
        }
        assert_eq!(map.len().unwrap(), DISTINCT as usize, "buckets {buckets}");

        // Find: present keys with a value given to them, absent keys absent.
        let mut probe = keys[..DISTINCT as usize].to_vec();
        probe.extend(absent_keys::<K>(3_000));
        let (outcomes, found) = launch_ops::<K, V>(&gpu, program, &r, 2, &probe, None);
        let mut stored: HashMap<u64, u64> = HashMap::new();
        for (i, k) in probe.iter().enumerate() {
            if i < DISTINCT as usize {
                assert_eq!(outcomes[i], PRESENT, "find {:#x}", k.to_u64());
                assert_eq!(
                    found[i].to_u64(),
                    last[&k.to_u64()],
                    "value of {:#x}",
                    k.to_u64()
                );
                stored.insert(k.to_u64(), found[i].to_u64());
            } else {
                assert_eq!(outcomes[i], ABSENT, "find absent {:#x}", k.to_u64());
            }
        }
        // The host's lookups agree with the kernel's.
        let host = map.get_many(&probe[..DISTINCT as usize]).unwrap();
        for (k, v) in probe.iter().zip(&host) {
            assert_eq!(v.map(|v| v.to_u64()), Some(stored[&k.to_u64()]));
        }

        // Erase half the keys (some twice, some absent): one request per key removes
        // it, with its stored value.
        let half = DISTINCT as usize / 2;
        let (erase, order) = erase_batch(&keys);
        let (outcomes, removed) =
            launch_ordered::<K, V>(&gpu, program, &r, 1, (&erase, None), &order);
        map.refresh().unwrap();
        map.validate().unwrap();
        one_winner_per_key(
            &erase[..half + ERASED_TWICE],
            &outcomes[..half + ERASED_TWICE],
            PRESENT,
            ABSENT,
            "erase",
        );
        for (i, k) in erase.iter().enumerate().take(half + ERASED_TWICE) {
            if outcomes[i] == PRESENT {
                assert_eq!(
                    removed[i].to_u64(),
                    stored[&k.to_u64()],
                    "removed value of {:#x}",
                    k.to_u64()
                );
            }
        }
        for (k, o) in erase[half + ERASED_TWICE..]
            .iter()
            .zip(&outcomes[half + ERASED_TWICE..])
        {
            assert_eq!(*o, ABSENT, "erase absent {:#x}", k.to_u64());
        }
        assert_eq!(map.len().unwrap(), DISTINCT as usize - half);

        // Find again, then insert the erased keys anew (after their tombstones).
        let (outcomes, _) =
            launch_ops::<K, V>(&gpu, program, &r, 2, &keys[..DISTINCT as usize], None);
        for (i, o) in outcomes.iter().enumerate() {
            assert_eq!(
                *o,
                if i < half { ABSENT } else { PRESENT },
                "find after erase, {i}"
            );
        }
        let again: Vec<K> = keys[..half].to_vec();
        let again_values: Vec<V> = (0..half as u64).map(|i| n(i + 9)).collect();
        let (outcomes, _) = launch_ops(&gpu, program, &r, 0, &again, Some(&again_values));
        map.refresh().unwrap();
        map.validate().unwrap();
        assert!(outcomes.iter().all(|&o| o == ABSENT));
        assert_eq!(map.len().unwrap(), DISTINCT as usize);
        let host = map.get_many(&again).unwrap();
        for (v, w) in host.iter().zip(&again_values) {
            assert_eq!(v.map(|v| v.to_u64()), Some(w.to_u64()));
        }
    }
}

for_every_set_type!(
    set_alone_forms_match_an_oracle,
    set_crowded_claims_keep_keys_unique,
    set_programs_compile
);

/// [`map_programs_compile`] for sets.
fn set_programs_compile<K: SlabKey>() {
    if !gpuds_testkit::nvrtc() {
        return;
    }
    for grouped in [false, true] {
        gpuds_testkit::ptx(&set_program::<K>(grouped), Arch::new(9, 0));
    }
}

fn set_alone_forms_match_an_oracle<K: SlabKey>() {
    let Some(gpu) = gpu() else { return };
    // The per-slot claim and the grouped one (GROUPED), against one oracle.
    let programs = [set_program::<K>(false), set_program::<K>(true)];
    for (program, buckets) in programs.iter().flat_map(|p| BUCKETS.map(|b| (p, b))) {
        let config = SlabHashConfig {
            buckets,
            ..Default::default()
        };
        let mut set = SlabHashSet::<K>::with_config(&gpu, config).unwrap();
        set.reserve((DISTINCT + DUPS) as usize).unwrap();
        let r = set.device_ref();
        let keys = batch_keys::<K>(DISTINCT, DUPS);
        let order = adjacent_order(keys.len(), DISTINCT as usize, DUPS as usize);
        let (outcomes, _) = launch_ordered::<K, u32>(&gpu, program, &r, 0, (&keys, None), &order);
        set.refresh().unwrap();
        set.validate().unwrap();
        one_winner_per_key(&keys, &outcomes, ABSENT, PRESENT, "insert");
        assert_eq!(set.len().unwrap(), DISTINCT as usize, "buckets {buckets}");

        let mut probe = keys[..DISTINCT as usize].to_vec();
        probe.extend(absent_keys::<K>(3_000));
        let (outcomes, _) = launch_ops::<K, u32>(&gpu, program, &r, 2, &probe, None);
        for (i, o) in outcomes.iter().enumerate() {
            assert_eq!(
                *o,
                if i < DISTINCT as usize {
                    PRESENT
                } else {
                    ABSENT
                },
                "find {i}"
            );
        }

        let half = DISTINCT as usize / 2;
        let (erase, order) = erase_batch(&keys);
        let (outcomes, _) = launch_ordered::<K, u32>(&gpu, program, &r, 1, (&erase, None), &order);
        set.refresh().unwrap();
        set.validate().unwrap();
        one_winner_per_key(
            &erase[..half + ERASED_TWICE],
            &outcomes[..half + ERASED_TWICE],
            PRESENT,
            ABSENT,
            "erase",
        );
        assert!(outcomes[half + ERASED_TWICE..].iter().all(|&o| o == ABSENT));
        assert_eq!(set.len().unwrap(), DISTINCT as usize - half);
        let host = set.contains_many(&keys[..DISTINCT as usize]).unwrap();
        for (i, c) in host.iter().enumerate() {
            assert_eq!(*c, i >= half, "contains after erase, {i}");
        }

        let (outcomes, _) = launch_ops::<K, u32>(&gpu, program, &r, 0, &keys[..half], None);
        set.refresh().unwrap();
        set.validate().unwrap();
        assert!(outcomes.iter().all(|&o| o == ABSENT));
        assert_eq!(set.len().unwrap(), DISTINCT as usize);
    }
}

fn set_crowded_claims_keep_keys_unique<K: SlabKey>() {
    let Some(gpu) = gpu() else { return };
    let programs = [set_program::<K>(false), set_program::<K>(true)];
    for (program, buckets) in programs.iter().flat_map(|p| [1, 3].map(|b| (p, b))) {
        let config = SlabHashConfig {
            buckets,
            ..Default::default()
        };
        let mut set = SlabHashSet::<K>::with_config(&gpu, config).unwrap();
        let r = set.device_ref();
        let keys = crowded_keys::<K>();
        let (outcomes, _) = launch_ops::<K, u32>(&gpu, program, &r, 0, &keys, None);
        set.refresh().unwrap();
        set.validate().unwrap();
        one_winner_per_key(&keys, &outcomes, ABSENT, PRESENT, "crowded insert");
        assert_eq!(set.len().unwrap(), CROWD_KEYS, "buckets {buckets}");
        let (found, _) = launch_ops::<K, u32>(&gpu, program, &r, 2, &keys[..CROWD_KEYS], None);
        assert!(found.iter().all(|&o| o == PRESENT), "buckets {buckets}");
    }
}

fn map_crowded_claims_keep_keys_unique<K: SlabKey, V: TestValue>() {
    let Some(gpu) = gpu() else { return };
    let programs = [map_program::<K, V>(false), map_program::<K, V>(true)];
    // Every request of a key carries the key's one value: a replacement returns it, and
    // the key keeps it.
    let value_of = |k: u64| k.rotate_left(7) ^ 0x5bd1;
    for (program, buckets) in programs.iter().flat_map(|p| [1, 3].map(|b| (p, b))) {
        let config = SlabHashConfig {
            buckets,
            ..Default::default()
        };
        let mut map = SlabHashMap::<K, V>::with_config(&gpu, config).unwrap();
        let r = map.device_ref();
        let keys = crowded_keys::<K>();
        let values: Vec<V> = keys.iter().map(|k| n(value_of(k.to_u64()))).collect();
        let (outcomes, olds) = launch_ops(&gpu, program, &r, 0, &keys, Some(&values));
        map.refresh().unwrap();
        map.validate().unwrap();
        one_winner_per_key(&keys, &outcomes, ABSENT, PRESENT, "crowded replace");
        for (i, &o) in outcomes.iter().enumerate() {
            if o == PRESENT {
                assert_eq!(olds[i], values[i], "old value of request {i}");
            }
        }
        assert_eq!(map.len().unwrap(), CROWD_KEYS, "buckets {buckets}");
        let got = map.get_many(&keys[..CROWD_KEYS]).unwrap();
        assert_eq!(
            got,
            values[..CROWD_KEYS]
                .iter()
                .map(|&v| Some(v))
                .collect::<Vec<_>>()
        );
    }
}
