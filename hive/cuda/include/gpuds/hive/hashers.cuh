// gpuds/hive/hashers.cuh: the hash-function pairs of HiveMap (Hive paper, §III-C, §V-B).
//
// Every pair maps a 32-bit key to two 32-bit hashes (a 64-bit key is folded to 32 bits
// first, see fold64); the table turns each into a bucket
// with the linear-hashing address (low bits under the index mask, one more bit below the
// split pointer), so the low bits must be well mixed. Each pair has a Rust twin in
// gpuds_hive::HashPair with identical results (checked by a GPU test).
//
//   HIVE_HASH 0  BitHash1 & BitHash2: shift/xor/add mixers (the paper's default)
//   HIVE_HASH 1  MurmurHash3's finalizer, on the key and on the key xor a constant
//   HIVE_HASH 2  CityHash's 4-byte path (Mur rounds and the murmur finalizer), two seeds
//   HIVE_HASH 3  CRC-32C (Castagnoli), byte-wise with its table in constant memory; the
//                second hash runs on the key times an odd constant, because CRC is linear
//                under xor and crc(k ^ c) would pair every bucket with one fixed partner
#pragma once
#include <gpuds/core/hash.cuh>

namespace gpuds {
namespace hive {

constexpr unsigned SECOND_SEED = 0x9e3779b9u;
constexpr unsigned CRC_MULTIPLIER = 0x2545f491u;

__host__ __device__ __forceinline__ unsigned rotr32(unsigned x, unsigned r) {
  return (x >> r) | (x << ((32u - r) & 31u));
}

// CityHash's 32-bit building blocks, written from its published description.
constexpr unsigned CITY_C1 = 0xcc9e2d51u;
constexpr unsigned CITY_C2 = 0x1b873593u;

__host__ __device__ __forceinline__ unsigned city_mur(unsigned a, unsigned h) {
  a *= CITY_C1;
  a = rotr32(a, 17);
  a *= CITY_C2;
  h ^= a;
  h = rotr32(h, 19);
  return h * 5u + 0xe6546b64u;
}

// City's path for inputs of 0 to 4 bytes, on the key's four little-endian bytes (taken
// as signed chars, as the reference does), with the seed folded into the first state.
__host__ __device__ __forceinline__ unsigned city_32(unsigned k, unsigned seed) {
  unsigned b = seed;
  unsigned c = 9u;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const signed char v = static_cast<signed char>((k >> (8 * i)) & 0xffu);
    b = b * CITY_C1 + static_cast<unsigned>(static_cast<int>(v));
    c ^= b;
  }
  return hash::murmur3_32(city_mur(b, city_mur(4u, c)));
}

// CRC-32C table (reflected polynomial 0x82f63b78), built at compile time.
struct crc_table_t {
  unsigned v[256];
};

constexpr crc_table_t make_crc_table() {
  crc_table_t t{};
  for (unsigned i = 0; i < 256; ++i) {
    unsigned c = i;
    for (int j = 0; j < 8; ++j) c = (c & 1u) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    t.v[i] = c;
  }
  return t;
}

#if HIVE_HASH == 3
__constant__ crc_table_t CRC_TABLE = make_crc_table();

__device__ __forceinline__ unsigned crc32c(unsigned k) {
  unsigned c = 0xffffffffu;
#pragma unroll
  for (int i = 0; i < 4; ++i) c = CRC_TABLE.v[(c ^ (k >> (8 * i))) & 0xffu] ^ (c >> 8);
  return ~c;
}
#endif

struct hash_pair {
  unsigned h1;
  unsigned h2;
};

__device__ __forceinline__ hash_pair hashes(unsigned k) {
#if HIVE_HASH == 0
  return {hash::bit_mix1(k), hash::bit_mix2(k)};
#elif HIVE_HASH == 1
  return {hash::murmur3_32(k), hash::murmur3_32(k ^ SECOND_SEED)};
#elif HIVE_HASH == 2
  return {city_32(k, 0u), city_32(k, SECOND_SEED)};
#elif HIVE_HASH == 3
  return {crc32c(k), crc32c(k * CRC_MULTIPLIER)};
#else
#error "HIVE_HASH must be 0 (bit mixers), 1 (murmur), 2 (city) or 3 (crc32c)"
#endif
}

// A 64-bit key folded to 32 bits: the low word xor the murmur finalizer of the high
// word. The finalizer is a bijection, so keys that differ only in their high words fold
// apart; it maps 0 to 0, so a key below 2^32 gets the buckets of the same u32 key.
__host__ __device__ __forceinline__ unsigned fold64(unsigned long long k) {
  return static_cast<unsigned>(k) ^ hash::murmur3_32(static_cast<unsigned>(k >> 32));
}

__device__ __forceinline__ hash_pair hashes(unsigned long long k) { return hashes(fold64(k)); }

// 32 bits that vary with every bit of the key, for choices that must differ between keys
// (where an eviction starts looking for a victim): the key itself, or its fold (64-bit
// keys may share their low word).
__host__ __device__ __forceinline__ unsigned key_bits(unsigned k) { return k; }
__host__ __device__ __forceinline__ unsigned key_bits(unsigned long long k) { return fold64(k); }

}  // namespace hive
}  // namespace gpuds
