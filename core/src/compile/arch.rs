//! Compilation targets and results.

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
    ///
    /// ```
    /// assert_eq!(gpuds_core::Arch::new(9, 0).to_string(), "sm_90");
    /// ```
    pub const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }

    /// The number NVRTC uses, e.g. 90 for `sm_90`.
    ///
    /// ```
    /// assert_eq!(gpuds_core::Arch::new(8, 6).number(), 86);
    /// ```
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
    /// Machine code for exactly one architecture; what [`Gpu::load`](crate::Gpu::load) uses.
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
