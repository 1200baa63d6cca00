//! 2-bit encoding of 16-mers into `u32` codes, and the rule that turns codes into keys.

use std::iter::FusedIterator;

/// The k-mer length: 16 nucleotides of 2 bits fill a `u32` (§6).
pub const K: usize = 16;

/// Not a nucleotide.
const INVALID: u8 = 4;

/// The 2-bit code of every byte: A=0, C=1, G=2, T=3 in either case, [`INVALID`] else.
const CODES: [u8; 256] = {
    let mut codes = [INVALID; 256];
    let bases = [b'A', b'C', b'G', b'T'];
    let mut i = 0;
    while i < 4 {
        codes[bases[i] as usize] = i as u8;
        codes[bases[i].to_ascii_lowercase() as usize] = i as u8;
        i += 1;
    }
    codes
};

/// The nucleotides in code order.
pub(crate) const BASES: [u8; 4] = *b"ACGT";

/// The 2-bit code of a nucleotide (`A`/`a` = 0, `C` = 1, `G` = 2, `T` = 3), `None` for
/// any other byte (`N`, IUPAC ambiguity codes, gaps).
pub(crate) fn base_code(base: u8) -> Option<u32> {
    let code = CODES[base as usize];
    (code != INVALID).then_some(code as u32)
}

/// The code of a 16-mer: the first nucleotide in the two most significant bits, so
/// codes sort like the k-mers' strings. `None` unless `kmer` is exactly [`K`] bytes of
/// `ACGT` (either case).
///
/// ```
/// use gpuds_oversub::kmer::encode;
/// assert_eq!(encode(b"AAAAAAAAAAAAAAAC"), Some(1));
/// assert_eq!(encode(b"taaaaaaaaaaaaaaa"), Some(3 << 30));
/// assert_eq!(encode(b"TTTTTTTTTTTTTTTT"), Some(u32::MAX));
/// assert_eq!(encode(b"AAAAAAAANAAAAAAA"), None);
/// assert_eq!(encode(b"ACGT"), None);
/// ```
pub fn encode(kmer: &[u8]) -> Option<u32> {
    if kmer.len() != K {
        return None;
    }
    kmer.iter()
        .try_fold(0u32, |code, &b| Some((code << 2) | base_code(b)?))
}

/// The 16-mer of a code, in upper case.
///
/// ```
/// use gpuds_oversub::kmer::{decode, encode};
/// assert_eq!(&decode(1), b"AAAAAAAAAAAAAAAC");
/// assert_eq!(encode(&decode(0xdead_beef)), Some(0xdead_beef));
/// ```
pub fn decode(code: u32) -> [u8; K] {
    std::array::from_fn(|i| BASES[((code >> (2 * (K - 1 - i))) & 3) as usize])
}

/// The code of the reverse complement (A↔T, C↔G, read backwards): the same k-mer read
/// from the other strand.
///
/// ```
/// use gpuds_oversub::kmer::{encode, reverse_complement};
/// let fwd = encode(b"AAAACCCCGGGGTTTA").unwrap();
/// assert_eq!(Some(reverse_complement(fwd)), encode(b"TAAACCCCGGGGTTTT"));
/// ```
pub fn reverse_complement(code: u32) -> u32 {
    // Complementing a 2-bit code is `3 - c`, i.e. flipping both bits; reversing the bit
    // order reverses the k-mer but also swaps the two bits of each base, undone last.
    let reversed = (!code).reverse_bits();
    ((reversed >> 1) & 0x5555_5555) | ((reversed & 0x5555_5555) << 1)
}

/// The smaller of a code and its reverse complement: one code per k-mer whatever the
/// strand it was read from. Never `u32::MAX` (all-T's canonical form is all-A, 0).
///
/// ```
/// use gpuds_oversub::kmer::{canonical, encode, reverse_complement};
/// let code = encode(b"TTTTGGGGCCCCAAAC").unwrap();
/// assert_eq!(canonical(code), canonical(reverse_complement(code)));
/// assert_eq!(canonical(u32::MAX), 0);
/// ```
pub fn canonical(code: u32) -> u32 {
    code.min(reverse_complement(code))
}

/// The codes of every 16-mer of `seq`, left to right, as a rolling 2-bit shift:
/// windows that contain a byte other than `ACGT` (either case), such as `N`, are
/// skipped. A sequence of `n` valid bases yields `n - 15` codes.
///
/// ```
/// use gpuds_oversub::kmer::{encode, kmers};
/// let seq = b"ACGTACGTACGTACGTAnACGTACGTACGTACGTT";
/// let codes: Vec<u32> = kmers(seq).collect();
/// assert_eq!(codes.len(), 2 + 2);
/// assert_eq!(codes[0], encode(&seq[..16]).unwrap());
/// assert_eq!(codes[3], encode(&seq[19..35]).unwrap());
/// ```
pub fn kmers(seq: &[u8]) -> Kmers<'_> {
    Kmers {
        seq: seq.iter(),
        code: 0,
        valid: 0,
    }
}

/// The iterator of [`kmers`].
#[derive(Clone, Debug)]
pub struct Kmers<'a> {
    seq: std::slice::Iter<'a, u8>,
    code: u32,
    /// Valid bases at the end of `code` since the last invalid byte (saturates at K).
    valid: usize,
}

impl Iterator for Kmers<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        for &b in self.seq.by_ref() {
            match base_code(b) {
                Some(c) => {
                    // Shifting a u32 by two drops the base that left the window.
                    self.code = (self.code << 2) | c;
                    self.valid = (self.valid + 1).min(K);
                    if self.valid == K {
                        return Some(self.code);
                    }
                }
                None => self.valid = 0,
            }
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.seq.len();
        (0, Some((left + self.valid).saturating_sub(K - 1)))
    }
}

impl FusedIterator for Kmers<'_> {}

/// Where a k-mer goes in a table whose keys must avoid `0` and `u32::MAX`.
///
/// The rule: a k-mer's key is its code, unchanged, so that keys sort like k-mers and a
/// device kernel needs no arithmetic beyond the encoding. The two codes the tables
/// reserve are the two homopolymers, poly-A (`0`) and poly-T (`u32::MAX`),
/// low-complexity k-mers that classifiers mask anyway: they never enter a table and
/// the caller counts them on the side ([`TableKeys`] does).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KmerKey {
    /// A key in `[1, u32::MAX - 1]` (equal to the code).
    Table(u32),
    /// `AAAAAAAAAAAAAAAA`, code `0`.
    PolyA,
    /// `TTTTTTTTTTTTTTTT`, code `u32::MAX`.
    PolyT,
}

impl KmerKey {
    /// The place of the k-mer with code `code`.
    ///
    /// ```
    /// use gpuds_oversub::kmer::KmerKey;
    /// assert_eq!(KmerKey::of(7), KmerKey::Table(7));
    /// assert_eq!(KmerKey::of(0), KmerKey::PolyA);
    /// assert_eq!(KmerKey::of(u32::MAX), KmerKey::PolyT);
    /// ```
    pub fn of(code: u32) -> KmerKey {
        match code {
            0 => KmerKey::PolyA,
            u32::MAX => KmerKey::PolyT,
            key => KmerKey::Table(key),
        }
    }
}

/// The table key of a k-mer code ([`KmerKey`]'s rule): the code itself, or `None` for
/// the two homopolymers.
///
/// ```
/// use gpuds_oversub::kmer::table_key;
/// assert_eq!(table_key(1), Some(1));
/// assert_eq!(table_key(u32::MAX - 1), Some(u32::MAX - 1));
/// assert_eq!(table_key(0), None);
/// assert_eq!(table_key(u32::MAX), None);
/// ```
pub fn table_key(code: u32) -> Option<u32> {
    match KmerKey::of(code) {
        KmerKey::Table(key) => Some(key),
        KmerKey::PolyA | KmerKey::PolyT => None,
    }
}

/// A batch of k-mer codes split by [`KmerKey`]'s rule: the table keys in input order,
/// and how many of each homopolymer were left out.
///
/// ```
/// use gpuds_oversub::kmer::{kmers, TableKeys};
/// let seq = b"AAAAAAAAAAAAAAAACA";
/// let batch = TableKeys::from_codes(kmers(seq));
/// assert_eq!(batch.keys, vec![1, 4]);
/// assert_eq!((batch.poly_a, batch.poly_t), (1, 0));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableKeys {
    /// The codes that are table keys, in input order.
    pub keys: Vec<u32>,
    /// How many codes were poly-A.
    pub poly_a: u64,
    /// How many codes were poly-T.
    pub poly_t: u64,
}

impl TableKeys {
    /// Splits `codes`.
    pub fn from_codes(codes: impl IntoIterator<Item = u32>) -> TableKeys {
        let mut batch = TableKeys::default();
        batch.extend(codes);
        batch
    }
}

impl Extend<u32> for TableKeys {
    fn extend<I: IntoIterator<Item = u32>>(&mut self, codes: I) {
        for code in codes {
            match KmerKey::of(code) {
                KmerKey::Table(key) => self.keys.push(key),
                KmerKey::PolyA => self.poly_a += 1,
                KmerKey::PolyT => self.poly_t += 1,
            }
        }
    }
}
