//! The table keys of a batch of reads, encoded on the device.
//!
//! The reads are packed into one byte array, each followed by a separator byte that is
//! not a nucleotide, so that no window spans two reads. Three passes follow, one thread
//! per byte: a count pass flags the bytes where a table key starts (16 nucleotides in a
//! row whose code, in the orientation asked, is not one of the two reserved
//! homopolymers, which are counted instead); an exclusive scan of the flags (gpuds-core)
//! gives each key its place; a collect pass writes the keys there, and each read's first
//! place. Keys come out read by read, left to right within a read: the order of the host's
//! [`kmers`](super::kmers) over the reads one after the other.

use cudarc::driver::{CudaSlice, PushKernelArg};
use gpuds_core::primitives::Scanner;
use gpuds_core::{Error as CoreError, Gpu};

use super::encode::{canonical, kmers, TableKeys};
use crate::batch::shape;
use crate::error::Result;
use crate::kernels::workload_kernel;

/// The byte after each packed read: not a nucleotide, so it ends every window.
const SEPARATOR: u8 = b'\n';

/// Which code of a k-mer becomes its key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Orientation {
    /// The code of the k-mer as read ([`kmers`]): what the counting and classification
    /// benchmarks use.
    #[default]
    AsRead,
    /// The smaller of the code and its reverse complement ([`canonical`]): one key per
    /// k-mer whatever the strand.
    Canonical,
}

impl Orientation {
    /// The key form of `code`.
    ///
    /// ```
    /// use gpuds_oversub::kmer::{canonical, Orientation};
    /// assert_eq!(Orientation::AsRead.apply(u32::MAX), u32::MAX);
    /// assert_eq!(Orientation::Canonical.apply(u32::MAX), canonical(u32::MAX));
    /// ```
    pub fn apply(self, code: u32) -> u32 {
        match self {
            Orientation::AsRead => code,
            Orientation::Canonical => canonical(code),
        }
    }
}

/// The table keys of a batch of reads, read by read: the keys and homopolymer counts of
/// all reads together, and where each read's keys start (`offsets[r]..offsets[r + 1]`,
/// one entry more than reads). The host reference of [`device_table_keys`].
///
/// ```
/// use gpuds_oversub::kmer::{table_keys, Orientation};
/// let reads = [&b"AAAAAAAAAAAAAAAACA"[..], b"ACG", b"CCCCCCCCCCCCCCCCC"];
/// let (batch, offsets) = table_keys(&reads, Orientation::AsRead);
/// assert_eq!(offsets, vec![0, 2, 2, 4]);
/// assert_eq!(&batch.keys[..2], &[1, 4]);
/// assert_eq!(batch.poly_a, 1);
/// ```
pub fn table_keys<S: AsRef<[u8]>>(
    reads: &[S],
    orientation: Orientation,
) -> (TableKeys, Vec<usize>) {
    let mut batch = TableKeys::default();
    let mut offsets = Vec::with_capacity(reads.len() + 1);
    offsets.push(0);
    for read in reads {
        batch.extend(kmers(read.as_ref()).map(|c| orientation.apply(c)));
        offsets.push(batch.keys.len());
    }
    (batch, offsets)
}

/// [`table_keys`] computed on the device: the keys stay there.
pub struct DeviceKmers {
    /// The table keys of all reads, read by read.
    pub keys: CudaSlice<u32>,
    /// Read `r`'s keys are `keys[offsets[r]..offsets[r + 1]]`; one entry more than reads.
    pub offsets: Vec<usize>,
    /// How many windows were poly-A (code 0), left out.
    pub poly_a: u64,
    /// How many windows were poly-T (code `u32::MAX`), left out.
    pub poly_t: u64,
}

/// The table keys of `reads` ([`Record`](super::Record)s or byte strings), encoded on
/// the device: the same keys, order, offsets and homopolymer counts as [`table_keys`].
/// Copies the packed reads to the device (one byte per base plus one per read) and
/// synchronizes once to size the output.
///
/// Fails with [`gpuds_core::Error::CapacityOverflow`] when the packed batch has more
/// than `u32::MAX` bytes (split larger batches).
///
/// ```no_run
/// use gpuds_oversub::kmer::{device_table_keys, genome, reads, table_keys, Orientation};
/// let gpu = gpuds_core::Gpu::new(0)?;
/// let rs = reads(&genome(10_000, 1, 0.1), 100, 150, 0.01, 2);
/// let encoded = device_table_keys(&gpu, &rs, Orientation::AsRead)?;
/// let (host, offsets) = table_keys(&rs, Orientation::AsRead);
/// assert_eq!(gpu.stream().clone_dtoh(&encoded.keys)?, host.keys);
/// assert_eq!(encoded.offsets, offsets);
/// # Ok::<(), gpuds_oversub::Error>(())
/// ```
pub fn device_table_keys<S: AsRef<[u8]>>(
    gpu: &Gpu,
    reads: &[S],
    orientation: Orientation,
) -> Result<DeviceKmers> {
    let stream = gpu.stream();
    let (bases, starts) = pack(reads)?;
    if reads.is_empty() {
        return Ok(DeviceKmers {
            keys: stream.alloc_zeros::<u32>(0)?,
            offsets: vec![0],
            poly_a: 0,
            poly_t: 0,
        });
    }
    let len = bases.len();
    let (bases, starts) = (stream.clone_htod(&bases)?, stream.clone_htod(&starts)?);
    let canonical = u32::from(orientation == Orientation::Canonical);
    let len64 = len as u64;
    let mut flags = stream.alloc_zeros::<u32>(len)?;
    let mut homopolymers = stream.alloc_zeros::<u64>(2)?;
    let count = workload_kernel(gpu, "kmer_flags")?;
    let mut args = stream.launch_builder(count.func());
    args.arg(&bases)
        .arg(&len64)
        .arg(&canonical)
        .arg(&mut flags)
        .arg(&mut homopolymers);
    // SAFETY: reads bases[..len]; writes flags[..len] and two counters.
    unsafe { args.launch(shape(gpu, &count, len)?) }?;
    let mut positions = stream.alloc_zeros::<u32>(len)?;
    let mut total = stream.alloc_zeros::<u32>(1)?;
    Scanner::new(gpu)?.exclusive_scan(&flags, &mut positions, &mut total)?;
    let total = stream.clone_dtoh(&total)?[0] as usize;
    let mut keys = stream.alloc_zeros::<u32>(total)?;
    let mut read_offsets = stream.alloc_zeros::<u32>(reads.len())?;
    let collect = workload_kernel(gpu, "kmer_collect")?;
    let reads64 = reads.len() as u64;
    let mut args = stream.launch_builder(collect.func());
    args.arg(&bases)
        .arg(&len64)
        .arg(&canonical)
        .arg(&flags)
        .arg(&positions)
        .arg(&mut keys)
        .arg(&starts)
        .arg(&reads64)
        .arg(&mut read_offsets);
    // SAFETY: reads bases, flags and positions [..len] and starts[..reads] (every start
    // below len: each read is followed by its separator); writes keys at the flagged
    // places, all below total, and read_offsets[..reads].
    unsafe { args.launch(shape(gpu, &collect, len)?) }?;
    let mut offsets: Vec<usize> = stream
        .clone_dtoh(&read_offsets)?
        .into_iter()
        .map(|o| o as usize)
        .collect();
    offsets.push(total);
    let homopolymers = stream.clone_dtoh(&homopolymers)?;
    Ok(DeviceKmers {
        keys,
        offsets,
        poly_a: homopolymers[0],
        poly_t: homopolymers[1],
    })
}

/// The reads one after the other, each followed by [`SEPARATOR`], and where each
/// starts. At most `u32::MAX` bytes, so that key places fit the scan's 32-bit words.
fn pack<S: AsRef<[u8]>>(reads: &[S]) -> Result<(Vec<u8>, Vec<u64>)> {
    let len = reads
        .iter()
        .try_fold(0u64, |sum, r| sum.checked_add(r.as_ref().len() as u64 + 1))
        .filter(|&len| len <= u32::MAX as u64)
        .ok_or_else(|| {
            CoreError::CapacityOverflow(format!(
                "{} reads pack into more than {} bytes; encode them in smaller batches",
                reads.len(),
                u32::MAX
            ))
        })?;
    let mut bases = Vec::with_capacity(len as usize);
    let mut starts = Vec::with_capacity(reads.len());
    for read in reads {
        starts.push(bases.len() as u64);
        bases.extend_from_slice(read.as_ref());
        bases.push(SEPARATOR);
    }
    Ok((bases, starts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_separates_every_read() {
        let (bases, starts) = pack(&[&b"ACGT"[..], b"", b"tt"]).unwrap();
        assert_eq!(bases, b"ACGT\n\ntt\n");
        assert_eq!(starts, vec![0, 5, 6]);
        assert!(super::super::encode::base_code(SEPARATOR).is_none());
        let (bases, starts) = pack::<&[u8]>(&[]).unwrap();
        assert!(bases.is_empty() && starts.is_empty());
    }

    #[test]
    fn a_window_across_two_packed_reads_is_never_a_kmer() {
        // The keys of the packed bytes, read as one sequence, are the reads' own keys.
        let reads = [
            &b"ACGTACGTACGTACG"[..],
            b"TACGTACGTACGTACGTT",
            b"GGGGGGGGGGGGGGGG",
        ];
        let (bases, _) = pack(&reads).unwrap();
        let (batch, offsets) = table_keys(&reads, Orientation::AsRead);
        assert_eq!(kmers(&bases).collect::<Vec<_>>(), batch.keys);
        assert_eq!(offsets, vec![0, 0, 3, 4]);
    }

    #[test]
    fn canonical_keys_count_both_homopolymers_as_poly_a() {
        let reads = [b"TTTTTTTTTTTTTTTTA", b"AAAAAAAAAAAAAAAAT"];
        let (batch, _) = table_keys(&reads, Orientation::Canonical);
        assert_eq!((batch.poly_a, batch.poly_t), (2, 0));
        assert_eq!(batch.keys.len(), 2);
        let (batch, _) = table_keys(&reads, Orientation::AsRead);
        assert_eq!((batch.poly_a, batch.poly_t), (1, 1));
    }
}
