//! [`IdSet`]: the host's set of deleted vertex ids, a bitmap (vertex deletion and reuse
//! touch it once per id: a tree or hash set cost more host time there than the kernels).

/// A set of u32 ids as a bitmap that grows on insertion; iteration is ascending.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct IdSet {
    words: Vec<u64>,
    len: usize,
}

impl IdSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn contains(&self, id: u32) -> bool {
        self.words
            .get(id as usize / 64)
            .is_some_and(|w| w >> (id % 64) & 1 == 1)
    }

    /// Inserts `id`; true when it was absent.
    pub fn insert(&mut self, id: u32) -> bool {
        let w = id as usize / 64;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        let bit = 1u64 << (id % 64);
        let fresh = self.words[w] & bit == 0;
        self.words[w] |= bit;
        self.len += usize::from(fresh);
        fresh
    }

    /// Adds the ids of a bitmap (bit `i % 32` of `bits[i / 32]` set: id `i` is in it);
    /// returns how many were absent. Host time is per word, not per id.
    pub fn merge_bits(&mut self, bits: &[u32]) -> usize {
        let words = bits.len().div_ceil(2);
        if words > self.words.len() {
            self.words.resize(words, 0);
        }
        let mut fresh = 0usize;
        for (w, pair) in self.words.iter_mut().zip(bits.chunks(2)) {
            let hi = pair.get(1).copied().unwrap_or(0);
            let add = u64::from(pair[0]) | u64::from(hi) << 32;
            fresh += (add & !*w).count_ones() as usize;
            *w |= add;
        }
        self.len += fresh;
        fresh
    }

    /// Removes `id`; true when it was present.
    pub fn remove(&mut self, id: u32) -> bool {
        let present = self.contains(id);
        if present {
            self.words[id as usize / 64] &= !(1u64 << (id % 64));
            self.len -= 1;
        }
        present
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The ids, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut rest = w;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let b = rest.trailing_zeros();
                rest &= rest - 1;
                Some(i as u32 * 64 + b)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn merged_bitmaps_add_their_ids() {
        let mut a = IdSet::new();
        a.insert(3);
        a.insert(100);
        let mut bits = vec![0u32; 5];
        for id in [3u32, 31, 32, 64, 130] {
            bits[id as usize / 32] |= 1 << (id % 32);
        }
        assert_eq!(a.merge_bits(&bits), 4);
        assert_eq!(a.len(), 6);
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![3, 31, 32, 64, 100, 130]);
        assert_eq!(a.merge_bits(&bits), 0);
        assert_eq!(a.len(), 6);
    }

    #[test]
    fn behaves_like_a_btreeset() {
        let mut a = IdSet::new();
        let mut b = BTreeSet::new();
        let mut x = 12345u32;
        for step in 0..20_000u32 {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let id = if step.is_multiple_of(7) {
                u32::MAX - x % 3
            } else {
                x % 5000
            };
            if x.is_multiple_of(3) {
                assert_eq!(a.remove(id), b.remove(&id));
            } else {
                assert_eq!(a.insert(id), b.insert(id));
            }
            assert_eq!(a.len(), b.len());
            assert_eq!(a.contains(id), b.contains(&id));
        }
        assert!(a.iter().eq(b.iter().copied()));
        assert_eq!(a.is_empty(), b.is_empty());
    }
}
