// gpuds/oversub/workload.cuh: the input sequences of Table 2 (Patel et al., §5.1), one
// key at a time: key j of a sequence is a function of (sequence, n, block, seed, j)
// alone, so a thread computes any key without the others.
//
// This is the device twin of `gpuds_oversub::workload` (the host generator, the
// reference): the same seeds (`derive_seed`), the same Feistel permutations with cycle
// walking (`permutation`), the same block windows and block order. Every formula below
// names the host function it mirrors; a GPU test compares the two bit for bit.
//
// Arithmetic: positions and lengths are 64-bit (n <= 2^32 - 2); a window edge
// p·R/n has p <= n < 2^32 and R < 2^32, so the product fits 64 bits. The only loop
// without a fixed count is the permutation's cycle walk, which ends because the Feistel
// network permutes [0, 2^b) (the orbit of an in-range value returns to the range) and
// takes fewer than two steps on average (2^b < 2·(last + 1)).
#pragma once
#include <gpuds/core/hash.cuh>

namespace gpuds {
namespace oversub {
namespace workload {

constexpr unsigned KEY_MIN = 1u;
constexpr unsigned KEY_MAX = 0xFFFFFFFEu;

// The host's `Sequence` variants, in the paper's order (`Sequence::ALL`).
enum kind : unsigned { MI = 0, DU = 1, DR = 2, SU = 3, SR = 4, SUR = 5, DUL = 6, ZZ = 7 };

// Salts of the independent streams of one seed (the host's `salt` module).
constexpr unsigned long long SALT_WINDOW = 1;
constexpr unsigned long long SALT_ORDER = 2;
constexpr unsigned long long SALT_POSITIONS = 3;
constexpr unsigned long long SALT_REPEAT = 4;
constexpr unsigned long long SALT_SPARSE = 5;
constexpr unsigned long long SALT_VALUE = 6;
constexpr unsigned long long SALT_ABSENT = 7;
// The salt of a permutation's round keys (the host's `Permutation::new`).
constexpr unsigned long long SALT_ROUND = 0x5eed;

// The host's `derive_seed`: a 64-bit seed for stream `salt`, part `part` of `seed`.
__host__ __device__ __forceinline__ unsigned long long derive_seed(unsigned long long seed,
                                                                   unsigned long long salt,
                                                                   unsigned long long part) {
  const unsigned long long rotated = (part << 32) | (part >> 32);
  return hash::murmur3_64(hash::murmur3_64(seed ^ 0x243f6a8885a308d3ull) ^
                          (salt * 0x9e3779b97f4a7c15ull) ^ rotated);
}

// The host's `Permutation`: a seeded bijection of [0, last] by a 4-round Feistel
// network over the fewest bits b >= 2 that cover `last`, with cycle walking.
struct permutation {
  static constexpr int ROUNDS = 4;
  unsigned last;
  unsigned high_bits;  // widths of the high and low parts in the first round
  unsigned low_bits;
  unsigned keys[ROUNDS];

  __host__ __device__ __forceinline__ static permutation make(unsigned long long seed, unsigned last) {
    unsigned bits = 2;
    while (bits < 32u && (last >> bits) != 0u) ++bits;
    permutation p;
    p.last = last;
    p.high_bits = bits / 2;
    p.low_bits = bits - bits / 2;
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {
      p.keys[r] = static_cast<unsigned>(derive_seed(seed, SALT_ROUND, static_cast<unsigned long long>(r)));
    }
    return p;
  }

  __host__ __device__ __forceinline__ unsigned network(unsigned x) const {
    unsigned high_bits_now = high_bits;
    unsigned low_bits_now = low_bits;
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {
      // Both parts have at most 16 bits: no shift reaches 32.
      const unsigned high = x >> low_bits_now;
      const unsigned low = x & ((1u << low_bits_now) - 1u);
      x = (low << high_bits_now) | (high ^ (hash::murmur3_32(low ^ keys[r]) & ((1u << high_bits_now) - 1u)));
      const unsigned t = high_bits_now;
      high_bits_now = low_bits_now;
      low_bits_now = t;
    }
    return x;
  }

  // The image of i <= last.
  __host__ __device__ __forceinline__ unsigned apply(unsigned i) const {
    unsigned x = network(i);
    while (x > last) x = network(x);
    return x;
  }
};

// The host's `repeat_slot`: the first `distinct` slots keep their key, a later slot
// copies a seeded one of them.
__host__ __device__ __forceinline__ unsigned repeat_slot(unsigned slot, unsigned distinct,
                                                         unsigned long long seed,
                                                         unsigned long long part) {
  if (slot < distinct) return slot;
  return static_cast<unsigned>(
      derive_seed(seed, SALT_REPEAT, part ^ (static_cast<unsigned long long>(slot) << 32)) % distinct);
}

// One sequence of n keys (the arguments of the host's `Sequence::keys_with`, plus R).
struct sequence {
  unsigned kind;
  unsigned largest;  // R: n for DU and DR, the rounded-up n for DUL, KEY_MAX for SUR
  unsigned long long n;
  unsigned long long block;
  unsigned long long seed;

  // The lower edge (exclusive) of the value window starting at position p (the host's
  // `window_edge`).
  __host__ __device__ __forceinline__ unsigned edge(unsigned long long p) const {
    return static_cast<unsigned>(p * largest / n);
  }

  // The length L_b of the block (in value order) that starts at `first`.
  __host__ __device__ __forceinline__ unsigned long long length(unsigned long long first) const {
    return n - first < block ? n - first : block;
  }

  // Key `offset` of block b (value order) of DU, DUL and SUR (the host's `windows`).
  __host__ __device__ __forceinline__ unsigned window_key(unsigned long long b, unsigned long long offset) const {
    const unsigned long long first = b * block;
    const unsigned lo = edge(first);
    const unsigned hi = edge(first + length(first));
    const permutation window = permutation::make(derive_seed(seed, SALT_WINDOW, b), hi - lo - 1u);
    return 1u + lo + window.apply(static_cast<unsigned>(offset));
  }

  // SUR: the block at output position j and j's offset in it (the host's `BlockOrder`):
  // the last block (the only short one) at a seeded slot s, the others in a seeded
  // permutation over the other slots.
  __host__ __device__ __forceinline__ unsigned shuffled_key(unsigned long long j) const {
    const unsigned long long count = (n + block - 1) / block;
    const unsigned long long last_len = n - (count - 1) * block;
    const unsigned long long s = derive_seed(seed, SALT_ORDER, 0) % count;
    const unsigned long long short_start = s * block;
    unsigned long long slot, offset;
    if (j < short_start) {
      slot = j / block;
      offset = j % block;
    } else if (j < short_start + last_len) {
      slot = s;
      offset = j - short_start;
    } else {
      const unsigned long long past = j - short_start - last_len;
      slot = s + 1 + past / block;
      offset = past % block;
    }
    unsigned long long b = count - 1;
    if (slot != s) {
      const unsigned long long other = slot - (slot > s ? 1ull : 0ull);
      const permutation rest =
          permutation::make(derive_seed(seed, SALT_ORDER, 1), static_cast<unsigned>(count - 2));
      b = rest.apply(static_cast<unsigned>(other));
    }
    return window_key(b, offset);
  }

  // The host's `dense_repeat`: DU's blocks, positions permuted into slots, the slots
  // past the block's distinct count repeating an earlier slot's key.
  __host__ __device__ __forceinline__ unsigned dense_repeat_key(unsigned long long j) const {
    const unsigned long long b = j / block;
    const unsigned long long first = b * block;
    const unsigned long long len = length(first);
    const unsigned long long share = (first + len) / 5 - first / 5;
    const unsigned long long repeats = share < len - 1 ? share : len - 1;
    const unsigned last = static_cast<unsigned>(len - 1);
    const permutation positions = permutation::make(derive_seed(seed, SALT_POSITIONS, b), last);
    const permutation keys = permutation::make(derive_seed(seed, SALT_WINDOW, b), last);
    const unsigned slot =
        repeat_slot(positions.apply(static_cast<unsigned>(j - first)), static_cast<unsigned>(len - repeats), seed, b);
    return 1u + static_cast<unsigned>(first) + keys.apply(slot);
  }

  // Key j < n.
  __host__ __device__ __forceinline__ unsigned key(unsigned long long j) const {
    switch (kind) {
      case MI:
        return static_cast<unsigned>(j) + 1u;
      case DU:
      case DUL:
        return window_key(j / block, j % block);
      case SUR:
        return shuffled_key(j);
      case DR:
        return dense_repeat_key(j);
      case SU:
        return 1u + permutation::make(derive_seed(seed, SALT_SPARSE, 0), KEY_MAX - 1u).apply(static_cast<unsigned>(j));
      case SR: {
        const unsigned distinct = static_cast<unsigned>(n - n / 5);
        const permutation positions =
            permutation::make(derive_seed(seed, SALT_POSITIONS, 0), static_cast<unsigned>(n - 1));
        const permutation sparse = permutation::make(derive_seed(seed, SALT_SPARSE, 0), KEY_MAX - 1u);
        return 1u + sparse.apply(repeat_slot(positions.apply(static_cast<unsigned>(j)), distinct, seed, 0));
      }
      default: {  // ZZ
        const unsigned half = static_cast<unsigned>(j / 2);
        return j % 2 == 0 ? KEY_MIN + half : KEY_MAX - half;
      }
    }
  }
};

// The host's `values`: a seeded bijective mix of the key (`value_key` is the low word of
// derive_seed(seed, SALT_VALUE, 0), computed by the host).
__host__ __device__ __forceinline__ unsigned value_of(unsigned key, unsigned value_key) {
  return hash::murmur3_32(key ^ value_key);
}

}  // namespace workload
}  // namespace oversub
}  // namespace gpuds
