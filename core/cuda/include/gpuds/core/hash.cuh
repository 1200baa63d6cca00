// gpuds/core/hash.cuh: the hash functions the structures use. Each has a Rust twin in
// `gpuds_core::hash` with identical results (checked by a GPU test).
#pragma once

namespace gpuds {
namespace hash {

// MurmurHash3 finalizers (Appleby): full avalanche, a handful of instructions.
__host__ __device__ __forceinline__ unsigned murmur3_32(unsigned k) {
  k ^= k >> 16;
  k *= 0x85ebca6bu;
  k ^= k >> 13;
  k *= 0xc2b2ae35u;
  k ^= k >> 16;
  return k;
}

__host__ __device__ __forceinline__ unsigned long long murmur3_64(unsigned long long k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return k;
}

// The largest prime below 2^32, the default modulus of the universal hash.
constexpr unsigned long long UNIVERSAL_PRIME = 4294967291ull;

// The slab hash paper's universal hash h(k) = ((a*k + b) mod p) mod buckets (§III-A).
// Universal for 1 <= a < p, b < p. Total for any fields, like its Rust twin
// gpuds_core::hash::Universal::bucket: a*k + b < 2^64 never overflows, p == 0 stands for
// UNIVERSAL_PRIME, and buckets == 0 gives 0 (there is no bucket to name; callers must
// not index with it).
struct universal {
  unsigned a;
  unsigned b;
  unsigned p;
  __host__ __device__ __forceinline__ unsigned operator()(unsigned k, unsigned buckets) const {
    const unsigned long long m = p != 0u ? static_cast<unsigned long long>(p) : UNIVERSAL_PRIME;
    const unsigned long long x = (static_cast<unsigned long long>(a) * k + b) % m;
    return buckets != 0u ? static_cast<unsigned>(x % buckets) : 0u;
  }
};

// Two cheap shift/xor/add mixers for cuckoo hashing (the Hive paper's BitHash pair,
// §III-C, uses functions of this family): independent enough to give each key two
// unrelated buckets, cheaper than multiplications.
__host__ __device__ __forceinline__ unsigned bit_mix1(unsigned k) {
  k = (k + 0x7ed55d16u) + (k << 12);
  k = (k ^ 0xc761c23cu) ^ (k >> 19);
  k = (k + 0x165667b1u) + (k << 5);
  k = (k + 0xd3a2646cu) ^ (k << 9);
  k = (k + 0xfd7046c5u) + (k << 3);
  k = (k ^ 0xb55a4f09u) ^ (k >> 16);
  return k;
}

__host__ __device__ __forceinline__ unsigned bit_mix2(unsigned k) {
  k = (k ^ 61u) ^ (k >> 16);
  k = k + (k << 3);
  k = k ^ (k >> 4);
  k = k * 0x27d4eb2du;
  k = k ^ (k >> 15);
  return k;
}

}  // namespace hash
}  // namespace gpuds
