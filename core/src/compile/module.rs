//! Loaded modules and kernels, and the process-wide module cache behind [`Gpu::load`].

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use cudarc::driver::{CudaFunction, CudaModule};
use parking_lot::Mutex;

use super::arch::Output;
use super::nvrtc::nvrtc_version;
use super::program::Program;
use crate::cache;
use crate::error::{Error, Result};
use crate::gpu::Gpu;

/// A module loaded on one device.
#[derive(Clone, Debug)]
pub struct Module {
    program: String,
    module: Arc<CudaModule>,
}

impl Module {
    /// The kernel `name` (an `extern "C"` entry point) of this module.
    ///
    /// ```no_run
    /// # let gpu = gpuds_core::Gpu::new(0)?;
    /// let module = gpu.load(&gpuds_core::Program::new("m", "extern \"C\" __global__ void k() {}"))?;
    /// let kernel = module.kernel("k")?;
    /// assert!(module.kernel("not_there").is_err());
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
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

/// One cache entry: filled once, by the first thread that asks (others wait on its lock
/// instead of compiling the same program again).
type Slot = Arc<Mutex<Option<Arc<CudaModule>>>>;

/// Loaded modules of the whole process, keyed by device ordinal and program fingerprint.
/// Modules live in the device's primary context, which every `Gpu` of that ordinal
/// shares, so a module loaded through one handle serves all of them.
fn loaded() -> &'static Mutex<HashMap<(usize, u128), Slot>> {
    static LOADED: OnceLock<Mutex<HashMap<(usize, u128), Slot>>> = OnceLock::new();
    LOADED.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Fingerprints by [`Program::identity`]: a load of a program seen before hashes no text.
fn fingerprints() -> &'static Mutex<HashMap<u128, u128>> {
    static KNOWN: OnceLock<Mutex<HashMap<u128, u128>>> = OnceLock::new();
    KNOWN.get_or_init(|| Mutex::new(HashMap::new()))
}

impl Gpu {
    /// Compiles `program` for this device (or finds it in the caches) and loads it.
    ///
    /// Modules are cached for the whole process, per device, keyed by a fingerprint of
    /// source, headers, defines, options, architecture and NVRTC version; two threads
    /// asking for the same program compile it once. Compiled images are also kept on
    /// disk (see [`crate::cache`]), so later processes skip NVRTC; an unreadable disk
    /// entry is replaced by a fresh compilation. Synchronizes nothing.
    ///
    /// ```no_run
    /// use gpuds_core::{Gpu, Program};
    /// let gpu = Gpu::new(0)?;
    /// let program = Program::new("k", "extern \"C\" __global__ void k(unsigned* p) { *p = N; }")
    ///     .define("N", 42);
    /// let first = gpu.load(&program)?; // compiles (or reads the disk cache)
    /// let again = gpu.load(&program)?; // an in-memory lookup
    /// # let _ = (first, again);
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn load(&self, program: &Program) -> Result<Module> {
        let (arch, nvrtc) = (self.arch(), nvrtc_version()?);
        let identity = program.identity(arch, Output::Cubin, nvrtc);
        let known = fingerprints().lock().get(&identity).copied();
        let key = match known {
            Some(key) => key,
            None => {
                let key = program.fingerprint(arch, Output::Cubin, nvrtc);
                fingerprints().lock().insert(identity, key);
                key
            }
        };
        let slot = loaded()
            .lock()
            .entry((self.info().ordinal, key))
            .or_default()
            .clone();
        let mut entry = slot.lock();
        let module = match entry.as_ref() {
            Some(module) => module.clone(),
            None => {
                let module = self.load_image(program, key)?;
                *entry = Some(module.clone());
                module
            }
        };
        Ok(Module {
            program: program.name.clone(),
            module,
        })
    }

    fn load_image(&self, program: &Program, key: u128) -> Result<Arc<CudaModule>> {
        if let Some(image) = cache::read(key) {
            match self
                .context()
                .load_module(cudarc::nvrtc::Ptx::from_binary(image))
            {
                Ok(module) => return Ok(module),
                // A truncated or foreign file: drop it and compile afresh.
                Err(_) => cache::remove(key),
            }
        }
        let image = program.compile(self.arch(), Output::Cubin)?.image;
        let module = self
            .context()
            .load_module(cudarc::nvrtc::Ptx::from_binary(image.clone()))?;
        cache::write(key, &image);
        Ok(module)
    }

    /// How many modules are loaded on this device through gpuds.
    pub fn loaded_module_count(&self) -> usize {
        let ordinal = self.info().ordinal;
        loaded()
            .lock()
            .iter()
            // A slot whose lock is held is being compiled: not loaded yet, and waiting
            // for it here would stall every other load behind the map lock.
            .filter(|((o, _), slot)| *o == ordinal && slot.try_lock().is_some_and(|m| m.is_some()))
            .count()
    }

    /// Forgets every module cached for this device, so the next [`Gpu::load`] goes to
    /// the disk cache or NVRTC again. Modules still held (by a [`Module`], a [`Kernel`]
    /// or a structure) stay loaded until those are dropped. Returns how many were
    /// forgotten.
    pub fn forget_modules(&self) -> usize {
        let ordinal = self.info().ordinal;
        let mut map = loaded().lock();
        let before = map.len();
        map.retain(|(o, _), _| *o != ordinal);
        before - map.len()
    }
}
