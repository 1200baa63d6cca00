//! Matrix Market files (the `.mtx` format of the SuiteSparse collection): reading a
//! graph from a `coordinate` matrix and writing one back.
//!
//! A file is a header line `%%MatrixMarket matrix coordinate FIELD SYMMETRY`, comment
//! lines starting with `%`, a size line `ROWS COLS ENTRIES`, then one line per entry:
//! `ROW COL` for the `pattern` field, `ROW COL VALUE` for `integer` and `real`, with
//! 1-based indices. `general` lists every directed entry; `symmetric` lists each
//! off-diagonal pair once (the lower triangle, by the format's rule).
//!
//! A read graph has `max(ROWS, COLS)` vertices, 0-based ids, `src` the row and `dst` the
//! column of each entry in file order, and `symmetric: true` for a symmetric file.
//! Values are `u32`: an `integer` value as is (a negative one as its 32-bit two's
//! complement), a `real` one as the bits of the nearest `f32` (`f32::from_bits` gives it
//! back). Any malformed input is an error naming the line; reading never panics.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;

use thiserror::Error;

use crate::input::Coo;

/// The value type of a Matrix Market file's entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// No values: each entry is `ROW COL`.
    Pattern,
    /// Integer values.
    Integer,
    /// Real values (stored as `f32` bits).
    Real,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Pattern => "pattern",
            Field::Integer => "integer",
            Field::Real => "real",
        })
    }
}

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

/// Reads a graph from a Matrix Market file (see the [module documentation](self)).
///
/// # Examples
///
/// ```
/// use gpuds_graph::input::mtx;
///
/// let text = "%%MatrixMarket matrix coordinate pattern symmetric\n\
///             % a triangle\n\
///             3 3 3\n2 1\n3 1\n3 2\n";
/// let coo = mtx::read(text.as_bytes())?;
/// assert_eq!((coo.num_vertices, coo.symmetric), (3, true));
/// assert_eq!((coo.src, coo.dst), (vec![1, 2, 2], vec![0, 0, 1]));
///
/// let err = mtx::read("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n0 1\n".as_bytes());
/// assert_eq!(err.unwrap_err().to_string(), "line 3: index 0 (Matrix Market indices start at 1)");
/// # Ok::<(), mtx::MtxError>(())
/// ```
pub fn read(reader: impl BufRead) -> Result<Coo, MtxError> {
    let mut lines = Lines {
        reader,
        text: String::new(),
        line: 0,
    };
    let has_header = lines.advance(false)?;
    let line = lines.line;
    let (field, symmetric) = parse_header(if has_header { lines.text() } else { "" }, line.max(1))?;
    let has_size = lines.advance(true)?;
    let size = split::<3>(if has_size { lines.text() } else { "" }, lines.line)?;
    let [rows, cols, declared] = size.map(|token| parse_index(token, lines.line));
    let (rows, cols, declared) = (rows?, cols?, declared?);
    if let Some(size) = [rows, cols].into_iter().find(|&d| d > u64::from(u32::MAX)) {
        return Err(MtxError::TooManyVertices {
            line: lines.line,
            size,
        });
    }
    // Bounded so that a lying size line cannot make us reserve without limit.
    let capacity = declared.min(1 << 20) as usize;
    let mut coo = Coo {
        num_vertices: rows.max(cols) as u32,
        src: Vec::with_capacity(capacity),
        dst: Vec::with_capacity(capacity),
        values: (field != Field::Pattern).then(|| Vec::with_capacity(capacity)),
        symmetric,
    };
    let mut found = 0u64;
    while lines.advance(true)? {
        let line = lines.line;
        if found == declared {
            return Err(MtxError::WrongEntryCount {
                line,
                declared,
                found: found + 1,
            });
        }
        let (row, col, value) = parse_entry(lines.text(), field, line)?;
        for (index, size) in [(row, rows), (col, cols)] {
            match index {
                0 => return Err(MtxError::ZeroIndex { line }),
                i if i > size => return Err(MtxError::IndexBeyondSize { line, index, size }),
                _ => {}
            }
        }
        coo.src.push((row - 1) as u32);
        coo.dst.push((col - 1) as u32);
        if let (Some(values), Some(value)) = (coo.values.as_mut(), value) {
            values.push(value);
        }
        found += 1;
    }
    if found != declared {
        return Err(MtxError::WrongEntryCount {
            line: lines.line,
            declared,
            found,
        });
    }
    Ok(coo)
}

/// [`read`] from the file at `path`.
///
/// # Examples
///
/// ```no_run
/// use gpuds_graph::input::mtx;
///
/// let coo = mtx::read_path("road_usa.mtx")?;
/// println!("{} vertices, {} entries", coo.num_vertices, coo.len());
/// # Ok::<(), mtx::MtxError>(())
/// ```
pub fn read_path(path: impl AsRef<Path>) -> Result<Coo, MtxError> {
    let file = File::open(path).map_err(|source| MtxError::Io { line: 0, source })?;
    read(BufReader::with_capacity(1 << 20, file))
}

/// Writes `coo` as a Matrix Market file with the given field: `pattern` writes no
/// values, `integer` writes each value as an unsigned integer and `real` as the `f32`
/// whose bits it holds (the shortest form that reads back to the same bits; a NaN reads
/// back as a NaN, its payload lost). A symmetric graph is written `symmetric`, each
/// entry as `(max, min)`, the lower triangle the format asks for; reading it back then
/// gives each edge reversed where `src < dst`. The size line declares `num_vertices`
/// rows and columns, or more to cover every id listed (a [`Coo::check`]ed graph reads
/// back with the same vertex count). The writer is buffered here.
///
/// # Errors
///
/// The writer's errors, and `InvalidInput` for an `integer` or `real` field on a graph
/// without values.
///
/// # Examples
///
/// ```
/// use gpuds_graph::input::{mtx, Coo};
///
/// let mut coo = Coo::from_pairs(3, &[(0, 1), (2, 0)], false);
/// coo.values = Some(vec![5, 7]);
/// let mut file = Vec::new();
/// mtx::write(&mut file, &coo, mtx::Field::Integer)?;
/// assert_eq!(
///     String::from_utf8(file.clone()).unwrap(),
///     "%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 5\n3 1 7\n"
/// );
/// assert_eq!(mtx::read(file.as_slice()).unwrap(), coo);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write(writer: impl Write, coo: &Coo, field: Field) -> io::Result<()> {
    let mut writer = io::BufWriter::new(writer);
    let values = match field {
        Field::Pattern => None,
        _ => Some(coo.values.as_deref().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a {field} file needs values"),
            )
        })?),
    };
    let symmetry = if coo.symmetric {
        "symmetric"
    } else {
        "general"
    };
    writeln!(
        writer,
        "%%MatrixMarket matrix coordinate {field} {symmetry}"
    )?;
    let entries = coo
        .src
        .len()
        .min(coo.dst.len())
        .min(values.map_or(usize::MAX, <[u32]>::len));
    writeln!(writer, "{0} {0} {1}", coo.vertex_bound(), entries)?;
    for i in 0..entries {
        let (s, d) = (u64::from(coo.src[i]) + 1, u64::from(coo.dst[i]) + 1);
        let (row, col) = if coo.symmetric {
            (s.max(d), s.min(d))
        } else {
            (s, d)
        };
        match (field, values) {
            (Field::Integer, Some(v)) => writeln!(writer, "{row} {col} {}", v[i])?,
            (Field::Real, Some(v)) => writeln!(writer, "{row} {col} {:?}", f32::from_bits(v[i]))?,
            _ => writeln!(writer, "{row} {col}")?,
        }
    }
    writer.flush()
}

/// The lines of a file, counted from 1, read into one reused buffer.
struct Lines<R> {
    reader: R,
    text: String,
    line: u64,
}

impl<R: BufRead> Lines<R> {
    /// Moves to the next line (the next one that is neither blank nor a `%` comment when
    /// `data_only`); false at the end of the file, where `line` stays the last line's.
    fn advance(&mut self, data_only: bool) -> Result<bool, MtxError> {
        loop {
            let mut buf = std::mem::take(&mut self.text).into_bytes();
            buf.clear();
            let read = self.reader.read_until(b'\n', &mut buf);
            let line = self.line + 1;
            let io_error = |source| MtxError::Io { line, source };
            if read.map_err(io_error)? == 0 {
                return Ok(false);
            }
            self.line = line;
            self.text = String::from_utf8(buf).map_err(|e| {
                io_error(io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()))
            })?;
            let trimmed = self.text.trim_start();
            if !data_only || !(trimmed.is_empty() || trimmed.starts_with('%')) {
                return Ok(true);
            }
        }
    }

    /// The current line without its line ending.
    fn text(&self) -> &str {
        self.text.trim_end_matches(['\n', '\r'])
    }
}

/// The field and whether the matrix is symmetric, from the header line.
fn parse_header(header: &str, line: u64) -> Result<(Field, bool), MtxError> {
    let bad = |reason: String| MtxError::BadHeader { line, reason };
    let words: Vec<String> = header
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    let word = |i: usize| words.get(i).map_or("", String::as_str);
    if word(0) != "%%matrixmarket" {
        return Err(bad("the file does not start with `%%MatrixMarket`".into()));
    }
    if word(1) != "matrix" {
        return Err(bad(format!("object `{}` is not `matrix`", word(1))));
    }
    match word(2) {
        "coordinate" => {}
        "array" => {
            return Err(MtxError::NotCoordinate {
                line,
                format: word(2).into(),
            })
        }
        other => return Err(bad(format!("unknown format `{other}`"))),
    }
    let field = match word(3) {
        "pattern" => Field::Pattern,
        "integer" => Field::Integer,
        "real" | "double" => Field::Real,
        other => {
            return Err(bad(format!(
                "field `{other}` is not pattern, integer or real"
            )))
        }
    };
    let symmetric = match word(4) {
        "general" => false,
        "symmetric" => true,
        other => {
            return Err(bad(format!(
                "symmetry `{other}` is not general or symmetric"
            )))
        }
    };
    if words.len() > 5 {
        return Err(bad(format!("unexpected `{}` after the symmetry", word(5))));
    }
    Ok((field, symmetric))
}

/// The `N` whitespace-separated fields of `text`, which must have exactly `N`.
fn split<const N: usize>(text: &str, line: u64) -> Result<[&str; N], MtxError> {
    let mut tokens = [""; N];
    let mut found = 0;
    for token in text.split_whitespace() {
        if let Some(slot) = tokens.get_mut(found) {
            *slot = token;
        }
        found += 1;
    }
    match found == N {
        true => Ok(tokens),
        false => Err(MtxError::WrongFieldCount {
            line,
            expected: N,
            found,
        }),
    }
}

/// An unsigned integer field (an index or a size).
fn parse_index(token: &str, line: u64) -> Result<u64, MtxError> {
    token.parse().map_err(|_| bad_number(token, line))
}

/// `ROW COL[ VALUE]` of an entry line.
fn parse_entry(text: &str, field: Field, line: u64) -> Result<(u64, u64, Option<u32>), MtxError> {
    let (row, col, value) = match field {
        Field::Pattern => {
            let [row, col] = split::<2>(text, line)?;
            (row, col, None)
        }
        _ => {
            let [row, col, value] = split::<3>(text, line)?;
            (row, col, Some(value))
        }
    };
    let (row, col) = (parse_index(row, line)?, parse_index(col, line)?);
    let Some(token) = value else {
        return Ok((row, col, None));
    };
    let value = match field {
        Field::Integer => token.parse::<i64>().ok().and_then(|v| {
            u32::try_from(v)
                .ok()
                .or_else(|| i32::try_from(v).ok().map(|v| v as u32))
        }),
        _ => token.parse::<f32>().ok().map(f32::to_bits),
    };
    Ok((
        row,
        col,
        Some(value.ok_or_else(|| bad_number(token, line))?),
    ))
}

/// A [`MtxError::BadNumber`] quoting (the start of) `token`.
fn bad_number(token: &str, line: u64) -> MtxError {
    MtxError::BadNumber {
        line,
        token: token.chars().take(40).collect(),
    }
}
