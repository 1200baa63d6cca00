//! The queries of [`Lists`]: lookups, successor and predecessor, range counts and
//! collection.

use cudarc::driver::PushKernelArg;
use gpuds_core::failures::CallStatus;
use gpuds_core::primitives;

use super::{Collected, Lists};
use crate::batch::{bits, read_found};
use crate::error::Result;

impl Lists {
    /// Lookups: (found, values) in the caller's order.
    pub fn find(&mut self, keys: &[u32], want_values: bool) -> Result<(Vec<bool>, Vec<u32>)> {
        let n = keys.len();
        if n == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        let (k, index) = self.sorted_with_index(keys)?;
        let stream = self.gpu.stream().clone();
        let mut found = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
        let mut values = stream.alloc_zeros::<u32>(if want_values { n } else { 1 })?;
        let call = CallStatus::new(&self.gpu, n)?;
        let kernel = self.kernel("sl_find_u32")?;
        self.over_runs(&k, false, &mut |lists, span| {
            let (r, ks, is, m) = lists.span_args(&call, &k, &index, span);
            let (null, failed) = (0u64, call.bits_ptr());
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r).arg(&ks).arg(&is).arg(&m);
            if want_values {
                args.arg(&mut values);
            } else {
                args.arg(&null);
            }
            args.arg(&mut found).arg(&failed);
            // SAFETY: reads keys/index[..m]; writes values[index] (when asked), found bits
            // (positions below n).
            unsafe { args.launch(lists.warps_shape(&kernel, m, lists.keys_per_warp)?) }?;
            Ok(())
        })?;
        call.check()?;
        read_found(&stream, &found, &values, n, want_values)
    }

    /// Successors (`down` false: smallest key >= k) or predecessors (largest key <= k).
    pub fn neighbours(&mut self, keys: &[u32], down: bool) -> Result<Vec<Option<(u32, u32)>>> {
        let n = keys.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let stream = self.gpu.stream().clone();
        // Tiered: the queries rewritten to their target ranges (those without one answer
        // none), sorted, with the targets for the runs.
        let (k, index, targets) = if self.tier.is_some() {
            let (asks, at, targets) = self.plan_neighbours(keys, down)?;
            if asks.is_empty() {
                return Ok(vec![None; n]);
            }
            (
                stream.clone_htod(&asks)?,
                stream.clone_htod(&at)?,
                Some(targets),
            )
        } else {
            let (k, index) = self.sorted_with_index(keys)?;
            (k, index, None)
        };
        let mut out_keys = stream.alloc_zeros::<u32>(n)?;
        let mut out_values = stream.alloc_zeros::<u32>(n)?;
        let mut found = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
        let call = CallStatus::new(&self.gpu, n)?;
        let kernel = self.kernel("sl_neighbour_u32")?;
        let mut launch = |lists: &mut Self, span: std::ops::Range<usize>| -> Result<()> {
            let (r, ks, is, m) = lists.span_args(&call, &k, &index, span);
            let down32 = u32::from(down);
            let mut args = stream.launch_builder(kernel.func());
            args.arg(&r)
                .arg(&ks)
                .arg(&is)
                .arg(&m)
                .arg(&down32)
                .arg(&mut out_keys)
                .arg(&mut out_values)
                .arg(&mut found);
            // SAFETY: reads keys/index[..m]; writes out_keys/out_values[index], found bits
            // (positions below n).
            unsafe { args.launch(lists.warps_shape(&kernel, m, lists.keys_per_warp)?) }?;
            Ok(())
        };
        match targets {
            Some(targets) => self.tiered_runs(&targets, false, &mut launch)?,
            None => launch(self, 0..n)?,
        }
        call.check()?;
        let found = bits(&stream.clone_dtoh(&found)?, n);
        let (ks, vs) = (
            stream.clone_dtoh(&out_keys)?,
            stream.clone_dtoh(&out_values)?,
        );
        Ok((0..n).map(|i| found[i].then(|| (ks[i], vs[i]))).collect())
    }

    /// Every pair with lo <= key <= hi per query, in key order: a count pass, a scan, a
    /// collect pass (tiered: per run of the queries split by range).
    pub fn range(&mut self, ranges: &[(u32, u32)]) -> Result<Collected> {
        if self.tier.is_some() {
            return self.range_tiered(ranges);
        }
        self.range_pass(ranges)
    }

    /// [`range`](Self::range) in one pass over every list.
    pub(in crate::skiplist) fn range_pass(&mut self, ranges: &[(u32, u32)]) -> Result<Collected> {
        let n = ranges.len();
        if n == 0 {
            return Ok(Collected {
                offsets: vec![0],
                keys: Vec::new(),
                values: Vec::new(),
            });
        }
        let stream = self.gpu.stream().clone();
        let (lo, hi): (Vec<u32>, Vec<u32>) = ranges.iter().copied().unzip();
        let (lo, hi) = (stream.clone_htod(&lo)?, stream.clone_htod(&hi)?);
        let mut counts = stream.alloc_zeros::<u64>(n)?;
        let call = CallStatus::new(&self.gpu, n)?;
        let r = self.skip_ref(call.status_ptr());
        let n64 = n as u64;
        let count = self.kernel("sl_range_count_u32")?;
        let mut args = stream.launch_builder(count.func());
        args.arg(&r).arg(&lo).arg(&hi).arg(&n64).arg(&mut counts);
        // SAFETY: reads lo/hi[..n]; writes counts[..n].
        unsafe { args.launch(self.warps_shape(&count, n64, 1)?) }?;
        let mut offsets = stream.alloc_zeros::<u64>(n)?;
        let total = primitives::exclusive_scan(&self.gpu, &counts, &mut offsets)?;
        let room = usize::try_from(total)
            .map_err(|_| gpuds_core::Error::CapacityOverflow(format!("{total} pairs")))?;
        let mut keys = stream.alloc_zeros::<u32>(room.max(1))?;
        let mut values = stream.alloc_zeros::<u32>(room.max(1))?;
        let collect = self.kernel("sl_range_collect_u32")?;
        let mut args = stream.launch_builder(collect.func());
        args.arg(&r)
            .arg(&lo)
            .arg(&hi)
            .arg(&offsets)
            .arg(&n64)
            .arg(&mut keys)
            .arg(&mut values);
        // SAFETY: query i writes counts[i] pairs from offsets[i]; the offsets are the scan
        // of the counts, so every write is below total (no update ran in between).
        unsafe { args.launch(self.warps_shape(&collect, n64, 1)?) }?;
        call.check()?;
        let mut offs: Vec<usize> = stream
            .clone_dtoh(&offsets)?
            .into_iter()
            .map(|o| o as usize)
            .collect();
        offs.push(room);
        let mut keys = stream.clone_dtoh(&keys)?;
        let mut values = stream.clone_dtoh(&values)?;
        keys.truncate(room);
        values.truncate(room);
        Ok(Collected {
            offsets: offs,
            keys,
            values,
        })
    }

    /// The first `top` entries of pool `p`'s free list. Synchronizes.
    pub fn free_list(&self, p: usize, top: usize) -> Result<Vec<u32>> {
        if top == 0 {
            return Ok(Vec::new());
        }
        Ok(self
            .gpu
            .stream()
            .clone_dtoh(&self.pools[p].free.slice(..top))?)
    }
}
