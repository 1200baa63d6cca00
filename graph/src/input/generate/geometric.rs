//! Graphs of random points in the unit square: random geometric graphs and Delaunay
//! triangulations (the rgg_n_2_*_s0 and delaunay_n* rows of Table 5.1).
//!
//! Both number their points in the row-major order of a grid of square cells, so that
//! points close in the plane get close ids, and both take their coordinates from one
//! ChaCha8 stream with plain IEEE arithmetic only (`+ - * /`, `sqrt`), so a seed gives
//! the same graph on every machine.

use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};

use super::undirected;
use crate::input::coo::edge_key;
use crate::input::Coo;

/// Points sorted by grid cell: the points of cell `c` (row-major, `side` cells a row)
/// are `points[start[c]..start[c + 1]]`, and a point's id is its index in `points`.
struct CellPoints {
    side: usize,
    points: Vec<[f64; 2]>,
    start: Vec<usize>,
}

impl CellPoints {
    /// `n` points uniform in `[0, 1)²` from `seed`, sorted (counting sort, stable) by
    /// their cell in a `side × side` grid.
    fn uniform(n: u32, side: usize, seed: u64) -> CellPoints {
        let side = side.max(1);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // 53 random bits scaled by 2^-53: exact, and independent of `rand`'s float code.
        let mut coordinate = || (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        let raw: Vec<[f64; 2]> = (0..n).map(|_| [coordinate(), coordinate()]).collect();
        let cell_of = |p: &[f64; 2]| {
            let axis = |v: f64| ((v * side as f64) as usize).min(side - 1);
            axis(p[1]) * side + axis(p[0])
        };
        let mut start = vec![0usize; side * side + 1];
        for p in &raw {
            start[cell_of(p) + 1] += 1;
        }
        for c in 0..side * side {
            start[c + 1] += start[c];
        }
        let mut next = start.clone();
        let mut points = vec![[0.0; 2]; raw.len()];
        for p in raw {
            let slot = &mut next[cell_of(&p)];
            points[*slot] = p;
            *slot += 1;
        }
        CellPoints {
            side,
            points,
            start,
        }
    }
}

/// The random geometric graph of `n` points uniform in the unit square: an edge joins
/// two points closer than `0.55·sqrt(ln n / n)`, the radius of the rgg_n_2_20_s0 and
/// rgg_n_2_24_s0 graphs of Table 5.1 (mean degree about `0.95·ln n`, less near the
/// border). Vertices are numbered in grid-cell order, so near points have near ids.
///
/// Each undirected edge is listed once as `(u, v)` with `u < v`, sorted, without
/// duplicates or self loops; `symmetric` is true. Runs in O(n + m): points are bucketed
/// in cells at least as wide as the radius and only neighbouring cells are compared.
///
/// # Examples
///
/// ```
/// use gpuds_graph::input::random_geometric;
///
/// let g = random_geometric(1 << 12, 7);
/// assert_eq!(g.num_vertices, 1 << 12);
/// assert!(g.src.iter().zip(&g.dst).all(|(u, v)| u < v));
/// assert_eq!(g, random_geometric(1 << 12, 7));
/// ```
pub fn random_geometric(n: u32, seed: u64) -> Coo {
    let r2 = rgg_radius_squared(n);
    let cells = CellPoints::uniform(n, rgg_side(n), seed);
    let side = cells.side;
    let (points, start) = (&cells.points, &cells.start);
    let mut src = Vec::new();
    let mut dst = Vec::new();
    for cell in 0..side * side {
        let (cx, cy) = (cell % side, cell / side);
        // The neighbouring cells of higher index, in increasing order: then every
        // neighbour found has a higher id, and they come out sorted.
        let mut later = [None; 4];
        if cx + 1 < side {
            later[0] = Some(cell + 1);
        }
        if cy + 1 < side {
            later[1] = cx.checked_sub(1).map(|_| cell + side - 1);
            later[2] = Some(cell + side);
            later[3] = (cx + 1 < side).then_some(cell + side + 1);
        }
        for u in start[cell]..start[cell + 1] {
            let p = points[u];
            let own = u + 1..start[cell + 1];
            let others = later.iter().flatten().flat_map(|&c| start[c]..start[c + 1]);
            for v in own.chain(others) {
                let (dx, dy) = (points[v][0] - p[0], points[v][1] - p[1]);
                if dx * dx + dy * dy < r2 {
                    src.push(u as u32);
                    dst.push(v as u32);
                }
            }
        }
    }
    Coo {
        num_vertices: n,
        src,
        dst,
        values: None,
        symmetric: true,
    }
}

/// The grid side for the rgg of `n` points: cells no narrower than the radius
/// (`1/side ≥ r`), and never many more cells than points.
fn rgg_side(n: u32) -> usize {
    let by_radius = (1.0 / rgg_radius_squared(n).sqrt()).floor();
    by_radius.min(f64::from(n).sqrt().ceil().max(1.0)) as usize
}

/// The square of the rgg radius `0.55·sqrt(ln n / n)` (0 for `n < 2`).
fn rgg_radius_squared(n: u32) -> f64 {
    if n < 2 {
        return 0.0;
    }
    0.55 * 0.55 * ln(f64::from(n)) / f64::from(n)
}

/// The natural logarithm of `x ≥ 1` with basic IEEE operations only, so that it gives the
/// same bits on every machine (`f64::ln` calls the platform's math library, whose last
/// bit may differ). `x = m·2^k` with `m` in `[1, 2)`, and `ln m = 2·atanh(t)`,
/// `t = (m - 1)/(m + 1) < 1/3`, whose series has converged after the 41st power.
fn ln(x: f64) -> f64 {
    let bits = x.to_bits();
    let k = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    let t = (m - 1.0) / (m + 1.0);
    let t2 = t * t;
    let mut sum = 0.0;
    for odd in (1..=41).rev().step_by(2) {
        sum = sum * t2 + 1.0 / odd as f64;
    }
    k as f64 * std::f64::consts::LN_2 + 2.0 * t * sum
}

/// The Delaunay triangulation of `n` points uniform in the unit square, the shape of the
/// delaunay_n20 and delaunay_n23 graphs of Table 5.1 (mean degree just under 6: a
/// triangulation with `h` points on the hull has `3n - 3 - h` edges and `2n - 2 - h`
/// triangles). Vertices are numbered in grid-cell order (about one point per cell).
///
/// Each undirected edge is listed once as `(u, v)` with `u < v`, sorted; `symmetric` is
/// true. With fewer than three points there is no triangle and no edge.
///
/// # Examples
///
/// ```
/// use gpuds_graph::input::delaunay;
///
/// let g = delaunay(1000, 1);
/// let mean_degree = 2.0 * g.len() as f64 / 1000.0;
/// assert!(mean_degree > 5.8 && mean_degree < 6.0);
/// ```
pub fn delaunay(n: u32, seed: u64) -> Coo {
    let side = f64::from(n).sqrt().ceil() as usize;
    let cells = CellPoints::uniform(n, side, seed);
    let points: Vec<delaunator::Point> = cells
        .points
        .iter()
        .map(|p| delaunator::Point { x: p[0], y: p[1] })
        .collect();
    let mesh = delaunator::triangulate(&points);
    // Each edge inside the mesh has two half-edges (twins); keep the lower of the two,
    // and every hull edge (no twin).
    let keys = (0..mesh.triangles.len())
        .filter(|&e| mesh.halfedges[e] == delaunator::EMPTY || e < mesh.halfedges[e])
        .map(|e| {
            let (a, b) = (
                mesh.triangles[e],
                mesh.triangles[delaunator::next_halfedge(e)],
            );
            edge_key(a.min(b) as u32, a.max(b) as u32)
        })
        .collect();
    undirected(n, keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_matches_the_math_library() {
        for x in [
            1.0,
            1.5,
            2.0,
            3.0,
            1000.0,
            f64::from(1u32 << 20),
            f64::from(u32::MAX),
        ] {
            let (ours, libm) = (ln(x), x.ln());
            assert!(
                (ours - libm).abs() <= 4.0 * f64::EPSILON * libm.abs().max(1.0),
                "{x}"
            );
        }
    }

    #[test]
    fn cells_hold_their_points_in_order() {
        let cells = CellPoints::uniform(500, 7, 3);
        assert_eq!(cells.start[49], 500);
        for c in 0..49 {
            for p in &cells.points[cells.start[c]..cells.start[c + 1]] {
                let (x, y) = ((p[0] * 7.0) as usize, (p[1] * 7.0) as usize);
                assert_eq!(y * 7 + x, c);
            }
        }
    }

    #[test]
    fn random_geometric_finds_every_close_pair() {
        for (n, seed) in [(300, 1), (1000, 2), (5, 3)] {
            let cells = CellPoints::uniform(n, 1, seed);
            let r2 = rgg_radius_squared(n);
            let p = &cells.points;
            let close =
                |u: usize, v: usize| (p[u][0] - p[v][0]).powi(2) + (p[u][1] - p[v][1]).powi(2) < r2;
            // One cell keeps the generation order; the graph numbers points by cell,
            // so compare the pairs' coordinates.
            let mut expected: Vec<[u64; 4]> = (0..p.len())
                .flat_map(|u| {
                    (u + 1..p.len())
                        .filter(move |&v| close(u, v))
                        .map(move |v| (u, v))
                })
                .map(|(u, v)| order(p[u], p[v]))
                .collect();
            expected.sort_unstable();
            let g = random_geometric(n, seed);
            let by_id = CellPoints::uniform(n, rgg_side(n), seed).points;
            let mut found: Vec<[u64; 4]> = g
                .src
                .iter()
                .zip(&g.dst)
                .map(|(&u, &v)| order(by_id[u as usize], by_id[v as usize]))
                .collect();
            found.sort_unstable();
            assert_eq!(found, expected);
        }
    }

    /// A pair of points as comparable bits, the smaller point first.
    fn order(a: [f64; 2], b: [f64; 2]) -> [u64; 4] {
        let (a, b) = (
            [a[0].to_bits(), a[1].to_bits()],
            [b[0].to_bits(), b[1].to_bits()],
        );
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        [lo[0], lo[1], hi[0], hi[1]]
    }

    #[test]
    fn tiny_inputs_have_no_edges() {
        for n in 0..3 {
            assert!(delaunay(n, 1).is_empty());
        }
        assert!(random_geometric(0, 1).is_empty());
        assert!(random_geometric(1, 1).is_empty());
    }
}
