// Shape and data-movement ops: bad shapes and indices give a ShapeError whose message names
// what was expected and what was got; plus values the random conformance cases cannot carry
// (exact INT64_MAX slice ends, integer mean truncation).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "porta/porta.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

Tensor i64s(std::vector<int64_t> v) {
  return Tensor::from_host(v.data(), {static_cast<int64_t>(v.size())}, DType::i64);
}
Tensor iota(const Shape& shape, DType dtype = DType::f32) {
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return Tensor::from_values(v, shape, dtype);
}

void expect_mentions(const std::string& msg, std::initializer_list<const char*> parts) {
  for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

TEST(ShapeErrors, ReshapeToIncompatibleSize) {
  std::string m = error_message<ShapeError>([] { call_op("Reshape", {iota({2, 3}), i64s({4, 2})}); });
  expect_mentions(m, {"[Reshape]", "expected", "6 elements", "2x3", "got", "[4,2]", "8 elements"});
  m = error_message<ShapeError>([] { call_op("Reshape", {iota({2, 3}), i64s({4, -1})}); });
  expect_mentions(m, {"[Reshape]", "2x3", "[4,-1]"});
  m = error_message<ShapeError>([] { call_op("Reshape", {iota({2, 3}), i64s({-1, -1})}); });
  expect_mentions(m, {"[Reshape]", "at most one -1", "[-1,-1]"});
}

TEST(ShapeErrors, GatherIndexOutOfRange) {
  std::string m = error_message<ShapeError>([] { call_op("Gather", {iota({3, 2}), i64s({0, 5})}); });
  expect_mentions(m, {"[Gather]", "expected indices in [-3, 3)", "3x2", "got 5"});
  m = error_message<ShapeError>([] { call_op("Gather", {iota({3, 4}), i64s({-5})}, {{"axis", int64_t{1}}}); });
  expect_mentions(m, {"[Gather]", "[-4, 4)", "axis 1", "got -5"});
  // Negative indices inside the range are fine.
  Tensor y = call_op("Gather", {iota({3, 2}), i64s({-1, 0})}).at(0);
  EXPECT_EQ(y.to_doubles(), (std::vector<double>{4, 5, 0, 1}));
}

TEST(ShapeErrors, SliceWithStepZero) {
  std::string m = error_message<ShapeError>(
      [] { call_op("Slice", {iota({4, 5}), i64s({0}), i64s({3}), i64s({1}), i64s({0})}); });
  expect_mentions(m, {"[Slice]", "expected nonzero steps", "got [0]"});
}

TEST(ShapeErrors, ConcatRankMismatch) {
  std::string m = error_message<ShapeError>([] { call_op("Concat", {iota({2, 3}), iota({2, 3, 1})}, {{"axis", int64_t{0}}}); });
  expect_mentions(m, {"[Concat]", "expected input 1 to match input 0 (2x3)", "got 2x3x1"});
  m = error_message<ShapeError>([] { call_op("Concat", {iota({2, 3}), iota({2, 4})}, {{"axis", int64_t{0}}}); });
  expect_mentions(m, {"[Concat]", "except on axis 0", "got 2x4"});
}

TEST(ShapeErrors, TransposeBadPerm) {
  std::string m = error_message<ShapeError>(
      [] { call_op("Transpose", {iota({2, 3})}, {{"perm", std::vector<int64_t>{0, 0}}}); });
  expect_mentions(m, {"[Transpose]", "expected perm to be a permutation of 0..1", "rank 2", "got [0,0]"});
  m = error_message<ShapeError>(
      [] { call_op("Transpose", {iota({2, 3})}, {{"perm", std::vector<int64_t>{1, 0, 2}}}); });
  expect_mentions(m, {"[Transpose]", "got [1,0,2]"});
}

TEST(ShapeErrors, OtherShapeOps) {
  expect_mentions(error_message<ShapeError>([] { call_op("Squeeze", {iota({2, 1}), i64s({0})}); }),
                  {"[Squeeze]", "to be 1", "got 2"});
  expect_mentions(error_message<ShapeError>([] { call_op("Expand", {iota({3, 2}), i64s({4, 3})}); }),
                  {"[Expand]", "3x2", "cannot be broadcast"});
  expect_mentions(error_message<ShapeError>([] { call_op("Split", {iota({5}), i64s({2, 2})}, {}, 2); }),
                  {"[Split]", "summing to 5", "got [2,2]"});
  expect_mentions(error_message<ShapeError>([] { call_op("Pad", {iota({2, 3}), i64s({0, 3, 0, 0})}, {{"mode", std::string("reflect")}}); }),
                  {"[Pad]", "reflect", "got 3"});
  expect_mentions(error_message<ShapeError>([] { call_op("Tile", {iota({2, 3}), i64s({2})}); }),
                  {"[Tile]", "expected 2 repeats", "got [2]"});
  expect_mentions(error_message<ShapeError>([] { call_op("ReduceMax", {iota({3, 0})}, {{"axes", std::vector<int64_t>{1}}}); }),
                  {"[ReduceMax]", "non-empty", "3x0"});
  expect_mentions(error_message<ShapeError>([] { call_op("ArgMax", {iota({3, 0})}, {{"axis", int64_t{1}}}); }),
                  {"[ArgMax]", "non-empty"});
  expect_mentions(error_message<ShapeError>([] { call_op("Range", {Tensor::scalar(0, DType::i64), Tensor::scalar(5, DType::i64),
                                                     Tensor::scalar(0, DType::i64)}); }),
                  {"[Range]", "nonzero delta", "got 0"});
}

TEST(ShapeOps, SliceWithExactInt64Limits) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  Tensor x = iota({6});
  EXPECT_EQ(call_op("Slice", {x, i64s({2}), i64s({kMax})}).at(0).to_doubles(), (std::vector<double>{2, 3, 4, 5}));
  EXPECT_EQ(call_op("Slice", {x, i64s({kMax}), i64s({kMin}), i64s({0}), i64s({-2})}).at(0).to_doubles(),
            (std::vector<double>{5, 3, 1}));
  EXPECT_EQ(call_op("Slice", {x, i64s({-1}), i64s({kMin}), i64s({0}), i64s({kMin})}).at(0).to_doubles(),
            (std::vector<double>{5}));
}

TEST(ShapeOps, IntegerMeanTruncatesTowardZero) {
  Tensor x = Tensor::from_values({1, 2, -1, -2, 7, 0}, {3, 2}, DType::i64);
  Tensor y = call_op("ReduceMean", {x}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}}).at(0);
  EXPECT_EQ(y.to_doubles(), (std::vector<double>{1, -1, 3}));
}

TEST(ShapeOps, MaxMinAndArgMaxLetNaNWin) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = Tensor::from_values({1, nan, 3, 4, 5, 6}, {2, 3}, DType::f32);
  Attributes rows{{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}};
  for (const char* op : {"ReduceMax", "ReduceMin"}) {
    std::vector<double> y = call_op(op, {x}, rows).at(0).to_doubles();
    EXPECT_TRUE(std::isnan(y[0])) << op;
    EXPECT_EQ(y[1], std::string(op) == "ReduceMax" ? 6 : 4) << op;
  }
  Tensor arg = call_op("ArgMax", {x}, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}).at(0);
  EXPECT_EQ(arg.to_doubles(), (std::vector<double>{1, 2}));
}

TEST(ShapeOps, ReduceSumAxesInputAndNoop) {
  Tensor x = iota({2, 3});
  EXPECT_EQ(call_op("ReduceSum", {x, i64s({-1})}).at(0).shape(), (Shape{2, 1}));
  EXPECT_EQ(call_op("ReduceSum", {x}).at(0).to_doubles(), (std::vector<double>{15}));
  Tensor noop = call_op("ReduceSum", {x, i64s({})}, {{"noop_with_empty_axes", int64_t{1}}}).at(0);
  EXPECT_EQ(noop.to_doubles(), x.to_doubles());
}

TEST(ShapeOps, ReshapeLikeOpsMayAliasInput) {
  for (const char* name : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) {
    const OpSchema* op = find_op(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_TRUE(op->alias_input0) << name;
  }
}

TEST(ShapeErrors, RnnLayoutAndStateShapes) {
  // X [batch 2, seq 3, input 4] in layout 1; W/R for hidden 5.
  Tensor x = iota({2, 3, 4}), w = iota({1, 20, 4}), r = iota({1, 20, 5});
  std::string m = error_message<ShapeError>([&] { call_op("LSTM", {x, w, r}, {{"layout", int64_t{2}}}); });
  expect_mentions(m, {"[LSTM]", "expected layout 0", "or 1", "got 2"});
  // initial_h in layout 0's [dirs, batch, hidden] order given to a layout-1 call.
  Tensor h0 = iota({1, 2, 5});
  m = error_message<ShapeError>([&] {
    call_op("GRU", {x, iota({1, 15, 4}), iota({1, 15, 5}), Tensor(), Tensor(), h0}, {{"layout", int64_t{1}}});
  });
  expect_mentions(m, {"[GRU]", "initial_h", "2x1x5", "got", "1x2x5"});
}

}  // namespace
}  // namespace porta::test
