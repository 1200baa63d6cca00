//! The LinearProbeMap kernel module: one instantiation per key type, value type, group
//! width, probing policy and deletion mode.

use gpuds_core::{DeviceKey, DeviceValue, Gpu, Kernel, Program};

use super::config::{Deletion, LinearConfig};
use crate::error::Result;
use crate::probe::{GroupWidth, Probing};

const SOURCE: &str = include_str!("../../cuda/kernels/linear.cu");

/// What selects one instantiation of the module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Variant {
    pub key: (&'static str, &'static str),
    pub value: (&'static str, &'static str),
    pub width: GroupWidth,
    pub probing: Probing,
    pub deletion: Deletion,
}

impl Variant {
    pub fn of<K: DeviceKey, V: DeviceValue>(config: &LinearConfig) -> Self {
        Variant {
            key: (K::CUDA_TYPE, K::SUFFIX),
            value: (V::CUDA_TYPE, V::SUFFIX),
            width: config.group_width,
            probing: config.probing,
            deletion: config.deletion,
        }
    }

    fn suffix(&self) -> String {
        format!(
            "{}_{}_t{}_{}_{}",
            self.key.1,
            self.value.1,
            self.width.get(),
            self.probing.suffix(),
            self.deletion.suffix()
        )
    }

    /// The C++ type of the device ref for this instantiation.
    pub fn ref_type(&self) -> String {
        format!(
            "gpuds::hive::linear_ref<{}, {}, {}, {}, {}>",
            self.key.0,
            self.value.0,
            self.width.get(),
            self.probing.cuda_type(),
            self.deletion == Deletion::KeyTombstones
        )
    }

    pub fn program(&self) -> Program {
        Program::new(format!("linear_{}", self.suffix()), SOURCE)
            .headers(crate::cuda_headers())
            .define("KEY_T", self.key.0)
            .define("VALUE_T", self.value.0)
            .define("LINEAR_TILE", self.width.get())
            .define("LINEAR_PROBING", self.probing.cuda_type())
            .define(
                "LINEAR_KEY_TOMBSTONES",
                u32::from(self.deletion == Deletion::KeyTombstones),
            )
            .define("KERNEL_SUFFIX", self.suffix())
    }
}

/// The loaded kernels of one instantiation.
#[derive(Clone, Debug)]
pub(crate) struct Kernels {
    pub insert: Kernel,
    pub find: Kernel,
    pub erase: Kernel,
    pub apply: Kernel,
    pub census: Kernel,
    pub migrate: Kernel,
    pub first_reserved: Kernel,
}

impl Kernels {
    pub fn load(gpu: &Gpu, variant: &Variant) -> Result<Self> {
        let module = gpu.load(&variant.program())?;
        let suffix = variant.suffix();
        let get = |name: &str| module.kernel(&format!("linear_{name}_{suffix}"));
        Ok(Kernels {
            insert: get("insert")?,
            find: get("find")?,
            erase: get("erase")?,
            apply: get("apply")?,
            census: get("census")?,
            migrate: get("migrate")?,
            first_reserved: get("first_reserved")?,
        })
    }
}

/// Representative instantiations: both key widths, packed and wide slots, every group
/// width, both policies and both deletion modes.
pub(crate) fn programs() -> Vec<Program> {
    let mut programs = Vec::new();
    let mut add = |key, value, width: u32, probing, deletion| {
        if let Ok(width) = GroupWidth::new(width) {
            programs.push(
                Variant {
                    key,
                    value,
                    width,
                    probing,
                    deletion,
                }
                .program(),
            );
        }
    };
    let u32_t = ("unsigned int", "u32");
    let u64_t = ("unsigned long long", "u64");
    for width in [1, 2, 4, 8, 16, 32] {
        add(
            u32_t,
            u32_t,
            width,
            Probing::Linear,
            Deletion::ValueTombstones,
        );
    }
    add(
        u32_t,
        u32_t,
        4,
        Probing::DoubleHashing,
        Deletion::ValueTombstones,
    );
    add(u32_t, u32_t, 1, Probing::Linear, Deletion::KeyTombstones);
    add(
        u32_t,
        u32_t,
        8,
        Probing::DoubleHashing,
        Deletion::KeyTombstones,
    );
    add(u64_t, u64_t, 1, Probing::Linear, Deletion::ValueTombstones);
    add(
        u64_t,
        u64_t,
        4,
        Probing::DoubleHashing,
        Deletion::KeyTombstones,
    );
    add(u64_t, u32_t, 2, Probing::Linear, Deletion::ValueTombstones);
    add(
        u32_t,
        u64_t,
        1,
        Probing::DoubleHashing,
        Deletion::KeyTombstones,
    );
    programs
}
