//! The pool's backing memory in its two layouts.
//!
//! - [`VirtualRange`] (SlabAlloc-light): a virtual address range for the largest pool is
//!   reserved once with the driver's virtual memory management (`cuMemAddressReserve`);
//!   growing maps more physical memory (`cuMemCreate`, `cuMemMap`, `cuMemSetAccess`)
//!   right after what is mapped, so the pool stays contiguous and decode is one multiply
//!   and add, while growth never moves a unit.
//! - [`SuperBlocks`] (classic): each super block is an ordinary allocation; a device
//!   table of super block bases serves decode.

use std::sync::Arc;

use cudarc::driver::sys::{self, CUdevice_attribute as Attr};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr};
use gpuds_core::Gpu;

use crate::address::SUPER_BITS;
use crate::error::{Error, Result};

fn check(r: sys::CUresult) -> Result<()> {
    r.result().map_err(Error::from)
}

/// True when `gpu` supports virtual memory management (the light layout).
pub(crate) fn vmm_supported(gpu: &Gpu) -> Result<bool> {
    let v = gpu
        .context()
        .attribute(Attr::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)?;
    Ok(v != 0)
}

/// A reserved virtual range with physical memory mapped into a growing prefix.
pub(crate) struct VirtualRange {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    base: sys::CUdeviceptr,
    reserved: usize,
    granularity: usize,
    /// (offset, size, handle) of every mapped piece, in address order.
    pieces: Vec<(usize, usize, sys::CUmemGenericAllocationHandle)>,
}

impl VirtualRange {
    fn prop(device: i32) -> sys::CUmemAllocationProp {
        // SAFETY: the property struct is plain data; all-zero is its documented default
        // (no handle types, no flags) before the fields below are set.
        let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
        prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = device;
        prop
    }

    /// Reserves `bytes` (rounded up to the allocation granularity) of virtual addresses.
    pub(crate) fn reserve(gpu: &Gpu, bytes: usize) -> Result<Self> {
        if !vmm_supported(gpu)? {
            return Err(Error::Unsupported(format!(
                "{} has no virtual memory management: use Layout::Classic",
                gpu.info().name
            )));
        }
        let ctx = gpu.context().clone();
        ctx.bind_to_thread()?;
        let prop = Self::prop(ctx.cu_device());
        let mut granularity = 0usize;
        // SAFETY: prop is a valid property struct and granularity a valid out pointer.
        check(unsafe {
            sys::cuMemGetAllocationGranularity(
                &mut granularity,
                &prop,
                sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
            )
        })?;
        let granularity = granularity.max(1);
        let reserved = bytes.max(1).div_ceil(granularity) * granularity;
        let mut base: sys::CUdeviceptr = 0;
        // SAFETY: base is a valid out pointer; no fixed address is asked for.
        check(unsafe { sys::cuMemAddressReserve(&mut base, reserved, granularity, 0, 0) })?;
        Ok(Self {
            ctx,
            stream: gpu.stream().clone(),
            base,
            reserved,
            granularity,
            pieces: Vec::new(),
        })
    }

    /// The range's first address.
    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    /// Bytes with physical memory behind them (a prefix of the range).
    pub(crate) fn mapped(&self) -> usize {
        self.pieces
            .last()
            .map_or(0, |&(offset, size, _)| offset + size)
    }

    /// Bytes of virtual addresses reserved.
    pub(crate) fn reserved(&self) -> usize {
        self.reserved
    }

    /// Maps physical memory until at least `bytes` are mapped (rounded up to the
    /// granularity, capped at the reservation). Returns the bytes mapped now.
    pub(crate) fn grow_to(&mut self, bytes: usize) -> Result<usize> {
        let target = bytes.div_ceil(self.granularity) * self.granularity;
        let target = target.min(self.reserved);
        let start = self.mapped();
        if target <= start {
            return Ok(start);
        }
        let size = target - start;
        self.ctx.bind_to_thread()?;
        let device = self.ctx.cu_device();
        let prop = Self::prop(device);
        let mut handle: sys::CUmemGenericAllocationHandle = 0;
        // SAFETY: valid out pointer and property struct; size is a granularity multiple.
        let mut created = unsafe { sys::cuMemCreate(&mut handle, size, &prop, 0) };
        if created == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            // The stream-ordered pool may be keeping freed memory (gpuds_core::Gpu keeps
            // it for reuse): once the frees queued on the stream have completed, give it
            // back and try once more. Whatever fails here, the error reported is the
            // mapping's own.
            let _ = self.stream.synchronize();
            let _ = gpuds_core::trim_memory_pool(&self.ctx);
            // SAFETY: as above.
            created = unsafe { sys::cuMemCreate(&mut handle, size, &prop, 0) };
        }
        check(created)?;
        let ptr = self.base + start as u64;
        // SAFETY: [ptr, ptr + size) lies inside our reservation and is not mapped yet.
        if let Err(e) = check(unsafe { sys::cuMemMap(ptr, size, 0, handle, 0) }) {
            // SAFETY: the handle was created above and is not mapped.
            unsafe { sys::cuMemRelease(handle) };
            return Err(e);
        }
        // SAFETY: plain data; the fields that matter are set below.
        let mut access: sys::CUmemAccessDesc = unsafe { std::mem::zeroed() };
        access.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        access.location.id = device;
        access.flags = sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        // SAFETY: the range was just mapped; one access descriptor is passed.
        if let Err(e) = check(unsafe { sys::cuMemSetAccess(ptr, size, &access, 1) }) {
            // SAFETY: undo the mapping and the handle made above.
            unsafe {
                sys::cuMemUnmap(ptr, size);
                sys::cuMemRelease(handle);
            }
            return Err(e);
        }
        // Zeroed, in stream order before any kernel that may use it: structures read whole
        // units (a node's unused pair slots included), so fresh memory reads as zeros,
        // never as whatever the device held before (and compute-sanitizer's initcheck
        // stays clean). One pass over the new memory per growth.
        // SAFETY: [ptr, ptr + size) was just mapped read-write; the stream is this range's.
        if let Err(e) = unsafe {
            cudarc::driver::result::memset_d8_async(ptr, 0, size, self.stream.cu_stream())
        } {
            // SAFETY: undo the mapping and the handle made above.
            unsafe {
                sys::cuMemUnmap(ptr, size);
                sys::cuMemRelease(handle);
            }
            return Err(e.into());
        }
        self.pieces.push((start, size, handle));
        Ok(target)
    }
}

impl Drop for VirtualRange {
    fn drop(&mut self) {
        // Kernels still in flight may use the memory: wait for them first. Errors cannot
        // be reported from here; the driver frees everything with the context anyway.
        let _ = self.stream.synchronize();
        let _ = self.ctx.bind_to_thread();
        for &(offset, size, handle) in self.pieces.iter().rev() {
            // SAFETY: each piece was mapped at this offset with this handle by grow_to.
            unsafe {
                sys::cuMemUnmap(self.base + offset as u64, size);
                sys::cuMemRelease(handle);
            }
        }
        // SAFETY: the reservation was made by `reserve` with this size and is unmapped.
        unsafe { sys::cuMemAddressFree(self.base, self.reserved) };
    }
}

/// Super blocks as separate allocations, with the device table of their bases.
pub(crate) struct SuperBlocks {
    blocks: Vec<CudaSlice<u8>>,
    bases: CudaSlice<u64>,
    super_bytes: usize,
}

impl SuperBlocks {
    pub(crate) fn new(gpu: &Gpu, super_bytes: usize) -> Result<Self> {
        Ok(Self {
            blocks: Vec::new(),
            bases: gpu.stream().alloc_zeros::<u64>(1 << SUPER_BITS)?,
            super_bytes,
        })
    }

    /// Adds super blocks until there are `count`. On an error the super blocks added by
    /// this call are freed again: the pool is as it was.
    pub(crate) fn grow_to(&mut self, gpu: &Gpu, count: usize) -> Result<()> {
        let stream = gpu.stream();
        let old = self.blocks.len();
        while self.blocks.len() < count {
            // Zeroed like the light layout's growth (see VirtualRange::grow_to).
            match stream.alloc_zeros::<u8>(self.super_bytes) {
                Ok(block) => self.blocks.push(block),
                Err(e) => {
                    self.blocks.truncate(old);
                    return Err(e.into());
                }
            }
        }
        if self.blocks.len() != old {
            let table = self.host_table(stream);
            stream.memcpy_htod(&table, &mut self.bases)?;
        }
        Ok(())
    }

    /// The table of bases as the host believes it (zero for absent super blocks).
    pub(crate) fn host_table(&self, stream: &Arc<CudaStream>) -> Vec<u64> {
        let mut table = vec![0u64; 1 << SUPER_BITS];
        for (slot, block) in table.iter_mut().zip(&self.blocks) {
            *slot = block.device_ptr(stream).0;
        }
        table
    }

    pub(crate) fn table_ptr(&self, stream: &Arc<CudaStream>) -> u64 {
        self.bases.device_ptr(stream).0
    }

    pub(crate) fn device_table(&self) -> &CudaSlice<u64> {
        &self.bases
    }

    pub(crate) fn blocks(&self) -> &[CudaSlice<u8>] {
        &self.blocks
    }

    pub(crate) fn bytes(&self) -> usize {
        self.blocks.len() * self.super_bytes
    }
}

/// The pool's memory in either layout.
pub(crate) enum Memory {
    Light(VirtualRange),
    Classic(SuperBlocks),
}
