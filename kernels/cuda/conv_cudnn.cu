// porta gpu kernels — Conv's "cudnn" implementation: cuDNN's legacy forward API
// (cudnnConvolutionForward), registered on cuda builds with cuDNN (detected at configure time:
// third_party/backend_cuda.cmake) ahead of the "implicit_gemm" one (conv.cu). It declines, with
// the reason, what cuDNN does not take: PORTA_CUDNN=0, bf16, asymmetric pads, tensors past int32
// sizes, an output size cuDNN computes differently, no algorithm within the workspace limit.
//
// Per distinct call shape (device, dtype, X, W, geometry, group) a plan is built once and
// cached: descriptors (spatial axes padded to two for 1-D convolutions, as cuDNN needs four
// dims at least) and the algorithm cuDNN's heuristics rank first among those that keep the
// precision asked (f32: FMA math, no TF32, unless PORTA_CUDA_ALLOW_TF32=1 — the cuBLAS rule)
// and need at most 1 GiB of workspace. Nothing waits for the device.
#include "kernels/cuda/conv_cudnn.cuh"

#if !defined(PORTA_HIP) && !defined(PORTA_GPU_EMU) && defined(PORTA_HAVE_CUDNN)
#include <cudnn.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace porta::PORTA_GPU_NS {
namespace {

#define PORTA_CUDNN_CHECK(device, call)                                                            \
  do {                                                                                             \
    cudnnStatus_t porta_cudnn_status_ = (call);                                                    \
    if (porta_cudnn_status_ != CUDNN_STATUS_SUCCESS)                                               \
      throw BackendError(str("[cuda] ", #call, " failed on cuda:", (device), ": ",                \
                             cudnnGetErrorString(porta_cudnn_status_), " (", __FILE__, ":", __LINE__, \
                             ")"));                                                                \
  } while (0)

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::string(v) == value;
}
bool cudnn_disabled() {
  static const bool disabled = env_is("PORTA_CUDNN", "0");
  return disabled;
}
bool allow_tf32() {
  static const bool allowed = env_is("PORTA_CUDA_ALLOW_TF32", "1");
  return allowed;
}

// One handle per device, bound to the device's stream; nullptr when cuDNN cannot start
// there (a library/driver mismatch): Conv then keeps to porta's kernels.
cudnnHandle_t handle(int device) {
  static std::mutex mutex;
  static auto* handles = new std::vector<std::pair<bool, cudnnHandle_t>>();
  cudaStream_t s = stream(device);
  std::lock_guard lock(mutex);
  if (handles->size() <= static_cast<size_t>(device)) handles->resize(device + 1, {false, nullptr});
  auto& [tried, h] = (*handles)[device];
  if (!tried) {
    tried = true;
    if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS) {
      h = nullptr;
    } else if (cudnnSetStream(h, s) != CUDNN_STATUS_SUCCESS) {
      (void)cudnnDestroy(h);
      h = nullptr;
    }
  }
  return h;
}

struct Plan {
  bool ok = false;
  std::string why;  // when not ok: the reason the call is declined
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo{};
  size_t workspace = 0;
  ~Plan() {
    if (x) (void)cudnnDestroyTensorDescriptor(x);
    if (y) (void)cudnnDestroyTensorDescriptor(y);
    if (w) (void)cudnnDestroyFilterDescriptor(w);
    if (conv) (void)cudnnDestroyConvolutionDescriptor(conv);
  }
};

// First byte of a tensor's elements (device_ptr<char> would count the view offset in bytes).
const void* first_byte(const Tensor& t) {
  return static_cast<const char*>(t.storage()->handle()) + t.offset() * static_cast<int64_t>(dtype_size(t.dtype()));
}

constexpr size_t kMaxWorkspace = size_t{1} << 30;

std::vector<int> packed_strides(const std::vector<int>& dims) {
  std::vector<int> s(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

std::shared_ptr<Plan> make_plan(cudnnHandle_t h, DType dtype, const Shape& xs, const Shape& ws, const Shape& ys,
                                const opdef::WindowGeometry& g, int64_t group, int device) {
  auto p = std::make_shared<Plan>();
  cudnnDataType_t data, compute;
  switch (dtype) {
    case DType::f32: data = compute = CUDNN_DATA_FLOAT; break;
    case DType::f64: data = compute = CUDNN_DATA_DOUBLE; break;
    case DType::f16: data = CUDNN_DATA_HALF, compute = CUDNN_DATA_FLOAT; break;
    default:
      p->why = str("cuDNN's path takes f32, f64 and f16, got ", dtype_name(dtype));
      return p;
  }
  const size_t n = g.spatial();
  for (size_t i = 0; i < n; ++i)
    if (g.pad_begin[i] != g.pad_end[i]) {
      p->why = str("cuDNN pads both ends alike, the call pads ", shape_str(g.pad_begin), " / ", shape_str(g.pad_end));
      return p;
    }
  // Descriptors hold int dims and strides: larger tensors stay with porta's kernels.
  if (shape_numel(xs) > INT32_MAX || shape_numel(ys) > INT32_MAX || shape_numel(ws) > INT32_MAX) {
    p->why = "a tensor has more than 2^31 - 1 elements (cuDNN descriptors hold int sizes)";
    return p;
  }
  // 1-D: a leading spatial axis of size 1.
  const bool lift = n == 1;
  std::vector<int> xd{static_cast<int>(xs[0]), static_cast<int>(xs[1])}, yd{static_cast<int>(ys[0]), static_cast<int>(ys[1])};
  std::vector<int> wd{static_cast<int>(ws[0]), static_cast<int>(ws[1])}, pad, stride, dilation;
  if (lift) {
    xd.push_back(1), yd.push_back(1), wd.push_back(1);
    pad.push_back(0), stride.push_back(1), dilation.push_back(1);
  }
  for (size_t i = 0; i < n; ++i) {
    xd.push_back(static_cast<int>(g.in[i]));
    yd.push_back(static_cast<int>(g.out[i]));
    wd.push_back(static_cast<int>(g.kernel[i]));
    pad.push_back(static_cast<int>(g.pad_begin[i]));
    stride.push_back(static_cast<int>(g.strides[i]));
    dilation.push_back(static_cast<int>(g.dilations[i]));
  }
  const int nd = static_cast<int>(xd.size());
  PORTA_CUDNN_CHECK(device, cudnnCreateTensorDescriptor(&p->x));
  PORTA_CUDNN_CHECK(device, cudnnCreateTensorDescriptor(&p->y));
  PORTA_CUDNN_CHECK(device, cudnnCreateFilterDescriptor(&p->w));
  PORTA_CUDNN_CHECK(device, cudnnCreateConvolutionDescriptor(&p->conv));
  PORTA_CUDNN_CHECK(device, cudnnSetTensorNdDescriptor(p->x, data, nd, xd.data(), packed_strides(xd).data()));
  PORTA_CUDNN_CHECK(device, cudnnSetTensorNdDescriptor(p->y, data, nd, yd.data(), packed_strides(yd).data()));
  PORTA_CUDNN_CHECK(device, cudnnSetFilterNdDescriptor(p->w, data, CUDNN_TENSOR_NCHW, nd, wd.data()));
  PORTA_CUDNN_CHECK(device, cudnnSetConvolutionNdDescriptor(p->conv, nd - 2, pad.data(), stride.data(),
                                                            dilation.data(), CUDNN_CROSS_CORRELATION, compute));
  PORTA_CUDNN_CHECK(device, cudnnSetConvolutionGroupCount(p->conv, static_cast<int>(group)));
  const bool fp32_exact = dtype == DType::f32 && !allow_tf32();
  PORTA_CUDNN_CHECK(device, cudnnSetConvolutionMathType(p->conv, fp32_exact ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
  // cuDNN must agree with ONNX on the output size, else porta's kernels run.
  std::vector<int> out(nd);
  if (cudnnGetConvolutionNdForwardOutputDim(p->conv, p->x, p->w, nd, out.data()) != CUDNN_STATUS_SUCCESS ||
      out != yd) {
    p->why = str("cuDNN's output size differs from ONNX's ", shape_str(ys));
    return p;
  }
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  PORTA_CUDNN_CHECK(device, cudnnGetConvolutionForwardAlgorithm_v7(h, p->x, p->w, p->conv, p->y,
                                                                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
  for (int i = 0; i < returned; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t& r = perf[i];
    if (r.status != CUDNN_STATUS_SUCCESS || r.memory > kMaxWorkspace) continue;
    // DEFAULT_MATH permits TF32 on Ampere and later: only FMA keeps full f32 precision.
    if (fp32_exact && r.mathType != CUDNN_FMA_MATH) continue;
    if (cudnnSetConvolutionMathType(p->conv, r.mathType) != CUDNN_STATUS_SUCCESS) continue;
    size_t bytes = 0;
    if (cudnnGetConvolutionForwardWorkspaceSize(h, p->x, p->w, p->conv, p->y, r.algo, &bytes) != CUDNN_STATUS_SUCCESS ||
        bytes > kMaxWorkspace)
      continue;
    p->algo = r.algo;
    p->workspace = bytes;
    p->ok = true;
    break;
  }
  if (!p->ok) p->why = "no cuDNN algorithm keeps the precision asked within 1 GiB of workspace";
  return p;
}

// The plan for a call (built once per shape and cached), or nullptr with `why` set when cuDNN
// is off or cannot start on the device.
std::shared_ptr<Plan> plan_for(const KernelContext& ctx, std::string& why) {
  if (cudnn_disabled()) {
    why = "turned off by PORTA_CUDNN=0";
    return nullptr;
  }
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  const opdef::WindowGeometry g = conv_window(ctx);
  const int device = ctx.device.index;
  if (g.spatial() < 1 || g.spatial() > 3) {
    why = str("cuDNN's path takes 1 to 3 spatial axes, got ", g.spatial());
    return nullptr;
  }
  cudnnHandle_t h = handle(device);
  if (!h) {
    why = str("cuDNN could not start on cuda:", device);
    return nullptr;
  }
  const int64_t group = ctx.attrs->get_int("group");
  static std::mutex mutex;
  static auto* plans = new std::map<std::string, std::shared_ptr<Plan>>();
  std::string key = str(device, '|', dtype_name(x.dtype()), '|', shape_str(x.shape()), '|', shape_str(w.shape()), '|',
                        group, '|', shape_str(g.strides), '|', shape_str(g.dilations), '|', shape_str(g.pad_begin), '|',
                        shape_str(g.pad_end));
  std::lock_guard lock(mutex);
  auto it = plans->find(key);
  if (it == plans->end())
    it = plans->emplace(key, make_plan(h, x.dtype(), x.shape(), w.shape(), ctx.outputs.at(0).shape(), g, group, device))
             .first;
  why = it->second->why;
  return it->second;
}

std::string conv_cudnn_supports(const KernelContext& ctx) {
  std::string why;
  std::shared_ptr<Plan> plan = plan_for(ctx, why);
  return plan && plan->ok ? std::string() : why;
}

void conv_cudnn(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  std::string why;
  std::shared_ptr<Plan> plan = plan_for(ctx, why);
  if (!plan || !plan->ok) throw Unsupported(str("[Conv] cuda kernel 'cudnn' called for a call it declines: ", why));
  const int device = ctx.device.index;
  // The bias is written first and cuDNN adds onto it (beta 1).
  const bool accumulate = conv_bias_into(ctx);
  Tensor workspace = plan->workspace ? Tensor::empty({static_cast<int64_t>(plan->workspace)}, DType::u8, x.device())
                                     : Tensor();
  void* ws = plan->workspace ? device_ptr<unsigned char>(workspace) : nullptr;
  const double alpha_d = 1.0, beta_d = accumulate ? 1.0 : 0.0;
  const float alpha_f = 1.0f, beta_f = accumulate ? 1.0f : 0.0f;
  const bool f64 = x.dtype() == DType::f64;
  PORTA_CUDNN_CHECK(device, cudnnConvolutionForward(
                                handle(device), f64 ? static_cast<const void*>(&alpha_d) : &alpha_f, plan->x,
                                first_byte(x), plan->w, first_byte(w), plan->conv, plan->algo,
                                ws, plan->workspace, f64 ? static_cast<const void*>(&beta_d) : &beta_f, plan->y,
                                const_cast<void*>(first_byte(y))));
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL_IMPL(Conv, kFloats, conv_cudnn, conv_cudnn_supports, "cudnn", 1)

}  // namespace porta::PORTA_GPU_NS
#endif
