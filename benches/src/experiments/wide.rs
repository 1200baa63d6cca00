//! 64-bit words: what `--key u64` and `--value u64` measure on `slabhash`, `hive` and
//! `btree` (and `quick`, which runs all three).
//!
//! For one structure and the command line's key and value types, every case measures in
//! one run, at 2^24 keys (`--keys N` replaces it) and the load the structure's u32 rows
//! use (`--load` replaces it where the structure has a load):
//!
//! - the structure at the asked types: insert of fresh keys into an empty structure, find
//!   of the present keys, find of absent keys; each row's baseline is
//! - the same structure at u32 keys and values, the same operations and sizes, measured
//!   just before (the ratio is what the wider words cost);
//! - LinearProbeMap at the asked types and the same load, the same operations (its own
//!   rows, the flat table as a reference point);
//! - for HiveMap's 64-bit forms, the finds on a table that grew to hold the keys (made
//!   for an eighth of them, resized between batches; `growth_rows`) against the finds
//!   on the table made at its size.
//!
//! The structures' u32 configurations: SlabHashMap sized by [`SlabHashMap::new`] (an
//! average slab count of 0.7, the paper's), HiveMap with 16 slots per bucket and BitHash
//! at load 0.8, GpuBTreeMap with its default configuration (the node pool sized for the
//! keys). Keys come from the `linear` experiment's bijection ([`super::linear::bench_key`]:
//! 64-bit keys have a random high word, so keys that share a low word are distinct), made
//! on the host for 64-bit words. Finds are checked on a sample after each measurement.

use gpuds_btree::{BTreeConfig, GpuBTreeMap, TreeKey, TreeValue};
use gpuds_core::cudarc::driver::CudaSlice;
use gpuds_core::keys::{DeviceKey, DeviceValue};
use gpuds_core::{Error, Result};
use gpuds_hive::{HashPair, HiveConfig, HiveKey, HiveMap, HiveValue, LinearConfig, LinearProbeMap};
use gpuds_slabhash::{SlabHashMap, SlabKey, SlabValue};

use super::core_error;
use super::linear::Inputs;
use super::{Case, Experiment, Params, Scale, Word};
use crate::bench::Bench;
use crate::report::{size_label, Baseline, Row, Unit};
use crate::timing::Timing;

/// The structures with a 64-bit form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Structure {
    /// gpuds-slabhash's SlabHashMap.
    SlabHash,
    /// gpuds-hive's HiveMap.
    Hive,
    /// gpuds-btree's GpuBTreeMap.
    BTree,
}

impl Structure {
    /// The structure's experiment, whose [`Accepts`](super::Accepts) declare its forms.
    fn experiment(self) -> Experiment {
        match self {
            Structure::SlabHash => super::slabhash::EXPERIMENT,
            Structure::Hive => super::hive::EXPERIMENT,
            Structure::BTree => super::btree::EXPERIMENT,
        }
    }

    /// The load of the u32 rows of the structure's experiment (the B-Tree has none: its
    /// LinearProbeMap reference runs at 0.8).
    fn default_load(self) -> f64 {
        0.8
    }
}

/// Whether the command line asks for 64-bit words.
pub fn asked(params: &Params) -> bool {
    params.key == Word::U64 || params.value == Word::U64
}

/// The plan of `structure`'s 64-bit form: one case at `--keys` (2^24 by default, 2^22
/// under `quick`) for each `--load` (the structure's own load by default); no case at a
/// key/value form its experiment does not declare (`check` refuses those, `quick` skips
/// them).
pub fn plan(structure: Structure, params: &Params) -> Vec<Case> {
    let experiment = structure.experiment();
    if !experiment.accepts.words.takes(params.key, params.value) {
        return Vec::new();
    }
    let n = params.keys_or(match params.scale {
        Scale::Quick => 1 << 22,
        Scale::Full => 1 << 24,
    });
    let loads = params.loads_or(&[structure.default_load()]);
    let (key, value) = (params.key, params.value);
    loads
        .into_iter()
        .map(|load| {
            Case::new(
                format!(
                    "{} {}/{}, {}, load {load}",
                    experiment.name,
                    key.name(),
                    value.name(),
                    size_label(n as u64)
                ),
                move |bench| match structure {
                    Structure::SlabHash => {
                        typed!(bench, n, load, key, value, SlabHashMap, delete_rows)
                    }
                    Structure::Hive => match (key, value) {
                        (Word::U32, Word::U32) => {
                            case::<u32, u32, HiveMap, HiveMap>(bench, n, load, no_rows)
                        }
                        (Word::U64, Word::U32) => case::<u64, u32, HiveMap<u64, u32>, HiveMap>(
                            bench,
                            n,
                            load,
                            growth_rows::<u64, u32>,
                        ),
                        (Word::U64, Word::U64) => case::<u64, u64, HiveMap<u64, u64>, HiveMap>(
                            bench,
                            n,
                            load,
                            growth_rows::<u64, u64>,
                        ),
                        (Word::U32, Word::U64) => {
                            unreachable!("not among hive's forms: plan has no such case")
                        }
                    },
                    Structure::BTree => {
                        typed!(bench, n, load, key, value, GpuBTreeMap, node_rows)
                    }
                },
            )
        })
        .collect()
}

/// The rows of generic structure `$s` (a type constructor of two parameters) at the
/// command line's words, with generic `$extra`'s rows (if given) for the 64-bit forms.
macro_rules! typed {
    ($bench:expr, $n:expr, $load:expr, $key:expr, $value:expr, $s:ident $(, $extra:ident)?) => {
        match ($key, $value) {
            (Word::U32, Word::U32) => {
                case::<u32, u32, $s<u32, u32>, $s<u32, u32>>($bench, $n, $load, no_rows)
            }
            (Word::U32, Word::U64) => case::<u32, u64, $s<u32, u64>, $s<u32, u32>>(
                $bench,
                $n,
                $load,
                extra!($($extra)?; u32, u64),
            ),
            (Word::U64, Word::U32) => case::<u64, u32, $s<u64, u32>, $s<u32, u32>>(
                $bench,
                $n,
                $load,
                extra!($($extra)?; u64, u32),
            ),
            (Word::U64, Word::U64) => case::<u64, u64, $s<u64, u64>, $s<u32, u32>>(
                $bench,
                $n,
                $load,
                extra!($($extra)?; u64, u64),
            ),
        }
    };
}

/// `typed!`'s extra rows at one pair of types: `$e::<$k, $v>`, or none.
macro_rules! extra {
    (; $k:ty, $v:ty) => {
        no_rows
    };
    ($e:ident; $k:ty, $v:ty) => {
        $e::<$k, $v>
    };
}
use extra;
use typed;

/// A structure under test at key type `K` and value type `V`.
trait Subject<K: DeviceKey, V: DeviceValue>: Sized {
    /// The structure's name in rows.
    const NAME: &'static str;
    /// The experiment its rows belong to.
    const EXPERIMENT: &'static str;
    /// An empty structure for `n` keys at `load`.
    fn build(bench: &Bench, n: usize, load: f64) -> Result<Self>;
    /// Empties it.
    fn clear(&mut self) -> Result<()>;
    /// Inserts device pairs (the timed call).
    fn insert(&mut self, keys: &CudaSlice<K>, values: &CudaSlice<V>) -> Result<()>;
    /// Finds device keys (the timed call); `out` and `found` have room for every key.
    fn find(
        &mut self,
        keys: &CudaSlice<K>,
        out: &mut CudaSlice<V>,
        found: &mut CudaSlice<u32>,
    ) -> Result<()>;
    /// Host lookups, for the check.
    fn get(&mut self, keys: &[K]) -> Result<Vec<Option<V>>>;
    /// Checks the structure's invariants.
    fn validate(&mut self) -> Result<()>;
}

impl<K: SlabKey, V: SlabValue> Subject<K, V> for SlabHashMap<K, V> {
    const NAME: &'static str = "SlabHashMap";
    const EXPERIMENT: &'static str = "slabhash";
    fn build(bench: &Bench, n: usize, _load: f64) -> Result<Self> {
        SlabHashMap::new(&bench.gpu, n).map_err(core_error)
    }
    fn clear(&mut self) -> Result<()> {
        SlabHashMap::clear(self).map_err(core_error)
    }
    fn insert(&mut self, keys: &CudaSlice<K>, values: &CudaSlice<V>) -> Result<()> {
        self.insert_many(keys, values).map_err(core_error)
    }
    fn find(
        &mut self,
        keys: &CudaSlice<K>,
        out: &mut CudaSlice<V>,
        _found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        self.get_many_into(keys, out).map_err(core_error)
    }
    fn get(&mut self, keys: &[K]) -> Result<Vec<Option<V>>> {
        self.get_many(keys).map_err(core_error)
    }
    fn validate(&mut self) -> Result<()> {
        SlabHashMap::validate(self).map_err(core_error)
    }
}

impl<K: HiveKey, V: HiveValue<K>> Subject<K, V> for HiveMap<K, V> {
    const NAME: &'static str = "HiveMap";
    const EXPERIMENT: &'static str = "hive";
    fn build(bench: &Bench, n: usize, load: f64) -> Result<Self> {
        let config = HiveConfig {
            capacity: (n as f64 / load).ceil() as usize,
            slots_per_bucket: 16,
            hash: HashPair::BitHash,
            auto_resize: false,
            ..Default::default()
        };
        HiveMap::with_config(&bench.gpu, config).map_err(core_error)
    }
    fn clear(&mut self) -> Result<()> {
        HiveMap::clear(self).map_err(core_error)
    }
    fn insert(&mut self, keys: &CudaSlice<K>, values: &CudaSlice<V>) -> Result<()> {
        self.insert_many(keys, values).map_err(core_error)
    }
    fn find(
        &mut self,
        keys: &CudaSlice<K>,
        out: &mut CudaSlice<V>,
        _found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        self.get_many_into(keys, out, V::from_u64(u64::MAX))
            .map_err(core_error)
    }
    fn get(&mut self, keys: &[K]) -> Result<Vec<Option<V>>> {
        self.get_many(keys).map_err(core_error)
    }
    fn validate(&mut self) -> Result<()> {
        HiveMap::validate(self).map_err(core_error)
    }
}

/// The configuration of a tree for `n` keys (64-bit pairs in nodes of `node_bytes`).
fn tree_config(n: usize, node_bytes: u32) -> BTreeConfig {
    BTreeConfig {
        initial_nodes: (n as u64 / 2).max(1 << 16),
        max_nodes: (n as u64 * 2).max(1 << 20),
        wide_node_bytes: node_bytes,
        ..Default::default()
    }
}

impl<K: TreeKey, V: TreeValue> Subject<K, V> for GpuBTreeMap<K, V> {
    const NAME: &'static str = "GpuBTreeMap";
    const EXPERIMENT: &'static str = "btree";
    fn build(bench: &Bench, n: usize, _load: f64) -> Result<Self> {
        let config = tree_config(n, BTreeConfig::default().wide_node_bytes);
        GpuBTreeMap::with_config(&bench.gpu, config).map_err(core_error)
    }
    fn clear(&mut self) -> Result<()> {
        GpuBTreeMap::clear(self).map_err(core_error)
    }
    fn insert(&mut self, keys: &CudaSlice<K>, values: &CudaSlice<V>) -> Result<()> {
        self.insert_many_device(keys, values).map_err(core_error)
    }
    fn find(
        &mut self,
        keys: &CudaSlice<K>,
        out: &mut CudaSlice<V>,
        found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        self.get_many_device(keys, out, found).map_err(core_error)
    }
    fn get(&mut self, keys: &[K]) -> Result<Vec<Option<V>>> {
        self.get_many(keys).map_err(core_error)
    }
    fn validate(&mut self) -> Result<()> {
        GpuBTreeMap::validate(self).map_err(core_error)
    }
}

/// The node-layout comparison of a 64-bit tree: 128-byte nodes read by 8 lanes and
/// 256-byte nodes read by 16 against `default` (256-byte nodes, 8 lanes, measured in the
/// same run), the same operations.
fn node_rows<K: TreeKey, V: TreeValue>(
    bench: &mut Bench,
    n: usize,
    _: f64,
    default: &Measured,
) -> Result<Vec<Row>> {
    let mut out = Vec::new();
    for (bytes, tile) in [(128, 8), (256, 16)] {
        let config = BTreeConfig {
            query_tile: tile,
            ..tree_config(n, bytes)
        };
        let tree = GpuBTreeMap::<K, V>::with_config(&bench.gpu, config).map_err(core_error)?;
        let measured = measure_built(bench, n, tree)?;
        out.extend(layout_rows::<K, V>(&measured, default, n, bytes, tile));
    }
    Ok(out)
}

/// The rows of one layout (nodes of `bytes` read by `tile` lanes) against the default's.
fn layout_rows<K: TreeKey, V: TreeValue>(
    measured: &Measured,
    default: &Measured,
    n: usize,
    bytes: u32,
    tile: u32,
) -> Vec<Row> {
    let types = format!("{}/{}", K::SUFFIX, V::SUFFIX);
    let pairs = if bytes == 128 { 6 } else { 14 };
    ops(measured)
        .into_iter()
        .zip(ops(default))
        .map(|((op, timing, unit), (_, base, _))| {
            Row::new(
                "btree",
                &format!("{op}, {types}, {bytes}-byte nodes, {tile} lanes"),
                n as u64,
                timing,
                n as f64,
                unit,
            )
            .with_structure(format!("GpuBTreeMap ({bytes}-byte nodes, {tile} lanes)"))
            .with_operation(op)
            .with_types(K::SUFFIX, V::SUFFIX)
            .with_baseline(Some(Baseline {
                label: "GpuBTreeMap, 256-byte nodes (the default), 8 lanes, this run".into(),
                rate: base.giga_rate(n as f64),
            }))
            .with_note(format!(
                "node layout: {pairs} pairs read by {tile} lanes against 14 pairs read by 8"
            ))
        })
        .collect()
}

impl<K: DeviceKey, V: DeviceValue> Subject<K, V> for LinearProbeMap<K, V> {
    const NAME: &'static str = "LinearProbeMap";
    const EXPERIMENT: &'static str = "linear";
    fn build(bench: &Bench, n: usize, load: f64) -> Result<Self> {
        let config = LinearConfig {
            capacity: (n as f64 / load).ceil() as u64,
            max_load_factor: 0.97,
            ..LinearConfig::default()
        };
        LinearProbeMap::with_config(&bench.gpu, config).map_err(core_error)
    }
    fn clear(&mut self) -> Result<()> {
        LinearProbeMap::clear(self).map_err(core_error)
    }
    fn insert(&mut self, keys: &CudaSlice<K>, values: &CudaSlice<V>) -> Result<()> {
        self.insert_many_async(keys, values).map_err(core_error)
    }
    fn find(
        &mut self,
        keys: &CudaSlice<K>,
        out: &mut CudaSlice<V>,
        _found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        self.get_many_into_async(keys, out).map_err(core_error)
    }
    fn get(&mut self, keys: &[K]) -> Result<Vec<Option<V>>> {
        self.get_many(keys).map_err(core_error)
    }
    fn validate(&mut self) -> Result<()> {
        self.check().map_err(core_error)
    }
}

/// Insert, find of present keys and find of absent keys of one subject.
struct Measured {
    insert: Timing,
    hit: Timing,
    miss: Timing,
}

/// The rows' operations of a measurement.
fn ops(m: &Measured) -> [(&'static str, Timing, Unit); 3] {
    [
        ("insert", m.insert, Unit::GigaKeysPerSecond),
        ("find (hit)", m.hit, Unit::GigaQueriesPerSecond),
        ("find (miss)", m.miss, Unit::GigaQueriesPerSecond),
    ]
}

/// Keys checked per find measurement (a sample: host lookups are slow).
const SAMPLE: usize = 1 << 16;

/// Measures `S` at `n` keys and `load`; fails when a sampled find is wrong.
fn measure<K: DeviceKey, V: DeviceValue, S: Subject<K, V>>(
    bench: &mut Bench,
    n: usize,
    load: f64,
) -> Result<Measured> {
    let subject = S::build(bench, n, load)?;
    measure_built(bench, n, subject)
}

/// Measures `subject`, built for `n` keys (see [`measure`]).
fn measure_built<K: DeviceKey, V: DeviceValue, S: Subject<K, V>>(
    bench: &mut Bench,
    n: usize,
    mut subject: S,
) -> Result<Measured> {
    let mut inputs = Inputs::<K, V>::new(&bench.gpu, n)?;
    let mut misses = Inputs::<K, V>::new(&bench.gpu, n)?;
    let mut seed = 0;
    let insert = bench.timer.measure(|rep| {
        subject.clear()?;
        seed = rep.seed();
        inputs.generate(0, seed)?;
        rep.time(|| subject.insert(&inputs.keys, &inputs.values))
    })?;
    subject.validate()?;
    misses.generate(n as u64, seed)?;
    let (hit, miss) = time_finds(bench, &mut subject, &inputs, &misses)?;
    Ok(Measured { insert, hit, miss })
}

/// Times the finds of `inputs`' keys (present) and of `misses`' keys (absent) in
/// `subject`, then validates it and checks the finds on a sample ([`check_sample`]).
fn time_finds<K: DeviceKey, V: DeviceValue, S: Subject<K, V>>(
    bench: &mut Bench,
    subject: &mut S,
    inputs: &Inputs<K, V>,
    misses: &Inputs<K, V>,
) -> Result<(Timing, Timing)> {
    let n = inputs.keys.len();
    let stream = bench.gpu.stream().clone();
    // SAFETY: every find writes all of `out` (a value or its absent marker).
    let mut out = unsafe { stream.alloc::<V>(n) }?;
    let mut found = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
    let hit = bench
        .timer
        .measure(|rep| rep.time(|| subject.find(&inputs.keys, &mut out, &mut found)))?;
    let miss = bench
        .timer
        .measure(|rep| rep.time(|| subject.find(&misses.keys, &mut out, &mut found)))?;
    subject.validate()?;
    check_sample(bench, subject, inputs, misses)?;
    Ok((hit, miss))
}

/// Checks `subject`'s finds on a sample: the first [`SAMPLE`] keys of `inputs` (present,
/// with their values) and of `misses` (absent).
fn check_sample<K: DeviceKey, V: DeviceValue, S: Subject<K, V>>(
    bench: &Bench,
    subject: &mut S,
    inputs: &Inputs<K, V>,
    misses: &Inputs<K, V>,
) -> Result<()> {
    let stream = bench.gpu.stream().clone();
    let m = SAMPLE.min(inputs.keys.len());
    let keys = stream.clone_dtoh(&inputs.keys.slice(..m))?;
    let want = stream.clone_dtoh(&inputs.values.slice(..m))?;
    let got = subject.get(&keys)?;
    if got
        .iter()
        .zip(&want)
        .any(|(g, w)| g.map(|v| v.to_u64()) != Some(w.to_u64()))
    {
        return Err(Error::InvalidArgument(format!(
            "{}: a present key was not found with its value",
            S::NAME
        )));
    }
    let absent = stream.clone_dtoh(&misses.keys.slice(..m))?;
    if subject.get(&absent)?.iter().any(Option::is_some) {
        return Err(Error::InvalidArgument(format!(
            "{}: an absent key was found",
            S::NAME
        )));
    }
    Ok(())
}

/// Rows a case adds after its structure's: from the structure measured at the asked types
/// (`n` keys at the case's load).
type Extra = fn(&mut Bench, usize, f64, &Measured) -> Result<Vec<Row>>;

/// No rows of its own.
fn no_rows(_: &mut Bench, _: usize, _: f64, _: &Measured) -> Result<Vec<Row>> {
    Ok(Vec::new())
}

/// SlabHashMap's delete at K, V beside SlabHashMap<u32, u32>'s in the same process: every
/// key of a fresh table of `n` removed in one batch, the table refilled (untimed) before
/// each repetition.
fn delete_rows<K: SlabKey, V: SlabValue>(
    bench: &mut Bench,
    n: usize,
    _: f64,
    _: &Measured,
) -> Result<Vec<Row>> {
    let narrow = time_delete::<u32, u32>(bench, n)?;
    let wide = time_delete::<K, V>(bench, n)?;
    Ok(vec![Row::new(
        "slabhash",
        &format!("delete, {}/{}, 64-bit form", K::SUFFIX, V::SUFFIX),
        n as u64,
        wide,
        n as f64,
        Unit::GigaKeysPerSecond,
    )
    .with_structure("SlabHashMap")
    .with_operation("delete")
    .with_types(K::SUFFIX, V::SUFFIX)
    .with_baseline(Some(Baseline {
        label: "SlabHashMap u32/u32, this run".into(),
        rate: narrow.giga_rate(n as f64),
    }))
    .with_note(
        "ratio: the wide words' cost against u32 keys and values; table empty after each",
    )])
}

/// The delete of every key of a fresh SlabHashMap<K, V> of `n` keys (checked empty).
fn time_delete<K: SlabKey, V: SlabValue>(bench: &mut Bench, n: usize) -> Result<Timing> {
    let mut map = SlabHashMap::<K, V>::new(&bench.gpu, n).map_err(core_error)?;
    let mut inputs = Inputs::<K, V>::new(&bench.gpu, n)?;
    let timing = bench.timer.measure(|rep| {
        map.clear().map_err(core_error)?;
        inputs.generate(0, rep.seed())?;
        map.insert_many(&inputs.keys, &inputs.values)
            .map_err(core_error)?;
        rep.time(|| map.remove_many(&inputs.keys).map_err(core_error))
    })?;
    if !map.is_empty().map_err(core_error)? {
        return Err(Error::InvalidArgument(format!(
            "SlabHashMap {}/{} not empty after deleting every key",
            K::SUFFIX,
            V::SUFFIX
        )));
    }
    map.validate().map_err(core_error)?;
    Ok(timing)
}

/// Batches in which [`growth_rows`] inserts its keys.
const GROWTH_BATCHES: usize = 16;

/// HiveMap at K, V after growth: a table made for an eighth of the `n` keys (automatic
/// resizing on, `max_load` the case's load) takes them in [`GROWTH_BATCHES`] batches and
/// grows by splits between them; then the finds of the present and of absent keys, each
/// row against the same find on a table made at its size (`fresh`, measured just before
/// at the same types). The ratio is what placing keys by splits costs lookups.
fn growth_rows<K: HiveKey, V: HiveValue<K>>(
    bench: &mut Bench,
    n: usize,
    load: f64,
    fresh: &Measured,
) -> Result<Vec<Row>> {
    let config = HiveConfig {
        capacity: (n as f64 / load / 8.0).ceil() as usize,
        slots_per_bucket: 16,
        hash: HashPair::BitHash,
        auto_resize: true,
        max_load: load,
        ..Default::default()
    };
    let mut map = HiveMap::<K, V>::with_config(&bench.gpu, config).map_err(core_error)?;
    let first = map.buckets();
    let mut inputs = Inputs::<K, V>::new(&bench.gpu, n)?;
    let mut misses = Inputs::<K, V>::new(&bench.gpu, n)?;
    inputs.generate(0, 1)?;
    misses.generate(n as u64, 1)?;
    let step = n.div_ceil(GROWTH_BATCHES).max(1);
    for start in (0..n).step_by(step) {
        let end = (start + step).min(n);
        map.insert_many(
            &inputs.keys.slice(start..end),
            &inputs.values.slice(start..end),
        )
        .map_err(core_error)?;
    }
    map.validate().map_err(core_error)?;
    let (hit, miss) = time_finds(bench, &mut map, &inputs, &misses)?;
    let types = format!("{}/{}", K::SUFFIX, V::SUFFIX);
    let note = format!(
        "grown from {first} to {} buckets in {GROWTH_BATCHES} batches, load {:.3}",
        map.buckets(),
        map.load_factor()
    );
    let rows = [
        ("find (hit)", hit, fresh.hit),
        ("find (miss)", miss, fresh.miss),
    ];
    Ok(rows
        .into_iter()
        .map(|(op, timing, base)| {
            typed_row::<K, V>(
                ("hive", "HiveMap"),
                op,
                "after growth",
                (n, load),
                timing,
                Unit::GigaQueriesPerSecond,
            )
            .with_baseline(Some(Baseline {
                label: format!("HiveMap {types} made at its size, this run"),
                rate: base.giga_rate(n as f64),
            }))
            .with_note(note.clone())
        })
        .collect())
}

/// A row of `structure` at K, V in `experiment`: operation `op` on `n` keys at `load`,
/// measured as "`op`, K/V, `form`".
fn typed_row<K: DeviceKey, V: DeviceValue>(
    (experiment, structure): (&str, &str),
    op: &str,
    form: &str,
    (n, load): (usize, f64),
    timing: Timing,
    unit: Unit,
) -> Row {
    Row::new(
        experiment,
        &format!("{op}, {}/{}, {form}", K::SUFFIX, V::SUFFIX),
        n as u64,
        timing,
        n as f64,
        unit,
    )
    .with_structure(structure)
    .with_operation(op)
    .with_types(K::SUFFIX, V::SUFFIX)
    .with_load(load)
}

/// One case: [`rows`], then `extra`'s rows.
fn case<K, V, S, N>(bench: &mut Bench, n: usize, load: f64, extra: Extra) -> Result<Vec<Row>>
where
    K: DeviceKey,
    V: DeviceValue,
    S: Subject<K, V>,
    N: Subject<u32, u32>,
{
    let (mut out, wide) = rows::<K, V, S, N>(bench, n, load)?;
    out.extend(extra(bench, n, load, &wide)?);
    Ok(out)
}

/// The rows of one case: structure `S` at K, V against `N`, the same structure at u32
/// (the baselines), and LinearProbeMap at K, V; with the measurement of `S`.
fn rows<K, V, S, N>(bench: &mut Bench, n: usize, load: f64) -> Result<(Vec<Row>, Measured)>
where
    K: DeviceKey,
    V: DeviceValue,
    S: Subject<K, V>,
    N: Subject<u32, u32>,
{
    let narrow = measure::<u32, u32, N>(bench, n, load)?;
    let wide = measure::<K, V, S>(bench, n, load)?;
    let name = S::NAME;
    let linear = measure::<K, V, LinearProbeMap<K, V>>(bench, n, load)?;
    let experiment = S::EXPERIMENT;
    let mut out = Vec::new();
    for ((op, timing, unit), (_, base, _)) in ops(&wide).into_iter().zip(ops(&narrow)) {
        out.push(
            typed_row::<K, V>(
                (experiment, name),
                op,
                "64-bit form",
                (n, load),
                timing,
                unit,
            )
            .with_baseline(Some(Baseline {
                label: format!("{name} u32/u32, this run"),
                rate: base.giga_rate(n as f64),
            }))
            .with_note("ratio: the wide words' cost against u32 keys and values"),
        );
    }
    for (op, timing, unit) in ops(&linear) {
        out.push(
            typed_row::<K, V>(
                (experiment, "LinearProbeMap"),
                op,
                "LinearProbeMap reference",
                (n, load),
                timing,
                unit,
            )
            .with_note(format!(
                "LinearProbeMap at the same types and load, beside {name}"
            )),
        );
    }
    Ok((out, wide))
}
