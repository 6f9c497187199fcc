// Bad models and bad inputs through the public API: each must throw the porta error class
// that names the problem, with a message saying what was expected and what was given —
// never a crash, never a generic exception.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <typeinfo>

#include "tests/model_fixtures.hpp"
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
  Session session(Model::load(cnn_path()));
  Tensor x = read_npy(models_dir() + "/cnn/input_0.npy");
  expect_error<InvalidArgument>([&] { session.run({{"images", x}}); }, {"images", "input"});
}

TEST(ModelErrors, MissingInput) {
  Session session(Model::load(models_dir() + "/attention/model.onnx"));
  Tensor q = read_npy(models_dir() + "/attention/input_0.npy");
  expect_error<InvalidArgument>([&] { session.run({{"query", q}}); }, {"keys"});
}

TEST(ModelErrors, WrongInputDtype) {
  Session session(Model::load(cnn_path()));
  Tensor x = read_npy(models_dir() + "/cnn/input_0.npy").cast(DType::i64);
  expect_error<DTypeError>([&] { session.run({{"input", x}}); },
                           {"input", std::string(dtype_name(DType::f32)),
                            std::string(dtype_name(DType::i64))});
}

TEST(ModelErrors, WrongInputShape) {
  Session session(Model::load(cnn_path()));
  // 4 channels where the graph declares batch x 3 x 64 x 64.
  Tensor channels = Tensor::zeros({1, 4, 64, 64}, DType::f32);
  expect_error<ShapeError>([&] { session.run({{"input", channels}}); }, {"input", "1x4x64x64"});
  Tensor rank3 = Tensor::zeros({3, 64, 64}, DType::f32);
  expect_error<ShapeError>([&] { session.run({{"input", rank3}}); }, {"input", "3x64x64"});
}

}  // namespace
}  // namespace porta::test
