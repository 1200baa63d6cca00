// gpuds/core/kernel_name.cuh: kernel names stamped per instantiation.
//
// A kernel source compiled once per type defines KERNEL_SUFFIX (`u32`, `u32_u64`) and
// names its entry points GPUDS_KERNEL(radix_onesweep), which becomes
// `radix_onesweep_u32`: the host finds each instantiation by name, as candle does.
#pragma once

#define GPUDS_KERNEL_PASTE2(name, suffix) name##_##suffix
#define GPUDS_KERNEL_PASTE(name, suffix) GPUDS_KERNEL_PASTE2(name, suffix)
#define GPUDS_KERNEL(name) GPUDS_KERNEL_PASTE(name, KERNEL_SUFFIX)
