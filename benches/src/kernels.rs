//! The benchmark's own device programs and typed launchers for their kernels.
//!
//! The probe kernels live in `benches/cuda/*.cu`; [`programs`] lists every program so a
//! CPU test can compile each one without a GPU.

use gpuds_core::cudarc::driver::{CudaSlice, PushKernelArg};
use gpuds_core::{Error, Gpu, Kernel, Program, Result};

/// Threads per block of every probe kernel.
const BLOCK: u32 = 256;

/// The limits probes and input fills (`benches/cuda/limits.cu`).
pub fn limits_program() -> Program {
    Program::new("gpuds-bench-limits", include_str!("../cuda/limits.cu"))
}

/// Every device program of the benchmark, for compile checks.
pub fn programs() -> Vec<Program> {
    vec![limits_program()]
}

/// The loaded probe kernels, with one launcher each. Every launcher enqueues on
/// `gpu.stream()` and does not synchronize.
pub struct Probes {
    gpu: Gpu,
    fill_random: Kernel,
    fill_flags: Kernel,
    copy16: Kernel,
    sector_reads: Kernel,
    line_reads: Kernel,
    random_cas: Kernel,
}

impl Probes {
    /// Compiles (or finds in the caches) and loads the probes on `gpu`.
    pub fn load(gpu: &Gpu) -> Result<Self> {
        let module = gpu.load(&limits_program())?;
        Ok(Self {
            gpu: gpu.clone(),
            fill_random: module.kernel("fill_random")?,
            fill_flags: module.kernel("fill_flags")?,
            copy16: module.kernel("copy16")?,
            sector_reads: module.kernel("sector_reads")?,
            line_reads: module.kernel("line_reads")?,
            random_cas: module.kernel("random_cas")?,
        })
    }

    /// Fills `out` with distinct pseudo-random words that depend on `seed`.
    pub fn fill_random(&self, out: &mut CudaSlice<u32>, seed: u32) -> Result<()> {
        self.fill(&self.fill_random, out, seed)
    }

    /// Fills `out` with random 0/1 flags (about half ones) that depend on `seed`.
    pub fn fill_flags(&self, out: &mut CudaSlice<u32>, seed: u32) -> Result<()> {
        self.fill(&self.fill_flags, out, seed)
    }

    /// Launches one of the fills, which all take `(out, n, word)`.
    fn fill(&self, kernel: &Kernel, out: &mut CudaSlice<u32>, word: u32) -> Result<()> {
        let n = out.len() as u64;
        let cfg = self.gpu.grid_for(kernel, out.len(), BLOCK)?;
        let mut args = self.gpu.stream().launch_builder(kernel.func());
        args.arg(out).arg(&n).arg(&word);
        // SAFETY: the fills write exactly `n` words of `out`.
        unsafe { args.launch(cfg) }?;
        Ok(())
    }

    /// Copies `src` into `dst` with 16-byte accesses; both must have the same length, a
    /// multiple of 4 words.
    pub fn copy(&self, src: &CudaSlice<u32>, dst: &mut CudaSlice<u32>) -> Result<()> {
        if src.len() != dst.len() || !src.len().is_multiple_of(4) {
            return Err(Error::InvalidArgument(format!(
                "copy needs equal lengths that are multiples of 4, got {} and {}",
                src.len(),
                dst.len()
            )));
        }
        let n16 = (src.len() / 4) as u64;
        let cfg = self.gpu.grid_for(&self.copy16, n16 as usize, BLOCK)?;
        let mut args = self.gpu.stream().launch_builder(self.copy16.func());
        args.arg(src).arg(dst).arg(&n16);
        // SAFETY: device allocations are 256-byte aligned, so both buffers hold `n16`
        // aligned 16-byte vectors.
        unsafe { args.launch(cfg) }?;
        Ok(())
    }

    /// `queries` random 4-byte reads of `table` (a power-of-two number of words); counts
    /// the words equal to `needle` into `found`.
    pub fn sector_reads(
        &self,
        table: &CudaSlice<u32>,
        queries: u64,
        seed: u32,
        needle: u32,
        found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let mask = power_of_two_mask(table.len())?;
        let cfg = self
            .gpu
            .grid_for(&self.sector_reads, threads(queries)?, BLOCK)?;
        let mut args = self.gpu.stream().launch_builder(self.sector_reads.func());
        args.arg(table)
            .arg(&mask)
            .arg(&queries)
            .arg(&seed)
            .arg(&needle)
            .arg(found);
        // SAFETY: indices are masked to the table's power-of-two length; `found` is one word.
        unsafe { args.launch(cfg) }?;
        Ok(())
    }

    /// `queries` random 128-byte line reads of `table`, one warp per line.
    pub fn line_reads(
        &self,
        table: &CudaSlice<u32>,
        queries: u64,
        seed: u32,
        needle: u32,
        found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        let line_mask = power_of_two_mask(table.len() / 32)?;
        let warps = threads(queries)?;
        let cfg = self
            .gpu
            .grid_for(&self.line_reads, warps.saturating_mul(32), BLOCK)?;
        let mut args = self.gpu.stream().launch_builder(self.line_reads.func());
        args.arg(table)
            .arg(&line_mask)
            .arg(&queries)
            .arg(&seed)
            .arg(&needle)
            .arg(found);
        // SAFETY: line numbers are masked to the table's lines; `found` is one word.
        unsafe { args.launch(cfg) }?;
        Ok(())
    }

    /// `queries` random atomicCAS(EMPTY -> key) into `table`.
    pub fn random_cas(&self, table: &mut CudaSlice<u32>, queries: u64, seed: u32) -> Result<()> {
        let mask = power_of_two_mask(table.len())?;
        let cfg = self
            .gpu
            .grid_for(&self.random_cas, threads(queries)?, BLOCK)?;
        let mut args = self.gpu.stream().launch_builder(self.random_cas.func());
        args.arg(table).arg(&mask).arg(&queries).arg(&seed);
        // SAFETY: indices are masked to the table's power-of-two length.
        unsafe { args.launch(cfg) }?;
        Ok(())
    }
}

/// Host twin of the `fill_random` kernel: the word it writes at index `i`.
pub fn random_word(i: u64, seed: u32) -> u32 {
    gpuds_core::hash::murmur3_32((i as u32).wrapping_add(seed.wrapping_mul(0x9e37_79b9)))
}

fn threads(queries: u64) -> Result<usize> {
    usize::try_from(queries)
        .map_err(|_| Error::InvalidArgument(format!("{queries} queries do not fit in usize")))
}

/// `len - 1` for a power-of-two `len` of at most 2^32 words.
fn power_of_two_mask(len: usize) -> Result<u32> {
    if len == 0 || !len.is_power_of_two() || len > 1 << 32 {
        return Err(Error::InvalidArgument(format!(
            "probe table of {len} entries must be a power of two between 1 and 2^32"
        )));
    }
    Ok((len - 1) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_words_are_distinct_and_seeded() {
        let words: std::collections::HashSet<u32> =
            (0..1 << 16).map(|i| random_word(i, 5)).collect();
        assert_eq!(words.len(), 1 << 16);
        assert_ne!(random_word(3, 1), random_word(3, 2));
        assert!(power_of_two_mask(1 << 30).is_ok_and(|m| m == (1 << 30) - 1));
        assert!(power_of_two_mask(3).is_err() && power_of_two_mask(0).is_err());
    }
}
