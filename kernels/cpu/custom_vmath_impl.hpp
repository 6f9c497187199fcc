// porta cpu kernels — bodies of the custom_vmath.hpp loops, written with GCC vector extensions
// of one register of the level (PORTA_VMATH_LANES floats: 16, 8 or 4). custom_vmath.cpp
// includes this file once per instruction-set level, inside a `#pragma GCC target` region and
// with PORTA_VMATH_LEVEL naming the namespace, so every helper (also the inlined ones) is
// compiled for that level: zmm, ymm+FMA or baseline xmm code. A vector wider than the level's
// registers is lowered through memory, lane by lane where an operation has no split form (at
// 16 lanes the AVX2 swish ran ~5x slower than at 8).
// No include guard on purpose.
namespace porta::cpu::vmath::PORTA_VMATH_LEVEL {

constexpr int kLanes = PORTA_VMATH_LANES;
typedef float vf __attribute__((vector_size(kLanes * 4)));
typedef int32_t vi __attribute__((vector_size(kLanes * 4)));

PORTA_INLINE vf splat(float v) { return vf{} + v; }
PORTA_INLINE vf load(const float* p) { vf v; std::memcpy(&v, p, sizeof v); return v; }
PORTA_INLINE void store(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
// Loads n < kLanes elements, the rest filled with `pad`.
PORTA_INLINE vf load_tail(const float* p, int64_t n, float pad) {
  float buf[kLanes];
  for (int i = 0; i < kLanes; ++i) buf[i] = i < n ? p[i] : pad;
  return load(buf);
}
PORTA_INLINE void store_tail(float* p, vf v, int64_t n) {
  float buf[kLanes];
  store(buf, v);
  for (int64_t i = 0; i < n; ++i) p[i] = buf[i];
}
PORTA_INLINE vf select(vi mask, vf a, vf b) { return mask ? a : b; }
PORTA_INLINE bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// Writes an output row of n floats: compute(dst, begin, count) produces elements
// [begin, begin + count) into dst. Streaming rows are computed in L1-sized chunks and copied
// out with non-temporal stores, which the CPU's write-combining merges into full lines without
// reading them first.
template <typename F>
PORTA_INLINE void write_row(float* y, int64_t n, bool stream, F&& compute) {
  if (!stream || !aligned16(y)) {
    compute(y, int64_t{0}, n);
    return;
  }
  constexpr int64_t kChunk = 512;
  alignas(64) float buf[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    int64_t m = n - i < kChunk ? n - i : kChunk;
    compute(buf, i, m);
    int64_t k = 0;
    for (; k + 4 <= m; k += 4) _mm_stream_ps(y + i + k, _mm_load_ps(buf + k));
    for (; k < m; ++k) y[i + k] = buf[k];
  }
  _mm_sfence();
}

PORTA_INLINE vf vabs(vf x) { return (vf)((vi)x & 0x7fffffff); }
// |mag| with the sign bit of x (mag >= 0).
PORTA_INLINE vf with_sign_of(vf mag, vf x) { return (vf)((vi)mag | ((vi)x & (int32_t)0x80000000)); }

// ---- Elementwise math. Each function has this one implementation, used by the row loops
// (exp_f32, tanh_f32, sigmoid_f32, erf_f32) and inside the fused ones (softmax's exp,
// BiasGelu's erf and tanh forms), so an op and its fused form compute the same values.

// e^x as p * 2^n: n = round(x / ln2) and r = x - n ln2 (|r| <= ln2 / 2, ln2 in two parts, the
// first exact in 16 bits so n * ln2_hi is exact), e^r by its degree-7 Taylor polynomial
// (within 1 ulp). n is read from the bits of x / ln2 + 1.5 * 2^23, which leaves it in the low
// mantissa bits (|x / ln2| < 2^22), without a float -> int conversion. NaN stays NaN.
PORTA_INLINE vf exp_parts(vf x, vi& n) {
  const float magic = 12582912.f;
  vf shifted = x * 1.44269504088896341f + magic;
  vf nf = shifted - magic;
  n = (vi)shifted - (vi)splat(magic);
  vf r = x - nf * 0.693145751953125f - nf * 1.428606765330187e-06f;
  vf p = splat(1.f / 5040);
  p = p * r + 1.f / 720;
  p = p * r + 1.f / 120;
  p = p * r + 1.f / 24;
  p = p * r + 1.f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  return p * r + 1.f;
}

// e^x for x in [-87.3, 88.3] (2^n a normal float), no range checks.
PORTA_INLINE vf vexp_in_range(vf x) {
  vi n;
  vf p = exp_parts(x, n);
  return p * (vf)((n + 127) << 23);
}

// e^x: 0 below -87.33654 (results under FLT_MIN flushed), +inf above 88.37626 (= 127.5 ln2,
// where n would reach 128: the last finite stretch of exp, up to FLT_MAX at 88.72, is given as
// +inf; vexp_full has it). NaN stays NaN. Softmax, sigmoid and gelu's tanh form use this one.
PORTA_INLINE vf vexp(vf x) {
  vi underflow = x < -87.33654f, overflow = x > 88.37626f;
  vf res = vexp_in_range(select(underflow | overflow, splat(0.f), x));
  res = select(underflow, splat(0.f), res);
  return select(overflow, splat(std::numeric_limits<float>::infinity()), res);
}

// vexp over the whole float range: also (88.37626, 88.72283], where n = 128 (2^(n-1) is built
// and doubled); +inf above. For exp_f32.
PORTA_INLINE vf vexp_full(vf x) {
  vi underflow = x < -87.33654f, overflow = x > 88.72283f;
  vi n;
  vf p = exp_parts(select(underflow | overflow, splat(0.f), x), n);
  vi top = n > 127;  // -1 (true) or 0
  vf res = p * (vf)((n + top + 127) << 23);
  res = select(top, res + res, res);
  res = select(underflow, splat(0.f), res);
  return select(overflow, splat(std::numeric_limits<float>::infinity()), res);
}

// tanh: odd polynomial for |x| < 0.625 (no cancellation near 0), 1 - 2 / (e^{2|x|} + 1)
// beyond, with |x| capped at 10 (tanh is 1 in float from 9.01 on).
PORTA_INLINE vf vtanh(vf x) {
  vf ax = vabs(x);
  vf z = x * x;
  vf small = splat(-5.70498872745e-3f);
  small = small * z + 2.06390887954e-2f;
  small = small * z - 5.37397155531e-2f;
  small = small * z + 1.33314422036e-1f;
  small = small * z - 3.33332819422e-1f;
  small = small * z * x + x;
  vf e = vexp_in_range(2.f * select(ax > 10.f, splat(10.f), ax));
  vf big = with_sign_of(1.f - 2.f / (e + 1.f), x);
  return select(ax < 0.625f, small, big);  // NaN: big, which is NaN
}

PORTA_INLINE vf vsigmoid(vf x) { return 1.f / (1.f + vexp(-x)); }

// erf: for |x| < 0.9, x + x q(x^2) with q a degree-5 polynomial (erf(x) / x - 1, relative
// minimax, 1.2e-8); beyond, 1 - e^{g(t)} signed like x, t = min(|x|, 3.92) (erf is 1 in
// float from 3.92 on) and g a degree-6 polynomial of log(erfc(t)) (minimax weighted by
// erfc / erf, 1.7e-9 relative in erf). Both arms are computed and one is selected. Within
// 1.20 ulp of float64 erf with FMA (v3, v4) and 1.42 ulp at baseline, every float checked;
// NaN stays NaN, erf(+-inf) = +-1.
PORTA_INLINE vf verf(vf x) {
  vf ax = vabs(x);
  vf s = x * x;
  vf q = s * -6.090357783e-04f + 5.011962261e-03f;
  q = q * s - 2.677890845e-02f;
  q = q * s + 1.128214076e-01f;
  q = q * s - 3.761252463e-01f;
  q = q * s + 1.283791512e-01f;
  vf small = x * q + x;
  vf t = select(ax > 3.92f, splat(3.92f), ax);
  vf g = t * 1.982207032e-04f - 3.065499710e-03f;
  g = g * t + 2.231524885e-02f;
  g = g * t - 1.041137427e-01f;
  g = g * t - 6.369760036e-01f;
  g = g * t - 1.127797246e+00f;
  g = g * t - 1.664390875e-04f;
  vf big = with_sign_of(1.f - vexp_in_range(g), x);
  return select(ax < 0.9f, small, big);
}

PORTA_INLINE vf gelu_erf(vf h) { return 0.5f * h * (1.f + verf(h * 0.70710678118654752f)); }
// 0.5 h (1 + tanh(u)) = h / (1 + exp(-2u)), u = sqrt(2/pi) (h + 0.044715 h^3).
PORTA_INLINE vf gelu_tanh(vf h) {
  vf u = 0.7978845608028654f * (h + 0.044715f * h * h * h);
  return h / (1.f + vexp(-2.f * u));
}

// y[i] = f(x[i]) over a row (y may alias x).
template <typename F>
PORTA_INLINE void map_row(const float* x, float* y, int64_t n, F&& f) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(y + i, f(load(x + i)));
  if (i < n) store_tail(y + i, f(load_tail(x + i, n - i, 0.f)), n - i);
}

static __attribute__((noinline)) void exp_f32(const float* x, float* y, int64_t n) { map_row(x, y, n, [](vf v) { return vexp_full(v); }); }
static __attribute__((noinline)) void tanh_f32(const float* x, float* y, int64_t n) { map_row(x, y, n, [](vf v) { return vtanh(v); }); }
static __attribute__((noinline)) void sigmoid_f32(const float* x, float* y, int64_t n) {
  map_row(x, y, n, [](vf v) { return vsigmoid(v); });
}
static __attribute__((noinline)) void swish_f32(const float* x, float* y, int64_t n) {
  map_row(x, y, n, [](vf v) { return v * vsigmoid(v); });
}
static __attribute__((noinline)) void gelu_erf_f32(const float* x, float* y, int64_t n) {
  map_row(x, y, n, [](vf v) { return gelu_erf(v); });
}
static __attribute__((noinline)) void gelu_tanh_f32(const float* x, float* y, int64_t n) {
  map_row(x, y, n, [](vf v) { return gelu_tanh(v); });
}
static __attribute__((noinline)) void erf_f32(const float* x, float* y, int64_t n) { map_row(x, y, n, [](vf v) { return verf(v); }); }

// The largest (kMax) or smallest element of a row, NaN elements skipped (`nan` set when there
// was one); -inf / +inf for n = 0. Shared by max_f32, extreme_nan_f32 and arg_extreme_f32.
template <bool kMax>
PORTA_INLINE float extreme_row(const float* x, int64_t n, bool& nan) {
  const float start = kMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  vf m = splat(start);
  vi seen = vi{} + 0;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    vf v = load(x + i);
    seen |= v != v;
    m = kMax ? select(v > m, v, m) : select(v < m, v, m);
  }
  if (i < n) {
    vf v = load_tail(x + i, n - i, start);
    seen |= v != v;
    m = kMax ? select(v > m, v, m) : select(v < m, v, m);
  }
  float out = start;
  nan = false;
  for (int k = 0; k < kLanes; ++k) {
    out = kMax ? (m[k] > out ? m[k] : out) : (m[k] < out ? m[k] : out);
    nan |= seen[k] != 0;
  }
  return out;
}

static __attribute__((noinline)) float max_f32(const float* x, int64_t n) {
  bool nan;
  return extreme_row<true>(x, n, nan);
}

// y may alias x; a null y only sums. Two accumulators: the adds are not one serial chain.
// `prefetch` (may be null): n floats to pull into the caches meanwhile, two lines per 32
// elements computed, so the next row's memory reads overlap this row's exp.
static __attribute__((noinline)) float exp_shifted_sum_to_f32(const float* x, float shift, float* y, int64_t n,
                                                              const float* prefetch) {
  vf acc0 = splat(0.f), acc1 = splat(0.f);
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    if (prefetch) {
      _mm_prefetch(reinterpret_cast<const char*>(prefetch + i), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(prefetch + i + kLanes), _MM_HINT_T0);
    }
    vf e0 = vexp(load(x + i) - shift), e1 = vexp(load(x + i + kLanes) - shift);
    if (y) store(y + i, e0), store(y + i + kLanes, e1);
    acc0 += e0;
    acc1 += e1;
  }
  for (; i + kLanes <= n; i += kLanes) {
    vf e = vexp(load(x + i) - shift);
    if (y) store(y + i, e);
    acc0 += e;
  }
  if (i < n) {
    vf e = vexp(load_tail(x + i, n - i, -std::numeric_limits<float>::infinity()) - shift);
    if (y) store_tail(y + i, e, n - i);
    acc1 += e;  // padded lanes are exp(-inf) = 0
  }
  acc0 += acc1;
  float sum = 0;
  for (int k = 0; k < kLanes; ++k) sum += acc0[k];
  return sum;
}

// e^x for x <= 0 to the accuracy of a bf16 result: exp_parts' reduction with a degree-5
// polynomial for e^r (|r| <= ln2 / 2: relative error below 2.5e-6, a thousandth of bf16's
// rounding step, 2^-9), 0 below -87.3 (and for -inf).
PORTA_INLINE vf vexp_nonpositive_bf16(vf x) {
  vi underflow = x < -87.33654f;
  x = select(underflow, splat(0.f), x);
  const float magic = 12582912.f;
  vf shifted = x * 1.44269504088896341f + magic;
  vf nf = shifted - magic;
  vi n = (vi)shifted - (vi)splat(magic);
  vf r = x - nf * 0.693145751953125f - nf * 1.428606765330187e-06f;
  vf p = splat(1.f / 120);
  p = p * r + 1.f / 24;
  p = p * r + 1.f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.f;
  p = p * r + 1.f;
  vf res = p * (vf)((n + 127) << 23);
  return select(underflow, splat(0.f), res);
}

// Rounds kLanes floats (none NaN) to bf16 (nearest even): the bf16 bits in the low halves, and the
// rounded values as floats in `as_float`.
PORTA_INLINE vi round_bf16(vf x, vf& as_float) {
  vi v = (vi)x;
  vi rounded = (vi)(((v + 0x7fff + ((v >> 16) & 1)) >> 16) & 0xffff);
  as_float = (vf)(rounded << 16);
  return rounded;
}

PORTA_INLINE void store_bf16(uint16_t* y, vi bits) {
  typedef uint16_t vh __attribute__((vector_size(kLanes * 2)));
  vh h = __builtin_convertvector(bits, vh);
  std::memcpy(y, &h, sizeof h);
}

// y[i] = bf16(exp(x[i] - shift)) for i < n and 0 for n <= i < width; returns the sum of the
// rounded values (so a row normalised by it sums to 1 in the products that read y). Every
// x[i] - shift <= 0 (shift is the row's max).
static __attribute__((noinline)) float exp_shifted_sum_to_bf16(const float* x, float shift, uint16_t* y, int64_t n,
                                                               int64_t width) {
  vf acc0 = splat(0.f), acc1 = splat(0.f);
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    vf r0, r1;
    vi b0 = round_bf16(vexp_nonpositive_bf16(load(x + i) - shift), r0);
    vi b1 = round_bf16(vexp_nonpositive_bf16(load(x + i + kLanes) - shift), r1);
    store_bf16(y + i, b0);
    store_bf16(y + i + kLanes, b1);
    acc0 += r0;
    acc1 += r1;
  }
  for (; i < n; i += kLanes) {
    const int64_t m = n - i < kLanes ? n - i : kLanes;
    vf v = m == kLanes ? load(x + i) : load_tail(x + i, m, -std::numeric_limits<float>::infinity());
    vf r;
    vi b = round_bf16(vexp_nonpositive_bf16(v - shift), r);
    if (m == kLanes) {
      store_bf16(y + i, b);
    } else {
      uint16_t buf[kLanes];
      store_bf16(buf, b);
      for (int64_t k = 0; k < m; ++k) y[i + k] = buf[k];
    }
    acc0 += r;  // padded lanes are exp(-inf) = 0
  }
  for (int64_t k = n; k < width; ++k) y[k] = 0;
  acc0 += acc1;
  float sum = 0;
  for (int k = 0; k < kLanes; ++k) sum += acc0[k];
  return sum;
}

// The fused activations of kernels/cpu/fused_activation.cpp that need no transcendental, with
// the same arithmetic and NaN behaviour as its scalar loops (a NaN compares false, so it
// passes every clamp): relu, clip to [lo, hi], and hard swish x * clamp(x / 6 + 1/2, 0, 1)
// (a division, as the scalar loop, not a multiplication by 1/6).
static __attribute__((noinline)) void relu_clip_f32(float* y, int64_t n, float lo, float hi) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    vf v = load(y + i);
    v = select(v < lo, splat(lo), v);
    store(y + i, select(v > hi, splat(hi), v));
  }
  for (; i < n; ++i) {
    float v = y[i] < lo ? lo : y[i];
    y[i] = v > hi ? hi : v;
  }
}

static __attribute__((noinline)) void hard_swish_f32(float* y, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    vf v = load(y + i);
    vf g = v / 6.0f + 0.5f;
    g = select(g < 0.0f, splat(0.0f), g);
    g = select(g > 1.0f, splat(1.0f), g);
    store(y + i, v * g);
  }
  for (; i < n; ++i) {
    float g = y[i] / 6.0f + 0.5f;
    y[i] *= g < 0.0f ? 0.0f : g > 1.0f ? 1.0f : g;
  }
}

// Max / min of a row where a NaN anywhere makes the result NaN (PyTorch's and ONNX Runtime's
// reductions); -inf / +inf for n = 0.
static __attribute__((noinline)) float extreme_nan_f32(const float* x, int64_t n, bool want_max) {
  bool nan = false;
  float m = want_max ? extreme_row<true>(x, n, nan) : extreme_row<false>(x, n, nan);
  return nan ? std::numeric_limits<float>::quiet_NaN() : m;
}

// Sum of a row in float with four vector accumulators (64 partial sums), added in double at
// the end: more accurate than one running float sum, and not bound by the add latency.
static __attribute__((noinline)) double sum_f32(const float* x, int64_t n) {
  vf a0 = splat(0.f), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    a0 += load(x + i);
    a1 += load(x + i + kLanes);
    a2 += load(x + i + 2 * kLanes);
    a3 += load(x + i + 3 * kLanes);
  }
  for (; i + kLanes <= n; i += kLanes) a0 += load(x + i);
  double s = 0;
  for (; i < n; ++i) s += x[i];
  for (int k = 0; k < kLanes; ++k) s += static_cast<double>(a0[k]) + a1[k] + a2[k] + a3[k];
  return s;
}

// ArgMax/ArgMin of a row: the extreme value, then the first (or last) index holding it, both
// kLanes at a time.
static __attribute__((noinline)) int64_t arg_extreme_f32(const float* x, int64_t n, bool want_max, bool last) {
  if (n <= 0) return 0;
  bool nan = false;
  float target = want_max ? extreme_row<true>(x, n, nan) : extreme_row<false>(x, n, nan);
  // NaN wins (numpy): the first (last) NaN; else the first (last) element equal to the extreme.
  auto hit = [&](vf v) -> vi { return nan ? (v != v) : (v == target); };
  auto hit1 = [&](float v) { return nan ? v != v : v == target; };
  if (!last) {
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      vi h = hit(load(x + i));
      for (int k = 0; k < kLanes; ++k)
        if (h[k]) return i + k;
    }
    for (; i < n; ++i)
      if (hit1(x[i])) return i;
  } else {
    int64_t i = n;
    for (; i - kLanes >= 0; i -= kLanes) {
      vi h = hit(load(x + i - kLanes));
      for (int k = kLanes - 1; k >= 0; --k)
        if (h[k]) return i - kLanes + k;
    }
    for (; i-- > 0;)
      if (hit1(x[i])) return i;
  }
  return 0;  // unreachable: the extreme is an element of the row
}

// sin / cos: x = k * pi/2 + r with |r| <= pi/4 (k rounded by the 1.5 * 2^23 trick, pi/2 split
// in three parts whose products with k are exact for |x| <= 8192), then the sine or cosine
// polynomial of r picked and signed by the quadrant k mod 4 (Cephes' single-precision
// minimax coefficients, within 2 ulp). Lanes beyond 8192 in magnitude, infinities and NaN are
// recomputed with libm.
template <bool kCos>
PORTA_INLINE void sincos_row(const float* x, float* y, int64_t n) {
  const float magic = 12582912.f;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    vf v = load(x + i);
    vf ax = select(v < 0.f, -v, v);
    vi big = ~(ax <= 8192.f);  // also NaN
    vf vx = select(big, splat(0.f), v);
    vf shifted = vx * 0.636619772367581343f + magic;
    vf kf = shifted - magic;
    vi k = (vi)shifted - (vi)splat(magic);
    vf r = ((vx - kf * 1.5703125f) - kf * 4.837512969970703125e-4f) - kf * 7.54978995489188216e-8f;
    vf r2 = r * r;
    vf sp = ((r2 * -1.9515295891e-4f + 8.3321608736e-3f) * r2 - 1.6666654611e-1f) * r2 * r + r;
    vf cp = ((r2 * 2.443315711809948e-5f - 1.388731625493765e-3f) * r2 + 4.166664568298827e-2f) * r2 * r2 -
            0.5f * r2 + 1.0f;
    vi quadrant = kCos ? k + 1 : k;
    vf res = select((quadrant & 1) != 0, cp, sp);
    res = select((quadrant & 2) != 0, -res, res);
    store(y + i, res);
    for (int l = 0; l < kLanes; ++l)
      if (big[l]) y[i + l] = kCos ? std::cos(x[i + l]) : std::sin(x[i + l]);
  }
  for (; i < n; ++i) y[i] = kCos ? std::cos(x[i]) : std::sin(x[i]);
}

// log: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log(x) = e ln2 + log(m) with log(1 + f)
// by Cephes' single-precision minimax polynomial and ln2 in two parts. Lanes that are not
// normal positive finite numbers (0, subnormals, negatives, infinities, NaN) take libm.
static __attribute__((noinline)) void log_f32(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    vf v = load(x + i);
    vi special = ~((v >= 1.17549435e-38f) & (v <= 3.40282347e38f));  // also NaN
    vi bits = (vi)select(special, splat(1.f), v);
    vi e = ((bits >> 23) & 0xff) - 126;
    vf m = (vf)((bits & 0x007fffff) | 0x3f000000);  // [0.5, 1)
    vi small = m < 0.707106781186547524f;
    e = e + small;  // small is -1 (true) or 0
    vf f = select(small, m + m - 1.f, m - 1.f);
    vf ef = __builtin_convertvector(e, vf);
    vf z = f * f;
    vf p = splat(7.0376836292e-2f);
    p = p * f - 1.1514610310e-1f;
    p = p * f + 1.1676998740e-1f;
    p = p * f - 1.2420140846e-1f;
    p = p * f + 1.4249322787e-1f;
    p = p * f - 1.6668057665e-1f;
    p = p * f + 2.0000714765e-1f;
    p = p * f - 2.4999993993e-1f;
    p = p * f + 3.3333331174e-1f;
    vf r = f * z * p;
    r = r + ef * -2.12194440e-4f;
    r = r - 0.5f * z;
    r = f + r;
    r = r + ef * 0.693359375f;
    store(y + i, r);
    for (int l = 0; l < kLanes; ++l)
      if (special[l]) y[i + l] = std::log(x[i + l]);
  }
  for (; i < n; ++i) y[i] = std::log(x[i]);
}

static __attribute__((noinline)) void sin_f32(const float* x, float* y, int64_t n) { sincos_row<false>(x, y, n); }
static __attribute__((noinline)) void cos_f32(const float* x, float* y, int64_t n) { sincos_row<true>(x, y, n); }

// kLanes x kLanes transposes of 32-bit elements (moved as bits, no arithmetic) make up the 16x16
// one: d[j * ds + i] = s[i * ss + j]. Each stage swaps the off-diagonal k x k sub-blocks of
// every 2k x 2k block (k = kLanes / 2, ..., 1) with two-source shuffles.
template <int K>
PORTA_INLINE void transpose_stage(vi* r) {
  vi lo, hi;  // masks: lanes j of a row pair (a = r[i], b = r[i + K]); b's lanes are kLanes + j
  for (int j = 0; j < kLanes; ++j) {
    bool upper = (j & K) != 0;
    lo[j] = upper ? kLanes + j - K : j;
    hi[j] = upper ? kLanes + j : j + K;
  }
  for (int i = 0; i < kLanes; ++i) {
    if (i & K) continue;
    vi a = r[i], b = r[i + K];
    r[i] = __builtin_shuffle(a, b, lo);
    r[i + K] = __builtin_shuffle(a, b, hi);
  }
  if constexpr (K > 1) transpose_stage<K / 2>(r);
}

static __attribute__((noinline)) void transpose16_b32(const uint32_t* s, int64_t ss, uint32_t* d, int64_t ds) {
  for (int bi = 0; bi < 16; bi += kLanes)
    for (int bj = 0; bj < 16; bj += kLanes) {
      vi r[kLanes];
      for (int i = 0; i < kLanes; ++i) std::memcpy(&r[i], s + (bi + i) * ss + bj, sizeof(vi));
      transpose_stage<kLanes / 2>(r);
      for (int j = 0; j < kLanes; ++j) std::memcpy(d + (bj + j) * ds + bi, &r[j], sizeof(vi));
    }
}

// f32 <-> f16 with F16C (vcvtps2ph / vcvtph2ps, round to nearest even, as porta's scalar
// conversion) where the level has it (PORTA_VMATH_F16C, set by custom_vmath.cpp); the scalar
// conversion for the tail and at baseline.
static __attribute__((noinline)) void f32_to_f16_n(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
#if PORTA_VMATH_F16C
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) y[i] = porta::f32_to_f16(x[i]);
}

static __attribute__((noinline)) void f16_to_f32_n(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
#if PORTA_VMATH_F16C
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
#endif
  for (; i < n; ++i) y[i] = porta::f16_to_f32(x[i]);
}

// bfloat16 <-> float as porta::f32_to_bf16 / bf16_to_f32 convert one value (round to nearest
// even; a NaN stays a quiet NaN), written as branch-free bit operations so the loop vectorizes
// (16 lanes at v4, 8 at v3).
static __attribute__((noinline)) void f32_to_bf16_n(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t v;
    std::memcpy(&v, x + i, sizeof v);
    const uint32_t rounded = (v + 0x7fffu + ((v >> 16) & 1u)) >> 16;
    y[i] = static_cast<uint16_t>((v & 0x7fffffffu) > 0x7f800000u ? (v >> 16) | 0x40u : rounded);
  }
}

static __attribute__((noinline)) void bf16_to_f32_n(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t v = static_cast<uint32_t>(x[i]) << 16;
    std::memcpy(y + i, &v, sizeof v);
  }
}

// Floor and ceil: plain loops the compiler turns into vroundps / vrndscaleps at the v3 and
// v4 levels (the baseline level has no rounding instruction and calls libm). GCC keeps them
// scalar unless it may ignore the inexact flag (no-trapping-math; porta enables no FP traps).
static __attribute__((noinline, optimize("no-trapping-math"))) void floor_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = __builtin_floorf(x[i]);
}

static __attribute__((noinline, optimize("no-trapping-math"))) void ceil_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = __builtin_ceilf(x[i]);
}

static __attribute__((noinline)) void sub2_f32(const float* x, float a, float b, float* y, int64_t n, bool stream) {
  write_row(y, n, stream, [&](float* dst, int64_t begin, int64_t count) {
    const float* xs = x + begin;
    int64_t i = 0;
    for (; i + kLanes <= count; i += kLanes) store(dst + i, (load(xs + i) - a) - b);
    for (; i < count; ++i) dst[i] = (xs[i] - a) - b;
  });
}

static __attribute__((noinline)) void affine_f32(const float* x, float a, float b, float* y, int64_t n, bool stream) {
  write_row(y, n, stream, [&](float* dst, int64_t begin, int64_t count) {
    const float* xs = x + begin;
    int64_t i = 0;
    for (; i + kLanes <= count; i += kLanes) store(dst + i, load(xs + i) * a + b);
    for (; i < count; ++i) dst[i] = xs[i] * a + b;
  });
}

static __attribute__((noinline)) void scale_f32(float* x, float factor, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(x + i, load(x + i) * factor);
  for (; i < n; ++i) x[i] *= factor;
}

static __attribute__((noinline)) double sum_squares_f32(const float* x, int64_t n) {
  vf acc0 = splat(0.f), acc1 = splat(0.f);
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    vf a = load(x + i), b = load(x + i + kLanes);
    acc0 += a * a;
    acc1 += b * b;
  }
  double sum = 0;
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  for (int k = 0; k < kLanes; ++k) sum += static_cast<double>(acc0[k]) + acc1[k];
  return sum;
}

static __attribute__((noinline)) void mul_scale_f32(const float* x, const float* scale, float factor, float* y, int64_t n,
                                      bool stream) {
  write_row(y, n, stream, [&](float* dst, int64_t begin, int64_t count) {
    const float *xs = x + begin, *ss = scale + begin;
    int64_t i = 0;
    for (; i + kLanes <= count; i += kLanes) store(dst + i, load(xs + i) * factor * load(ss + i));
    for (; i < count; ++i) dst[i] = xs[i] * factor * ss[i];
  });
}

static __attribute__((noinline)) void bias_gelu_erf_f32(const float* x, const float* bias, float* y, int64_t n, bool stream) {
  write_row(y, n, stream, [&](float* dst, int64_t begin, int64_t count) {
    const float *xs = x + begin, *bs = bias + begin;
    int64_t i = 0;
    for (; i + kLanes <= count; i += kLanes) store(dst + i, gelu_erf(load(xs + i) + load(bs + i)));
    if (i < count)
      store_tail(dst + i, gelu_erf(load_tail(xs + i, count - i, 0.f) + load_tail(bs + i, count - i, 0.f)), count - i);
  });
}

static __attribute__((noinline)) void bias_gelu_tanh_f32(const float* x, const float* bias, float* y, int64_t n, bool stream) {
  write_row(y, n, stream, [&](float* dst, int64_t begin, int64_t count) {
    const float *xs = x + begin, *bs = bias + begin;
    int64_t i = 0;
    for (; i + kLanes <= count; i += kLanes) store(dst + i, gelu_tanh(load(xs + i) + load(bs + i)));
    if (i < count)
      store_tail(dst + i, gelu_tanh(load_tail(xs + i, count - i, 0.f) + load_tail(bs + i, count - i, 0.f)), count - i);
  });
}

static __attribute__((noinline)) void affine_u8_f32(const uint8_t* x, float a, float b, float* y, int64_t n, bool stream) {
  write_row(y, n, stream, [&](float* dst, int64_t begin, int64_t count) {
    const uint8_t* xs = x + begin;
    for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<float>(xs[i]) * a + b;  // vectorizes
  });
}

static __attribute__((noinline)) void affine_rgb_u8_f32(const uint8_t* x, const float* a, const float* b, float* y0, float* y1,
                                          float* y2, int64_t n) {
  const float a0 = a[0], a1 = a[1], a2 = a[2], b0 = b[0], b1 = b[1], b2 = b[2];
  // A fixed stride of 3 lets the compiler vectorize the de-interleaving loads.
  for (int64_t i = 0; i < n; ++i) {
    y0[i] = static_cast<float>(x[3 * i]) * a0 + b0;
    y1[i] = static_cast<float>(x[3 * i + 1]) * a1 + b1;
    y2[i] = static_cast<float>(x[3 * i + 2]) * a2 + b2;
  }
}

}  // namespace porta::cpu::vmath::PORTA_VMATH_LEVEL
