//! Batch inputs from host or device memory.

use cudarc::driver::{CudaSlice, CudaView};
use gpuds_core::{DeviceType, Gpu};

use crate::error::Result;

/// Something a batch can read its keys or values from: a host slice (`&[T]`, `Vec<T>`,
/// copied to the device first) or device memory (`CudaSlice<T>`, `CudaView<T>`, used in
/// place).
pub trait BatchInput<T: DeviceType> {
    /// Number of elements.
    fn len(&self) -> usize;
    /// `true` when there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The host elements, when the input lives on the host.
    fn host(&self) -> Option<&[T]>;
    /// The elements on the device, copied there first if needed. Does not synchronize.
    fn stage(&self, gpu: &Gpu) -> Result<Staged<'_, T>>;
}

/// A batch input on the device: copied there, or borrowed.
pub enum Staged<'a, T> {
    /// Copied from the host.
    Owned(CudaSlice<T>),
    /// Device memory of the caller.
    Borrowed(CudaView<'a, T>),
}

impl<T> Staged<'_, T> {
    /// The elements as a device view.
    pub fn view(&self) -> CudaView<'_, T> {
        match self {
            Staged::Owned(s) => s.as_view(),
            Staged::Borrowed(v) => v.slice(..),
        }
    }
}

impl<T: DeviceType> BatchInput<T> for [T] {
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
    fn host(&self) -> Option<&[T]> {
        Some(self)
    }
    fn stage(&self, gpu: &Gpu) -> Result<Staged<'_, T>> {
        Ok(Staged::Owned(gpu.stream().clone_htod(self)?))
    }
}

impl<T: DeviceType> BatchInput<T> for Vec<T> {
    fn len(&self) -> usize {
        self.as_slice().len()
    }
    fn host(&self) -> Option<&[T]> {
        Some(self)
    }
    fn stage(&self, gpu: &Gpu) -> Result<Staged<'_, T>> {
        self.as_slice().stage(gpu)
    }
}

impl<T: DeviceType> BatchInput<T> for CudaSlice<T> {
    fn len(&self) -> usize {
        CudaSlice::len(self)
    }
    fn host(&self) -> Option<&[T]> {
        None
    }
    fn stage(&self, _gpu: &Gpu) -> Result<Staged<'_, T>> {
        Ok(Staged::Borrowed(self.as_view()))
    }
}

impl<T: DeviceType> BatchInput<T> for CudaView<'_, T> {
    fn len(&self) -> usize {
        CudaView::len(self)
    }
    fn host(&self) -> Option<&[T]> {
        None
    }
    fn stage(&self, _gpu: &Gpu) -> Result<Staged<'_, T>> {
        Ok(Staged::Borrowed(self.slice(..)))
    }
}

impl<T: DeviceType, const N: usize> BatchInput<T> for [T; N] {
    fn len(&self) -> usize {
        N
    }
    fn host(&self) -> Option<&[T]> {
        Some(self)
    }
    fn stage(&self, gpu: &Gpu) -> Result<Staged<'_, T>> {
        self.as_slice().stage(gpu)
    }
}
