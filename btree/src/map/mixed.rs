//! Mixed concurrent batches (`apply`, §3.5.6).

use super::*;
use crate::keys::Word;
use crate::ops::{TreeOp, TreeReply};
use gpuds_core::cudarc::driver::{CudaSlice, PushKernelArg};
use gpuds_core::failures::indices;
use gpuds_core::DeviceType;

impl<K: TreeKey, V: TreeValue> GpuBTreeMap<K, V> {
    /// Runs a mixed batch in one kernel, every operation by its own warp, concurrently:
    /// see the [crate docs](crate) for what the replies may show. Synchronizes.
    ///
    /// ```no_run
    /// use gpuds_btree::{GpuBTreeMap, TreeOp, TreeReply};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut tree = GpuBTreeMap::<u32, u32>::new(&gpu)?;
    /// tree.insert_many(&[1, 2], &[10, 20])?;
    /// let replies = tree.apply(&[TreeOp::Insert(3, 30), TreeOp::Get(1), TreeOp::Count(1, 2)])?;
    /// assert_eq!(replies[1], TreeReply::Value(Some(10)));
    /// assert_eq!(replies[2], TreeReply::Count(2));
    /// # Ok::<(), gpuds_btree::Error>(())
    /// ```
    ///
    /// Insertions that find the pool out of nodes below [`BTreeConfig::max_nodes`] run
    /// again, alone, after the pool has grown (a legal order of a concurrent batch: they
    /// come after everything else). An operation that still fails (the pool at its
    /// maximum, or `max_steps` passed) changes nothing; the call then returns
    /// [`gpuds_core::Error::NotApplied`] naming exactly those operations, and every other
    /// update of the batch took effect.
    pub fn apply(&mut self, ops: &[TreeOp<K, V>]) -> Result<Vec<TreeReply<K, V>>> {
        batch_len(ops.len())?;
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let mut replies = Vec::new();
        self.run_growing(|tree, at| {
            let (r, flags, failed) = tree.apply_round(&picked(ops, at))?;
            match at {
                None => replies = r,
                Some(at) => {
                    for (&i, reply) in at.iter().zip(r) {
                        replies[i] = reply;
                    }
                }
            }
            Ok((flags, failed))
        })?;
        Ok(replies)
    }

    /// Runs `ops` as one mixed batch: the replies, the flags the kernels reported (read
    /// and cleared) and the indices of the updates that failed. Synchronizes.
    #[allow(clippy::type_complexity)]
    fn apply_round(
        &mut self,
        ops: &[TreeOp<K, V>],
    ) -> Result<(Vec<TreeReply<K, V>>, Status, Vec<usize>)> {
        let n = ops.len();
        let mut codes = Vec::with_capacity(n);
        let mut keys = Vec::with_capacity(n);
        let mut args = Vec::with_capacity(n);
        for op in ops {
            let (c, k, a) = op.encode::<Word<K, V>>();
            codes.push(c);
            keys.push(k);
            args.push(a);
        }
        let stream = self.gpu.stream().clone();
        let (codes, keys, args) = (
            stream.clone_htod(&codes)?,
            stream.clone_htod(&keys)?,
            stream.clone_htod(&args)?,
        );
        let mut out_a = stream.alloc_zeros::<Word<K, V>>(n)?;
        let mut out_b = stream.alloc_zeros::<V>(n)?;
        let mut found = stream.alloc_zeros::<u32>(n.div_ceil(32))?;
        let failed = self.launch_apply(&codes, &keys, &args, &mut out_a, &mut out_b, &mut found)?;
        let (a, b) = (stream.clone_dtoh(&out_a)?, stream.clone_dtoh(&out_b)?);
        let (found, failed) = (stream.clone_dtoh(&found)?, stream.clone_dtoh(&failed)?);
        let flags = self.runner.take_status()?;
        let replies = ops
            .iter()
            .enumerate()
            .map(|(i, op)| {
                let hit = bit(&found, i);
                let word = a[i].to_u64();
                let value = V::from_u64(word);
                match op {
                    TreeOp::Insert(..) => TreeReply::Inserted { replaced: hit },
                    TreeOp::Remove(_) => TreeReply::Removed(hit.then_some(value)),
                    TreeOp::Get(_) => TreeReply::Value(hit.then_some(value)),
                    TreeOp::Successor(_) => {
                        TreeReply::Successor(hit.then(|| (K::from_u64(word), b[i])))
                    }
                    TreeOp::Count(..) => TreeReply::Count(word as u32),
                }
            })
            .collect();
        Ok((replies, flags, indices(&failed, n)))
    }

    /// A mixed batch on device buffers: operation codes (0 insert, 1 remove, 2 get,
    /// 3 successor, 4 count), keys, arguments (an insert's value, a count's upper bound);
    /// results as in `btree_apply` (value / successor key / count, successor value, and the
    /// found / replaced / removed bits). Does not synchronize unless the pool must grow.
    #[allow(clippy::too_many_arguments)]
    pub fn apply_device(
        &mut self,
        codes: &CudaSlice<u32>,
        keys: &CudaSlice<K>,
        args: &CudaSlice<Word<K, V>>,
        out_a: &mut CudaSlice<Word<K, V>>,
        out_b: &mut CudaSlice<V>,
        found: &mut CudaSlice<u32>,
    ) -> Result<()> {
        self.launch_apply(codes, keys, args, out_a, out_b, found)
            .map(drop)
    }

    /// Launches `btree_apply`; returns its failed bits (one per request).
    fn launch_apply(
        &mut self,
        codes: &CudaSlice<u32>,
        keys: &CudaSlice<K>,
        args: &CudaSlice<Word<K, V>>,
        out_a: &mut CudaSlice<Word<K, V>>,
        out_b: &mut CudaSlice<V>,
        found: &mut CudaSlice<u32>,
    ) -> Result<CudaSlice<u32>> {
        let n = query_len(
            codes.len().min(keys.len()).min(args.len()),
            out_a.len().min(out_b.len()),
            found.len(),
        )?;
        let stream = self.gpu.stream().clone();
        let mut failed = stream.alloc_zeros::<u32>((n as usize).div_ceil(32).max(1))?;
        if n == 0 {
            return Ok(failed);
        }
        self.runner
            .ensure_room(split_bound(n as usize, self.layout.pairs()))?;
        let r = self.device_ref();
        let shape = self.grid(&self.kernels.apply, n as usize)?;
        let mut b = stream.launch_builder(self.kernels.apply.func());
        b.arg(&r)
            .arg(codes)
            .arg(keys)
            .arg(args)
            .arg(&n)
            .arg(out_a)
            .arg(out_b)
            .arg(found)
            .arg(&mut failed);
        // SAFETY: buffer lengths were checked by query_len; failed holds ceil(n / 32) words.
        unsafe { b.launch(shape) }?;
        Ok(failed)
    }
}
