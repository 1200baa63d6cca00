// gpuds/core/work_queue.cuh: the warp work queue with bounded retries.
//
// The slab hash paper's work-sharing strategy (Ashkiani et al. 2018, §IV-A, Fig. 2),
// written once for every warp-cooperative structure: each lane may hold one request;
// the warp votes, takes the lowest lane with a request, broadcasts that request to all
// lanes and serves it together, one visit after another (a visit reads one slab, bucket
// or node), until the request is done; then it takes the next lowest lane. Two caps keep
// every request, and so every kernel, finite:
//
// - steps: the most visits that move on (to the next slab of a list, the next bucket of
//   a probe sequence, the child of a node) one request may make;
// - retries: the most visits that look at the same place again (a CAS lost to another
//   warp) one request may make.
// A request that passes either cap ends there (the caller reports RETRY_LIMIT and marks
// it failed) and the warp goes on with the next request. Nothing else ever loops.
//
// The pieces are plain values the caller's loop holds in registers: `queue` (the vote,
// the request taken up, the one after it) and `budget` (the caps of the request being
// served). A structure writes its loop with them, so that it can issue the next
// request's first read before it waits for the current one (software pipelining: two
// reads in flight per warp) and keep exactly the registers it needs across a visit:
//
//   work_queue::queue q(active);                 // all 32 lanes, converged
//   if (q.empty()) return;
//   int src = q.front();
//   place p = first_read(src);                   // the first request's first read
//   for (;;) {
//     const int next = q.pop();                  // the request after src, or -1
//     place ahead = next >= 0 ? first_read(next) : place{};   // in flight meanwhile
//     const K k = warp::broadcast(key, src);
//     for (work_queue::budget b{max_steps, max_retries};;) {
//       const visit v = look(k, p);              // DONE, MOVED (p moved) or AGAIN
//       if (v == work_queue::DONE) break;
//       if (!b.spend(v)) { give_up(src); break; }
//       reread(p);
//     }
//     if (next < 0) return;
//     src = next; p = ahead;
//   }
//
// Measured on an H200: the same loop as a higher-order function taking the first read,
// the visit and the re-read as lambdas (the cursor a struct passed by reference) made
// the slab hash's u32 inserts, searches and deletes 12-14 % slower than this form, with
// nearly the same instructions; the loop stays in the caller.
#pragma once
#include <gpuds/core/warp.cuh>

namespace gpuds {
namespace work_queue {

// What one visit decided.
enum visit : unsigned {
  DONE = 0,   // the request is finished
  MOVED = 1,  // the visit moved on: one step
  AGAIN = 2,  // the same place again: one retry
};

// The requests of a warp not yet served: one bit per lane, served lowest lane first.
// Warp-uniform; every lane holds the same value.
struct queue {
  unsigned pending;

  // The vote: the lanes with `active`. Every lane of the warp must call it, converged.
  __device__ __forceinline__ explicit queue(bool active)
      : pending(__ballot_sync(warp::FULL_MASK, active)) {}

  __device__ __forceinline__ bool empty() const { return pending == 0u; }

  // The lane whose request is served now (the queue must not be empty).
  __device__ __forceinline__ int front() const { return __ffs(pending) - 1; }

  // Drops the request served now and returns the lane of the one after it, or -1.
  __device__ __forceinline__ int pop() {
    pending &= pending - 1u;
    return pending != 0u ? __ffs(pending) - 1 : -1;
  }
};

// The caps of the request being served, and what it has used of them.
struct budget {
  unsigned steps;     // most visits that move on
  unsigned retries;   // most visits of the same place again
  unsigned depth = 1;  // the place visited now: 1 is the first
  unsigned rereads = 0;

  __device__ __forceinline__ budget(unsigned max_steps, unsigned max_retries)
      : steps(max_steps), retries(max_retries) {}

  // Accounts for a visit that did not finish the request (MOVED or AGAIN); false when
  // that passes a cap: the request must end there, failed.
  __device__ __forceinline__ bool spend(visit v) {
    if (v == MOVED) {
      ++depth;
    } else {
      ++rereads;
    }
    return depth <= steps && rereads <= retries;
  }
};

}  // namespace work_queue
}  // namespace gpuds
