// porta_fuzz_ops — drawing random op calls from an op's own test cases.
//
// A call is drawn from (seed, op name, iteration) alone, so one iteration of one op can be
// replayed exactly, whatever other ops or devices a run covers.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "porta/op.hpp"

namespace porta::fuzz {

struct DrawLimits {
  int64_t max_elements = int64_t{1} << 22;  ///< per input tensor (outputs are checked later)
};

/// One drawn call: a template case with mutated shapes, mixed attributes and a dtype.
struct Draw {
  const OpSchema* op = nullptr;
  std::string case_name;          ///< the template case
  std::vector<InputSpec> inputs;  ///< mutated specs (fixed-value inputs unchanged)
  Attributes attrs;               ///< as given (defaults are filled in by the dispatcher)
  DType dtype = DType::f32;       ///< the case dtype
  int num_outputs = 1;
  double tolerance = 0.0;         ///< the case's (0: the dtype's default)
  bool strided_first = false;     ///< pass input 0 as a stride-2 view (as the conformance suite)
  uint64_t data_seed = 0;         ///< seeds the input values
  std::string mutation;           ///< what was changed, for messages
};

/// Seed of one (run seed, op, iteration): stable across builds and runs.
uint64_t iteration_seed(uint64_t seed, const std::string& op, uint64_t iteration);

/// Draws call `iteration` of `op` from its cases (which must be non-empty).
Draw draw_call(const OpSchema& op, const std::vector<OpCase>& cases, uint64_t seed,
               uint64_t iteration, const DrawLimits& limits);

/// "[4,1,6]f16" for each input ("absent" for a left-out one; "=values" for fixed ones).
std::string describe_inputs(const Draw& d);

}  // namespace porta::fuzz
