// gpuds/alloc/slab_alloc.cuh: SlabAlloc, the warp-synchronous slab allocator of the slab
// hash paper (Ashkiani et al., IPDPS 2018, §V), device side.
//
// The pool is made of fixed-size units (64, 128 or 256 bytes), 1,024 units to a memory
// block, memory blocks grouped into super blocks. A unit is named by a 32-bit address:
// super block (8 bits) | memory block (14 bits) | unit (10 bits); 0xFFFFFFFF is null and
// is never handed out (the pool never maps the last memory block of super block 255).
// Each memory block has a 1,024-bit bitmap (32 words, bit set = unit in use).
//
// Allocation (§V-B): a warp keeps a *resident* memory block and holds its bitmap in
// registers, one word per lane, read with one coalesced load. To allocate, the warp
// elects the first lane whose word has a free bit; that lane claims the bit with one
// atomic OR on the global word and broadcasts the address. "First" is counted from a
// per-warp starting lane and bit (a hash of the warp id), not from lane 0 and bit 0: when
// several warps share a resident block they then claim different words and bits instead
// of colliding on the same one. A lost race (the bit was taken
// meanwhile) refreshes the lane's word from the value the atomic returned. When no lane
// sees a free bit, the warp moves to another block chosen by hashing (global warp id,
// number of changes). After `max_changes` changes in one allocation without a free unit it
// returns null_unit and records POOL_EXHAUSTED in the allocator's status word: every loop
// here is bounded (each lost race sets one more bit in a register word, so a block is
// abandoned after at most 1,024 failed claims).
//
// Invariants: a bit is set by exactly one successful claim and cleared by one
// deallocation; a unit's contents are the caller's (allocation does not clear them).
// Deallocation issues a GPU-scope fence before clearing the bit, so that the freeing
// thread's accesses to the unit are ordered before the unit can be handed out again.
//
// Decode (§V-C, "SlabAlloc-light"): in the light layout the whole pool is one contiguous
// virtual range, so a unit's pointer is base + address * unit_bytes. In the classic layout
// super blocks are separate allocations and decode reads the super block's base from a
// small table first.
#pragma once
#include <gpuds/core/hash.cuh>
#include <gpuds/core/memory.cuh>
#include <gpuds/core/status.cuh>
#include <gpuds/core/warp.cuh>
// Defines GPUDS_ALLOC_FAULTS when the crate's `fault-injection` feature is on (tests only).
#include <gpuds/alloc/faults.cuh>

namespace gpuds {
namespace alloc {

using unit_addr = unsigned;  // super block:8 | memory block:14 | unit:10
constexpr unit_addr null_unit = 0xFFFFFFFFu;

constexpr unsigned UNIT_BITS = 10;
constexpr unsigned BLOCK_BITS = 14;
constexpr unsigned SUPER_BITS = 8;
constexpr unsigned UNITS_PER_BLOCK = 1u << UNIT_BITS;
constexpr unsigned WORDS_PER_BLOCK = UNITS_PER_BLOCK / 32;
constexpr unsigned BLOCKS_PER_SUPER_MAX = 1u << BLOCK_BITS;

// Status flag of the allocator's own word (structure bit 16): a unit was freed twice.
constexpr unsigned DOUBLE_FREE = status::FIRST_STRUCTURE_BIT;

// The allocator as kernels see it: trivially copyable, non-owning, passed by value.
// Rust mirror: gpuds_alloc::SlabAllocRef (same fields, same order).
struct slab_alloc_ref {
  unsigned* bitmap;                 // WORDS_PER_BLOCK words per memory block, block g first at 32*g
  char* base;                       // light layout: the pool's base; classic: nullptr
  char* const* super_bases;         // classic layout: base of each super block
  unsigned* status;                 // the allocator's status word
  unsigned num_blocks;              // memory blocks in the pool, indexed 0..num_blocks-1
  unsigned log_blocks_per_super;    // block index g = super << log | block-in-super
  unsigned unit_shift;              // log2(unit bytes)
  unsigned max_changes;             // resident-block changes before an allocation fails
  unsigned seed;                    // varies per SlabAlloc::device_ref call
  unsigned fail_at;                 // fault injection (tests): the fail_at-th request fails
  unsigned* faults;                 // fault injection: the request counter; nullptr when off

  // Pointer to unit `a`; any thread, no checks (a must be an allocated address).
  __device__ __forceinline__ void* pointer(unit_addr a) const {
    if (base != nullptr) {
      return base + (static_cast<unsigned long long>(a) << unit_shift);
    }
    return super_bases[a >> (UNIT_BITS + BLOCK_BITS)] +
           (static_cast<unsigned long long>(a & ((1u << (UNIT_BITS + BLOCK_BITS)) - 1u))
            << unit_shift);
  }

  template <class T>
  __device__ __forceinline__ T* pointer_as(unit_addr a) const {
    return static_cast<T*>(pointer(a));
  }

  __device__ __forceinline__ unsigned unit_bytes() const { return 1u << unit_shift; }

  // Memory block index g of an address.
  __device__ __forceinline__ unsigned block_of(unit_addr a) const {
    return ((a >> (UNIT_BITS + BLOCK_BITS)) << log_blocks_per_super) |
           ((a >> UNIT_BITS) & (BLOCKS_PER_SUPER_MAX - 1u));
  }

  // Address of unit `unit` (0..1023) of memory block g.
  __device__ __forceinline__ unit_addr address(unsigned g, unsigned unit) const {
    const unsigned super = g >> log_blocks_per_super;
    const unsigned block = g & ((1u << log_blocks_per_super) - 1u);
    return (super << (UNIT_BITS + BLOCK_BITS)) | (block << UNIT_BITS) | unit;
  }

  // Frees unit `a`; any ONE thread. Does not touch the unit's contents. Freeing null is a
  // no-op; freeing an address outside the pool records OUT_OF_BOUNDS, freeing a unit that
  // is already free records DOUBLE_FREE (the bitmap is left as it was).
  __device__ __forceinline__ void deallocate(unit_addr a) const {
    if (a == null_unit) return;
    const unsigned g = block_of(a);
    if (g >= num_blocks || (a >> UNIT_BITS & (BLOCKS_PER_SUPER_MAX - 1u)) >> log_blocks_per_super) {
      status::report(status, status::OUT_OF_BOUNDS);
      return;
    }
    const unsigned unit = a & (UNITS_PER_BLOCK - 1u);
    const unsigned mask = 1u << (unit & 31u);
    mem::fence_acq_rel();
    const unsigned old = mem::fetch_and_relaxed(bitmap + g * WORDS_PER_BLOCK + (unit >> 5), ~mask);
    if ((old & mask) == 0u) status::report(status, DOUBLE_FREE);
  }
};

// The per-warp allocation context: resident block and its bitmap, in registers.
//
// Every member function must be called by all 32 lanes of a converged warp (it uses
// full-mask ballots and shuffles); the results are the same on every lane unless said
// otherwise. Construct it once per warp (e.g. at kernel start) and reuse it: the
// resident block carries over from one allocation to the next.
class warp_allocator {
 public:
  __device__ explicit warp_allocator(const slab_alloc_ref& ref)
      : ref_(ref),
        lane_(warp::lane_id()),
        warp_(static_cast<unsigned>(warp::global_warp_id())),
        spread_(hash::murmur3_32(warp_ + 0x51ed27u) & 31u),
        changes_(0u) {
    move_to(pick());
  }

  // One unit for the warp: the same address on every lane, or null_unit after
  // max_changes resident-block changes without a free unit (POOL_EXHAUSTED recorded).
  __device__ unit_addr allocate() {
    if (injected_fault()) return null_unit;
    return claim_one();
  }

  // One unit for each lane with `want`: lanes whose register word has a free bit claim
  // from it all at once (one atomic each, on 32 neighbouring words); the others are then
  // served one at a time by allocate(). Returns this lane's address (null_unit for lanes
  // without `want`, and for lanes left over when the pool is exhausted).
  __device__ unit_addr allocate_lane(bool want) {
    if (injected_fault()) return null_unit;
    unit_addr mine = null_unit;
    // A lost race refreshes the lane's word, so a few parallel rounds settle most lanes
    // before the serial fallback.
    for (unsigned round = 0; round < PARALLEL_ROUNDS; ++round) {
      const bool trying = want && mine == null_unit && word_ != 0xFFFFFFFFu;
      if (!__any_sync(warp::FULL_MASK, trying)) break;
      if (trying) mine = claim_in_own_word();
    }
    unsigned pending = __ballot_sync(warp::FULL_MASK, want && mine == null_unit);
    while (pending != 0u) {  // at most 32 rounds
      const int src = __ffs(pending) - 1;
      const unit_addr a = claim_one();
      if (static_cast<int>(lane_) == src) mine = a;
      if (a == null_unit) break;
      pending &= pending - 1u;
    }
    return mine;
  }

  // The resident memory block (for tests and statistics).
  __device__ unsigned resident_block() const { return block_; }

 private:
  static constexpr unsigned PARALLEL_ROUNDS = 4;

  // The lowest set bit of `bits` at or above `from`, wrapping around; bits != 0. Warps that
  // share a resident block start their searches at different lanes and bits (`spread_`),
  // so their claims rarely collide on one word or one bit.
  __device__ __forceinline__ static int first_at_or_after(unsigned bits, unsigned from) {
    const unsigned high = bits & (0xFFFFFFFFu << from);
    return __ffs(high != 0u ? high : bits) - 1;
  }

  // Claims a free bit of this lane's word; returns its address or null_unit
  // after a lost race (the word then holds the bitmap value the atomic saw).
  __device__ __forceinline__ unit_addr claim_in_own_word() {
    const unsigned bit = static_cast<unsigned>(first_at_or_after(~word_, spread_));
    const unsigned mask = 1u << bit;
    const unsigned old =
        mem::fetch_or_relaxed(ref_.bitmap + block_ * WORDS_PER_BLOCK + lane_, mask);
    word_ = old | mask;
    if ((old & mask) != 0u) return null_unit;
    return ref_.address(block_, lane_ * 32u + bit);
  }

  __device__ __forceinline__ unsigned pick() const {
    if (ref_.num_blocks == 0u) return 0u;
    unsigned h = hash::murmur3_32(warp_ ^ ref_.seed);
    h = hash::murmur3_32(h + changes_ * 0x9e3779b9u);
    return h % ref_.num_blocks;
  }

  __device__ __forceinline__ void move_to(unsigned g) {
    block_ = g;
    word_ = ref_.num_blocks == 0u
                ? 0xFFFFFFFFu
                : mem::ld_relaxed(ref_.bitmap + g * WORDS_PER_BLOCK + lane_);
  }

  // Moves to the next block of the hash sequence; false (POOL_EXHAUSTED recorded) once
  // this allocation has made max_changes changes. The sequence itself goes on across
  // allocations (changes_ counts them all), so a warp never revisits the same blocks.
  __device__ __forceinline__ bool change_block(unsigned& changes_here) {
    if (changes_here >= ref_.max_changes || ref_.num_blocks == 0u) {
      if (lane_ == 0u) status::report(ref_.status, status::POOL_EXHAUSTED);
      return false;
    }
    ++changes_here;
    ++changes_;
    move_to(pick());
    return true;
  }

  // allocate() without the fault check.
  __device__ unit_addr claim_one() {
    unsigned changes_here = 0u;
    for (;;) {
      const unsigned lanes_with_room = __ballot_sync(warp::FULL_MASK, word_ != 0xFFFFFFFFu);
      if (lanes_with_room == 0u) {
        if (!change_block(changes_here)) return null_unit;
        continue;
      }
      const int src = first_at_or_after(lanes_with_room, spread_);
      unit_addr claimed = null_unit;
      if (static_cast<int>(lane_) == src) claimed = claim_in_own_word();
      claimed = __shfl_sync(warp::FULL_MASK, claimed, src);
      if (claimed != null_unit) return claimed;
    }
  }

  // Fault injection, compiled only with the `fault-injection` feature: every warp-wide
  // request (a call of allocate or allocate_lane) is counted, and the fail_at-th fails as
  // an exhausted pool does (null_unit and POOL_EXHAUSTED).
  __device__ __forceinline__ bool injected_fault() const {
#ifdef GPUDS_ALLOC_FAULTS
    if (ref_.faults == nullptr) return false;
    unsigned n = 0u;
    if (lane_ == 0u) n = atomicAdd(ref_.faults, 1u) + 1u;
    n = __shfl_sync(warp::FULL_MASK, n, 0);
    if (n != ref_.fail_at) return false;
    if (lane_ == 0u) status::report(ref_.status, status::POOL_EXHAUSTED);
    return true;
#else
    return false;
#endif
  }

  slab_alloc_ref ref_;
  unsigned lane_;
  unsigned warp_;
  unsigned spread_;  // where this warp starts its lane and bit searches (0..31)
  unsigned changes_;
  unsigned block_;
  unsigned word_;
};

}  // namespace alloc
}  // namespace gpuds
