//! What a GPU reported for one operation, and why a batch was rejected.

use std::fmt;

/// What the GPU reported for one operation: as much of its observation (the key's value
/// just before it, see [`Op`](crate::Op)) as the structure's API returns.
///
/// # Examples
/// ```
/// use gpuds_testkit::check::Reply;
/// assert!(Reply::<u32>::Unknown.admits(Some(3)));
/// assert!(Reply::<u32>::Found(true).admits(Some(3)));
/// assert!(!Reply::<u32>::Found(true).admits(None));
/// assert!(Reply::Value(Some(3u32)).admits(Some(3)));
/// assert_eq!(Reply::from(Some(3u32)), Reply::Value(Some(3)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reply<V> {
    /// Nothing reported (an insert or remove that returns no result): only the final
    /// state constrains the operation.
    Unknown,
    /// Whether the key was present before the operation (a get's hit flag, an insert's
    /// "replaced", a remove's "removed").
    Found(bool),
    /// The value before the operation (`None`: absent).
    Value(Option<V>),
}

impl<V: PartialEq> Reply<V> {
    /// `true` when an operation that observed `seen` could have given this reply.
    pub fn admits(&self, seen: Option<V>) -> bool {
        match self {
            Reply::Unknown => true,
            Reply::Found(found) => *found == seen.is_some(),
            Reply::Value(v) => *v == seen,
        }
    }
}

impl<V> From<Option<V>> for Reply<V> {
    fn from(value: Option<V>) -> Self {
        Reply::Value(value)
    }
}

/// Why a batch's results were rejected: the key, its operations (batch index, operation,
/// reply), its initial and final state as the GPU gave them, and the reason.
///
/// Its `Display` is a self-contained report for a test failure message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch<K> {
    /// The key whose operations no serial order explains.
    pub key: K,
    /// The key's operations as `"#index op -> reply"`, in batch order.
    pub ops: Vec<String>,
    /// The key's state before the batch.
    pub initial: String,
    /// The key's state after the batch, as the GPU gave it.
    pub final_state: String,
    /// What could not be explained.
    pub reason: String,
}

impl<K: fmt::Debug> fmt::Display for Mismatch<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "key {:?}: {}\n  initial: {}\n  final:   {}\n  {} op(s):",
            self.key,
            self.reason,
            self.initial,
            self.final_state,
            self.ops.len()
        )?;
        const SHOWN: usize = 40;
        for op in self.ops.iter().take(SHOWN) {
            write!(f, "\n    {op}")?;
        }
        if self.ops.len() > SHOWN {
            write!(f, "\n    ... {} more", self.ops.len() - SHOWN)?;
        }
        Ok(())
    }
}

impl<K: fmt::Debug> std::error::Error for Mismatch<K> {}

/// How a whole batch was accepted: keys checked, and how many of them were decided
/// exactly (a closed form or an exhaustive search) or only by necessary conditions
/// (keys whose operations were too many for the search budget).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Keys with at least one operation in the batch, or whose state changed.
    pub keys: usize,
    /// Keys decided exactly.
    pub exact: usize,
    /// Keys accepted on necessary conditions only (see [`check`](crate::check)).
    pub relaxed: usize,
}
