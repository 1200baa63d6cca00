//! DynamicGraph on the GPU against a `HashMap<u32, HashMap<u32, V>>` oracle: random
//! sequences of edge and vertex insertions and deletions (directed and undirected, set
//! and map), `validate()` after every batch, bulk build, export, triangle counts, bad
//! input, pool exhaustion, high-degree vertices, the device ref and its iterator.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use gpuds_core::cudarc::driver::PushKernelArg;
use gpuds_core::{assert_layout, launch, Gpu, Program};
use gpuds_graph::{
    BulkPlacement, DynamicGraph, EdgeValue, Error, GraphConfig, GraphRef, VertexEntry,
};
use gpuds_slabhash::TableRef;
use gpuds_testkit::gpu;
use rand::rngs::ChaCha8Rng as StdRng;
use rand::{RngExt, SeedableRng};

/// The oracle: out-edges per vertex, and the deleted vertices.
#[derive(Default, Clone)]
struct Oracle<W> {
    directed: bool,
    keep_loops: bool,
    adj: BTreeMap<u32, HashMap<u32, W>>,
    deleted: BTreeSet<u32>,
    ids: u32,
    /// The values the last batch gave each edge it named: duplicates of one edge inside
    /// a batch keep one of their values, which one is unspecified.
    candidates: HashMap<(u32, u32), Vec<W>>,
}

impl<W: EdgeValue> Oracle<W> {
    fn new(directed: bool, ids: u32) -> Self {
        Self {
            directed,
            ids,
            ..Default::default()
        }
    }
    fn admissible(&self, u: u32, v: u32) -> bool {
        (u != v || self.keep_loops) && !self.deleted.contains(&u) && !self.deleted.contains(&v)
    }
    /// Returns the edges added.
    fn insert(&mut self, src: &[u32], dst: &[u32], values: &[W]) -> u64 {
        let mut added = 0;
        for i in 0..src.len() {
            let (u, v) = (src[i], dst[i]);
            self.ids = self.ids.max(u + 1).max(v + 1);
            if !self.admissible(u, v) {
                continue;
            }
            let w = values.get(i).copied().unwrap_or_default();
            if self.adj.entry(u).or_default().insert(v, w).is_none() {
                added += 1;
            }
            self.candidates.entry((u, v)).or_default().push(w);
            if !self.directed {
                self.adj.entry(v).or_default().insert(u, w);
                self.candidates.entry((v, u)).or_default().push(w);
            }
        }
        added
    }
    fn remove(&mut self, src: &[u32], dst: &[u32]) -> u64 {
        let mut removed = 0;
        for (&u, &v) in src.iter().zip(dst) {
            if !self.admissible(u, v) {
                continue;
            }
            if self.adj.entry(u).or_default().remove(&v).is_some() {
                removed += 1;
            }
            if !self.directed {
                self.adj.entry(v).or_default().remove(&u);
            }
        }
        removed
    }
    fn remove_vertices(&mut self, ids: &[u32]) {
        for &u in ids {
            if u >= self.ids || self.deleted.contains(&u) {
                continue;
            }
            self.deleted.insert(u);
            self.adj.remove(&u);
        }
        for m in self.adj.values_mut() {
            m.retain(|v, _| !self.deleted.contains(v));
        }
    }
    fn entries(&self) -> u64 {
        self.adj.values().map(|m| m.len() as u64).sum()
    }
    fn edges(&self) -> u64 {
        if self.directed {
            self.entries()
        } else {
            let loops: u64 = self.adj.iter().filter(|(u, m)| m.contains_key(u)).count() as u64;
            (self.entries() + loops) / 2
        }
    }
    fn sorted(&self) -> Vec<(u32, u32, W)> {
        let mut out: Vec<(u32, u32, W)> = self
            .adj
            .iter()
            .flat_map(|(&u, m)| m.iter().map(move |(&v, &w)| (u, v, w)))
            .collect();
        out.sort_by_key(|e| (e.0, e.1));
        out
    }
}

/// The graph's contents, sorted, as the oracle's.
fn contents<W: EdgeValue>(g: &DynamicGraph<W>) -> Vec<(u32, u32, W)> {
    let coo = g.to_coo().unwrap();
    let mut out: Vec<(u32, u32, W)> = (0..coo.src.len())
        .map(|i| {
            (
                coo.src[i],
                coo.dst[i],
                coo.values.get(i).copied().unwrap_or_default(),
            )
        })
        .collect();
    out.sort_by_key(|e| (e.0, e.1));
    out
}

/// Asserts the graph equals the oracle (edges, values, counts, degrees) and validates;
/// where the last batch named an edge more than once, takes the graph's value (one of
/// the batch's) into the oracle.
fn agree<W: EdgeValue>(g: &DynamicGraph<W>, o: &mut Oracle<W>, what: &str) {
    g.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
    let got = contents(g);
    let want = o.sorted();
    let a: Vec<(u32, u32)> = got.iter().map(|e| (e.0, e.1)).collect();
    let b: Vec<(u32, u32)> = want.iter().map(|e| (e.0, e.1)).collect();
    assert_eq!(a, b, "{what}: edges");
    for (&(u, v, w), &(_, _, x)) in got.iter().zip(&want) {
        if w == x {
            continue;
        }
        let allowed = o.candidates.get(&(u, v)).is_some_and(|c| c.contains(&w));
        assert!(allowed, "{what}: edge {u} -> {v} has {w:?}, expected {x:?}");
        o.adj.entry(u).or_default().insert(v, w);
    }
    o.candidates.clear();
    assert_eq!(g.num_edges().unwrap(), o.edges(), "{what}: num_edges");
    assert_eq!(g.num_entries().unwrap(), o.entries(), "{what}: entries");
    let ids: Vec<u32> = (0..g.vertex_ids()).collect();
    let degrees = g.degree_many(&ids).unwrap();
    for (&u, &d) in ids.iter().zip(&degrees) {
        let want = o.adj.get(&u).map_or(0, |m| m.len()) as u32;
        assert_eq!(d, want, "{what}: degree of {u}");
    }
    assert_eq!(
        g.num_vertices(),
        g.vertex_ids() as u64 - o.deleted.len() as u64,
        "{what}: vertices"
    );
}

fn random_values<W: EdgeValue>(rng: &mut StdRng, n: usize) -> Vec<W> {
    (0..n)
        .map(|_| {
            W::from_device(<W::Device as gpuds_core::DeviceType>::from_u64(
                rng.random_range(0..1000u64),
            ))
        })
        .collect()
}

/// A random sequence of batches against the oracle, validated after each.
fn random_sequence<W: EdgeValue>(gpu: &Gpu, directed: bool, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let config = GraphConfig {
        directed,
        ..Default::default()
    };
    let start = 64;
    let mut g = DynamicGraph::<W>::with_config(gpu, start, config).unwrap();
    let mut o = Oracle::<W>::new(directed, start);
    for step in 0..24 {
        let what = format!(
            "{} {} seed {seed} step {step}",
            W::SUFFIX,
            if directed { "directed" } else { "undirected" }
        );
        let range = o.ids + 8; // some ids past the dictionary: it grows
        match rng.random_range(0..10u32) {
            0..=4 => {
                let n = rng.random_range(1..600usize);
                // A small id range: many duplicates inside and across batches.
                let src: Vec<u32> = (0..n).map(|_| rng.random_range(0..range)).collect();
                let dst: Vec<u32> = (0..n).map(|_| rng.random_range(0..range)).collect();
                let values = random_values::<W>(&mut rng, n);
                let t = g.insert_edges(&src, &dst, Some(&values)).unwrap();
                let added = o.insert(&src, &dst, &values);
                if directed {
                    assert_eq!(t.edges, added, "{what}: tally");
                }
            }
            5..=6 => {
                let n = rng.random_range(1..400usize);
                let src: Vec<u32> = (0..n).map(|_| rng.random_range(0..o.ids)).collect();
                let dst: Vec<u32> = (0..n).map(|_| rng.random_range(0..o.ids)).collect();
                let t = g.remove_edges(&src, &dst).unwrap();
                let removed = o.remove(&src, &dst);
                if directed {
                    assert_eq!(t.edges, removed, "{what}: tally");
                }
            }
            7 => {
                let n = rng.random_range(1..6usize);
                let ids: Vec<u32> = (0..n).map(|_| rng.random_range(0..o.ids)).collect();
                g.remove_vertices(&ids).unwrap();
                o.remove_vertices(&ids);
            }
            8 => {
                let k = rng.random_range(1..4u32);
                let ids = g.insert_vertices(k).unwrap();
                for &u in &ids {
                    o.deleted.remove(&u);
                    o.ids = o.ids.max(u + 1);
                }
                assert_eq!(ids.len() as u32, k);
            }
            _ => {
                g.flush().unwrap();
            }
        }
        agree(&g, &mut o, &what);
        // Queries against the oracle.
        let n = 200;
        let src: Vec<u32> = (0..n).map(|_| rng.random_range(0..o.ids + 2)).collect();
        let dst: Vec<u32> = (0..n).map(|_| rng.random_range(0..o.ids + 2)).collect();
        let exists = g.edge_exists_many(&src, &dst).unwrap();
        let values = g.edge_values_many(&src, &dst).unwrap();
        for i in 0..n {
            let want = o.adj.get(&src[i]).and_then(|m| m.get(&dst[i]));
            assert_eq!(
                exists[i],
                want.is_some(),
                "{what}: exists {} {}",
                src[i],
                dst[i]
            );
            assert_eq!(
                values[i],
                want.copied(),
                "{what}: value {} {}",
                src[i],
                dst[i]
            );
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 4, ..Default::default() })]
    #[test]
    fn proptest_sequences(seed in proptest::prelude::any::<u64>(), directed in proptest::prelude::any::<bool>()) {
        if let Some(gpu) = gpu() {
            random_sequence::<()>(&gpu, directed, seed);
            random_sequence::<u32>(&gpu, directed, seed ^ 1);
        }
    }
}

#[test]
fn random_sequences_against_the_oracle() {
    let Some(gpu) = gpu() else { return };
    for seed in 0..3 {
        for directed in [false, true] {
            random_sequence::<()>(&gpu, directed, seed);
            random_sequence::<u32>(&gpu, directed, seed + 10);
            random_sequence::<u64>(&gpu, directed, seed + 20);
        }
    }
}

#[test]
fn refs_match_their_cpp_twins() {
    let Some(gpu) = gpu() else { return };
    let prelude = || {
        Program::new("graph_layout", "#include <gpuds/graph/graph_ref.cuh>")
            .headers(gpuds_graph::cuda_headers())
    };
    for cpp in [
        "gpuds::graph::graph_ref<gpuds::slabhash::no_value>",
        "gpuds::graph::graph_ref<unsigned>",
        "gpuds::graph::graph_ref<unsigned long long>",
    ] {
        assert_layout!(
            &gpu,
            prelude(),
            GraphRef<u32>,
            cpp,
            lists,
            vertices,
            num_vertices,
            flags
        );
    }
    assert_layout!(
        &gpu,
        prelude(),
        VertexEntry,
        "gpuds::graph::vertex_entry",
        base,
        buckets,
        count
    );
    assert_eq!(
        std::mem::size_of::<GraphRef<()>>(),
        std::mem::size_of::<TableRef>() + 16
    );
}

/// A CPU triangle count of an undirected simple graph (u < v < w once).
fn cpu_triangles(edges: &[(u32, u32)]) -> u64 {
    let mut adj: HashMap<u32, BTreeSet<u32>> = HashMap::new();
    for &(u, v) in edges {
        if u != v {
            adj.entry(u).or_default().insert(v);
            adj.entry(v).or_default().insert(u);
        }
    }
    let mut t = 0;
    for (&u, nu) in &adj {
        for &v in nu.range(u + 1..) {
            let nv = &adj[&v];
            t += nu.range(v + 1..).filter(|w| nv.contains(w)).count() as u64;
        }
    }
    t
}

#[test]
fn bulk_build_and_triangles_match_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let mut rng = StdRng::seed_from_u64(7);
    for (n, m) in [(50u32, 600usize), (2000, 40_000), (1 << 16, 1 << 20)] {
        let src: Vec<u32> = (0..m).map(|_| rng.random_range(0..n)).collect();
        let dst: Vec<u32> = (0..m).map(|_| rng.random_range(0..n)).collect();
        let g = DynamicGraph::<()>::from_edges(&gpu, GraphConfig::default(), n, &src, &dst, None)
            .unwrap();
        g.validate().unwrap();
        let mut o = Oracle::<()>::new(false, n);
        o.insert(&src, &dst, &[]);
        assert_eq!(g.num_edges().unwrap(), o.edges());
        let edges: Vec<(u32, u32)> = src.iter().copied().zip(dst.iter().copied()).collect();
        let want = cpu_triangles(&edges);
        assert_eq!(g.triangle_count().unwrap(), want, "n {n} m {m}");
        // The sorted-CSR baseline agrees.
        let csr = gpuds_graph::csr::DeviceCsr::from_host_coo(&gpu, n, &src, &dst, true).unwrap();
        assert_eq!(csr.triangle_count(&gpu).unwrap(), want);
        // Tables sized from degrees: the load factor stays near the configured one.
        let stats = g.stats().unwrap();
        assert!(stats.max_chain <= 8, "chains {stats:?}");
        // Export to sorted CSR equals the oracle's adjacency.
        let csr = g.to_csr(true).unwrap();
        for u in 0..n {
            let (a, b) = (
                csr.row_offsets[u as usize] as usize,
                csr.row_offsets[u as usize + 1] as usize,
            );
            let mut want: Vec<u32> = o
                .adj
                .get(&u)
                .map(|m| m.keys().copied().collect())
                .unwrap_or_default();
            want.sort_unstable();
            assert_eq!(&csr.cols[a..b], &want[..], "row {u}");
        }
    }
}

/// Bulk builds against the oracle: batches full of duplicates (the same edge in both
/// directions, 50 edges 40 times each, one edge tens of thousands of times), self loops
/// kept and dropped, directed and undirected, sets and both map value types; and each
/// batch rebuilt into one graph reused across them (a rebuild with a reserved id first,
/// refused with the graph unchanged).
fn bulk_build_case<W: EdgeValue>(
    gpu: &Gpu,
    directed: bool,
    keep_loops: bool,
    seed: u64,
    load_factor: f32,
) {
    let mut rng = StdRng::seed_from_u64(seed);
    let n = 3000u32;
    let config = GraphConfig {
        directed,
        keep_self_loops: keep_loops,
        load_factor,
        ..Default::default()
    };
    let mut batches: Vec<(Vec<u32>, Vec<u32>)> = Vec::new();
    // Random edges, each listed once more reversed and a tenth of them again, some loops.
    let mut src: Vec<u32> = (0..20_000).map(|_| rng.random_range(0..n)).collect();
    let mut dst: Vec<u32> = (0..20_000)
        .map(|i| {
            if i % 97 == 0 {
                src[i]
            } else {
                rng.random_range(0..n)
            }
        })
        .collect();
    let (s0, d0) = (src.clone(), dst.clone());
    src.extend(&d0);
    dst.extend(&s0);
    src.extend(&s0[..2000]);
    dst.extend(&d0[..2000]);
    batches.push((src, dst));
    // 50 edges 40 times each, from one vertex.
    let hub: Vec<(u32, u32)> = (0..50).map(|i| (7, 100 + i)).collect();
    let (a, b): (Vec<u32>, Vec<u32>) = (0..40).flat_map(|_| hub.iter().copied()).unzip();
    batches.push((a, b));
    // One edge 30,000 times.
    batches.push((vec![11; 30_000], vec![12; 30_000]));
    // Sorted by source, as files list edges: every vertex with 7 random destinations and
    // its first two listed again next to them (dense enough for the bulk build to place
    // entries directly: the lanes of a warp share base slabs, and duplicates share a warp).
    let (a, b): (Vec<u32>, Vec<u32>) = (0..n)
        .flat_map(|u| {
            let d: Vec<u32> = (0..7).map(|_| rng.random_range(0..n)).collect();
            let listed = [d[0], d[0], d[1], d[1], d[2], d[3], d[4], d[5], d[6]];
            listed.into_iter().map(move |v| (u, v))
        })
        .unzip();
    batches.push((a, b));
    let mut reused: Option<DynamicGraph<W>> = None;
    for (k, (src, dst)) in batches.iter().enumerate() {
        let values = random_values::<W>(&mut rng, src.len());
        let g = DynamicGraph::<W>::from_edges(
            gpu,
            config.clone(),
            n,
            src,
            dst,
            (!W::SET).then_some(&values[..]),
        )
        .unwrap();
        let mut o = Oracle::<W>::new(directed, n);
        o.keep_loops = keep_loops;
        o.insert(src, dst, if W::SET { &[] } else { &values });
        let what = format!(
            "{} bulk build {k}, directed {directed}, loops {keep_loops}",
            W::SUFFIX
        );
        let mut again = o.clone();
        agree(&g, &mut o, &what);
        // The same batch with direct placement forced on and off: the same graph.
        for placement in [BulkPlacement::Always, BulkPlacement::Never] {
            let forced = DynamicGraph::<W>::from_edges(
                gpu,
                GraphConfig {
                    bulk_placement: placement,
                    ..config.clone()
                },
                n,
                src,
                dst,
                (!W::SET).then_some(&values[..]),
            )
            .unwrap();
            agree(
                &forced,
                &mut again.clone(),
                &format!("{what}, {placement:?}"),
            );
        }
        // The same batch rebuilt into one graph reused across the batches (after a
        // rebuild with a reserved id, refused with the graph unchanged).
        let stream = gpu.stream();
        let (d_src, d_dst) = (
            stream.clone_htod(src).unwrap(),
            stream.clone_htod(dst).unwrap(),
        );
        let device_values: Vec<W::Device> = values.iter().map(|w| w.to_device()).collect();
        let d_values = stream.clone_htod(&device_values).unwrap();
        let d_values = (!W::SET).then_some(&d_values);
        match reused.as_mut() {
            None => reused = Some(g),
            Some(r) => {
                let before = contents(r);
                let bad = stream.clone_htod(&[u32::MAX; 1]).unwrap();
                assert!(r.rebuild_from_device_edges(n, &bad, &bad, None).is_err());
                assert_eq!(contents(r), before);
                r.rebuild_from_device_edges(n, &d_src, &d_dst, d_values)
                    .unwrap();
                agree(r, &mut again, &format!("{what}, rebuilt"));
            }
        }
    }
}

#[test]
fn bulk_builds_and_rebuilds_with_duplicates_and_loops_match_the_oracle() {
    let Some(gpu) = gpu() else { return };
    for directed in [false, true] {
        for keep_loops in [false, true] {
            bulk_build_case::<()>(&gpu, directed, keep_loops, 1, 0.7);
            bulk_build_case::<u32>(&gpu, directed, keep_loops, 2, 0.7);
            bulk_build_case::<u64>(&gpu, directed, keep_loops, 3, 0.7);
        }
        // At load factor 4 a one-bucket table takes up to 120 (sets) or 60 (u32 maps)
        // arcs: the direct placement's base slabs overflow, and their edges spill to the
        // ordinary insertion.
        bulk_build_case::<()>(&gpu, directed, true, 4, 4.0);
        bulk_build_case::<u32>(&gpu, directed, true, 5, 4.0);
    }
}

/// Bulk builds whose ids pass `num_vertices` (the tables' sizes, counted over
/// `0..num_vertices` with the id check, are counted again over the larger range) or stop
/// short of it: `max(num_vertices, largest id + 1)` ids and the oracle's edges and
/// degrees, built from scratch and rebuilt into one graph (a dense batch, so that the
/// builds place entries directly, and a sparse one).
#[test]
fn bulk_builds_past_and_short_of_num_vertices() {
    let Some(gpu) = gpu() else { return };
    let mut rng = StdRng::seed_from_u64(23);
    let mut reused: Option<DynamicGraph<u32>> = None;
    for (ids, m) in [(4000u32, 40_000usize), (50_000, 30_000)] {
        let (src, dst): (Vec<u32>, Vec<u32>) = (0..m)
            .map(|_| (rng.random_range(0..ids), rng.random_range(0..ids)))
            .unzip();
        let values: Vec<u32> = (0..m).map(|_| rng.random_range(0..1000)).collect();
        let top = src.iter().chain(&dst).max().unwrap() + 1;
        for n in [1, top / 2, top - 1, top, top + 1, 2 * top] {
            let mut o = Oracle::<u32>::new(false, n.max(top));
            o.insert(&src, &dst, &values);
            let what = format!("{m} edges below {top} built for {n} ids");
            let g = DynamicGraph::<u32>::from_edges(
                &gpu,
                GraphConfig::default(),
                n,
                &src,
                &dst,
                Some(&values),
            )
            .unwrap();
            assert_eq!(g.vertex_ids(), n.max(top), "{what}");
            agree(&g, &mut o.clone(), &what);
            match reused.as_mut() {
                None => reused = Some(g),
                Some(r) => {
                    r.rebuild_from_edges(n, &src, &dst, Some(&values)).unwrap();
                    assert_eq!(r.vertex_ids(), n.max(top), "{what}, rebuilt");
                    agree(r, &mut o, &format!("{what}, rebuilt"));
                }
            }
        }
    }
}

/// A rebuild forgets everything of the graph before it: its deleted ids, its id range
/// (smaller and larger), its collision slabs (tables at load factor 3 chain two or three
/// slabs, and `validate()` checks that the pool holds exactly the slabs the lists reach),
/// its counts. Refused rebuilds (lengths that differ, too many vertices) change nothing.
#[test]
fn rebuilds_forget_the_graph_before() {
    let Some(gpu) = gpu() else { return };
    for directed in [false, true] {
        let config = GraphConfig {
            directed,
            load_factor: 3.0,
            ..Default::default()
        };
        let mut rng = StdRng::seed_from_u64(11);
        let edges = |rng: &mut StdRng, n: u32, m: usize| -> (Vec<u32>, Vec<u32>) {
            (0..m)
                .map(|_| (rng.random_range(0..n), rng.random_range(0..n)))
                .unzip()
        };
        let (src, dst) = edges(&mut rng, 3000, 60_000);
        let mut g =
            DynamicGraph::<()>::from_edges(&gpu, config.clone(), 3000, &src, &dst, None).unwrap();
        assert!(g.stats().unwrap().max_chain >= 2, "tables chain slabs");
        g.remove_edges(&src[..5000], &dst[..5000]).unwrap();
        g.remove_vertices(&[1, 2, 3, 2999]).unwrap();
        g.validate().unwrap();
        let stream = gpu.stream();
        for (n, m) in [(1000u32, 20_000usize), (5000, 90_000), (3000, 60_000)] {
            // Refused: nothing changes.
            let (edges_before, ids_before) = (g.num_edges().unwrap(), g.vertex_ids());
            let before = contents(&g);
            let short = stream.clone_htod(&[0u32; 2]).unwrap();
            let one = stream.clone_htod(&[1u32; 1]).unwrap();
            assert!(matches!(
                g.rebuild_from_device_edges(n, &short, &one, None),
                Err(Error::LengthMismatch { .. })
            ));
            assert!(g
                .rebuild_from_device_edges(u32::MAX, &one, &one, None)
                .is_err());
            assert_eq!(contents(&g), before);
            assert_eq!(g.num_edges().unwrap(), edges_before);
            assert_eq!(g.vertex_ids(), ids_before);
            g.validate().unwrap();
            // Rebuilt (from host slices for 5000 ids, device slices otherwise): the
            // oracle of this batch alone.
            let (src, dst) = edges(&mut rng, n, m);
            if n == 5000 {
                g.rebuild_from_edges(n, &src, &dst, None).unwrap();
            } else {
                let (d_src, d_dst) = (
                    stream.clone_htod(&src).unwrap(),
                    stream.clone_htod(&dst).unwrap(),
                );
                g.rebuild_from_device_edges(n, &d_src, &d_dst, None)
                    .unwrap();
            }
            let mut o = Oracle::<()>::new(directed, n);
            o.insert(&src, &dst, &[]);
            agree(
                &g,
                &mut o,
                &format!("rebuild to {n} ids, directed {directed}"),
            );
            assert_eq!(g.vertex_ids(), n);
            assert!((0..n).all(|u| !g.is_deleted(u)));
        }
        // No edges: ids with empty tables.
        g.rebuild_from_edges(10, &[], &[], None).unwrap();
        g.validate().unwrap();
        assert_eq!((g.num_edges().unwrap(), g.vertex_ids()), (0, 10));
    }
}

#[test]
fn a_hub_beside_degree_one_vertices() {
    let Some(gpu) = gpu() else { return };
    let hub_degree = 1u32 << 20;
    // Incremental: the hub has one bucket (degree unknown), so its list is long.
    let config = GraphConfig {
        directed: true,
        ..Default::default()
    };
    let mut g = DynamicGraph::<u32>::with_config(&gpu, hub_degree + 1, config).unwrap();
    let src = vec![0u32; hub_degree as usize];
    let dst: Vec<u32> = (1..=hub_degree).collect();
    let values: Vec<u32> = dst.iter().map(|v| v * 3).collect();
    // Degree-one vertices: v -> v + 1 for odd v.
    let small_src: Vec<u32> = (1..hub_degree).step_by(2).collect();
    let small_dst: Vec<u32> = small_src.iter().map(|v| v + 1).collect();
    let t = g.insert_edges(&src, &dst, Some(&values)).unwrap();
    assert_eq!(t.edges, hub_degree as u64);
    g.insert_edges(&small_src, &small_dst, None).unwrap();
    // Again: every edge present, replaced, none added.
    let t = g
        .insert_edges(&src[..1000], &dst[..1000], Some(&values[..1000]))
        .unwrap();
    assert_eq!(t.edges, 0);
    g.validate().unwrap();
    assert_eq!(g.degree_many(&[0, 1, 2]).unwrap(), vec![hub_degree, 1, 0]);
    assert_eq!(
        g.edge_values_many(&[0, 0, 3], &[5, hub_degree, 4]).unwrap(),
        vec![Some(15), Some(hub_degree * 3), Some(0)]
    );
    let adj = g.adjacency_many(&[0, 3]).unwrap();
    assert_eq!(
        adj.offsets,
        vec![0, hub_degree as u64, hub_degree as u64 + 1]
    );
    let mut hub: Vec<u32> = adj.dst[..hub_degree as usize].to_vec();
    hub.sort_unstable();
    assert_eq!(hub, dst);
    // The same graph built in bulk sizes the hub's table from its degree.
    let all_src: Vec<u32> = src.iter().chain(&small_src).copied().collect();
    let all_dst: Vec<u32> = dst.iter().chain(&small_dst).copied().collect();
    let b = DynamicGraph::<u32>::from_edges(
        &gpu,
        GraphConfig {
            directed: true,
            ..Default::default()
        },
        0,
        &all_src,
        &all_dst,
        None,
    )
    .unwrap();
    b.validate().unwrap();
    assert_eq!(b.num_edges().unwrap(), g.num_edges().unwrap());
    assert!(b.stats().unwrap().max_chain < g.stats().unwrap().max_chain);
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let Some(gpu) = gpu() else { return };
    let mut g = DynamicGraph::<u32>::new(&gpu, 10).unwrap();
    g.insert_edges(&[1, 2], &[2, 3], Some(&[4, 5])).unwrap();
    // A reserved id.
    let e = g
        .insert_edges(&[1, 4, u32::MAX], &[5, u32::MAX - 1, 1], None)
        .unwrap_err();
    assert!(
        matches!(e, Error::ReservedVertex { index: 1, id } if id == u32::MAX - 1),
        "{e}"
    );
    assert_eq!(g.num_edges().unwrap(), 2);
    // Lengths.
    assert!(matches!(
        g.insert_edges(&[1], &[2, 3], None),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        g.insert_edges(&[1], &[2], Some(&[1, 2])),
        Err(Error::LengthMismatch { .. })
    ));
    // Growth disabled.
    let mut fixed = DynamicGraph::<()>::with_config(
        &gpu,
        10,
        GraphConfig {
            growable: false,
            ..Default::default()
        },
    )
    .unwrap();
    let e = fixed
        .insert_edges(&[1, 2, 3], &[2, 10, 40], None)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::VertexBeyondCapacity {
                index: 1,
                id: 10,
                num_vertices: 10,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(fixed.num_edges().unwrap(), 0);
    fixed.validate().unwrap();
    // Growth enabled: ids past the dictionary grow it.
    g.insert_edges(&[100], &[7], Some(&[1])).unwrap();
    assert_eq!(g.vertex_ids(), 101);
    g.validate().unwrap();
    // Queries and removals past the dictionary name no edge.
    assert_eq!(
        g.edge_exists_many(&[1, 5000, u32::MAX], &[2, 1, 0])
            .unwrap(),
        vec![true, false, false]
    );
    let t = g.remove_edges(&[5000, 1], &[1, 2]).unwrap();
    assert_eq!(
        t,
        gpuds_graph::EdgeTally {
            edges: 1,
            skipped: 1
        }
    );
    // Self loops are skipped by default, kept on request.
    let t = g.insert_edges(&[3, 3], &[3, 4], None).unwrap();
    assert_eq!(t.skipped, 1);
    let mut loops = DynamicGraph::<()>::with_config(
        &gpu,
        4,
        GraphConfig {
            keep_self_loops: true,
            ..Default::default()
        },
    )
    .unwrap();
    loops.insert_edges(&[1, 1, 2], &[1, 2, 1], None).unwrap();
    assert_eq!(loops.num_edges().unwrap(), 2);
    assert_eq!(loops.degree_many(&[1, 2]).unwrap(), vec![2, 1]);
    loops.validate().unwrap();
    loops.remove_vertices(&[1]).unwrap();
    assert_eq!(loops.num_edges().unwrap(), 0);
    loops.validate().unwrap();
    // Edges at a deleted vertex are skipped; its id comes back first.
    g.remove_vertices(&[2]).unwrap();
    let t = g.insert_edges(&[2, 4], &[5, 2], None).unwrap();
    assert_eq!(t.skipped, 2);
    assert_eq!(g.insert_vertices(2).unwrap(), vec![2, 101]);
    g.insert_edges(&[2], &[5], None).unwrap();
    g.validate().unwrap();
}

#[test]
fn pool_exhaustion_is_an_error_with_exact_counts() {
    let Some(gpu) = gpu() else { return };
    let config = GraphConfig {
        directed: true,
        alloc: gpuds_alloc::SlabAllocConfig {
            initial_units: 1 << 10,
            max_units: 1 << 10,
            ..Default::default()
        },
        ..Default::default()
    };
    // One bucket per vertex: 2^16 edges of one vertex need ~4400 slabs.
    let mut g = DynamicGraph::<u32>::with_config(&gpu, 1 << 16, config).unwrap();
    let dst: Vec<u32> = (1..1 << 16).collect();
    let src = vec![0u32; dst.len()];
    let e = g.insert_edges(&src, &dst, None).unwrap_err();
    assert!(matches!(e, Error::PoolExhausted { .. }), "{e}");
    g.validate().unwrap();
    let d = g.degree_many(&[0]).unwrap()[0] as u64;
    assert!(d > 0 && d < dst.len() as u64);
    assert_eq!(g.num_edges().unwrap(), d);
    // Later calls work: other vertices still have room in their base slabs.
    g.insert_edges(&[5, 6], &[6, 7], None).unwrap();
    assert_eq!(g.num_edges().unwrap(), d + 2);
    // Vertex deletion gives the slabs back.
    g.remove_vertices(&[0]).unwrap();
    g.validate().unwrap();
    assert_eq!(g.pool().units_in_use().unwrap(), 0);
}

#[test]
fn vertex_insertion_sizes_tables_and_reuses_ids() {
    let Some(gpu) = gpu() else { return };
    let mut g = DynamicGraph::<()>::new(&gpu, 100).unwrap();
    let mut o = Oracle::<()>::new(false, 100);
    let src: Vec<u32> = (0..99).collect();
    let dst: Vec<u32> = (1..100).collect();
    g.insert_edges(&src, &dst, None).unwrap();
    o.insert(&src, &dst, &[]);
    g.remove_vertices(&[10, 20, 30]).unwrap();
    o.remove_vertices(&[10, 20, 30]);
    agree(&g, &mut o, "after deletion");
    // Vertex 20 comes back with 500 edges: its table is sized for them.
    let vs: Vec<u32> = (100..600).collect();
    let us = vec![20u32; vs.len()];
    g.insert_vertices_with_edges(&[20], &us, &vs, None).unwrap();
    o.deleted.remove(&20);
    o.insert(&us, &vs, &[]);
    agree(&g, &mut o, "after vertex insertion");
    let stats = g.stats().unwrap();
    assert!(stats.max_chain <= 4, "{stats:?}");
    // A vertex with edges cannot be inserted.
    assert!(g
        .insert_vertices_with_edges(&[1], &[1], &[2], None)
        .is_err());
    agree(&g, &mut o, "after refused insertion");
}

#[test]
fn vertex_deletion_batches_drop_duplicates_deleted_and_unknown_ids() {
    let Some(gpu) = gpu() else { return };
    // Both ways the host learns a batch: per id (a batch smaller than the dictionary's
    // bitmap of n / 32 words) and per bitmap word (a larger batch).
    for (n, picks) in [(4096u32, 40usize), (4096, 3000)] {
        let mut rng = StdRng::seed_from_u64(u64::from(n) + picks as u64);
        for directed in [false, true] {
            let config = GraphConfig {
                directed,
                ..Default::default()
            };
            let src: Vec<u32> = (0..4 * n).map(|_| rng.random_range(0..n)).collect();
            let dst: Vec<u32> = (0..4 * n).map(|_| rng.random_range(0..n)).collect();
            let mut g = DynamicGraph::<()>::from_edges(&gpu, config, n, &src, &dst, None).unwrap();
            let mut o = Oracle::<()>::new(directed, n);
            o.insert(&src, &dst, &[]);
            // A first batch; then one with its ids again, duplicates, new ids and ids
            // past the dictionary, through the device form.
            let first: Vec<u32> = (0..picks / 2).map(|_| rng.random_range(0..n)).collect();
            let want = first.iter().collect::<BTreeSet<_>>().len() as u64;
            assert_eq!(g.remove_vertices(&first).unwrap(), want);
            o.remove_vertices(&first);
            let mut second: Vec<u32> = first.clone();
            second.extend((0..picks).map(|_| rng.random_range(0..n)));
            second.extend([n, n + 7, u32::MAX - 2]);
            second.extend(second.clone());
            let before = o.deleted.len() as u64;
            o.remove_vertices(&second);
            let ids = gpu.stream().clone_htod(&second).unwrap();
            assert_eq!(
                g.remove_vertices_device(&ids).unwrap(),
                o.deleted.len() as u64 - before
            );
            let what = format!("n {n}, batch {picks}, directed {directed}");
            assert_eq!(
                g.deleted_vertices(),
                o.deleted.iter().copied().collect::<Vec<_>>(),
                "{what}"
            );
            assert_eq!(g.num_vertices(), u64::from(n) - o.deleted.len() as u64);
            agree(&g, &mut o, &what);
            // The ids come back in ascending order.
            let back = g.insert_vertices(3).unwrap();
            let want: Vec<u32> = o.deleted.iter().copied().take(3).collect();
            assert_eq!(back, want, "{what}");
            for u in back {
                o.deleted.remove(&u);
            }
            agree(&g, &mut o, &what);
        }
    }
}

#[test]
fn a_large_graph_builds_and_validates() {
    let Some(gpu) = gpu() else { return };
    let n = 1u32 << 22;
    let m = 1usize << 24;
    let mut rng = StdRng::seed_from_u64(3);
    let src: Vec<u32> = (0..m).map(|_| rng.random_range(0..n)).collect();
    let dst: Vec<u32> = (0..m).map(|_| rng.random_range(0..n)).collect();
    let mut g =
        DynamicGraph::<()>::from_edges(&gpu, GraphConfig::default(), n, &src, &dst, None).unwrap();
    g.validate().unwrap();
    let mut keys: Vec<u64> = src
        .iter()
        .zip(&dst)
        .filter(|(u, v)| u != v)
        .map(|(&u, &v)| (u64::from(u.min(v)) << 32) | u64::from(u.max(v)))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(g.num_edges().unwrap(), keys.len() as u64);
    let t = g.remove_edges(&src[..m / 2], &dst[..m / 2]).unwrap();
    assert!(t.edges > 0);
    g.flush().unwrap();
    g.validate().unwrap();
    assert_eq!(g.stats().unwrap().tombstones, 0);
}

/// A user kernel counts every vertex's live neighbours with the adjacency iterator and
/// inserts one edge per vertex through the device ref.
#[test]
fn the_device_ref_and_iterator_from_a_user_kernel() {
    let Some(gpu) = gpu() else { return };
    let n = 1000u32;
    let mut g = DynamicGraph::<u32>::with_config(
        &gpu,
        n,
        GraphConfig {
            directed: true,
            ..Default::default()
        },
    )
    .unwrap();
    let src: Vec<u32> = (0..n)
        .flat_map(|u| std::iter::repeat_n(u, (u % 40) as usize))
        .collect();
    let dst: Vec<u32> = src
        .iter()
        .enumerate()
        .map(|(i, &u)| (u + 1 + i as u32 % 97) % n)
        .collect();
    g.insert_edges(&src, &dst, None).unwrap();
    let program = Program::new(
        "graph_user",
        r#"#include <gpuds/graph/graph_ref.cuh>
           using namespace gpuds;
           using ref_t = graph::graph_ref<unsigned>;
           extern "C" __global__ void count(ref_t g, unsigned* counts) {
             const unsigned lane = threadIdx.x % 32;
             const unsigned warp_id = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
             const unsigned warps = gridDim.x * blockDim.x / 32;
             for (unsigned u = warp_id; u < g.num_vertices; u += warps) {
               unsigned c = 0;
               for (auto it = g.adjacency(u); it.valid(); it.next()) c += __popc(it.live_key_lanes());
               if (lane == 0) counts[u] = c;
             }
           }
           // Every thread adds edge (i, (i + 500) % n) with value 7.
           extern "C" __global__ void add(ref_t g) {
             const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
             slabhash::detail::on_demand_allocator a;
             unsigned added;
             g.insert_edge(a, i < g.num_vertices, i, (i + 500) % g.num_vertices, 7u, added);
           }"#,
    )
    .headers(gpuds_graph::cuda_headers());
    let module = gpu.load(&program).unwrap();
    let (count, add) = (
        module.kernel("count").unwrap(),
        module.kernel("add").unwrap(),
    );
    g.reserve(n as u64).unwrap();
    let before = g.degree_many(&(0..n).collect::<Vec<_>>()).unwrap();
    let mut counts = gpu.stream().alloc_zeros::<u32>(n as usize).unwrap();
    let r = g.device_ref();
    let shape = launch::one_thread_per_item(n as usize * 32, 128).unwrap();
    let mut args = gpu.stream().launch_builder(count.func());
    args.arg(&r).arg(&mut counts);
    // SAFETY: the kernel takes a graph_ref<unsigned> and n counts.
    unsafe { args.launch(shape) }.unwrap();
    let counts = gpu.stream().clone_dtoh(&counts).unwrap();
    assert_eq!(counts, before);
    let mut args = gpu.stream().launch_builder(add.func());
    args.arg(&r);
    // SAFETY: the kernel takes a graph_ref<unsigned>.
    unsafe { args.launch(launch::one_thread_per_item(n as usize, 128).unwrap()) }.unwrap();
    g.take_device_status().unwrap();
    g.validate().unwrap();
    let got = g.edge_values_many(&[0, 1], &[500, 501]).unwrap();
    assert_eq!(got, vec![Some(7), Some(7)]);
}
