// porta gpu kernels — LSTM and GRU (ONNX layouts 0 and 1), f32 and f64, with the equations of the
// references in ops/lstm.cpp and ops/gru.cpp: every direction, B, sequence_lens, initial_h,
// initial_c, peepholes P, clip, GRU's linear_before_reset 0 and 1; Y, Y_h, Y_c optional.
//
// Per direction: one GEMM projects every time step's input, XW = X (S*N x I) . W^T; then per
// step one GEMM of the state, HR = h (N x H) . R^T (gemm.cuh: cuBLAS on cuda, the tiled kernel
// on hip), and one kernel applies the gates to (batch entry, hidden unit) pairs. A batch entry
// b at step s works on time t = s (forward) or len[b] - 1 - s (reverse) and rests once s
// reaches len[b]; Y is zero-filled first, so steps past a length read 0, as in the reference.
// GRU with linear_before_reset 0 needs r before the candidate's product: a first kernel
// computes z and r * h, a second GEMM (r * h) . R_h^T, a second kernel the candidate.
//
// sequence_lens stays on the device: each gate kernel reads len[b] and reports a value
// outside [0, S] through a deferred check (gpu_runtime.hpp), using 0 for it meanwhile.
#include <limits>

#include "kernels/cuda/copy_view.cuh"
#include "kernels/cuda/gemm.cuh"
#include "ops/rnn_util.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

struct StepArgs {
  int64_t step = 0, seq = 0, batch = 0, hidden = 0, directions = 1, direction = 0;
  int64_t layout = 0;  // 0: X [S, N, I], Y [S, D, N, H]; 1: X [N, S, I], Y [N, S, D, H]
  bool reverse = false;
  double clip = 0;
  const void* lens = nullptr;  // sequence_lens (i32 or i64) or null: all seq
  bool lens_i64 = false;
  DeferredCheck lens_check;
};

// Row of X (and of XW) at time t of batch entry b; offset of Y's hidden vector (opdef::RnnDims).
__device__ __forceinline__ int64_t row_of_x(const StepArgs& a, int64_t t, int64_t b) {
  return a.layout ? b * a.seq + t : t * a.batch + b;
}
__device__ __forceinline__ int64_t y_offset(const StepArgs& a, int64_t t, int64_t b) {
  return (a.layout ? (b * a.seq + t) * a.directions + a.direction : (t * a.directions + a.direction) * a.batch + b) *
         a.hidden;
}

// Sequence length of batch entry b (reported and read as 0 when out of range).
__device__ __forceinline__ int64_t length_of(const StepArgs& a, int64_t b) {
  if (!a.lens) return a.seq;
  const int64_t v = a.lens_i64 ? static_cast<const int64_t*>(a.lens)[b] : static_cast<const int32_t*>(a.lens)[b];
  if (v < 0 || v > a.seq) {
    report_failed_check(a.lens_check, v);
    return 0;
  }
  return v;
}

template <typename A>
__device__ __forceinline__ A clipped(A v, double clip) {
  const A c = static_cast<A>(clip);
  return v < -c ? -c : (v > c ? c : v);
}
template <typename A>
__device__ __forceinline__ A sigmoid(A v) {
  if constexpr (std::is_same_v<A, float>) return 1.0f / (1.0f + expf(-v));
  else return 1.0 / (1.0 + exp(-v));
}
template <typename A>
__device__ __forceinline__ A tanh_of(A v) {
  if constexpr (std::is_same_v<A, float>) return tanhf(v);
  else return tanh(v);
}

// LSTM gates (iofc) for one step. xw: [S, N, 4H] (this direction), hr: [N, 4H], bias: [8H]
// (Wb then Rb) or null, peep: [3H] (i, o, f) or null; h, c: [N, H] state; y: [S, D, N, H].
template <typename T>
__global__ void lstm_step(const T* xw, const T* hr, const T* bias, const T* peep, T* h, T* c,
                          T* y, StepArgs a) {
  const int64_t H = a.hidden, total = a.batch * H;
  int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t b = i / H, j = i % H;
    const int64_t len = length_of(a, b);
    if (a.step >= len) continue;
    const int64_t t = a.reverse ? len - 1 - a.step : a.step;
    const T* x_row = xw + row_of_x(a, t, b) * 4 * H;
    const T* h_row = hr + b * 4 * H;
    T g[4];
    for (int r = 0; r < 4; ++r) {
      g[r] = x_row[r * H + j] + h_row[r * H + j];
      if (bias) g[r] += bias[r * H + j] + bias[4 * H + r * H + j];
    }
    const T pi = peep ? peep[j] : T(0), po = peep ? peep[H + j] : T(0), pf = peep ? peep[2 * H + j] : T(0);
    const T c_old = c[i];
    const T in_gate = sigmoid(clipped(g[0] + pi * c_old, a.clip));
    const T forget = sigmoid(clipped(g[2] + pf * c_old, a.clip));
    const T cand = tanh_of(clipped(g[3], a.clip));
    const T c_new = forget * c_old + in_gate * cand;
    const T out_gate = sigmoid(clipped(g[1] + po * c_new, a.clip));
    const T h_new = out_gate * tanh_of(c_new);
    c[i] = c_new;
    h[i] = h_new;
    if (y) y[y_offset(a, t, b) + j] = h_new;
  }
}

// GRU gates (zrh), linear_before_reset 1: hr is h . R^T for all three gates ([N, 3H]);
// bias is [6H] (Wb then Rb) or null.
template <typename T>
__global__ void gru_step_lbr(const T* xw, const T* hr, const T* bias, T* h, T* y, StepArgs a) {
  const int64_t H = a.hidden, total = a.batch * H;
  int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t b = i / H, j = i % H;
    const int64_t len = length_of(a, b);
    if (a.step >= len) continue;
    const int64_t t = a.reverse ? len - 1 - a.step : a.step;
    const T* x_row = xw + row_of_x(a, t, b) * 3 * H;
    const T* h_row = hr + b * 3 * H;
    auto wb = [&](int r) { return bias ? bias[r * H + j] : T(0); };
    auto rb = [&](int r) { return bias ? bias[3 * H + r * H + j] : T(0); };
    const T z = sigmoid(clipped(x_row[j] + wb(0) + h_row[j] + rb(0), a.clip));
    const T r = sigmoid(clipped(x_row[H + j] + wb(1) + h_row[H + j] + rb(1), a.clip));
    const T cand = tanh_of(clipped(x_row[2 * H + j] + wb(2) + r * (h_row[2 * H + j] + rb(2)), a.clip));
    const T h_new = (T(1) - z) * cand + z * h[i];
    h[i] = h_new;
    if (y) y[y_offset(a, t, b) + j] = h_new;
  }
}

// linear_before_reset 0, first half: hr = h . R[0:2H]^T ([N, 2H]); writes z and r * h.
template <typename T>
__global__ void gru_zr(const T* xw, const T* hr, const T* bias, const T* h, T* z_out, T* rh_out,
                       StepArgs a) {
  const int64_t H = a.hidden, total = a.batch * H;
  int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t b = i / H, j = i % H;
    const int64_t len = length_of(a, b);
    if (a.step >= len) {
      rh_out[i] = T(0);  // the next GEMM reads every row; resting rows stay defined
      continue;
    }
    const int64_t t = a.reverse ? len - 1 - a.step : a.step;
    const T* x_row = xw + row_of_x(a, t, b) * 3 * H;
    const T* h_row = hr + b * 2 * H;
    auto wb = [&](int r) { return bias ? bias[r * H + j] : T(0); };
    auto rb = [&](int r) { return bias ? bias[3 * H + r * H + j] : T(0); };
    z_out[i] = sigmoid(clipped(x_row[j] + wb(0) + h_row[j] + rb(0), a.clip));
    const T r = sigmoid(clipped(x_row[H + j] + wb(1) + h_row[H + j] + rb(1), a.clip));
    rh_out[i] = r * h[i];
  }
}

// linear_before_reset 0, second half: hrh = (r * h) . R_h^T ([N, H]).
template <typename T>
__global__ void gru_candidate(const T* xw, const T* hrh, const T* bias, const T* z, T* h, T* y,
                              StepArgs a) {
  const int64_t H = a.hidden, total = a.batch * H;
  int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t b = i / H, j = i % H;
    const int64_t len = length_of(a, b);
    if (a.step >= len) continue;
    const int64_t t = a.reverse ? len - 1 - a.step : a.step;
    const T* x_row = xw + row_of_x(a, t, b) * 3 * H;
    const T wb = bias ? bias[2 * H + j] : T(0), rb = bias ? bias[3 * H + 2 * H + j] : T(0);
    const T cand = tanh_of(clipped(x_row[2 * H + j] + wb + hrh[i] + rb, a.clip));
    const T h_new = (T(1) - z[i]) * cand + z[i] * h[i];
    h[i] = h_new;
    if (y) y[y_offset(a, t, b) + j] = h_new;
  }
}

// C (m x n) = A (m x k) . B^T, B stored row-major as n x k (row stride ldb).
template <typename T>
void gemm_abt(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k, int64_t ldb, int device) {
  if (m == 0 || n == 0) return;
  GemmCall<T> call;
  call.a = a;
  call.b = b;
  call.c = c;
  call.m = m;
  call.n = n;
  call.k = k;
  call.trans_b = true;
  call.lda = k;
  call.ldb = ldb;
  call.ldc = n;
  gemm(call, device);
}

template <int Gates>
void rnn_gpu(KernelContext& ctx) {
  const char* op = Gates == 4 ? "LSTM" : "GRU";
  const opdef::RnnDims n = opdef::rnn_dims(ctx);
  const int64_t S = n.seq, N = n.batch, I = n.input, H = n.hidden, D = n.directions, G = Gates * H;
  auto out = [&](size_t i) -> Tensor {
    return i < ctx.outputs.size() && ctx.out(i).defined() && ctx.out(i).numel() > 0 ? ctx.out(i) : Tensor();
  };
  Tensor y = out(0), y_h = out(1), y_c = Gates == 4 ? out(2) : Tensor();
  if (N == 0 || H == 0) return;
  const int device = ctx.device.index;
  cudaStream_t s = stream(device);
  const bool lbr = Gates == 3 && ctx.attrs->get_int("linear_before_reset") != 0;
  StepArgs args;
  args.seq = S;
  args.batch = N;
  args.hidden = H;
  args.directions = D;
  args.layout = n.layout;
  args.clip = opdef::rnn_clip(*ctx.attrs);
  if (ctx.has_input(4)) {
    const Tensor& lens = ctx.in(4);
    args.lens_i64 = lens.dtype() == DType::i64;
    args.lens = args.lens_i64 ? static_cast<const void*>(device_ptr<const int64_t>(lens))
                              : static_cast<const void*>(device_ptr<const int32_t>(lens));
    args.lens_check = arm_deferred_check(device, [op, S](int64_t bad) {
      throw ShapeError(str("[", op, "] expected sequence_lens in [0, ", S, "], got ", bad));
    });
  }
  visit_gpu_dtype_in<kF32 | kF64>(ctx.in(0).dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    const DType dt = ctx.in(0).dtype();
    if (y.defined()) PORTA_GPU_CHECK(device, cudaMemsetAsync(device_ptr<T>(y), 0, y.nbytes(), s));
    Tensor xw = Tensor::empty({S * N * G}, dt, ctx.device);
    Tensor hr = Tensor::empty({N * G}, dt, ctx.device);
    Tensor h = Tensor::empty({N * H}, dt, ctx.device);
    Tensor c = Gates == 4 ? Tensor::empty({N * H}, dt, ctx.device) : Tensor();
    Tensor z = Gates == 3 && !lbr ? Tensor::empty({N * H}, dt, ctx.device) : Tensor();
    Tensor rh = Gates == 3 && !lbr ? Tensor::empty({N * H}, dt, ctx.device) : Tensor();
    const size_t state_bytes = static_cast<size_t>(N * H) * sizeof(T);
    const unsigned blocks = grid_for(N * H, 256, device);
    for (int64_t d = 0; d < D; ++d) {
      args.direction = d;
      args.reverse = opdef::rnn_reverse(*ctx.attrs, d);
      const T* w = device_ptr<const T>(ctx.in(1)) + d * G * I;
      const T* r = device_ptr<const T>(ctx.in(2)) + d * G * H;
      const T* bias = ctx.has_input(3) ? device_ptr<const T>(ctx.in(3)) + d * 2 * G : nullptr;
      const T* peep = Gates == 4 && ctx.has_input(7) ? device_ptr<const T>(ctx.in(7)) + d * 3 * H : nullptr;
      // States are [D, N, H] (layout 0) or [N, D, H] (layout 1): direction d's [N, H] is a
      // view, copied to and from the dense working state.
      const int state_axis = n.layout ? 1 : 0;
      const Shape one_direction = n.layout ? Shape{N, 1, H} : Shape{1, N, H};
      auto init_state = [&](Tensor& state, size_t input) {
        if (ctx.has_input(input))
          copy_view(ctx.in(input).slice(state_axis, d, d + 1), state.reshape(one_direction), ctx.device);
        else
          PORTA_GPU_CHECK(device, cudaMemsetAsync(device_ptr<T>(state), 0, state_bytes, s));
      };
      init_state(h, 5);
      if (Gates == 4) init_state(c, 6);
      gemm_abt<T>(device_ptr<const T>(ctx.in(0)), w, device_ptr<T>(xw), S * N, G, I, I, device);
      T* y_ptr = y.defined() ? device_ptr<T>(y) : nullptr;
      for (int64_t step = 0; step < S; ++step) {
        args.step = step;
        if constexpr (Gates == 4) {
          gemm_abt<T>(device_ptr<const T>(h), r, device_ptr<T>(hr), N, G, H, H, device);
          launch<lstm_step<T>>(blocks, 256, 0, s, device_ptr<const T>(xw), device_ptr<const T>(hr), bias, peep,
                                              device_ptr<T>(h), device_ptr<T>(c), y_ptr, args);
          PORTA_GPU_CHECK_LAUNCH(device, "lstm_step");
        } else if (lbr) {
          gemm_abt<T>(device_ptr<const T>(h), r, device_ptr<T>(hr), N, G, H, H, device);
          launch<gru_step_lbr<T>>(blocks, 256, 0, s, device_ptr<const T>(xw), device_ptr<const T>(hr), bias,
                                                 device_ptr<T>(h), y_ptr, args);
          PORTA_GPU_CHECK_LAUNCH(device, "gru_step_lbr");
        } else {
          gemm_abt<T>(device_ptr<const T>(h), r, device_ptr<T>(hr), N, 2 * H, H, H, device);
          launch<gru_zr<T>>(blocks, 256, 0, s, device_ptr<const T>(xw), device_ptr<const T>(hr), bias,
                                           device_ptr<const T>(h), device_ptr<T>(z), device_ptr<T>(rh), args);
          PORTA_GPU_CHECK_LAUNCH(device, "gru_zr");
          gemm_abt<T>(device_ptr<const T>(rh), r + 2 * H * H, device_ptr<T>(hr), N, H, H, H, device);
          launch<gru_candidate<T>>(blocks, 256, 0, s, device_ptr<const T>(xw), device_ptr<const T>(hr), bias,
                                                  device_ptr<const T>(z), device_ptr<T>(h), y_ptr, args);
          PORTA_GPU_CHECK_LAUNCH(device, "gru_candidate");
        }
      }
      if (y_h.defined()) copy_view(h.reshape(one_direction), y_h.slice(state_axis, d, d + 1), ctx.device);
      if (y_c.defined()) copy_view(c.reshape(one_direction), y_c.slice(state_axis, d, d + 1), ctx.device);
    }
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(LSTM, kF32 | kF64, rnn_gpu<4>)
PORTA_REGISTER_GPU_KERNEL(GRU, kF32 | kF64, rnn_gpu<3>)

}  // namespace porta::PORTA_GPU_NS
