// Bad models and bad inputs through the public API: each must throw the porta error class
// that names the problem, with a message saying what was expected and what was given —
// never a crash, never a generic exception.
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <typeinfo>

#include "tests/model_fixtures.hpp"
#include "tests/test_paths.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

namespace fs = std::filesystem;

// Runs `f`, which must throw E; the message must contain every string in `mentions`.
template <class E, class F>
void expect_error(F&& f, const std::vector<std::string>& mentions) {
  const char* expected_kind = E("").kind();
  try {
    f();
    ADD_FAILURE() << "expected " << expected_kind << ", nothing was thrown";
  } catch (const E& e) {
    std::string message = e.what();
    for (const std::string& m : mentions)
      EXPECT_NE(message.find(m), std::string::npos)
          << expected_kind << " message does not mention '" << m << "': " << message;
  } catch (const Error& e) {
    ADD_FAILURE() << "expected " << expected_kind << ", got " << e.kind() << ": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected " << expected_kind << ", got a non-porta " << typeid(e).name()
                  << ": " << e.what();
  }
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// A scratch file under the build tree, removed at the end of the test.
class ScratchFile {
 public:
  ScratchFile(const std::string& name, const std::string& bytes)
      : path_(std::string(PORTA_BINARY_DIR) + "/model_error_test_" + name) {
    std::ofstream(path_, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  ~ScratchFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string cnn_path() { return models_dir() + "/cnn/model.onnx"; }

// y = Relu(a + b), a and b f32 of shape batch x 3 x 4: the smallest model whose inputs the
// session must validate (built here so these tests need only Add and Relu). `opset`, `binary`
// and `unary` vary the model for the opset tests.
Model add_relu_model(int opset = 17, const char* binary = "Add", const char* unary = "Relu",
                     int elem_type = onnx::TensorProto::FLOAT) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("add_relu");
  auto declare = [elem_type](onnx::ValueInfoProto* v, const std::string& name) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    t->mutable_shape()->add_dim()->set_dim_param("batch");
    t->mutable_shape()->add_dim()->set_dim_value(3);
    t->mutable_shape()->add_dim()->set_dim_value(4);
  };
  declare(g->add_input(), "a");
  declare(g->add_input(), "b");
  declare(g->add_output(), "y");
  onnx::NodeProto* add = g->add_node();
  add->set_op_type(binary);
  add->set_name("add");
  add->add_input("a");
  add->add_input("b");
  add->add_output("sum");
  onnx::NodeProto* relu = g->add_node();
  relu->set_op_type(unary);
  relu->set_name("relu");
  relu->add_input("sum");
  relu->add_output("y");
  std::string bytes = m.SerializeAsString();
  return Model::from_bytes(bytes.data(), bytes.size());
}

Tensor ones(const Shape& shape, DType dtype = DType::f32) {
  return Tensor::from_values(std::vector<double>(static_cast<size_t>(shape_numel(shape)), 1.0),
                             shape, dtype);
}

TEST(ModelErrors, AddReluModelRuns) {  // the baseline the input errors below deviate from
  Session session(add_relu_model());
  std::vector<Tensor> y = session.run({{"a", ones({2, 3, 4})}, {"b", ones({2, 3, 4})}});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].to(Device::cpu()).to_doubles(), std::vector<double>(24, 2.0));
}

// NonZero's output length follows the data: a session makes one plan per distinct value of
// the inputs it depends on (here a and b, through the Add), and names the limit on how large
// such an input may be.
TEST(ModelErrors, ValueDependentShapes) {
  Session session(add_relu_model(17, "Add", "NonZero"));
  Tensor a = Tensor::from_values(std::vector<double>{1, -1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3}, {1, 3, 4}, DType::f32);
  Tensor zero = Tensor::zeros({1, 3, 4}, DType::f32);
  std::vector<Tensor> y = session.run({{"a", a}, {"b", zero}});
  ASSERT_EQ(y.size(), 1u);
  // Nonzero at flat positions 0, 1, 3 and 11 of a 1x3x4 tensor.
  EXPECT_EQ(y[0].shape(), (Shape{3, 4}));
  EXPECT_EQ(y[0].to(Device::cpu()).to_doubles(),
            (std::vector<double>{0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 3, 3}));
  // Another value, another plan: the same session follows it.
  y = session.run({{"a", ones({1, 3, 4})}, {"b", zero}});
  EXPECT_EQ(y[0].shape(), (Shape{3, 12}));
  expect_error<Unsupported>([&] { session.run({{"a", ones({400, 3, 4})}, {"b", ones({400, 3, 4})}}); },
                            {"input 'a'", "decides output shapes", "4800 elements", "4096"});
}

// Older opsets: a model loads when each op has the same definition at its opset as at 13
// (And and Cos are unchanged since opset 7), and is refused naming every op that changed
// (Add and Relu gained bf16 in opset 13), with both versions.
TEST(ModelErrors, OlderOpsets) {
  Session session(add_relu_model(7, "And", "Not", onnx::TensorProto::BOOL));
  std::vector<double> av(12), bv(12), want(12);
  for (int i = 0; i < 12; ++i) {
    av[i] = i % 2;
    bv[i] = i % 3 == 0;
    want[i] = !(av[i] != 0 && bv[i] != 0);
  }
  std::vector<Tensor> y = session.run({{"a", Tensor::from_values(av, {1, 3, 4}, DType::boolean)},
                                       {"b", Tensor::from_values(bv, {1, 3, 4}, DType::boolean)}});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].to(Device::cpu()).to_doubles(), want);
  expect_error<Unsupported>([] { add_relu_model(11); },
                            {"opset 11", "supports opsets 13 to 17", "2 op(s)", "Add: opset 11 uses its version 7",
                             "porta implements version 13", "Relu: opset 11 uses its version 6", "opset_version=17"});
  expect_error<Unsupported>([] { add_relu_model(0); }, {"opset 0", "13 to 17"});
  expect_error<Unsupported>([] { add_relu_model(18); }, {"opset 18", "13 to 17"});
}

TEST(ModelErrors, MissingFile) {
  std::string path = std::string(PORTA_BINARY_DIR) + "/no_such_dir/no_such_model.onnx";
  expect_error<InvalidModel>([&] { Model::load(path); }, {path});
}

TEST(ModelErrors, FolderInsteadOfFile) {
  expect_error<InvalidModel>([&] { Model::load(models_dir()); }, {models_dir()});
}

TEST(ModelErrors, TruncatedFile) {
  std::string bytes = read_bytes(cnn_path());
  ASSERT_GT(bytes.size(), 1000u) << cnn_path();
  ScratchFile half("truncated.onnx", bytes.substr(0, bytes.size() / 2));
  expect_error<InvalidModel>([&] { Model::load(half.path()); }, {half.path()});
  // Every cut point class: inside the header, the weights, the last byte.
  for (size_t cut : {size_t{1}, size_t{7}, bytes.size() / 4, bytes.size() / 2,
                     3 * bytes.size() / 4, bytes.size() - 1}) {
    SCOPED_TRACE(str("first ", cut, " of ", bytes.size(), " bytes"));
    expect_error<InvalidModel>([&] { Model::from_bytes(bytes.data(), cut); }, {});
  }
}

TEST(ModelErrors, EmptyFile) {
  ScratchFile empty("empty.onnx", "");
  expect_error<InvalidModel>([&] { Model::load(empty.path()); }, {empty.path()});
}

TEST(ModelErrors, GarbageBytes) {
  std::mt19937 gen(42);  // fixed: the same garbage every run
  std::string garbage(4096, '\0');
  for (char& c : garbage) c = static_cast<char>(gen() & 0xff);
  ScratchFile junk("garbage.onnx", garbage);
  expect_error<InvalidModel>([&] { Model::load(junk.path()); }, {junk.path()});
  ScratchFile text("text.onnx", "this is not an ONNX model\n");
  expect_error<InvalidModel>([&] { Model::load(text.path()); }, {text.path()});
}

TEST(ModelErrors, WrongInputName) {
  Session session(add_relu_model());
  expect_error<InvalidArgument>(
      [&] { session.run({{"a", ones({2, 3, 4})}, {"c", ones({2, 3, 4})}}); }, {"'c'", "b"});
}

TEST(ModelErrors, MissingInput) {
  Session session(add_relu_model());
  expect_error<InvalidArgument>([&] { session.run({{"a", ones({2, 3, 4})}}); }, {"b"});
}

TEST(ModelErrors, WrongInputDtype) {
  Session session(add_relu_model());
  expect_error<DTypeError>(
      [&] { session.run({{"a", ones({2, 3, 4})}, {"b", ones({2, 3, 4}, DType::i64)}}); },
      {"'b'", std::string(dtype_name(DType::f32)), std::string(dtype_name(DType::i64))});
}

TEST(ModelErrors, WrongInputShape) {
  Session session(add_relu_model());
  // 5 where the graph declares batch x 3 x 4.
  expect_error<ShapeError>(
      [&] { session.run({{"a", ones({2, 3, 4})}, {"b", ones({2, 5, 4})}}); }, {"'b'", "2x5x4"});
  expect_error<ShapeError>(
      [&] { session.run({{"a", ones({3, 4})}, {"b", ones({3, 4})}}); }, {"'a'", "3x4"});
  // Batch sizes that the graph's shared "batch" dimension cannot reconcile.
  expect_error<ShapeError>(
      [&] { session.run({{"a", ones({2, 3, 4})}, {"b", ones({5, 3, 4})}}); }, {"2x3x4", "5x3x4"});
}

// The real model rejects bad inputs the same way (needs the cnn's ops).
TEST(ModelErrors, CnnWrongInput) {
  Session session(Model::load(cnn_path()));
  Tensor x = read_npy(models_dir() + "/cnn/input_0.npy");
  expect_error<InvalidArgument>([&] { session.run({{"images", x}}); }, {"images", "input"});
  expect_error<DTypeError>([&] { session.run({{"input", x.cast(DType::i64)}}); },
                           {"input", std::string(dtype_name(DType::i64))});
  expect_error<ShapeError>([&] { session.run({{"input", ones({1, 4, 64, 64})}}); },
                           {"input", "1x4x64x64"});
}

}  // namespace
}  // namespace porta::test
