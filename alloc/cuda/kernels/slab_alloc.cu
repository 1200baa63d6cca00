// SlabAlloc host-side entry points: batch allocation and deallocation, bitmap counts, and
// the churn kernel the tests and the benchmark share. Thin loops over slab_alloc_ref.
#include <gpuds/alloc/slab_alloc.cuh>

using gpuds::alloc::null_unit;
using gpuds::alloc::slab_alloc_ref;
using gpuds::alloc::unit_addr;
using gpuds::alloc::warp_allocator;

// Grid-stride over warps: each warp takes 32 consecutive items per round. The loop bound
// is warp-uniform, so every lane stays in the loop (the allocator needs all 32 lanes).
#define FOR_EACH_WARP_ROUND(first, n)                                                      \
  for (unsigned long long first = gpuds::warp::global_warp_id() * 32ull; first < (n);     \
       first += gpuds::warp::warp_count() * 32ull)

// out[i] = a fresh unit for every i < n, lanes claiming in parallel (allocate_lane).
extern "C" __global__ void slab_alloc_allocate_lanes(slab_alloc_ref ref, unit_addr* out,
                                                     unsigned long long n) {
  warp_allocator allocator(ref);
  FOR_EACH_WARP_ROUND(first, n) {
    const unsigned long long i = first + gpuds::warp::lane_id();
    const unit_addr a = allocator.allocate_lane(i < n);
    if (i < n) out[i] = a;
  }
}

// The paper's experiment: every thread wants one unit and the warp serves its lanes one
// at a time with the warp-cooperative allocate() (work-sharing loop).
extern "C" __global__ void slab_alloc_allocate_each(slab_alloc_ref ref, unit_addr* out,
                                                    unsigned long long n) {
  warp_allocator allocator(ref);
  FOR_EACH_WARP_ROUND(first, n) {
    const unsigned long long i = first + gpuds::warp::lane_id();
    unit_addr mine = null_unit;
    gpuds::warp::work_share(i < n, [&](int src) {
      const unit_addr a = allocator.allocate();
      if (static_cast<int>(gpuds::warp::lane_id()) == src) mine = a;
      return true;
    });
    if (i < n) out[i] = mine;
  }
}

// Frees in[i] for every i < n (null entries are skipped).
extern "C" __global__ void slab_alloc_deallocate(slab_alloc_ref ref, const unit_addr* in,
                                                 unsigned long long n) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x +
                              threadIdx.x;
       i < n; i += stride) {
    ref.deallocate(in[i]);
  }
}

// counts[g] = units in use in memory block g: one warp per block, one word per lane.
extern "C" __global__ void slab_alloc_count(slab_alloc_ref ref, unsigned* counts) {
  for (unsigned long long g = gpuds::warp::global_warp_id(); g < ref.num_blocks;
       g += gpuds::warp::warp_count()) {
    const unsigned word = gpuds::mem::ld_relaxed(
        ref.bitmap + g * gpuds::alloc::WORDS_PER_BLOCK + gpuds::warp::lane_id());
    unsigned total = __popc(word);
    for (int offset = 16; offset > 0; offset /= 2) {
      total += __shfl_down_sync(gpuds::warp::FULL_MASK, total, offset);
    }
    if (gpuds::warp::lane_id() == 0u) counts[g] = total;
  }
}

// Churn: thread i owns slot[i] (an address or null). In each of `rounds` rounds a thread
// whose hash(i, round) is odd frees its unit, then every thread without a unit allocates
// one and stamps its first word with (i, round). A unit handed out twice is caught later
// by the stamp check (see slab_alloc_check_stamps). Allocation failures leave null.
extern "C" __global__ void slab_alloc_churn(slab_alloc_ref ref, unit_addr* slots,
                                            unsigned long long n, unsigned rounds,
                                            unsigned seed) {
  warp_allocator allocator(ref);
  for (unsigned round = 0; round < rounds; ++round) {
    FOR_EACH_WARP_ROUND(first, n) {
      const unsigned long long i = first + gpuds::warp::lane_id();
      unit_addr mine = i < n ? slots[i] : null_unit;
      const unsigned coin =
          gpuds::hash::murmur3_32(static_cast<unsigned>(i) ^ gpuds::hash::murmur3_32(seed + round));
      if (i < n && mine != null_unit && (coin & 1u) != 0u) {
        ref.deallocate(mine);
        mine = null_unit;
      }
      const bool want = i < n && mine == null_unit;
      const unit_addr fresh = allocator.allocate_lane(want);
      if (want && fresh != null_unit) {
        unsigned* words = ref.pointer_as<unsigned>(fresh);
        words[0] = static_cast<unsigned>(i);
        words[1] = round;
        mine = fresh;
      }
      if (i < n) slots[i] = mine;
    }
  }
}

// bad[0] += number of slots whose unit does not carry the slot's stamp (a unit handed
// out to two threads keeps only one of the stamps).
extern "C" __global__ void slab_alloc_check_stamps(slab_alloc_ref ref, const unit_addr* slots,
                                                   unsigned long long n, unsigned* bad) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x +
                              threadIdx.x;
       i < n; i += stride) {
    const unit_addr a = slots[i];
    if (a != null_unit && ref.pointer_as<unsigned>(a)[0] != static_cast<unsigned>(i)) {
      atomicAdd(bad, 1u);
    }
  }
}
