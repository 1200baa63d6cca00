//! A host copy of a graph (dictionary, base slabs, slab pool), and the checks and
//! statistics read from it: what `validate()` and `stats()` run on.

use std::collections::HashSet;

use crate::ids::IdSet;

use cudarc::driver::{CudaSlice, DevicePtr};
use gpuds_alloc::{PoolSnapshot, SlabAlloc};
use gpuds_core::hash::Universal;
use gpuds_core::Gpu;

use crate::config::GraphConfig;
use crate::error::{Error, Result};
use crate::refs::{VertexEntry, DELETED_BIT};
use crate::value::EdgeValue;

const EMPTY: u32 = u32::MAX;
const TOMBSTONE: u32 = u32::MAX - 1;
const NULL_SLAB: u32 = u32::MAX;
const SLAB_WORDS: usize = 32;

/// What an image is read from (the graph's parts).
pub(crate) struct Parts<'a> {
    pub gpu: &'a Gpu,
    pub vertices: &'a CudaSlice<VertexEntry>,
    pub num_ids: u32,
    pub chunks: &'a [CudaSlice<u32>],
    pub alloc: &'a SlabAlloc,
    pub hash: Universal,
    pub config: &'a GraphConfig,
    pub deleted: &'a IdSet,
}

/// Memory, shape and load of a graph, from [`DynamicGraph::stats`](crate::DynamicGraph::stats).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GraphStats {
    /// Vertex ids in the dictionary.
    pub vertex_ids: u32,
    /// Deleted vertices among them.
    pub deleted_vertices: u64,
    /// Live entries (each undirected edge twice).
    pub entries: u64,
    /// Tombstones (deleted entries not yet flushed, and slots given back by an insertion
    /// that found its edge placed below it by another warp of the same batch).
    pub tombstones: u64,
    /// Base slabs of live and deleted vertices.
    pub base_slabs: u64,
    /// Collision slabs (from the pool).
    pub collision_slabs: u64,
    /// Bytes of the dictionary (allocated entries).
    pub dictionary_bytes: u64,
    /// Bytes of all base slab chunks.
    pub base_slab_bytes: u64,
    /// Bytes of the pool's units in use.
    pub pool_bytes_in_use: u64,
    /// The longest bucket list, in slabs.
    pub max_chain: u64,
    /// Mean slabs per bucket.
    pub mean_chain: f64,
    /// The largest out-degree.
    pub max_degree: u32,
    /// Per-vertex load factor (live entries over the slots of its slabs), over the
    /// vertices with at least one entry: the 10th, 50th, 90th and 99th percentiles and
    /// the largest.
    pub load_factor_percentiles: [f64; 5],
}

/// One vertex's table: each bucket's slabs, head first.
struct Table {
    buckets: Vec<Vec<[u32; SLAB_WORDS]>>,
}

pub(crate) struct Image {
    entries: Vec<VertexEntry>,
    tables: Vec<Table>,
    pool: PoolSnapshot,
    /// Collision slabs reached, each once (a second reach is an error recorded here).
    problems: Vec<String>,
    collision_slabs: u64,
    base_slab_bytes: u64,
    dictionary_bytes: u64,
    hash: Universal,
    num_ids: u32,
    directed: bool,
    deleted: IdSet,
}

/// The slot layout of an edge value type (as gpuds/slabhash/layout.cuh).
struct Slots {
    slots: usize,
    wide: bool,
}

impl Slots {
    fn of<W: EdgeValue>() -> Self {
        Self {
            slots: W::SLOTS as usize,
            wide: std::mem::size_of::<W::Device>() == 8 && !W::SET,
        }
    }
    fn key(&self, slab: &[u32; SLAB_WORDS], j: usize, set: bool) -> u32 {
        if set || self.wide {
            slab[j]
        } else {
            slab[2 * j]
        }
    }
    fn busy(&self, slab: &[u32; SLAB_WORDS], j: usize) -> bool {
        self.wide && (slab[30] >> j) & 1 == 1
    }
}

impl Image {
    pub(crate) fn read(parts: &Parts<'_>) -> Result<Self> {
        let stream = parts.gpu.stream();
        let n = parts.num_ids as usize;
        let entries = if n == 0 {
            Vec::new()
        } else {
            stream.clone_dtoh(&parts.vertices.slice(..n))?
        };
        let mut chunks = Vec::with_capacity(parts.chunks.len());
        let mut base_slab_bytes = 0u64;
        for c in parts.chunks {
            let base = c.device_ptr(stream).0;
            base_slab_bytes += c.len() as u64 * 4;
            chunks.push((base, stream.clone_dtoh(c)?));
        }
        let pool = parts.alloc.snapshot()?;
        let step_cap = parts.config.step_cap as usize;
        let mut problems = Vec::new();
        let mut seen_units = HashSet::new();
        let mut tables = Vec::with_capacity(n);
        for (u, e) in entries.iter().enumerate() {
            let nb = (e.buckets & !DELETED_BIT) as usize;
            let mut buckets = Vec::with_capacity(nb);
            let Some((chunk_base, words)) = chunks.iter().find(|(b, w)| {
                e.base >= *b && e.base + (nb * SLAB_WORDS * 4) as u64 <= *b + w.len() as u64 * 4
            }) else {
                problems.push(format!(
                    "vertex {u}: its {nb} base slabs at {:#x} are not inside a chunk",
                    e.base
                ));
                tables.push(Table { buckets });
                continue;
            };
            if nb == 0 {
                problems.push(format!("vertex {u} has no bucket"));
            }
            let first = ((e.base - chunk_base) / 4) as usize;
            for b in 0..nb {
                let at = first + b * SLAB_WORDS;
                let mut slab = [0u32; SLAB_WORDS];
                slab.copy_from_slice(&words[at..at + SLAB_WORDS]);
                let mut list = vec![slab];
                let mut next = slab[31];
                while next != NULL_SLAB {
                    if list.len() >= step_cap {
                        problems.push(format!(
                            "vertex {u} bucket {b}: more slabs than the step cap"
                        ));
                        break;
                    }
                    if !pool.is_allocated(next) {
                        problems.push(format!(
                            "vertex {u} bucket {b}: slab {next:#x} is not allocated in the pool"
                        ));
                        break;
                    }
                    if !seen_units.insert(next) {
                        problems.push(format!(
                            "vertex {u} bucket {b}: slab {next:#x} is reachable twice"
                        ));
                        break;
                    }
                    let Some(unit) = pool.unit(next) else {
                        problems.push(format!(
                            "vertex {u} bucket {b}: slab {next:#x} is outside the pool"
                        ));
                        break;
                    };
                    let mut s = [0u32; SLAB_WORDS];
                    s.copy_from_slice(&unit[..SLAB_WORDS]);
                    next = s[31];
                    list.push(s);
                }
                buckets.push(list);
            }
            tables.push(Table { buckets });
        }
        Ok(Self {
            entries,
            tables,
            collision_slabs: seen_units.len() as u64,
            pool,
            problems,
            base_slab_bytes,
            dictionary_bytes: (parts.vertices.len() * std::mem::size_of::<VertexEntry>()) as u64,
            hash: parts.hash,
            num_ids: parts.num_ids,
            directed: parts.config.directed,
            deleted: parts.deleted.clone(),
        })
    }

    /// Checks every invariant (see `DynamicGraph::validate`), given the counters' sums.
    pub(crate) fn check<W: EdgeValue>(
        &self,
        live_counter: u64,
        claimed_counter: u64,
        loops_counter: u64,
    ) -> Result<()> {
        if let Some(p) = self.problems.first() {
            return Err(Error::Invalid(p.clone()));
        }
        let bad = |s: String| Err(Error::Invalid(s));
        let layout = Slots::of::<W>();
        let (mut live_total, mut claimed_total, mut loops_total) = (0u64, 0u64, 0u64);
        let mut edges: Vec<u64> = Vec::new();
        for (u, (e, t)) in self.entries.iter().zip(&self.tables).enumerate() {
            let u = u as u32;
            let is_deleted = e.buckets & DELETED_BIT != 0;
            if is_deleted != self.deleted.contains(u) {
                return bad(format!(
                    "vertex {u}: deleted bit {is_deleted} but the host says otherwise"
                ));
            }
            let nb = t.buckets.len() as u32;
            let mut mine = HashSet::new();
            for (b, list) in t.buckets.iter().enumerate() {
                if is_deleted && list.len() > 1 {
                    return bad(format!(
                        "deleted vertex {u} keeps collision slabs in bucket {b}"
                    ));
                }
                let mut empty_seen = false;
                for slab in list {
                    for j in 0..layout.slots {
                        let k = layout.key(slab, j, W::SET);
                        if k == EMPTY {
                            empty_seen = true;
                            continue;
                        }
                        if empty_seen {
                            return bad(format!(
                                "vertex {u} bucket {b}: a claimed slot after an empty one"
                            ));
                        }
                        claimed_total += 1;
                        if k == TOMBSTONE {
                            continue;
                        }
                        if layout.busy(slab, j) {
                            return bad(format!("vertex {u}: live slot of {k} still busy"));
                        }
                        if is_deleted {
                            return bad(format!("deleted vertex {u} has edge to {k}"));
                        }
                        if k >= self.num_ids {
                            return bad(format!("vertex {u} has edge to {k}, past the dictionary"));
                        }
                        if self.deleted.contains(k) {
                            return bad(format!("vertex {u} has edge to deleted vertex {k}"));
                        }
                        let home = if nb <= 1 { 0 } else { self.hash.bucket(k, nb) };
                        if home as usize != b {
                            return bad(format!(
                                "vertex {u}: {k} is in bucket {b}, its hash names {home}"
                            ));
                        }
                        if !mine.insert(k) {
                            return bad(format!("vertex {u} holds destination {k} twice"));
                        }
                        if k == u {
                            loops_total += 1;
                        }
                        edges.push((u64::from(u) << 32) | u64::from(k));
                    }
                }
            }
            live_total += mine.len() as u64;
            if mine.len() as u64 != u64::from(e.count) {
                return bad(format!(
                    "vertex {u}: count {} but {} live entries",
                    e.count,
                    mine.len()
                ));
            }
        }
        if live_total != live_counter
            || claimed_total != claimed_counter
            || loops_total != loops_counter
        {
            return bad(format!(
                "counters say {live_counter} live / {claimed_counter} claimed / {loops_counter} loops, \
                 the tables hold {live_total} / {claimed_total} / {loops_total}"
            ));
        }
        let in_use = self.pool.units_in_use();
        if in_use != self.collision_slabs {
            return bad(format!(
                "the pool has {in_use} slabs in use but the lists reach {}",
                self.collision_slabs
            ));
        }
        if !self.directed {
            edges.sort_unstable();
            for &e in &edges {
                let back = e.rotate_right(32);
                if edges.binary_search(&back).is_err() {
                    return bad(format!("edge {} -> {} has no reverse", e >> 32, e as u32));
                }
            }
        }
        Ok(())
    }

    pub(crate) fn stats<W: EdgeValue>(&self, allocated_entries: usize) -> GraphStats {
        let layout = Slots::of::<W>();
        let mut s = GraphStats {
            vertex_ids: self.num_ids,
            deleted_vertices: self.deleted.len() as u64,
            collision_slabs: self.collision_slabs,
            dictionary_bytes: (allocated_entries * std::mem::size_of::<VertexEntry>()) as u64,
            base_slab_bytes: self.base_slab_bytes,
            pool_bytes_in_use: self.pool.units_in_use() * u64::from(self.pool.unit_bytes()),
            ..Default::default()
        };
        let _ = self.dictionary_bytes;
        let mut chains = 0u64;
        let mut lfs = Vec::new();
        for (e, t) in self.entries.iter().zip(&self.tables) {
            s.max_degree = s.max_degree.max(e.count);
            let mut slabs = 0u64;
            let mut live = 0u64;
            for list in &t.buckets {
                s.base_slabs += 1;
                chains += 1;
                slabs += list.len() as u64;
                s.max_chain = s.max_chain.max(list.len() as u64);
                for slab in list {
                    for j in 0..layout.slots {
                        match layout.key(slab, j, W::SET) {
                            EMPTY => {}
                            TOMBSTONE => s.tombstones += 1,
                            _ => live += 1,
                        }
                    }
                }
            }
            s.entries += live;
            if live > 0 {
                lfs.push(live as f64 / (slabs * layout.slots as u64) as f64);
            }
        }
        s.mean_chain = if chains == 0 {
            0.0
        } else {
            (s.base_slabs + s.collision_slabs) as f64 / chains as f64
        };
        lfs.sort_by(f64::total_cmp);
        if !lfs.is_empty() {
            let at = |q: f64| lfs[((lfs.len() - 1) as f64 * q).round() as usize];
            s.load_factor_percentiles = [at(0.10), at(0.50), at(0.90), at(0.99), at(1.0)];
        }
        s
    }
}
