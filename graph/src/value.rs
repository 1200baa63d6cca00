//! [`EdgeValue`]: what an edge carries: nothing (a set graph, 30 destinations per slab)
//! or a `u32` / `u64` value (a map graph: 15 or 10 edges per slab).

use gpuds_core::DeviceType;

mod sealed {
    pub trait Sealed {}
    impl Sealed for () {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// The value type of a graph's edges: `()` for a set graph (destinations only, the
/// variant triangle counting uses), `u32` or `u64` for a map graph (a weight per edge).
pub trait EdgeValue:
    Copy + Default + PartialEq + std::fmt::Debug + Send + Sync + sealed::Sealed + 'static
{
    /// The device type of value arrays (`u32` for `()`, whose arrays are never read).
    type Device: DeviceType + Default;
    /// Whether the graph is a set (no values).
    const SET: bool;
    /// Edges per slab.
    const SLOTS: u32;
    /// Whether an entry is one word that one store writes (sets and `u32` values; a
    /// `u64` value makes a 12-byte entry): the bulk build places such entries directly.
    const PACKED: bool;
    /// The kernel module's suffix.
    const SUFFIX: &'static str;
    /// The value as the device stores it.
    fn to_device(self) -> Self::Device;
    /// The value from the device.
    fn from_device(d: Self::Device) -> Self;
}

impl EdgeValue for () {
    type Device = u32;
    const SET: bool = true;
    const SLOTS: u32 = 30;
    const PACKED: bool = true;
    const SUFFIX: &'static str = "set";
    fn to_device(self) -> u32 {
        0
    }
    fn from_device(_: u32) -> Self {}
}

impl EdgeValue for u32 {
    type Device = u32;
    const SET: bool = false;
    const SLOTS: u32 = 15;
    const PACKED: bool = true;
    const SUFFIX: &'static str = "map_u32";
    fn to_device(self) -> u32 {
        self
    }
    fn from_device(d: u32) -> Self {
        d
    }
}

impl EdgeValue for u64 {
    type Device = u64;
    const SET: bool = false;
    const SLOTS: u32 = 10;
    const PACKED: bool = false;
    const SUFFIX: &'static str = "map_u64";
    fn to_device(self) -> u64 {
        self
    }
    fn from_device(d: u64) -> Self {
        d
    }
}
