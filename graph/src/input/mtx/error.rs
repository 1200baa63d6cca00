//! `MtxError`: why a Matrix Market file could not be read.

use std::io;

use thiserror::Error;

/// Why a Matrix Market file could not be read; every case names the 1-based line.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum MtxError {
    /// The first line is not a `%%MatrixMarket matrix coordinate FIELD SYMMETRY` header
    /// this reader supports (the reason says which word is wrong).
    #[error("line {line}: bad header: {reason}")]
    BadHeader {
        /// The line number.
        line: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The header names the dense `array` format, which holds no graph.
    #[error("line {line}: the matrix is not in coordinate format (found `{format}`)")]
    NotCoordinate {
        /// The line number.
        line: u64,
        /// The format word found.
        format: String,
    },
    /// A size or entry line has the wrong number of fields (or the file ends before the
    /// size line: 0 fields found).
    #[error("line {line}: expected {expected} fields, found {found}")]
    WrongFieldCount {
        /// The line number.
        line: u64,
        /// The number of fields the line needs.
        expected: usize,
        /// The number it has.
        found: usize,
    },
    /// A field is not a number of the expected kind, or it is out of range.
    #[error("line {line}: bad number `{token}`")]
    BadNumber {
        /// The line number.
        line: u64,
        /// The field (its first 40 characters).
        token: String,
    },
    /// An entry's index is 0 (indices are 1-based).
    #[error("line {line}: index 0 (Matrix Market indices start at 1)")]
    ZeroIndex {
        /// The line number.
        line: u64,
    },
    /// An entry's index is beyond the size the size line declared.
    #[error("line {line}: index {index} is beyond the declared size {size}")]
    IndexBeyondSize {
        /// The line number.
        line: u64,
        /// The 1-based index found.
        index: u64,
        /// The declared number of rows or columns.
        size: u64,
    },
    /// The matrix has more rows or columns than `u32` vertex ids can number.
    #[error("line {line}: size {size} does not fit in 32-bit vertex ids")]
    TooManyVertices {
        /// The line number.
        line: u64,
        /// The declared size.
        size: u64,
    },
    /// The file lists more entries than declared (at the first extra one), or fewer (at
    /// the end of the file).
    #[error("line {line}: the size line declares {declared} entries, the file has {found}")]
    WrongEntryCount {
        /// The line number.
        line: u64,
        /// The declared number of entries.
        declared: u64,
        /// The number found (so far, for too many).
        found: u64,
    },
    /// Reading failed, or a line is not UTF-8; line 0 is opening the file.
    #[error("line {line}: I/O error: {source}")]
    Io {
        /// The line number.
        line: u64,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}
