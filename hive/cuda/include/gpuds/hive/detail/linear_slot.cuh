// gpuds/hive/detail/linear_slot.cuh: the slot of LinearProbeMap and its atomic accesses.
//
// A slot holds one key and one value. With 4-byte keys and values the slot is one
// naturally aligned 8-byte word (key in the low half, value in the high half): a probe
// is one 8-byte load, a new pair is claimed by one 64-bit compare-and-swap from the empty
// word to the whole pair, and every later write is a whole-word store or exchange, so
// all accesses to a slot have the same size. Wider pairs use a 16-byte slot of two words
// (key in word 0, value in word 1): the key is claimed by compare-and-swap and the value
// follows as a separate store, as in the Farrell table.
//
// Sentinels: the empty key is all ones, the erased key (key tombstones only) all ones
// minus one, and the empty value all ones; a fresh table is all one-bits.
#pragma once
#include <gpuds/core/memory.cuh>

namespace gpuds {
namespace hive {
namespace detail {

// How a probe reads a slot.
enum class read_mode { nc, weak, relaxed };

template <read_mode M, class T>
__device__ __forceinline__ T read(const T* p) {
  if constexpr (M == read_mode::nc) {
    return mem::ld_nc(p);
  } else if constexpr (M == read_mode::weak) {
    // Weak (mem::ld_weak): a probe's decisions are confirmed by a compare-and-swap or hold
    // in any state the slot had since the batch began (slots only move forward: empty to
    // key, or key to erased in batches without inserts).
    return mem::ld_weak(p);
  } else {
    return mem::ld_relaxed(p);
  }
}

template <class K, class V>
struct slot_size {
  static constexpr unsigned value = (sizeof(K) == 4 && sizeof(V) == 4) ? 8u : 16u;
};

// The slot: key first, value at 4 (packed) or 8 bytes.
template <class K, class V>
struct alignas(slot_size<K, V>::value) slot {
  K key;
  alignas(slot_size<K, V>::value / 2) V value;
};

// What one read of a slot saw.
template <class K, class V>
struct slot_view {
  K key;
  V value;
};

template <class K, class V>
struct slot_ops {
  using slot_t = slot<K, V>;
  using view = slot_view<K, V>;
  static constexpr bool PACKED = slot_size<K, V>::value == 8;
  static constexpr K EMPTY_KEY = ~K(0);
  static constexpr K ERASED_KEY = ~K(0) - 1;
  static constexpr V EMPTY_VALUE = ~V(0);

  __device__ __forceinline__ static unsigned long long pack(K k, V v) {
    return (static_cast<unsigned long long>(v) << 32) | k;
  }
  __device__ __forceinline__ static unsigned long long* word(slot_t* s) {
    return reinterpret_cast<unsigned long long*>(s);
  }

  // Reads a slot: through the read-only path (nc: no kernel in flight writes the
  // table), a weak load, or a relaxed load at GPU scope.
  template <read_mode M>
  __device__ __forceinline__ static view load(slot_t* s) {
    if constexpr (PACKED) {
      const unsigned long long w = read<M>(word(s));
      return view{static_cast<K>(w), static_cast<V>(w >> 32)};
    } else {
      return view{read<M>(&s->key), read<M>(&s->value)};
    }
  }

  // Claims a slot whose key is `expected` (empty or erased) for (k, v); returns the key
  // found. On success (found == expected) the pair is stored: at once when packed, else
  // the value follows the key (exchanged when OBSERVE, and `*before` gets what the
  // exchange saw: a concurrent replace of the same key may have come first).
  template <bool OBSERVE>
  __device__ __forceinline__ static K claim(slot_t* s, K expected, K k, V v, V* before) {
    *before = EMPTY_VALUE;
    if constexpr (PACKED) {
      const unsigned long long old = mem::cas_relaxed(word(s), pack(expected, EMPTY_VALUE), pack(k, v));
      return static_cast<K>(old);
    } else {
      const K old = mem::cas_relaxed(&s->key, expected, k);
      if (old == expected) {
        if (OBSERVE) {
          *before = mem::exch_relaxed(&s->value, v);
        } else {
          mem::st_relaxed(&s->value, v);
        }
      }
      return old;
    }
  }

  // Writes v as the value of the slot holding k; returns the value replaced when
  // OBSERVE (else EMPTY_VALUE). Key k never leaves the slot while this runs.
  template <bool OBSERVE>
  __device__ __forceinline__ static V put(slot_t* s, K k, V v) {
    if constexpr (PACKED) {
      if (OBSERVE) return static_cast<V>(mem::exch_relaxed(word(s), pack(k, v)) >> 32);
      mem::st_relaxed(word(s), pack(k, v));
    } else {
      if (OBSERVE) return mem::exch_relaxed(&s->value, v);
      mem::st_relaxed(&s->value, v);
    }
    return EMPTY_VALUE;
  }

  // Key tombstone, observed: atomically takes the slot from key k (seen with value v)
  // to erased; returns the value taken, or the empty value when a concurrent erase of
  // the same key won. Only when no insert runs concurrently.
  __device__ __forceinline__ static V take_key(slot_t* s, K k, V v) {
    if constexpr (PACKED) {
      const unsigned long long old = mem::cas_relaxed(word(s), pack(k, v), pack(ERASED_KEY, EMPTY_VALUE));
      return old == pack(k, v) ? v : EMPTY_VALUE;
    } else {
      if (mem::cas_relaxed(&s->key, k, ERASED_KEY) != k) return EMPTY_VALUE;
      return mem::exch_relaxed(&s->value, EMPTY_VALUE);
    }
  }

  // Key tombstone: the slot becomes erased and reusable. Only when no insert runs
  // concurrently (the empty value lands first, so a later claim never exposes a stale
  // value to a concurrent lookup).
  __device__ __forceinline__ static void erase_key(slot_t* s) {
    if constexpr (PACKED) {
      mem::st_relaxed(word(s), pack(ERASED_KEY, EMPTY_VALUE));
    } else {
      mem::st_relaxed(&s->value, EMPTY_VALUE);
      mem::st_release(&s->key, ERASED_KEY);
    }
  }
};

}  // namespace detail
}  // namespace hive
}  // namespace gpuds
