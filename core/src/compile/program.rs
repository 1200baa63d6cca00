//! [`Program`]: a source, in-memory headers, defines and options.

use std::borrow::Cow;
use std::sync::OnceLock;

use super::arch::{Arch, Compiled, Output};
use crate::error::Result;

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
    pub(super) name: String,
    pub(super) source: Cow<'static, str>,
    pub(super) headers: Vec<(Cow<'static, str>, Cow<'static, str>)>,
    pub(super) defines: Vec<(String, String)>,
    pub(super) options: Vec<String>,
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
        self.digest(arch, output, nvrtc, |h, t| h.field(t.as_bytes()))
    }

    /// A key for [`fingerprint`](Self::fingerprint)'s memo that reads no static text: a
    /// borrowed source or header (`&'static str`, which lives and stays unchanged for the
    /// whole process) is named by its address and length, an owned one by its bytes.
    /// Equal keys mean equal programs (and so equal fingerprints), so
    /// [`Gpu::load`](crate::Gpu::load) hashes a program's static texts once per process
    /// instead of on every call: at 30-40 KB of headers a program (gpuds-core's alone),
    /// the fingerprint took tens of microseconds of every load, which primitives and
    /// structures make per call. (A `&'static str` whose memory is freed and reused, which
    /// only unsafe code can make, would defeat this.)
    pub(crate) fn identity(&self, arch: Arch, output: Output, nvrtc: (i32, i32)) -> u128 {
        self.digest(arch, output, nvrtc, |h, t| match t {
            Cow::Borrowed(b) => {
                h.bytes(&[0]);
                h.bytes(&(b.as_ptr() as usize as u64).to_le_bytes());
                h.bytes(&(b.len() as u64).to_le_bytes());
            }
            Cow::Owned(o) => {
                h.bytes(&[1]);
                h.field(o.as_bytes());
            }
        })
    }

    /// The hash of the program's name, texts (each through `text`; the headers in the
    /// order of their names), defines, options and target.
    fn digest(
        &self,
        arch: Arch,
        output: Output,
        nvrtc: (i32, i32),
        text: impl Fn(&mut Fnv128, &Cow<'static, str>),
    ) -> u128 {
        let mut h = Fnv128::new();
        h.field(self.name.as_bytes());
        text(&mut h, &self.source);
        let mut headers: Vec<_> = self.headers.iter().collect();
        headers.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, body) in headers {
            text(&mut h, name);
            text(&mut h, body);
        }
        for (name, value) in &self.defines {
            h.field(name.as_bytes());
            h.field(value.as_bytes());
        }
        for option in self.options_for(lineinfo_from_env()) {
            h.field(option.as_bytes());
        }
        h.field(&arch.number().to_le_bytes());
        h.field(&[output as u8]);
        h.field(&nvrtc.0.to_le_bytes());
        h.field(&nvrtc.1.to_le_bytes());
        h.finish()
    }

    pub(super) fn nvrtc_options(&self, arch: Arch, output: Output) -> Vec<String> {
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
        options.extend(self.options_for(lineinfo_from_env()).map(str::to_string));
        options
    }

    /// The program's extra options, with `-lineinfo` added when `lineinfo` asks for it and
    /// the program has not (the same list, so the same fingerprint, as a program given
    /// `.option("-lineinfo")`).
    fn options_for(&self, lineinfo: bool) -> impl Iterator<Item = &str> {
        let add = lineinfo && !self.options.iter().any(|o| o == LINEINFO);
        self.options
            .iter()
            .map(String::as_str)
            .chain(add.then_some(LINEINFO))
    }

    /// Compiles the program with NVRTC. Needs NVRTC, not a GPU.
    ///
    /// Fails with [`Error::NoNvrtc`](crate::Error::NoNvrtc) when NVRTC cannot be loaded
    /// and with [`Error::Compile`](crate::Error::Compile) (carrying the compiler log)
    /// when the source does not compile.
    ///
    /// ```no_run
    /// use gpuds_core::{Arch, Output, Program};
    /// let ptx = Program::new("k", "extern \"C\" __global__ void k() {}")
    ///     .compile(Arch::new(8, 0), Output::Ptx)?;
    /// assert!(String::from_utf8_lossy(&ptx.image).contains(".entry k"));
    /// # Ok::<(), gpuds_core::Error>(())
    /// ```
    pub fn compile(&self, arch: Arch, output: Output) -> Result<Compiled> {
        super::nvrtc::compile(self, arch, output)
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

/// NVRTC's option for line information (no effect on the generated code).
const LINEINFO: &str = "-lineinfo";

/// Whether `GPUDS_LINEINFO` is set (and neither empty nor `0`): every program is then
/// compiled with `-lineinfo`, so that a profiler maps instructions to source lines
/// (Nsight Compute's source page, `nvdisasm -g` on a cached image). Read once per process;
/// part of the fingerprint, so images cached without line information are not reused.
fn lineinfo_from_env() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var_os("GPUDS_LINEINFO").is_some_and(|v| !v.is_empty() && v != "0")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lineinfo_is_one_more_option_and_never_twice() {
        let p = Program::new("k", "extern \"C\" __global__ void k() {}").option("-ftz=true");
        assert_eq!(p.options_for(false).collect::<Vec<_>>(), ["-ftz=true"]);
        assert_eq!(
            p.options_for(true).collect::<Vec<_>>(),
            ["-ftz=true", LINEINFO]
        );
        let q = p.clone().option(LINEINFO);
        assert_eq!(
            q.options_for(true).collect::<Vec<_>>(),
            ["-ftz=true", LINEINFO]
        );
        assert_eq!(
            q.options_for(false).collect::<Vec<_>>(),
            ["-ftz=true", LINEINFO]
        );
    }

    fn key(p: &Program) -> u128 {
        p.identity(Arch::new(9, 0), Output::Cubin, (13, 0))
    }

    fn fingerprint(p: &Program) -> u128 {
        p.fingerprint(Arch::new(9, 0), Output::Cubin, (13, 0))
    }

    #[test]
    fn identity_names_the_same_program_the_same_way() {
        const SOURCE: &str = "extern \"C\" __global__ void k() {}";
        let a = Program::new("k", SOURCE)
            .define("N", 1)
            .header("x.cuh", "int x;");
        // The same texts, the headers added in another order: same key, same fingerprint.
        let b = Program::new("k", SOURCE)
            .header("x.cuh", "int x;")
            .define("N", 1);
        assert_eq!(key(&a), key(&b));
        assert_eq!(fingerprint(&a), fingerprint(&b));
        // Anything that changes the fingerprint changes the key.
        for other in [
            Program::new("k", SOURCE)
                .define("N", 2)
                .header("x.cuh", "int x;"),
            Program::new("j", SOURCE)
                .define("N", 1)
                .header("x.cuh", "int x;"),
            Program::new("k", SOURCE)
                .define("N", 1)
                .header("x.cuh", "int y;"),
            Program::new("k", SOURCE)
                .define("N", 1)
                .header("x.cuh", "int x;")
                .option("-ftz=true"),
            Program::new("k", String::from(SOURCE) + " ")
                .define("N", 1)
                .header("x.cuh", "int x;"),
        ] {
            assert_ne!(fingerprint(&a), fingerprint(&other));
            assert_ne!(key(&a), key(&other));
        }
        assert_ne!(
            key(&a),
            a.identity(Arch::new(8, 0), Output::Cubin, (13, 0)),
            "architecture"
        );
        // An owned text is named by its bytes: equal texts, equal keys.
        let owned = |s: &str| Program::new("k", String::from(s)).define("N", 1);
        assert_eq!(key(&owned(SOURCE)), key(&owned(SOURCE)));
    }
}
