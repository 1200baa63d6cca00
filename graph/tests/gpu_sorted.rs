//! SortedGraph on the GPU against a `HashMap<u32, BTreeSet<u32>>` oracle: random and
//! proptest sequences of insertion and deletion batches (directed and undirected, with
//! repeats inside and across batches), `validate()` after every batch, adjacency equal
//! to the oracle's sorted sets; a hub beside degree-one vertices; triangle counts of
//! generated graphs against the CPU, DynamicGraph and DeviceCsr; bad input; a graph of
//! 2^22 edges; the segment layout.

use std::collections::{BTreeSet, HashMap};

use gpuds_core::{assert_layout, Gpu, Program};
use gpuds_graph::csr::DeviceCsr;
use gpuds_graph::input::{reference, Family};
use gpuds_graph::sorted::{Segment, SortedConfig, SortedGraph};
use gpuds_graph::{DynamicGraph, Error, GraphConfig};
use gpuds_testkit::gpu;
use rand::rngs::ChaCha8Rng as StdRng;
use rand::{RngExt, SeedableRng};

/// The oracle: each vertex's out-neighbours, sorted.
#[derive(Default, Clone)]
struct Oracle {
    directed: bool,
    adj: HashMap<u32, BTreeSet<u32>>,
    ids: u32,
}

impl Oracle {
    fn new(directed: bool, ids: u32) -> Self {
        Self {
            directed,
            ids,
            ..Default::default()
        }
    }

    /// Returns the edges added.
    fn insert(&mut self, src: &[u32], dst: &[u32]) -> u64 {
        let mut added = 0;
        for (&u, &v) in src.iter().zip(dst) {
            self.ids = self.ids.max(u + 1).max(v + 1);
            if u == v {
                continue;
            }
            if self.adj.entry(u).or_default().insert(v) {
                added += 1;
            }
            if !self.directed {
                self.adj.entry(v).or_default().insert(u);
            }
        }
        added
    }

    /// Returns the edges removed.
    fn remove(&mut self, src: &[u32], dst: &[u32]) -> u64 {
        let mut removed = 0;
        for (&u, &v) in src.iter().zip(dst) {
            if self.adj.get_mut(&u).is_some_and(|s| s.remove(&v)) {
                removed += 1;
                if !self.directed {
                    self.adj.entry(v).or_default().remove(&u);
                }
            }
        }
        removed
    }

    fn entries(&self) -> u64 {
        self.adj.values().map(|s| s.len() as u64).sum()
    }

    fn edges(&self) -> u64 {
        if self.directed {
            self.entries()
        } else {
            self.entries() / 2
        }
    }

    fn list(&self, u: u32) -> Vec<u32> {
        self.adj
            .get(&u)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }
}

/// The graph equals the oracle: validation, counts, every list (adjacency and CSR),
/// degrees, and edge-exists queries on stored and random pairs.
fn agree(g: &SortedGraph, o: &Oracle, rng: &mut StdRng, what: &str) {
    g.validate()
        .unwrap_or_else(|e| panic!("{what}: invalid: {e}"));
    assert_eq!(g.num_vertices(), o.ids, "{what}: ids");
    assert_eq!(g.num_edges(), o.edges(), "{what}: edges");
    assert_eq!(g.num_entries(), o.entries(), "{what}: entries");
    let ids: Vec<u32> = (0..o.ids).collect();
    let adj = g.adjacency_many(&ids).expect("adjacency");
    let csr = g.to_csr().expect("to_csr");
    assert_eq!(adj.offsets, csr.row_offsets, "{what}: offsets");
    assert_eq!(adj.dst, csr.cols, "{what}: cols");
    for &u in &ids {
        let (a, b) = (
            adj.offsets[u as usize] as usize,
            adj.offsets[u as usize + 1] as usize,
        );
        assert_eq!(adj.dst[a..b], o.list(u)[..], "{what}: list of {u}");
    }
    let degrees = g.degree_many(&ids).expect("degrees");
    for &u in &ids {
        assert_eq!(
            degrees[u as usize] as usize,
            o.list(u).len(),
            "{what}: degree {u}"
        );
    }
    let n = o.ids.max(1) + 2;
    let (mut src, mut dst): (Vec<u32>, Vec<u32>) = (0..200)
        .map(|_| (rng.random_range(0..n), rng.random_range(0..n)))
        .unzip();
    for (&u, s) in o.adj.iter().take(100) {
        if let Some(&v) = s.iter().next() {
            src.push(u);
            dst.push(v);
        }
    }
    let found = g.edge_exists_many(&src, &dst).expect("exists");
    for i in 0..src.len() {
        let want = o.adj.get(&src[i]).is_some_and(|s| s.contains(&dst[i]));
        assert_eq!(found[i], want, "{what}: edge ({}, {})", src[i], dst[i]);
    }
}

/// A batch of `len` edges over ids below `n`, with repeats of earlier edges of the batch,
/// reversed repeats and self loops.
fn random_batch(rng: &mut StdRng, n: u32, len: usize) -> (Vec<u32>, Vec<u32>) {
    let (mut src, mut dst) = (Vec::with_capacity(len), Vec::with_capacity(len));
    while src.len() < len {
        let k = src.len();
        match rng.random_range(0..10u32) {
            0 if k > 0 => {
                let i = rng.random_range(0..k);
                src.push(src[i]);
                dst.push(dst[i]);
            }
            1 if k > 0 => {
                let i = rng.random_range(0..k);
                src.push(dst[i]);
                dst.push(src[i]);
            }
            2 => {
                let v = rng.random_range(0..n);
                src.push(v);
                dst.push(v);
            }
            _ => {
                src.push(rng.random_range(0..n));
                dst.push(rng.random_range(0..n));
            }
        }
    }
    (src, dst)
}

/// Stored edges of the oracle (some), for deletion batches that hit.
fn stored_sample(rng: &mut StdRng, o: &Oracle, len: usize) -> (Vec<u32>, Vec<u32>) {
    let all: Vec<(u32, u32)> = o
        .adj
        .iter()
        .flat_map(|(&u, s)| s.iter().map(move |&v| (u, v)))
        .collect();
    if all.is_empty() {
        return (Vec::new(), Vec::new());
    }
    (0..len)
        .map(|_| all[rng.random_range(0..all.len())])
        .unzip()
}

fn random_sequence(gpu: &Gpu, directed: bool, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let n0 = rng.random_range(1..200u32);
    let config = SortedConfig {
        directed,
        ..Default::default()
    };
    let mut g = SortedGraph::with_config(gpu, n0, config).expect("graph");
    let mut o = Oracle::new(directed, n0);
    for step in 0..12 {
        let what = format!("seed {seed} directed {directed} step {step}");
        // Ids grow now and then past the dictionary.
        let n = o.ids + if step % 4 == 3 { 50 } else { 0 };
        let len = rng.random_range(0..3000usize);
        match rng.random_range(0..3u32) {
            0 | 1 => {
                let (src, dst) = random_batch(&mut rng, n.max(1), len);
                let tally = g.insert_edges(&src, &dst).expect("insert");
                assert_eq!(tally.edges, o.insert(&src, &dst), "{what}: added");
                // The same batch again adds nothing.
                if step % 3 == 0 {
                    assert_eq!(
                        g.insert_edges(&src, &dst).expect("insert").edges,
                        0,
                        "{what}"
                    );
                }
            }
            _ => {
                let (mut src, mut dst) = stored_sample(&mut rng, &o, len / 2);
                let (s2, d2) = random_batch(&mut rng, n.max(1) + 10, len / 2);
                src.extend(s2);
                dst.extend(d2);
                let tally = g.remove_edges(&src, &dst).expect("remove");
                assert_eq!(tally.edges, o.remove(&src, &dst), "{what}: removed");
            }
        }
        agree(&g, &o, &mut rng, &what);
        if !directed {
            let want = triangles_of(&o);
            assert_eq!(
                g.triangle_count().expect("triangles"),
                want,
                "{what}: triangles"
            );
        }
    }
}

/// Triangles u < v < w of the (undirected) oracle.
fn triangles_of(o: &Oracle) -> u64 {
    let mut t = 0;
    for (&u, nu) in &o.adj {
        for &v in nu.range(u + 1..) {
            if let Some(nv) = o.adj.get(&v) {
                // Walk the shorter list and probe the longer: a hub's list is walked
                // once per neighbour otherwise (quadratic in its degree).
                let (walk, probe) = if nu.len() <= nv.len() {
                    (nu, nv)
                } else {
                    (nv, nu)
                };
                t += walk.range(v + 1..).filter(|w| probe.contains(w)).count() as u64;
            }
        }
    }
    t
}

#[test]
fn random_sequences_against_the_oracle() {
    let Some(gpu) = gpu() else { return };
    for seed in 0..4 {
        for directed in [false, true] {
            random_sequence(&gpu, directed, seed);
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 6, ..Default::default() })]
    #[test]
    fn proptest_sequences(seed in proptest::prelude::any::<u64>(), directed in proptest::prelude::any::<bool>()) {
        if let Some(gpu) = gpu() {
            random_sequence(&gpu, directed, seed);
        }
    }
}

/// Small batches on few vertices: lists grow through every capacity, segments move and
/// the pool is repacked many times.
#[test]
fn many_small_batches_move_segments_and_repack_the_pool() {
    let Some(gpu) = gpu() else { return };
    let mut rng = StdRng::seed_from_u64(3);
    for directed in [false, true] {
        let config = SortedConfig {
            directed,
            ..Default::default()
        };
        let mut g = SortedGraph::with_config(&gpu, 40, config).expect("graph");
        let mut o = Oracle::new(directed, 40);
        for step in 0..60 {
            let (src, dst) = random_batch(&mut rng, 40, 1 + step % 7);
            assert_eq!(
                g.insert_edges(&src, &dst).expect("insert").edges,
                o.insert(&src, &dst)
            );
            if step % 5 == 4 {
                let (src, dst) = stored_sample(&mut rng, &o, 3);
                assert_eq!(
                    g.remove_edges(&src, &dst).expect("remove").edges,
                    o.remove(&src, &dst)
                );
            }
            agree(
                &g,
                &o,
                &mut rng,
                &format!("directed {directed} step {step}"),
            );
        }
        let stats = g.stats().expect("stats");
        assert_eq!(stats.entries, o.entries());
        assert!(stats.capacity_words >= stats.entries && stats.pool_top <= stats.pool_words);
    }
}

#[test]
fn a_hub_beside_degree_one_vertices() {
    let Some(gpu) = gpu() else { return };
    let hub_degree = (1u32 << 18) + 77;
    let mut rng = StdRng::seed_from_u64(11);
    let mut g = SortedGraph::new(&gpu, 1).expect("graph");
    let mut o = Oracle::new(false, 1);
    // The hub's neighbours arrive in four shuffled batches (merges into a long list),
    // beside pairs of degree-one vertices.
    let mut leaves: Vec<u32> = (1..=hub_degree).collect();
    for i in (1..leaves.len()).rev() {
        leaves.swap(i, rng.random_range(0..=i));
    }
    let pairs_first = hub_degree + 1;
    for (k, part) in leaves.chunks(leaves.len().div_ceil(4)).enumerate() {
        let mut src = vec![0u32; part.len()];
        let mut dst = part.to_vec();
        for p in 0..1000u32 {
            let a = pairs_first + 2 * (k as u32 * 1000 + p);
            src.push(a);
            dst.push(a + 1);
        }
        assert_eq!(
            g.insert_edges(&src, &dst).expect("insert").edges,
            o.insert(&src, &dst)
        );
        g.validate().expect("valid");
    }
    assert_eq!(g.degree_many(&[0]).expect("degree"), vec![hub_degree]);
    // Edges among some leaves: each closes a triangle with the hub.
    let (src, dst): (Vec<u32>, Vec<u32>) = (0..5000).map(|i| (2 * i + 1, 2 * i + 2)).unzip();
    g.insert_edges(&src, &dst).expect("insert");
    o.insert(&src, &dst);
    assert_eq!(g.triangle_count().expect("triangles"), 5000);
    // Remove every third hub edge.
    let (src, dst): (Vec<u32>, Vec<u32>) = (1..=hub_degree).step_by(3).map(|v| (v, 0)).unzip();
    assert_eq!(
        g.remove_edges(&src, &dst).expect("remove").edges,
        o.remove(&src, &dst)
    );
    agree(&g, &o, &mut rng, "hub");
    assert_eq!(g.triangle_count().expect("triangles"), triangles_of(&o));
}

#[test]
fn triangles_equal_the_cpu_the_hash_graph_and_the_csr() {
    let Some(gpu) = gpu() else { return };
    for (name, family) in [
        ("rgg", Family::RandomGeometric),
        ("delaunay", Family::Delaunay),
        (
            "rmat",
            Family::from_name("soc-LiveJournal1", 0).expect("family").0,
        ),
    ] {
        for vertices in [1u32 << 10, 1 << 16] {
            let coo = family.generate(vertices, 5);
            let what = format!("{name} {vertices}");
            let want = reference::triangle_count(&coo);
            let g = SortedGraph::from_coo(&gpu, SortedConfig::default(), &coo).expect("build");
            g.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(g.triangle_count().expect("count"), want, "{what}");
            let hash =
                DynamicGraph::<()>::from_coo(&gpu, GraphConfig::default(), &coo).expect("hash");
            assert_eq!(hash.triangle_count().expect("hash count"), want, "{what}");
            assert_eq!(hash.num_edges().expect("edges"), g.num_edges(), "{what}");
            let csr = DeviceCsr::from_host_coo(&gpu, coo.num_vertices, &coo.src, &coo.dst, true)
                .expect("csr");
            assert_eq!(csr.triangle_count(&gpu).expect("csr count"), want, "{what}");
            // The sorted graph's CSR is the device CSR, without a sort.
            let mine = g.to_csr().expect("to_csr");
            let (rows, cols) = csr.to_host().expect("csr host");
            assert_eq!(mine.row_offsets, rows, "{what}");
            assert_eq!(mine.cols, cols, "{what}");
            // Built incrementally in four batches: the same graph.
            let mut inc = SortedGraph::new(&gpu, coo.num_vertices).expect("graph");
            let quarter = coo.src.len().div_ceil(4).max(1);
            for (s, d) in coo.src.chunks(quarter).zip(coo.dst.chunks(quarter)) {
                inc.insert_edges(s, d).expect("insert");
            }
            inc.validate().expect("valid");
            assert_eq!(inc.to_csr().expect("to_csr"), mine, "{what}");
            assert_eq!(inc.triangle_count().expect("count"), want, "{what}");
        }
    }
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let Some(gpu) = gpu() else { return };
    let mut g = SortedGraph::new(&gpu, 4).expect("graph");
    g.insert_edges(&[0, 1], &[1, 2]).expect("insert");
    let before = g.to_csr().expect("csr");
    let reserved = gpuds_graph::MAX_VERTEX_ID + 1;
    match g.insert_edges(&[0, 1, 2], &[1, reserved, u32::MAX]) {
        Err(Error::ReservedVertex { index: 1, id }) => assert_eq!(id, reserved),
        other => panic!("expected ReservedVertex at 1, got {other:?}"),
    }
    match g.remove_edges(&[u32::MAX], &[0]) {
        Err(Error::ReservedVertex { index: 0, id }) => assert_eq!(id, u32::MAX),
        other => panic!("expected ReservedVertex at 0, got {other:?}"),
    }
    assert!(matches!(
        g.insert_edges(&[0, 1], &[1]),
        Err(Error::LengthMismatch { a: 2, b: 1, .. })
    ));
    assert!(matches!(
        g.remove_edges(&[0], &[]),
        Err(Error::LengthMismatch { .. })
    ));
    assert!(matches!(
        g.edge_exists_many(&[0], &[]),
        Err(Error::LengthMismatch { .. })
    ));
    // Queries past the dictionary are answered, never refused.
    assert_eq!(
        g.edge_exists_many(&[0, 99, reserved], &[1, 0, 0])
            .expect("exists"),
        vec![true, false, false]
    );
    assert_eq!(
        g.degree_many(&[1, 99, u32::MAX]).expect("degrees"),
        vec![2, 0, 0]
    );
    assert_eq!(g.to_csr().expect("csr"), before);
    g.validate().expect("valid");
    // A graph that may not grow names the first request past it.
    let config = SortedConfig {
        growable: false,
        ..Default::default()
    };
    let mut fixed = SortedGraph::with_config(&gpu, 4, config).expect("graph");
    match fixed.insert_edges(&[0, 1, 2], &[1, 3, 9]) {
        Err(Error::VertexBeyondCapacity {
            index: 2,
            id: 9,
            num_vertices: 4,
            growable: false,
        }) => {}
        other => panic!("expected VertexBeyondCapacity, got {other:?}"),
    }
    assert!(fixed.is_empty());
    // A device batch past the dictionary: nothing applied.
    let stream = gpu.stream();
    let (s, d) = (
        stream.clone_htod(&[0u32, 1, 2]).expect("htod"),
        stream.clone_htod(&[1u32, 7, 3]).expect("htod"),
    );
    match fixed.insert_edges_device(&s, &d) {
        Err(Error::VertexBeyondCapacity {
            index: 1, id: 7, ..
        }) => {}
        other => panic!("expected VertexBeyondCapacity, got {other:?}"),
    }
    assert!(fixed.is_empty());
    fixed.validate().expect("valid");
    // Triangles need an undirected graph.
    let directed = SortedConfig {
        directed: true,
        ..Default::default()
    };
    let dg = SortedGraph::with_config(&gpu, 3, directed).expect("graph");
    assert!(matches!(dg.triangle_count(), Err(Error::Config(_))));
    // Empty batches and an empty graph.
    assert_eq!(g.insert_edges(&[], &[]).expect("empty").edges, 0);
    let empty = SortedGraph::new(&gpu, 0).expect("graph");
    assert_eq!(empty.triangle_count().expect("count"), 0);
    assert_eq!(empty.to_csr().expect("csr").row_offsets, vec![0]);
    empty.validate().expect("valid");
}

#[test]
fn a_graph_of_two_to_the_22_edges() {
    let Some(gpu) = gpu() else { return };
    let n = 1u32 << 20;
    let m = 1usize << 22;
    let mut rng = StdRng::seed_from_u64(22);
    let src: Vec<u32> = (0..m).map(|_| rng.random_range(0..n)).collect();
    let dst: Vec<u32> = (0..m).map(|_| rng.random_range(0..n)).collect();
    let mut g =
        SortedGraph::from_edges(&gpu, SortedConfig::default(), n, &src, &dst).expect("build");
    let mut o = Oracle::new(false, n);
    o.insert(&src, &dst);
    agree(&g, &o, &mut rng, "2^22 build");
    let csr = DeviceCsr::from_host_coo(&gpu, n, &src, &dst, true).expect("csr");
    assert_eq!(
        g.triangle_count().expect("count"),
        csr.triangle_count(&gpu).expect("csr count")
    );
    // A batch of 2^20 insertions and one of 2^20 deletions (half of them stored).
    let (s, d) = random_batch(&mut rng, n, 1 << 20);
    assert_eq!(
        g.insert_edges(&s, &d).expect("insert").edges,
        o.insert(&s, &d)
    );
    let (mut s, mut d) = stored_sample(&mut rng, &o, 1 << 19);
    let (s2, d2) = random_batch(&mut rng, n, 1 << 19);
    s.extend(s2);
    d.extend(d2);
    assert_eq!(
        g.remove_edges(&s, &d).expect("remove").edges,
        o.remove(&s, &d)
    );
    agree(&g, &o, &mut rng, "2^22 after batches");
}

#[test]
fn segment_matches_its_cpp_twin() {
    let Some(gpu) = gpu() else { return };
    let prelude = Program::new(
        "sorted_layout",
        "#include <gpuds/graph/sorted_segments.cuh>",
    )
    .headers(gpuds_graph::cuda_headers());
    assert_layout!(
        &gpu,
        prelude,
        Segment,
        "gpuds::graph::sorted::segment",
        offset,
        capacity,
        degree
    );
}
