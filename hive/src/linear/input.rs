//! Batch inputs: host slices and device buffers alike.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, CudaView};
use gpuds_core::DeviceType;

use crate::error::Result;

/// A batch input: a host slice (copied to the device by the call) or device memory (used
/// in place).
///
/// # Examples
/// ```
/// use gpuds_hive::Input;
/// let keys = vec![1u32, 2, 3];
/// assert_eq!(Input::len(&keys), 3);
/// assert_eq!(keys.as_host(), Some(&keys[..]));
/// ```
pub trait Input<T: DeviceType> {
    /// The number of elements.
    fn len(&self) -> usize;
    /// `true` when there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The elements when they live on the host.
    fn as_host(&self) -> Option<&[T]>;
    /// The elements when they live on the device.
    fn as_device(&self) -> Option<CudaView<'_, T>>;
}

impl<T: DeviceType> Input<T> for [T] {
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
    fn as_host(&self) -> Option<&[T]> {
        Some(self)
    }
    fn as_device(&self) -> Option<CudaView<'_, T>> {
        None
    }
}

impl<T: DeviceType> Input<T> for Vec<T> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn as_host(&self) -> Option<&[T]> {
        Some(self)
    }
    fn as_device(&self) -> Option<CudaView<'_, T>> {
        None
    }
}

impl<T: DeviceType, const N: usize> Input<T> for [T; N] {
    fn len(&self) -> usize {
        N
    }
    fn as_host(&self) -> Option<&[T]> {
        Some(self)
    }
    fn as_device(&self) -> Option<CudaView<'_, T>> {
        None
    }
}

impl<T: DeviceType> Input<T> for CudaSlice<T> {
    fn len(&self) -> usize {
        CudaSlice::len(self)
    }
    fn as_host(&self) -> Option<&[T]> {
        None
    }
    fn as_device(&self) -> Option<CudaView<'_, T>> {
        Some(self.as_view())
    }
}

impl<T: DeviceType> Input<T> for CudaView<'_, T> {
    fn len(&self) -> usize {
        CudaView::len(self)
    }
    fn as_host(&self) -> Option<&[T]> {
        None
    }
    fn as_device(&self) -> Option<CudaView<'_, T>> {
        Some(self.slice(..))
    }
}

/// An input on the device: borrowed, or copied from the host for this call.
pub(crate) enum Staged<'a, T> {
    Borrowed(CudaView<'a, T>),
    Copied(CudaSlice<T>),
}

impl<'a, T: DeviceType> Staged<'a, T> {
    pub fn new<I: Input<T> + ?Sized>(stream: &Arc<CudaStream>, input: &'a I) -> Result<Self> {
        match input.as_device() {
            Some(view) => Ok(Staged::Borrowed(view)),
            None => {
                let host = input.as_host().unwrap_or(&[]);
                // An empty copy still needs a buffer to point at.
                let slice = if host.is_empty() {
                    stream.alloc_zeros::<T>(1)?
                } else {
                    stream.clone_htod(host)?
                };
                Ok(Staged::Copied(slice))
            }
        }
    }

    pub fn view(&self) -> CudaView<'_, T> {
        match self {
            Staged::Borrowed(v) => v.slice(..),
            Staged::Copied(s) => s.as_view(),
        }
    }
}
