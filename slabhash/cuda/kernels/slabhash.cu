// Entry points of SlabHashMap and SlabHashSet: thin loops over map_ref / set_ref, one
// thread per request (lanes past the end take part with no request), plus the
// whole-table kernels: FLUSH, the census behind stats() and the export behind to_vec().
//
// The per-request kernels get the call's own status word (in the ref) and its failure
// bits `failed` (gpuds_core::failures::CallStatus; may be null): a request that gets
// OP_FAILED is marked there, so that the host names exactly the requests not applied.
//
// Compiled once per kind and type: SLAB_SET (0: map, 1: set), KEY_T, VALUE_T (maps) and
// KERNEL_SUFFIX (`map_u32_u32`, `set_u32`); ITEM_BLOCK, the block size of the per-request
// kernels.
#include <gpuds/core/kernel_name.cuh>
#include <gpuds/slabhash/map_ref.cuh>
#include <gpuds/slabhash/set_ref.cuh>
#include <gpuds/slabhash/detail/flush.cuh>

using namespace gpuds;
using namespace gpuds::slabhash;
using K = KEY_T;

#if SLAB_SET
using V = unsigned;  // a set has no values; value arguments are null
using ref_t = set_ref<K>;
#else
using V = VALUE_T;
using ref_t = map_ref<K, V>;
#endif
using layout = ref_t::layout;
#if SLAB_SET
using layout_value_t = no_value;
#else
using layout_value_t = V;
#endif

// Operation kinds of a mixed batch (apply).
constexpr unsigned KIND_INSERT = 0;
constexpr unsigned KIND_REMOVE = 1;
constexpr unsigned KIND_GET = 2;

__device__ __forceinline__ unsigned long long item_index() {
  return static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}

// A batch whose device keys were checked by first_reserved runs only when none was
// reserved (`guard` still zero); the check and the batch are enqueued back to back, and
// a refused batch reports RESERVED_KEY so that the host reads the guard only then.
// Uniform: every thread returns.
__device__ __forceinline__ bool refused(const ref_t& ref, const unsigned long long* guard) {
  if (guard == nullptr || *guard == 0ull) return false;
  if (blockIdx.x == 0 && threadIdx.x == 0) status::report(ref.status, status::RESERVED_KEY);
  return true;
}

// The lowest index i of a reserved key, as n - i by atomicMax into `first` (preset to
// zero: none).
extern "C" __global__ void GPUDS_KERNEL(first_reserved)(const K* keys, unsigned long long n,
                                                        unsigned long long* first) {
  const unsigned long long i = item_index();
  if (i < n && is_reserved_key(keys[i])) atomicMax(first, n - i);
}

// Marks request i failed in the call's bits when its outcome says so.
__device__ __forceinline__ void note(unsigned* failed, bool active, unsigned long long i,
                                     unsigned outcome) {
  if (active && outcome == OP_FAILED) status::mark_not_applied(failed, i);
}

// Blocks per SM of the per-request kernels. The warp walk (map_ref / set_ref) serves a
// warp's requests one at a time with one slab read in flight, so its rate is the resident
// warps over the memory latency: full occupancy (32 registers). The lane-alone forms
// (detail/alone.cuh, alone_wide.cuh) keep up to 32 requests in flight per warp and hold
// half a slab per lane: half occupancy (64 registers), which measured faster for inserts
// (u32/u32 13.6 against 10.6 G keys/s at full) and the same for lookups: the packed
// lookups keep full occupancy (the wide ones: FIND_BLOCKS below).
constexpr unsigned FULL_BLOCKS = 2048 / ITEM_BLOCK;
constexpr unsigned HALF_BLOCKS = FULL_BLOCKS / 2;
// SEARCH of wide entries runs each lane alone with read-only loads (below): at half
// occupancy it takes 35-38 registers and spills nothing, at full it spills 8 bytes at
// u64/u64 and measured the same (present keys 19.0-19.2 against 19.2-19.4 G/s on the
// H200). DELETE of wide entries runs by tiles of 8 lanes (detail/tile_find.cuh), which
// spill at full occupancy.
constexpr unsigned FIND_BLOCKS = layout::WIDE ? HALF_BLOCKS : FULL_BLOCKS;
constexpr unsigned ERASE_BLOCKS = HALF_BLOCKS;

// REPLACE or INSERT (maps: `unique` picks; sets: always unique). ALONE: REPLACE and a
// set's insert run each lane alone first (the `_alone_in` forms); INSERT is always the
// warp walk. `outcomes` and `olds` may be null. Run by `insert` (ALONE, half occupancy:
// REPLACE and sets) and `insert_dup` (the warp walk alone, full occupancy: the INSERT of
// a multimap).
template <bool ALONE>
__device__ __forceinline__ void store_batch(const ref_t& ref, const K* keys, const V* values,
                                            unsigned long long n, unsigned unique, unsigned* outcomes,
                                            V* olds, const unsigned long long* guard, unsigned* failed) {
  // The request is loaded before the guard is read, so that the two loads overlap.
  const unsigned long long i = item_index();
  const bool active = i < n;
  const K key = active ? keys[i] : K(0);
#if !SLAB_SET
  const V value = active ? values[i] : V(0);
#endif
  if (refused(ref, guard)) return;
  detail::on_demand_allocator allocator;
#if SLAB_SET
  (void)values;
  (void)unique;
  (void)olds;
  const unsigned outcome = ref.insert_alone_in(allocator, active, ref.home_of(active, key), key);
#else
  V old = V(0);
  unsigned outcome;
  if (!unique) {
    outcome = ref.insert(allocator, active, key, value);
  } else if constexpr (ALONE) {
    outcome = ref.replace_alone_in(allocator, active, ref.home_of(active, key), key, value, old);
  } else {
    outcome = ref.replace(allocator, active, key, value, old);
  }
  if (active && olds != nullptr) olds[i] = old;
#endif
  if (active && outcomes != nullptr) outcomes[i] = outcome;
  note(failed, active, i, outcome);
}

extern "C" __global__ void __launch_bounds__(ITEM_BLOCK, HALF_BLOCKS)
    GPUDS_KERNEL(insert)(ref_t ref, const K* keys, const V* values, unsigned long long n, unsigned unique,
                         unsigned* outcomes, V* olds, const unsigned long long* guard, unsigned* failed) {
  store_batch<true>(ref, keys, values, n, unique, outcomes, olds, guard, failed);
}

#if !SLAB_SET
extern "C" __global__ void __launch_bounds__(ITEM_BLOCK, FULL_BLOCKS)
    GPUDS_KERNEL(insert_dup)(ref_t ref, const K* keys, const V* values, unsigned long long n, unsigned unique,
                             unsigned* outcomes, V* olds, const unsigned long long* guard, unsigned* failed) {
  store_batch<false>(ref, keys, values, n, unique, outcomes, olds, guard, failed);
}
#endif

// SEARCH. Maps write each value (NOT_FOUND_VALUE when missing) if `values` is not null;
// `found` (if not null) gets one bit per request, 32 requests per word. Each lane alone
// first, with read-only non-coherent loads (the QUIET forms: no writer runs beside a bulk
// lookup, since the map's writes take it mutably and every call runs in stream order);
// the warp walk takes what the lanes leave (the step cap).
extern "C" __global__ void __launch_bounds__(ITEM_BLOCK, FIND_BLOCKS) GPUDS_KERNEL(find)(ref_t ref, const K* keys, unsigned long long n,
                                              V* values, unsigned* found,
    const unsigned long long* guard, unsigned* failed) {
  if (refused(ref, guard)) return;
  const unsigned long long i = item_index();
  const bool active = i < n;
  const K key = active ? keys[i] : K(0);
#if SLAB_SET
  (void)values;
  const unsigned outcome = ref.find_alone_in<true>(active, ref.home_of(active, key), key);
#else
  V value = not_found_value<V>;
  const unsigned outcome = ref.find_alone_in<true>(active, ref.home_of(active, key), key, value);
  if (active && values != nullptr) values[i] = outcome == OP_PRESENT ? value : not_found_value<V>;
#endif
  const unsigned bits = __ballot_sync(warp::FULL_MASK, active && outcome == OP_PRESENT);
  if (found != nullptr && active && warp::lane_id() == 0) found[i / 32] = bits;
  note(failed, active, i, outcome);
}

// DELETE (the least recent instance). `outcomes` and `olds` may be null. Sets and
// packed pairs: each lane alone first, with plain loads (STILL: nothing inserts while a
// deletion batch runs; detail::alone::look); wide pairs: tiles of 8 lanes first; half
// occupancy.
extern "C" __global__ void __launch_bounds__(ITEM_BLOCK, ERASE_BLOCKS) GPUDS_KERNEL(erase)(ref_t ref, const K* keys, unsigned long long n,
                                               unsigned* outcomes, V* olds,
    const unsigned long long* guard, unsigned* failed) {
  const unsigned long long i = item_index();
  const bool active = i < n;
  const K key = active ? keys[i] : K(0);
  if (refused(ref, guard)) return;
#if SLAB_SET
  (void)olds;
  const unsigned outcome = ref.template erase_alone_in<true>(active, ref.home_of(active, key), key);
#else
  V old = V(0);
  const unsigned outcome = ref.template erase_alone_in<true>(active, ref.home_of(active, key), key, old, olds != nullptr);
  if (active && olds != nullptr) olds[i] = old;
#endif
  if (active && outcomes != nullptr) outcomes[i] = outcome;
  note(failed, active, i, outcome);
}

// A mixed batch: each request's kind, key and value; each gets its outcome and the value
// it saw (replaced, removed or found; maps only).
extern "C" __global__ void GPUDS_KERNEL(apply)(ref_t ref, const unsigned* kinds, const K* keys,
                                               const V* values, unsigned long long n,
                                               unsigned* outcomes, V* seen, unsigned* failed) {
  const unsigned long long i = item_index();
  const bool active = i < n;
  const unsigned kind = active ? kinds[i] : KIND_GET;
  const K key = active ? keys[i] : K(0);
  alloc::warp_allocator allocator = ref.make_allocator();
  unsigned o1, o2, o3;
#if SLAB_SET
  (void)values;
  (void)seen;
  o1 = ref.insert(allocator, active && kind == KIND_INSERT, key);
  o2 = ref.erase(active && kind == KIND_REMOVE, key);
  o3 = ref.find(active && kind == KIND_GET, key);
#else
  const V value = active && values != nullptr ? values[i] : V(0);
  V v1 = V(0), v2 = V(0), v3 = V(0);
  o1 = ref.upsert(allocator, active && kind == KIND_INSERT, key, value, v1);
  o2 = ref.erase(active && kind == KIND_REMOVE, key, v2);
  o3 = ref.find(active && kind == KIND_GET, key, v3);
  if (active && seen != nullptr) seen[i] = kind == KIND_INSERT ? v1 : kind == KIND_REMOVE ? v2 : v3;
#endif
  const unsigned outcome = kind == KIND_INSERT ? o1 : kind == KIND_REMOVE ? o2 : o3;
  if (active) outcomes[i] = outcome;
  note(failed, active, i, outcome);
}

#if !SLAB_SET
// DELETEALL. `counts` may be null.
extern "C" __global__ void GPUDS_KERNEL(erase_all)(ref_t ref, const K* keys,
                                                   unsigned long long n, unsigned* counts,
    const unsigned long long* guard, unsigned* failed) {
  if (refused(ref, guard)) return;
  const unsigned long long i = item_index();
  const bool active = i < n;
  unsigned outcome = OP_ABSENT;
  const unsigned removed = ref.erase_all(active, active ? keys[i] : K(0), &outcome);
  if (active && counts != nullptr) counts[i] = removed;
  note(failed, active, i, outcome);
}

// COUNT: instances of each key.
extern "C" __global__ void GPUDS_KERNEL(count)(ref_t ref, const K* keys, unsigned long long n,
                                               unsigned* counts,
    const unsigned long long* guard, unsigned* failed) {
  if (refused(ref, guard)) return;
  const unsigned long long i = item_index();
  const bool active = i < n;
  unsigned outcome = OP_ABSENT;
  const unsigned c = ref.count_of(active, active ? keys[i] : K(0), &outcome);
  if (active) counts[i] = c;
  note(failed, active, i, outcome);
}

// SEARCHALL: request i writes its key's values at values[offsets[i]..offsets[i + 1]]
// (`total` for the last); `offsets` is the exclusive scan of a COUNT of the same keys.
extern "C" __global__ void GPUDS_KERNEL(find_all)(ref_t ref, const K* keys, unsigned long long n,
                                                  const unsigned* offsets, unsigned total,
                                                  V* values,
    const unsigned long long* guard, unsigned* failed) {
  if (refused(ref, guard)) return;
  const unsigned long long i = item_index();
  const bool active = i < n;
  const unsigned begin = active ? offsets[i] : 0u;
  const unsigned end = i + 1 < n ? offsets[i + 1] : total;
  const unsigned capacity = active ? end - begin : 0u;
  unsigned outcome = OP_ABSENT;
  ref.find_all(active, active ? keys[i] : K(0), values + begin, capacity, &outcome);
  note(failed, active, i, outcome);
}
#endif

// FLUSH, one warp per bucket (grid-stride): detail::flush_list packs each bucket's live
// entries into its first slabs and returns the rest to SlabAlloc. Runs alone: no other
// kernel may use the table meanwhile.
extern "C" __global__ void GPUDS_KERNEL(flush)(ref_t ref, unsigned long long* freed) {
  unsigned long long released = 0;
  for (unsigned long long b = warp::global_warp_id(); b < ref.num_buckets; b += warp::warp_count()) {
    released += detail::flush_list<K, layout_value_t>(ref, ref.base_slab(static_cast<unsigned>(b)));
  }
  if (warp::lane_id() == 0 && released != 0) mem::fetch_add_relaxed(freed, released);
}

// Slabs per bucket, one warp per bucket (grid-stride), into `slabs[bucket]`.
extern "C" __global__ void GPUDS_KERNEL(census)(ref_t ref, unsigned* slabs) {
  for (unsigned long long b = warp::global_warp_id(); b < ref.num_buckets; b += warp::warp_count()) {
    unsigned count = 0;
    auto it = ref.bucket(static_cast<unsigned>(b));
    for (unsigned steps = 0; it.valid() && steps < ref.step_cap; ++steps, it.next()) ++count;
    if (warp::lane_id() == 0) slabs[b] = count;
  }
}

// Every live entry, appended at `cursor` (warp-aggregated), at most `capacity` of them.
// Maps write values too; sets leave `values` null.
extern "C" __global__ void GPUDS_KERNEL(export_entries)(ref_t ref, K* keys, V* values,
                                                        unsigned long long* cursor,
                                                        unsigned long long capacity) {
  const unsigned lane = warp::lane_id();
  for (unsigned long long b = warp::global_warp_id(); b < ref.num_buckets; b += warp::warp_count()) {
    auto it = ref.bucket(static_cast<unsigned>(b));
    for (unsigned steps = 0; it.valid() && steps < ref.step_cap; ++steps) {
      const unsigned live = it.live_key_lanes();
      const K key = layout::own_key(it.word());
#if SLAB_SET
      const V value = V(0);
#else
      const V value = layout::own_value(it.word());
#endif
      unsigned long long base = 0;
      if (lane == 0 && live != 0) base = mem::fetch_add_relaxed(cursor, __popc(live));
      base = __shfl_sync(warp::FULL_MASK, base, 0);
      if ((live >> lane) & 1u) {
        const unsigned long long at = base + __popc(live & lanes_below());
        if (at < capacity) {
          keys[at] = key;
          if (values != nullptr) values[at] = value;
        }
      }
      it.next();
    }
  }
}
