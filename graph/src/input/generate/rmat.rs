//! R-MAT (recursive matrix) scale-free graphs, Chakrabarti, Zhan and Faloutsos (2004):
//! the soc-LiveJournal1 / hollywood-2009 / soc-orkut rows of Table 5.1.

use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};

use super::{below, undirected};
use crate::input::coo::edge_key;
use crate::input::Coo;

/// The parameters of an R-MAT graph: each generated edge picks, at each of `scale`
/// levels, one quadrant of the adjacency matrix with probabilities `a` (top left), `b`
/// (top right), `c` (bottom left) and `1 - a - b - c` (bottom right).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RmatParams {
    /// Probability of the top-left quadrant (both ids' bit 0).
    pub a: f64,
    /// Probability of the top-right quadrant (destination bit 1).
    pub b: f64,
    /// Probability of the bottom-left quadrant (source bit 1).
    pub c: f64,
    /// Edges generated per vertex, before self loops and duplicates are removed.
    pub edge_factor: u32,
}

impl RmatParams {
    /// soc-LiveJournal1-like: the Graph500 quadrants (0.57, 0.19, 0.19) and 14 edges
    /// per vertex. At scale 22: mean degree 26.9, σ 307, maximum 148 K (Table 5.1's
    /// soc-LiveJournal1: 17.2, 50.65 and 20 K over 4.8 M vertices).
    pub const SOC_LIVEJOURNAL: RmatParams = RmatParams {
        a: 0.57,
        b: 0.19,
        c: 0.19,
        edge_factor: 14,
    };
    /// hollywood-2009-like: a heavier skew (0.65, 0.15, 0.15) and 50 edges per vertex.
    /// At scale 20: mean degree 68.0, σ 636, maximum 121 K (Table 5.1's hollywood-2009:
    /// 98.9, 271.70 and 11 K over 1.1 M vertices).
    pub const HOLLYWOOD: RmatParams = RmatParams {
        a: 0.65,
        b: 0.15,
        c: 0.15,
        edge_factor: 50,
    };
    /// soc-orkut-like: the Graph500 quadrants and 40 edges per vertex. At scale 21: mean
    /// degree 72.7, σ 648, maximum 187 K (Table 5.1's soc-orkut: 70.9, 139.72 and 27 K
    /// over 3 M vertices).
    pub const SOC_ORKUT: RmatParams = RmatParams {
        a: 0.57,
        b: 0.19,
        c: 0.19,
        edge_factor: 40,
    };
}

/// An undirected R-MAT graph of `2^scale` vertices: `edge_factor · 2^scale` edges are
/// generated, then self loops and duplicates are removed (so there are fewer). Vertex
/// ids are then relabelled by a seeded random permutation, as Graph500 does, so that the
/// high-degree vertices are spread over the id range instead of sitting at id 0.
///
/// Each undirected edge is listed once as `(u, v)` with `u < v`, sorted; `symmetric` is
/// true. `scale` is capped at 31 (ids stay below `2^31`); quadrant probabilities are clamped to `[0, 1]`.
///
/// # Examples
///
/// ```
/// use gpuds_graph::input::{rmat, RmatParams};
///
/// let g = rmat(10, 8, (0.57, 0.19, 0.19), 3);
/// assert_eq!(g.num_vertices, 1024);
/// assert!(g.len() < 8 * 1024);
/// assert_eq!(g, rmat(10, 8, (0.57, 0.19, 0.19), 3));
/// ```
pub fn rmat(scale: u32, edge_factor: u32, (a, b, c): (f64, f64, f64), seed: u64) -> Coo {
    let scale = scale.min(31);
    let n = 1u64 << scale;
    // Quadrant thresholds on a 32-bit draw: below ta → a, below tb → b, below tc → c.
    let threshold = |p: f64| (p.clamp(0.0, 1.0) * 4_294_967_296.0) as u64;
    let (ta, tb, tc) = (threshold(a), threshold(a + b), threshold(a + b + c));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let label = permutation(n, &mut rng);
    let edges = u64::from(edge_factor) << scale;
    let mut keys = Vec::with_capacity(usize::try_from(edges).unwrap_or(0).min(1 << 30));
    for _ in 0..edges {
        let (mut u, mut v) = (0u64, 0u64);
        for _ in 0..scale {
            let draw = u64::from(rng.next_u32());
            let (row, col) = match draw {
                d if d < ta => (0, 0),
                d if d < tb => (0, 1),
                d if d < tc => (1, 0),
                _ => (1, 1),
            };
            u = (u << 1) | row;
            v = (v << 1) | col;
        }
        let (u, v) = (label[u as usize], label[v as usize]);
        if u != v {
            keys.push(edge_key(u.min(v), u.max(v)));
        }
    }
    undirected(n as u32, keys)
}

/// A uniformly random permutation of `0..n` (Fisher–Yates).
fn permutation(n: u64, rng: &mut ChaCha8Rng) -> Vec<u32> {
    let mut label: Vec<u32> = (0..n).map(|i| i as u32).collect();
    for i in (1..label.len()).rev() {
        label.swap(i, below(rng, i as u64 + 1) as usize);
    }
    label
}

/// [`rmat`] with [`RmatParams::SOC_LIVEJOURNAL`]: a soc-LiveJournal1-like social graph
/// of `2^scale` vertices (the Table 5.1 size is about scale 22).
///
/// # Examples
///
/// ```
/// use gpuds_graph::input::soc_livejournal_like;
///
/// let g = soc_livejournal_like(12, 1);
/// let degrees = g.degrees();
/// let max = *degrees.iter().max().unwrap() as f64;
/// let mean = 2.0 * g.len() as f64 / degrees.len() as f64;
/// assert!(max > 10.0 * mean);
/// ```
pub fn soc_livejournal_like(scale: u32, seed: u64) -> Coo {
    rmat_with(RmatParams::SOC_LIVEJOURNAL, scale, seed)
}

/// [`rmat`] with [`RmatParams::HOLLYWOOD`]: a hollywood-2009-like collaboration graph of
/// `2^scale` vertices (the Table 5.1 size is about scale 20).
///
/// # Examples
///
/// ```
/// use gpuds_graph::input::hollywood_like;
///
/// let g = hollywood_like(10, 1);
/// assert_eq!(g.num_vertices, 1024);
/// ```
pub fn hollywood_like(scale: u32, seed: u64) -> Coo {
    rmat_with(RmatParams::HOLLYWOOD, scale, seed)
}

/// [`rmat`] with the parameters of `params`.
pub(crate) fn rmat_with(params: RmatParams, scale: u32, seed: u64) -> Coo {
    rmat(
        scale,
        params.edge_factor,
        (params.a, params.b, params.c),
        seed,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutations_hold_every_id_once() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut label = permutation(1000, &mut rng);
        assert_ne!(label, (0..1000).collect::<Vec<u32>>());
        label.sort_unstable();
        assert_eq!(label, (0..1000).collect::<Vec<u32>>());
    }

    #[test]
    fn all_mass_on_one_quadrant_gives_one_vertex_pair() {
        // a = 0, b = 1: every edge goes from the relabelled 0 to the relabelled n - 1.
        let g = rmat(6, 4, (0.0, 1.0, 0.0), 9);
        assert_eq!(g.len(), 1);
        // With a = 1 every edge is a self loop, all dropped.
        assert!(rmat(6, 4, (1.0, 0.0, 0.0), 9).is_empty());
    }
}
