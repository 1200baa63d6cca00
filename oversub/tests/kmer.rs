//! k-mer inputs: the encoding against a naive one, the key rule, FASTA/FASTQ round trips
//! (plain and gzip), every reader error with its record and line, no panic on any
//! input, and the synthetic genome, read and community generators.

use std::collections::{HashMap, HashSet};
use std::io::{self, Read, Write};

use flate2::write::GzEncoder;
use flate2::Compression;
use gpuds_oversub::kmer::{
    canonical, classify, community, decode, encode, genome, kmers, merge_taxa, read_records, reads,
    reverse_complement, table_key, write_fasta, write_fastq, KmerKey, Record, SeqError, TableKeys,
    K, UNCLASSIFIED,
};
use proptest::prelude::*;

/// The encoding written out the slow way: one base at a time, first base highest.
fn naive_encode(kmer: &[u8]) -> Option<u32> {
    if kmer.len() != 16 {
        return None;
    }
    let mut code: u64 = 0;
    for &b in kmer {
        let c = match b.to_ascii_uppercase() {
            b'A' => 0,
            b'C' => 1,
            b'G' => 2,
            b'T' => 3,
            _ => return None,
        };
        code = code * 4 + c;
    }
    Some(code as u32)
}

fn naive_kmers(seq: &[u8]) -> Vec<u32> {
    if seq.len() < K {
        return Vec::new();
    }
    (0..=seq.len() - K)
        .filter_map(|i| naive_encode(&seq[i..i + K]))
        .collect()
}

fn naive_reverse_complement(kmer: &[u8]) -> Vec<u8> {
    kmer.iter()
        .rev()
        .map(|b| match b {
            b'A' => b'T',
            b'C' => b'G',
            b'G' => b'C',
            _ => b'A',
        })
        .collect()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

fn read_all(data: &[u8]) -> Result<Vec<Record>, SeqError> {
    read_records(data).collect()
}

/// The first error reading `text`.
fn first_error(text: &[u8]) -> SeqError {
    read_records(text)
        .find_map(Result::err)
        .expect("the input should be refused")
}

/// Nucleotide strings with some `N`, lower case and other bytes.
fn dna(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop::sample::select(b"ACGTACGTACGTacgtNnRX-".to_vec()),
        0..max,
    )
}

fn records() -> impl Strategy<Value = Vec<Record>> {
    let id = "[A-Za-z0-9_.:|]{1,12}( [ -~]{0,20})?";
    let seq = prop::collection::vec(prop::sample::select(b"ACGTNacgtn".to_vec()), 0..300);
    let record = (id, seq).prop_map(|(id, seq)| Record { id, seq });
    prop::collection::vec(record, 0..20)
}

#[test]
fn encoding_edges() {
    assert_eq!(encode(b"AAAAAAAAAAAAAAAA"), Some(0));
    assert_eq!(encode(b"TTTTTTTTTTTTTTTT"), Some(u32::MAX));
    assert_eq!(encode(b"CAAAAAAAAAAAAAAA"), Some(1 << 30));
    assert_eq!(encode(b"acgtacgtacgtacgt"), encode(b"ACGTACGTACGTACGT"));
    assert_eq!(encode(b"ACGTACGTACGTACG"), None);
    assert_eq!(encode(b"ACGTACGTACGTACGTA"), None);
    assert_eq!(encode(b"ACGTACGTACGTACGU"), None);
    assert_eq!(kmers(b"ACGTACGTACGTACG").count(), 0);
    assert_eq!(kmers(&[b'A'; 40]).count(), 25);
}

#[test]
fn the_key_rule_keeps_codes_and_sets_the_homopolymers_aside() {
    for code in [1, 2, 0x1234_5678, u32::MAX - 1] {
        assert_eq!(table_key(code), Some(code));
        assert_eq!(KmerKey::of(code), KmerKey::Table(code));
    }
    assert_eq!(table_key(0), None);
    assert_eq!(table_key(u32::MAX), None);
    assert_eq!(
        KmerKey::of(encode(b"AAAAAAAAAAAAAAAA").unwrap()),
        KmerKey::PolyA
    );
    assert_eq!(
        KmerKey::of(encode(b"TTTTTTTTTTTTTTTT").unwrap()),
        KmerKey::PolyT
    );
    let seq = [&[b'A'; 18][..], b"C", &[b'T'; 17][..]].concat();
    let batch = TableKeys::from_codes(kmers(&seq));
    assert_eq!((batch.poly_a, batch.poly_t), (3, 2));
    assert_eq!(batch.keys.len(), seq.len() - 15 - 5);
    assert!(batch.keys.iter().all(|&k| k != 0 && k != u32::MAX));
    // No key is the code of a homopolymer, so keys map back to distinct k-mers.
    let distinct: HashSet<u32> = batch.keys.iter().copied().collect();
    assert_eq!(distinct.len(), 16);
}

proptest! {
    #[test]
    fn encode_matches_the_naive_encoding(kmer in dna(20)) {
        prop_assert_eq!(encode(&kmer), naive_encode(&kmer));
    }

    #[test]
    fn rolling_kmers_match_every_window(seq in dna(400)) {
        prop_assert_eq!(kmers(&seq).collect::<Vec<_>>(), naive_kmers(&seq));
        let (_, upper) = kmers(&seq).size_hint();
        prop_assert!(upper.unwrap() >= naive_kmers(&seq).len());
    }

    #[test]
    fn decode_inverts_encode_and_reverse_complement_is_the_other_strand(code: u32) {
        let kmer = decode(code);
        prop_assert_eq!(encode(&kmer), Some(code));
        let rc = naive_reverse_complement(&kmer);
        prop_assert_eq!(Some(reverse_complement(code)), encode(&rc));
        prop_assert_eq!(reverse_complement(reverse_complement(code)), code);
        prop_assert_eq!(canonical(code), code.min(reverse_complement(code)));
        prop_assert_ne!(canonical(code), u32::MAX);
    }

    #[test]
    fn fasta_round_trips_plain_and_gzip(recs in records(), width in 0usize..100) {
        let mut text = Vec::new();
        write_fasta(&mut text, &recs, width).unwrap();
        prop_assert_eq!(&read_all(&text).unwrap(), &recs);
        prop_assert_eq!(&read_all(&gzip(&text)).unwrap(), &recs);
    }

    #[test]
    fn fastq_round_trips_plain_and_gzip(recs in records()) {
        let mut text = Vec::new();
        write_fastq(&mut text, &recs).unwrap();
        prop_assert_eq!(&read_all(&text).unwrap(), &recs);
        prop_assert_eq!(&read_all(&gzip(&text)).unwrap(), &recs);
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2000), gz: bool) {
        let input = if gz { [&[0x1f, 0x8b][..], &bytes].concat() } else { bytes };
        let results: Vec<_> = read_records(&input[..]).collect();
        // After an error the iterator has ended.
        if let Some(i) = results.iter().position(Result::is_err) {
            prop_assert_eq!(i, results.len() - 1);
        }
    }

    #[test]
    fn mutated_files_never_panic(
        recs in records(),
        fastq: bool,
        gz: bool,
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8),
    ) {
        let mut text = Vec::new();
        if fastq {
            write_fastq(&mut text, &recs).unwrap();
        } else {
            write_fasta(&mut text, &recs, 60).unwrap();
        }
        let mut file = if gz { gzip(&text) } else { text };
        for (at, byte, kind) in edits {
            if file.is_empty() {
                break;
            }
            let i = at.index(file.len());
            match kind {
                0 => file[i] = byte,
                1 => file.truncate(i),
                _ => file.insert(i, byte),
            }
        }
        for result in read_records(&file[..]) {
            if let Err(e) = result {
                let message = e.to_string();
                prop_assert!(message.contains("record "), "{}", message);
            }
        }
    }
}

#[test]
fn concatenated_gzip_members_read_as_one_stream() {
    let a = b">a\nACGT\n";
    let b = b">b\nGGCC\n";
    let both = [gzip(a), gzip(b)].concat();
    let recs = read_all(&both).unwrap();
    assert_eq!(
        recs.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
}

#[test]
fn blank_lines_crlf_and_empty_input_are_accepted() {
    assert!(read_all(b"").unwrap().is_empty());
    assert!(read_all(b"\n\n  \n").unwrap().is_empty());
    let recs = read_all(b"\r\n>x y\r\nAC GT\r\n\r\nTT\r\n>z\r\n").unwrap();
    assert_eq!(recs.len(), 2);
    assert_eq!(
        (recs[0].id.as_str(), recs[0].seq.as_slice()),
        ("x y", &b"ACGTTT"[..])
    );
    assert_eq!((recs[1].id.as_str(), recs[1].seq.len()), ("z", 0));
    let recs = read_all(b"@r1\r\nACGT\r\n+r1\r\nIIII\r\n\n@r2\nA\n+\n#").unwrap();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[1].seq, b"A");
}

#[test]
fn a_missing_header_names_record_and_line() {
    match first_error(b"ACGT\n>a\n") {
        SeqError::MissingHeader {
            record: 1,
            line: 1,
            expected,
            found,
        } => {
            assert_eq!(expected, "'>' or '@'");
            assert_eq!(found, "ACGT");
        }
        e => panic!("{e}"),
    }
    match first_error(b"@a\nAC\n+\nII\n\nXY\n+\nII\n") {
        SeqError::MissingHeader {
            record: 2,
            line: 6,
            expected: "'@'",
            ..
        } => {}
        e => panic!("{e}"),
    }
    // A FASTQ record in a FASTA file is not a FASTA header.
    let e = first_error(b">a\nAC\n@b\nAC\n");
    assert!(
        matches!(
            e,
            SeqError::InvalidBase {
                record: 1,
                line: 3,
                column: 1,
                byte: b'@'
            }
        ),
        "{e}"
    );
}

#[test]
fn fastq_errors_name_record_and_line() {
    let e = first_error(b"@a\nACGT\n+\nIIII\n@b\nACGT\nIIII\n");
    assert!(
        matches!(e, SeqError::MissingPlus { record: 2, line: 7 }),
        "{e}"
    );
    let e = first_error(b"@a\nACGT\n+\nIIIII\n");
    assert!(
        matches!(
            e,
            SeqError::QualityLength {
                record: 1,
                line: 4,
                bases: 4,
                quality: 5
            }
        ),
        "{e}"
    );
    let e = first_error(b"@a\nACGT\n+\nII I\n");
    assert!(
        matches!(
            e,
            SeqError::InvalidQuality {
                record: 1,
                line: 4,
                column: 3,
                byte: b' '
            }
        ),
        "{e}"
    );
    let e = first_error(b"@a\nACGT\n");
    assert!(
        matches!(e, SeqError::Truncated { record: 1, line: 2 }),
        "{e}"
    );
    let e = first_error(b"@a\nA\n+\nI\n@b\nACGT\n+\n");
    assert!(
        matches!(e, SeqError::Truncated { record: 2, line: 7 }),
        "{e}"
    );
    let e = first_error(b">a\nAC1T\n");
    assert!(
        matches!(
            e,
            SeqError::InvalidBase {
                record: 1,
                line: 2,
                column: 3,
                byte: b'1'
            }
        ),
        "{e}"
    );
    let message = first_error(b"@a\nACGT\n+\nIII\n").to_string();
    assert!(
        message.contains("record 1") && message.contains("line 4"),
        "{message}"
    );
}

#[test]
fn gzip_errors_name_the_problem() {
    let text: Vec<u8> = (0..200)
        .flat_map(|i| format!(">s{i}\nACGTTGCAACGTTGCA{i}\n").into_bytes())
        .filter(|b| !b.is_ascii_digit() || *b == b'\n')
        .collect();
    let packed = gzip(&text);
    // Cut short: the stream ends inside the data.
    let cut = &packed[..packed.len() / 2];
    let e = read_records(cut)
        .find_map(Result::err)
        .expect("a cut stream is refused");
    assert!(matches!(e, SeqError::Truncated { .. }), "{e}");
    // Corrupt: a checksum or deflate error.
    let mut corrupt = packed.clone();
    let at = corrupt.len() - 6;
    corrupt[at] ^= 0xff;
    let e = read_records(&corrupt[..])
        .find_map(Result::err)
        .expect("a corrupt stream is refused");
    assert!(matches!(e, SeqError::InvalidGzip { .. }), "{e}");
    // Magic bytes and nothing sensible after them.
    let e = first_error(&[0x1f, 0x8b, 0, 0, 0]);
    assert!(
        matches!(e, SeqError::InvalidGzip { .. } | SeqError::Truncated { .. }),
        "{e}"
    );
}

/// A reader that fails after `ok` bytes.
struct Failing<'a> {
    data: &'a [u8],
    ok: usize,
}

impl Read for Failing<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.ok == 0 {
            return Err(io::Error::other("disk on fire"));
        }
        let n = buf.len().min(self.ok).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        self.ok -= n;
        Ok(n)
    }
}

#[test]
fn io_errors_are_reported_once_and_end_the_records() {
    // A FASTQ record ends with its quality line: record 1 is whole before the failure.
    let data = b"@a\nAC\n+\nII\n@b\nAC\n+\nII\n";
    let results: Vec<_> = read_records(Failing { data, ok: 11 }).collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].as_ref().unwrap().id, "a");
    match &results[1] {
        Err(SeqError::Io {
            record: 2,
            line: 5,
            source,
        }) => assert_eq!(source.to_string(), "disk on fire"),
        other => panic!("{other:?}"),
    }
    // A FASTA record is whole only at the next header: the failure falls inside it.
    let data = b">a\nACGT\n>b\nACGT\n";
    let results: Vec<_> = read_records(Failing { data, ok: 9 }).collect();
    assert!(
        matches!(
            results[..],
            [Err(SeqError::Io {
                record: 1,
                line: 3,
                ..
            })]
        ),
        "{results:?}"
    );
    let results: Vec<_> = read_records(Failing { data, ok: 0 }).collect();
    assert!(matches!(
        results[..],
        [Err(SeqError::Io {
            record: 1,
            line: 1,
            ..
        })]
    ));
}

/// The positions of `g` whose k-mer occurs somewhere else too.
fn repeated_positions(g: &[u8]) -> usize {
    let mut counts: HashMap<u32, usize> = HashMap::new();
    for code in kmers(g) {
        *counts.entry(code).or_default() += 1;
    }
    kmers(g).filter(|c| counts[c] > 1).count()
}

#[test]
fn genomes_are_seeded_and_hold_the_asked_repeats() {
    let len = 200_000;
    let plain = genome(len, 3, 0.0);
    assert_eq!(plain, genome(len, 3, 0.0));
    assert_ne!(plain, genome(len, 4, 0.0));
    assert!(plain.iter().all(|b| b"ACGT".contains(b)));
    // Random 16-mers of 2·10^5 positions almost never meet twice.
    assert!(repeated_positions(&plain) < len / 1000);
    let repeats = genome(len, 3, 0.3);
    let repeated = repeated_positions(&repeats);
    // The copies and their sources: at least the copied 30 %.
    assert!(repeated >= len * 3 / 10, "{repeated} repeated positions");
    assert!(repeated <= len * 7 / 10, "{repeated} repeated positions");
    // Base composition stays uniform.
    for base in b"ACGT" {
        let share = repeats.iter().filter(|b| *b == base).count() as f64 / len as f64;
        assert!(
            (0.23..0.27).contains(&share),
            "{} share {share}",
            *base as char
        );
    }
    assert_eq!(genome(0, 1, 0.5).len(), 0);
    assert_eq!(genome(5, 1, 1.0).len(), 5);
}

fn start_of(read: &Record) -> usize {
    read.id.rsplit('_').next().unwrap().parse().unwrap()
}

#[test]
fn reads_carry_the_asked_substitution_rate() {
    let g = genome(100_000, 5, 0.1);
    let rs = reads(&g, 4_000, 150, 0.01, 6);
    assert_eq!(rs, reads(&g, 4_000, 150, 0.01, 6));
    assert_ne!(rs, reads(&g, 4_000, 150, 0.01, 7));
    let mut mismatches = 0;
    for (i, r) in rs.iter().enumerate() {
        assert!(r.id.starts_with(&format!("r{i}_")));
        assert_eq!(r.seq.len(), 150);
        let start = start_of(r);
        mismatches += r
            .seq
            .iter()
            .zip(&g[start..start + 150])
            .filter(|(a, b)| a != b)
            .count();
        assert!(r.seq.iter().all(|b| b"ACGT".contains(b)));
    }
    let rate = mismatches as f64 / (4_000.0 * 150.0);
    assert!((0.009..0.011).contains(&rate), "substitution rate {rate}");
    for r in reads(&g, 500, 100, 0.0, 8) {
        let start = start_of(&r);
        assert_eq!(r.seq, &g[start..start + 100]);
    }
    // Reads cover the genome, ends included.
    let whole = reads(&g[..200], 2_000, 150, 0.0, 9);
    let starts: HashSet<usize> = whole.iter().map(start_of).collect();
    assert!(starts.contains(&0) && starts.contains(&50) && starts.len() == 51);
}

#[test]
fn a_community_classifies_its_own_reads() {
    let taxa = community(6, 50_000, 12);
    assert_eq!(taxa, community(6, 50_000, 12));
    // The reference database: k-mer -> taxon, shared k-mers unclassified.
    let mut database: HashMap<u32, u32> = HashMap::new();
    for (taxon, g) in &taxa {
        for key in kmers(g).filter_map(table_key) {
            let stored = database.entry(key).or_insert(*taxon);
            *stored = merge_taxa(*stored, *taxon);
        }
    }
    let shared = database.values().filter(|&&t| t == UNCLASSIFIED).count();
    assert!(shared < 10, "{shared} k-mers shared by independent genomes");
    let (mut right, mut total) = (0, 0);
    for (taxon, g) in &taxa {
        for r in reads(g, 200, 150, 0.01, *taxon as u64) {
            total += 1;
            right += usize::from(classify(&r.seq, |k| database.get(&k).copied()) == Some(*taxon));
        }
    }
    assert!(
        right * 100 >= total * 99,
        "{right} of {total} reads classified right"
    );
    // Reads of another community find votes only by chance (each of a read's 135
    // k-mers meets the 3·10^5 of the database with odds 3·10^5 / 4^16).
    let stranger = community(1, 50_000, 99);
    let labelled = reads(&stranger[0].1, 100, 150, 0.0, 1)
        .iter()
        .filter(|r| classify(&r.seq, |k| database.get(&k).copied()).is_some())
        .count();
    assert!(labelled <= 5, "{labelled} of 100 foreign reads labelled");
}

#[test]
fn classification_votes_and_ties() {
    let db: HashMap<u32, u32> = [(1, 5), (2, 5), (3, 6), (4, UNCLASSIFIED)].into();
    let read_of = |codes: &[u32]| -> Vec<u8> {
        // Codes 1..4 are A…AC, A…AG, A…AT, A…ACA: their k-mers spelled one by one,
        // separated by N so that no other window forms.
        codes
            .iter()
            .flat_map(|&c| [&decode(c)[..], b"N"].concat())
            .collect()
    };
    assert_eq!(
        classify(&read_of(&[1, 2, 3]), |k| db.get(&k).copied()),
        Some(5)
    );
    assert_eq!(classify(&read_of(&[1, 3]), |k| db.get(&k).copied()), None);
    assert_eq!(
        classify(&read_of(&[3, 4, 4]), |k| db.get(&k).copied()),
        Some(6)
    );
    assert_eq!(classify(&read_of(&[4]), |k| db.get(&k).copied()), None);
    assert_eq!(classify(b"", |k| db.get(&k).copied()), None);
}

/// A reader that reports the end of its input once, then has more.
struct Reopening {
    parts: Vec<&'static [u8]>,
}

impl Read for Reopening {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(part) = self.parts.first_mut() else {
            return Ok(0);
        };
        let n = part.len().min(buf.len());
        buf[..n].copy_from_slice(&part[..n]);
        *part = &part[n..];
        if n == 0 {
            self.parts.remove(0);
        }
        Ok(n)
    }
}

#[test]
fn the_records_end_at_the_first_end_of_input() {
    let mut records = read_records(Reopening {
        parts: vec![b">a\nAC\n", b"", b">b\nGG\n"],
    });
    assert_eq!(records.next().unwrap().unwrap().id, "a");
    assert!(records.next().is_none());
    assert!(
        records.next().is_none(),
        "the records went on after their end"
    );
}
