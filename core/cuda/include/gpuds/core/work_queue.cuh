// gpuds/core/work_queue.cuh: the warp work queue with bounded retries.
//
// The slab hash paper's work-sharing strategy (Ashkiani et al. 2018, §IV-A, Fig. 2),
// written once for every warp-cooperative structure: each lane may hold one request;
// the warp votes, takes the lowest lane with a request, broadcasts that request to all
// lanes and serves it together, one visit after another (a visit reads one slab, bucket
// or node), until the request is done; then it takes the next lowest lane. Two caps keep
// every request, and so every kernel, finite:
//
// - `steps`: the most visits that move on (to the next slab of a list, the next bucket
//   of a probe sequence, the child of a node) one request may make;
// - `retries`: the most visits that look at the same place again (a CAS lost to another
//   warp) one request may make.
// A request that passes either cap ends there: `give_up(src)` is called (by all lanes)
// and the warp goes on with the next request. Nothing else ever loops.
//
// The loop is software-pipelined: when the warp takes up request `src` it first calls
// `prefetch(next)` for the request after it, so the first read of the next request is in
// flight while the warp waits for and works on this one (two reads in flight per warp). A
// structure whose first read depends on nothing but the request (a home bucket) gains
// most of a memory latency per request from it. What `prefetch` returns (`Ahead`) is kept
// across the visits; `open(ahead)` turns it into the cursor the visits move (keep `Ahead`
// small: it is live during every visit).
//
// The loop is unrolled by two, alternating two `Ahead` variables, and that is what makes
// the two reads overlap: with one variable the compiler rotates "next" into "current"
// with a register move at each request, and a move of a register whose load is still in
// flight waits for the load, so the next read would only be issued once the current one
// had arrived (one read in flight). Alternating, the next read goes into the variable the
// previous request has finished with, and nothing waits for a read before the one after
// it is issued. The cost is code: the visit is inlined twice (`run<1>` keeps one copy).
//
// The callbacks, all called by all 32 lanes with warp-uniform arguments:
//   Ahead  prefetch(int src)                   start src's request (issue its first read)
//   Cursor open(const Ahead&)                  the cursor of a request taken up
//   step   visit(int src, const Request& r, Cursor& c, unsigned depth)
//          look at what `c` holds for request `r` (the request of lane src, broadcast);
//          `depth` is 1 at the first place visited and grows with each MOVED. Returns
//          DONE (src's request is finished), MOVED (the cursor now names another place)
//          or AGAIN (the same place must be looked at again).
//   void   reload(Cursor& c)                   read the place `c` names (after MOVED or
//          AGAIN, once the caps allow another visit)
//   void   give_up(int src)                    src's request passed a cap
// Requests are any trivially copyable type of a multiple of 4 bytes (a 32- or 64-bit
// key, a key and a value, ...): each lane passes its own and the visit sees src's.
//
//   work_queue::run(active, key, work_queue::caps{max_steps, max_retries},
//       [&](int src) { return home_of(src); },      // Ahead
//       [&](const home& h) { return cursor(h); },   // Cursor
//       [&](int src, const K& k, cursor& c, unsigned depth) { ... return work_queue::DONE; },
//       [&](cursor& c) { c.read(); },
//       [&](int src) { report(RETRY_LIMIT); if (lane == src) failed = true; });
#pragma once
#include <gpuds/core/warp.cuh>

namespace gpuds {
namespace work_queue {

// What one visit decided.
enum step : unsigned {
  DONE = 0,   // the request is finished
  MOVED = 1,  // the cursor moved on: one step
  AGAIN = 2,  // the same place again: one retry
};

// The caps of one request: visits that move on, and visits of the same place again.
struct caps {
  unsigned steps;
  unsigned retries;
};

// Serves one request: src's, whose first read `ahead` holds (see the top of this file).
template <class Request, class Ahead, class Open, class Visit, class Reload, class GiveUp>
__device__ __forceinline__ void serve(int src, const Request& request, const Ahead& ahead,
                                      caps limits, Open& open, Visit& visit, Reload& reload,
                                      GiveUp& give_up) {
  auto cursor = open(ahead);
  const Request r = warp::broadcast(request, src);
  for (unsigned depth = 1, retries = 0;;) {
    const step s = visit(src, r, cursor, depth);
    if (s == DONE) return;
    if (s == MOVED) {
      ++depth;
    } else {
      ++retries;
    }
    if (depth > limits.steps || retries > limits.retries) {
      give_up(src);
      return;
    }
    reload(cursor);
  }
}

// The lowest lane of `pending` after dropping its lowest bit (which it updates), or -1.
__device__ __forceinline__ int take_next(unsigned& pending) {
  pending &= pending - 1u;
  return pending != 0u ? __ffs(pending) - 1 : -1;
}

// Serves the requests of the lanes with `active` one at a time, lowest lane first (see
// the top of this file). Every lane of the warp must call it, converged. `Unroll` 2 (the
// default) overlaps the next request's first read with the current request; 1 keeps one
// copy of the visit (less code, one read in flight), for callers whose visit is large.
template <unsigned Unroll = 2, class Request, class Prefetch, class Open, class Visit,
          class Reload, class GiveUp>
__device__ __forceinline__ void run(bool active, const Request& request, caps limits,
                                    Prefetch&& prefetch, Open&& open, Visit&& visit,
                                    Reload&& reload, GiveUp&& give_up) {
  static_assert(Unroll == 1 || Unroll == 2, "the work queue is unrolled by one or two");
  unsigned pending = __ballot_sync(warp::FULL_MASK, active);
  if (pending == 0u) return;
  int src = __ffs(pending) - 1;
  auto even = prefetch(src);
  if constexpr (Unroll == 1) {
    for (;;) {
      const int next = take_next(pending);
      const auto current = even;
      if (next >= 0) even = prefetch(next);
      serve(src, request, current, limits, open, visit, reload, give_up);
      if (next < 0) return;
      src = next;
    }
  } else {
    decltype(even) odd;
    for (;;) {
      // `even` holds src's first read; the next request's goes into `odd`.
      int next = take_next(pending);
      if (next >= 0) odd = prefetch(next);
      serve(src, request, even, limits, open, visit, reload, give_up);
      if (next < 0) return;
      src = next;
      // And the other way round.
      next = take_next(pending);
      if (next >= 0) even = prefetch(next);
      serve(src, request, odd, limits, open, visit, reload, give_up);
      if (next < 0) return;
      src = next;
    }
  }
}

}  // namespace work_queue
}  // namespace gpuds
