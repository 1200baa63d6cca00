//! `Coo`, a graph as a list of (source, destination[, value]) entries, and the sorting and
//! deduplication every other input module builds on.

use thiserror::Error;

/// A graph as coordinate lists: entry `i` is the edge `src[i] → dst[i]`, with the value
/// `values[i]` when the graph carries values.
///
/// `symmetric: true` means the graph is undirected and each undirected edge is listed once
/// (in either orientation); a graph built from it inserts both directions. `symmetric:
/// false` means every listed entry is one directed edge.
///
/// Vertex ids are expected below `num_vertices` and the three lists to have one length;
/// [`Coo::check`] says whether they do. The methods never panic when they do not: they
/// read the entries the lists have in common and count every id they see as a vertex.
///
/// # Examples
///
/// ```
/// use gpuds_graph::input::Coo;
///
/// // A triangle listed once per undirected edge, one edge twice and a self loop.
/// let coo = Coo::from_pairs(3, &[(0, 1), (1, 2), (2, 0), (1, 0), (2, 2)], true);
/// let both = coo.symmetrized();
/// assert_eq!(both.src, vec![0, 0, 1, 1, 2, 2]);
/// assert_eq!(both.dst, vec![1, 2, 0, 2, 0, 1]);
/// assert!(!both.symmetric);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coo {
    /// The number of vertices; ids run from 0 to `num_vertices - 1`.
    pub num_vertices: u32,
    /// Source vertex of each entry.
    pub src: Vec<u32>,
    /// Destination vertex of each entry.
    pub dst: Vec<u32>,
    /// One value per entry (a weight, or an `f32`'s bits for a real Matrix Market file),
    /// or `None` for a graph without values.
    pub values: Option<Vec<u32>>,
    /// Whether each undirected edge is listed once (see the type's documentation).
    pub symmetric: bool,
}

/// What [`Coo::check`] found wrong with a [`Coo`].
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum CooError {
    /// `src`, `dst` and `values` do not have one length.
    #[error("the lists differ in length: {src} sources, {dst} destinations, {values:?} values")]
    LengthMismatch {
        /// `src.len()`.
        src: usize,
        /// `dst.len()`.
        dst: usize,
        /// `values.len()`, if there are values.
        values: Option<usize>,
    },
    /// Entry `index` names a vertex id not below `num_vertices`.
    #[error("entry {index}: vertex {id} is not below the vertex count {num_vertices}")]
    VertexOutOfRange {
        /// The entry's position in the lists.
        index: usize,
        /// The offending id.
        id: u32,
        /// The graph's vertex count.
        num_vertices: u32,
    },
}

impl Coo {
    /// A graph without values from `(src, dst)` pairs.
    ///
    /// # Examples
    ///
    /// ```
    /// use gpuds_graph::input::Coo;
    ///
    /// let square = Coo::from_pairs(4, &[(0, 1), (1, 2), (2, 3), (3, 0)], true);
    /// assert_eq!(square.len(), 4);
    /// assert_eq!(square.check(), Ok(()));
    /// ```
    pub fn from_pairs(num_vertices: u32, pairs: &[(u32, u32)], symmetric: bool) -> Coo {
        Coo {
            num_vertices,
            src: pairs.iter().map(|p| p.0).collect(),
            dst: pairs.iter().map(|p| p.1).collect(),
            values: None,
            symmetric,
        }
    }

    /// The number of listed entries (`src.len()`).
    ///
    /// # Examples
    ///
    /// ```
    /// use gpuds_graph::input::Coo;
    ///
    /// assert_eq!(Coo::from_pairs(2, &[(0, 1)], true).len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.src.len()
    }

    /// Whether no entry is listed.
    ///
    /// # Examples
    ///
    /// ```
    /// use gpuds_graph::input::Coo;
    ///
    /// assert!(Coo::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }

    /// Checks that the lists have one length and every id is below `num_vertices`,
    /// naming the first entry that is not.
    ///
    /// # Examples
    ///
    /// ```
    /// use gpuds_graph::input::{Coo, CooError};
    ///
    /// let coo = Coo::from_pairs(2, &[(0, 1), (1, 2)], false);
    /// assert_eq!(
    ///     coo.check(),
    ///     Err(CooError::VertexOutOfRange { index: 1, id: 2, num_vertices: 2 })
    /// );
    /// ```
    pub fn check(&self) -> Result<(), CooError> {
        let values = self.values.as_ref().map(Vec::len);
        if self.src.len() != self.dst.len() || values.is_some_and(|v| v != self.src.len()) {
            return Err(CooError::LengthMismatch {
                src: self.src.len(),
                dst: self.dst.len(),
                values,
            });
        }
        for (index, (&s, &d)) in self.src.iter().zip(&self.dst).enumerate() {
            if let Some(id) = [s, d].into_iter().find(|&id| id >= self.num_vertices) {
                return Err(CooError::VertexOutOfRange {
                    index,
                    id,
                    num_vertices: self.num_vertices,
                });
            }
        }
        Ok(())
    }

    /// The listed entries as `(src, dst, value)`.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (u32, u32, Option<u32>)> + '_ {
        let mut values = self.values.as_deref().map(|v| v.iter().copied());
        self.src
            .iter()
            .zip(&self.dst)
            .map_while(move |(&s, &d)| match values.as_mut() {
                None => Some((s, d, None)),
                Some(values) => values.next().map(|v| (s, d, Some(v))),
            })
    }

    /// `num_vertices`, raised to cover every id listed (so `u32::MAX + 1` at most).
    pub(crate) fn vertex_bound(&self) -> u64 {
        let max = self.src.iter().chain(&self.dst).copied().max();
        max.map_or(0, |m| u64::from(m) + 1)
            .max(u64::from(self.num_vertices))
    }

    /// [`Coo::vertex_bound`] as a vertex count (`u32::MAX` when an id is `u32::MAX`).
    pub(crate) fn vertex_count(&self) -> u32 {
        u32::try_from(self.vertex_bound()).unwrap_or(u32::MAX)
    }

    /// The directed graph with both directions of every edge: self loops dropped,
    /// duplicates removed (the value listed last wins, as when the entries are inserted
    /// one after another), sorted by `(src, dst)`, `symmetric: false`. Each listed entry
    /// counts as an undirected edge, whether or not `self` is symmetric.
    ///
    /// # Examples
    ///
    /// ```
    /// use gpuds_graph::input::Coo;
    ///
    /// let mut coo = Coo::from_pairs(3, &[(2, 1), (1, 2), (0, 0)], false);
    /// coo.values = Some(vec![10, 20, 30]);
    /// let both = coo.symmetrized();
    /// assert_eq!((both.src, both.dst), (vec![1, 2], vec![2, 1]));
    /// assert_eq!(both.values, Some(vec![20, 20]));
    /// ```
    pub fn symmetrized(&self) -> Coo {
        let mut keys = Vec::with_capacity(2 * self.len());
        let mut values = self
            .values
            .as_ref()
            .map(|_| Vec::with_capacity(2 * self.len()));
        for (s, d, v) in self.entries().filter(|&(s, d, _)| s != d) {
            keys.extend([edge_key(s, d), edge_key(d, s)]);
            if let (Some(values), Some(v)) = (values.as_mut(), v) {
                values.extend([v, v]);
            }
        }
        Coo::from_keys(self.vertex_count(), keys, values, false)
    }

    /// The same graph sorted by `(src, dst)` with duplicate entries removed (the value
    /// listed last wins). A symmetric graph's entries are first written as
    /// `(min, max)`, so an undirected edge listed in both orientations is kept once.
    /// Self loops are kept.
    ///
    /// # Examples
    ///
    /// ```
    /// use gpuds_graph::input::Coo;
    ///
    /// let coo = Coo::from_pairs(3, &[(2, 1), (1, 2), (0, 1)], true).sorted_dedup();
    /// assert_eq!((coo.src, coo.dst), (vec![0, 1], vec![1, 2]));
    /// ```
    pub fn sorted_dedup(&self) -> Coo {
        let (keys, values) = self
            .entries()
            .map(|(s, d, v)| match self.symmetric {
                true => (edge_key(s.min(d), s.max(d)), v),
                false => (edge_key(s, d), v),
            })
            .unzip::<_, _, Vec<u64>, Vec<Option<u32>>>();
        let values = self
            .values
            .as_ref()
            .map(|_| values.into_iter().flatten().collect());
        Coo::from_keys(self.vertex_count(), keys, values, self.symmetric)
    }

    /// Sorts `keys` (see [`edge_key`]), drops repeated keys keeping the value listed last,
    /// and unpacks them into a graph.
    pub(crate) fn from_keys(
        num_vertices: u32,
        keys: Vec<u64>,
        values: Option<Vec<u32>>,
        symmetric: bool,
    ) -> Coo {
        let (keys, values) = sort_dedup(keys, values);
        Coo {
            num_vertices,
            src: keys.iter().map(|&k| (k >> 32) as u32).collect(),
            dst: keys.iter().map(|&k| k as u32).collect(),
            values,
            symmetric,
        }
    }

    /// The number of listed entries at each vertex: an entry counts at both ends when
    /// the graph is symmetric (a self loop twice), at its source otherwise. On a
    /// deduplicated graph without self loops these are the vertex degrees.
    ///
    /// # Examples
    ///
    /// ```
    /// use gpuds_graph::input::Coo;
    ///
    /// let path = Coo::from_pairs(3, &[(0, 1), (1, 2)], true);
    /// assert_eq!(path.degrees(), vec![1, 2, 1]);
    /// ```
    pub fn degrees(&self) -> Vec<u32> {
        let mut degrees = vec![0u32; self.vertex_bound() as usize];
        for (s, d, _) in self.entries() {
            degrees[s as usize] += 1;
            if self.symmetric {
                degrees[d as usize] += 1;
            }
        }
        degrees
    }
}

/// An edge packed so that sorting keys sorts edges by `(src, dst)`.
pub(crate) fn edge_key(src: u32, dst: u32) -> u64 {
    (u64::from(src) << 32) | u64::from(dst)
}

/// Sorts `keys` and removes repeated keys; with values (one per key), the value listed
/// last among equal keys is kept.
fn sort_dedup(mut keys: Vec<u64>, values: Option<Vec<u32>>) -> (Vec<u64>, Option<Vec<u32>>) {
    let Some(values) = values else {
        keys.sort_unstable();
        keys.dedup();
        return (keys, None);
    };
    let mut pairs: Vec<(u64, u32)> = keys.into_iter().zip(values).collect();
    // Stable, so that equal keys keep their listed order and the last one wins.
    pairs.sort_by_key(|p| p.0);
    let mut kept: Vec<(u64, u32)> = Vec::with_capacity(pairs.len());
    for (key, value) in pairs {
        match kept.last_mut() {
            Some(last) if last.0 == key => last.1 = value,
            _ => kept.push((key, value)),
        }
    }
    let (keys, values) = kept.into_iter().unzip();
    (keys, Some(values))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_stop_at_the_shortest_list() {
        let coo = Coo {
            num_vertices: 2,
            src: vec![0, 1, 1],
            dst: vec![1, 0],
            values: Some(vec![7]),
            symmetric: false,
        };
        assert_eq!(coo.entries().collect::<Vec<_>>(), vec![(0, 1, Some(7))]);
        assert_eq!(
            coo.check(),
            Err(CooError::LengthMismatch {
                src: 3,
                dst: 2,
                values: Some(1)
            })
        );
    }

    #[test]
    fn ids_beyond_the_count_raise_the_bound_instead_of_panicking() {
        let coo = Coo::from_pairs(2, &[(0, 5), (u32::MAX, 1)], true);
        assert_eq!(coo.vertex_bound(), 1 << 32);
        assert_eq!(coo.vertex_count(), u32::MAX);
        let small = Coo::from_pairs(2, &[(0, 5)], true);
        assert_eq!(small.degrees(), vec![1, 0, 0, 0, 0, 1]);
        assert_eq!(small.symmetrized().num_vertices, 6);
    }

    #[test]
    fn the_value_listed_last_wins() {
        let (keys, values) = sort_dedup(vec![5, 3, 5, 3, 5], Some(vec![1, 2, 3, 4, 5]));
        assert_eq!(keys, vec![3, 5]);
        assert_eq!(values, Some(vec![4, 5]));
    }

    #[test]
    fn sorted_dedup_keeps_direction_when_not_symmetric() {
        let coo = Coo::from_pairs(3, &[(2, 1), (1, 2), (2, 1), (1, 1)], false).sorted_dedup();
        assert_eq!((coo.src, coo.dst), (vec![1, 1, 2], vec![1, 2, 1]));
    }
}
