// gpuds/alloc/ebr.cuh: block-granular epoch-based reclamation (DEBRA-style), after the
// dissertation's §4.2.3 and §4.4.4 (Awad 2022) and Brown's DEBRA.
//
// The problem: a structure that unlinks a unit cannot free it at once, because other
// warps may still be reading it. EBR defers the free until every block that could hold
// a reference has finished the operation it was in.
//
// The protocol, with thread blocks as the "processes":
// - A global epoch counter, and an announce array with one entry per block of a
//   persistent grid (slot = blockIdx.x): (epoch << 1) | active.
// - enter(): the block reads the global epoch e, announces (e, active) and reads the
//   epoch again (announcing the newer one if it moved meanwhile). If e is newer
//   than the epoch the block last saw, limbo bags old enough are handed back to SlabAlloc
//   (cooperatively, by the whole block). Then the block scans the next blockDim entries
//   of the announce array (DEBRA's incremental scan); once a whole pass saw every active
//   block at e, it advances the global epoch to e + 1 with one CAS.
// - retire(a): a unit unlinked during the operation goes into the bag of the block's
//   epoch (three bags, by epoch mod 3; shared memory first, then the block's global
//   storage).
// - leave(): the block announces itself quiescent.
// Safety: a unit retired while the block announced epoch r was unlinked while the global
// epoch was r or r + 1 (it cannot pass r + 1 while this block is active at r). Readers
// that may hold it were active at an epoch of at most r + 1; the epoch reaches r + 3 only
// after every block active at r + 1 or earlier has left. So the bag of epoch r goes back
// to the allocator when the block sees epoch r + 3: two epochs after the last epoch in
// which its units can have been unlinked. Three bags suffice (r, r + 1, r + 2 live).
//
// The protocol is modelled on the CPU by alloc/tests/ebr_model.rs (random schedules of
// these steps; a shorter delay, or no second read in enter(), is caught there). The
// epoch is 32 bits; after 2^32 advances the mod-3 bag indices would slip.
//
// Kernels that reclaim run as persistent grids (gridDim.x <= the collector's slots) and
// call, with every thread of the block: begin() once, enter()/leave() around each round
// of operations, end() once before returning (it moves the shared-memory bags to the
// block's global storage, where the next kernel or the host's drain finds them).
// Nothing here spins: the epoch advances only when a scan allows it.
#pragma once
#include <gpuds/alloc/slab_alloc.cuh>
#include <gpuds/core/memory.cuh>
#include <gpuds/core/status.cuh>

namespace gpuds {
namespace alloc {

// Status flag (structure bit 17): a block's global limbo storage was full, so a retired
// unit could not be stored and stays allocated (counted as `dropped`).
constexpr unsigned LIMBO_FULL = status::FIRST_STRUCTURE_BIT << 1;

constexpr unsigned EBR_BAGS = 3;

// The collector as kernels see it. Rust mirror: gpuds_alloc::EbrRef.
struct ebr_ref {
  slab_alloc_ref pool;            // where reclaimed units go
  unsigned* epoch;                // the global epoch
  unsigned* announce;             // one word per slot: (epoch << 1) | active
  unsigned* slot_epoch;           // per slot: the epoch its bags are relative to
  unsigned* slot_counts;          // per slot and bag: units in the global bag
  unit_addr* slot_bags;           // per slot and bag: bag_capacity units
  unsigned long long* counters;   // retired, reclaimed, dropped
  unsigned* status;               // the collector's status word
  unsigned slots;                 // entries of the announce array
  unsigned bag_capacity;          // units per global bag
  unsigned poison;                // nonzero: reclaimed units are filled with it first
  unsigned reserved;              // zero
};

// Block state, in shared memory: `__shared__ ebr_block<CAP> ebr;` with CAP units per
// shared bag. Trivially constructible; begin() initialises it.
template <unsigned CAP>
struct ebr_block {
  ebr_ref ref;
  unsigned slot;
  unsigned epoch;                 // the epoch this block last observed (bags relative to it)
  unsigned counts[EBR_BAGS];      // units retired into each bag during this kernel
  unsigned global_base[EBR_BAGS]; // units already in each global bag at kernel start
  unsigned scan_pos;              // next announce entry to scan
  unsigned scan_epoch;            // epoch the current scan pass checks against
  unsigned free_mask;             // bags to hand back (broadcast from thread 0)
  unsigned retired;               // units retired by this block during this kernel
  unsigned ok;                    // block-wide: this block has a slot
  unit_addr bags[EBR_BAGS][CAP];

  // Every thread of the block. False (OUT_OF_BOUNDS recorded) when the grid is larger
  // than the announce array: the block must then return without entering.
  __device__ bool begin(const ebr_ref& r) {
    if (threadIdx.x == 0) {
      ref = r;
      slot = blockIdx.x;
      ok = blockIdx.x < r.slots ? 1u : 0u;
      if (ok) {
        epoch = r.slot_epoch[slot];
        for (unsigned b = 0; b < EBR_BAGS; ++b) {
          counts[b] = 0u;
          global_base[b] = r.slot_counts[slot * EBR_BAGS + b];
        }
      } else {
        status::report(r.status, status::OUT_OF_BOUNDS);
      }
      scan_pos = 0u;
      scan_epoch = 0xFFFFFFFFu;
      retired = 0u;
    }
    __syncthreads();
    return ok != 0u;
  }

  // Every thread of the block: leaves the quiescent state before a round of operations.
  __device__ void enter() {
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned e = mem::ld_acquire(ref.epoch);
      mem::st_relaxed(ref.announce + slot, (e << 1) | 1u);
      // The announcement must be visible before the epoch is read again and before this
      // block reads the structure.
      mem::fence_sc();
      // Check it: an epoch read before a long stall may be stale, and a block active at
      // a stale epoch would let the epoch run more than one ahead of it. Announcing the
      // current epoch once more settles it: while the stale announcement stands, the
      // epoch cannot advance, so the second read is still current (two rounds at most).
      const unsigned now = mem::ld_acquire(ref.epoch);
      if (now != e) {
        e = now;
        mem::st_relaxed(ref.announce + slot, (e << 1) | 1u);
        mem::fence_sc();
      }
      // Bags hold the epochs epoch-2 .. epoch; the one `back` epochs behind goes back to
      // the pool once e is three epochs past it. (Bag indices are taken mod 3 from
      // epoch % 3, so that the bags "before" epoch 0 map correctly.)
      const unsigned delta = e - epoch;
      unsigned mask = 0u;
      for (unsigned back = 0; back < EBR_BAGS; ++back) {
        if (delta != 0u && delta + back >= 3u) {
          mask |= 1u << ((epoch % EBR_BAGS + EBR_BAGS - back) % EBR_BAGS);
        }
      }
      free_mask = mask;
      epoch = e;  // retire() is not called during enter(); the bags keep their counts
      if (scan_epoch != e) {
        scan_epoch = e;
        scan_pos = 0u;
      }
    }
    __syncthreads();
    // Only when the epoch moved (rarely) are bags handed back; otherwise an enter() costs
    // two barriers and the scan's.
    const unsigned mask = free_mask;
    if (mask != 0u) {
      for (unsigned b = 0; b < EBR_BAGS; ++b) {
        if (mask & (1u << b)) free_bag(b);
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        for (unsigned b = 0; b < EBR_BAGS; ++b) {
          if (mask & (1u << b)) {
            counts[b] = 0u;
            global_base[b] = 0u;
            ref.slot_counts[slot * EBR_BAGS + b] = 0u;
          }
        }
      }
      __syncthreads();
    }
    scan_step();
  }

  // Every thread of the block: back to the quiescent state after a round.
  __device__ void leave() {
    __syncthreads();
    if (threadIdx.x == 0) mem::st_release(ref.announce + slot, epoch << 1);
  }

  // Any thread, between enter() and leave(): `a` was unlinked during this round and goes
  // back to the allocator once no block can hold it.
  __device__ void retire(unit_addr a) {
    if (a == null_unit) return;
    const unsigned b = epoch % EBR_BAGS;
    const unsigned j = atomicAdd(&counts[b], 1u);
    atomicAdd(&retired, 1u);
    if (j < CAP) {
      bags[b][j] = a;
      return;
    }
    const unsigned k = global_base[b] + (j - CAP);
    if (k < ref.bag_capacity) {
      ref.slot_bags[global_index(b, k)] = a;
    } else {
      status::report(ref.status, LIMBO_FULL);
      atomicAdd(ref.counters + 2, 1ull);
    }
  }

  // Every thread of the block, once before the kernel returns: the shared bags go to
  // the block's global storage and the block's counts and epoch are saved.
  __device__ void end() {
    __syncthreads();
    for (unsigned b = 0; b < EBR_BAGS; ++b) {
      const unsigned in_shared = counts[b] < CAP ? counts[b] : CAP;
      const unsigned overflow = counts[b] - in_shared;
      const unsigned start = global_base[b] + overflow;
      for (unsigned j = threadIdx.x; j < in_shared; j += blockDim.x) {
        const unsigned k = start + j;
        if (k < ref.bag_capacity) {
          ref.slot_bags[global_index(b, k)] = bags[b][j];
        } else {
          status::report(ref.status, LIMBO_FULL);
          atomicAdd(ref.counters + 2, 1ull);
        }
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (unsigned b = 0; b < EBR_BAGS; ++b) {
        const unsigned total = global_base[b] + counts[b];
        ref.slot_counts[slot * EBR_BAGS + b] = total < ref.bag_capacity ? total : ref.bag_capacity;
      }
      ref.slot_epoch[slot] = epoch;
      if (retired != 0u) atomicAdd(ref.counters, static_cast<unsigned long long>(retired));
      mem::st_release(ref.announce + slot, epoch << 1);
    }
  }

 private:
  __device__ unsigned long long global_index(unsigned b, unsigned k) const {
    return (static_cast<unsigned long long>(slot) * EBR_BAGS + b) * ref.bag_capacity + k;
  }

  // The whole block hands bag b back to the allocator.
  __device__ void free_bag(unsigned b) {
    const unsigned in_shared = counts[b] < CAP ? counts[b] : CAP;
    const unsigned total_global = global_base[b] + (counts[b] - in_shared);
    const unsigned in_global = total_global < ref.bag_capacity ? total_global : ref.bag_capacity;
    for (unsigned j = threadIdx.x; j < in_shared + in_global; j += blockDim.x) {
      const unit_addr a = j < in_shared ? bags[b][j] : ref.slot_bags[global_index(b, j - in_shared)];
      reclaim(a);
    }
    if (threadIdx.x == 0 && in_shared + in_global != 0u) {
      atomicAdd(ref.counters + 1, static_cast<unsigned long long>(in_shared + in_global));
    }
  }

  __device__ void reclaim(unit_addr a) const {
    if (ref.poison != 0u) {
      unsigned* words = ref.pool.pointer_as<unsigned>(a);
      for (unsigned w = 0; w < ref.pool.unit_bytes() / 4; ++w) words[w] = ref.poison;
    }
    ref.pool.deallocate(a);
  }

  // One step of the incremental scan: the block checks blockDim announce entries; when
  // a pass over the whole array saw no active block behind scan_epoch, thread 0 tries
  // to advance the global epoch.
  __device__ void scan_step() {
    const unsigned i = scan_pos + threadIdx.x;
    bool fine = true;
    if (i < ref.slots) {
      const unsigned a = mem::ld_acquire(ref.announce + i);
      fine = (a & 1u) == 0u || (a >> 1) == (scan_epoch & 0x7FFFFFFFu);
    }
    const bool all_fine = __syncthreads_and(fine) != 0;
    if (threadIdx.x == 0 && all_fine) {
      scan_pos += blockDim.x;
      if (scan_pos >= ref.slots) {
        mem::cas_acq_rel(ref.epoch, scan_epoch, scan_epoch + 1u);
        scan_pos = 0u;
      }
    }
  }
};

// The reclaimer for structures that never free: the same interface, doing nothing.
// retire() drops the unit (it stays allocated).
struct null_reclaimer_ref {
  unsigned unused;
};

struct null_block {
  __device__ bool begin(const null_reclaimer_ref&) { return true; }
  __device__ void enter() {}
  __device__ void leave() {}
  __device__ void retire(unit_addr) {}
  __device__ void end() {}
};

}  // namespace alloc
}  // namespace gpuds
