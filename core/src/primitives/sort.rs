//! LSD radix sort of keys and of (key, value) pairs, onesweep style.
//!
//! One histogram kernel counts the digits of all passes in one read of the keys; then
//! one kernel per 8-bit digit moves every key once, chaining its tiles by decoupled
//! look-back (see `core/cuda/kernels/radix_sort.cu`). Passes alternate between the
//! caller's buffers and the sorter's own, so an odd number of passes ends with a copy.

use std::collections::HashMap;

use cudarc::driver::{CudaSlice, DeviceRepr, PushKernelArg, ValidAsZeroBits};

use super::{grow, tile_launch, Element};
use crate::compile::{Kernel, Program};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::keys::{DeviceKey, DeviceValue};

const SOURCE: &str = include_str!("../../cuda/kernels/radix_sort.cu");

/// Threads per block of the pass kernel; at least one per digit.
const SORT_BLOCK: u32 = 512;
/// Threads per block of the histogram kernel.
const HIST_BLOCK: u32 = 256;
/// Bits per pass, and the most passes of any key type (u64).
const RADIX_BITS: u32 = 8;
const RADIX: usize = 1 << RADIX_BITS;
const MAX_PASSES: usize = 8;
/// The longest input of the 32-bit module, whose look-back word keeps a 2-bit state
/// beside a 30-bit count; longer inputs take the module of 64-bit counts.
const NARROW_MAX_LEN: usize = (1 << 30) - 1;

/// Keys per thread of the pass kernel: as many as fit the 48 KiB of static shared
/// memory (the tile is staged there in digit order) and 64 registers per thread (two
/// blocks of 512 threads per SM, as the kernel's launch bounds ask).
fn items_per_thread(key: Element, value: Option<Element>) -> u32 {
    match (key.size, value.map(|v| v.size)) {
        (4, None) => 15,
        (4, Some(4)) => 12,
        _ => 8,
    }
}

/// The sort module for one key type and, for pairs, one value type, with 32-bit counts
/// (inputs up to 2^30 - 1) or, `wide`, 64-bit counts (any length).
pub(super) fn program(key: Element, value: Option<Element>, wide: bool) -> Program {
    let name = module_suffix(key, value, wide);
    let program = Program::new(format!("radix_sort_{name}"), SOURCE)
        .define("KEY_T", key.cuda)
        .define("KERNEL_SUFFIX", name)
        .define("SORT_WIDE", u32::from(wide))
        .define("HAS_VALUES", u32::from(value.is_some()))
        .define("SORT_BLOCK", SORT_BLOCK)
        .define("SORT_ITEMS", items_per_thread(key, value))
        .define("HIST_BLOCK", HIST_BLOCK);
    match value {
        Some(v) => program.define("VALUE_T", v.cuda),
        None => program,
    }
}

fn suffix(key: Element, value: Option<Element>) -> String {
    match value {
        Some(v) => format!("{}_{}", key.suffix, v.suffix),
        None => key.suffix.to_string(),
    }
}

/// The kernel-name suffix of a module: the types, and `_wide` for 64-bit counts.
fn module_suffix(key: Element, value: Option<Element>, wide: bool) -> String {
    let name = suffix(key, value);
    if wide {
        name + "_wide"
    } else {
        name
    }
}

/// A count and look-back word of the sort kernels: `u32` (inputs up to 2^30 - 1) or
/// `u64` (any length).
trait Count: DeviceRepr + ValidAsZeroBits + Copy + Unpin {
    /// The module of this word takes 64-bit counts.
    const WIDE: bool;
    /// `n` as a count (the caller checked that it fits).
    fn of(n: usize) -> Self;
    /// The sorter's buffers of this width.
    fn pick<'a>(
        narrow: &'a mut CountBuffers<u32>,
        wide: &'a mut CountBuffers<u64>,
    ) -> &'a mut CountBuffers<Self>;
}
impl Count for u32 {
    const WIDE: bool = false;
    fn of(n: usize) -> Self {
        n as u32
    }
    fn pick<'a>(
        narrow: &'a mut CountBuffers<u32>,
        _: &'a mut CountBuffers<u64>,
    ) -> &'a mut CountBuffers<u32> {
        narrow
    }
}
impl Count for u64 {
    const WIDE: bool = true;
    fn of(n: usize) -> Self {
        n as u64
    }
    fn pick<'a>(
        _: &'a mut CountBuffers<u32>,
        wide: &'a mut CountBuffers<u64>,
    ) -> &'a mut CountBuffers<u64> {
        wide
    }
}

/// The histogram and look-back states of one count width, allocated on first use.
struct CountBuffers<C> {
    /// 256 digit counts per pass, zeroed before each sort.
    histogram: Option<CudaSlice<C>>,
    /// 256 look-back words per tile, zeroed before each pass.
    lookback: Option<CudaSlice<C>>,
}

impl<C> Default for CountBuffers<C> {
    fn default() -> Self {
        Self {
            histogram: None,
            lookback: None,
        }
    }
}

#[derive(Clone)]
struct SortKernels {
    histogram: Kernel,
    pass: Kernel,
    /// Keys per thread of the pass kernel.
    items: u32,
}

/// A reusable LSD radix sorter for u32 and u64 keys, alone or with values.
///
/// The sorter owns the temporary memory a sort needs (a second key buffer, a second
/// value buffer, the histogram and the look-back states) and keeps it between calls,
/// growing it when a larger input comes, so repeated sorts of similar sizes allocate
/// nothing. Kernels are compiled on the first sort of each key/value type.
///
/// Every sort is stable (equal keys keep their input order, so their values keep
/// theirs), sorts keys as unsigned integers in ascending order, and takes inputs of any
/// length the device holds (beside a second buffer of the same size): up to 2^30 - 1
/// elements with 32-bit counts and look-back words, longer ones with 64-bit ones. When
/// the device has no room for the temporary buffers the sort fails with
/// [`Error::OutOfMemory`] and the input is left as it was.
///
/// # Examples
/// ```no_run
/// use gpuds_core::{Gpu, primitives::RadixSorter};
/// let gpu = Gpu::new(0)?;
/// let mut sorter = RadixSorter::new(&gpu)?;
/// let mut keys = gpu.stream().clone_htod(&[3u64, 1, 2])?;
/// sorter.sort_keys(&mut keys)?;
/// assert_eq!(gpu.stream().clone_dtoh(&keys)?, vec![1, 2, 3]);
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub struct RadixSorter {
    gpu: Gpu,
    kernels: HashMap<String, SortKernels>,
    /// One tile counter per pass, zeroed before each sort.
    counters: CudaSlice<u32>,
    /// Histogram and look-back states of sorts of up to 2^30 - 1 elements.
    narrow: CountBuffers<u32>,
    /// The same for longer sorts.
    wide: CountBuffers<u64>,
    alt_keys: Option<CudaSlice<u8>>,
    alt_values: Option<CudaSlice<u8>>,
}

impl std::fmt::Debug for RadixSorter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RadixSorter")
            .field("device", &self.gpu.info().name)
            .field("key_bytes", &self.alt_keys.as_ref().map_or(0, |b| b.len()))
            .field(
                "value_bytes",
                &self.alt_values.as_ref().map_or(0, |b| b.len()),
            )
            .finish()
    }
}

impl RadixSorter {
    /// The most elements one sort takes: any length (a sort of more than 2^30 - 1
    /// elements takes 64-bit look-back words and counts). What limits a sort is device
    /// memory for the second buffer ([`Error::OutOfMemory`]).
    pub const MAX_LEN: usize = usize::MAX;

    /// A sorter for `gpu`, with no temporary memory yet beyond a few KiB.
    ///
    /// # Examples
    /// ```no_run
    /// let gpu = gpuds_core::Gpu::new(0)?;
    /// let sorter = gpuds_core::primitives::RadixSorter::new(&gpu)?;
    /// # let _ = sorter;
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn new(gpu: &Gpu) -> Result<Self> {
        let stream = gpu.stream();
        Ok(Self {
            gpu: gpu.clone(),
            kernels: HashMap::new(),
            counters: stream.alloc_zeros(MAX_PASSES)?,
            narrow: CountBuffers::default(),
            wide: CountBuffers::default(),
            alt_keys: None,
            alt_values: None,
        })
    }

    /// Sorts `keys` in ascending order. Does not synchronize: the work is enqueued on
    /// [`Gpu::stream`] and `keys` holds the result once the stream reaches it.
    ///
    /// # Examples
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// # let mut sorter = gpuds_core::primitives::RadixSorter::new(&gpu)?;
    /// let mut keys = gpu.stream().clone_htod(&[7u32, 0, 7, 2])?;
    /// sorter.sort_keys(&mut keys)?;
    /// assert_eq!(gpu.stream().clone_dtoh(&keys)?, vec![0, 2, 7, 7]);
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn sort_keys<K: DeviceKey>(&mut self, keys: &mut CudaSlice<K>) -> Result<()> {
        let bits = key_bits::<K>()?;
        self.sort::<K, u32>(keys, None, 0, bits)
    }

    /// Sorts `keys` by bits `begin_bit..end_bit` alone (bit 0 is the least significant):
    /// keys known to be below 2^20 sort fully with `0, 20` in three passes instead of
    /// four. Keys equal in those bits keep their order. Does not synchronize.
    ///
    /// Fails with [`Error::InvalidArgument`] unless `begin_bit <= end_bit <=` the key's
    /// width.
    ///
    /// # Examples
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// # let mut sorter = gpuds_core::primitives::RadixSorter::new(&gpu)?;
    /// let mut keys = gpu.stream().clone_htod(&[0x30u32, 0x1f, 0x21])?;
    /// sorter.sort_keys_bits(&mut keys, 4, 8)?; // by the second hex digit only
    /// assert_eq!(gpu.stream().clone_dtoh(&keys)?, vec![0x1f, 0x21, 0x30]);
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn sort_keys_bits<K: DeviceKey>(
        &mut self,
        keys: &mut CudaSlice<K>,
        begin_bit: u32,
        end_bit: u32,
    ) -> Result<()> {
        self.sort::<K, u32>(keys, None, begin_bit, end_bit)
    }

    /// Sorts `keys` in ascending order and applies the same permutation to `values`.
    /// Stable: values of equal keys keep their input order. Does not synchronize.
    ///
    /// Fails with [`Error::InvalidArgument`] when the two slices differ in length.
    ///
    /// # Examples
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// # let mut sorter = gpuds_core::primitives::RadixSorter::new(&gpu)?;
    /// let stream = gpu.stream();
    /// let mut keys = stream.clone_htod(&[2u32, 1, 2, 0])?;
    /// let mut values = stream.clone_htod(&[10u64, 11, 12, 13])?;
    /// sorter.sort_pairs(&mut keys, &mut values)?;
    /// assert_eq!(stream.clone_dtoh(&keys)?, vec![0, 1, 2, 2]);
    /// assert_eq!(stream.clone_dtoh(&values)?, vec![13, 11, 10, 12]);
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn sort_pairs<K: DeviceKey, V: DeviceValue>(
        &mut self,
        keys: &mut CudaSlice<K>,
        values: &mut CudaSlice<V>,
    ) -> Result<()> {
        let bits = key_bits::<K>()?;
        self.sort(keys, Some(values), 0, bits)
    }

    /// [`sort_pairs`](Self::sort_pairs) by bits `begin_bit..end_bit` of the keys alone,
    /// as [`sort_keys_bits`](Self::sort_keys_bits). Does not synchronize.
    ///
    /// # Examples
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// # let mut sorter = gpuds_core::primitives::RadixSorter::new(&gpu)?;
    /// let stream = gpu.stream();
    /// let mut keys = stream.clone_htod(&[300u32, 5, 200])?;
    /// let mut values = stream.clone_htod(&[0u32, 1, 2])?;
    /// sorter.sort_pairs_bits(&mut keys, &mut values, 0, 9)?; // keys < 2^9
    /// assert_eq!(stream.clone_dtoh(&values)?, vec![1, 2, 0]);
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn sort_pairs_bits<K: DeviceKey, V: DeviceValue>(
        &mut self,
        keys: &mut CudaSlice<K>,
        values: &mut CudaSlice<V>,
        begin_bit: u32,
        end_bit: u32,
    ) -> Result<()> {
        self.sort(keys, Some(values), begin_bit, end_bit)
    }

    fn sort<K: DeviceKey, V: DeviceValue>(
        &mut self,
        keys: &mut CudaSlice<K>,
        values: Option<&mut CudaSlice<V>>,
        begin_bit: u32,
        end_bit: u32,
    ) -> Result<()> {
        let bits = key_bits::<K>()?;
        let n = keys.len();
        if let Some(values) = &values {
            if values.len() != n {
                return Err(Error::InvalidArgument(format!(
                    "sort_pairs: {n} keys but {} values",
                    values.len()
                )));
            }
        }
        if begin_bit > end_bit || end_bit > bits {
            return Err(Error::InvalidArgument(format!(
                "sort bits {begin_bit}..{end_bit} are not a range within the key's {bits} bits"
            )));
        }
        let value = match values {
            Some(_) => Some(Element::value::<V>()?),
            None => None,
        };
        if n <= 1 || begin_bit == end_bit {
            return Ok(());
        }
        if n <= NARROW_MAX_LEN {
            self.sort_with::<K, V, u32>(keys, values, value, begin_bit, end_bit)
        } else {
            self.sort_with::<K, V, u64>(keys, values, value, begin_bit, end_bit)
        }
    }

    /// The sort with counts and look-back words of type `C`.
    fn sort_with<K: DeviceKey, V: DeviceValue, C: Count>(
        &mut self,
        keys: &mut CudaSlice<K>,
        mut values: Option<&mut CudaSlice<V>>,
        value: Option<Element>,
        begin_bit: u32,
        end_bit: u32,
    ) -> Result<()> {
        let n = keys.len();
        let kernels = self.kernels(Element::of::<K>(), value, C::WIDE)?;
        let pass_shape = tile_launch(n, SORT_BLOCK, kernels.items)?;
        let grid = pass_shape.grid_dim.0;
        let passes = (end_bit - begin_bit).div_ceil(RADIX_BITS);
        let stream = self.gpu.stream().clone();
        let counts = C::pick(&mut self.narrow, &mut self.wide);
        // Fewer than 2^32 tiles of at least 4096 elements of at most 8 bytes, and
        // n * 8 bytes allocated below: these products cannot overflow.
        let lookback = grow(
            &self.gpu,
            &mut counts.lookback,
            grid as usize * RADIX,
            "the radix sort's look-back states",
        )?;
        let histogram = grow(
            &self.gpu,
            &mut counts.histogram,
            MAX_PASSES * RADIX,
            "the radix sort's histogram",
        )?;
        let alt_keys = grow(
            &self.gpu,
            &mut self.alt_keys,
            n * std::mem::size_of::<K>(),
            "the radix sort's second key buffer",
        )?;
        let mut alt_values = match value {
            Some(v) => Some(grow(
                &self.gpu,
                &mut self.alt_values,
                n * v.size,
                "the radix sort's second value buffer",
            )?),
            None => None,
        };
        stream.memset_zeros(&mut self.counters)?;
        stream.memset_zeros(&mut histogram.slice_mut(..MAX_PASSES * RADIX))?;

        let n_count = C::of(n);
        let histogram_shape = self.gpu.grid_for(&kernels.histogram, n, HIST_BLOCK)?;
        let mut args = stream.launch_builder(kernels.histogram.func());
        args.arg(&*keys)
            .arg(&n_count)
            .arg(&begin_bit)
            .arg(&end_bit)
            .arg(&mut *histogram);
        // SAFETY: the arguments match the kernel's signature; it reads n keys and writes
        // passes * 256 counts, within the buffers.
        unsafe { args.launch(histogram_shape) }?;

        for pass in 0..passes {
            let shift = begin_bit + pass * RADIX_BITS;
            let mask = (1u32 << (end_bit - shift).min(RADIX_BITS)) - 1;
            let p = pass as usize;
            stream.memset_zeros(&mut lookback.slice_mut(..grid as usize * RADIX))?;
            let histogram = histogram.slice(p * RADIX..(p + 1) * RADIX);
            let mut counter = self.counters.slice_mut(p..p + 1);
            let mut args = stream.launch_builder(kernels.pass.func());
            // Even passes read the caller's buffers, odd passes the sorter's.
            if pass % 2 == 0 {
                args.arg(&*keys).arg(&mut *alt_keys);
            } else {
                args.arg(&*alt_keys).arg(&mut *keys);
            }
            if let (Some(values), Some(alt_values)) =
                (values.as_deref_mut(), alt_values.as_deref_mut())
            {
                if pass % 2 == 0 {
                    args.arg(&*values).arg(alt_values);
                } else {
                    args.arg(&*alt_values).arg(values);
                }
            }
            args.arg(&n_count)
                .arg(&shift)
                .arg(&mask)
                .arg(&histogram)
                .arg(&mut counter)
                .arg(&mut *lookback);
            // SAFETY: the arguments match the kernel's signature (counts of type C, as
            // its module was compiled); the grid has one block per tile, the look-back
            // array 256 zeroed words per tile, and every buffer holds n elements.
            unsafe { args.launch(pass_shape) }?;
        }

        if passes % 2 == 1 {
            // SAFETY: the sorter's buffer holds at least n sorted keys (values), written
            // by the last pass; K and V are plain old data.
            let sorted = unsafe { alt_keys.transmute::<K>(n) }.ok_or_else(too_small)?;
            stream.memcpy_dtod(&sorted, keys)?;
            if let (Some(values), Some(alt_values)) = (values, alt_values) {
                // SAFETY: as for the keys.
                let sorted = unsafe { alt_values.transmute::<V>(n) }.ok_or_else(too_small)?;
                stream.memcpy_dtod(&sorted, values)?;
            }
        }
        Ok(())
    }

    fn kernels(&mut self, key: Element, value: Option<Element>, wide: bool) -> Result<SortKernels> {
        let name = module_suffix(key, value, wide);
        if let Some(kernels) = self.kernels.get(&name) {
            return Ok(kernels.clone());
        }
        let module = self.gpu.load(&program(key, value, wide))?;
        let kernels = SortKernels {
            histogram: module.kernel(&format!("radix_histogram_{name}"))?,
            pass: module.kernel(&format!("radix_onesweep_{name}"))?,
            items: items_per_thread(key, value),
        };
        self.kernels.insert(name, kernels.clone());
        Ok(kernels)
    }
}

/// Width of a key type in bits; only unsigned integer keys have radix digits.
fn key_bits<K: DeviceKey>() -> Result<u32> {
    match K::SUFFIX {
        "u32" | "u64" => Ok(8 * std::mem::size_of::<K>() as u32),
        other => Err(Error::InvalidArgument(format!(
            "radix sort supports u32 and u64 keys, not {other}"
        ))),
    }
}

fn too_small() -> Error {
    Error::InvalidArgument("radix sort: temporary buffer smaller than the input".into())
}
