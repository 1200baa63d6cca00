//! Writing records as FASTA or FASTQ (for test inputs and benchmark files).

use std::io::{self, Write};

use super::Record;

/// Writes `records` as FASTA, the sequence wrapped every `width` bases (`0`: one line).
///
/// ```
/// use gpuds_oversub::kmer::{write_fasta, Record};
/// let mut out = Vec::new();
/// write_fasta(&mut out, &[Record { id: "g1".into(), seq: b"ACGTACG".to_vec() }], 4)?;
/// assert_eq!(out, b">g1\nACGT\nACG\n");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_fasta<'r, W: Write>(
    mut out: W,
    records: impl IntoIterator<Item = &'r Record>,
    width: usize,
) -> io::Result<()> {
    for record in records {
        writeln!(out, ">{}", record.id)?;
        let width = if width == 0 {
            record.seq.len().max(1)
        } else {
            width
        };
        for line in record.seq.chunks(width) {
            out.write_all(line)?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

/// Writes `records` as FASTQ, four lines each, every quality score `I` (Phred 40).
///
/// ```
/// use gpuds_oversub::kmer::{write_fastq, Record};
/// let mut out = Vec::new();
/// write_fastq(&mut out, &[Record { id: "r1".into(), seq: b"ACGT".to_vec() }])?;
/// assert_eq!(out, b"@r1\nACGT\n+\nIIII\n");
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_fastq<'r, W: Write>(
    mut out: W,
    records: impl IntoIterator<Item = &'r Record>,
) -> io::Result<()> {
    for record in records {
        writeln!(out, "@{}", record.id)?;
        out.write_all(&record.seq)?;
        out.write_all(b"\n+\n")?;
        out.write_all(&vec![b'I'; record.seq.len()])?;
        out.write_all(b"\n")?;
    }
    Ok(())
}
