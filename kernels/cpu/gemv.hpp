// porta cpu kernels — products with a few rows against a large matrix (a classifier's Linear
// layer at batch 1: 1 x 9216 times 9216 x 4096). Such a product reads every element of B once
// and does one multiply-add with it per row of A: its speed is the memory bandwidth, and
// packing B for a GEMM kernel only adds a second copy of the weights. This loop streams B as
// the model stores it.
#pragma once
#include <cstdint>
#include <string>

namespace porta::cpu {

/// y = alpha * A B + beta * C, with A m x k row-major and B either n x k (b_nk: a Linear
/// layer's weight, Gemm's transB) or k x n, both row-major and contiguous. C(i, j) is
/// c[i * c_row_step + j * c_col_step] (steps 0 broadcast), or absent. y is m x n.
struct GemvProblem {
  const float* a = nullptr;
  int64_t m = 0, k = 0;
  const float* b = nullptr;
  int64_t n = 0;
  bool b_nk = false;
  const float* c = nullptr;
  int64_t c_row_step = 0, c_col_step = 0;
  float alpha = 1.0f, beta = 1.0f;
  float* y = nullptr;
};

/// Rows of A up to which the loop runs a product (more rows reuse B enough for a GEMM).
inline constexpr int64_t kGemvMaxRows = 4;
/// Elements of B from which the loop runs a product: below, B stays in cache across rows and
/// a packed GEMM is as fast.
inline constexpr int64_t kGemvMinWeights = int64_t{1} << 17;

/// Shortest rows of an n x k B the loop takes: each output ends in a sum across vector lanes,
/// which below this costs about as much as the products themselves.
inline constexpr int64_t kGemvMinRowNk = 256;

/// "" when the loop should run an m x k x n product, else why not (for `porta ops`). `b_nk`:
/// B is n x k.
std::string gemv_declines(int64_t m, int64_t n, int64_t k, bool b_nk);

/// Computes the product (any m; B is read once per group of kGemvMaxRows rows). Columns of y
/// are split across the cpu's threads.
void gemv(const GemvProblem& p);

}  // namespace porta::cpu
