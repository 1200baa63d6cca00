//! [`SortedGraph::validate`] and [`SortedGraph::stats`]: a host copy of the dictionary and
//! the pool, and the invariants checked on it (a pure function, tested on synthetic
//! images without a GPU).

use super::{Segment, SortedGraph, MIN_CAPACITY};
use crate::error::{Error, Result};

/// Shape and memory of a [`SortedGraph`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SortedStats {
    /// Vertex ids in the dictionary.
    pub vertex_ids: u32,
    /// Stored entries (the sum of the degrees).
    pub entries: u64,
    /// The largest degree.
    pub max_degree: u32,
    /// Vertices with at least one edge.
    pub nonempty_vertices: u64,
    /// Words of all segments (the sum of the capacities).
    pub capacity_words: u64,
    /// Words of the pool handed out: segments and the holes moved segments left.
    pub pool_top: u64,
    /// Words of the pool allocated.
    pub pool_words: u64,
    /// Bytes of the dictionary (allocated).
    pub dictionary_bytes: u64,
    /// Bytes of the pool (allocated).
    pub pool_bytes: u64,
    /// Entries per segment word (`entries / capacity_words`; 1 when empty).
    pub fill: f64,
}

/// A host copy of a sorted graph.
#[derive(Clone, Debug, Default)]
pub(super) struct Image {
    pub segments: Vec<Segment>,
    /// Entries of the dictionary past the ids in use (allocated room; all zero).
    pub spare: Vec<Segment>,
    /// `pool[..pool_top]`.
    pub pool: Vec<u32>,
    pub directed: bool,
    /// The host's entry counter.
    pub entries: u64,
}

impl Image {
    /// Every invariant of the graph, or the first broken one.
    pub fn check(&self) -> std::result::Result<(), String> {
        let n = self.segments.len() as u64;
        let top = self.pool.len() as u64;
        if let Some(i) = self.spare.iter().position(|s| *s != Segment::default()) {
            return Err(format!(
                "dictionary entry {} past the {n} ids is not empty",
                n + i as u64
            ));
        }
        let mut sum = 0u64;
        let mut used: Vec<(u64, u64, usize)> = Vec::new();
        for (u, s) in self.segments.iter().enumerate() {
            if s.degree > s.capacity {
                return Err(format!(
                    "vertex {u}: degree {} above its capacity {}",
                    s.degree, s.capacity
                ));
            }
            if s.capacity == 0 {
                continue;
            }
            let pow2 = s.capacity.is_power_of_two() || s.capacity == u32::MAX;
            if !pow2 || s.capacity < MIN_CAPACITY {
                return Err(format!(
                    "vertex {u}: capacity {} is not a power of two of at least {MIN_CAPACITY}",
                    s.capacity
                ));
            }
            let end = s.offset.checked_add(u64::from(s.capacity));
            if end.is_none_or(|e| e > top) {
                return Err(format!(
                    "vertex {u}: segment [{}, +{}) passes the pool's top {top}",
                    s.offset, s.capacity
                ));
            }
            used.push((s.offset, u64::from(s.capacity), u));
            let list = self.list(u);
            for (k, &v) in list.iter().enumerate() {
                if u64::from(v) >= n {
                    return Err(format!(
                        "vertex {u}: neighbour {v} is past the dictionary ({n} ids)"
                    ));
                }
                if v as usize == u {
                    return Err(format!("vertex {u}: a self loop"));
                }
                if k > 0 && list[k - 1] >= v {
                    return Err(format!(
                        "vertex {u}: list not strictly increasing at position {k} ({} then {v})",
                        list[k - 1]
                    ));
                }
                if !self.directed && self.list(v as usize).binary_search(&(u as u32)).is_err() {
                    return Err(format!(
                        "edge ({u}, {v}) is stored but ({v}, {u}) is not (undirected graph)"
                    ));
                }
            }
            sum += u64::from(s.degree);
        }
        used.sort_unstable();
        for w in used.windows(2) {
            if w[0].0 + w[0].1 > w[1].0 {
                return Err(format!(
                    "the segments of vertices {} and {} overlap",
                    w[0].2, w[1].2
                ));
            }
        }
        if sum != self.entries {
            return Err(format!(
                "the degrees sum to {sum} but the graph counts {} entries",
                self.entries
            ));
        }
        Ok(())
    }

    /// Vertex `u`'s list (empty when its segment lies outside the copy).
    fn list(&self, u: usize) -> &[u32] {
        let s = self.segments[u];
        let start = s.offset as usize;
        self.pool
            .get(start..start.saturating_add(s.degree as usize))
            .unwrap_or(&[])
    }

    pub fn stats(&self, pool_words: u64, dictionary_entries: u64) -> SortedStats {
        let capacity_words: u64 = self.segments.iter().map(|s| u64::from(s.capacity)).sum();
        let entries: u64 = self.segments.iter().map(|s| u64::from(s.degree)).sum();
        SortedStats {
            vertex_ids: self.segments.len() as u32,
            entries,
            max_degree: self.segments.iter().map(|s| s.degree).max().unwrap_or(0),
            nonempty_vertices: self.segments.iter().filter(|s| s.degree > 0).count() as u64,
            capacity_words,
            pool_top: self.pool.len() as u64,
            pool_words,
            dictionary_bytes: dictionary_entries * std::mem::size_of::<Segment>() as u64,
            pool_bytes: pool_words * 4,
            fill: if capacity_words == 0 {
                1.0
            } else {
                entries as f64 / capacity_words as f64
            },
        }
    }
}

impl SortedGraph {
    fn image(&self) -> Result<Image> {
        let stream = self.gpu.stream().clone();
        let all = stream.clone_dtoh(&self.dict)?;
        let n = self.num_ids as usize;
        let top = gpuds_core::size::to_usize(self.pool_top, "the pool's top")?;
        let pool = if top == 0 {
            Vec::new()
        } else {
            stream.clone_dtoh(&self.pool.slice(..top))?
        };
        Ok(Image {
            segments: all[..n].to_vec(),
            spare: all[n..].to_vec(),
            pool,
            directed: self.config.directed,
            entries: self.entries,
        })
    }

    /// Checks every invariant on a host copy: each list strictly increasing, without
    /// self loops, every neighbour in the dictionary; degrees within power-of-two
    /// capacities and summing to [`num_entries`](Self::num_entries); segments inside
    /// the pool's used part and never overlapping; unused dictionary entries empty; an
    /// undirected graph holds each edge in both directions. Synchronizes; copies the
    /// whole graph.
    ///
    /// # Examples
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut g = gpuds_graph::sorted::SortedGraph::new(&gpu, 3)?;
    /// g.insert_edges(&[0, 1], &[1, 2])?;
    /// g.validate()?;
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn validate(&self) -> Result<()> {
        self.image()?.check().map_err(Error::Invalid)
    }

    /// Memory, capacities and degrees (see [`SortedStats`]). Synchronizes; copies the
    /// whole graph.
    ///
    /// # Examples
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut g = gpuds_graph::sorted::SortedGraph::new(&gpu, 3)?;
    /// g.insert_edges(&[0, 0], &[1, 2])?;
    /// let stats = g.stats()?;
    /// assert_eq!((stats.entries, stats.max_degree), (4, 2));
    /// # Ok::<(), gpuds_graph::Error>(())
    /// ```
    pub fn stats(&self) -> Result<SortedStats> {
        Ok(self
            .image()?
            .stats(self.pool.len() as u64, self.dict.len() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(offset: u64, capacity: u32, degree: u32) -> Segment {
        Segment {
            offset,
            capacity,
            degree,
        }
    }

    /// The path 0 - 1 - 2, undirected: 0: [1], 1: [0, 2], 2: [1].
    fn path() -> Image {
        Image {
            segments: vec![seg(0, 4, 1), seg(4, 4, 2), seg(8, 4, 1)],
            spare: vec![Segment::default(); 2],
            pool: vec![1, 0, 0, 0, 0, 2, 0, 0, 1, 0, 0, 0],
            directed: false,
            entries: 4,
        }
    }

    fn broken(edit: impl FnOnce(&mut Image)) -> String {
        let mut image = path();
        edit(&mut image);
        image.check().expect_err("the image is broken")
    }

    #[test]
    fn a_valid_image_passes() {
        assert_eq!(path().check(), Ok(()));
        let empty = Image::default();
        assert_eq!(empty.check(), Ok(()));
        let mut directed = path();
        directed.directed = true;
        directed.segments[2].degree = 0;
        directed.entries = 3;
        assert_eq!(directed.check(), Ok(()));
    }

    #[test]
    fn every_broken_invariant_is_named() {
        assert!(broken(|g| g.pool[5] = 0).contains("strictly increasing"));
        assert!(broken(|g| g.pool[0] = 7).contains("past the dictionary"));
        assert!(broken(|g| g.pool[0] = 0).contains("self loop"));
        assert!(broken(|g| g.segments[2].degree = 0).contains("(1, 2)"));
        assert!(broken(|g| g.segments[1].degree = 5).contains("above its capacity"));
        assert!(broken(|g| g.segments[1].capacity = 3).contains("power of two"));
        assert!(broken(|g| g.segments[1].capacity = 2).contains("power of two"));
        assert!(broken(|g| g.segments[0].offset = 10).contains("pool's top"));
        let overlap = broken(|g| {
            g.segments[1].offset = 2;
            g.pool[2] = 0;
            g.pool[3] = 2;
        });
        assert!(overlap.contains("overlap"), "{overlap}");
        assert!(broken(|g| g.entries = 5).contains("sum to 4"));
        assert!(broken(|g| g.spare[1].degree = 1).contains("entry 4"));
    }

    #[test]
    fn stats_sum_the_segments() {
        let s = path().stats(16, 5);
        assert_eq!((s.vertex_ids, s.entries, s.max_degree), (3, 4, 2));
        assert_eq!((s.capacity_words, s.pool_top, s.pool_words), (12, 12, 16));
        assert_eq!((s.dictionary_bytes, s.pool_bytes), (80, 64));
        assert!((s.fill - 4.0 / 12.0).abs() < 1e-12);
    }
}
