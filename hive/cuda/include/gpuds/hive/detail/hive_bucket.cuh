// gpuds/hive/detail/hive_bucket.cuh: one bucket of HiveMap and the warp-cooperative
// protocols on it (Hive paper, §III-A, §III-E, §III-F).
//
// A bucket is HIVE_SLOTS slots (detail/hive_slot.cuh), read by a tile of HIVE_SLOTS
// lanes, one slot per lane: packed (u32 pairs), HIVE_SLOTS 64-bit words, so 16 slots are
// one 128-byte line and 32 slots two; wide (u64 keys): u64 values in buckets of 16, two
// parts of 8 slots, one line each, its 8 key words followed by their 8 values;
// otherwise one part, its key words followed by their value words (u32 values: 16 key
// words, one line, then 16 values, half a line); bucket_words in all (wide_slot::at says
// where a slot's words are).
// Beside the slots each bucket has one 64-bit metadata word:
//
//   bits 0..31   free mask (bit s set = slot s free); in two-part buckets (u64 values,
//                16 slots) bits 16 and 17 are the parts' OUT flags (META_OUT, below)
//   bit 32       LOCK: held by an insert that cannot finish in its first bucket, and by
//                evictions (both buckets of every key they move)
//   bit 33       SPILL: some key whose first bucket this is was placed in its second one
//   bit 34       STASHED: some key whose first bucket this is was parked in the stash
//   bits 35..63  version, advanced by every change except a WABC claim (which changes
//                the mask anyway) and a flag's atomic or (which only ever sets a bit, so
//                the word cannot come back to a value read before it), so that a word
//                read earlier can be compared whole
//
// Invariants: a slot's word is written only by the owner of its free bit just after
// claiming it, or by a compare-and-swap from a word that was read there (replace,
// eviction, delete; for wide slots a swap of the key word, see hive_slot.cuh). A free bit is set again only after the slot was emptied. A key that
// lives outside its first bucket has SPILL (second bucket) or STASHED (stash) set in its
// first bucket, set before the key was placed there; the flags are only cleared when the
// host rebuilds them (the stash drain clears STASHED).
//
// A slot whose free bit is clear but whose word is still empty is "pending": a claim
// whose word is not stored yet, or a delete whose bit is not set yet; so is a wide slot
// whose key word is BUSY_KEY (a writer between its two steps). Inserts that must know
// every key of a bucket wait for pending slots to settle.
#pragma once
#include <gpuds/core/memory.cuh>
#include <gpuds/core/warp.cuh>
#include <gpuds/hive/detail/hive_slot.cuh>

#ifndef HIVE_SLOTS
#define HIVE_SLOTS 16
#endif
#ifndef HIVE_HASH
#define HIVE_HASH 0
#endif

namespace gpuds {
namespace hive {

constexpr unsigned SLOTS = HIVE_SLOTS;
static_assert(SLOTS == 8 || SLOTS == 16 || SLOTS == 32, "HIVE_SLOTS must be 8, 16 or 32");
using tile = warp::tile<SLOTS>;

// The packed slot's empty word and reserved key (the per-lane insert kernels, which
// serve packed tables only, use them directly).
constexpr unsigned long long EMPTY = packed_slot::EMPTY_WORD;
constexpr unsigned EMPTY_KEY = packed_slot::EMPTY_KEY;
constexpr unsigned ALL_FREE = SLOTS == 32 ? 0xffffffffu : ((1u << SLOTS) - 1u);

constexpr unsigned long long META_LOCK = 1ull << 32;
constexpr unsigned long long META_SPILL = 1ull << 33;
constexpr unsigned long long META_STASHED = 1ull << 34;
constexpr unsigned long long META_VERSION = 1ull << 35;
// Two-part buckets only: OUT of part p is bit 16 + p (out_flag, below).
constexpr unsigned long long META_OUT = 1ull << 16;

__host__ __device__ __forceinline__ unsigned long long pack(unsigned k, unsigned v) { return packed_slot::pack(k, v); }
__host__ __device__ __forceinline__ unsigned key_of(unsigned long long w) { return packed_slot::key_of(w); }
__host__ __device__ __forceinline__ unsigned value_of(unsigned long long w) { return packed_slot::value_of(w); }
__host__ __device__ __forceinline__ unsigned free_of(unsigned long long meta) {
  return static_cast<unsigned>(meta) & ALL_FREE;
}

// The 64-bit words of one bucket: SLOTS packed words, or SLOTS key words and SLOTS value
// words of sizeof(V) bytes (a multiple of 8 bytes in all, since SLOTS is even, so every
// bucket's key words stay 8-byte aligned).
template <typename S>
__host__ __device__ constexpr unsigned bucket_words() {
  return S::WIDE ? SLOTS + SLOTS * static_cast<unsigned>(sizeof(typename S::value_type)) / 8u : SLOTS;
}

// Slot `slot` of the bucket that starts at `bucket`.
template <typename S>
__device__ __forceinline__ typename S::ptr slot_at(unsigned long long* bucket, unsigned slot) {
  return S::at(bucket, slot, SLOTS);
}

// A match in a bucket or the stash: the slot's address and the word seen there.
template <typename S>
struct slot_match {
  typename S::ptr at;
  typename S::word word;
  unsigned slot;
};

// The elected match of a ballot over the tile's words `w` (false when `hits` is 0).
template <typename S>
__device__ __forceinline__ bool elect(unsigned long long* base, typename S::word w, unsigned hits, slot_match<S>& m) {
  if (hits == 0) return false;
  const unsigned slot = __ffs(hits) - 1;
  m.slot = slot;
  m.at = slot_at<S>(base, slot);
  m.word = S::template shfl<tile>(w, slot);
  return true;
}

// Each lane's word of a bucket; COHERENT loads go to L2 (other SMs may be writing),
// otherwise plain loads suffice (no writer in flight). A wide slot's coherent load is
// its key word alone (hive_slot.cuh).
template <typename S, bool COHERENT>
__device__ __forceinline__ typename S::word lane_word(unsigned long long* bucket) {
  return S::template load<COHERENT>(slot_at<S>(bucket, tile::rank()));
}

// WCME (§III-F): every lane loads its own slot (one coalesced access), the lanes whose
// key matches form a ballot, and the first of them is elected. Returns whether k is in
// the bucket; `m` gets the elected slot. `busy` (when not null) is set where some slot
// of the bucket was BUSY_KEY (wide slots: a key in the middle of a change, maybe k).
template <typename S, bool COHERENT>
__device__ __forceinline__ bool wcme(unsigned long long* bucket, typename S::key_type k, slot_match<S>& m,
                                     bool* busy = nullptr) {
  const typename S::word w = lane_word<S, COHERENT>(bucket);
  if (S::WIDE && busy != nullptr && tile::any(S::is_busy(w))) *busy = true;
  return elect<S>(bucket, w, tile::ballot(S::key_of(w) == k), m);
}

// One lane reading a whole bucket alone (the thread-per-operation fast paths of the
// batch kernels): SLOTS / 2 loads of 16 bytes, issued together, so that every lane of a
// warp has its own bucket in flight. COHERENT loads are relaxed at GPU scope (writers
// may run; each 8-byte half is a relaxed load of its slot word), otherwise plain loads.
// LINE: the load asks L2 for the whole 128-byte line that holds `p` on a miss
// (`.L2::128B`); in a two-part bucket that line is the part, so its value sectors come
// into L2 with its keys (hive_slot.cuh; the plain form then an explicit weak load).
template <bool COHERENT, bool LINE = false>
__device__ __forceinline__ ulonglong2 load_slot_pair(const unsigned long long* p) {
  if (LINE) return COHERENT ? mem::ld_relaxed_v2_line(p) : mem::ld_weak_v2_line(p);
  if (COHERENT) return mem::ld_relaxed_v2(p);
  return *reinterpret_cast<const ulonglong2*>(p);
}

// One lane loads a whole packed bucket's words into w (load_slot_pair, all issued
// together).
template <bool COHERENT>
__device__ __forceinline__ void load_bucket(const unsigned long long* bucket, unsigned long long (&w)[SLOTS]) {
#pragma unroll
  for (unsigned i = 0; i < SLOTS; i += 2) {
    const ulonglong2 p = load_slot_pair<COHERENT>(bucket + i);
    w[i] = p.x;
    w[i + 1] = p.y;
  }
}

// The key word of slot `slot` of a wide bucket (slots in pairs, 2i and 2i + 1, are side
// by side: a part holds an even number of slots) and its value word, read-only.
template <typename S>
__device__ __forceinline__ const unsigned long long* key_at(const unsigned long long* bucket, unsigned slot) {
  return S::at(const_cast<unsigned long long*>(bucket), slot, SLOTS).key;
}
template <typename S>
__device__ __forceinline__ const typename S::value_type* key_value_at(const unsigned long long* bucket, unsigned slot) {
  return S::at(const_cast<unsigned long long*>(bucket), slot, SLOTS).value;
}

// The parts of a bucket of slot policy S (hive_slot.cuh): 1 for packed slots and wide
// buckets of one part.
template <typename S>
__host__ __device__ __forceinline__ constexpr unsigned parts() {
  return SLOTS / S::part_slots(SLOTS);
}

// The part of a wide bucket (hive_slot.cuh) that k fills first and a lookup of k reads
// first: a bit of a multiplicative hash of k's two words, so that keys of one bucket
// prefer its parts about evenly (0 for packed slots and wide buckets of one part). Every
// fill of k takes the empty slots of a bucket in the order of rotated_first: from its
// part on, wrapping around.
template <typename S>
__device__ __forceinline__ unsigned preferred_part(typename S::key_type k) {
  if constexpr (parts<S>() == 1) {
    (void)k;
    return 0u;
  } else {
    const unsigned x = (static_cast<unsigned>(k >> 32) ^ static_cast<unsigned>(k)) * 0x9E3779B1u;
    return __umulhi(x, parts<S>());
  }
}

// The first slot of `mask` (not 0) in the order that starts at part `part`.
template <typename S>
__device__ __forceinline__ unsigned rotated_first(unsigned mask, unsigned part) {
  if constexpr (parts<S>() == 1) {
    (void)part;
    return __ffs(mask) - 1;
  } else {
    const unsigned shift = part * S::part_slots(SLOTS);
    const unsigned full = SLOTS == 32 ? ~0u : (1u << SLOTS) - 1u;
    const unsigned rot = ((mask >> shift) | (mask << ((SLOTS - shift) % 32u))) & full;
    return (__ffs(shift == 0 ? mask : rot) - 1 + shift) % SLOTS;
  }
}

// One lane loads a bucket's key words into w: a packed bucket's words (load_bucket), or
// a wide bucket's SLOTS key words, part by part, two a load, all issued together.
template <typename S, bool COHERENT>
__device__ __forceinline__ void load_keys(const unsigned long long* bucket, unsigned long long (&w)[SLOTS]) {
  if constexpr (S::WIDE) {
#pragma unroll
    for (unsigned i = 0; i < SLOTS; i += 2) {
      const ulonglong2 p = load_slot_pair<COHERENT>(key_at<S>(bucket, i));
      w[i] = p.x;
      w[i + 1] = p.y;
    }
  } else {
    load_bucket<COHERENT>(bucket, w);
  }
}

// What one lane saw in a bucket: the slot holding its key (SLOTS if none) and the word
// there, the slots that held the empty word, and (wide slots) those that were BUSY_KEY.
template <typename S>
struct alone_scan {
  unsigned hit;
  typename S::word word;
  unsigned empty;
  unsigned busy;
};

// Reads a bucket alone and looks for k, 16 slots at a time (16 packed slots, one line, or
// the key words of 16 wide slots, through key_at: one line of keys, or in two-part
// buckets the key halves of two lines). STOP: return
// after the first 128 bytes that hold k (a hit in the first line of a bucket costs that
// line alone); otherwise the whole bucket is read
// (inserts need its empty slots). The loads of a line are issued together, 16 bytes
// each. Wide slots: the key words alone are read, and `word` of a hit holds k and no
// value (the inserts that scan this way replace through S::replace, which reads the
// value it replaces under the slot's ownership; lookups use scan_lookup_wide).
template <typename S, bool COHERENT, bool STOP>
__device__ __forceinline__ alone_scan<S> scan_alone(const unsigned long long* bucket, typename S::key_type k) {
  alone_scan<S> s{SLOTS, S::EMPTY_WORD, 0u, 0u};
  if constexpr (S::WIDE) {
    constexpr unsigned LINE = SLOTS < 16 ? SLOTS : 16;
    constexpr unsigned LINES = SLOTS / LINE;
#pragma unroll
    for (unsigned line = 0; line < LINES; ++line) {
      ulonglong2 v[LINE / 2];
#pragma unroll
      for (unsigned i = 0; i < LINE / 2; ++i) v[i] = load_slot_pair<COHERENT>(key_at<S>(bucket, line * LINE + 2 * i));
#pragma unroll
      for (unsigned i = 0; i < LINE / 2; ++i) {
        const unsigned slot = line * LINE + 2 * i;
        if (v[i].x == S::EMPTY_KEY) s.empty |= 1u << slot;
        if (v[i].y == S::EMPTY_KEY) s.empty |= 1u << (slot + 1);
        if (v[i].x == S::BUSY_KEY) s.busy |= 1u << slot;
        if (v[i].y == S::BUSY_KEY) s.busy |= 1u << (slot + 1);
        if (v[i].x == k) s.hit = slot;
        if (v[i].y == k) s.hit = slot + 1;
      }
      if (STOP && s.hit != SLOTS) break;
    }
    if (s.hit != SLOTS) s.word.key = k;
  } else {
    constexpr unsigned LINE = SLOTS < 16 ? SLOTS : 16;
    constexpr unsigned LINES = SLOTS / LINE;
    constexpr unsigned PER = LINE;
#pragma unroll
    for (unsigned line = 0; line < LINES; ++line) {
      ulonglong2 v[PER / 2];
#pragma unroll
      for (unsigned i = 0; i < PER / 2; ++i) v[i] = load_slot_pair<COHERENT>(bucket + line * PER + 2 * i);
#pragma unroll
      for (unsigned i = 0; i < PER / 2; ++i) {
        const unsigned slot = line * PER + 2 * i;
        if (v[i].x == EMPTY) s.empty |= 1u << slot;
        if (v[i].y == EMPTY) s.empty |= 1u << (slot + 1);
        if (v[i].x != EMPTY && key_of(v[i].x) == k) {
          s.hit = slot;
          s.word = v[i].x;
        }
        if (v[i].y != EMPTY && key_of(v[i].y) == k) {
          s.hit = slot + 1;
          s.word = v[i].y;
        }
      }
      if (STOP && s.hit != SLOTS) break;
    }
  }
  return s;
}

// A lookup's scan of a wide bucket of one part by one lane alone, with no writer in
// flight. The lane reads the bucket's key words, 8 at a time (64 bytes, two sectors:
// four 16-byte loads through L1, issued together; 16 registers), stops at the group that
// holds k, and then loads the value word of k's slot alone (one sector of the values
// that follow the key words). Keys fill the lowest free slots, so most hits are in the
// first group. Where the first group does not hold k, `*meta` (when not null; into `m`,
// `have_m` set) is loaded with the second, so a miss in a bucket of 16 slots costs two
// dependent round trips (first group; second group and word), not three. Only `hit` and
// `word` of the result are set. (Buckets of two parts: scan_lookup_parts.)
template <typename S>
__device__ __forceinline__ alone_scan<S> scan_lookup_wide(const unsigned long long* bucket, typename S::key_type k,
                                                          const unsigned long long* meta, unsigned long long& m,
                                                          bool& have_m) {
  static_assert(S::WIDE && parts<S>() == 1, "wide buckets of one part");
  constexpr unsigned GROUP = SLOTS < 8 ? SLOTS : 8;
  alone_scan<S> s{SLOTS, S::EMPTY_WORD, 0u, 0u};
#pragma unroll
  for (unsigned group = 0; group < SLOTS / GROUP; ++group) {
    if (group == 1 && meta != nullptr) {
      m = *meta;
      have_m = true;
    }
    typename S::key_type key[GROUP];
#pragma unroll
    for (unsigned i = 0; i < GROUP; i += 2) {
      // A group's key words are side by side, slots i and i + 1 16-byte aligned (as load_keys reads them).
      const ulonglong2 p = load_slot_pair<false>(key_at<S>(bucket, group * GROUP + i));
      key[i] = p.x;
      key[i + 1] = p.y;
    }
#pragma unroll
    for (unsigned i = GROUP; i-- > 0;) {
      if (key[i] == k) s.hit = group * GROUP + i;
    }
    if (s.hit != SLOTS) break;
  }
  if (s.hit != SLOTS) {
    s.word = typename S::word{k, static_cast<unsigned long long>(*key_value_at<S>(bucket, s.hit))};
  }
  return s;
}

// A lookup's scan of a bucket of two parts (hive_slot.cuh) by one lane alone, with no
// writer in flight: the lane reads the key words of k's preferred part (four 16-byte
// loads issued together, two sectors, asking L2 for the part's whole line), and on a hit
// the key's value with one 8-byte load from the part's value sectors, which the keys'
// loads brought into L2. (With the part in sectors of key/value pairs, keys and values
// side by side, the lookup read all four sectors for the keys and took the value from
// L1: 0.91x of this on present keys and 0.90x on absent ones, H200, docs/hive.md.) On a miss it loads the bucket's word
// into `m` and reads the other part only where the word's OUT flag of the preferred
// part is set (some key preferring it was placed in the other part; hive_bucket.cuh,
// META_OUT): a miss costs the part's keys and the word in two round trips, and a third
// with the other part's keys where the flag is set. `m` is loaded on every miss. Only
// `hit` and `word` of the result are set.
template <typename S>
__device__ __forceinline__ alone_scan<S> scan_lookup_parts(const unsigned long long* bucket, typename S::key_type k,
                                                           const unsigned long long* meta, unsigned long long& m) {
  static_assert(S::WIDE && parts<S>() == 2 && sizeof(typename S::value_type) == 8, "two parts");
  constexpr unsigned PS = SLOTS / 2;
  alone_scan<S> s{SLOTS, S::EMPTY_WORD, 0u, 0u};
  const unsigned pref = preferred_part<S>(k);
  unsigned long long value = 0;
#pragma unroll
  for (unsigned round = 0; round < 2; ++round) {
    const unsigned part = pref ^ round;
    if (round == 1) {
      m = *meta;
      if ((m & (META_OUT << pref)) == 0) break;
    }
    ulonglong2 keys[PS / 2];
#pragma unroll
    for (unsigned j = 0; j < PS / 2; ++j) keys[j] = load_slot_pair<false, true>(key_at<S>(bucket, part * PS + 2 * j));
#pragma unroll
    for (unsigned j = PS / 2; j-- > 0;) {
      if (keys[j].y == k) s.hit = part * PS + 2 * j + 1;
      if (keys[j].x == k) s.hit = part * PS + 2 * j;
    }
    if (s.hit != SLOTS) {
      value = static_cast<unsigned long long>(*key_value_at<S>(bucket, s.hit));
      break;
    }
  }
  if (s.hit != SLOTS) s.word = typename S::word{k, value};
  return s;
}

// A two-part bucket's key words in k's order (each part's asking L2 for its whole line,
// load_slot_pair's LINE, so that a fill's value store finds its sector there), FROM = 0: its preferred
// part's 8 into w[0..7], FROM = 8: the other part's into w[8..15]. w[i] is the key word
// of slot i ^ flip (flip: 8 times k's preferred part), so the bits of a mask over w are
// k's order of the bucket's slots (the fill kernel's, rotated_first's).
template <typename S, bool COHERENT, unsigned FROM>
__device__ __forceinline__ void load_part_keys(const unsigned long long* bucket, unsigned long long (&w)[SLOTS],
                                               unsigned flip) {
  static_assert(parts<S>() == 2, "two parts");
#pragma unroll
  for (unsigned i = FROM; i < FROM + SLOTS / 2; i += 2) {
    const ulonglong2 p = load_slot_pair<COHERENT, true>(key_at<S>(bucket, i ^ flip));
    w[i] = p.x;
    w[i + 1] = p.y;
  }
}

// WABC by one lane alone: clears the lowest bit of `free_bits` that is still free in
// the metadata word with a fetch-and, trying fresher masks on a lost race (at most SLOTS
// + 1 tries). Returns the slot, or SLOTS when the bucket is full. For a lane whose key is
// made unique by its first bucket's lock, as `claim` below.
// The first slot of `mask` (not 0) in the order that starts at part `part` of a
// two-part bucket (rotated_first's order; part 0: the lowest slot, the only order of
// buckets of one part, whose keys all prefer part 0).
__device__ __forceinline__ unsigned first_from(unsigned mask, unsigned part) {
  if (part == 0) return __ffs(mask) - 1;
  const unsigned shift = part * (SLOTS / 2);
  const unsigned rot = ((mask >> shift) | (mask << ((SLOTS - shift) % 32u))) & ALL_FREE;
  return (__ffs(rot) - 1 + shift) % SLOTS;
}

__device__ __forceinline__ unsigned claim_alone(unsigned long long* meta, unsigned free_bits, unsigned part = 0) {
  for (unsigned tries = 0; tries <= SLOTS && free_bits != 0; ++tries) {
    const unsigned slot = first_from(free_bits, part);
    const unsigned long long bit = 1ull << slot;
    const unsigned old = static_cast<unsigned>(atomicAnd(meta, ~bit));
    if (old & static_cast<unsigned>(bit)) return slot;
    free_bits = old & ALL_FREE & ~static_cast<unsigned>(bit);
  }
  return SLOTS;
}

// Slots that are claimed but not yet written (or emptied but not yet freed), and wide
// slots owned by a writer, given the lane's word and a metadata word read before it.
template <typename S>
__device__ __forceinline__ unsigned pending(unsigned long long meta, typename S::word w) {
  const bool claimed = ((free_of(meta) >> tile::rank()) & 1u) == 0;
  return tile::ballot((claimed && S::is_empty(w)) || S::is_busy(w));
}

__device__ __forceinline__ void backoff(unsigned attempt) {
  const unsigned shift = attempt < 6 ? attempt : 6;
  __nanosleep(16u << shift);
}

// Atomic and/or on a metadata word, relaxed (the protocols order them with the lock's
// acquire and release).
__device__ __forceinline__ unsigned long long meta_and(unsigned long long* p, unsigned long long v) {
  return atomicAnd(p, v);
}
__device__ __forceinline__ unsigned long long meta_or(unsigned long long* p, unsigned long long v) {
  return atomicOr(p, v);
}

// Two-part buckets (u64 values, 16 slots): bit 16 + p of the metadata word (past the
// free mask), OUT of part p, says that some key preferring part p was placed in the
// other part of this bucket. Every placement of a key outside its preferred part sets
// it (note_out, or in the claim's own swap); it is cleared only when the bucket is
// emptied (hive_init, a merged partner). Where it is clear, every key of the bucket
// that prefers p lies in part p, so the readers that run with no other kind of writer
// beside them (the bulk lookup, the fill kernel: kernels apart from every placement
// that could set it) read that part alone (docs/hive.md, *Sector pairs and OUT
// flags*; META_OUT is above).

// The OUT flag that placing k in slot `slot` needs (0 in its preferred part, and in
// buckets of one part).
template <typename S>
__device__ __forceinline__ unsigned long long out_flag(unsigned slot, typename S::key_type k) {
  if constexpr (parts<S>() == 1) {
    (void)slot;
    (void)k;
    return 0ull;
  } else {
    static_assert(parts<S>() == 1 || SLOTS == 16, "OUT flags sit past a 16-slot free mask");
    const unsigned p = preferred_part<S>(k);
    return slot / S::part_slots(SLOTS) == p ? 0ull : META_OUT << p;
  }
}

// Sets the OUT flag that k placed in slot `slot` of the bucket with metadata word `meta`
// needs, if any (an atomic or, not waited for: the readers that use the flag run in
// later kernels).
template <typename S>
__device__ __forceinline__ void note_out(unsigned long long* meta, unsigned slot, typename S::key_type k) {
  if constexpr (parts<S>() != 1) {
    const unsigned long long f = out_flag<S>(slot, k);
    if (f != 0) meta_or(meta, f);
  } else {
    (void)meta;
    (void)slot;
    (void)k;
  }
}

// Releases a bucket's lock held by the calling lane: its earlier writes become visible
// first, then the word drops LOCK and advances its version.
__device__ __forceinline__ void unlock_word(unsigned long long* word) {
  mem::fence_acq_rel();
  mem::fetch_add_relaxed(word, META_VERSION - META_LOCK);
}

// Releases a bucket's lock whose holder wrote under it only with atomics whose results
// it has waited for (acquire swaps), or with atomics that a release swap it waited for
// drained before its own swap (wide_queued's relaxed value exchanges): each was performed
// at L2, where every later reader at gpu scope reads, before this atomic is issued, so no
// fence has to drain the lane's (and its warp's) other memory operations first. A holder
// with a plain store under the lock releases with unlock_word.
__device__ __forceinline__ void unlock_after_atomics(unsigned long long* word) {
  mem::fetch_add_relaxed(word, META_VERSION - META_LOCK);
}

// Writes a lane's pair into the slot it claimed (empty until then) with an acquire
// compare-and-swap instead of a store: the lane waits for it, so its later atomics (the
// unlock, see unlock_after_atomics) are issued after the pair was written at L2.
template <typename S>
__device__ __forceinline__ void put_alone(typename S::ptr slot, typename S::word word) {
  S::put(slot, word);
}

// A bucket's metadata word. Every member is called by the whole tile; rank 0 does the
// memory operation and the result is broadcast.
struct bucket_meta {
  unsigned long long* word;

  // The word, read with acquire semantics (the tile's later loads are ordered after it).
  __device__ __forceinline__ unsigned long long observe() const {
    unsigned long long m = 0;
    if (tile::rank() == 0) m = mem::ld_acquire(word);
    return tile::shfl(m, 0);
  }

  // True when the word still equals `seen` after the tile's earlier loads.
  __device__ __forceinline__ bool unchanged(unsigned long long seen) const {
    mem::fence_acq_rel();
    return observe() == seen;
  }

  // The claim of an insert that knows its key is absent as of `seen`: clears the slot's
  // bit and advances the version only if the word is still `seen`.
  // `flags` (an OUT flag the placement needs) are set in the same swap.
  __device__ __forceinline__ bool claim_from(unsigned long long seen, unsigned slot,
                                             unsigned long long flags = 0ull) const {
    unsigned ok = 0;
    if (tile::rank() == 0) {
      const unsigned long long next = ((seen & ~(1ull << slot)) | flags) + META_VERSION;
      ok = mem::cas_acq_rel(word, seen, next) == seen;
    }
    return tile::shfl(ok, 0) != 0;
  }

  // Takes the lock if the word is still the unlocked `seen`.
  __device__ __forceinline__ bool lock_from(unsigned long long seen) const {
    unsigned ok = 0;
    if (tile::rank() == 0 && (seen & META_LOCK) == 0) {
      ok = mem::cas_acq_rel(word, seen, (seen | META_LOCK) + META_VERSION) == seen;
    }
    return tile::shfl(ok, 0) != 0;
  }

  // One try at the lock, whatever the word is.
  __device__ __forceinline__ bool try_lock() const {
    unsigned ok = 0;
    if (tile::rank() == 0) {
      const unsigned long long v = mem::ld_relaxed(word);
      ok = (v & META_LOCK) == 0 && mem::cas_acq_rel(word, v, (v | META_LOCK) + META_VERSION) == v;
    }
    return tile::shfl(ok, 0) != 0;
  }

  // Releases the lock (the tile's earlier writes become visible first).
  __device__ __forceinline__ void unlock() const {
    if (tile::rank() == 0) unlock_word(word);
    __syncwarp(tile::mask());
  }

  // Sets SPILL or STASHED (by a holder of the lock, before the key is placed).
  __device__ __forceinline__ void mark(unsigned long long flag) const {
    if (tile::rank() == 0) {
      meta_or(word, flag);
      mem::fence_acq_rel();
    }
    __syncwarp(tile::mask());
  }

  // Frees a slot the caller emptied (its bit is clear, so the add sets it).
  __device__ __forceinline__ void free_slot(unsigned slot) const {
    if (tile::rank() == 0) mem::fetch_add_relaxed(word, (1ull << slot) + META_VERSION);
  }
};

// WABC (§III-E): rank 0 reads the free mask (relaxed) and broadcasts it, the first free
// slot in the order from part `part` (first_from: the key's preferred part; the lowest
// free slot in buckets of one part) is elected, and rank 0 clears that one bit with a
// fetch-and. The old mask
// says whether the bit was still free: if so the slot is ours; if another warp took it
// first, the fetch-and changed nothing, and the next free bit of the fresher mask is
// tried. Returns the claimed slot (the same on every lane), or SLOTS when the bucket is
// full. Used where the claimer's key is made unique by a lock (its first bucket's);
// a claimed slot that cannot be used after all is given back with `free_slot`.
__device__ __forceinline__ unsigned claim(bucket_meta meta, unsigned part = 0) {
  unsigned free_bits = 0;
  if (tile::rank() == 0) free_bits = free_of(mem::ld_relaxed(meta.word));
  free_bits = tile::shfl(free_bits, 0);
  for (unsigned tries = 0; tries <= SLOTS && free_bits != 0; ++tries) {
    const unsigned slot = first_from(free_bits, part);
    const unsigned long long bit = 1ull << slot;
    unsigned old = 0;
    if (tile::rank() == 0) old = static_cast<unsigned>(meta_and(meta.word, ~bit));
    old = tile::shfl(old, 0);
    if (old & static_cast<unsigned>(bit)) return slot;
    free_bits = old & ALL_FREE & ~static_cast<unsigned>(bit);
  }
  return SLOTS;
}

// WABC claim, then rank 0 publishes the word at once. Returns whether it was placed.
template <typename S>
__device__ __forceinline__ bool claim_commit(unsigned long long* bucket, bucket_meta meta, typename S::word word) {
  const unsigned slot = claim(meta, preferred_part<S>(S::key_of(word)));
  if (slot == SLOTS) return false;
  if (tile::rank() == 0) {
    note_out<S>(meta.word, slot, S::key_of(word));
    S::publish(slot_at<S>(bucket, slot), word);
  }
  return true;
}

}  // namespace hive
}  // namespace gpuds
