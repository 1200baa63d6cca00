//! Seeded generators of the graph families of the dissertation's Table 5.1, and the
//! table's dataset names mapped to a family and a size.
//!
//! Every generator draws from one ChaCha8 stream seeded by its `seed`, so a seed gives
//! the same graph on every machine, and returns an undirected simple graph: each edge
//! listed once as `(u, v)` with `u < v`, sorted, no self loops, no duplicates,
//! `symmetric: true`, no values.

mod geometric;
mod rmat;
mod road;

use rand::rngs::ChaCha8Rng;
use rand::Rng;

pub use geometric::{delaunay, random_geometric};
pub use rmat::{hollywood_like, rmat, soc_livejournal_like, RmatParams};
pub use road::road_grid;

use crate::input::Coo;

/// A family of generated graphs; [`Family::generate`] makes one of a given size.
///
/// # Examples
///
/// ```
/// use gpuds_graph::input::Family;
///
/// // delaunay_n20, 2^10 times smaller.
/// let (family, vertices) = Family::from_name("delaunay_n20", 10).unwrap();
/// assert_eq!((family, vertices), (Family::Delaunay, 1024));
/// let g = family.generate(vertices, 42);
/// assert_eq!(g.num_vertices, 1024);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Family {
    /// [`random_geometric`]: the rgg_n_2_*_s0 graphs.
    RandomGeometric,
    /// [`delaunay`]: the delaunay_n* graphs.
    Delaunay,
    /// [`rmat`] with these parameters: the social and collaboration graphs.
    Rmat(RmatParams),
    /// [`road_grid`]: the road networks.
    Road,
}

/// Table 5.1's datasets that a family reproduces, with their vertex counts (R-MAT ones
/// rounded to the nearest power of two). coAuthorsDBLP and ldoor have no family here:
/// load their Matrix Market files with [`crate::input::mtx`].
const TABLE_5_1: [(&str, Family, u32); 10] = [
    ("luxembourg_osm", Family::Road, 114_599),
    ("germany_osm", Family::Road, 11_548_845),
    ("road_usa", Family::Road, 23_947_347),
    ("delaunay_n20", Family::Delaunay, 1 << 20),
    ("delaunay_n23", Family::Delaunay, 1 << 23),
    ("rgg_n_2_20_s0", Family::RandomGeometric, 1 << 20),
    ("rgg_n_2_24_s0", Family::RandomGeometric, 1 << 24),
    (
        "soc-LiveJournal1",
        Family::Rmat(RmatParams::SOC_LIVEJOURNAL),
        1 << 22,
    ),
    ("soc-orkut", Family::Rmat(RmatParams::SOC_ORKUT), 1 << 22),
    (
        "hollywood-2009",
        Family::Rmat(RmatParams::HOLLYWOOD),
        1 << 20,
    ),
];

impl Family {
    /// The Table 5.1 dataset names [`Family::from_name`] knows.
    ///
    /// # Examples
    ///
    /// ```
    /// use gpuds_graph::input::Family;
    ///
    /// assert!(Family::names().any(|name| name == "rgg_n_2_24_s0"));
    /// ```
    pub fn names() -> impl Iterator<Item = &'static str> {
        TABLE_5_1.iter().map(|row| row.0)
    }

    /// The family and vertex count of a Table 5.1 dataset (the name as the table spells
    /// it, ASCII case ignored), the count divided by `2^scale_down` (at least 16
    /// vertices) for a smaller graph of the same shape; `None` for a name the table does
    /// not have or no family reproduces.
    ///
    /// # Examples
    ///
    /// ```
    /// use gpuds_graph::input::{Family, RmatParams};
    ///
    /// assert_eq!(
    ///     Family::from_name("soc-LiveJournal1", 0),
    ///     Some((Family::Rmat(RmatParams::SOC_LIVEJOURNAL), 1 << 22))
    /// );
    /// assert_eq!(Family::from_name("rgg_n_2_24_s0", 4), Some((Family::RandomGeometric, 1 << 20)));
    /// assert_eq!(Family::from_name("ldoor", 0), None);
    /// ```
    pub fn from_name(name: &str, scale_down: u32) -> Option<(Family, u32)> {
        let (_, family, vertices) = TABLE_5_1
            .iter()
            .find(|row| row.0.eq_ignore_ascii_case(name))?;
        Some((
            *family,
            vertices.checked_shr(scale_down).unwrap_or(0).max(16),
        ))
    }

    /// A graph of this family with about `vertices` vertices from `seed`: exactly
    /// `vertices` for the point families, `vertices` rounded up to a power of two for
    /// R-MAT, and a grid `ceil(sqrt(vertices))` wide with as many rows as it takes to
    /// hold `vertices` for roads.
    ///
    /// # Examples
    ///
    /// ```
    /// use gpuds_graph::input::Family;
    ///
    /// assert_eq!(Family::Road.generate(1000, 1).num_vertices, 32 * 32);
    /// assert_eq!(Family::RandomGeometric.generate(1000, 1).num_vertices, 1000);
    /// ```
    pub fn generate(self, vertices: u32, seed: u64) -> Coo {
        match self {
            Family::RandomGeometric => random_geometric(vertices, seed),
            Family::Delaunay => delaunay(vertices, seed),
            Family::Rmat(params) => rmat::rmat_with(
                params,
                vertices.max(1).next_power_of_two().trailing_zeros(),
                seed,
            ),
            Family::Road => {
                let width = f64::from(vertices).sqrt().ceil() as u32;
                road_grid(width, vertices.div_ceil(width.max(1)), seed)
            }
        }
    }
}

/// The undirected graph of the edges `keys` (packed with `edge_key`, `u < v`).
fn undirected(num_vertices: u32, keys: Vec<u64>) -> Coo {
    Coo::from_keys(num_vertices, keys, None, true)
}

/// A draw uniform in `0..bound` (bias below `bound / 2^64`), written out rather than
/// taken from `rand` so that the stream's use cannot change with `rand`'s version.
fn below(rng: &mut ChaCha8Rng, bound: u64) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(bound)) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_maps_to_its_size_and_scales_down() {
        for name in Family::names() {
            let (_, full) = Family::from_name(name, 0).unwrap();
            let (_, scaled) = Family::from_name(&name.to_ascii_uppercase(), 3).unwrap();
            assert_eq!(scaled, (full >> 3).max(16));
        }
        assert_eq!(Family::from_name("road_usa", 64), Some((Family::Road, 16)));
    }

    #[test]
    fn vertex_count_from_size() {
        let rmat = Family::Rmat(RmatParams::SOC_LIVEJOURNAL);
        assert_eq!(rmat.generate(1000, 1).num_vertices, 1024);
        assert_eq!(rmat.generate(1024, 1).num_vertices, 1024);
        assert_eq!(Family::Road.generate(0, 1).num_vertices, 0);
        assert_eq!(Family::Road.generate(10, 1).num_vertices, 4 * 3);
    }
}
