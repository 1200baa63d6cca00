// Epoch-based reclamation entry points: the host's drain, and the read/retire churn the
// tests and the benchmark share (readers traverse cells while writers replace and
// retire their units). Thin loops over ebr_ref / ebr_block.
#include <gpuds/alloc/ebr.cuh>

using namespace gpuds::alloc;

#ifndef EBR_SHARED_CAP
#define EBR_SHARED_CAP 256
#endif

// Hands every unit of every global bag back to the pool (no kernel may be running).
// One warp per (slot, bag).
extern "C" __global__ void ebr_drain(ebr_ref r) {
  const unsigned long long bags = static_cast<unsigned long long>(r.slots) * EBR_BAGS;
  const unsigned lane = gpuds::warp::lane_id();
  for (unsigned long long bag = gpuds::warp::global_warp_id(); bag < bags;
       bag += gpuds::warp::warp_count()) {
    const unsigned stored = r.slot_counts[bag];
    const unsigned count = stored < r.bag_capacity ? stored : r.bag_capacity;
    for (unsigned j = lane; j < count; j += 32) {
      const unit_addr a = r.slot_bags[bag * r.bag_capacity + j];
      if (r.poison != 0u) {
        unsigned* words = r.pool.pointer_as<unsigned>(a);
        for (unsigned w = 0; w < r.pool.unit_bytes() / 4; ++w) words[w] = r.poison;
      }
      r.pool.deallocate(a);
    }
    if (lane == 0u) {
      r.slot_counts[bag] = 0u;
      if (count != 0u) atomicAdd(r.counters + 1, static_cast<unsigned long long>(count));
    }
  }
}

// Fills every word of cell i's unit with i (one warp per cell).
extern "C" __global__ void ebr_cells_init(slab_alloc_ref pool, const unit_addr* cells,
                                          unsigned num_cells) {
  const unsigned lane = gpuds::warp::lane_id();
  for (unsigned long long c = gpuds::warp::global_warp_id(); c < num_cells;
       c += gpuds::warp::warp_count()) {
    unsigned* words = pool.pointer_as<unsigned>(cells[c]);
    for (unsigned w = lane; w < pool.unit_bytes() / 4; w += 32) words[w] = static_cast<unsigned>(c);
  }
}

// Each round, every warp either reads a random cell (checks that every word of its unit
// holds the cell's index: poison or another cell's index is a use after free) or
// replaces the cell's unit with a fresh one and retires the old one.
template <class Block, class Ref>
__device__ void churn(const Ref& reclaimer, slab_alloc_ref pool, unit_addr* cells,
                      unsigned num_cells, unsigned rounds, unsigned write_percent,
                      unsigned seed, unsigned long long* violations) {
  __shared__ Block block;
  if (!block.begin(reclaimer)) return;
  warp_allocator allocator(pool);
  const unsigned lane = gpuds::warp::lane_id();
  const unsigned warp = static_cast<unsigned>(gpuds::warp::global_warp_id());
  const unsigned words = pool.unit_bytes() / 4;
  unsigned bad = 0;
  for (unsigned round = 0; round < rounds; ++round) {
    block.enter();
    const unsigned h = gpuds::hash::murmur3_32(warp ^ gpuds::hash::murmur3_32(seed + round));
    const unsigned cell = h % num_cells;
    const bool write = (gpuds::hash::murmur3_32(h) % 100u) < write_percent;
    if (write) {
      const unit_addr fresh = allocator.allocate();
      if (fresh != null_unit) {
        unsigned* w = pool.pointer_as<unsigned>(fresh);
        for (unsigned i = lane; i < words; i += 32) w[i] = cell;
        __syncwarp();
        if (lane == 0u) {
          gpuds::mem::fence_acq_rel();  // the fresh unit's contents before its address
          const unit_addr old = atomicExch(cells + cell, fresh);
          block.retire(old);
        }
      }
    } else {
      unit_addr a = lane == 0u ? gpuds::mem::ld_acquire(cells + cell) : 0u;
      a = __shfl_sync(gpuds::warp::FULL_MASK, a, 0);
      const unsigned* w = pool.pointer_as<unsigned>(a);
      for (unsigned i = lane; i < words; i += 32) {
        if (gpuds::mem::ld_relaxed(w + i) != cell) ++bad;
      }
    }
    block.leave();
  }
  block.end();
  if (bad != 0u) atomicAdd(violations, static_cast<unsigned long long>(bad));
}

extern "C" __global__ void ebr_churn(ebr_ref reclaimer, unit_addr* cells, unsigned num_cells,
                                     unsigned rounds, unsigned write_percent, unsigned seed,
                                     unsigned long long* violations) {
  churn<ebr_block<EBR_SHARED_CAP>>(reclaimer, reclaimer.pool, cells, num_cells, rounds,
                                   write_percent, seed, violations);
}

// The same loop with the null reclaimer: retired units are never freed (the baseline
// that measures what reclamation costs).
extern "C" __global__ void ebr_churn_null(slab_alloc_ref pool, unit_addr* cells,
                                          unsigned num_cells, unsigned rounds,
                                          unsigned write_percent, unsigned seed,
                                          unsigned long long* violations) {
  churn<null_block>(null_reclaimer_ref{0u}, pool, cells, num_cells, rounds, write_percent,
                    seed, violations);
}
