// Tensor::wrap_host with an owner: borrowed memory is viewed in place (strided too), the owner
// lives exactly as long as the last tensor sharing the storage, and views that reach outside
// the memory given are refused.
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

TEST(WrapHost, ViewsBorrowedMemoryAndKeepsItsOwner) {
  auto buffer = std::make_shared<std::vector<float>>(12);
  for (size_t i = 0; i < buffer->size(); ++i) (*buffer)[i] = static_cast<float>(i);
  std::weak_ptr<std::vector<float>> watch = buffer;
  // Columns 1 and 3 of a 3x4 row-major matrix.
  Tensor t = Tensor::wrap_host(buffer->data(), buffer->size() * sizeof(float), {3, 2}, {4, 2}, 1, DType::f32,
                               buffer);
  buffer.reset();
  ASSERT_FALSE(watch.expired());
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.to_doubles(), (std::vector<double>{1, 3, 5, 7, 9, 11}));
  Tensor y = ops::mul(t, Tensor::scalar(2.0, DType::f32));
  EXPECT_EQ(y.to_doubles(), (std::vector<double>{2, 6, 10, 14, 18, 22}));
  watch.lock()->at(5) = -1;  // writes to the owner's memory show through the view
  EXPECT_EQ(t.to_doubles()[2], -1);
  Tensor view = t.slice(0, 1, 2);
  t = Tensor();
  EXPECT_FALSE(watch.expired());  // a view still shares the storage
  view = Tensor();
  EXPECT_TRUE(watch.expired());
}

TEST(WrapHost, RefusesViewsOutsideTheMemory) {
  std::vector<float> data(6);
  EXPECT_THROW(Tensor::wrap_host(data.data(), 24, {2, 4}, {4, 1}, 0, DType::f32, nullptr), ShapeError);
  EXPECT_THROW(Tensor::wrap_host(data.data(), 24, {3, 2}, {2, 1}, 1, DType::f32, nullptr), ShapeError);
  EXPECT_THROW(Tensor::wrap_host(data.data(), 24, {2, 3}, {-3, 1}, 3, DType::f32, nullptr), ShapeError);
  EXPECT_THROW(Tensor::wrap_host(data.data(), 24, {2, 3}, {3}, 0, DType::f32, nullptr), ShapeError);
  EXPECT_THROW(Tensor::wrap_host(nullptr, 0, {2}, {1}, 0, DType::f32, nullptr), InvalidArgument);
  // Nothing to read: any pointer and no bytes; broadcast (stride 0) rows of one row.
  EXPECT_EQ(Tensor::wrap_host(nullptr, 0, {0, 3}, {3, 1}, 0, DType::f32, nullptr).numel(), 0);
  Tensor rows = Tensor::wrap_host(data.data(), 12, {4, 3}, {0, 1}, 0, DType::f32, nullptr);
  EXPECT_EQ(rows.contiguous().to_doubles(), std::vector<double>(12, 0.0));
}

}  // namespace
}  // namespace porta::test
