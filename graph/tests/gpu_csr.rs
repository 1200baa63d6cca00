//! GPU tests of the sorted-CSR baseline: the device build against a CPU CSR of the same
//! COO edges, the triangle count against a CPU count and closed forms, and bad input.

use gpuds_core::Gpu;
use gpuds_graph::csr::{CsrBuilder, CsrError, DeviceCsr};

/// splitmix64: a small seeded generator, so that every case is reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u32) -> u32 {
        (self.next() % u64::from(n)) as u32
    }
}

/// `m` random edges over `n` vertices with repeats, reversed repeats and self loops
/// mixed in.
fn random_coo(n: u32, m: usize, seed: u64) -> (Vec<u32>, Vec<u32>) {
    let mut rng = Rng(seed);
    let (mut src, mut dst) = (Vec::with_capacity(m), Vec::with_capacity(m));
    while src.len() < m {
        let k = src.len();
        match rng.below(10) {
            // A repeat of an earlier edge.
            0 if k > 0 => {
                let i = rng.next() as usize % k;
                src.push(src[i]);
                dst.push(dst[i]);
            }
            // An earlier edge reversed.
            1 if k > 0 => {
                let i = rng.next() as usize % k;
                src.push(dst[i]);
                dst.push(src[i]);
            }
            2 => {
                let v = rng.below(n);
                src.push(v);
                dst.push(v);
            }
            _ => {
                src.push(rng.below(n));
                dst.push(rng.below(n));
            }
        }
    }
    (src, dst)
}

/// The CSR of the edges, built on the CPU by sorting (src, dst) pairs: self loops
/// dropped, duplicates kept once, with `symmetrize` both directions.
fn cpu_csr(n: u32, src: &[u32], dst: &[u32], symmetrize: bool) -> (Vec<u64>, Vec<u32>) {
    let mut pairs: Vec<(u32, u32)> = src.iter().copied().zip(dst.iter().copied()).collect();
    if symmetrize {
        pairs.extend(
            src.iter()
                .copied()
                .zip(dst.iter().copied())
                .map(|(s, d)| (d, s)),
        );
    }
    pairs.retain(|&(s, d)| s != d);
    pairs.sort_unstable();
    pairs.dedup();
    let mut rows = vec![0u64; n as usize + 1];
    for &(s, _) in &pairs {
        rows[s as usize + 1] += 1;
    }
    for v in 0..n as usize {
        rows[v + 1] += rows[v];
    }
    (rows, pairs.into_iter().map(|(_, d)| d).collect())
}

/// Triangles u < v < w of a symmetric host CSR: for each u, its neighbours are marked,
/// and for each neighbour v > u, the marked neighbours w > v of v are counted (a
/// different method from the device's list intersections).
fn cpu_triangles(rows: &[u64], cols: &[u32]) -> u64 {
    let row = |v: u32| &cols[rows[v as usize] as usize..rows[v as usize + 1] as usize];
    let n = rows.len() - 1;
    let mut marked = vec![false; n];
    let mut count = 0;
    for u in 0..n as u32 {
        for &v in row(u) {
            marked[v as usize] = true;
        }
        for &v in row(u).iter().filter(|&&v| v > u) {
            count += row(v)
                .iter()
                .filter(|&&w| w > v && marked[w as usize])
                .count() as u64;
        }
        for &v in row(u) {
            marked[v as usize] = false;
        }
    }
    count
}

/// Builds on the device (host input) and checks the result against the CPU CSR and the
/// CSR invariants; returns the device CSR.
fn build_and_check(gpu: &Gpu, n: u32, src: &[u32], dst: &[u32], symmetrize: bool) -> DeviceCsr {
    let csr = DeviceCsr::from_host_coo(gpu, n, src, dst, symmetrize)
        .unwrap_or_else(|e| panic!("n {n}, {} edges: {e}", src.len()));
    check(&csr, n, src, dst, symmetrize);
    csr
}

fn check(csr: &DeviceCsr, n: u32, src: &[u32], dst: &[u32], symmetrize: bool) {
    let what = format!("n {n}, {} edges, symmetrize {symmetrize}", src.len());
    let (rows, cols) = csr.to_host().expect("to_host");
    let (want_rows, want_cols) = cpu_csr(n, src, dst, symmetrize);
    assert_eq!(csr.num_vertices(), n, "{what}");
    assert_eq!(csr.num_edges(), want_cols.len(), "{what}");
    assert_eq!(csr.row_offsets().len(), n as usize + 1, "{what}");
    assert!(rows == want_rows, "{what}: row offsets differ");
    assert!(cols == want_cols, "{what}: columns differ");
}

#[test]
fn csr_equals_a_cpu_csr_of_random_coo() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let cases: [(u32, usize); 10] = [
        (1, 5),
        (2, 40),
        (3, 1),
        (17, 300),
        (1000, 5000),
        (1 << 10, 1 << 16),
        ((1 << 16) + 1, 1 << 18),
        (1 << 20, 1 << 22),
        (50_000_000, 1 << 20),
        (3, 1 << 20),
    ];
    for (case, &(n, m)) in cases.iter().enumerate() {
        let (src, dst) = random_coo(n, m, 0x5eed + case as u64);
        for symmetrize in [false, true] {
            build_and_check(&gpu, n, &src, &dst, symmetrize);
        }
    }
}

/// Ids near the top of a large vertex range: 26-bit ids, 52-bit keys.
#[test]
fn csr_keeps_ids_at_the_top_of_the_range() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let n = (1u32 << 25) + 3;
    let top = n - 1;
    let src = [top, top - 1, 0, top, 1 << 25, top, 7];
    let dst = [0, top, top, top - 1, top, top, (1 << 25) - 1];
    for symmetrize in [false, true] {
        build_and_check(&gpu, n, &src, &dst, symmetrize);
    }
}

/// More than 2^31 vertices: 32-bit ids in 64-bit keys (the sort looks at all 64 bits).
/// The row offsets take 16 GiB; only their ends are read back.
#[test]
fn csr_of_ids_past_two_to_the_31() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let n = (1u32 << 31) + 1;
    let top = n - 1;
    // K4 on {0, 5, top - 1, top}, each edge once, a self loop and a repeat.
    let ids = [0u32, 5, top - 1, top];
    let (mut src, mut dst): (Vec<u32>, Vec<u32>) = (0..4)
        .flat_map(|a| (a + 1..4).map(move |b| (ids[b], ids[a])))
        .unzip();
    src.extend([top, top]);
    dst.extend([top, 0]);
    let csr = DeviceCsr::from_host_coo(&gpu, n, &src, &dst, true).expect("build");
    assert_eq!((csr.num_vertices(), csr.num_edges()), (n, 12));
    let stream = gpu.stream();
    let cols = stream.clone_dtoh(&csr.cols()).expect("cols");
    let rows = csr.row_offsets();
    let low = stream.clone_dtoh(&rows.slice(..7)).expect("rows");
    let high = stream
        .clone_dtoh(&rows.slice(top as usize - 2..))
        .expect("rows");
    stream.synchronize().expect("sync");
    assert_eq!(
        cols,
        [5, top - 1, top, 0, top - 1, top, 0, 5, top, 0, 5, top - 1]
    );
    assert_eq!(low, [0, 3, 3, 3, 3, 3, 6]);
    assert_eq!(high, [6, 6, 9, 12]);
    assert_eq!(csr.triangle_count(&gpu).expect("count"), 4);
}

/// The device input path and a reused builder give the CPU CSR every time, for graphs
/// growing and shrinking between builds (the builder's scratch is reused).
#[test]
fn device_coo_and_a_reused_builder_give_the_cpu_csr() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let mut builder = CsrBuilder::new(&gpu).expect("builder");
    let stream = gpu.stream();
    for (i, &(n, m)) in [
        (5000u32, 1usize << 20),
        (70, 300),
        (1 << 18, 1 << 21),
        (9, 2),
    ]
    .iter()
    .enumerate()
    {
        let (src, dst) = random_coo(n, m, 77 + i as u64);
        let (d_src, d_dst) = (
            stream.clone_htod(&src).expect("src"),
            stream.clone_htod(&dst).expect("dst"),
        );
        for symmetrize in [true, false] {
            let csr = builder.build(n, &d_src, &d_dst, symmetrize).expect("build");
            check(&csr, n, &src, &dst, symmetrize);
            let csr = DeviceCsr::from_device_coo(&gpu, n, &d_src, &d_dst, symmetrize)
                .expect("from_device_coo");
            check(&csr, n, &src, &dst, symmetrize);
        }
    }
}

#[test]
fn triangle_counts_equal_a_cpu_count_on_random_graphs() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    for (case, &(n, m)) in [
        (4u32, 10usize),
        (60, 1000),
        (2000, 40_000),
        (1 << 16, 1 << 20),
    ]
    .iter()
    .enumerate()
    {
        let (src, dst) = random_coo(n, m, 1000 + case as u64);
        let csr = build_and_check(&gpu, n, &src, &dst, true);
        let (rows, cols) = csr.to_host().expect("to_host");
        let want = cpu_triangles(&rows, &cols);
        assert!(want > 0 || n < 60, "case {case} has no triangles to count");
        assert_eq!(
            csr.triangle_count(&gpu).expect("count"),
            want,
            "n {n} m {m}"
        );
    }
}

/// A skewed graph (ids drawn log-uniformly, so that the first few vertices are hubs of
/// thousands of neighbours): edges between hubs have long lists on both sides, which
/// their warps intersect together.
#[test]
fn triangle_counts_equal_a_cpu_count_on_a_skewed_graph() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let n = 1u32 << 14;
    let mut rng = Rng(2022);
    let mut id = || {
        let bits = rng.below(15);
        rng.below(1 << bits)
    };
    let (src, dst): (Vec<u32>, Vec<u32>) = (0..1 << 18).map(|_| (id(), id())).unzip();
    let csr = build_and_check(&gpu, n, &src, &dst, true);
    let (rows, cols) = csr.to_host().expect("to_host");
    assert!(rows[1] - rows[0] > 4096, "vertex 0 is no hub");
    let want = cpu_triangles(&rows, &cols);
    assert_eq!(csr.triangle_count(&gpu).expect("count"), want);
}

/// Points in the unit square joined within a radius, as the rgg inputs of §5.6: many
/// triangles of vertices with similar degrees (the merge path).
#[test]
fn triangle_counts_equal_a_cpu_count_on_a_geometric_graph() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let n = 3000u32;
    let mut rng = Rng(42);
    let points: Vec<(f64, f64)> = (0..n)
        .map(|_| {
            let x = rng.next() as f64 / u64::MAX as f64;
            (x, rng.next() as f64 / u64::MAX as f64)
        })
        .collect();
    let r2 = 0.05f64 * 0.05;
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for u in 0..n {
        for v in u + 1..n {
            let (a, b) = (points[u as usize], points[v as usize]);
            if (a.0 - b.0).powi(2) + (a.1 - b.1).powi(2) < r2 {
                src.push(u);
                dst.push(v);
            }
        }
    }
    let csr = build_and_check(&gpu, n, &src, &dst, true);
    let (rows, cols) = csr.to_host().expect("to_host");
    let want = cpu_triangles(&rows, &cols);
    assert!(want > 10_000, "{want}");
    assert_eq!(csr.triangle_count(&gpu).expect("count"), want);
}

/// Graphs whose triangle counts are known in closed form, given in both directions,
/// once, with repeats: K4 = 4, K_n = n(n-1)(n-2)/6 (long lists on both sides: the
/// warp's path), a wheel of k rim vertices = k (a hub of degree k beside rim vertices of
/// degree 3: the binary-search path), a book of k pages = 3k - 2, a grid of r x c cells
/// with one diagonal each = 2 r c.
#[test]
fn triangle_counts_of_known_graphs() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let complete = |n: u32| -> (Vec<u32>, Vec<u32>) {
        (0..n).flat_map(|u| (u + 1..n).map(move |v| (u, v))).unzip()
    };
    let (src, dst) = complete(4);
    for symmetrize in [false, true] {
        let (mut s, mut d) = (src.clone(), dst.clone());
        if !symmetrize {
            s.extend(&dst);
            d.extend(&src);
        }
        let csr = build_and_check(&gpu, 4, &s, &d, symmetrize);
        assert_eq!(csr.triangle_count(&gpu).expect("K4"), 4);
    }
    for n in [3u32, 5, 33, 200] {
        let (src, dst) = complete(n);
        let csr = build_and_check(&gpu, n, &src, &dst, true);
        let want = u64::from(n) * u64::from(n - 1) * u64::from(n - 2) / 6;
        assert_eq!(csr.triangle_count(&gpu).expect("K_n"), want, "K_{n}");
    }
    for k in [4u32, 5, 1000, 300_000] {
        // Hub 0; rim 1..=k in a cycle; every spoke given twice.
        let mut src: Vec<u32> = (1..=k).chain(1..=k).collect();
        let mut dst = vec![0; 2 * k as usize];
        for i in 1..=k {
            src.push(i);
            dst.push(i % k + 1);
        }
        let csr = build_and_check(&gpu, k + 1, &src, &dst, true);
        assert_eq!(
            csr.triangle_count(&gpu).expect("wheel"),
            u64::from(k),
            "W_{k}"
        );
        // The same wheel with the hub as the last vertex.
        let src: Vec<u32> = src
            .iter()
            .map(|&v| if v == 0 { k + 1 } else { v })
            .collect();
        let dst: Vec<u32> = dst
            .iter()
            .map(|&v| if v == 0 { k + 1 } else { v })
            .collect();
        let csr = DeviceCsr::from_host_coo(&gpu, k + 2, &src, &dst, true).expect("wheel");
        assert_eq!(
            csr.triangle_count(&gpu).expect("wheel"),
            u64::from(k),
            "W_{k}"
        );
    }
    for k in [3u32, 64, 65, 66, 5000] {
        // A book: hubs 0 and 1 joined, both joined to the pages 2..k + 2, the pages in a
        // path: k triangles on the spine (0, 1) (an edge whose lists are both long) and
        // 2 (k - 1) along the path.
        let (mut src, mut dst) = (vec![0u32], vec![1u32]);
        for w in 2..k + 2 {
            src.extend([w, w]);
            dst.extend([0, 1]);
            if w > 2 {
                src.push(w - 1);
                dst.push(w);
            }
        }
        let csr = build_and_check(&gpu, k + 2, &src, &dst, true);
        let want = u64::from(k) + 2 * u64::from(k - 1);
        assert_eq!(csr.triangle_count(&gpu).expect("book"), want, "book of {k}");
    }
    for (r, c) in [(1u32, 1u32), (3, 7), (512, 1024)] {
        let id = |i: u32, j: u32| i * (c + 1) + j;
        let (mut src, mut dst) = (Vec::new(), Vec::new());
        for i in 0..=r {
            for j in 0..=c {
                if j < c {
                    src.push(id(i, j));
                    dst.push(id(i, j + 1));
                }
                if i < r {
                    src.push(id(i + 1, j));
                    dst.push(id(i, j));
                }
                if i < r && j < c {
                    src.push(id(i, j));
                    dst.push(id(i + 1, j + 1));
                }
            }
        }
        let n = (r + 1) * (c + 1);
        let csr = build_and_check(&gpu, n, &src, &dst, true);
        assert_eq!(
            csr.triangle_count(&gpu).expect("grid"),
            2 * u64::from(r) * u64::from(c),
            "grid {r} x {c}"
        );
    }
}

#[test]
fn empty_graphs_have_no_edges_and_no_triangles() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    for (n, src, dst) in [
        (0u32, vec![], vec![]),
        (1, vec![], vec![]),
        (5, vec![], vec![]),
        (5, vec![3u32, 3, 0], vec![3u32, 3, 0]),
    ] {
        for symmetrize in [false, true] {
            let csr = build_and_check(&gpu, n, &src, &dst, symmetrize);
            assert_eq!(csr.num_edges(), 0);
            assert_eq!(
                csr.to_host().expect("to_host"),
                (vec![0; n as usize + 1], vec![])
            );
            assert_eq!(csr.triangle_count(&gpu).expect("count"), 0);
        }
    }
}

#[test]
fn an_id_past_the_vertex_count_is_an_error_naming_the_first_bad_edge() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    let n = 100u32;
    let (mut src, mut dst) = random_coo(n, 1 << 16, 9);
    // Bad destination at 40_000, bad source at 50_000 and a later one at 60_000.
    dst[40_000] = n;
    src[50_000] = u32::MAX;
    src[60_000] = n + 7;
    for symmetrize in [false, true] {
        match DeviceCsr::from_host_coo(&gpu, n, &src, &dst, symmetrize) {
            Err(CsrError::VertexOutOfRange {
                index,
                id,
                num_vertices,
            }) => assert_eq!((index, id, num_vertices), (40_000, n, n)),
            other => panic!("expected VertexOutOfRange, got {other:?}"),
        }
    }
    // Both ids of the first bad edge out of range: the source is named.
    src[7] = n + 1;
    dst[7] = n + 2;
    assert!(matches!(
        DeviceCsr::from_host_coo(&gpu, n, &src, &dst, true),
        Err(CsrError::VertexOutOfRange { index: 7, id, .. }) if id == n + 1
    ));
    // No vertices at all: any edge is out of range, a self loop included.
    assert!(matches!(
        DeviceCsr::from_host_coo(&gpu, 0, &[0], &[0], false),
        Err(CsrError::VertexOutOfRange {
            index: 0,
            id: 0,
            num_vertices: 0
        })
    ));
    // The arrays build once every id is below the vertex count.
    (src[7], dst[7], dst[40_000], src[50_000]) = (1, 2, 3, 4);
    build_and_check(&gpu, n + 8, &src, &dst, true);
}

#[test]
fn sources_and_destinations_of_different_lengths_are_an_error() {
    let Some(gpu) = gpuds_testkit::gpu() else {
        return;
    };
    assert!(matches!(
        DeviceCsr::from_host_coo(&gpu, 4, &[0, 1], &[1], true),
        Err(CsrError::LengthMismatch {
            sources: 2,
            destinations: 1
        })
    ));
    let stream = gpu.stream();
    let src = stream.clone_htod(&[0u32, 1, 2]).expect("src");
    let dst = stream.clone_htod(&[1u32, 2]).expect("dst");
    assert!(matches!(
        DeviceCsr::from_device_coo(&gpu, 4, &src, &dst, false),
        Err(CsrError::LengthMismatch { .. })
    ));
}
