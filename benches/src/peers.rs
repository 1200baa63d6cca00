//! Published physical limits of the H100 80GB HBM3 and the H200, measured with another
//! probe of the same shape (2^26 queries into a 4 GiB table). Our probe should land near them.

use crate::bench::Limit;
use crate::report::Baseline;

/// The published figure for `limit` on a device of this name, in the unit our limit rows
/// use (GB/s for the copy, G queries/s otherwise), when a figure was published for that device.
pub fn reference(device: &str, limit: Limit) -> Option<Baseline> {
    // (copy GB/s, sector reads, line reads, CAS in G queries/s)
    let (label, figures) = if device.contains("H100") && device.contains("HBM3") {
        ("published H100", [2_844.0, 28.268, 14.901, 12.988])
    } else if device.contains("H200") {
        ("published H200", [3_965.0, 35.181, 16.612, 15.540])
    } else {
        return None;
    };
    let rate = match limit {
        Limit::Copy => figures[0],
        Limit::SectorReads => figures[1],
        Limit::LineReads => figures[2],
        Limit::Cas => figures[3],
    };
    Some(Baseline {
        label: label.to_string(),
        rate,
    })
}

/// Published figures of the original simple lock-free linear-probing table on the same
/// GPU (u32 keys and values, 2^24 keys, a table of 2^25 slots), in G operations/s, for
/// `op` (`insert`, `find hit`, `find miss`, `erase`) at load 0.5 or 0.8.
pub fn linear_probe(device: &str, op: &str, load: f64) -> Option<Baseline> {
    // (insert, find hit, find miss, erase) at load 0.5, then at 0.8.
    let (label, figures) = if device.contains("H100") && device.contains("HBM3") {
        (
            "original, published H100",
            [
                [11.072, 24.266, 24.054, 11.304],
                [7.754, 19.118, 8.196, 11.165],
            ],
        )
    } else if device.contains("H200") {
        (
            "original, published H200",
            [
                [13.761, 32.458, 29.698, 14.547],
                [8.875, 23.759, 8.642, 14.389],
            ],
        )
    } else {
        return None;
    };
    let at = if (load - 0.5).abs() < 1e-9 {
        figures[0]
    } else if (load - 0.8).abs() < 1e-9 {
        figures[1]
    } else {
        return None;
    };
    let rate = match op {
        "insert" => at[0],
        "find hit" => at[1],
        "find miss" => at[2],
        "erase" => at[3],
        _ => return None,
    };
    Some(Baseline {
        label: label.to_string(),
        rate,
    })
}

/// Published figures of the original GPU B-Tree (GpuBTree) and of the B-link tree of the
/// original multiversion B-Tree on the same GPU (u32 keys and values, 2^24 keys), in
/// G operations/s (G keys/s for the bulk build), for `op`: `insert`, `find`, `range 8`,
/// `range 32`, `erase` (GpuBTree) or `bulk build` (the B-link tree).
pub fn btree(device: &str, op: &str) -> Option<Baseline> {
    // (insert, find, range 8, range 32, erase, bulk build)
    let (gpu, figures) = if device.contains("H100") && device.contains("HBM3") {
        ("H100", [0.624, 2.130, 3.191, 1.982, 1.934, 45.878])
    } else if device.contains("H200") {
        ("H200", [0.645, 2.132, 3.271, 2.118, 2.060, 49.141])
    } else {
        return None;
    };
    let (i, who) = match op {
        "insert" => (0, "original"),
        "find" => (1, "original"),
        "range 8" => (2, "original"),
        "range 32" => (3, "original"),
        "erase" => (4, "original"),
        "bulk build" => (5, "original B-link"),
        _ => return None,
    };
    Some(Baseline {
        label: format!("{who}, published {gpu}"),
        rate: figures[i],
    })
}

/// Published figures of the original multiversion B-Tree (MVGpuBTree, versioned tree) on
/// the same GPU (u32 keys and values, 2^24 keys), in G operations/s, for `op`: `insert`
/// (in place), `insert out of place`, `find`, `range 8` and `range 32` (snapshot ranges,
/// n/4 queries returning exactly 8 or 32 pairs), `erase` (half the keys).
pub fn mvbtree(device: &str, op: &str) -> Option<Baseline> {
    // (insert, insert out of place, find, range 8, range 32, erase)
    let (gpu, figures) = if device.contains("H100") && device.contains("HBM3") {
        ("H100", [0.561, 0.432, 1.666, 1.048, 0.828, 1.478])
    } else if device.contains("H200") {
        ("H200", [0.633, 0.480, 1.668, 1.049, 0.829, 1.488])
    } else {
        return None;
    };
    let i = [
        "insert",
        "insert out of place",
        "find",
        "range 8",
        "range 32",
        "erase",
    ]
    .iter()
    .position(|&o| o == op)?;
    Some(Baseline {
        label: format!("original, published {gpu}"),
        rate: figures[i],
    })
}

/// Published figures of the original bucketed cuckoo table (BGHT, buckets of 16 slots)
/// on the same GPU (u32 keys and values, 2^24 keys), in G operations/s, for `op`
/// (`insert`, `find hit`, `find miss`) at load 0.5 or 0.8. At load 0.95, where no figure
/// was published, the comparison point is 0.8 times the load-0.8 figure (the floor the
/// HiveMap issue sets there).
pub fn bucketed_cuckoo(device: &str, op: &str, load: f64) -> Option<Baseline> {
    // (insert, find hit, find miss) at load 0.5, then at 0.8.
    let (gpu, figures) = if device.contains("H100") && device.contains("HBM3") {
        ("H100", [[8.155, 13.628, 12.512], [7.559, 13.068, 9.470]])
    } else if device.contains("H200") {
        ("H200", [[8.431, 13.914, 12.715], [7.804, 13.358, 9.663]])
    } else {
        return None;
    };
    let column = match op {
        "insert" => 0,
        "find hit" => 1,
        "find miss" => 2,
        _ => return None,
    };
    let (row, scale, label) = if (load - 0.5).abs() < 1e-9 {
        (0, 1.0, format!("original, published {gpu}"))
    } else if (load - 0.8).abs() < 1e-9 {
        (1, 1.0, format!("original, published {gpu}"))
    } else if (load - 0.95).abs() < 1e-9 {
        (1, 0.8, format!("0.8 x original at 0.8, published {gpu}"))
    } else {
        return None;
    };
    Some(Baseline {
        label,
        rate: figures[row][column] * scale,
    })
}

/// Published figures of the original slab hash (with SlabAlloc) on the same GPU: u32 keys
/// and values, 2^24 keys, buckets for an average slab count of 0.7 (memory utilization
/// 0.61), in G operations/s, for `op`: `insert`, `find hit`, `find miss`, `erase`.
pub fn slabhash(device: &str, op: &str) -> Option<Baseline> {
    // (insert, find hit, find miss, erase)
    let (gpu, figures) = if device.contains("H100") && device.contains("HBM3") {
        ("H100", [9.028, 14.446, 13.341, 10.038])
    } else if device.contains("H200") {
        ("H200", [9.581, 15.459, 14.188, 10.956])
    } else {
        return None;
    };
    let i = ["insert", "find hit", "find miss", "erase"]
        .iter()
        .position(|&o| o == op)?;
    Some(Baseline {
        label: format!("original, published {gpu}"),
        rate: figures[i],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_published_gpus_only() {
        let b = reference("NVIDIA H100 80GB HBM3", Limit::LineReads).unwrap();
        assert_eq!((b.label.as_str(), b.rate), ("published H100", 14.901));
        assert_eq!(reference("NVIDIA H200", Limit::Copy).unwrap().rate, 3_965.0);
        assert!(reference("NVIDIA H100 PCIe", Limit::Copy).is_none());
        assert!(reference("NVIDIA A100-SXM4-80GB", Limit::Cas).is_none());
    }
}

#[cfg(test)]
mod bucketed_cuckoo_tests {
    use super::bucketed_cuckoo;

    #[test]
    fn figures_per_gpu_load_and_operation() {
        let b = bucketed_cuckoo("NVIDIA H100 80GB HBM3", "find miss", 0.8).unwrap();
        assert_eq!(b.rate, 9.470);
        let b = bucketed_cuckoo("NVIDIA H200", "insert", 0.95).unwrap();
        assert!((b.rate - 0.8 * 7.804).abs() < 1e-12 && b.label.starts_with("0.8 x"));
        assert!(bucketed_cuckoo("NVIDIA H200", "erase", 0.8).is_none());
        assert!(bucketed_cuckoo("NVIDIA H200", "insert", 0.7).is_none());
        assert!(bucketed_cuckoo("NVIDIA A100-SXM4-80GB", "insert", 0.8).is_none());
    }
}

#[cfg(test)]
mod mvbtree_tests {
    use super::mvbtree;

    #[test]
    fn figures_per_gpu_and_operation() {
        let b = mvbtree("NVIDIA H100 80GB HBM3", "insert out of place").unwrap();
        assert_eq!(
            (b.label.as_str(), b.rate),
            ("original, published H100", 0.432)
        );
        assert_eq!(mvbtree("NVIDIA H200", "range 32").unwrap().rate, 0.829);
        assert_eq!(mvbtree("NVIDIA H200", "erase").unwrap().rate, 1.488);
        assert!(mvbtree("NVIDIA H200", "successor").is_none());
        assert!(mvbtree("NVIDIA A100-SXM4-80GB", "find").is_none());
    }
}
