//! FASTA and FASTQ records from plain or gzip-compressed input.
//!
//! The format is told by the first non-blank line (`>` FASTA, `@` FASTQ), the
//! compression by the gzip magic bytes `1f 8b` (concatenated gzip members, as `bgzip`
//! writes, are read as one stream). Every problem is an error naming the record (its
//! number, from 1) and the line (from 1, counted in the decompressed text); after an
//! error the iterator ends. No input makes the reader panic.

use std::io::{self, BufRead, BufReader, Cursor, Read};

use flate2::read::MultiGzDecoder;

/// One sequence record.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Record {
    /// The header line after `>` or `@` (the description included; bytes that are not
    /// UTF-8 replaced by U+FFFD).
    pub id: String,
    /// The sequence as written (line breaks removed; case and letters other than
    /// `ACGT` kept: [`kmers`](super::kmers) skips what it cannot encode).
    pub seq: Vec<u8>,
}

/// A record is its sequence, for functions that take reads of any kind
/// ([`device_table_keys`](super::device_table_keys)).
impl AsRef<[u8]> for Record {
    fn as_ref(&self) -> &[u8] {
        &self.seq
    }
}

/// What went wrong reading FASTA or FASTQ. `record` counts records from 1, `line`
/// counts lines of the (decompressed) text from 1.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SeqError {
    /// A record does not start with its format's header marker.
    #[error(
        "record {record}, line {line}: expected a header starting with {expected}, found {found:?}"
    )]
    MissingHeader {
        /// The record that should start here.
        record: u64,
        /// The offending line.
        line: u64,
        /// What was expected (`'>'`, `'@'`, or either for the first record).
        expected: &'static str,
        /// The start of the line found instead.
        found: String,
    },
    /// A sequence line holds a byte that is not a letter, `*` or `-`.
    #[error("record {record}, line {line}, column {column}: invalid sequence byte {byte:#04x}")]
    InvalidBase {
        /// The record.
        record: u64,
        /// The line.
        line: u64,
        /// The byte's column, from 1.
        column: usize,
        /// The byte.
        byte: u8,
    },
    /// The third line of a FASTQ record does not start with `+` (records spread over
    /// more than four lines are not supported).
    #[error("record {record}, line {line}: expected the FASTQ separator line starting with '+'")]
    MissingPlus {
        /// The record.
        record: u64,
        /// The line that should have been the separator.
        line: u64,
    },
    /// A FASTQ quality line is not as long as its sequence.
    #[error("record {record}, line {line}: {quality} quality scores for {bases} bases")]
    QualityLength {
        /// The record.
        record: u64,
        /// The quality line.
        line: u64,
        /// The sequence's length.
        bases: usize,
        /// The quality line's length.
        quality: usize,
    },
    /// A FASTQ quality byte outside `!`..=`~`.
    #[error("record {record}, line {line}, column {column}: invalid quality byte {byte:#04x}")]
    InvalidQuality {
        /// The record.
        record: u64,
        /// The quality line.
        line: u64,
        /// The byte's column, from 1.
        column: usize,
        /// The byte.
        byte: u8,
    },
    /// The input ends inside a record (a FASTQ record short of its four lines, or a
    /// gzip stream cut short).
    #[error("record {record}: the input ends inside the record, after line {line}")]
    Truncated {
        /// The record.
        record: u64,
        /// The last line read.
        line: u64,
    },
    /// The gzip stream is corrupt.
    #[error("record {record}, line {line}: invalid gzip data: {source}")]
    InvalidGzip {
        /// The record being read.
        record: u64,
        /// The line being read.
        line: u64,
        /// The decoder's error.
        source: io::Error,
    },
    /// Reading the input failed.
    #[error("record {record}, line {line}: read error: {source}")]
    Io {
        /// The record being read.
        record: u64,
        /// The line being read.
        line: u64,
        /// The reader's error.
        source: io::Error,
    },
}

/// The records of FASTA or FASTQ text in `input`, plain or gzip-compressed (told by
/// the magic bytes). Empty input has no records.
///
/// ```
/// use gpuds_oversub::kmer::{read_records, Record, SeqError};
/// let text = b">chr1 first\nACGT\nacgt\n>chr2\nNNAC\n";
/// let records: Vec<Record> = read_records(&text[..]).collect::<Result<_, _>>()?;
/// assert_eq!(records[0].id, "chr1 first");
/// assert_eq!(records[0].seq, b"ACGTacgt");
/// assert_eq!(records[1].seq, b"NNAC");
///
/// let bad = b"@read1\nACGT\n+\nIII\n";
/// let err = read_records(&bad[..]).next().unwrap().unwrap_err();
/// assert!(matches!(err, SeqError::QualityLength { record: 1, line: 4, bases: 4, quality: 3 }));
/// # Ok::<(), SeqError>(())
/// ```
pub fn read_records<'a, R: Read + 'a>(mut input: R) -> Records<'a> {
    let mut magic = [0u8; 2];
    let mut have = 0;
    let mut failed = None;
    while have < magic.len() {
        match input.read(&mut magic[have..]) {
            Ok(0) => break,
            Ok(n) => have += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(source) => {
                failed = Some(SeqError::Io {
                    record: 1,
                    line: 1,
                    source,
                });
                break;
            }
        }
    }
    let whole = Cursor::new(magic[..have].to_vec()).chain(input);
    let gzip = have == 2 && magic == [0x1f, 0x8b];
    let source: Box<dyn BufRead + 'a> = if gzip {
        Box::new(BufReader::new(MultiGzDecoder::new(whole)))
    } else {
        Box::new(BufReader::new(whole))
    };
    Records {
        source,
        gzip,
        failed,
        done: false,
        format: None,
        peeked: None,
        line: 0,
        record: 0,
    }
}

/// The iterator of [`read_records`].
pub struct Records<'a> {
    source: Box<dyn BufRead + 'a>,
    gzip: bool,
    /// An error met before the first record, reported first.
    failed: Option<SeqError>,
    done: bool,
    format: Option<Format>,
    /// A line read ahead (the header that ended a FASTA record).
    peeked: Option<Vec<u8>>,
    /// Lines read so far.
    line: u64,
    /// Records started so far.
    record: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Fasta,
    Fastq,
}

impl std::fmt::Debug for Records<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("gzip", &self.gzip)
            .field("format", &self.format)
            .field("line", &self.line)
            .field("record", &self.record)
            .finish_non_exhaustive()
    }
}

impl Iterator for Records<'_> {
    type Item = Result<Record, SeqError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = match self.failed.take() {
            Some(e) => Err(e),
            None => self.read_record(),
        };
        // The end of the input and the first error both end the records.
        self.done = !matches!(next, Ok(Some(_)));
        next.transpose()
    }
}

impl std::iter::FusedIterator for Records<'_> {}

impl Records<'_> {
    /// The next line without its line ending, `None` at the end of the input.
    fn next_line(&mut self) -> Result<Option<Vec<u8>>, SeqError> {
        if let Some(line) = self.peeked.take() {
            return Ok(Some(line));
        }
        let mut line = Vec::new();
        match self.source.read_until(b'\n', &mut line) {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(source) => return Err(self.read_error(source)),
        }
        self.line += 1;
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Ok(Some(line))
    }

    /// A failed read: a corrupt or cut gzip stream, or the reader's own error.
    fn read_error(&self, source: io::Error) -> SeqError {
        let (record, line) = (self.record, self.line + 1);
        match source.kind() {
            io::ErrorKind::UnexpectedEof if self.gzip => SeqError::Truncated {
                record,
                line: self.line,
            },
            io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData if self.gzip => {
                SeqError::InvalidGzip {
                    record,
                    line,
                    source,
                }
            }
            _ => SeqError::Io {
                record,
                line,
                source,
            },
        }
    }

    /// The next non-blank line, `None` at the end of the input.
    fn next_content_line(&mut self) -> Result<Option<Vec<u8>>, SeqError> {
        while let Some(line) = self.next_line()? {
            if !line.iter().all(u8::is_ascii_whitespace) {
                return Ok(Some(line));
            }
        }
        Ok(None)
    }

    /// A line that must be there: the end of the input is a truncated record.
    fn required_line(&mut self) -> Result<Vec<u8>, SeqError> {
        self.next_line()?.ok_or(SeqError::Truncated {
            record: self.record,
            line: self.line,
        })
    }

    fn read_record(&mut self) -> Result<Option<Record>, SeqError> {
        // Counted before the header is read, so that a read error names this record.
        self.record += 1;
        let Some(header) = self.next_content_line()? else {
            self.record -= 1;
            return Ok(None);
        };
        let format = match (self.format, header.first()) {
            (None | Some(Format::Fasta), Some(b'>')) => Format::Fasta,
            (None | Some(Format::Fastq), Some(b'@')) => Format::Fastq,
            (format, _) => {
                return Err(SeqError::MissingHeader {
                    record: self.record,
                    line: self.line,
                    expected: match format {
                        None => "'>' or '@'",
                        Some(Format::Fasta) => "'>'",
                        Some(Format::Fastq) => "'@'",
                    },
                    found: String::from_utf8_lossy(&header[..header.len().min(40)]).into_owned(),
                })
            }
        };
        self.format = Some(format);
        let id = String::from_utf8_lossy(&header[1..]).into_owned();
        let seq = match format {
            Format::Fasta => self.fasta_sequence()?,
            Format::Fastq => self.fastq_sequence()?,
        };
        Ok(Some(Record { id, seq }))
    }

    /// The sequence lines up to the next header or the end of the input.
    fn fasta_sequence(&mut self) -> Result<Vec<u8>, SeqError> {
        let mut seq = Vec::new();
        while let Some(line) = self.next_line()? {
            if line.first() == Some(&b'>') {
                self.peeked = Some(line);
                break;
            }
            self.append_bases(&mut seq, &line)?;
        }
        Ok(seq)
    }

    /// The sequence, separator and quality lines of a FASTQ record.
    fn fastq_sequence(&mut self) -> Result<Vec<u8>, SeqError> {
        let mut seq = Vec::new();
        let line = self.required_line()?;
        self.append_bases(&mut seq, &line)?;
        let plus = self.required_line()?;
        if plus.first() != Some(&b'+') {
            return Err(SeqError::MissingPlus {
                record: self.record,
                line: self.line,
            });
        }
        // A record with an empty sequence may end the input without its empty quality
        // line.
        let quality = match self.next_line()? {
            Some(quality) => quality,
            None if seq.is_empty() => Vec::new(),
            None => {
                return Err(SeqError::Truncated {
                    record: self.record,
                    line: self.line,
                })
            }
        };
        if quality.len() != seq.len() {
            return Err(SeqError::QualityLength {
                record: self.record,
                line: self.line,
                bases: seq.len(),
                quality: quality.len(),
            });
        }
        if let Some(i) = quality.iter().position(|q| !(b'!'..=b'~').contains(q)) {
            return Err(SeqError::InvalidQuality {
                record: self.record,
                line: self.line,
                column: i + 1,
                byte: quality[i],
            });
        }
        Ok(seq)
    }

    /// Appends a sequence line's bases (letters, `*`, `-`; blanks and tabs ignored).
    fn append_bases(&self, seq: &mut Vec<u8>, line: &[u8]) -> Result<(), SeqError> {
        for (i, &b) in line.iter().enumerate() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'*' | b'-' => seq.push(b),
                b' ' | b'\t' => {}
                _ => {
                    return Err(SeqError::InvalidBase {
                        record: self.record,
                        line: self.line,
                        column: i + 1,
                        byte: b,
                    })
                }
            }
        }
        Ok(())
    }
}
