// porta cpu — the arithmetic-peak probe behind CpuBackend::measure_fma_gflops.
#pragma once
#include "porta/dtype.hpp"

namespace porta::cpu {

/// GFLOP/s of fma chains on every core (f32: AVX-512/AVX2/scalar fma; bf16: AVX512_BF16
/// dot products); 0 for a dtype this cpu has no probe for (f16, f64, integers).
double measure_fma_gflops(DType dtype);

}  // namespace porta::cpu
