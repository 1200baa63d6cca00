//! k-mer counting and metagenomic classification inputs (§6).
