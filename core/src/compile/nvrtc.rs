//! The NVRTC calls: compile a [`Program`], and ask the library what it supports.

use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use cudarc::nvrtc::sys as nvrtc;

use super::arch::{Arch, Compiled, Output};
use super::program::Program;
use crate::error::{Error, Result};
use crate::libs;

pub(super) fn compile(program: &Program, arch: Arch, output: Output) -> Result<Compiled> {
    libs::ensure_nvrtc()?;
    COMPILATIONS.fetch_add(1, Ordering::Relaxed);
    let cstr = |s: &str| {
        CString::new(s).map_err(|_| {
            Error::InvalidArgument(format!("program `{}` contains a NUL byte", program.name))
        })
    };
    let source = cstr(&program.source)?;
    let name = cstr(&program.name)?;
    let header_texts = program
        .headers
        .iter()
        .map(|(_, t)| cstr(t))
        .collect::<Result<Vec<_>>>()?;
    let header_names = program
        .headers
        .iter()
        .map(|(n, _)| cstr(n))
        .collect::<Result<Vec<_>>>()?;
    let options = program
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
            program: program.name.clone(),
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

static COMPILATIONS: AtomicU64 = AtomicU64::new(0);

/// How many NVRTC compilations this process has run (cache hits do not count).
///
/// ```no_run
/// let before = gpuds_core::nvrtc_compilations();
/// // ... gpu.load(&program) ...
/// println!("{} compilations", gpuds_core::nvrtc_compilations() - before);
/// ```
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
///
/// ```no_run
/// let (major, minor) = gpuds_core::nvrtc_version()?;
/// println!("NVRTC {major}.{minor}");
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn nvrtc_version() -> Result<(i32, i32)> {
    // The loaded library cannot change within a process, and every `Gpu::load` (cache
    // hits included) asks for the version: ask NVRTC once.
    static VERSION: OnceLock<(i32, i32)> = OnceLock::new();
    if let Some(version) = VERSION.get() {
        return Ok(*version);
    }
    libs::ensure_nvrtc()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: plain out-parameters.
    check("nvrtcVersion", unsafe {
        nvrtc::nvrtcVersion(&mut major, &mut minor)
    })?;
    Ok(*VERSION.get_or_init(|| (major, minor)))
}

/// The architectures the loaded NVRTC can compile for.
///
/// ```no_run
/// use gpuds_core::Arch;
/// let archs = gpuds_core::nvrtc_supported_archs()?;
/// println!("can target sm_90: {}", archs.contains(&Arch::new(9, 0)));
/// # Ok::<(), gpuds_core::Error>(())
/// ```
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
