// gpuds/hive/detail/op_ring.cuh: a warp's ring of staged batch operations, which the
// per-lane state machines of the bulk insert (detail/fill_insert.cuh, detail/bulk_insert.cuh)
// take their next key from whenever a lane falls idle.
#pragma once
#include <gpuds/core/warp.cuh>
#include <gpuds/hive/detail/hive_bucket.cuh>

namespace gpuds {
namespace hive {
namespace bulk {

constexpr unsigned WARPS = 256 / 32;  // warps per block (BLOCK = 256)
constexpr unsigned RING = 64;  // staged keys per warp: two chunks of 32

// A warp's ring of staged operations (keys, values and a 32-bit entry each) in shared
// memory, which its idle lanes take in order: what op_ring (below), wide_fill::wide_ring
// and wide_queued::queue_ring share. Every counter is the same on every lane:
// `fetched` chunks of 32 were staged, `taken` operations taken.
template <typename K, typename V>
struct ring_staging {
  K (&rk)[RING];
  V (&rv)[RING];
  unsigned (&re)[RING];
  unsigned lid = threadIdx.x % 32;
  unsigned fetched = 0, taken = 0;

  // Whether the ring has room for one more chunk.
  __device__ bool room() const { return fetched * 32 - taken <= RING - 32; }
  // Stages this lane's operation of the next chunk (called by every lane).
  __device__ void push(K k, V v, unsigned e) {
    rk[(fetched * 32 + lid) % RING] = k;
    rv[(fetched * 32 + lid) % RING] = v;
    re[(fetched * 32 + lid) % RING] = e;
    fetched += 1;
  }
  // Whether staged operations are left.
  __device__ bool more() const { return taken < fetched * 32; }
  // Hands the next staged operations to the lanes with `idle`, in lane order: true where
  // this lane got one.
  __device__ bool take(bool idle, K& k, V& v, unsigned& e) {
    const unsigned want = __ballot_sync(warp::FULL_MASK, idle);
    const unsigned staged = fetched * 32 - taken;
    const unsigned rank = __popc(want & ((1u << lid) - 1u));
    const bool got = idle && rank < staged;
    if (got) {
      const unsigned p = (taken + rank) % RING;
      k = rk[p];
      v = rv[p];
      e = re[p];
    }
    taken += __popc(want) < staged ? __popc(want) : staged;
    return got;
  }
};

// A warp's operations, taken by its idle lanes in order (ring_staging; k is EMPTY_KEY
// past the end of the source): chunk c holds operations (gw + c * nw) * 32 + lane of the
// source, each chunk loaded coalesced one chunk ahead (pk, pv, pe: the key, the value
// and a 32-bit entry) and staged in the warp's ring in shared memory.
struct op_ring : ring_staging<unsigned, unsigned> {
  unsigned long long n;
  // Where the warps take chunks in turn (one atomic per chunk), so that a warp whose
  // operations take long takes fewer; null: chunk c of the warp is gw + c * nw.
  unsigned* next;
  unsigned gw = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  unsigned nw = gridDim.x * blockDim.x / 32;
  unsigned long long base = 0;  // the first operation of the chunk in flight
  unsigned pk = EMPTY_KEY, pv = 0, pe = 0;

  // The first operation of the warp's next chunk (its chunk number `fetched`, or the
  // next one taken from `next`).
  __device__ unsigned long long next_chunk() const {
    if (next == nullptr) return (static_cast<unsigned long long>(fetched) * nw + gw) * 32;
    unsigned chunk = 0;
    if (lid == 0) chunk = atomicAdd(next, 1u);
    return static_cast<unsigned long long>(__shfl_sync(warp::FULL_MASK, chunk, 0)) * 32;
  }
  // Loads this lane's operation of the first chunk: load(at, k, v, e) for at < n.
  template <typename Load>
  __device__ void start(Load&& load) {
    base = next_chunk();
    if (base + lid < n) load(base + lid, pk, pv, pe);
  }
  // Stages the chunk in flight when the ring has room for it, and loads the next.
  template <typename Load>
  __device__ void stage(Load&& load) {
    if (room() && base < n) {
      push(pk, pv, pe);
      base = next_chunk();
      const unsigned long long at = base + lid;
      pk = EMPTY_KEY;
      if (at < n) load(at, pk, pv, pe);
      __syncwarp();
    }
  }
};

}  // namespace bulk
}  // namespace hive
}  // namespace gpuds
