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

use crate::input::Coo;

mod error;
mod parse;

pub use error::MtxError;
use parse::{parse_entry, parse_header, parse_index, split, Lines};

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
    let mut lines = Lines::new(reader);
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
