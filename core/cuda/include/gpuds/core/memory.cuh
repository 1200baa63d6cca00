// gpuds/core/memory.cuh: memory-ordering primitives at GPU (.gpu) scope.
//
// Concurrent structures publish data with release stores and read it with acquire loads;
// plain (weak) accesses are only for data no other thread can be writing, or (ld_weak,
// ld_weak_v2_line) for words that only move one way for the whole kernel, whose every
// decision an atomic confirms. Everything is
// inline PTX (sm_70+ memory model), so no toolkit headers and no `volatile` tricks.
// Every helper addresses global memory (`.global` state space): pass only pointers into
// device allocations, never into shared or local memory.
#pragma once

namespace gpuds {
namespace mem {

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned long long ld_acquire(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned ld_relaxed(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned long long ld_relaxed(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
// Two relaxed 8-byte loads as one 16-byte access (`p` 16-byte aligned): each half is a
// relaxed load of its own word, so a lane reads a line in a few instructions.
__device__ __forceinline__ ulonglong2 ld_relaxed_v2(const unsigned long long* p) {
  ulonglong2 v;
  asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p) : "memory");
  return v;
}
// As ld_relaxed_v2, asking L2 to fetch the whole 128-byte line holding `p` on a miss (the
// `.L2::128B` prefetch size), for a lane that goes on to read or write more of that line
// (a slab's keys, then its value and busy word). The prefetch size needs sm_75; before it
// this is ld_relaxed_v2.
__device__ __forceinline__ ulonglong2 ld_relaxed_v2_line(const unsigned long long* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 750
  return ld_relaxed_v2(p);
#else
  ulonglong2 v;
  asm volatile("ld.relaxed.gpu.global.L2::128B.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p) : "memory");
  return v;
#endif
}
// Plain (weak) loads, cached in L1: only for reads whose every decision is confirmed by
// an atomic or holds in every state the word has had since the kernel began (words that
// only move one way while it runs).
__device__ __forceinline__ unsigned ld_weak(const unsigned* p) {
  unsigned v;
  asm("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ unsigned long long ld_weak(const unsigned long long* p) {
  unsigned long long v;
  asm("ld.global.u64 %0, [%1];" : "=l"(v) : "l"(p));
  return v;
}
// A plain (weak) 16-byte load (`p` 16-byte aligned), cached in L1, asking L2 for the
// whole 128-byte line holding `p` on a miss (`.L2::128B`, from sm_75): only for reads
// whose every decision is confirmed by an atomic or holds in every state the words have
// had since the kernel began (words that only move one way while it runs, as a slab's
// keys to tombstones in a batch of deletions). Relaxed loads bypass L1, so four of them
// on one half line ask L2 four times; four of these ask it for the half line's sectors
// once, and a later read of the line's other half waits on L2 rather than memory.
__device__ __forceinline__ ulonglong2 ld_weak_v2_line(const unsigned long long* p) {
  ulonglong2 v;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 750
  asm("ld.global.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p));
#else
  asm("ld.global.L2::128B.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p));
#endif
  return v;
}
__device__ __forceinline__ void st_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void st_release(unsigned long long* p, unsigned long long v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void st_relaxed(unsigned* p, unsigned v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void st_relaxed(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// Compare-and-swap; returns the value found. `acq_rel` orders both ways, `acquire` suits
// taking a latch, `relaxed` suits claiming a slot whose contents are published later.
__device__ __forceinline__ unsigned cas_acq_rel(unsigned* p, unsigned expected, unsigned desired) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.cas.b32 %0, [%1], %2, %3;"
               : "=r"(old) : "l"(p), "r"(expected), "r"(desired) : "memory");
  return old;
}
__device__ __forceinline__ unsigned long long cas_acq_rel(unsigned long long* p,
                                                          unsigned long long expected,
                                                          unsigned long long desired) {
  unsigned long long old;
  asm volatile("atom.acq_rel.gpu.global.cas.b64 %0, [%1], %2, %3;"
               : "=l"(old) : "l"(p), "l"(expected), "l"(desired) : "memory");
  return old;
}
__device__ __forceinline__ unsigned cas_acquire(unsigned* p, unsigned expected, unsigned desired) {
  unsigned old;
  asm volatile("atom.acquire.gpu.global.cas.b32 %0, [%1], %2, %3;"
               : "=r"(old) : "l"(p), "r"(expected), "r"(desired) : "memory");
  return old;
}
__device__ __forceinline__ unsigned long long cas_acquire(unsigned long long* p,
                                                          unsigned long long expected,
                                                          unsigned long long desired) {
  unsigned long long old;
  asm volatile("atom.acquire.gpu.global.cas.b64 %0, [%1], %2, %3;"
               : "=l"(old) : "l"(p), "l"(expected), "l"(desired) : "memory");
  return old;
}
// A release alone: publishes the thread's earlier writes with the swap, and (unlike
// acq_rel) does not invalidate L1 after it, for a swap after which the thread reads
// nothing the swap must order (a key word put into a slot after its value).
__device__ __forceinline__ unsigned long long cas_release(unsigned long long* p,
                                                          unsigned long long expected,
                                                          unsigned long long desired) {
  unsigned long long old;
  asm volatile("atom.release.gpu.global.cas.b64 %0, [%1], %2, %3;"
               : "=l"(old) : "l"(p), "l"(expected), "l"(desired) : "memory");
  return old;
}
__device__ __forceinline__ unsigned cas_relaxed(unsigned* p, unsigned expected, unsigned desired) {
  unsigned old;
  asm volatile("atom.relaxed.gpu.global.cas.b32 %0, [%1], %2, %3;"
               : "=r"(old) : "l"(p), "r"(expected), "r"(desired) : "memory");
  return old;
}
__device__ __forceinline__ unsigned long long cas_relaxed(unsigned long long* p,
                                                          unsigned long long expected,
                                                          unsigned long long desired) {
  unsigned long long old;
  asm volatile("atom.relaxed.gpu.global.cas.b64 %0, [%1], %2, %3;"
               : "=l"(old) : "l"(p), "l"(expected), "l"(desired) : "memory");
  return old;
}

// Relaxed exchange: returns what was there.
__device__ __forceinline__ unsigned exch_relaxed(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.relaxed.gpu.global.exch.b32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
__device__ __forceinline__ unsigned long long exch_relaxed(unsigned long long* p, unsigned long long v) {
  unsigned long long old;
  asm volatile("atom.relaxed.gpu.global.exch.b64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}

// Exchange with acquire semantics: the thread's later memory operations wait for it, so
// the word it wrote is performed before them. Returns what was there.
__device__ __forceinline__ unsigned exch_acquire(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.acquire.gpu.global.exch.b32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
__device__ __forceinline__ unsigned long long exch_acquire(unsigned long long* p, unsigned long long v) {
  unsigned long long old;
  asm volatile("atom.acquire.gpu.global.exch.b64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}

// Exchange with release semantics: drops a latch and returns what was there.
__device__ __forceinline__ unsigned exch_release(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.release.gpu.global.exch.b32 %0, [%1], %2;"
               : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

__device__ __forceinline__ unsigned fetch_or_relaxed(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.relaxed.gpu.global.or.b32 %0, [%1], %2;"
               : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
__device__ __forceinline__ unsigned fetch_and_relaxed(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.relaxed.gpu.global.and.b32 %0, [%1], %2;"
               : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
__device__ __forceinline__ unsigned fetch_add_relaxed(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.relaxed.gpu.global.add.u32 %0, [%1], %2;"
               : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
__device__ __forceinline__ unsigned long long fetch_add_relaxed(unsigned long long* p,
                                                                unsigned long long v) {
  unsigned long long old;
  asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], %2;"
               : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}

// Fences at GPU scope.
__device__ __forceinline__ void fence_acq_rel() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
__device__ __forceinline__ void fence_sc() { asm volatile("fence.sc.gpu;" ::: "memory"); }

// Read-only, non-coherent load through the texture path: only for data no kernel in
// flight writes (phased queries over a structure that is not being modified).
__device__ __forceinline__ unsigned ld_nc(const unsigned* p) {
  unsigned v;
  asm("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ unsigned long long ld_nc(const unsigned long long* p) {
  unsigned long long v;
  asm("ld.global.nc.u64 %0, [%1];" : "=l"(v) : "l"(p));
  return v;
}

// A 16-byte read-only, non-coherent load (`p` 16-byte aligned; same rule as ld_nc).
__device__ __forceinline__ ulonglong2 ld_nc_v2(const unsigned long long* p) {
  ulonglong2 v;
  asm("ld.global.nc.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p));
  return v;
}

// As ld_nc_v2, asking L2 to fetch the whole 128-byte line holding `p` on a miss (the
// `.L2::128B` prefetch size; same rule as ld_nc): a later read of the line by the same
// lane finds it in L2 instead of waiting on memory again. The prefetch size needs sm_75;
// before it this is ld_nc_v2.
__device__ __forceinline__ ulonglong2 ld_nc_v2_line(const unsigned long long* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 750
  return ld_nc_v2(p);
#else
  ulonglong2 v;
  asm("ld.global.nc.L2::128B.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p));
  return v;
#endif
}

// Asks L2 for the line holding `p` (no value returned; `p` must be a valid global
// address, as every caller's is): for data a warp will read later, so that the read
// finds it in L2.
__device__ __forceinline__ void prefetch_l2(const void* p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

}  // namespace mem
}  // namespace gpuds
