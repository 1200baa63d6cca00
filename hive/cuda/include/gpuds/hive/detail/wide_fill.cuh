// gpuds/hive/detail/wide_fill.cuh: the bulk insert of HiveMap tables of wide slots (u64
// keys; buckets of 8 or 16 slots), in two kernels like the packed one
// (detail/bulk_insert.cuh says why fills are safe): per-lane fills first, then the tile
// code for what the fills left.
//
// The first kernel (hive_insert) gives each lane one insert. The lane reads b1's key
// words (through L1 the first time: a stale line shows slots empty that are not, whose
// fill then fails, never a wrong key) and b1's metadata word (for its flags only), then:
// - k in b1 (or, where b1 has SPILL, in b2): one store of the value into k's slot;
// - else an empty slot in b1: a compare-and-swap of the lowest empty slot's key word from
//   EMPTY_KEY to k, then a store of the value and an atomic and of the slot's free bit
//   (no one in this kernel waits for either);
// - else (b1 full) the same in b2, b1's SPILL set first;
// - a lost swap reads again (relaxed, at L2); what is left after TRIES reads, or finds b1
//   locked or STASHED, b1 and b2 full, or a reserved key, goes to the queue
//   (bulk::QUEUE_HEAD), whose inserts the second kernel (hive_insert_queued) runs through
//   insert_ops (insert_alone and the tile code: locks, evictions, the stash) once the
//   first has ended.
// The common case, a new key with room in b1, is one bucket read, one compare-and-swap
// and two stores, with no fence, as the packed fill (one compare-and-swap of the whole
// pair there).
//
// Why the two-step protocol of detail/hive_slot.cuh is not needed here: in this kernel
// every write of a key word is such a fill (EMPTY_KEY to its final key), nothing empties
// a slot and nothing moves a key, so the packed fill's argument holds for key words (two
// fills of one key into a bucket cannot both succeed: the later one chose the lowest
// slot it read empty, so it read the other's slot full, with k; a fill into b2 follows a
// read of b1 full without k, and b1 stays full). No one in this kernel reads a value
// word, so a key published before its value is seen by no reader: a replace of k (a
// second pair of k in the batch) stores its value without looking at the old one, and
// whichever store lands last wins, as for any two pairs of one key in a batch. The
// kernel boundary makes every key, value and free bit visible before anything reads
// them (the second kernel, later lookups).
#pragma once
#include <gpuds/hive/detail/batch_loop.cuh>
#include <gpuds/hive/detail/bulk_insert.cuh>

namespace gpuds {
namespace hive {
namespace wide_fill {

constexpr unsigned TRIES = 8;  // reads of b1 before an insert is left to the second kernel

// A wide bucket's key words (the first SLOTS words of the bucket: one 128-byte line for
// 16 slots), loaded by one lane 16 bytes at a time (plain loads through L1, or relaxed
// at gpu scope), and what they say about k: the first slot holding it (SLOTS if none)
// and the mask of empty slots.
template <typename S, bool COHERENT>
__device__ __forceinline__ unsigned scan_keys(const unsigned long long* bucket, typename S::key_type k, unsigned& hit) {
  ulonglong2 w[SLOTS / 2];
#pragma unroll
  for (unsigned i = 0; i < SLOTS / 2; ++i) w[i] = load_slot_pair<COHERENT>(bucket + 2 * i);
  unsigned empty = 0;
  hit = SLOTS;
#pragma unroll
  for (unsigned i = SLOTS / 2; i-- > 0;) {
    if (w[i].x == S::EMPTY_KEY) empty |= 1u << (2 * i);
    if (w[i].y == S::EMPTY_KEY) empty |= 1u << (2 * i + 1);
    if (w[i].y == k) hit = 2 * i + 1;
    if (w[i].x == k) hit = 2 * i;
  }
  return empty;
}

// Fills the lowest empty slot of `empty` in bucket b with (k, v): true when the key
// word's swap took it (the value and the free bit follow).
template <typename Ref>
__device__ __forceinline__ bool fill_slot(const Ref& t, unsigned b, unsigned empty, typename Ref::key_type k,
                                          typename Ref::value_type v) {
  using S = typename Ref::S;
  const unsigned slot = __ffs(empty) - 1;
  const typename S::ptr p = slot_at<S>(t.bucket(b), slot);
  if (mem::cas_relaxed(p.key, S::EMPTY_KEY, k) != S::EMPTY_KEY) return false;
  mem::st_relaxed(p.value, v);
  meta_and(t.meta + b, ~(1ull << slot));
  return true;
}

// One insert by one lane (see the top of this file). Returns STEP_CLAIM, STEP_REPLACE,
// or STEP_LEFTOVER for the queue.
template <typename Ref>
__device__ __forceinline__ unsigned insert_one(const Ref& t, typename Ref::key_type k, typename Ref::value_type v) {
  using S = typename Ref::S;
  if (Ref::reserved(k)) return STEP_LEFTOVER;  // the tile code reports it
  const hash_pair h = hashes(k);
  const unsigned b1 = t.bucket_of(h.h1), b2 = t.bucket_of(h.h2);
  for (unsigned tries = 0; tries < TRIES; ++tries) {
    const unsigned long long m = mem::ld_relaxed(t.meta + b1);
    unsigned hit;
    const unsigned empty = tries == 0 ? scan_keys<S, false>(t.bucket(b1), k, hit) : scan_keys<S, true>(t.bucket(b1), k, hit);
    if (hit != SLOTS) {
      mem::st_relaxed(slot_at<S>(t.bucket(b1), hit).value, v);
      return STEP_REPLACE;
    }
    if ((m & (META_STASHED | META_LOCK)) != 0) return STEP_LEFTOVER;
    if (empty == 0) {
      if (b2 == b1) return STEP_LEFTOVER;
      // b1 holds SLOTS keys, none k, and keeps them in this kernel: k goes to b2.
      if ((m & META_SPILL) == 0) meta_or(t.meta + b1, META_SPILL);
    } else if ((m & META_SPILL) == 0 || b2 == b1) {
      if (fill_slot(t, b1, empty, k, v)) return STEP_CLAIM;
      continue;
    }
    // b2: k may be there (b1 has SPILL), or k goes there (b1 full).
    unsigned hit2;
    const unsigned empty2 = scan_keys<S, true>(t.bucket(b2), k, hit2);
    if (hit2 != SLOTS) {
      mem::st_relaxed(slot_at<S>(t.bucket(b2), hit2).value, v);
      return STEP_REPLACE;
    }
    if (empty != 0) {
      if (fill_slot(t, b1, empty, k, v)) return STEP_CLAIM;
      continue;
    }
    if (empty2 == 0) return STEP_LEFTOVER;  // both full: an eviction, in the second kernel
    if (fill_slot(t, b2, empty2, k, v)) return STEP_CLAIM;
  }
  return STEP_LEFTOVER;
}

// The first kernel's loop: warp-stride over the batch, one insert per lane, appending
// the index of each insert left over to `queue` (one atomic per warp and iteration).
template <typename Ref>
__device__ void insert_lanes(const Ref& t, const typename Ref::key_type* keys, const typename Ref::value_type* values,
                             unsigned long long n, unsigned* queue, tally& lane) {
  const unsigned lid = threadIdx.x % 32;
  const unsigned long long warps = static_cast<unsigned long long>(gridDim.x) * blockDim.x / 32;
  unsigned fills = 0, replaces = 0;
  for (unsigned long long base = (static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32 * 32;
       base < n; base += warps * 32) {
    const unsigned long long i = base + lid;
    unsigned step = STEP_CLAIM;
    if (i < n) step = insert_one(t, keys[i], values[i]);
    fills += step == STEP_CLAIM && i < n ? 1u : 0u;
    replaces += step == STEP_REPLACE ? 1u : 0u;
    const bool left = i < n && step == STEP_LEFTOVER;
    const unsigned leaving = __ballot_sync(warp::FULL_MASK, left);
    if (leaving != 0) {
      unsigned at = 0;
      if (lid == 0) at = atomicAdd(queue, static_cast<unsigned>(__popc(leaving)));
      at = __shfl_sync(warp::FULL_MASK, at, 0);
      if (left) queue[bulk::QUEUE_HEAD + at + __popc(leaving & ((1u << lid) - 1u))] = static_cast<unsigned>(i);
    }
  }
  lane.steps[0] += replaces;
  lane.steps[1] += fills;
  lane.len += static_cast<int>(fills);
}

// The second kernel: the queued inserts (entries: the operation's index in the part,
// operation offset + entry of the batch), a tile's chunk at a time through insert_ops.
template <typename Ref>
__device__ void queued(const Ref& t, const typename Ref::key_type* keys, const typename Ref::value_type* values,
                       const unsigned* queue, unsigned long long offset, tally& lane, tally& counts) {
  using S = typename Ref::S;
  const unsigned long long n = queue[0];
  for_each_op(n, [&](unsigned long long base) {
    const unsigned count = ops_in_chunk(base, n);
    const unsigned r = tile::rank();
    const bool mine = r < count;
    const unsigned e = mine ? queue[bulk::QUEUE_HEAD + base + r] : 0u;
    const typename Ref::key_type k = mine ? keys[e] : S::EMPTY_KEY;
    const typename Ref::value_type v = mine ? values[e] : typename Ref::value_type(0);
    insert_ops(t, mine, k, v, offset + e, lane, counts);
  });
}

}  // namespace wide_fill
}  // namespace hive
}  // namespace gpuds
