//! Mixed batches: updates and snapshot queries in one kernel (§4.5.2).

use super::*;
use crate::ops::{MvOp, MvReply};
use gpuds_core::failures::indices;

impl<K: TreeKey, V: TreeValue> VersionedBTreeMap<K, V> {
    /// Runs a mixed batch in one kernel, every operation concurrently with the others:
    /// updates out of place ([`Updates::OutOfPlace`]), each query at a tile-wide snapshot
    /// it takes when it starts (reported in [`MvReply::ts`]). The kernel is a persistent
    /// grid; when no host snapshot is live, the older versions it makes go to its
    /// epoch-based reclaimer as soon as no running query can need them (§4.4.4), so memory
    /// stays bounded however long the batch. Every query is exact at its
    /// snapshot: two queries with the same timestamp see the same pairs, and a query with
    /// a larger timestamp sees every update a smaller one saw. A `Range` returns at most
    /// `range_cap` pairs (its count is exact). Synchronizes; then collects versions.
    ///
    /// Updates that fail (the pool at its maximum, `max_steps` passed) change nothing; the
    /// call then returns [`gpuds_core::Error::NotApplied`] naming them, every other
    /// operation having taken effect.
    ///
    /// ```no_run
    /// use gpuds_mvbtree::{MvOp, VersionedBTreeMap};
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let mut map = VersionedBTreeMap::<u32, u32>::new(&gpu)?;
    /// map.insert_many(&[1, 2], &[10, 20])?;
    /// let replies = map.apply(&[MvOp::Insert(3, 30), MvOp::Range(0, 9), MvOp::Get(1)], 8)?;
    /// assert!(replies[1].pairs.starts_with(&[(1, 10), (2, 20)])); // (3, 30) or not, whole
    /// assert_eq!(replies[2].value, Some(10));
    /// # Ok::<(), gpuds_mvbtree::Error>(())
    /// ```
    pub fn apply(&mut self, ops: &[MvOp<K, V>], range_cap: u32) -> Result<Vec<MvReply<K, V>>> {
        let n = batch_len(ops.len())?;
        if n == 0 {
            return Ok(Vec::new());
        }
        capped_len(n, range_cap)?;
        let zero_k = K::from_u64(0);
        let zero_v = V::from_u64(0);
        let mut codes = Vec::with_capacity(n as usize);
        let mut keys = Vec::with_capacity(n as usize);
        let mut arg_keys = Vec::with_capacity(n as usize);
        let mut arg_values = Vec::with_capacity(n as usize);
        for op in ops {
            let (c, k, ak, av) = match *op {
                MvOp::Insert(k, v) => (0u32, k, zero_k, v),
                MvOp::Remove(k) => (1, k, zero_k, zero_v),
                MvOp::Get(k) => (2, k, zero_k, zero_v),
                MvOp::Successor(k) => (3, k, zero_k, zero_v),
                MvOp::RangeCount(lo, hi) => (4, lo, hi, zero_v),
                MvOp::Range(lo, hi) => (5, lo, hi, zero_v),
            };
            codes.push(c);
            keys.push(k);
            arg_keys.push(ak);
            arg_values.push(av);
        }
        let updates = ops.iter().filter(|op| !op.is_query()).count();
        let stream = self.gpu.stream().clone();
        self.runner.clear_status()?;
        let (d_codes, d_keys) = (stream.clone_htod(&codes)?, stream.clone_htod(&keys)?);
        let (d_ak, d_av) = (
            stream.clone_htod(&arg_keys)?,
            stream.clone_htod(&arg_values)?,
        );
        let mut out = MvReplyBuffers::new(&self.gpu, n as usize, range_cap)?;
        self.launch_apply(&d_codes, &d_keys, &d_ak, &d_av, &mut out, updates)?;
        let ts = stream.clone_dtoh(out.ts())?;
        let (out_k, out_v) = (
            stream.clone_dtoh(out.keys())?,
            stream.clone_dtoh(out.values())?,
        );
        let counts = stream.clone_dtoh(out.counts())?;
        let found = stream.clone_dtoh(out.found())?;
        let (rk, rv) = (
            stream.clone_dtoh(out.range_keys())?,
            stream.clone_dtoh(out.range_values())?,
        );
        let flags = self.runner.take_status()? | self.reclaimer.take_status()?;
        let failed_bits = if flags.is_ok() {
            Vec::new()
        } else {
            stream.clone_dtoh(out.failed())?
        };
        let mut replies = Vec::with_capacity(n as usize);
        for (i, op) in ops.iter().enumerate() {
            let hit = found[i / 32] >> (i % 32) & 1 == 1;
            let mut reply = MvReply {
                ts: ts[i],
                found: hit,
                value: None,
                successor: None,
                count: 0,
                pairs: Vec::new(),
            };
            match op {
                MvOp::Insert(..) => {}
                MvOp::Remove(_) | MvOp::Get(_) => reply.value = hit.then_some(out_v[i]),
                MvOp::Successor(_) => reply.successor = hit.then_some((out_k[i], out_v[i])),
                MvOp::RangeCount(..) => reply.count = counts[i],
                MvOp::Range(..) => {
                    reply.count = counts[i];
                    let base = i * range_cap as usize;
                    let got = counts[i].min(range_cap) as usize;
                    reply.pairs = (base..base + got).map(|j| (rk[j], rv[j])).collect();
                }
            }
            replies.push(reply);
        }
        // No kernel runs: what the batch handed to the reclaimer goes back to the pool.
        let drained = self.reclaimer.drain(self.runner.pool())?;
        self.runner.release(drained);
        self.collect_if_due()?;
        if !flags.is_ok() {
            return Err(self
                .runner
                .failure(flags, indices(&failed_bits, n as usize))
                .into());
        }
        Ok(replies)
    }
}
