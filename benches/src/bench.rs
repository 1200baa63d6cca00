//! [`Bench`]: what every experiment runs with: the device, the timer, the probe kernels
//! and the physical limits measured so far in this run.

use gpuds_core::cudarc::driver::CudaSlice;
use gpuds_core::{Gpu, Result};

use crate::kernels::Probes;
use crate::report::bytes_label;
use crate::timing::Timer;

/// A physical ceiling of the device, measured by `gpuds-bench limits`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limit {
    /// Device-to-device copy, GB/s counting bytes read plus bytes written.
    Copy,
    /// Random 4-byte reads, one 32-byte sector each, G queries/s.
    SectorReads,
    /// Warp-cooperative 128-byte line reads, G queries/s.
    LineReads,
    /// Random atomicCAS, G queries/s.
    Cas,
}

/// The context experiments run in.
pub struct Bench {
    /// The device.
    pub gpu: Gpu,
    /// The event timer (warm-up, median of repetitions, L2 eviction).
    pub timer: Timer,
    /// The probe and fill kernels.
    pub probes: Probes,
    limits: Vec<(Limit, f64)>,
}

impl Bench {
    /// Loads the probes and makes a timer of `reps` repetitions on `gpu`.
    pub fn new(gpu: &Gpu, reps: usize) -> Result<Self> {
        Ok(Self {
            gpu: gpu.clone(),
            timer: Timer::new(gpu, reps)?,
            probes: Probes::load(gpu)?,
            limits: Vec::new(),
        })
    }

    /// The limit measured earlier in this run, if any.
    pub fn limit(&self, limit: Limit) -> Option<f64> {
        self.limits
            .iter()
            .find(|(l, _)| *l == limit)
            .map(|&(_, rate)| rate)
    }

    /// Records a measured limit; the highest measurement of each limit is kept.
    pub fn record_limit(&mut self, limit: Limit, rate: f64) {
        match self.limits.iter_mut().find(|(l, _)| *l == limit) {
            Some(slot) => slot.1 = slot.1.max(rate),
            None => self.limits.push((limit, rate)),
        }
    }

    /// Device memory for `len` words, filled with random words (never zeros).
    pub fn random_words(&self, len: usize, seed: u32) -> Result<CudaSlice<u32>> {
        // SAFETY: every word is written by the fill before anything reads it.
        let mut words = unsafe { self.gpu.stream().alloc::<u32>(len) }?;
        self.probes.fill_random(&mut words, seed)?;
        Ok(words)
    }

    /// The largest power-of-two number of words, at most `wanted_bytes`, that fits in
    /// free device memory with room to spare, and a note when that is less than wanted.
    pub fn table_words(&self, wanted_bytes: usize) -> Result<(usize, String)> {
        let (free, _) = self.gpu.memory_info()?;
        let spare = (free / 8).max(512 << 20);
        let budget = free.saturating_sub(spare).min(wanted_bytes) / 4;
        let words = if budget == 0 {
            1
        } else {
            1usize << budget.ilog2()
        };
        let note = if words * 4 < wanted_bytes {
            format!(
                "table sized down to {} (free memory {})",
                bytes_label(words * 4),
                bytes_label(free)
            )
        } else {
            String::new()
        };
        Ok((words, note))
    }
}
