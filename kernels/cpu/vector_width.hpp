// porta cpu kernels — vectors of the width of the clone that runs (PORTA_CPU_CLONES,
// target_clones.hpp), for kernels that keep accumulators in registers across a reduction (an
// array accumulator round-trips through memory: store forwarding made such loops slower than
// oneDNN) and so must size their register blocking to the CPU's vector registers.
#pragma once

// A vector passed by value has an ISA-dependent ABI. The kernels' vector helpers are inlined
// into each clone, so GCC's -Wpsabi note about passing one out of line on a target without the
// wider registers does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace porta::cpu {

/// T values in `bytes` bytes as one value: one register of a clone whose vectors are that wide.
template <typename T, int bytes>
struct VecOf {
  typedef T type __attribute__((vector_size(bytes)));
};

/// Bytes of a vector register in the PORTA_CPU_CLONES clone that runs on this CPU: 64
/// (x86-64-v4, AVX-512), 32 (x86-64-v3, AVX2 + FMA) or 16 (baseline; also wherever
/// target_clones.hpp leaves the clones out). GCC lowers a generic vector wider than the
/// clone's registers through memory, and a register blocking sized for 32 registers spills
/// with 16: on an AVX2 machine a 64-byte small-map conv loop ran 57x slower than oneDNN
/// (vit_b_16's patch conv, 22 ms against 0.39 ms). A kernel that blocks its accumulators in
/// registers therefore picks its width and blocking by this, inside its clone (each clone
/// compiles every width; those it does not run are dead code), or one function per width
/// (PORTA_CPU_V4 / PORTA_CPU_V3, target_clones.hpp).
int vector_bytes();
/// Caps vector_bytes() for the whole process (tests of the narrower blockings on a wider
/// CPU); 0 lifts the cap. The environment's PORTA_CPU_VECTOR_BYTES sets it at start.
void limit_vector_bytes(int bytes);
/// The cap (0: none). custom_vmath's levels follow it too (64: AVX-512, 32: AVX2, 16: baseline).
int vector_bytes_limit();

}  // namespace porta::cpu
