// gpuds/hive/probing.cuh: the probing core of gpuds's open-addressing tables.
//
// A table of `capacity` slots is cut into `windows` aligned windows of G consecutive
// slots (G, the cooperative-group width, is a power of two from 1 to 32; capacity is
// windows * G). One operation is carried out by a tile of G lanes: each lane reads one
// slot of the current window, the tile votes, and the probe moves to the next window of
// the key's sequence. With G == 1 this is the plain one-thread-per-key probing of the
// simple lock-free table (Farrell, 2020); with G > 1 it is the cooperative-group probing
// of WarpCore and of the oversubscription paper's HT-UVM (Patel et al., §3.1).
//
// Probing policies (the sequence of windows a key visits):
//   linear          window w, w+1, w+2, ... (mod windows)
//   double_hashing  window w, w+s, w+2s, ... (mod windows), s drawn from a second hash.
// Double hashing visits every window only when gcd(s, windows) == 1. The core keeps that
// invariant by construction: for a power-of-two window count s is odd, and any other
// window count must be prime (the host checks). This is the oversubscription paper's
// rule of a group size coprime with the table size, stated on windows: every slot is
// visited within `windows` probes, so a probe that has seen every window has seen the
// whole table and can stop (a full table is an error, never an endless probe).
//
// Index arithmetic stays in 32 bits with no division: the start window is the
// multiply-high of the hash and the window count, and stepping wraps by one conditional
// subtraction (window + step < 2 * windows <= 2^32 because windows <= 2^31).
#pragma once
#include <gpuds/core/hash.cuh>

namespace gpuds {
namespace probing {

// The shape of a table as the probe sees it. Passed inside device refs by value.
struct geometry {
  unsigned windows;  // number of windows, 1 to 2^31
  unsigned mask;     // windows - 1 when windows is a power of two, else 0
};

// The two 32-bit hashes of a key: h1 picks the start window, h2 the double-hashing step.
struct hashes {
  unsigned h1;
  unsigned h2;
};

__host__ __device__ __forceinline__ hashes hash_key(unsigned k) {
  const unsigned h1 = hash::murmur3_32(k);
  return hashes{h1, hash::murmur3_32(h1 ^ 0x9e3779b9u)};
}

__host__ __device__ __forceinline__ hashes hash_key(unsigned long long k) {
  const unsigned long long h = hash::murmur3_64(k);
  return hashes{static_cast<unsigned>(h), static_cast<unsigned>(h >> 32)};
}

// The first window of a key: floor(h1 * windows / 2^32), uniform without a division.
__host__ __device__ __forceinline__ unsigned start_window(unsigned h1, geometry g) {
  return static_cast<unsigned>((static_cast<unsigned long long>(h1) * g.windows) >> 32);
}

// Linear probing: consecutive windows.
struct linear {
  __host__ __device__ __forceinline__ static unsigned step(unsigned, geometry g) {
    return g.windows > 1u ? 1u : 0u;
  }
};

// Double hashing: a per-key step coprime with the window count.
struct double_hashing {
  __host__ __device__ __forceinline__ static unsigned step(unsigned h2, geometry g) {
    if (g.windows <= 1u) return 0u;
    if (g.mask != 0u) return (h2 & g.mask) | 1u;  // odd, below a power of two
    // Prime window count: any step in [1, windows) is coprime with it.
    return 1u + static_cast<unsigned>((static_cast<unsigned long long>(h2) * (g.windows - 1u)) >> 32);
  }
};

// The sequence of windows one key visits. `window` is the current window.
template <class Probing>
struct sequence {
  unsigned window;
  unsigned step;
  unsigned windows;

  __host__ __device__ __forceinline__ sequence(hashes h, geometry g)
      : window(start_window(h.h1, g)), step(Probing::step(h.h2, g)), windows(g.windows) {}

  __host__ __device__ __forceinline__ void next() {
    window += step;
    if (window >= windows) window -= windows;
  }
};

}  // namespace probing
}  // namespace gpuds
