//! Run-time compilation of CUDA C++ with NVRTC.
//!
//! A [`Program`] is one source file plus in-memory headers plus defines. It compiles to a
//! CUBIN for a device's exact architecture ([`Gpu::load`]) or to PTX for a given
//! architecture when only checking that it compiles ([`Program::compile`]). Headers live
//! in memory under their include names (`gpuds/core/warp.cuh`), so `#include` works the
//! same inside NVRTC as on disk and no toolkit headers are needed.

use std::borrow::Cow;
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule};
use cudarc::nvrtc::sys as nvrtc;

use crate::cache;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::libs;

/// A GPU architecture, `sm_XY`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    /// Major compute capability.
    pub major: u32,
    /// Minor compute capability.
    pub minor: u32,
}

impl Arch {
    /// `sm_{major}{minor}`.
    pub const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }

    /// The number NVRTC uses, e.g. 90 for `sm_90`.
    pub const fn number(self) -> u32 {
        self.major * 10 + self.minor
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sm_{}{}", self.major, self.minor)
    }
}

/// What a compilation produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Output {
    /// Machine code for exactly one architecture; what [`Gpu::load`] uses.
    Cubin,
    /// Virtual-ISA text, for compile checks without a GPU.
    Ptx,
}

/// The result of a compilation.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// Architecture compiled for.
    pub arch: Arch,
    /// CUBIN or PTX.
    pub output: Output,
    /// The image: CUBIN bytes or PTX text.
    pub image: Vec<u8>,
    /// NVRTC's log (warnings), empty when it had nothing to say.
    pub log: String,
}

/// A CUDA C++ program: a source, in-memory headers, defines and extra options.
///
/// gpuds-core's own headers are always included; crates add theirs with
/// [`Program::headers`] and their `cuda_headers()` function.
///
/// # Examples
/// ```no_run
/// use gpuds_core::{Gpu, Program};
/// let gpu = Gpu::new(0)?;
/// let program = Program::new(
///     "add_one",
///     r#"#include <gpuds/core/memory.cuh>
///        extern "C" __global__ void add_one(unsigned* x, unsigned n) {
///            unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
///            if (i < n) x[i] += ADD;
///        }"#,
/// )
/// .define("ADD", 1);
/// let kernel = gpu.load(&program)?.kernel("add_one")?;
/// # let _ = kernel;
/// # Ok::<(), gpuds_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Program {
    name: String,
    source: Cow<'static, str>,
    headers: Vec<(Cow<'static, str>, Cow<'static, str>)>,
    defines: Vec<(String, String)>,
    options: Vec<String>,
}

impl Program {
    /// A program named `name` (used in errors and as the file name NVRTC reports).
    pub fn new(name: impl Into<String>, source: impl Into<Cow<'static, str>>) -> Self {
        Self {
            name: name.into(),
            source: source.into(),
            headers: Vec::new(),
            defines: Vec::new(),
            options: Vec::new(),
        }
        .headers(crate::cuda_headers())
    }

    /// The program's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The program's source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The same headers, defines and options with another source (and the same name).
    pub fn with_source(mut self, source: impl Into<Cow<'static, str>>) -> Self {
        self.source = source.into();
        self
    }

    /// Adds one in-memory header; a header of the same include name is replaced.
    pub fn header(
        mut self,
        include_name: impl Into<Cow<'static, str>>,
        text: impl Into<Cow<'static, str>>,
    ) -> Self {
        let name = include_name.into();
        let text = text.into();
        match self.headers.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = text,
            None => self.headers.push((name, text)),
        }
        self
    }

    /// Adds headers, e.g. a crate's `cuda_headers()`.
    pub fn headers<N, T>(mut self, headers: impl IntoIterator<Item = (N, T)>) -> Self
    where
        N: Into<Cow<'static, str>>,
        T: Into<Cow<'static, str>>,
    {
        for (name, text) in headers {
            self = self.header(name, text);
        }
        self
    }

    /// Defines a preprocessor macro (`-D name=value`), e.g. a key type or tuning constant.
    pub fn define(mut self, name: impl Into<String>, value: impl std::fmt::Display) -> Self {
        let name = name.into();
        let value = value.to_string();
        match self.defines.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.defines.push((name, value)),
        }
        self
    }

    /// Adds a raw NVRTC option such as `-lineinfo`.
    pub fn option(mut self, option: impl Into<String>) -> Self {
        self.options.push(option.into());
        self
    }

    /// A 128-bit fingerprint of everything that determines the compiled image.
    pub(crate) fn fingerprint(&self, arch: Arch, output: Output, nvrtc: (i32, i32)) -> u128 {
        let mut h = Fnv128::new();
        h.field(self.name.as_bytes());
        h.field(self.source.as_bytes());
        let mut headers: Vec<_> = self.headers.iter().collect();
        headers.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, text) in headers {
            h.field(name.as_bytes());
            h.field(text.as_bytes());
        }
        for (name, value) in &self.defines {
            h.field(name.as_bytes());
            h.field(value.as_bytes());
        }
        for option in &self.options {
            h.field(option.as_bytes());
        }
        h.field(&arch.number().to_le_bytes());
        h.field(&[output as u8]);
        h.field(&nvrtc.0.to_le_bytes());
        h.field(&nvrtc.1.to_le_bytes());
        h.finish()
    }

    fn nvrtc_options(&self, arch: Arch, output: Output) -> Vec<String> {
        let target = match output {
            Output::Cubin => format!("--gpu-architecture=sm_{}", arch.number()),
            Output::Ptx => format!("--gpu-architecture=compute_{}", arch.number()),
        };
        let mut options = vec![
            target,
            "-std=c++17".to_string(),
            "-default-device".to_string(),
        ];
        options.extend(self.defines.iter().map(|(n, v)| format!("-D{n}={v}")));
        options.extend(self.options.iter().cloned());
        options
    }

    /// Compiles the program with NVRTC. Needs NVRTC, not a GPU.
    ///
    /// Fails with [`Error::NoNvrtc`] when NVRTC cannot be loaded and with
    /// [`Error::Compile`] (carrying the compiler log) when the source does not compile.
    pub fn compile(&self, arch: Arch, output: Output) -> Result<Compiled> {
        libs::ensure_nvrtc()?;
        COMPILATIONS.fetch_add(1, Ordering::Relaxed);
        let cstr = |s: &str| {
            CString::new(s).map_err(|_| {
                Error::InvalidArgument(format!("program `{}` contains a NUL byte", self.name))
            })
        };
        let source = cstr(&self.source)?;
        let name = cstr(&self.name)?;
        let header_texts = self
            .headers
            .iter()
            .map(|(_, t)| cstr(t))
            .collect::<Result<Vec<_>>>()?;
        let header_names = self
            .headers
            .iter()
            .map(|(n, _)| cstr(n))
            .collect::<Result<Vec<_>>>()?;
        let options = self
            .nvrtc_options(arch, output)
            .iter()
            .map(|o| cstr(o))
            .collect::<Result<Vec<_>>>()?;
        let text_ptrs: Vec<_> = header_texts.iter().map(|s| s.as_ptr()).collect();
        let name_ptrs: Vec<_> = header_names.iter().map(|s| s.as_ptr()).collect();
        let option_ptrs: Vec<_> = options.iter().map(|s| s.as_ptr()).collect();

        let mut prog: nvrtc::nvrtcProgram = std::ptr::null_mut();
        // SAFETY: every pointer refers to a NUL-terminated string that outlives the call,
        // and the header arrays have the length passed.
        check("nvrtcCreateProgram", unsafe {
            nvrtc::nvrtcCreateProgram(
                &mut prog,
                source.as_ptr(),
                name.as_ptr(),
                text_ptrs.len() as i32,
                text_ptrs.as_ptr(),
                name_ptrs.as_ptr(),
            )
        })?;
        let guard = ProgramGuard(prog);
        // SAFETY: prog is a live program; the options outlive the call.
        let status = unsafe {
            nvrtc::nvrtcCompileProgram(guard.0, option_ptrs.len() as i32, option_ptrs.as_ptr())
        };
        let log = program_log(guard.0)?;
        if status != nvrtc::nvrtcResult::NVRTC_SUCCESS {
            return Err(Error::Compile {
                program: self.name.clone(),
                arch: arch.to_string(),
                log,
            });
        }
        let image = match output {
            Output::Cubin => read_output(
                guard.0,
                "nvrtcGetCUBIN",
                nvrtc::nvrtcGetCUBINSize,
                nvrtc::nvrtcGetCUBIN,
            )?,
            Output::Ptx => {
                let mut ptx = read_output(
                    guard.0,
                    "nvrtcGetPTX",
                    nvrtc::nvrtcGetPTXSize,
                    nvrtc::nvrtcGetPTX,
                )?;
                while ptx.last() == Some(&0) {
                    ptx.pop();
                }
                ptx
            }
        };
        Ok(Compiled {
            arch,
            output,
            image,
            log,
        })
    }
}

static COMPILATIONS: AtomicU64 = AtomicU64::new(0);

/// How many NVRTC compilations this process has run (cache hits do not count).
pub fn nvrtc_compilations() -> u64 {
    COMPILATIONS.load(Ordering::Relaxed)
}

struct ProgramGuard(nvrtc::nvrtcProgram);

impl Drop for ProgramGuard {
    fn drop(&mut self) {
        // SAFETY: the program was created by nvrtcCreateProgram and is destroyed once.
        unsafe {
            nvrtc::nvrtcDestroyProgram(&mut self.0);
        }
    }
}

fn check(call: &'static str, result: nvrtc::nvrtcResult) -> Result<()> {
    if result == nvrtc::nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(Error::Nvrtc {
            call,
            code: result as i32,
        })
    }
}

type SizeFn = unsafe fn(nvrtc::nvrtcProgram, *mut usize) -> nvrtc::nvrtcResult;
type ReadFn = unsafe fn(nvrtc::nvrtcProgram, *mut std::ffi::c_char) -> nvrtc::nvrtcResult;

fn read_output(
    prog: nvrtc::nvrtcProgram,
    call: &'static str,
    size: SizeFn,
    read: ReadFn,
) -> Result<Vec<u8>> {
    let mut len = 0usize;
    // SAFETY: prog is a compiled program; the buffer has the size NVRTC reported.
    check(call, unsafe { size(prog, &mut len) })?;
    let mut buf = vec![0u8; len];
    check(call, unsafe { read(prog, buf.as_mut_ptr().cast()) })?;
    Ok(buf)
}

fn program_log(prog: nvrtc::nvrtcProgram) -> Result<String> {
    let bytes = read_output(
        prog,
        "nvrtcGetProgramLog",
        nvrtc::nvrtcGetProgramLogSize,
        nvrtc::nvrtcGetProgramLog,
    )?;
    let text = CStr::from_bytes_until_nul(&bytes)
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).into_owned());
    Ok(text.trim().to_string())
}

/// The version of the NVRTC library in use, as (major, minor).
pub fn nvrtc_version() -> Result<(i32, i32)> {
    libs::ensure_nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: plain out-parameters.
    check("nvrtcVersion", unsafe {
        nvrtc::nvrtcVersion(&mut major, &mut minor)
    })?;
    Ok((major, minor))
}

/// The architectures the loaded NVRTC can compile for.
pub fn nvrtc_supported_archs() -> Result<Vec<Arch>> {
    libs::ensure_nvrtc()?;
    let mut count = 0;
    // SAFETY: out-parameter, then a buffer of the reported length.
    check("nvrtcGetNumSupportedArchs", unsafe {
        nvrtc::nvrtcGetNumSupportedArchs(&mut count)
    })?;
    let mut archs = vec![0i32; count.max(0) as usize];
    check("nvrtcGetSupportedArchs", unsafe {
        nvrtc::nvrtcGetSupportedArchs(archs.as_mut_ptr())
    })?;
    Ok(archs
        .into_iter()
        .map(|n| Arch::new(n as u32 / 10, n as u32 % 10))
        .collect())
}

/// A module loaded on one device.
#[derive(Clone, Debug)]
pub struct Module {
    program: String,
    module: Arc<CudaModule>,
}

impl Module {
    /// The kernel `name` (an `extern "C"` entry point) of this module.
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let func = self
            .module
            .load_function(name)
            .map_err(|_| Error::NoSuchKernel {
                program: self.program.clone(),
                kernel: name.to_string(),
            })?;
        Ok(Kernel {
            name: name.to_string(),
            func,
        })
    }

    /// The cudarc module, for direct use (e.g. reading `__constant__` symbols).
    pub fn raw(&self) -> &Arc<CudaModule> {
        &self.module
    }
}

/// One kernel of a loaded module.
#[derive(Clone, Debug)]
pub struct Kernel {
    name: String,
    func: CudaFunction,
}

impl Kernel {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The cudarc function, to launch with `stream.launch_builder(kernel.func())`.
    pub fn func(&self) -> &CudaFunction {
        &self.func
    }
}

impl Gpu {
    /// Compiles `program` for this device (or finds it in the caches) and loads it.
    ///
    /// Modules are cached per device for the life of the handle, keyed by a fingerprint
    /// of source, headers, defines, options, architecture and NVRTC version, and on disk
    /// (see [`crate::cache`]) so that later processes skip NVRTC.
    pub fn load(&self, program: &Program) -> Result<Module> {
        let version = nvrtc_version()?;
        let arch = self.arch();
        let key = program.fingerprint(arch, Output::Cubin, version);
        if let Some(module) = self.cached_module(key) {
            return Ok(Module {
                program: program.name.clone(),
                module,
            });
        }
        let image = match cache::read(key) {
            Some(image) => image,
            None => {
                let image = program.compile(arch, Output::Cubin)?.image;
                cache::write(key, &image);
                image
            }
        };
        let module = self
            .context()
            .load_module(cudarc::nvrtc::Ptx::from_binary(image))?;
        Ok(Module {
            program: program.name.clone(),
            module: self.cache_module(key, module),
        })
    }
}

/// FNV-1a over length-prefixed fields: stable across runs and Rust versions.
struct Fnv128(u128);

impl Fnv128 {
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013B;

    fn new() -> Self {
        Self(0x6c62_272e_07bb_0142_62b8_2175_6295_c58d)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u128;
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }

    fn field(&mut self, bytes: &[u8]) {
        self.bytes(&(bytes.len() as u64).to_le_bytes());
        self.bytes(bytes);
    }

    fn finish(&self) -> u128 {
        self.0
    }
}
