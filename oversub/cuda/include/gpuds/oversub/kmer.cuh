// gpuds/oversub/kmer.cuh: 2-bit encoding of 16-mers into u32 codes (Patel et al., §6),
// the device twin of `gpuds_oversub::kmer` (`encode`, `reverse_complement`, `canonical`,
// `table_key`): A=0, C=1, G=2, T=3 in either case, the first base in the two most
// significant bits; any other byte (N, IUPAC codes, gaps) ends every window holding it.
//
// The host's rolling encoder emits the window ending at each byte once 16 valid bytes
// in a row end there; here each window is encoded on its own from its 16 bytes, which
// gives the same codes at the same positions: a window is emitted iff its 16 bytes are
// all nucleotides, and its code depends on those bytes alone.
#pragma once

namespace gpuds {
namespace oversub {
namespace kmer {

constexpr unsigned K = 16;
constexpr unsigned INVALID = 4;

// The 2-bit code of a byte, INVALID for anything but ACGT / acgt.
__host__ __device__ __forceinline__ unsigned base_code(unsigned char b) {
  switch (b | 0x20) {  // lower case; only letters can match below
    case 'a':
      return 0;
    case 'c':
      return 1;
    case 'g':
      return 2;
    case 't':
      return 3;
    default:
      return INVALID;
  }
}

// The code of the reverse complement: complementing a base flips both its bits, and
// reversing the order of the 2-bit groups (pairs, nibbles, bytes, halves) reads the
// k-mer backwards while keeping each base's two bits in place.
__host__ __device__ __forceinline__ unsigned reverse_complement(unsigned code) {
  unsigned x = ~code;
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
  x = ((x >> 8) & 0x00FF00FFu) | ((x & 0x00FF00FFu) << 8);
  return (x >> 16) | (x << 16);
}

// The smaller of a code and its reverse complement.
__host__ __device__ __forceinline__ unsigned canonical(unsigned code) {
  const unsigned rc = reverse_complement(code);
  return rc < code ? rc : code;
}

// The code of the 16 bytes at `bases`, or false when one of them is not a nucleotide.
__host__ __device__ __forceinline__ bool encode(const unsigned char* bases, unsigned* code) {
  unsigned c = 0;
#pragma unroll
  for (unsigned i = 0; i < K; ++i) {
    const unsigned b = base_code(bases[i]);
    if (b == INVALID) return false;
    c = (c << 2) | b;
  }
  *code = c;
  return true;
}

// The host's `KmerKey`: a code is its own table key, except the two the tables reserve.
constexpr unsigned POLY_A = 0u;
constexpr unsigned POLY_T = 0xFFFFFFFFu;

}  // namespace kmer
}  // namespace oversub
}  // namespace gpuds
