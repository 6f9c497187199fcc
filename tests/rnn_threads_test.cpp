// LSTM and GRU on cpu with the time steps split over a team of two threads by hidden units
// (kernels/cpu/rnn_common.hpp): batch 1 and 3, hidden sizes that leave the last block partial
// and the threads' shares unequal (1, 17, 100, 257), every direction, sequence lengths shorter
// than the sequence (one of them 0), initial states, peepholes, clip, both layouts, both
// linear_before_reset, f32 and f64, with W and R as session constants (prepared once and
// cached), and once per shape as plain inputs. Each call is checked against the op's float64
// reference; the same calls computing their products in bf16 against bf16's bound. Then the
// team itself: the barrier between phases, exceptions, its size.
//
// The cpu kernel is called directly, on two OpenMP threads and with the team's minimum work per
// thread set to 0: through call_op the thread policy would keep calls this small on one thread.
#include <gtest/gtest.h>

#include <omp.h>

#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/rnn_common.hpp"
#include "porta/dispatch.hpp"
#include "porta/porta.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

// Two OpenMP threads and no minimum work per thread while it lives.
class TwoThreadTeams {
 public:
  TwoThreadTeams() : threads_(omp_get_max_threads()), min_macs_(cpu::set_rnn_min_step_macs(0)) {
    omp_set_num_threads(2);
  }
  ~TwoThreadTeams() {
    omp_set_num_threads(threads_);
    cpu::set_rnn_min_step_macs(min_macs_);
  }

 private:
  int threads_;
  int64_t min_macs_;
};

const KernelDef* cpu_kernel(std::string_view op) {
  for (const KernelDef* k : kernels_for(op))
    if (k->backend == DeviceType::cpu) return k;
  return nullptr;
}

// Runs the cpu kernel of `op` on `inputs` (inputs 1 and 2, W and R, marked session constants
// when `constant`) and compares every output with the reference.
// With `bf16`, the call computes its products in bf16 (the attribute a bf16 session sets,
// porta_compute 16): its outputs are held to bf16's bound instead (rel_bound, relative L2).
void check(std::string_view op, const std::vector<Tensor>& inputs, const Attributes& attrs, int num_outputs,
           bool constant, const std::string& what, bool bf16 = false, double rel_bound = 0) {
  SCOPED_TRACE(what + (constant ? " constant W, R" : " W, R per call") + " (seed " + std::to_string(seed()) + ")");
  const OpSchema* schema = find_op(op);
  const KernelDef* kernel = cpu_kernel(op);
  ASSERT_TRUE(schema && kernel);
  Attributes full = complete_attributes(*schema, attrs, op);
  if (bf16) full.set("porta_compute", int64_t{16});
  std::vector<DType> dtypes;
  std::vector<Tensor> want = reference_op(op, inputs, attrs, num_outputs, &dtypes);
  KernelContext ctx;
  ctx.op = schema;
  ctx.attrs = &full;
  ctx.device = Device::cpu();
  ctx.inputs = inputs;
  for (size_t i = 0; i < want.size(); ++i) ctx.outputs.push_back(Tensor::empty(want[i].shape(), dtypes[i]));
  ctx.constant_inputs = constant ? uint64_t{6} : 0;  // W and R
  // With constant weights twice: the second call takes the packed R and reordered W from the
  // caches.
  for (int call = 0; call < (constant ? 2 : 1); ++call) {
    for (Tensor& out : ctx.outputs)  // poisoned: every output element is written
      out.copy_(Tensor::scalar(1e30, out.dtype()).expand(out.shape()));
    kernel->fn(ctx);
    for (size_t i = 0; i < want.size(); ++i) {
      if (bf16) {
        Comparison c = compare(ctx.outputs[i], want[i], rel_bound);
        EXPECT_TRUE(c.ok) << "output " << i << " call " << call << ": " << c.message << " (bound " << rel_bound << ")";
        continue;
      }
      double tol = default_tolerance(dtypes[i]);
      Comparison c = compare(ctx.outputs[i], want[i], tol);
      EXPECT_TRUE(c.ok) << "output " << i << " call " << call << ": " << c.message;
      EXPECT_LT(c.max_abs, dtypes[i] == DType::f64 ? 1e-9 : 1e-4) << "output " << i << " call " << call;
    }
  }
}

struct Shape4 {
  int64_t seq, batch, input, hidden;
};

// Inputs of an LSTM (gates 4) or GRU (gates 3) call. variant 0: every optional input, lengths
// shorter than seq; 1: the same with clip (set by the caller); 2: none of them.
std::vector<Tensor> rnn_inputs(int gates, const Shape4& s, int64_t dirs, int64_t layout, int variant, DType dt) {
  const double w = std::min(0.6, 2.0 / std::sqrt(static_cast<double>(s.hidden)));
  auto rand = [&](Shape shape, double lo, double hi) { return make_input(InputSpec{shape, dt, lo, hi}, dt); };
  Shape x = layout ? Shape{s.batch, s.seq, s.input} : Shape{s.seq, s.batch, s.input};
  Shape state = layout ? Shape{s.batch, dirs, s.hidden} : Shape{dirs, s.batch, s.hidden};
  std::vector<Tensor> in = {rand(x, -2, 2), rand({dirs, gates * s.hidden, s.input}, -w, w),
                            rand({dirs, gates * s.hidden, s.hidden}, -w, w)};
  if (variant == 2) return in;
  const double seq = static_cast<double>(s.seq);
  std::vector<double> lens = s.batch == 1 ? std::vector<double>{seq - 2} : std::vector<double>{seq, seq - 3, 0};
  in.push_back(rand({dirs, 2 * gates * s.hidden}, -w, w));
  in.push_back(Tensor::from_values(lens, {s.batch}, DType::i32));
  in.push_back(rand(state, -1, 1));
  if (gates == 4) {
    in.push_back(rand(state, -1, 1));
    in.push_back(rand({dirs, 3 * s.hidden}, -0.6, 0.6));
  }
  return in;
}

// With `bf16` the calls compute their products in bf16 (R packed in bf16 pairs, W in oneDNN's
// bf16 layout, h and x rounded to bf16; f32 sums, gates and state): against the float64
// reference within bf16's bound, 3u sqrt(k) for products of k = input + hidden terms, over
// the steps whose errors add (u = 2^-8, rel L2). Odd hidden sizes leave a zero row in the last
// pair. On a CPU without AVX-512 BF16 the call computes in f32, which the bound holds too.
void run_all(int gates, DType dt, bool bf16 = false) {
  TwoThreadTeams teams;
  const char* op = gates == 4 ? "LSTM" : "GRU";
  SCOPED_TRACE(!bf16                          ? "products in the call's dtype"
               : cpu::rnn_bf16_supported() ? "AVX-512 BF16 products"
                                           : "no AVX-512 BF16 here: f32 products");
  for (int64_t batch : {1, 3})
    for (int64_t hidden : {1, 17, 100, 257})
      for (std::string direction : {"forward", "reverse", "bidirectional"})
        for (int variant = 0; variant < 3; ++variant) {
          const int64_t dirs = direction == "bidirectional" ? 2 : 1;
          const int64_t layout = (hidden + variant) % 2;  // both layouts, for every batch and direction
          const Shape4 s{6, batch, 5, hidden};
          Attributes attrs{{"direction", direction}, {"hidden_size", hidden}, {"layout", layout}};
          if (variant == 1) attrs.set("clip", 0.7);
          std::vector<bool> lbrs = gates == 3 ? std::vector<bool>{false, true} : std::vector<bool>{false};
          for (bool lbr : lbrs) {
            if (gates == 3) attrs.set("linear_before_reset", int64_t{lbr});
            std::string what = str(op, " ", bf16 ? "bf16" : dtype_name(dt), " batch ", batch, " hidden ", hidden, " ",
                                   direction, " layout ", layout, " variant ", variant,
                                   gates == 3 ? str(" lbr ", lbr) : "");
            std::vector<Tensor> in = rnn_inputs(gates, s, dirs, layout, variant, dt);
            const double bound = 3 * std::ldexp(1.0, -8) * std::sqrt(static_cast<double>(s.seq * (s.input + hidden)));
            check(op, in, attrs, gates == 4 ? 3 : 2, true, what, bf16, bound);
            if (variant == 0) check(op, in, attrs, gates == 4 ? 3 : 2, false, what, bf16, bound);
          }
        }
}

TEST(RnnThreads, LstmF32) { run_all(4, DType::f32); }
TEST(RnnThreads, LstmBf16) { run_all(4, DType::f32, true); }
TEST(RnnThreads, GruBf16) { run_all(3, DType::f32, true); }
TEST(RnnThreads, LstmF64) { run_all(4, DType::f64); }
TEST(RnnThreads, GruF32) { run_all(3, DType::f32); }
TEST(RnnThreads, GruF64) { run_all(3, DType::f64); }

// Every phase sees what every thread wrote in the phase before (the team's barrier), and every
// (thread, step, phase) runs once. Phase n reads cells[n % 2] and writes cells[(n + 1) % 2], so
// no two threads touch a cell within one phase.
TEST(RnnThreads, PhasesSeeTheWritesOfThePhaseBefore) {
  TwoThreadTeams teams;
  const int64_t steps = 300;
  const int phases = 2;
  std::vector<int64_t> cells[2] = {std::vector<int64_t>(2, 0), std::vector<int64_t>(2, 0)};
  std::atomic<int64_t> stale{0}, runs{0};
  cpu::run_steps(2, steps, phases, [&](int t, int nt, int64_t step, int p) {
    const int64_t n = step * phases + p;
    for (int u = 0; u < nt; ++u)
      if (cells[n % 2][u] != n) stale++;
    cells[(n + 1) % 2][t] = n + 1;
    runs++;
  });
  EXPECT_EQ(stale.load(), 0);
  EXPECT_GE(runs.load(), steps * phases);
  EXPECT_LE(runs.load(), 2 * steps * phases);
  EXPECT_EQ(runs.load() % (steps * phases), 0);
}

// An exception thrown by one thread's phase reaches the caller; the team still ends.
TEST(RnnThreads, AnExceptionOfAPhaseReachesTheCaller) {
  TwoThreadTeams teams;
  std::atomic<int64_t> after{0};
  EXPECT_THROW(cpu::run_steps(2, 100, 2,
                              [&](int t, int nt, int64_t step, int p) {
                                if (step == 10 && p == 1 && t == nt - 1) throw std::runtime_error("phase failed");
                                if (step > 10) after++;
                              }),
               std::runtime_error);
  EXPECT_EQ(after.load(), 0) << "phases after the failure ran";
}

// The team splits a step's blocks evenly, one thread per block at most.
TEST(RnnThreads, TeamSizeFollowsBlocksAndWork) {
  TwoThreadTeams teams;
  EXPECT_EQ(cpu::rnn_step_threads(1, 1 << 20), 1);
  EXPECT_EQ(cpu::rnn_step_threads(2, 1), 2);
  int64_t old = cpu::set_rnn_min_step_macs(1000);
  EXPECT_EQ(cpu::rnn_step_threads(16, 1999), 1);
  EXPECT_EQ(cpu::rnn_step_threads(16, 2000), 2);
  cpu::set_rnn_min_step_macs(old);
  for (int64_t blocks : {1, 2, 7, 17}) {
    int64_t covered = 0;
    for (int t = 0; t < 2; ++t) {
      auto [b0, b1] = cpu::rnn_block_range(blocks, t, 2);
      EXPECT_EQ(b0, covered);
      covered = b1;
    }
    EXPECT_EQ(covered, blocks);
  }
}

}  // namespace
}  // namespace porta::test
