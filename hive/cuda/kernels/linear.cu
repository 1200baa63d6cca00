// LinearProbeMap kernels: thin loops over gpuds::hive::linear_ref, one tile of LINEAR_TILE lanes
// per operation (grid-stride over operations).
//
// Defines (set by gpuds_hive::LinearProbeMap):
//   KEY_T, VALUE_T   unsigned int or unsigned long long
//   LINEAR_TILE             lanes per operation: 1, 2, 4, 8, 16 or 32
//   LINEAR_PROBING          gpuds::probing::linear or gpuds::probing::double_hashing
//   LINEAR_KEY_TOMBSTONES   0: value tombstones (default), 1: key tombstones with slot reuse
//   KERNEL_SUFFIX    stamped into kernel names: linear_insert_u32_u32_t1_lin_vt, ...
#include <gpuds/core/kernel_name.cuh>
#include <gpuds/core/memory.cuh>
#include <gpuds/hive/linear_ref.cuh>

using ref_t = gpuds::hive::linear_ref<KEY_T, VALUE_T, LINEAR_TILE, LINEAR_PROBING, LINEAR_KEY_TOMBSTONES != 0>;
using slot_t = ref_t::slot_type;

// Operation kinds of a mixed batch, as the host encodes them.
constexpr unsigned OP_INSERT = 0;
constexpr unsigned OP_REMOVE = 1;
constexpr unsigned OP_GET = 2;

__device__ __forceinline__ bool reserved_key(KEY_T k) {
  return k == ref_t::EMPTY_KEY || k == ref_t::ERASED_KEY;
}

// `guard` is a region of the host's control words (gpuds_hive's linear/control.rs):
// [0] the first reserved key of a write batch, [1] its first reserved value, [2] the
// status word, [3] the first reserved key of a lookup. Keys are kept as the least
// (index << 1 | key is the erased sentinel): the index and, since only two keys are
// reserved, which key it was.
constexpr unsigned GUARD_READ_KEY = 3;
__device__ __forceinline__ void record_reserved_key(unsigned long long* word, unsigned long long i, KEY_T k) {
  atomicMin(word, (i << 1) | (k == ref_t::ERASED_KEY ? 1ull : 0ull));
}

// The batch's reserved-key check (linear_first_reserved) found something, in this batch
// or in an earlier write batch of the region not yet reported: skip it all. A lookup's
// reserved key (guard[3]) never stops a write.
__device__ __forceinline__ bool rejected(const unsigned long long* guard) {
  return gpuds::mem::ld_relaxed(guard) != ~0ull || gpuds::mem::ld_relaxed(guard + 1) != ~0ull;
}

__device__ __forceinline__ unsigned long long first_group() {
  return (static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x) / LINEAR_TILE;
}
__device__ __forceinline__ unsigned long long group_count() {
  return (static_cast<unsigned long long>(gridDim.x) * blockDim.x) / LINEAR_TILE;
}

// An insert that finds no room (TABLE_FULL, RETRY_LIMIT) sets its bit in `failed`.
extern "C" __global__ void GPUDS_KERNEL(linear_insert)(ref_t ref, const unsigned long long* guard, const KEY_T* __restrict__ keys,
                                                       const VALUE_T* __restrict__ values,
                                                       unsigned long long n, unsigned* failed) {
  if (rejected(guard)) return;
  for (unsigned long long i = first_group(); i < n; i += group_count()) {
    VALUE_T before;
    const bool done = ref.template insert<false>(keys[i], values[i], &before);
    if (!done && gpuds::warp::tile<LINEAR_TILE>::rank() == 0u) gpuds::status::mark_not_applied(failed, i);
  }
}

// out[i]: the value of keys[i], or the empty value when absent. Reserved keys are never
// present: they read as absent and are recorded in guard[3] (queries change nothing, so
// they need no check before the batch).
extern "C" __global__ void GPUDS_KERNEL(linear_find)(ref_t ref, unsigned long long* guard,
                                                     const KEY_T* __restrict__ keys,
                                                     VALUE_T* __restrict__ out, unsigned long long n) {
  for (unsigned long long i = first_group(); i < n; i += group_count()) {
    const KEY_T key = keys[i];
    VALUE_T v = ref_t::EMPTY_VALUE;
    if (reserved_key(key)) {
      if (gpuds::warp::tile<LINEAR_TILE>::rank() == 0u) record_reserved_key(guard + GUARD_READ_KEY, i, key);
    } else if (!ref.template find<true>(key, &v)) {
      v = ref_t::EMPTY_VALUE;
    }
    if (gpuds::warp::tile<LINEAR_TILE>::rank() == 0u) out[i] = v;
  }
}

// The host launches one tile per key (the loop runs once per tile): measured faster for
// erases than a resident grid that loops.
extern "C" __global__ void GPUDS_KERNEL(linear_erase)(ref_t ref, const unsigned long long* guard, const KEY_T* __restrict__ keys,
                                                      unsigned long long n) {
  if (rejected(guard)) return;
  for (unsigned long long i = first_group(); i < n; i += group_count()) {
    VALUE_T before;
    ref.template erase<false>(keys[i], &before);
  }
}

// A mixed batch: every operation runs concurrently with the others and writes what it
// observed (the key's value just before it; the empty value when absent) to out[i]. An
// insert that finds no room, or an operation of an unknown kind, sets its bit in `failed`.
extern "C" __global__ void GPUDS_KERNEL(linear_apply)(ref_t ref, const unsigned long long* guard, const unsigned* __restrict__ kinds,
                                                      const KEY_T* __restrict__ keys,
                                                      const VALUE_T* __restrict__ values,
                                                      VALUE_T* __restrict__ out, unsigned long long n,
                                                      unsigned* failed) {
  if (rejected(guard)) return;
  for (unsigned long long i = first_group(); i < n; i += group_count()) {
    VALUE_T seen = ref_t::EMPTY_VALUE;
    const unsigned kind = kinds[i];
    bool done = true;
    if (kind == OP_INSERT) {
      done = ref.template insert<true>(keys[i], values[i], &seen);
    } else if (kind == OP_REMOVE) {
      ref.template erase<true>(keys[i], &seen);
    } else if (kind == OP_GET) {
      if (!ref.template find<false>(keys[i], &seen)) seen = ref_t::EMPTY_VALUE;
    } else {
      gpuds::status::report(ref.status, gpuds::status::OUT_OF_BOUNDS);
      done = false;
    }
    if (gpuds::warp::tile<LINEAR_TILE>::rank() == 0u) {
      out[i] = seen;
      if (!done) gpuds::status::mark_not_applied(failed, i);
    }
  }
}

// Census of the slots (one thread per slot): out[0] live pairs, out[1] keys whose value
// was erased (value tombstones), out[2] erased keys (key tombstones), out[3] the sum and
// out[4] the maximum of the live keys' probe lengths (windows passed before the key's
// own), when `walk` is set. Walking the sequence is arithmetic only: no memory reads.
extern "C" __global__ void GPUDS_KERNEL(linear_census)(ref_t ref, unsigned walk,
                                                       unsigned long long* __restrict__ out) {
  const unsigned long long slots = static_cast<unsigned long long>(ref.geometry.windows) * LINEAR_TILE;
  unsigned long long live = 0, dead = 0, erased = 0, probe_sum = 0, probe_max = 0;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < slots; i += stride) {
    const auto seen = ref_t::ops::template load<gpuds::hive::detail::read_mode::nc>(ref.slots + i);
    if (seen.key == ref_t::EMPTY_KEY) continue;
    if (seen.key == ref_t::ERASED_KEY) {
      ++erased;
      continue;
    }
    if (seen.value == ref_t::EMPTY_VALUE) {
      ++dead;
      continue;
    }
    ++live;
    if (walk != 0u) {
      const unsigned own = static_cast<unsigned>(i / LINEAR_TILE);
      gpuds::probing::sequence<LINEAR_PROBING> seq(gpuds::probing::hash_key(seen.key), ref.geometry);
      unsigned long long length = 0;
      while (seq.window != own && length < ref.geometry.windows) {
        seq.next();
        ++length;
      }
      probe_sum += length;
      probe_max = length > probe_max ? length : probe_max;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    live += __shfl_down_sync(gpuds::warp::FULL_MASK, live, offset);
    dead += __shfl_down_sync(gpuds::warp::FULL_MASK, dead, offset);
    erased += __shfl_down_sync(gpuds::warp::FULL_MASK, erased, offset);
    probe_sum += __shfl_down_sync(gpuds::warp::FULL_MASK, probe_sum, offset);
    const unsigned long long other = __shfl_down_sync(gpuds::warp::FULL_MASK, probe_max, offset);
    probe_max = other > probe_max ? other : probe_max;
  }
  if (gpuds::warp::lane_id() == 0u) {
    gpuds::mem::fetch_add_relaxed(out + 0, live);
    gpuds::mem::fetch_add_relaxed(out + 1, dead);
    gpuds::mem::fetch_add_relaxed(out + 2, erased);
    gpuds::mem::fetch_add_relaxed(out + 3, probe_sum);
    atomicMax(out + 4, probe_max);
  }
}

// Rebuild: inserts every live pair of `old` (old_slots slots) into the table of `ref`.
extern "C" __global__ void GPUDS_KERNEL(linear_migrate)(ref_t ref, const slot_t* __restrict__ old,
                                                        unsigned long long old_slots) {
  for (unsigned long long i = first_group(); i < old_slots; i += group_count()) {
    const auto seen = ref_t::ops::template load<gpuds::hive::detail::read_mode::nc>(const_cast<slot_t*>(old) + i);
    if (seen.key == ref_t::EMPTY_KEY || seen.key == ref_t::ERASED_KEY || seen.value == ref_t::EMPTY_VALUE) {
      continue;
    }
    VALUE_T before;
    ref.template insert<false>(seen.key, seen.value, &before);
  }
}

// out[0]: the least index of a reserved key (empty or erased sentinel; encoded as in
// record_reserved_key), out[1]: the least index of a reserved value (the empty value). A null keys or values pointer is
// skipped (checked on the host). Both words start at all ones (none).
extern "C" __global__ void GPUDS_KERNEL(linear_first_reserved)(const KEY_T* __restrict__ keys,
                                                               const VALUE_T* __restrict__ values,
                                                               unsigned long long n,
                                                               unsigned long long* __restrict__ out) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    if (keys != nullptr && reserved_key(keys[i])) record_reserved_key(out, i, keys[i]);
    if (values != nullptr && values[i] == ref_t::EMPTY_VALUE) atomicMin(out + 1, i);
  }
}
