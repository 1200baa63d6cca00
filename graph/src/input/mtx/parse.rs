//! Lines, headers and fields of a Matrix Market file.

use std::io::{self, BufRead};

use super::{Field, MtxError};

/// The lines of a file, counted from 1, read into one reused buffer.
pub(super) struct Lines<R> {
    reader: R,
    text: String,
    /// The current line's number (0 before the first).
    pub(super) line: u64,
}

impl<R: BufRead> Lines<R> {
    /// Before the first line of `reader`.
    pub(super) fn new(reader: R) -> Lines<R> {
        Lines {
            reader,
            text: String::new(),
            line: 0,
        }
    }

    /// Moves to the next line (the next one that is neither blank nor a `%` comment when
    /// `data_only`); false at the end of the file, where `line` stays the last line's.
    pub(super) fn advance(&mut self, data_only: bool) -> Result<bool, MtxError> {
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
    pub(super) fn text(&self) -> &str {
        self.text.trim_end_matches(['\n', '\r'])
    }
}

/// The field and whether the matrix is symmetric, from the header line.
pub(super) fn parse_header(header: &str, line: u64) -> Result<(Field, bool), MtxError> {
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
pub(super) fn split<const N: usize>(text: &str, line: u64) -> Result<[&str; N], MtxError> {
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
pub(super) fn parse_index(token: &str, line: u64) -> Result<u64, MtxError> {
    token.parse().map_err(|_| bad_number(token, line))
}

/// `ROW COL[ VALUE]` of an entry line.
pub(super) fn parse_entry(
    text: &str,
    field: Field,
    line: u64,
) -> Result<(u64, u64, Option<u32>), MtxError> {
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
