//! Where a slab keeps its entries: the host twin of `gpuds/slabhash/layout.cuh`, used to
//! size tables and to decode host copies of slabs.
//!
//! A slab is 32 words: lanes 0-29 hold entries, lane 30 is auxiliary, lane 31 the next
//! slab's address. A key takes one word (u32) or two (u64, low word first), a value the
//! same (a set has none). An entry of at most two words is *packed* (the paper's layout:
//! slot j's key at lane `j * (key + value words)`, its value right after); a wider map
//! entry is *wide*: all keys first, then all values, and lane 30 holds one busy bit per
//! slot (clear while the slot holds a settled live entry).

use crate::kernels::Kind;

/// Lanes of a slab that hold entries.
const DATA_LANES: u32 = 30;
/// The auxiliary lane (all ones, or a wide layout's busy bits).
pub(crate) const AUX_LANE: usize = 30;
/// The lane holding the next slab's address.
pub(crate) const NEXT_LANE: usize = 31;

/// The entry layout of one key and value type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Map or set.
    pub kind: Kind,
    /// Words of a key: 1 or 2.
    pub key_words: u32,
    /// Words of a value: 1 or 2 for maps, 0 for sets.
    pub value_words: u32,
}

impl Layout {
    /// The layout of keys of `key_bytes` and (maps) values of `value_bytes`.
    pub(crate) fn new(kind: Kind, key_bytes: usize, value_bytes: usize) -> Self {
        Self {
            kind,
            key_words: key_bytes as u32 / 4,
            value_words: match kind {
                Kind::Map => value_bytes as u32 / 4,
                Kind::Set => 0,
            },
        }
    }

    /// The layout of a table of `K` keys and (maps) `V` values.
    pub(crate) fn of<K, V>(kind: Kind) -> Self {
        Self::new(kind, std::mem::size_of::<K>(), std::mem::size_of::<V>())
    }

    fn entry_words(self) -> u32 {
        self.key_words + self.value_words
    }

    /// Whether an entry is one word or one aligned 8-byte pair, claimed by one CAS.
    pub(crate) fn packed(self) -> bool {
        self.entry_words() <= 2
    }

    /// Entries per slab: 30, 15, 10 or 7.
    pub(crate) fn slots(self) -> u32 {
        DATA_LANES / self.entry_words()
    }

    /// Bytes of one entry (the paper's x in the memory utilization).
    pub(crate) fn element_bytes(self) -> u32 {
        4 * self.entry_words()
    }

    /// The first key lane of slot `j`.
    pub(crate) fn key_lane(self, j: u32) -> usize {
        let stride = if self.packed() {
            self.entry_words()
        } else {
            self.key_words
        };
        (j * stride) as usize
    }

    /// The first value lane of slot `j` (maps).
    pub(crate) fn value_lane(self, j: u32) -> usize {
        if self.packed() {
            self.key_lane(j) + self.key_words as usize
        } else {
            (self.slots() * self.key_words + j * self.value_words) as usize
        }
    }

    /// The key of slot `j` of `slab` (the low word first).
    pub(crate) fn key(self, slab: &[u32], j: u32) -> u64 {
        words(slab, self.key_lane(j), self.key_words)
    }

    /// The value of slot `j` of `slab`.
    pub(crate) fn value(self, slab: &[u32], j: u32) -> u64 {
        words(slab, self.value_lane(j), self.value_words)
    }

    /// The all-ones key (or value) of this layout's width.
    pub(crate) fn ones(words: u32) -> u64 {
        if words == 2 {
            u64::MAX
        } else {
            u64::from(u32::MAX)
        }
    }

    /// The empty and tombstone keys of this layout's key width.
    pub(crate) fn reserved_keys(self) -> (u64, u64) {
        let empty = Self::ones(self.key_words);
        (empty, empty - 1)
    }
}

fn words(slab: &[u32], lane: usize, n: u32) -> u64 {
    match n {
        0 => 0,
        1 => u64::from(slab[lane]),
        _ => u64::from(slab[lane]) | (u64::from(slab[lane + 1]) << 32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table of `layout.cuh`: slots, key lanes and value lanes of every combination.
    #[test]
    fn every_combination_has_the_documented_lanes() {
        let cases = [
            (Layout::of::<u32, u32>(Kind::Set), 30, [0, 1, 29], None),
            (Layout::of::<u64, u32>(Kind::Set), 15, [0, 2, 28], None),
            (
                Layout::of::<u32, u32>(Kind::Map),
                15,
                [0, 2, 28],
                Some([1, 3, 29]),
            ),
            (
                Layout::of::<u64, u64>(Kind::Map),
                7,
                [0, 2, 12],
                Some([14, 16, 26]),
            ),
            (
                Layout::of::<u64, u32>(Kind::Map),
                10,
                [0, 2, 18],
                Some([20, 21, 29]),
            ),
            (
                Layout::of::<u32, u64>(Kind::Map),
                10,
                [0, 1, 9],
                Some([10, 12, 28]),
            ),
        ];
        for (layout, slots, keys, values) in cases {
            assert_eq!(layout.slots(), slots, "{layout:?}");
            let last = slots - 1;
            assert_eq!(
                [
                    layout.key_lane(0),
                    layout.key_lane(1),
                    layout.key_lane(last)
                ],
                keys,
                "{layout:?}"
            );
            if let Some(values) = values {
                assert_eq!(
                    [
                        layout.value_lane(0),
                        layout.value_lane(1),
                        layout.value_lane(last)
                    ],
                    values,
                    "{layout:?}"
                );
            }
            assert_eq!(layout.packed(), layout.element_bytes() <= 8);
        }
    }

    /// Every entry's words sit inside lanes 0-29, no two entries share a lane, and every
    /// 64-bit key or value is 8-byte aligned (one atomic access).
    #[test]
    fn entries_are_disjoint_aligned_and_below_the_auxiliary_lane() {
        for layout in [
            Layout::of::<u32, u32>(Kind::Set),
            Layout::of::<u64, u32>(Kind::Set),
            Layout::of::<u32, u32>(Kind::Map),
            Layout::of::<u32, u64>(Kind::Map),
            Layout::of::<u64, u32>(Kind::Map),
            Layout::of::<u64, u64>(Kind::Map),
        ] {
            let mut used = [false; 32];
            let mut claim = |lane: usize, words: u32| {
                if words == 2 {
                    assert_eq!(lane % 2, 0, "{layout:?}: a 64-bit word at lane {lane}");
                }
                assert!(lane + words as usize <= AUX_LANE, "{layout:?}: lane {lane}");
                for (l, taken) in used.iter_mut().enumerate().skip(lane).take(words as usize) {
                    assert!(!*taken, "{layout:?}: lane {l} used twice");
                    *taken = true;
                }
            };
            for j in 0..layout.slots() {
                claim(layout.key_lane(j), layout.key_words);
                if layout.value_words > 0 {
                    claim(layout.value_lane(j), layout.value_words);
                }
            }
        }
    }

    #[test]
    fn keys_and_values_decode_low_word_first() {
        let layout = Layout::of::<u64, u64>(Kind::Map);
        let mut slab = [u32::MAX; 32];
        slab[2] = 0x1111_2222;
        slab[3] = 0x3333_4444;
        slab[16] = 7;
        slab[17] = 9;
        assert_eq!(layout.key(&slab, 1), 0x3333_4444_1111_2222);
        assert_eq!(layout.value(&slab, 1), (9 << 32) | 7);
        assert_eq!(layout.reserved_keys(), (u64::MAX, u64::MAX - 1));
        assert_eq!(
            Layout::of::<u32, u32>(Kind::Map).reserved_keys(),
            (u64::from(u32::MAX), u64::from(u32::MAX - 1))
        );
    }
}
