//! Road-like graphs: the low, narrow degree distribution of road_usa, germany_osm and
//! luxembourg_osm (Table 5.1: mean degree 2.1–2.4, maximum 6–13).

use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};

use super::undirected;
use crate::input::coo::edge_key;
use crate::input::Coo;

/// The vertex has an edge to its west neighbour `v - 1`.
const WEST: u8 = 1;
/// The vertex has an edge to its north neighbour `v - width`.
const NORTH: u8 = 2;
/// The vertex has a diagonal shortcut to `v - width - 1`.
const DIAGONAL: u8 = 4;
/// Probability (of 2^31) that the grid edge a vertex did not take into the tree is kept.
const EXTRA: u64 = (0.15 * (1u64 << 31) as f64) as u64;
/// Probability (of 2^32) of a diagonal shortcut at a vertex.
const SHORTCUT: u64 = (0.03 * (1u64 << 32) as f64) as u64;

/// A road-like graph on a `width × height` grid (vertex `y·width + x` at column `x`,
/// row `y`): a random spanning tree of the grid (each vertex joins the tree through its
/// west or north neighbour, chosen by a coin; the binary-tree maze), plus 15 % of the
/// grid edges the tree left out and diagonal shortcuts at 3 % of the vertices. The graph
/// is connected, every vertex has degree 1 to 6, and the mean degree is about 2.36.
///
/// Each undirected edge is listed once as `(u, v)` with `u < v`, sorted; `symmetric` is
/// true. The grid is cut to the rows whose ids fit in a `u32`.
///
/// # Examples
///
/// ```
/// use gpuds_graph::input::road_grid;
///
/// let g = road_grid(100, 50, 4);
/// assert_eq!(g.num_vertices, 5000);
/// let mean_degree = 2.0 * g.len() as f64 / 5000.0;
/// assert!(mean_degree > 2.2 && mean_degree < 2.5);
/// ```
pub fn road_grid(width: u32, height: u32, seed: u64) -> Coo {
    let height = height.min(u32::MAX / width.max(1));
    let (w, n) = (width as usize, width as usize * height as usize);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let flags: Vec<u8> = (0..n)
        .map(|v| {
            let draw = rng.next_u64();
            let (has_west, has_north) = (v % w > 0, v >= w);
            let (tree, other) = match (has_west, has_north) {
                (true, true) if draw & 1 == 0 => (WEST, NORTH),
                (true, true) => (NORTH, WEST),
                (true, false) => (WEST, 0),
                (false, true) => (NORTH, 0),
                (false, false) => (0, 0),
            };
            let extra = if (draw >> 1) & 0x7fff_ffff < EXTRA {
                other
            } else {
                0
            };
            let shortcut = has_west && has_north && draw >> 32 < SHORTCUT;
            tree | extra | if shortcut { DIAGONAL } else { 0 }
        })
        .collect();
    // The flags live at the higher end of each edge; walking the lower ends in order,
    // and each one's higher neighbours in id order, lists the edges sorted.
    let mut keys = Vec::with_capacity(n + n / 4);
    for u in 0..n {
        for (v, flag) in [(u + 1, WEST), (u + w, NORTH), (u + w + 1, DIAGONAL)] {
            if flags.get(v).is_some_and(|f| f & flag != 0) {
                keys.push(edge_key(u as u32, v as u32));
            }
        }
    }
    undirected(n as u32, keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_edge_joins_grid_neighbours() {
        let (w, h) = (37u32, 23u32);
        let g = road_grid(w, h, 11);
        for (&u, &v) in g.src.iter().zip(&g.dst) {
            let (ux, uy, vx, vy) = (u % w, u / w, v % w, v / w);
            let step = (vx.abs_diff(ux), vy.abs_diff(uy));
            assert!(
                matches!(step, (1, 0) | (0, 1)) || (vx == ux + 1 && vy == uy + 1),
                "{u} {v}"
            );
        }
    }

    #[test]
    fn degenerate_grids() {
        assert!(road_grid(0, 10, 1).is_empty());
        assert_eq!(road_grid(1, 10, 1).len(), 9);
        assert_eq!(road_grid(10, 1, 1).len(), 9);
    }
}
