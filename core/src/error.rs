//! The error type of gpuds-core, which every other gpuds crate wraps.

use crate::status::Status;

/// Everything that can go wrong in gpuds-core.
///
/// Higher crates wrap this enum in their own error with `#[from]`, so a caller sees a
/// single chain from the structure down to the driver.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The CUDA driver library (`libcuda`) could not be loaded.
    #[error("the CUDA driver library could not be loaded: is an NVIDIA driver installed?")]
    NoDriver,
    /// The driver loaded but reports no device with this ordinal.
    #[error("no CUDA device with ordinal {ordinal} (the driver reports {count})")]
    NoDevice {
        /// The ordinal that was asked for.
        ordinal: usize,
        /// How many devices the driver reports.
        count: usize,
    },
    /// The NVRTC library could not be loaded.
    #[error(
        "the NVRTC library (libnvrtc) could not be loaded: install the CUDA toolkit or the \
         nvidia-cuda-nvrtc package and put its lib folder on the library path, or set \
         GPUDS_NVRTC_PATH to the library file"
    )]
    NoNvrtc,
    /// A call into the CUDA driver failed.
    #[error("CUDA driver error: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
    /// NVRTC rejected a program. `log` is the compiler's own log.
    #[error("NVRTC could not compile `{program}` for {arch}:\n{log}")]
    Compile {
        /// The program's name.
        program: String,
        /// The target architecture, e.g. `sm_90`.
        arch: String,
        /// The compiler log.
        log: String,
    },
    /// An NVRTC call other than the compilation itself failed.
    #[error("NVRTC call {call} failed with code {code}")]
    Nvrtc {
        /// The NVRTC function that failed.
        call: &'static str,
        /// The `nvrtcResult` code.
        code: i32,
    },
    /// A compiled module has no kernel of this name.
    #[error("module `{program}` has no kernel `{kernel}`")]
    NoSuchKernel {
        /// The program's name.
        program: String,
        /// The kernel that was asked for.
        kernel: String,
    },
    /// A kernel recorded problems in a structure's status word.
    #[error("a kernel reported: {0}")]
    Status(Status),
    /// An argument was out of range or inconsistent; the message says which and why.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A reserved (sentinel) key was found in a batch; nothing of the batch was applied.
    #[error("key {key:#x} at index {index} is reserved by this structure")]
    ReservedKey {
        /// Position of the first offending key in the batch.
        index: usize,
        /// The offending key, widened to 64 bits.
        key: u64,
    },
    /// A size computed from a caller's numbers (a capacity, a `reserve`, a batch length
    /// times bytes per item, a result offset) overflows or passes a hard limit of the
    /// structure. Returned before anything is allocated or changed: the structure is as
    /// it was.
    #[error("capacity overflow: {0}")]
    CapacityOverflow(String),
    /// The device has too little free memory for an allocation the call needed. Returned
    /// for the driver's out-of-memory error; the structure is as it was before the call.
    #[error("out of device memory: {what} needs {bytes} bytes")]
    OutOfMemory {
        /// What the allocation was for.
        what: String,
        /// Bytes asked for.
        bytes: u64,
    },
    /// A batch was applied only in part: the kernels reported `status`, and exactly the
    /// operations at the indices in `not_applied` (ascending) took no effect; every other
    /// operation of the batch did. The structure is valid.
    #[error("a kernel reported: {status}; {} operation(s) of the batch not applied (first at index {})",
            not_applied.len(), not_applied.first().map_or(-1, |&i| i as i64))]
    NotApplied {
        /// The flags the kernels reported.
        status: Status,
        /// Indices into the batch of the operations that took no effect, ascending.
        not_applied: Vec<usize>,
    },
    /// The disk cache could not be read or written. Compilation still works without it;
    /// this is only returned by explicit cache calls.
    #[error("kernel cache at {path}: {source}")]
    Cache {
        /// The file or folder involved.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Maps the driver's out-of-memory error of an allocation of `bytes` bytes for `what`
    /// to [`Error::OutOfMemory`]; any other error is returned as it is.
    ///
    /// ```
    /// use gpuds_core::cudarc::driver::{sys::CUresult, DriverError};
    /// let e = gpuds_core::Error::Driver(DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
    /// let e = e.out_of_memory("the table", 1 << 40);
    /// assert!(matches!(e, gpuds_core::Error::OutOfMemory { bytes, .. } if bytes == 1 << 40));
    /// ```
    pub fn out_of_memory(self, what: &str, bytes: u64) -> Error {
        match self {
            Error::Driver(cudarc::driver::DriverError(
                cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY,
            )) => Error::OutOfMemory {
                what: what.to_string(),
                bytes,
            },
            other => other,
        }
    }
}

/// The checked product `count * size_of::<T>()` in bytes, or [`Error::CapacityOverflow`]
/// naming `what`.
///
/// ```
/// assert_eq!(gpuds_core::checked_bytes::<u64>(4, "keys").unwrap(), 32);
/// assert!(gpuds_core::checked_bytes::<u64>(u64::MAX, "keys").is_err());
/// ```
pub fn checked_bytes<T>(count: u64, what: &str) -> Result<u64> {
    count
        .checked_mul(std::mem::size_of::<T>() as u64)
        .ok_or_else(|| {
            Error::CapacityOverflow(format!(
                "{count} {what} of {} bytes each overflow 64 bits",
                std::mem::size_of::<T>()
            ))
        })
}
