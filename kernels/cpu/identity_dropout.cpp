// Identity and inference Dropout on cpu: a parallel copy (and a mask of ones).
#include <cstring>

#include "kernels/cpu/elementwise_cpu.hpp"
#include "ops/dropout_util.hpp"

namespace porta::cpu {
namespace {

void copy_bytes(const Tensor& src, Tensor& dst) {
  const char* s = static_cast<const char*>(src.raw_data());
  char* d = static_cast<char*>(dst.raw_data());
  int64_t bytes = static_cast<int64_t>(src.nbytes());
  parallel_for(bytes, 1 << 18, [&](int64_t b, int64_t e) { std::memcpy(d + b, s + b, e - b); });
}

void identity_cpu(KernelContext& ctx) { copy_bytes(ctx.in(0), ctx.out(0)); }

void dropout_cpu(KernelContext& ctx) {
  opdef::require_identity_dropout(ctx.inputs);
  copy_bytes(ctx.in(0), ctx.out(0));
  if (ctx.outputs.size() > 1 && ctx.out(1).defined() && ctx.out(1).numel() > 0)
    std::memset(ctx.out(1).raw_data(), 1, ctx.out(1).nbytes());
}

}  // namespace

PORTA_REGISTER_KERNEL(Identity, cpu, kAllTypes, identity_cpu)
PORTA_REGISTER_KERNEL(Dropout, cpu, kFloats, dropout_cpu)

}  // namespace porta::cpu
