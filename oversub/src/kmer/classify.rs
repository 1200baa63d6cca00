//! The classification rule of the metagenomics case study (§6), as a host reference.

use std::collections::HashMap;

use super::{kmers, table_key};

/// The taxon value of a k-mer found in more than one taxon (and of nothing found): the
/// database stores it for shared k-mers, and such k-mers cast no vote.
pub const UNCLASSIFIED: u32 = 0;

/// The taxon a database stores for a k-mer already stored with `old` when it is met
/// again in taxon `new`: the same taxon, or [`UNCLASSIFIED`] once two taxa share it.
///
/// ```
/// use gpuds_oversub::kmer::{merge_taxa, UNCLASSIFIED};
/// assert_eq!(merge_taxa(3, 3), 3);
/// assert_eq!(merge_taxa(3, 4), UNCLASSIFIED);
/// assert_eq!(merge_taxa(UNCLASSIFIED, 4), UNCLASSIFIED);
/// ```
pub fn merge_taxa(old: u32, new: u32) -> u32 {
    if old == new {
        old
    } else {
        UNCLASSIFIED
    }
}

/// Labels a read by its k-mers: every k-mer with a table key whose `taxon_of` is a taxon
/// other than [`UNCLASSIFIED`] votes for it, and the taxon with the most votes wins.
/// `None` when no k-mer votes or two taxa tie.
///
/// ```
/// use std::collections::HashMap;
/// use gpuds_oversub::kmer::{classify, kmers, table_key};
/// let genome = b"ACGTTGCAACGTTGCATTGGCCAA";
/// let db: HashMap<u32, u32> = kmers(genome).filter_map(table_key).map(|k| (k, 7)).collect();
/// assert_eq!(classify(&genome[2..20], |k| db.get(&k).copied()), Some(7));
/// assert_eq!(classify(b"CCCCCCCCCCCCCCCCCC", |k| db.get(&k).copied()), None);
/// ```
pub fn classify(read: &[u8], mut taxon_of: impl FnMut(u32) -> Option<u32>) -> Option<u32> {
    let mut votes: HashMap<u32, u32> = HashMap::new();
    for taxon in kmers(read).filter_map(table_key).filter_map(&mut taxon_of) {
        if taxon != UNCLASSIFIED {
            *votes.entry(taxon).or_default() += 1;
        }
    }
    let best = votes.values().copied().max()?;
    let mut winners = votes.iter().filter(|&(_, &v)| v == best);
    match (winners.next(), winners.next()) {
        (Some((&taxon, _)), None) => Some(taxon),
        _ => None,
    }
}
