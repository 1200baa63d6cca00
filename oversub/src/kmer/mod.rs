//! k-mer counting and metagenomic classification inputs (§6).
//!
//! Both applications of the paper's case study key a table by k-mers: substrings of
//! k = 16 nucleotides, two bits each, so that a k-mer is a `u32` ([`encode`],
//! [`kmers`]). k-mer counting maps each k-mer of a genome to its number of occurrences;
//! metagenomic classification maps each k-mer of a set of reference genomes to the
//! taxon it comes from, then labels a sequencing read by the taxa of its k-mers.
//!
//! This module is the host side of both: the encoding (the reference that device
//! kernels are tested against), the rule that turns k-mer codes into table keys
//! ([`KmerKey`]: the tables reserve `0` and `u32::MAX`, the codes of poly-A and poly-T),
//! a FASTA/FASTQ reader for plain and gzip files with errors that name record and line
//! ([`read_records`]), writers, seeded synthetic genomes, communities and reads with
//! repeats and sequencing errors ([`genome`], [`community`], [`reads`]), and the
//! classification rule ([`merge_taxa`] when building, [`classify`] when querying).
//! [`device_table_keys`] encodes a batch of reads on the device, with exactly the keys,
//! order and per-read offsets of its host twin [`table_keys`].
//!
//! # Examples
//!
//! ```
//! use std::collections::HashMap;
//! use gpuds_oversub::kmer::{genome, kmers, reads, TableKeys};
//!
//! // Count the k-mers of a synthetic genome.
//! let g = genome(20_000, 1, 0.1);
//! let batch = TableKeys::from_codes(kmers(&g));
//! let mut counts: HashMap<u32, u32> = HashMap::new();
//! for key in &batch.keys {
//!     *counts.entry(*key).or_default() += 1;
//! }
//! assert_eq!(batch.keys.len() as u64 + batch.poly_a + batch.poly_t, 20_000 - 15);
//! assert!(counts.values().any(|&c| c > 1), "repeats give repeated k-mers");
//!
//! // Reads of 150 bases with 1 % substitution errors.
//! let rs = reads(&g, 100, 150, 0.01, 2);
//! assert_eq!(rs.len(), 100);
//! ```

mod classify;
mod device;
mod encode;
mod reader;
mod synth;
mod write;

pub use classify::{classify, merge_taxa, UNCLASSIFIED};
pub use device::{device_table_keys, table_keys, DeviceKmers, Orientation};
pub use encode::{
    canonical, decode, encode, kmers, reverse_complement, table_key, KmerKey, Kmers, TableKeys, K,
};
pub use reader::{read_records, Record, Records, SeqError};
pub use synth::{community, genome, reads, REPEAT_LEN};
pub use write::{write_fasta, write_fastq};
