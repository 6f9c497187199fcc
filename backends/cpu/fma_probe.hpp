// porta cpu — the arithmetic-peak probe behind CpuBackend::measure_fma_gflops.
#pragma once
#include "porta/dtype.hpp"

namespace porta::cpu {

/// GFLOP/s of fma chains on every core (f32: AVX-512/AVX2/scalar fma; bf16: AVX512_BF16
/// dot products); 0 for a dtype this cpu has no probe for (f16, f64, integers).
double measure_fma_gflops(DType dtype);

/// One core's bf16 dot products (vdpbf16ps) against its f32 fma, in GFLOP/s: chains in
/// registers, the best of a few runs of ~0.2 ms each, measured once per process (0, 0 without
/// AVX512_BF16). AVX512_BF16 runs at twice the f32 rate on AMD's Zen 4 and 5 but at half of
/// it on an Intel Xeon VM without AMX (171 against 349 GFLOP/s over two cores), where a bf16
/// session is slower than an f32 one: `auto` takes bf16 only where this says it is faster.
struct Bf16Rate {
  double bf16 = 0, f32 = 0;
};
const Bf16Rate& bf16_rate();
/// Whether bf16 products pay on this cpu: dot products at least kBf16FastRatio times the f32
/// fma rate (the format's operands are half the bytes too, but a product at half the rate
/// loses more than that saves).
inline constexpr double kBf16FastRatio = 1.25;
inline bool bf16_faster(const Bf16Rate& r) { return r.f32 > 0 && r.bf16 >= kBf16FastRatio * r.f32; }

}  // namespace porta::cpu
