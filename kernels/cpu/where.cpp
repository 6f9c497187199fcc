// Where on cpu: a flat select when no input broadcasts, else runs along the innermost axis.
// Works on raw storage (bytes of the value dtype), so every dtype shares three instances.
#include <cstdint>
#include <cstring>

#include "kernels/cpu/elementwise_cpu.hpp"

namespace porta::cpu {
namespace {

template <typename T>
void where_typed(const Tensor& cond, const Tensor& x, const Tensor& y, Tensor& out) {
  const bool* pc = cond.data<bool>();
  const T* px = x.data<T>();
  const T* py = y.data<T>();
  T* po = out.data<T>();
  int64_t n = out.numel();
  if (n == 0) return;
  const Shape& s = out.shape();
  if (cond.shape() == s && x.shape() == s && y.shape() == s) {
    // Both values loaded unconditionally and blended through a mask: the loop vectorizes (a
    // `c ? x[i] : y[i]` that may skip a load does not; 4096x4096 f32 took 32 ms, 17% of the
    // copy bandwidth). bool storage is one byte, 0 or 1.
    const uint8_t* cb = reinterpret_cast<const uint8_t*>(pc);
    parallel_for(n, ew::kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        T mask = static_cast<T>(0) - static_cast<T>(cb[i] != 0);
        po[i] = static_cast<T>((px[i] & mask) | (py[i] & ~mask));
      }
    });
    return;
  }
  BroadcastIter it(s, {&cond, &x, &y});
  int64_t inner = it.inner, sc = it.inner_stride[0], sx = it.inner_stride[1], sy = it.inner_stride[2];
  parallel_for(it.runs(), std::max<int64_t>(1, ew::kGrain / std::max<int64_t>(inner, 1)),
               [&](int64_t r0, int64_t r1) {
    int64_t off[3];
    for (int64_t r = r0; r < r1; ++r) {
      it.offsets(r, off);
      const bool* rc = pc + off[0];
      const T* rx = px + off[1];
      const T* ry = py + off[2];
      T* ro = po + r * inner;
      for (int64_t i = 0; i < inner; ++i) ro[i] = rc[i * sc] ? rx[i * sx] : ry[i * sy];
    }
  });
}

void where_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(1);
  switch (dtype_size(x.dtype())) {
    case 1: return where_typed<uint8_t>(ctx.in(0), x, ctx.in(2), ctx.out(0));
    case 2: return where_typed<uint16_t>(ctx.in(0), x, ctx.in(2), ctx.out(0));
    case 4: return where_typed<uint32_t>(ctx.in(0), x, ctx.in(2), ctx.out(0));
    case 8: return where_typed<uint64_t>(ctx.in(0), x, ctx.in(2), ctx.out(0));
  }
  ew::unsupported_dtype("Where", x.dtype(), kAllTypes);
}

}  // namespace

PORTA_REGISTER_KERNEL(Where, cpu, kAllTypes, where_cpu)

}  // namespace porta::cpu
