//! CPU references to check the GPU graph against: a sorted CSR and an exact triangle
//! count.

use crate::input::coo::edge_key;
use crate::input::Coo;

/// A graph in compressed sparse rows: the neighbours of vertex `u` are
/// `cols[row_offsets[u]..row_offsets[u + 1]]`, sorted and without duplicates.
///
/// # Examples
///
/// ```
/// use gpuds_graph::input::{reference::Csr, Coo};
///
/// let path = Coo::from_pairs(3, &[(1, 2), (0, 1)], true);
/// let csr = Csr::from_coo(&path, true);
/// assert_eq!(csr.row_offsets, vec![0, 1, 3, 4]);
/// assert_eq!(csr.cols, vec![1, 0, 2, 1]);
/// assert_eq!(csr.neighbours(1), &[0, 2]);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Csr {
    /// The number of vertices (rows).
    pub num_vertices: u32,
    /// `num_vertices + 1` offsets into `cols`, from 0 to `cols.len()`.
    pub row_offsets: Vec<u64>,
    /// The neighbours of each vertex in turn, each row sorted.
    pub cols: Vec<u32>,
}

impl Csr {
    /// The CSR of `coo`'s entries, each entry also reversed when `symmetric_both_ways`
    /// (an undirected graph: pass `coo.symmetric`). Repeated entries are kept once; self
    /// loops are kept. Ids at or beyond `num_vertices` add rows to cover them.
    ///
    /// # Examples
    ///
    /// ```
    /// use gpuds_graph::input::{reference::Csr, Coo};
    ///
    /// let directed = Coo::from_pairs(3, &[(2, 0), (0, 2), (0, 1), (0, 2)], false);
    /// let csr = Csr::from_coo(&directed, false);
    /// assert_eq!(csr.row_offsets, vec![0, 2, 2, 3]);
    /// assert_eq!(csr.cols, vec![1, 2, 0]);
    /// ```
    pub fn from_coo(coo: &Coo, symmetric_both_ways: bool) -> Csr {
        let mut keys = Vec::with_capacity(coo.len() * (1 + usize::from(symmetric_both_ways)));
        for (s, d, _) in coo.entries() {
            keys.push(edge_key(s, d));
            if symmetric_both_ways {
                keys.push(edge_key(d, s));
            }
        }
        keys.sort_unstable();
        keys.dedup();
        Csr::from_sorted_keys(coo.vertex_bound(), &keys)
    }

    /// The CSR of `rows` rows from sorted, distinct `edge_key`s whose ids are below
    /// `rows` (`num_vertices` saturates at `u32::MAX` when `rows` is `2^32`).
    fn from_sorted_keys(rows: u64, keys: &[u64]) -> Csr {
        let rows = rows as usize;
        let mut row_offsets = vec![0u64; rows + 1];
        for &key in keys {
            row_offsets[(key >> 32) as usize + 1] += 1;
        }
        for u in 0..rows {
            row_offsets[u + 1] += row_offsets[u];
        }
        let num_vertices = u32::try_from(rows).unwrap_or(u32::MAX);
        Csr {
            num_vertices,
            row_offsets,
            cols: keys.iter().map(|&k| k as u32).collect(),
        }
    }

    /// The sorted neighbours of `u` (empty for a vertex beyond the graph).
    pub fn neighbours(&self, u: u32) -> &[u32] {
        let row = |i: usize| self.row_offsets.get(i).map(|&o| o as usize);
        match (row(u as usize), row(u as usize + 1)) {
            (Some(start), Some(end)) => &self.cols[start..end],
            _ => &[],
        }
    }
}

/// The number of triangles of `coo` as an undirected simple graph: every entry is an
/// undirected edge whatever `coo.symmetric` says, repeated edges count once, self loops
/// not at all, and each triangle `{u, v, w}` counts once.
///
/// Each edge is directed from the endpoint of lower (degree, id) to the higher, so no
/// vertex has more than `sqrt(2m)` out-neighbours; a triangle is then found exactly once,
/// at its lowest vertex `u` and middle vertex `v`, as a common out-neighbour of the two
/// (sorted lists, intersected by merging). O(m·sqrt(m)) at worst.
///
/// # Examples
///
/// ```
/// use gpuds_graph::input::{reference::triangle_count, Coo};
///
/// let k4 = Coo::from_pairs(4, &[(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)], true);
/// assert_eq!(triangle_count(&k4), 4);
/// ```
pub fn triangle_count(coo: &Coo) -> u64 {
    let mut keys: Vec<u64> = coo
        .entries()
        .filter(|&(s, d, _)| s != d)
        .map(|(s, d, _)| edge_key(s.min(d), s.max(d)))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let n = coo.vertex_bound();
    let mut degree = vec![0u32; n as usize];
    for &key in &keys {
        degree[(key >> 32) as usize] += 1;
        degree[key as u32 as usize] += 1;
    }
    let rank = |v: u32| (degree[v as usize], v);
    for key in keys.iter_mut() {
        let (u, v) = ((*key >> 32) as u32, *key as u32);
        if rank(v) < rank(u) {
            *key = edge_key(v, u);
        }
    }
    keys.sort_unstable();
    let out = Csr::from_sorted_keys(n, &keys);
    let mut triangles = 0;
    for u in 0..out.row_offsets.len() - 1 {
        let mine = &out.cols[out.row_offsets[u] as usize..out.row_offsets[u + 1] as usize];
        for &v in mine {
            triangles += sorted_intersection_len(mine, out.neighbours(v));
        }
    }
    triangles
}

/// The number of values two sorted, duplicate-free slices share.
fn sorted_intersection_len(a: &[u32], b: &[u32]) -> u64 {
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    common
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intersections() {
        assert_eq!(sorted_intersection_len(&[1, 3, 5, 7], &[0, 3, 4, 7, 9]), 2);
        assert_eq!(sorted_intersection_len(&[], &[1]), 0);
    }

    #[test]
    fn neighbours_beyond_the_graph_are_empty() {
        let csr = Csr::from_coo(&Coo::from_pairs(2, &[(0, 1)], false), false);
        assert_eq!(csr.neighbours(0), &[1]);
        assert!(csr.neighbours(7).is_empty());
        assert!(csr.neighbours(u32::MAX).is_empty());
    }
}
