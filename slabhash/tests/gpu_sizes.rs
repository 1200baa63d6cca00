//! GPU tests of size arithmetic in gpuds-slabhash (issue 23, part 3): constructors and
//! `reserve` of maps and sets over capacity-like numbers either succeed with room for
//! what was asked, or fail (`CapacityOverflow`, `PoolExhausted`, `OutOfMemory`) with the
//! table and its pool as they were. Requests that succeed are kept small. Every test body
//! is generic over the table ([`Table`]) and runs for every map type combination (modules
//! `u32_u32` ... `u64_u64`) and every set key type (modules `u32`, `u64`): the bounds
//! follow the entries per slab of each layout (30, 15, 10 or 7). Without a GPU each test
//! prints `skipped: no CUDA device` and passes.

mod common;

use gpuds_alloc::{SlabAllocConfig, MAX_UNITS};
use gpuds_core::Gpu;
use gpuds_slabhash::{Error, SlabHashConfig, SlabHashMap, SlabHashSet, SlabKey, MAX_BUCKETS};
use gpuds_testkit::strategy::capacity_edges;

use common::{edge_keys, n, slots, TestValue};

for_every_map_type!(
    map_constructors_take_every_size_or_refuse_it,
    map_reserve_meets_the_request_or_changes_nothing,
    map_reserving_more_than_the_device_holds_is_out_of_memory,
);

for_every_set_type!(
    set_constructors_take_every_size_or_refuse_it,
    set_reserve_meets_the_request_or_changes_nothing,
    set_reserving_more_than_the_device_holds_is_out_of_memory,
);

/// The largest request a test lets succeed (elements or buckets).
const SMALL: u64 = 1 << 16;

/// Bytes of a slab (every layout).
const SLAB_BYTES: u64 = 128;

fn is_overflow(e: &Error) -> bool {
    matches!(e, Error::Core(gpuds_core::Error::CapacityOverflow(_)))
}

fn is_out_of_memory(e: &Error) -> bool {
    matches!(e, Error::Core(gpuds_core::Error::OutOfMemory { .. }))
}

/// What the size tests do with a map or a set of some key (and value) type.
trait Table: Sized {
    /// The key type.
    type Key: SlabKey;
    /// `map u32/u64`, `set u64`, ...: names the table in failure messages.
    fn name() -> String;
    /// Entries per slab of the table's layout.
    fn slots() -> u64;
    /// The table `new` makes for `len` elements.
    fn build(gpu: &Gpu, len: usize) -> Result<Self, Error>;
    /// The table `with_config` makes.
    fn build_with(gpu: &Gpu, config: SlabHashConfig) -> Result<Self, Error>;
    /// Its bucket count.
    fn buckets(&self) -> u32;
    /// `reserve(additional)`.
    fn reserve_more(&mut self, additional: usize) -> Result<(), Error>;
    /// `validate()`.
    fn check(&self) -> Result<(), Error>;
    /// The slab pool's bytes (`stats().pool_bytes`).
    fn pool_bytes(&self) -> u64;
    /// Inserts `keys` (a map: key i with the value i + 1).
    fn fill(&mut self, keys: &[Self::Key]);
    /// The elements as sorted (key, value) numbers (a set's values are 0).
    fn elements(&self) -> Vec<(u64, u64)>;
}

/// The [`Table`] methods that map and set `$table` have under the same names.
macro_rules! same_named {
    ($table:ident) => {
        fn build(gpu: &Gpu, len: usize) -> Result<Self, Error> {
            $table::new(gpu, len)
        }
        fn build_with(gpu: &Gpu, config: SlabHashConfig) -> Result<Self, Error> {
            $table::with_config(gpu, config)
        }
        fn buckets(&self) -> u32 {
            self.config().buckets
        }
        fn reserve_more(&mut self, additional: usize) -> Result<(), Error> {
            self.reserve(additional)
        }
        fn check(&self) -> Result<(), Error> {
            self.validate()
        }
        fn pool_bytes(&self) -> u64 {
            self.stats().unwrap().pool_bytes
        }
    };
}

impl<K: SlabKey, V: TestValue> Table for SlabHashMap<K, V> {
    type Key = K;
    fn name() -> String {
        format!("map {}/{}", K::SUFFIX, V::SUFFIX)
    }
    fn slots() -> u64 {
        slots::<K, V>(false) as u64
    }
    same_named!(SlabHashMap);
    fn fill(&mut self, keys: &[K]) {
        let values: Vec<V> = (1..=keys.len() as u64).map(n).collect();
        self.insert_many(keys, &values).unwrap();
    }
    fn elements(&self) -> Vec<(u64, u64)> {
        let mut pairs: Vec<(u64, u64)> = self
            .to_vec()
            .unwrap()
            .into_iter()
            .map(|(k, v)| (k.to_u64(), v.to_u64()))
            .collect();
        pairs.sort_unstable();
        pairs
    }
}

impl<K: SlabKey> Table for SlabHashSet<K> {
    type Key = K;
    fn name() -> String {
        format!("set {}", K::SUFFIX)
    }
    fn slots() -> u64 {
        slots::<K, ()>(true) as u64
    }
    same_named!(SlabHashSet);
    fn fill(&mut self, keys: &[K]) {
        self.insert_many(keys).unwrap();
    }
    fn elements(&self) -> Vec<(u64, u64)> {
        let mut keys: Vec<(u64, u64)> = self
            .to_vec()
            .unwrap()
            .into_iter()
            .map(|k| (k.to_u64(), 0))
            .collect();
        keys.sort_unstable();
        keys
    }
}

fn map_constructors_take_every_size_or_refuse_it<K: SlabKey, V: TestValue>() {
    constructors_take_every_size_or_refuse_it::<SlabHashMap<K, V>>();
}

fn set_constructors_take_every_size_or_refuse_it<K: SlabKey>() {
    constructors_take_every_size_or_refuse_it::<SlabHashSet<K>>();
}

fn map_reserve_meets_the_request_or_changes_nothing<K: SlabKey, V: TestValue>() {
    reserve_meets_the_request_or_changes_nothing::<SlabHashMap<K, V>>();
}

fn set_reserve_meets_the_request_or_changes_nothing<K: SlabKey>() {
    reserve_meets_the_request_or_changes_nothing::<SlabHashSet<K>>();
}

fn map_reserving_more_than_the_device_holds_is_out_of_memory<K: SlabKey, V: TestValue>() {
    reserving_more_than_the_device_holds_is_out_of_memory::<SlabHashMap<K, V>>();
}

fn set_reserving_more_than_the_device_holds_is_out_of_memory<K: SlabKey>() {
    reserving_more_than_the_device_holds_is_out_of_memory::<SlabHashSet<K>>();
}

/// `new` over the capacity-like numbers: a table for a small number, `CapacityOverflow`
/// for more elements than the largest pool holds (2^32 - 2^10 slabs of the layout's
/// entries); `with_config` over bucket counts: small ones, or past [`MAX_BUCKETS`].
fn constructors_take_every_size_or_refuse_it<T: Table>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let name = T::name();
    let most = MAX_UNITS * T::slots();
    for n in capacity_edges() {
        if n <= SMALL || n > most {
            let Ok(len) = usize::try_from(n) else {
                continue;
            };
            match T::build(&gpu, len) {
                Ok(table) => {
                    assert!(n <= SMALL, "{name} of {n}");
                    table.check().unwrap();
                }
                Err(e) => assert!(n > SMALL && is_overflow(&e), "{name} of {n}: {e}"),
            }
        }
        // Buckets are allocated up front (128 bytes each): small, or past the limit.
        if let Ok(buckets) = u32::try_from(n) {
            if n <= SMALL || buckets > MAX_BUCKETS {
                let config = SlabHashConfig {
                    buckets,
                    ..Default::default()
                };
                match T::build_with(&gpu, config) {
                    Ok(table) => assert_eq!(table.buckets(), buckets, "{name}"),
                    Err(Error::InvalidConfig(_)) => assert_eq!(buckets, 0, "{name}"),
                    Err(e) => assert!(
                        buckets > MAX_BUCKETS && is_overflow(&e),
                        "{name}, {n} buckets: {e}"
                    ),
                }
            }
        }
    }
}

/// `reserve` over the capacity-like numbers on a table whose pool may hold 2^16 slabs
/// (8 MiB): room for what was asked, or an error with the pool and contents unchanged.
fn reserve_meets_the_request_or_changes_nothing<T: Table>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let name = T::name();
    let config = SlabHashConfig {
        buckets: 64,
        alloc: SlabAllocConfig {
            initial_units: 1024,
            max_units: SMALL,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut table = T::build_with(&gpu, config).unwrap();
    // 1,000 keys a 32-bit shortcut would confuse, and one more for the end.
    let keys = edge_keys::<T::Key>(1001);
    table.fill(&keys[..1000]);
    let before = table.elements();
    assert_eq!(before.len(), 1000, "{name}");
    for n in capacity_edges() {
        let Ok(additional) = usize::try_from(n) else {
            continue;
        };
        let pool = table.pool_bytes();
        // Pool slabs beyond the 64 base slabs that 1,000 + n elements fill at least.
        let slabs = (1000 + u128::from(n))
            .div_ceil(u128::from(T::slots()))
            .saturating_sub(64);
        match table.reserve_more(additional) {
            Ok(()) => assert!(
                u128::from(table.pool_bytes()) >= slabs * u128::from(SLAB_BYTES),
                "{name}: reserve({n})"
            ),
            Err(Error::PoolExhausted(_)) => {
                assert!(slabs > u128::from(SMALL), "{name}: reserve({n})");
                assert_eq!(table.pool_bytes(), pool, "{name}: reserve({n})");
            }
            Err(e) => {
                assert!(is_overflow(&e), "{name}: reserve({n}): {e}");
                assert_eq!(table.pool_bytes(), pool, "{name}: reserve({n})");
            }
        }
        assert_eq!(table.elements(), before, "{name}: reserve({n})");
        table.check().unwrap();
    }
    // The table still takes inserts.
    table.fill(&keys[1000..]);
    assert_eq!(table.elements().len(), 1001, "{name}");
    table.check().unwrap();
}

/// A table whose pool may grow past the device's memory: a `reserve` of nearly all of it
/// (the layout's entries less one per slab of the largest pool) is `OutOfMemory`,
/// decided before anything is allocated; the table is unchanged.
fn reserving_more_than_the_device_holds_is_out_of_memory<T: Table>() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let name = T::name();
    // Fewer slabs than the pool's maximum, so not PoolExhausted, but more bytes than
    // the device holds.
    let additional = MAX_UNITS * (T::slots() - 1);
    let least_slabs = additional.div_ceil(T::slots()) - 64;
    if !gpuds_testkit::memory_below(&gpu, least_slabs * SLAB_BYTES) {
        return;
    }
    let config = SlabHashConfig {
        buckets: 64,
        alloc: SlabAllocConfig {
            initial_units: 1024,
            max_units: MAX_UNITS,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut table = T::build_with(&gpu, config).unwrap();
    let keys = edge_keys::<T::Key>(8);
    table.fill(&keys[..3]);
    let before = table.elements();
    let pool = table.pool_bytes();
    let e = table.reserve_more(additional as usize).unwrap_err();
    assert!(is_out_of_memory(&e), "{name}: {e}");
    assert_eq!(table.pool_bytes(), pool, "{name}");
    assert_eq!(table.elements(), before, "{name}");
    table.fill(&keys[3..4]);
    assert_eq!(table.elements().len(), 4, "{name}");
    table.check().unwrap();
}
