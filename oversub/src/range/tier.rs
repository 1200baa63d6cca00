//! The tiered placement's device cache ([`Cache`]) and the pipeline that runs a sorted
//! batch through it: each run's missing inner tables are copied in on a second stream
//! (the copy stream), and the dirty tables they evict written back on a third (the
//! write-back stream), while the previous run's kernel runs on the table's stream (the
//! compute stream).
//!
//! # The order of copies and kernels
//!
//! The host plans the whole batch first ([`CacheMap::plan`]), then issues, in the order
//! of [`schedule`] (whose tests check it for races on a model of the three streams), for
//! each run *i*: the write-backs of dirty victims on the write-back stream, the copies
//! into their slots on the copy stream and one `range_set_inner` launch that points the
//! outer entries of the loaded ranges at their slots (and those of the evicted ranges at
//! nothing); on the compute stream, a wait for those copies and run *i*'s kernel. Events
//! on the compute stream mark `done[0]` (everything before the batch) and `done[j + 1]`
//! (run *j*'s kernel). What makes every step safe:
//!
//! - A copy into a slot, and the write-back out of it, must follow every kernel that
//!   used the slot. An *early* copy goes to a slot that neither run *i* nor run *i - 1*
//!   uses, so its last user was run *i - 2* or before: the copy stream waits on
//!   `done[i - 1]` (`done[0]` for the first run), as does the write-back stream when an
//!   early load writes its victim back, and the copy overlaps run *i - 1*'s kernel. A
//!   *late* copy goes to a slot of run *i - 1*: both streams wait on `done[i]` before
//!   the late loads (the write-back stream when a late load writes back), the serial
//!   order, for caches too small for two runs at once.
//! - Write-backs go in groups of
//!   [`WRITE_BACK_GROUP`](super::schedule::WRITE_BACK_GROUP) loads: the group's
//!   write-backs, an event `written[g]` on the write-back stream, then on the copy stream
//!   a wait for it and the group's copies in. So a slot is read out before it is
//!   overwritten, and a range's home is written before any later copy reads it (every
//!   copy in after the group waits, by stream order, behind that event). The other way
//!   round, a write-back to a home never overtakes an earlier copy in from it: that copy
//!   was waited for by its run's kernel (`copied`), which the write-back stream waits for
//!   (`done`) before it writes the range's slot back. The write-backs of group *g + 1*
//!   run while the copies in of group *g* do: both directions of the link at once, and
//!   neither copy engine switches direction between two copies (on one stream, a
//!   write-back and a copy in taking turns cost about 20 us a pair on the H200 for
//!   262 KB tables, against 4 and 6 us for either alone).
//! - The outer-entry updates of run *i* are on the copy stream after its copies and
//!   before the event the compute stream waits on before run *i*'s kernel. They write
//!   the entries of run *i*'s ranges and of evicted ones (in neither run *i - 1* nor run
//!   *i*, or, late, after run *i - 1*'s kernel), never one a running kernel reads.
//! - Their values come from pinned staging written by the host once per batch, while the
//!   copy stream is idle (it is synchronized first), and copied up before the first
//!   update kernel. Every copy of the tier is between device memory and pinned memory.
//! - At the end of every call, whatever happened, the compute stream waits on the copy
//!   and write-back streams' last work and is synchronized, so every later read of a
//!   slot or home (which synchronizes the compute stream) and every free sees the copies
//!   finished.
//!
//! The plan is booked before anything is enqueued; should an enqueue fail (a driver
//! error), the book may be ahead of the device, so the table refuses further calls
//! instead of losing dirty tables silently.

use std::sync::Arc;

use cudarc::driver::{sys, CudaSlice, CudaStream, PushKernelArg};
use gpuds_core::Gpu;

use super::home::Home;
use super::plan::{split_runs_resident_first, CacheMap, Run, Step};
use super::schedule::{schedule, Op};
use super::{Access, RangeTable};
use crate::batch::shape;
use crate::error::{Error, Result};
use crate::placement::{check, Placement, Region};
use crate::streams::{self, Stalls, Way};

/// The tiered placement's device cache: slots of one inner table each, their book, the
/// copy and write-back streams and the counters of `stats()`.
pub(super) struct Cache {
    pub map: CacheMap,
    /// Each slot's device memory.
    pub regions: Vec<Region>,
    copy: Arc<CudaStream>,
    /// The write-back stream: dirty victims back to their homes.
    out: Arc<CudaStream>,
    /// A batch's outer-entry updates: pinned host words and their device twin (scratch
    /// space, like a sort's, outside the budget and `stats()`).
    staging: Option<(Region, Region)>,
    pub moved_in: u64,
    pub moved_out: u64,
    pub overlapped_in: u64,
    pub link_bytes: u64,
    pub copy_wait_ns: u64,
    /// Set from planning until the batch's copies are all enqueued.
    pending: bool,
}

/// Enqueues the copy of `bytes` between `slot` and the pinned `home` on `stream`.
fn copy(way: Way, home: &Home, slot: &Region, bytes: usize, stream: &CudaStream) -> Result<()> {
    // SAFETY: both hold `bytes` (an inner table); the caller orders the copy after every
    // kernel that used the slot and every copy that used the home (module docs).
    unsafe { streams::copy(way, home.host_ptr(), slot.device_ptr(), bytes, stream) }
}

/// The words of `m` outer-entry updates (range, inner pointer) as `range_set_inner`
/// reads them: the m pointers (u64), then the m ranges (u32, two per word, the first in
/// the low half: little-endian, as host and device are).
fn pack(updates: &[(u32, u64)]) -> Vec<u64> {
    let m = updates.len();
    let mut words = vec![0u64; m + m.div_ceil(2)];
    for (j, &(range, inner)) in updates.iter().enumerate() {
        words[j] = inner;
        words[m + j / 2] |= u64::from(range) << (32 * (j % 2));
    }
    words
}

/// A batch's staged outer-entry updates: `bytes` of pinned words at `host`, to be copied
/// to the device words whose pointers start at `inners` and ranges at `ranges`.
#[derive(Clone, Copy)]
struct Staged {
    inners: u64,
    ranges: u64,
    host: *mut std::ffi::c_void,
    bytes: usize,
}

impl Cache {
    /// A cache of `device_budget_bytes / inner_bytes` slots (at most one per range).
    pub fn new(
        gpu: &Gpu,
        device_budget_bytes: u64,
        inner_bytes: u64,
        num_ranges: usize,
    ) -> Result<Self> {
        let slots = device_budget_bytes / inner_bytes;
        if slots == 0 {
            return Err(Error::Config(format!(
                "a device budget of {device_budget_bytes} bytes holds no inner table of {inner_bytes} bytes"
            )));
        }
        let slots = slots.min(num_ranges as u64) as usize;
        let regions = (0..slots)
            .map(|_| Region::new(gpu, Placement::Device, inner_bytes))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            map: CacheMap::new(slots, num_ranges),
            regions,
            copy: gpu.new_stream()?,
            out: gpu.new_stream()?,
            staging: None,
            moved_in: 0,
            moved_out: 0,
            overlapped_in: 0,
            link_bytes: 0,
            copy_wait_ns: 0,
            pending: false,
        })
    }

    /// Fails when an earlier batch's copies were not all enqueued; else waits until the
    /// copy and write-back streams are idle (they normally are: every call ends
    /// synchronized).
    pub fn ready(&self) -> Result<()> {
        if self.pending {
            return Err(Error::Invalid(
                "an earlier copy of the tiered cache failed: the cache and the homes may \
                 disagree; rebuild the table"
                    .into(),
            ));
        }
        self.out.synchronize()?;
        self.copy.synchronize()?;
        Ok(())
    }

    /// Waits for the copy and write-back streams: for dropping the table after a failed
    /// call.
    pub fn idle(&self) {
        let _ = self.out.synchronize();
        let _ = self.copy.synchronize();
    }

    /// Grows the staging (pinned words in `home`'s placement and their device twin) to
    /// hold `updates` outer-entry updates.
    fn reserve(&mut self, gpu: &Gpu, home: Placement, updates: usize) -> Result<()> {
        let bytes = 8 * (updates + updates.div_ceil(2)) as u64;
        let held = self.staging.as_ref().map_or(0, |(h, _)| h.bytes());
        if bytes > held {
            self.staging = None;
            let grown = bytes.max(2 * held);
            let host = Region::new(gpu, home, grown)?;
            if host.host_ptr().is_null() {
                return Err(Error::Invalid(
                    "the staging is not pinned host memory".into(),
                ));
            }
            self.staging = Some((host, Region::new(gpu, Placement::Device, grown)?));
        }
        Ok(())
    }

    /// Writes `updates` into the staging ([`pack`]); `None` when there are none. The
    /// staging must hold them ([`reserve`](Self::reserve)) and the copy stream must be
    /// idle ([`ready`](Self::ready)).
    fn stage(&self, updates: &[(u32, u64)]) -> Result<Option<Staged>> {
        if updates.is_empty() {
            return Ok(None);
        }
        let words = pack(updates);
        let bytes = words.len() * 8;
        let (host, device) = match &self.staging {
            Some((h, d)) if h.bytes() >= bytes as u64 => (h, d),
            _ => return Err(Error::Invalid("the staging is too small".into())),
        };
        let h = host.host_ptr();
        // SAFETY: the pinned staging holds at least `words.len()` words; the copy
        // stream, its only reader, is idle.
        unsafe { std::ptr::copy_nonoverlapping(words.as_ptr(), h.cast::<u64>(), words.len()) };
        let base = device.device_ptr();
        Ok(Some(Staged {
            inners: base,
            ranges: base + 8 * updates.len() as u64,
            host: h,
            bytes,
        }))
    }

    /// Makes the compute stream `s` wait for everything on the copy and write-back
    /// streams, synchronizes it, and adds the compute stream's waits for copies
    /// (`stalls`, event pairs) to the counter. Runs whatever `enqueued` says, so that no
    /// copy is left unordered.
    fn settle(&mut self, s: &CudaStream, enqueued: Result<Stalls>) -> Result<()> {
        let joined = s.join(&self.copy);
        let joined_out = s.join(&self.out);
        let synced = s.synchronize();
        let stalls = enqueued?;
        joined?;
        joined_out?;
        synced?;
        self.copy_wait_ns += stalls.total_ns()?;
        self.pending = false;
        Ok(())
    }
}

impl RangeTable {
    /// The home of `range`'s inner table.
    fn home(&self, range: usize) -> Result<&Home> {
        self.inners[range]
            .as_ref()
            .ok_or_else(|| Error::Invalid(format!("range {range} cached without a home")))
    }

    /// Tiered: runs `launch` (a kernel on the compute stream) once per run of the sorted
    /// batch `keys`, after the run's inner tables are in the cache (a writing `access` marks them
    /// dirty), the copies overlapping the previous run's kernel (module docs).
    /// Synchronizes.
    pub(super) fn tiered_runs(
        &mut self,
        keys: &CudaSlice<u32>,
        access: Access,
        launch: &mut dyn FnMut(&RangeTable, &Run) -> Result<()>,
    ) -> Result<()> {
        let write = access.writes();
        let counts = self.per_range("range_histogram_u32", keys)?;
        let bytes = self.inner_bytes();
        let placement = self.config.placement;
        let Some(cache) = self.cache.as_mut() else {
            return Err(Error::Invalid("no tiered cache".into()));
        };
        cache.ready()?;
        let inners = &self.inners;
        let map = &cache.map;
        // A fresh table (see `Home::fresh`) holds no key: lookups and removals leave its
        // range without a slot, so that they answer at once (its outer entry points
        // nowhere), as for a range without a table.
        let runs = split_runs_resident_first(
            &counts,
            map.per_run(),
            |r| {
                inners[r]
                    .as_ref()
                    .is_some_and(|h| access == Access::Insert || !h.fresh)
            },
            |r| map.slot_of(r).is_some(),
        );
        // Staging for a load and an eviction per range, made before anything is booked
        // (a failed allocation changes nothing); the plan checks its runs first too.
        cache.reserve(
            &self.gpu,
            placement,
            2 * runs.iter().map(|r| r.ranges.len()).sum::<usize>(),
        )?;
        let steps = cache.map.plan(&runs, write)?;
        cache.pending = true;
        let mut updates = Vec::new();
        let mut spans = Vec::with_capacity(steps.len());
        for (i, step) in steps.iter().enumerate() {
            let first = updates.len();
            // A fresh table's load is a fill with zeros on the device: no copy, no link.
            let copied_in = |range: usize| !inners[range].as_ref().is_some_and(|h| h.fresh);
            for l in step.loads() {
                if let Some(old) = l.evicted {
                    updates.push((old as u32, 0));
                }
                updates.push((l.range as u32, cache.regions[l.slot].device_ptr()));
                cache.moved_in += u64::from(copied_in(l.range));
                cache.moved_out += u64::from(l.write_back);
                cache.link_bytes +=
                    bytes * (u64::from(copied_in(l.range)) + u64::from(l.write_back));
            }
            if i > 0 {
                let early = step.early.iter().filter(|l| copied_in(l.range)).count();
                cache.overlapped_in += early as u64;
            }
            spans.push(first..updates.len());
        }
        let staged = cache.stage(&updates)?;
        let enqueued = self.enqueue(&runs, &steps, &spans, staged, launch);
        // The loaded tables are written now (or were not fresh): their newest copy is in
        // the cache, and their homes get it when they are evicted.
        for l in steps.iter().flat_map(Step::loads) {
            if let Some(home) = self.inners[l.range].as_mut() {
                home.fresh = false;
            }
        }
        let stream = self.gpu.stream().clone();
        match self.cache.as_mut() {
            Some(cache) => cache.settle(&stream, enqueued),
            None => Err(Error::Invalid("no tiered cache".into())),
        }
    }

    /// Issues the batch's copies and kernels in the order of [`schedule`]; returns the
    /// compute stream's timed waits for copies.
    fn enqueue(
        &self,
        runs: &[Run],
        steps: &[Step],
        spans: &[std::ops::Range<usize>],
        staged: Option<Staged>,
        launch: &mut dyn FnMut(&RangeTable, &Run) -> Result<()>,
    ) -> Result<Stalls> {
        let cache = self
            .cache
            .as_ref()
            .ok_or_else(|| Error::Invalid("no tiered cache".into()))?;
        let (s, c, out) = (self.gpu.stream(), &cache.copy, &cache.out);
        let bytes = self.inner_bytes() as usize;
        let set_inner = self.module.kernel("range_set_inner_u32")?;
        let r = self.table_ref(0);
        let missing = || Error::Invalid("the schedule names a step it lacks".into());
        let mut done = Vec::new();
        let mut copied = None;
        let mut written = Vec::new();
        let mut stalls = Stalls::default();
        for op in schedule(steps) {
            match op {
                Op::Upload => {
                    let st = staged.ok_or_else(missing)?;
                    // SAFETY: pinned staging of `st.bytes` to its device twin of at least
                    // as many; the device words are read by later kernels of this stream.
                    unsafe { streams::copy(Way::In, st.host, st.inners, st.bytes, c) }?;
                }
                Op::Done(_) => done.push(s.record_event(None)?),
                Op::AwaitDone(j) => c.wait(done.get(j).ok_or_else(missing)?)?,
                Op::OutAwaitDone(j) => out.wait(done.get(j).ok_or_else(missing)?)?,
                Op::WriteBack { slot, range } => copy(
                    Way::Out,
                    self.home(range)?,
                    &cache.regions[slot],
                    bytes,
                    out,
                )?,
                Op::WrittenBack(_) => written.push(out.record_event(None)?),
                Op::AwaitWrittenBack(g) => c.wait(written.get(g).ok_or_else(missing)?)?,
                Op::CopyIn { slot, range } => {
                    let (home, region) = (self.home(range)?, &cache.regions[slot]);
                    if home.fresh {
                        // SAFETY: the slot holds `bytes`; ordered like a copy into it.
                        let r = unsafe {
                            sys::cuMemsetD8Async(region.device_ptr(), 0, bytes, c.cu_stream())
                        };
                        check(r, "clearing a cache slot")?
                    } else {
                        copy(Way::In, home, region, bytes, c)?
                    }
                }
                Op::SetInner(i) => {
                    let (st, span) = (staged.ok_or_else(missing)?, &spans[i]);
                    let m = span.len() as u64;
                    let (ranges, inners) = (
                        st.ranges + 4 * span.start as u64,
                        st.inners + 8 * span.start as u64,
                    );
                    let mut args = c.launch_builder(set_inner.func());
                    args.arg(&r).arg(&ranges).arg(&inners).arg(&m);
                    // SAFETY: reads m staged updates from span.start; writes
                    // outer[ranges[j]].inner, entries no running kernel reads (module docs).
                    unsafe { args.launch(shape(&self.gpu, &set_inner, span.len())?) }?;
                }
                Op::Copied(_) => copied = Some(c.record_event(None)?),
                Op::AwaitCopied(_) => stalls.wait(s, copied.as_ref().ok_or_else(missing)?)?,
                Op::Kernel(i) => launch(self, &runs[i])?,
            }
        }
        Ok(stalls)
    }

    /// Tiered: writes every dirty cached inner table back to its home, on the copy stream
    /// after every kernel so far. Synchronizes.
    pub(super) fn flush(&mut self) -> Result<()> {
        let Some(cache) = &self.cache else {
            return Ok(());
        };
        cache.ready()?;
        let (s, c) = (self.gpu.stream(), &cache.copy);
        let bytes = self.inner_bytes();
        let mut written = Vec::new();
        let mut enqueued = || -> Result<()> {
            c.wait(&s.record_event(None)?)?;
            for (i, slot) in cache.map.slots().iter().enumerate() {
                if let (true, Some(range)) = (slot.dirty, slot.range) {
                    copy(
                        Way::Out,
                        self.home(range)?,
                        &cache.regions[i],
                        bytes as usize,
                        c,
                    )?;
                    written.push(i);
                }
            }
            Ok(())
        };
        let enqueued = enqueued();
        let joined = s.join(c);
        let synced = s.synchronize();
        enqueued?;
        joined?;
        synced?;
        let Some(cache) = self.cache.as_mut() else {
            return Ok(());
        };
        for i in written {
            cache.map.mark_clean(i);
            cache.moved_out += 1;
            cache.link_bytes += bytes;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::pack;

    #[test]
    fn staged_updates_read_back_as_the_kernel_reads_them() {
        for m in [1usize, 2, 5] {
            let updates: Vec<(u32, u64)> = (0..m)
                .map(|j| (7 + j as u32, 0x1000_0000_0000 + 0x40000 * j as u64))
                .collect();
            let words = pack(&updates);
            assert_eq!(words.len(), m + m.div_ceil(2));
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            for (j, &(range, inner)) in updates.iter().enumerate() {
                // inners[j] at byte 8j; ranges[j] at byte 8m + 4j (the kernel's views).
                let at = |o: usize, n: usize| &bytes[o..o + n];
                assert_eq!(at(8 * j, 8), inner.to_le_bytes());
                assert_eq!(at(8 * m + 4 * j, 4), range.to_le_bytes());
            }
        }
        assert!(pack(&[]).is_empty());
    }
}
