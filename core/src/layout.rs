//! Layout checks between `#[repr(C)]` Rust mirrors and their C++ twins.
//!
//! Device refs cross the host/device boundary by value, so a Rust mirror must have the
//! C++ type's exact size, alignment and field offsets. [`device_layout`] compiles a tiny
//! kernel that writes `sizeof`, `alignof` and `offsetof` for a C++ type; tests compare
//! them with `size_of`, `align_of` and `offset_of!` through [`crate::assert_layout!`].

use cudarc::driver::PushKernelArg;

use crate::compile::Program;
use crate::error::Result;
use crate::gpu::Gpu;

/// Size, alignment and field offsets of a type, in bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// `sizeof`.
    pub size: u64,
    /// `alignof`.
    pub align: u64,
    /// `offsetof` of each field asked for, in order.
    pub offsets: Vec<u64>,
}

/// The probe program [`device_layout`] runs: kernel `gpuds_layout` writes `sizeof`,
/// `alignof` and each field's offset of `cpp_type` into its one argument.
///
/// `prelude` supplies the includes (its source is kept as a prelude, so it should hold
/// only `#include` lines and declarations) and the headers.
///
/// ```
/// use gpuds_core::{layout::layout_program, Program};
/// let prelude = Program::new("probe", "#include <gpuds/core/hash.cuh>");
/// let probe = layout_program(prelude, "gpuds::hash::universal", &["a", "p"]);
/// assert!(probe.source().contains("gpuds_layout"));
/// ```
pub fn layout_program(prelude: Program, cpp_type: &str, fields: &[&str]) -> Program {
    // NVRTC has no offsetof builtin: measure member addresses inside suitably aligned
    // storage instead (the object is never read, only its member addresses taken).
    let mut body = format!(
        "using T = {cpp_type};\n\
         alignas(alignof(T)) char storage[sizeof(T)];\n\
         T* obj = reinterpret_cast<T*>(storage);\n\
         out[0] = sizeof(T);\nout[1] = alignof(T);\n"
    );
    for (i, field) in fields.iter().enumerate() {
        body.push_str(&format!(
            "out[{}] = reinterpret_cast<const char*>(&obj->{field}) - storage;\n",
            i + 2
        ));
    }
    let source = format!(
        "{prelude}\nextern \"C\" __global__ void gpuds_layout(unsigned long long* out) {{\n{body}}}\n",
        prelude = prelude.source()
    );
    prelude.with_source(source)
}

/// The layout of C++ type `cpp_type` as the device compiler sees it (see
/// [`layout_program`] for `prelude`).
///
/// ```no_run
/// use gpuds_core::{layout::device_layout, Gpu, Program};
/// let gpu = Gpu::new(0)?;
/// let prelude = Program::new("probe", "#include <gpuds/core/hash.cuh>");
/// let layout = device_layout(&gpu, prelude, "gpuds::hash::universal", &["b"])?;
/// assert_eq!((layout.size, layout.offsets[0]), (12, 4));
/// # Ok::<(), gpuds_core::Error>(())
/// ```
pub fn device_layout(
    gpu: &Gpu,
    prelude: Program,
    cpp_type: &str,
    fields: &[&str],
) -> Result<Layout> {
    let program = layout_program(prelude, cpp_type, fields);
    let kernel = gpu.load(&program)?.kernel("gpuds_layout")?;
    let stream = gpu.stream();
    let mut out = stream.alloc_zeros::<u64>(fields.len() + 2)?;
    let mut launch = stream.launch_builder(kernel.func());
    launch.arg(&mut out);
    // SAFETY: the kernel writes fields.len() + 2 words into `out`, which has that length.
    unsafe { launch.launch(crate::launch::shape(1, 32, 0)) }?;
    let words = stream.clone_dtoh(&out)?;
    Ok(Layout {
        size: words[0],
        align: words[1],
        offsets: words[2..].to_vec(),
    })
}

/// Asserts that a Rust type and a C++ type have the same size, alignment and field
/// offsets on the device. Fields are named the same on both sides.
///
/// ```no_run
/// use gpuds_core::{assert_layout, hash::Universal, Gpu, Program};
/// let gpu = Gpu::new(0).unwrap();
/// let prelude = Program::new("layout", "#include <gpuds/core/hash.cuh>");
/// assert_layout!(&gpu, prelude, Universal, "gpuds::hash::universal", a, b, p);
/// ```
#[macro_export]
macro_rules! assert_layout {
    ($gpu:expr, $program:expr, $rust:ty, $cpp:expr, $($field:ident),* $(,)?) => {{
        let layout = $crate::layout::device_layout(
            $gpu, $program, $cpp, &[$(stringify!($field)),*],
        ).expect("layout kernel");
        assert_eq!(layout.size, ::core::mem::size_of::<$rust>() as u64, "size of {}", $cpp);
        assert_eq!(layout.align, ::core::mem::align_of::<$rust>() as u64, "align of {}", $cpp);
        let rust_offsets: Vec<u64> = vec![$(::core::mem::offset_of!($rust, $field) as u64),*];
        assert_eq!(layout.offsets, rust_offsets, "field offsets of {}", $cpp);
    }};
}
