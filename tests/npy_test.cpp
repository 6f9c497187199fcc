// .npy reading and writing: every dtype round-trips; malformed files give InvalidArgument.
#include "tests/test_paths.hpp"
#include "tests/test_util.hpp"

#include <filesystem>

namespace porta::test {
namespace {

TEST(Npy, RoundTripsEveryDtype) {
  for (DType t : {DType::f32, DType::f16, DType::f64, DType::i64, DType::i32, DType::i8, DType::u8, DType::boolean}) {
    InputSpec spec;
    spec.shape = {3, 5};
    Tensor a = make_input(spec, t);
    std::string path = std::string(PORTA_BINARY_DIR) + "/npy_test.npy";
    write_npy(path, a);
    Tensor b = read_npy(path);
    EXPECT_EQ(b.dtype(), t);
    EXPECT_EQ(b.shape(), a.shape());
    EXPECT_EQ(b.to_doubles(), a.to_doubles()) << dtype_name(t);
    std::filesystem::remove(path);
  }
}

TEST(Npy, ScalarAndEmpty) {
  for (Shape s : {Shape{}, Shape{0}, Shape{2, 0, 3}, Shape{1}}) {
    Tensor a = Tensor::zeros(s, DType::f32);
    std::string path = std::string(PORTA_BINARY_DIR) + "/npy_test_s.npy";
    write_npy(path, a);
    EXPECT_EQ(read_npy(path).shape(), s);
    std::filesystem::remove(path);
  }
}

TEST(Npy, MalformedInputs) {
  auto parse = [](const std::string& bytes) { return parse_npy(bytes.data(), bytes.size(), "test"); };
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
  std::string good = std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + '\0' + header + std::string(16, '\0');
  EXPECT_EQ(parse(good).numel(), 4);
  EXPECT_THROW(parse(good.substr(0, good.size() - 1)), InvalidArgument);            // truncated data
  EXPECT_THROW(parse("\x93NUMPY"), InvalidArgument);                                // truncated header
  std::string huge = good;
  huge.replace(huge.find("(4,)"), 4, "(9999999999999,)");
  EXPECT_THROW(parse(huge), InvalidArgument);                                        // size vs bytes
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_THROW(parse(fortran), InvalidArgument);
  std::string object = good;
  object.replace(object.find("<f4"), 3, "|O8");
  EXPECT_THROW(parse(object), InvalidArgument);
  std::string neg = good;
  neg.replace(neg.find("(4,)"), 4, "(-4,)");
  EXPECT_THROW(parse(neg), InvalidArgument);
}

// Headers that the npy fuzz target found crashing (std::out_of_range escaping the parser;
// signed overflow of the strides of an empty array); they are refused with InvalidArgument.
TEST(Npy, MalformedHeadersFromFuzzing) {
  auto parse_header = [](const std::string& dict) {
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(dict.size()) + '\0' + dict;
    return parse_npy(bytes.data(), bytes.size(), "test");
  };
  auto with_shape = [](const std::string& shape) {
    return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  };
  EXPECT_EQ(parse_header(with_shape("(0, 3)")).shape(), Shape({0, 3}));
  EXPECT_THROW(parse_header(with_shape("")), InvalidArgument);
  EXPECT_THROW(parse_header(with_shape("7")), InvalidArgument);
  EXPECT_THROW(parse_header(with_shape("(0, 999999999999999999, 999999999999999999)")), InvalidArgument);
}

// A .npy bool array may hold any byte; porta stores bools as 0 or 1.
TEST(Npy, BoolBytesAreNormalized) {
  std::string dict = "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }";
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(dict.size()) + '\0' + dict + std::string("\x00\x02\xff", 3);
  Tensor t = parse_npy(bytes.data(), bytes.size(), "test");
  const auto* b = static_cast<const unsigned char*>(t.raw_data());
  EXPECT_EQ(b[0], 0);
  EXPECT_EQ(b[1], 1);
  EXPECT_EQ(b[2], 1);
}

}  // namespace
}  // namespace porta::test
