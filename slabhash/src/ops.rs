//! Mixed batches: the operations of [`SlabHashMap::apply`](crate::SlabHashMap::apply)
//! and [`SlabHashSet::apply`](crate::SlabHashSet::apply), and their results.

use cudarc::driver::CudaSlice;
use gpuds_core::{DeviceType, Gpu};

use crate::error::Result;
use crate::keys::{SlabKey, SlabValue};

/// One operation of a mixed map batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapOp<K, V> {
    /// REPLACE (unique keys) or INSERT (duplicates allowed), as the map was made.
    Insert(K, V),
    /// DELETE: the key's least recent instance.
    Remove(K),
    /// SEARCH: the key's least recent instance.
    Get(K),
}

/// One operation of a mixed set batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SetOp<K> {
    /// Add the key.
    Insert(K),
    /// Remove the key.
    Remove(K),
    /// Look the key up.
    Contains(K),
}

/// What one operation of a mixed batch saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpResult<V> {
    /// The key was not there (an insert added it; a remove or get found nothing).
    Absent,
    /// The key was there with this value (an insert replaced it, a remove removed it, a
    /// get found it). Sets report `()`.
    Present(V),
    /// An INSERT into a map with duplicate keys added an instance (it does not look
    /// for earlier ones).
    Added,
}

impl<V: Copy> OpResult<V> {
    /// The value the operation saw, if any.
    ///
    /// ```
    /// use gpuds_slabhash::OpResult;
    /// assert_eq!(OpResult::Present(3u32).value(), Some(3));
    /// assert_eq!(OpResult::<u32>::Absent.value(), None);
    /// ```
    pub fn value(&self) -> Option<V> {
        match *self {
            OpResult::Present(v) => Some(v),
            _ => None,
        }
    }
}

/// A mixed batch copied to the device once, so that it can be applied (and timed)
/// without host copies: operation kinds, keys and (maps) values. Reserved keys are
/// rejected when it is made.
///
/// # Examples
/// ```no_run
/// use gpuds_slabhash::{DeviceBatch, MapOp, SlabHashMap};
/// # let gpu = gpuds_core::Gpu::new(0)?;
/// let mut map = SlabHashMap::<u32, u32>::new(&gpu, 10)?;
/// let batch = DeviceBatch::map(&gpu, &[MapOp::Insert(1, 10), MapOp::Get(1)])?;
/// let results = map.apply_batch(&batch)?;
/// assert_eq!(results.len(), 2);
/// # Ok::<(), gpuds_slabhash::Error>(())
/// ```
#[derive(Debug)]
pub struct DeviceBatch<K, V> {
    pub(crate) kinds: CudaSlice<u32>,
    pub(crate) keys: CudaSlice<K>,
    pub(crate) values: Option<CudaSlice<V>>,
    pub(crate) inserts: usize,
    len: usize,
}

impl<K: SlabKey, V: SlabValue> DeviceBatch<K, V> {
    /// A map batch. Fails with [`Error::ReservedKey`](crate::Error::ReservedKey).
    pub fn map(gpu: &Gpu, ops: &[MapOp<K, V>]) -> Result<Self> {
        let mut kinds = Vec::with_capacity(ops.len());
        let mut keys = Vec::with_capacity(ops.len());
        let mut values = Vec::with_capacity(ops.len());
        for op in ops {
            let (kind, key, value) = match *op {
                MapOp::Insert(k, v) => (KIND_INSERT, k, v),
                MapOp::Remove(k) => (KIND_REMOVE, k, V::from_u64(0)),
                MapOp::Get(k) => (KIND_GET, k, V::from_u64(0)),
            };
            kinds.push(kind);
            keys.push(key);
            values.push(value);
        }
        Self::upload(gpu, &kinds, &keys, Some(&values))
    }
}

impl<K: SlabKey> DeviceBatch<K, u32> {
    /// A set batch. Fails with [`Error::ReservedKey`](crate::Error::ReservedKey).
    pub fn set(gpu: &Gpu, ops: &[SetOp<K>]) -> Result<Self> {
        let (kinds, keys): (Vec<u32>, Vec<K>) = ops
            .iter()
            .map(|op| match *op {
                SetOp::Insert(k) => (KIND_INSERT, k),
                SetOp::Remove(k) => (KIND_REMOVE, k),
                SetOp::Contains(k) => (KIND_GET, k),
            })
            .unzip();
        Self::upload(gpu, &kinds, &keys, None)
    }
}

impl<K: SlabKey, V: DeviceType> DeviceBatch<K, V> {
    fn upload(gpu: &Gpu, kinds: &[u32], keys: &[K], values: Option<&[V]>) -> Result<Self> {
        crate::table::check_host_keys(keys)?;
        let stream = gpu.stream();
        // One element at least: the device slices are never empty.
        let pad = |n: usize| n.max(1);
        let mut k = stream.alloc_zeros::<u32>(pad(kinds.len()))?;
        let mut key = stream.alloc_zeros::<K>(pad(keys.len()))?;
        if !kinds.is_empty() {
            stream.memcpy_htod(kinds, &mut k)?;
            stream.memcpy_htod(keys, &mut key)?;
        }
        let values = match values {
            Some(v) => {
                let mut d = stream.alloc_zeros::<V>(pad(v.len()))?;
                if !v.is_empty() {
                    stream.memcpy_htod(v, &mut d)?;
                }
                Some(d)
            }
            None => None,
        };
        Ok(Self {
            kinds: k,
            keys: key,
            values,
            inserts: kinds.iter().filter(|&&k| k == KIND_INSERT).count(),
            len: kinds.len(),
        })
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` for an empty batch.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The results of a [`DeviceBatch`], on the device until [`to_host`](Self::to_host).
#[derive(Debug)]
pub struct BatchResults<V> {
    pub(crate) outcomes: CudaSlice<u32>,
    pub(crate) seen: Option<CudaSlice<V>>,
    pub(crate) len: usize,
}

impl<V: DeviceType> BatchResults<V> {
    /// Number of results.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` for an empty batch.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// What each operation saw (sets: `Present(0)` for present keys). Synchronizes.
    pub fn to_host(&self) -> Result<Vec<OpResult<V>>> {
        let stream = self.outcomes.stream();
        let outcomes = stream.clone_dtoh(&self.outcomes)?;
        let seen = match &self.seen {
            Some(s) => stream.clone_dtoh(s)?,
            None => vec![V::from_u64(0); outcomes.len()],
        };
        Ok(outcomes
            .into_iter()
            .zip(seen)
            .take(self.len)
            .map(|(o, v)| crate::table::op_result(o, v))
            .collect())
    }
}

/// Operation codes of the apply kernel.
pub(crate) const KIND_INSERT: u32 = 0;
pub(crate) const KIND_REMOVE: u32 = 1;
pub(crate) const KIND_GET: u32 = 2;

/// Per-request outcomes written by the kernels (`gpuds/slabhash/slab.cuh`).
pub(crate) const OP_PRESENT: u32 = 1;
pub(crate) const OP_ADDED: u32 = 3;

/// The result of SEARCHALL over a batch of keys: key `i`'s values are
/// `values[offsets[i]..offsets[i] + counts[i]]`, least recent first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MultiValues<V> {
    /// Instances of each key.
    pub counts: Vec<u32>,
    /// Where each key's values start.
    pub offsets: Vec<u32>,
    /// All values, key after key.
    pub values: Vec<V>,
}

impl<V> MultiValues<V> {
    /// The values of the batch's `i`-th key.
    ///
    /// ```
    /// let m = gpuds_slabhash::MultiValues { counts: vec![2, 0], offsets: vec![0, 2], values: vec![7u32, 8] };
    /// assert_eq!(m.get(0), &[7, 8]);
    /// assert!(m.get(1).is_empty());
    /// ```
    pub fn get(&self, i: usize) -> &[V] {
        let start = self.offsets[i] as usize;
        &self.values[start..start + self.counts[i] as usize]
    }
}
