// Elementwise ops refuse bad input with the right error class and a message naming the op and
// both sides (shapes or dtypes) — never a crash.
#include <gtest/gtest.h>

#include <string>

#include "porta/porta.hpp"

namespace porta::test {
namespace {

Tensor t(Shape s, DType d = DType::f32) { return Tensor::zeros(s, d); }

// Runs op and expects error E whose message contains every string in `parts`.
template <typename E>
void expect_error(std::string_view op, const std::vector<Tensor>& in, const Attributes& a,
                  std::vector<std::string> parts, int num_outputs = -1) {
  try {
    call_op(op, in, a, num_outputs);
    ADD_FAILURE() << op << ": no error thrown";
  } catch (const E& e) {
    std::string msg = e.what();
    for (auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << op << ": wrong error type: " << e.what();
  }
}

TEST(ElementwiseErrors, BinaryDTypeMismatch) {
  for (const char* op : {"Sub", "Mul", "Div", "Max", "Min", "Equal", "Less", "Greater"})
    expect_error<DTypeError>(op, {t({3}), t({3}, DType::i64)}, {}, {str("[", op, "]"), "f32", "i64"});
  expect_error<DTypeError>("Max", {t({3}), t({3}), t({3}, DType::f16)}, {}, {"[Max]", "f32", "f16"});
}

TEST(ElementwiseErrors, NonBroadcastableShapes) {
  for (const char* op : {"Sub", "Mul", "Div", "Pow", "Max", "Equal", "And"}) {
    DType d = std::string(op) == "And" ? DType::boolean : DType::f32;
    expect_error<ShapeError>(op, {t({3, 4}, d), t({5}, d)}, {}, {str("[", op, "]"), "3x4", "5"});
  }
  expect_error<ShapeError>("Where", {t({2, 3}, DType::boolean), t({3}), t({4})}, {}, {"[Where]", "3", "4"});
}

TEST(ElementwiseErrors, DTypeNotAccepted) {
  expect_error<DTypeError>("Exp", {t({2}, DType::i32)}, {}, {"[Exp]", "i32"});
  expect_error<DTypeError>("Neg", {t({2}, DType::u8)}, {}, {"[Neg]", "u8"});
  expect_error<DTypeError>("Not", {t({2})}, {}, {"[Not]", "f32"});
  expect_error<DTypeError>("And", {t({2}), t({2})}, {}, {"[And]", "f32"});
  expect_error<DTypeError>("Less", {t({2}, DType::boolean), t({2}, DType::boolean)}, {}, {"[Less]", "bool"});
  expect_error<DTypeError>("Pow", {t({2}, DType::u8), t({2}, DType::u8)}, {}, {"[Pow]", "u8"});
  expect_error<DTypeError>("Sub", {t({2}, DType::boolean), t({2}, DType::boolean)}, {}, {"[Sub]", "bool"});
}

TEST(ElementwiseErrors, Where) {
  expect_error<DTypeError>("Where", {t({2}), t({2}), t({2})}, {}, {"[Where]", "condition", "f32"});
  expect_error<DTypeError>("Where", {t({2}, DType::boolean), t({2}), t({2}, DType::i32)}, {},
                           {"[Where]", "X is f32", "Y is i32"});
}

TEST(ElementwiseErrors, CastToUnknownType) {
  for (int64_t code : {0, 4, 5, 8, 12, 13, 14, 17, 99, -1})
    expect_error<Unsupported>("Cast", {t({2})}, {{"to", code}}, {"[Cast]", str("to=", code), "f32", "bf16"});
  expect_error<InvalidModel>("Cast", {t({2})}, {}, {"to"});
}

TEST(ElementwiseErrors, ClipBounds) {
  expect_error<ShapeError>("Clip", {t({4}), t({2}), t({})}, {}, {"[Clip]", "min", "2", "4"});
  expect_error<DTypeError>("Clip", {t({4}), t({}, DType::f64)}, {}, {"[Clip]", "f32", "f64"});
}

TEST(ElementwiseErrors, DropoutTrainingMode) {
  Tensor on = Tensor::scalar(1, DType::boolean);
  expect_error<Unsupported>("Dropout", {t({4}), Tensor::scalar(0.5, DType::f32), on}, {},
                            {"[Dropout]", "training_mode", "true"}, 1);
  expect_error<DTypeError>("Dropout", {t({4}), Tensor::scalar(0.5, DType::f32), t({})}, {},
                           {"[Dropout]", "bool", "f32"}, 1);
}

TEST(ElementwiseErrors, IntegerDivisionByZeroDoesNotTrap) {
  for (DType d : {DType::i64, DType::i32, DType::i8, DType::u8}) {
    Tensor a = Tensor::from_values({7, 0, 5}, {3}, d), b = Tensor::from_values({0, 0, 1}, {3}, d);
    std::vector<double> got = ops::div(a, b).to_doubles();
    EXPECT_EQ(got, (std::vector<double>{0, 0, 5})) << dtype_name(d);
  }
  Tensor m = Tensor::from_values({-2147483648.0}, {1}, DType::i32);
  EXPECT_EQ(ops::div(m, Tensor::from_values({-1}, {1}, DType::i32)).to_doubles().at(0), -2147483648.0);
}

}  // namespace
}  // namespace porta::test
