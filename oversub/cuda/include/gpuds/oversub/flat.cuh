// gpuds/oversub/flat.cuh: the flat table (the paper's HT-UVM, §3.1, Algorithm 1) and the
// two-level range table (HT-OVS, §4.1, Algorithm 4), device side.
//
// A flat table is an array of 8-byte slots (key in the low word, value in the high word)
// read by cooperative groups of 16 lanes, one 128-byte window of 16 slots per probe.
// Keys are 32-bit words in [1, 2^32 - 2]: 0 marks an empty slot (a zero-filled table is
// empty) and all ones a deleted key (tombstone). Probing is double hashing over windows:
// window w0 = h1(k) mod W, then w + h2(k) mod W with h2 odd and W a power of two, so the
// step is co-prime with W and a probe sequence visits every window once within W probes
// (the paper's fix of WarpCore's unbounded probing; a miss costs at most W probes).
//
// Invariants: a slot goes EMPTY -> key (one 64-bit CAS of the pair) -> TOMBSTONE (an
// exchange) and never back; an insertion claims the first empty slot of the first window
// of its probe sequence that has one, so a key never lies after an empty slot of its
// probe sequence: a request stops at the first window holding its key or an empty slot.
// Two concurrent insertions of one key claim the same first empty slot; the loser reads
// the window again and finds the key (replace). A replacement stores the value word
// alone (relaxed): its pair stays one key.
//
// Operations are tile-cooperative: both 16-lane halves of a converged warp call them
// (all 32 lanes), each lane with its own request; a half serves its 16 requests one at
// a time (WCWS with groups of 16). Every loop is bounded: W probes per request, and
// RETRY_CAP re-reads of one window (lost CASes); past them the request fails with a
// status flag.
#pragma once
#include <gpuds/core/memory.cuh>
#include <gpuds/core/status.cuh>
#include <gpuds/core/warp.cuh>

namespace gpuds {
namespace oversub {

constexpr unsigned EMPTY_KEY = 0u;
constexpr unsigned TOMBSTONE_KEY = 0xFFFFFFFFu;
constexpr unsigned GROUP = 16;
constexpr unsigned RETRY_CAP = 1u << 12;
// Request outcomes.
constexpr unsigned OP_ABSENT = 0;   // not there (insert: added)
constexpr unsigned OP_PRESENT = 1;  // there (insert: replaced; erase: removed; find: found)
constexpr unsigned OP_FAILED = 2;   // not applied: the status says why

__device__ __forceinline__ unsigned long long pack(unsigned key, unsigned value) {
  return static_cast<unsigned long long>(key) | (static_cast<unsigned long long>(value) << 32);
}

// murmur3's finalizer, and a second independent mixer for the step.
__device__ __forceinline__ unsigned mix1(unsigned k) {
  k ^= k >> 16;
  k *= 0x85ebca6bu;
  k ^= k >> 13;
  k *= 0xc2b2ae35u;
  k ^= k >> 16;
  return k;
}
__device__ __forceinline__ unsigned mix2(unsigned k) {
  k = (k ^ 61u) ^ (k >> 16);
  k *= 9u;
  k ^= k >> 4;
  k *= 0x27d4eb2du;
  k ^= k >> 15;
  return k;
}

// This lane's half of the warp (0 or 16) and its rank in it.
__device__ __forceinline__ unsigned half_base() { return warp::lane_id() & 16u; }
__device__ __forceinline__ unsigned rank() { return warp::lane_id() & 15u; }
// The bits of this lane's half of a warp ballot, as a 16-bit mask.
__device__ __forceinline__ unsigned half_of(unsigned ballot) { return (ballot >> half_base()) & 0xFFFFu; }

struct flat_table {
  unsigned long long* slots;   // windows * 16 pairs
  unsigned long long windows;  // a power of two
  unsigned long long* count;   // live keys (may be null)
  unsigned* status;

  __device__ unsigned long long first(unsigned k) const { return mix1(k) & (windows - 1); }
  __device__ unsigned long long step(unsigned k) const { return (mix2(k) | 1u) & (windows - 1) | 1u; }

  // Serves the requests of both halves: `visit(key, value, window_slots, pair, done)` runs
  // on every lane of a half with its leader's request, the half's window and this lane's
  // slot pair; it returns 0 (go to the next window), 1 (finished) or 2 (read the window
  // again). Requests that pass a cap fail with `outcome` OP_FAILED.
  // `table`: this lane's table (its slots; all of one flat table's lanes pass `slots`,
  // a range table's lanes the inner tables of their keys' ranges, all of `windows`).
  template <class Visit>
  __device__ void serve(bool inserting, bool active, unsigned long long* table, unsigned key, unsigned value,
                        unsigned& outcome, Visit&& visit) const {
    const unsigned base = half_base();
    bool pending = active;
    // Per half: the request in service (its leader lane), its window and counters.
    int leader = -1;
    unsigned long long w = 0, s = 0, probes = 0;
    unsigned retries = 0;
    for (;;) {
      const unsigned want = half_of(__ballot_sync(warp::FULL_MASK, pending));
      if (leader < 0 && want != 0u) {
        leader = static_cast<int>(base + __ffs(want) - 1);
      }
      const bool busy = leader >= 0;
      if (!__any_sync(warp::FULL_MASK, busy)) return;
      const int src = busy ? leader : static_cast<int>(base);
      const unsigned k = __shfl_sync(warp::FULL_MASK, key, src);
      const unsigned v = __shfl_sync(warp::FULL_MASK, value, src);
      unsigned long long* const t = warp::broadcast(table, src);
      if (busy && probes == 0 && retries == 0) {
        w = first(k);
        s = step(k);
      }
      unsigned long long* const window = t + w * GROUP;
      const unsigned long long pair = busy ? mem::ld_relaxed(window + rank()) : 0ull;
      const unsigned verdict = visit(busy, k, v, window, pair, src);
      bool finished = verdict == 1u;
      if (busy && verdict == 0u) {
        w = (w + s) & (windows - 1);
        retries = 0;
        if (++probes >= windows) {
          // Every window visited: an insertion found no room (TABLE_FULL); a lookup or
          // removal has seen the whole table, and the key is absent.
          if (inserting) {
            status::report(status, status::TABLE_FULL);
            if (warp::lane_id() == static_cast<unsigned>(src)) outcome = OP_FAILED;
          }
          finished = true;
        }
      } else if (busy && verdict == 2u) {
        if (++retries >= RETRY_CAP) {
          status::report(status, status::RETRY_LIMIT);
          if (warp::lane_id() == static_cast<unsigned>(src)) outcome = OP_FAILED;
          finished = true;
        }
      }
      if (busy && finished) {
        if (warp::lane_id() == static_cast<unsigned>(src)) pending = false;
        leader = -1;
        probes = 0;
        retries = 0;
      }
    }
  }

  // Inserts or replaces (key, value): OP_ABSENT (added) or OP_PRESENT (replaced).
  __device__ unsigned insert(bool active, unsigned key, unsigned value) const {
    return insert_at(active, slots, key, value);
  }
    __device__ unsigned insert_at(bool active, unsigned long long* table, unsigned key, unsigned value) const {
    return store_at(active, table, key, value, false);
  }

  // Adds `delta` to key's value (an atomic add), or inserts (key, delta) when absent:
  // OP_ABSENT (added) or OP_PRESENT. The counting operation of k-mer tables.
  __device__ unsigned add(bool active, unsigned key, unsigned delta) const {
    return store_at(active, slots, key, delta, true);
  }
  __device__ unsigned add_at(bool active, unsigned long long* table, unsigned key, unsigned delta) const {
    return store_at(active, table, key, delta, true);
  }

  // insert_at (replace the value) or add_at (`accumulate`: add to it).
  __device__ unsigned store_at(bool active, unsigned long long* table, unsigned key, unsigned value,
                               bool accumulate) const {
    unsigned outcome = OP_ABSENT;
    serve(true, active, table, key, value, outcome,
          [&](bool busy, unsigned k, unsigned v, unsigned long long* window, unsigned long long pair,
              int src) -> unsigned {
            const unsigned word = static_cast<unsigned>(pair);
            const unsigned hits = half_of(__ballot_sync(warp::FULL_MASK, busy && word == k));
            const unsigned empties = half_of(__ballot_sync(warp::FULL_MASK, busy && word == EMPTY_KEY));
            // Every shuffle before any return: the idle half takes part in all of them.
            const bool me = warp::lane_id() == static_cast<unsigned>(src);
            const bool claim = busy && hits == 0u && empties != 0u;
            const unsigned at = claim ? __ffs(empties) - 1 : 0u;
            bool won = false;
            if (claim && rank() == at) {
              won = mem::cas_relaxed(window + at, pack(EMPTY_KEY, 0u), pack(k, v)) == pack(EMPTY_KEY, 0u);
            }
            won = __shfl_sync(warp::FULL_MASK, won, static_cast<int>(half_base() + at));
            if (!busy) return 1u;
            if (hits != 0u) {
                            if (me) {
                unsigned* const word_at = reinterpret_cast<unsigned*>(window + (__ffs(hits) - 1)) + 1;
                if (accumulate) {
                  atomicAdd(word_at, v);
                } else {
                  mem::st_relaxed(word_at, v);
                }
                outcome = OP_PRESENT;
              }
              return 1u;
            }
            if (empties == 0u) return 0u;
            if (won && me) outcome = OP_ABSENT;
            return won ? 1u : 2u;
          });
    return outcome;
  }

  // Removes key: OP_PRESENT (removed; `old` its value) or OP_ABSENT.
  __device__ unsigned erase(bool active, unsigned key, unsigned& old) const {
    return erase_at(active, slots, key, old);
  }
  __device__ unsigned erase_at(bool active, unsigned long long* table, unsigned key, unsigned& old) const {
    unsigned outcome = OP_ABSENT;
    serve(false, active, table, key, 0u, outcome,
          [&](bool busy, unsigned k, unsigned, unsigned long long* window, unsigned long long pair,
              int src) -> unsigned {
            const unsigned word = static_cast<unsigned>(pair);
            const unsigned hits = half_of(__ballot_sync(warp::FULL_MASK, busy && word == k));
            const unsigned empties = half_of(__ballot_sync(warp::FULL_MASK, busy && word == EMPTY_KEY));
            if (!busy) return 1u;
            if (hits != 0u) {
              const unsigned at = __ffs(hits) - 1;
              if (warp::lane_id() == static_cast<unsigned>(src)) {
                const unsigned long long was = atomicExch(window + at, pack(TOMBSTONE_KEY, 0u));
                if (static_cast<unsigned>(was) == k) {
                  outcome = OP_PRESENT;
                  old = static_cast<unsigned>(was >> 32);
                }
              }
              return 1u;
            }
            return empties != 0u ? 1u : 0u;
          });
    return outcome;
  }

  // Looks key up: OP_PRESENT (`value` its value) or OP_ABSENT.
  __device__ unsigned find(bool active, unsigned key, unsigned& value) const {
    return find_at(active, slots, key, value);
  }
  __device__ unsigned find_at(bool active, unsigned long long* table, unsigned key, unsigned& value) const {
    unsigned outcome = OP_ABSENT;
    serve(false, active, table, key, 0u, outcome,
          [&](bool busy, unsigned k, unsigned, unsigned long long*, unsigned long long pair,
              int src) -> unsigned {
            const unsigned word = static_cast<unsigned>(pair);
            const unsigned hits = half_of(__ballot_sync(warp::FULL_MASK, busy && word == k));
            const unsigned empties = half_of(__ballot_sync(warp::FULL_MASK, busy && word == EMPTY_KEY));
            const unsigned v = __shfl_sync(warp::FULL_MASK, static_cast<unsigned>(pair >> 32),
                                           static_cast<int>(half_base() + (hits != 0u ? __ffs(hits) - 1 : 0u)));
            if (!busy) return 1u;
            if (hits != 0u) {
              if (warp::lane_id() == static_cast<unsigned>(src)) {
                outcome = OP_PRESENT;
                value = v;
              }
              return 1u;
            }
            return empties != 0u ? 1u : 0u;
          });
    return outcome;
  }
};

// One range of a range table (the paper's outer entry): its inner table (a flat table of
// `inner_windows` windows, allocated by the host before the first batch that touches
// the range; 0 until then) and its live keys (Count). A range is in use when its count is
// not zero (the paper's Range field).
struct range_entry {
  unsigned long long inner;
  unsigned long long count;
};

struct range_table {
  range_entry* outer;
  unsigned long long num_ranges;
  unsigned long long inner_windows;
  unsigned long long* count;  // live keys over all ranges
  unsigned* status;
  unsigned range_shift;       // h_o(K) = K >> range_shift (RNG = 2^range_shift)

  __device__ unsigned long long range_of(unsigned k) const { return k >> range_shift; }
  // The flat table whose operations run on inner tables (`*_at` with each lane's inner).
  __device__ flat_table inner_tables() const {
    flat_table t;
    t.slots = nullptr;
    t.windows = inner_windows;
    t.count = nullptr;
    t.status = status;
    return t;
  }

  // Adds `delta` to the count of each flagged lane's range, one atomic per range and warp.
  __device__ void add_counts(bool flag, unsigned long long range, long long delta) const {
    const unsigned flagged = __ballot_sync(warp::FULL_MASK, flag);
    if (flagged == 0u) return;
    const unsigned peers = __match_any_sync(warp::FULL_MASK, flag ? range : ~0ull) & flagged;
    if (flag && warp::lane_id() == static_cast<unsigned>(__ffs(peers) - 1)) {
      atomicAdd(&outer[range].count, static_cast<unsigned long long>(delta * __popc(peers)));
    }
  }

  // Inserts or replaces: OP_ABSENT (added) or OP_PRESENT. The key's range must have its
  // inner table (the host allocates it before the batch; a missing one fails the
  // request with OUT_OF_BOUNDS).
  __device__ unsigned insert(bool active, unsigned key, unsigned value) const {
    const unsigned long long r = active ? range_of(key) : 0ull;
    unsigned long long inner = active ? mem::ld_relaxed(&outer[r].inner) : 0ull;
    unsigned outcome = OP_ABSENT;
    if (active && inner == 0ull) {
      status::report(status, status::OUT_OF_BOUNDS);
      outcome = OP_FAILED;
      active = false;
    }
    const unsigned got = inner_tables().insert_at(active, reinterpret_cast<unsigned long long*>(inner), key, value);
    if (active) outcome = got;
    add_counts(active && got == OP_ABSENT, r, 1);
    return outcome;
  }

    // Adds delta to key's value, or inserts (key, delta): as insert.
  __device__ unsigned add(bool active, unsigned key, unsigned delta) const {
    const unsigned long long r = active ? range_of(key) : 0ull;
    unsigned long long inner = active ? mem::ld_relaxed(&outer[r].inner) : 0ull;
    unsigned outcome = OP_ABSENT;
    if (active && inner == 0ull) {
      status::report(status, status::OUT_OF_BOUNDS);
      outcome = OP_FAILED;
      active = false;
    }
    const unsigned got = inner_tables().add_at(active, reinterpret_cast<unsigned long long*>(inner), key, delta);
    if (active) outcome = got;
    add_counts(active && got == OP_ABSENT, r, 1);
    return outcome;
  }

  // Removes: OP_PRESENT (removed) or OP_ABSENT; an empty range answers at once.
  __device__ unsigned erase(bool active, unsigned key, unsigned& old) const {
    const unsigned long long r = active ? range_of(key) : 0ull;
    range_entry e{0ull, 0ull};
    if (active) e = outer[r];
    const bool run = active && e.inner != 0ull && e.count != 0ull;
    const unsigned got = inner_tables().erase_at(run, reinterpret_cast<unsigned long long*>(e.inner), key, old);
    add_counts(run && got == OP_PRESENT, r, -1);
    return run ? got : OP_ABSENT;
  }

  // Looks up: an empty range (no inner table, or a count of zero) answers OP_ABSENT at
  // once (the paper's early exit for negative queries).
  __device__ unsigned find(bool active, unsigned key, unsigned& value) const {
    const unsigned long long r = active ? range_of(key) : 0ull;
    range_entry e{0ull, 0ull};
    if (active) e = outer[r];
    const bool run = active && e.inner != 0ull && e.count != 0ull;
    const unsigned got = inner_tables().find_at(run, reinterpret_cast<unsigned long long*>(e.inner), key, value);
    return run ? got : OP_ABSENT;
  }
};

}  // namespace oversub
}  // namespace gpuds
