//! Timing device work: CUDA events, a warm-up, the median of repetitions.
//!
//! [`Timer::measure`] runs one closure per repetition. The closure prepares that
//! repetition's inputs (fresh random data from [`Rep::seed`]; never zeros) and then hands
//! the work to be timed to [`Rep::time`], which first evicts the fresh inputs from L2 by
//! writing a scratch buffer twice its size, then records a start event, enqueues the work
//! and records an end event. The first repetition is a warm-up and is not counted, so
//! module loads, first-touch page mapping and allocator growth stay out of the numbers.
//!
//! Events are created with `CU_EVENT_DEFAULT`: cudarc's default flags disable timing.

use gpuds_core::cudarc::driver::sys::CUevent_flags;
use gpuds_core::cudarc::driver::{CudaEvent, CudaSlice};
use gpuds_core::{Error, Gpu, Result};

/// The times of one measurement, in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    /// Median over the counted repetitions.
    pub median_ms: f64,
    /// Fastest repetition.
    pub min_ms: f64,
    /// Slowest repetition.
    pub max_ms: f64,
    /// Number of counted repetitions (the warm-up excluded).
    pub reps: usize,
}

impl Timing {
    /// One measurement of `ms` taken once (a single-shot call: median, min and max equal).
    pub fn once(ms: f64) -> Self {
        Self {
            median_ms: ms,
            min_ms: ms,
            max_ms: ms,
            reps: 1,
        }
    }

    /// Summarizes per-repetition times; `None` for an empty list.
    pub fn from_samples(samples: &[f64]) -> Option<Self> {
        let mut sorted: Vec<f64> = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = match n {
            0 => return None,
            _ if n % 2 == 1 => sorted[n / 2],
            _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
        };
        Some(Self {
            median_ms: median,
            min_ms: sorted[0],
            max_ms: sorted[n - 1],
            reps: n,
        })
    }

    /// `(max - min) / median`: repetitions that differ by less than this are noise.
    pub fn spread(&self) -> f64 {
        if self.median_ms > 0.0 {
            (self.max_ms - self.min_ms) / self.median_ms
        } else {
            0.0
        }
    }

    /// `work` units done in the median time, in billions per second.
    pub fn giga_rate(&self, work: f64) -> f64 {
        work / (self.median_ms * 1e-3) / 1e9
    }
}

/// Times device work on a [`Gpu`]'s stream.
pub struct Timer {
    gpu: Gpu,
    start: CudaEvent,
    end: CudaEvent,
    l2_scratch: CudaSlice<u8>,
    reps: usize,
}

impl Timer {
    /// A timer counting `reps` repetitions (at least one) after a warm-up.
    pub fn new(gpu: &Gpu, reps: usize) -> Result<Self> {
        if reps == 0 {
            return Err(Error::InvalidArgument("at least one repetition".into()));
        }
        let ctx = gpu.context();
        let scratch_bytes = (2 * gpu.info().l2_bytes).max(1 << 20);
        Ok(Self {
            gpu: gpu.clone(),
            start: ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?,
            end: ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?,
            l2_scratch: gpu.stream().alloc_zeros::<u8>(scratch_bytes)?,
            reps,
        })
    }

    /// Counted repetitions per measurement.
    pub fn reps(&self) -> usize {
        self.reps
    }

    /// Runs `rep` once as a warm-up and then `reps` times, and returns the times of the
    /// counted runs. Each call of `rep` must call [`Rep::time`] exactly once.
    pub fn measure(&mut self, mut rep: impl FnMut(&mut Rep<'_>) -> Result<()>) -> Result<Timing> {
        let mut samples = Vec::with_capacity(self.reps);
        for index in 0..=self.reps {
            let mut r = Rep {
                timer: self,
                seed: seed_of(index),
                timed: false,
            };
            rep(&mut r)?;
            if !r.timed {
                return Err(Error::InvalidArgument(
                    "a repetition finished without timing its work".into(),
                ));
            }
            let ms = self.start.elapsed_ms(&self.end)? as f64;
            if index > 0 {
                samples.push(ms);
            }
        }
        self.gpu.synchronize()?;
        Timing::from_samples(&samples)
            .ok_or_else(|| Error::InvalidArgument("no repetitions were counted".into()))
    }
}

/// One repetition of a measurement.
pub struct Rep<'a> {
    timer: &'a mut Timer,
    seed: u32,
    timed: bool,
}

impl Rep<'_> {
    /// A seed for this repetition's fresh inputs, different in every repetition.
    pub fn seed(&self) -> u32 {
        self.seed
    }

    /// Evicts L2, then times the device work that `work` enqueues on the stream.
    pub fn time(&mut self, work: impl FnOnce() -> Result<()>) -> Result<()> {
        if self.timed {
            return Err(Error::InvalidArgument(
                "a repetition may time its work only once".into(),
            ));
        }
        let t = &mut *self.timer;
        let stream = t.gpu.stream();
        stream.memset_zeros(&mut t.l2_scratch)?;
        t.start.record(stream)?;
        work()?;
        t.end.record(stream)?;
        self.timed = true;
        Ok(())
    }
}

/// Milliseconds of the device work that `work` enqueues, between two CUDA events: one
/// run, no warm-up and no L2 eviction, for work that changes its data and so cannot be
/// repeated (a batch of a growing table, one step of a fill sweep).
pub fn time_once(gpu: &Gpu, work: impl FnOnce() -> Result<()>) -> Result<f64> {
    let ctx = gpu.context();
    let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    start.record(gpu.stream())?;
    work()?;
    end.record(gpu.stream())?;
    Ok(f64::from(start.elapsed_ms(&end)?))
}

/// Seeds from a fixed odd-multiplier sequence: reproducible runs, distinct repetitions.
fn seed_of(index: usize) -> u32 {
    0x2545_f491_u32.wrapping_mul(index as u32 + 1) ^ 0x6a09_e667
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        let t = Timing::from_samples(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!(
            (t.median_ms, t.min_ms, t.max_ms, t.reps),
            (2.0, 1.0, 3.0, 3)
        );
        let t = Timing::from_samples(&[4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!(t.median_ms, 2.5);
        assert!(Timing::from_samples(&[]).is_none());
    }

    #[test]
    fn rates_and_spread() {
        let t = Timing::from_samples(&[1.0, 2.0, 1.5]).unwrap();
        assert!((t.giga_rate(3e9) - 2000.0).abs() < 1e-9);
        assert!((t.spread() - 1.0 / 1.5).abs() < 1e-12);
    }

    #[test]
    fn seeds_differ() {
        let seeds: std::collections::HashSet<u32> = (0..64).map(seed_of).collect();
        assert_eq!(seeds.len(), 64);
    }
}
