// A model file is untrusted input: external data stays inside the model's folder, declared
// sizes are checked against the bytes present before allocating, graphs with cycles or names
// nothing produces are rejected, unknown ops are listed. Each case must give InvalidModel or
// Unsupported with a message that says what is wrong — never a crash or a read outside.
#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "runtime/graph.hpp"
#include "runtime/onnx_source.hpp"
#include "tests/test_paths.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

namespace fs = std::filesystem;

// A folder under the build tree holding one model and its data files.
class ModelDir {
 public:
  explicit ModelDir(const std::string& name)
      : dir_(fs::path(PORTA_BINARY_DIR) / "untrusted_model_test" / name) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~ModelDir() { fs::remove_all(dir_); }
  fs::path path(const std::string& file) const { return dir_ / file; }
  void write(const std::string& file, const std::string& bytes) const {
    std::ofstream(dir_ / file, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

 private:
  fs::path dir_;
};

void declare(onnx::ValueInfoProto* v, const std::string& name, std::vector<int64_t> dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

// y = x + w, with w an initializer of 4 floats the test may tamper with.
onnx::ModelProto add_weight_model(onnx::TensorProto** weight) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  declare(g->add_input(), "x", {4});
  declare(g->add_output(), "y", {4});
  auto* n = g->add_node();
  n->set_op_type("Add");
  n->set_name("add");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  *weight = w;
  return m;
}

void set_external(onnx::TensorProto* w, const std::string& location, int64_t offset, int64_t length) {
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = w->add_external_data();
  loc->set_key("location");
  loc->set_value(location);
  auto* off = w->add_external_data();
  off->set_key("offset");
  off->set_value(std::to_string(offset));
  auto* len = w->add_external_data();
  len->set_key("length");
  len->set_value(std::to_string(length));
}

std::string floats(std::vector<float> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

TEST(UntrustedModel, ExternalDataInsideFolderLoads) {
  ModelDir d("ok");
  onnx::TensorProto* w;
  auto m = add_weight_model(&w);
  set_external(w, "weights.bin", 4, 16);
  d.write("weights.bin", std::string(4, '\0') + floats({1, 2, 3, 4}));
  d.write("model.onnx", m.SerializeAsString());
  Session s(Model::load(d.path("model.onnx").string()));
  auto out = s.run({{"x", Tensor::from_values({0, 0, 0, 0}, {4}, DType::f32)}});
  EXPECT_EQ(out[0].to_doubles(), (std::vector<double>{1, 2, 3, 4}));
}

TEST(UntrustedModel, ExternalDataPathEscapesAreRefused) {
  ModelDir d("escape");
  fs::create_directories(d.path("sub"));
  d.write("sub/../../outside.bin", floats({1, 2, 3, 4}));  // a file next to the folder
  for (std::string location : {"../outside.bin", "/etc/passwd", "sub/../../outside.bin"}) {
    onnx::TensorProto* w;
    auto m = add_weight_model(&w);
    set_external(w, location, 0, 16);
    d.write("model.onnx", m.SerializeAsString());
    std::string msg = error_message<InvalidModel>([&] { Model::load(d.path("model.onnx").string()); });
    EXPECT_NE(msg.find(location), std::string::npos) << msg;
  }
  fs::remove(d.path("../outside.bin"));
}

TEST(UntrustedModel, SymlinkOutOfFolderIsRefused) {
  ModelDir d("symlink");
  ModelDir other("symlink_target");
  other.write("secret.bin", floats({1, 2, 3, 4}));
  fs::create_symlink(other.path("secret.bin"), d.path("weights.bin"));
  onnx::TensorProto* w;
  auto m = add_weight_model(&w);
  set_external(w, "weights.bin", 0, 16);
  d.write("model.onnx", m.SerializeAsString());
  std::string msg = error_message<InvalidModel>([&] { Model::load(d.path("model.onnx").string()); });
  EXPECT_NE(msg.find("outside the model's folder"), std::string::npos) << msg;
}

TEST(UntrustedModel, ExternalDataShorterThanDeclared) {
  ModelDir d("short");
  onnx::TensorProto* w;
  auto m = add_weight_model(&w);
  set_external(w, "weights.bin", 8, 16);
  d.write("weights.bin", floats({1, 2, 3}));  // 12 bytes, 16 needed from offset 8
  d.write("model.onnx", m.SerializeAsString());
  std::string msg = error_message<InvalidModel>([&] { Model::load(d.path("model.onnx").string()); });
  EXPECT_NE(msg.find("holds 12 bytes"), std::string::npos) << msg;
}

TEST(UntrustedModel, DeclaredLengthDisagreesWithShape) {
  ModelDir d("length");
  onnx::TensorProto* w;
  auto m = add_weight_model(&w);
  set_external(w, "weights.bin", 0, 8);
  d.write("weights.bin", floats({1, 2, 3, 4}));
  d.write("model.onnx", m.SerializeAsString());
  std::string msg = error_message<InvalidModel>([&] { Model::load(d.path("model.onnx").string()); });
  EXPECT_NE(msg.find("needs 16 bytes"), std::string::npos) << msg;
}

TEST(UntrustedModel, RawDataSizeMismatch) {
  onnx::TensorProto* w;
  auto m = add_weight_model(&w);
  w->set_raw_data(floats({1, 2, 3}));
  std::string bytes = m.SerializeAsString();
  std::string msg = error_message<InvalidModel>([&] { Model::from_bytes(bytes.data(), bytes.size()); });
  EXPECT_NE(msg.find("raw_data holds 12 bytes"), std::string::npos) << msg;
}

TEST(UntrustedModel, HugeDeclaredShapeIsRefusedBeforeAllocating) {
  onnx::TensorProto* w;
  auto m = add_weight_model(&w);
  w->clear_dims();
  w->add_dims(int64_t{1} << 40);
  w->add_dims(int64_t{1} << 30);
  w->set_raw_data(floats({1}));
  std::string bytes = m.SerializeAsString();
  error_message<InvalidModel>([&] { Model::from_bytes(bytes.data(), bytes.size()); });
  w->clear_dims();
  w->add_dims(int64_t{1} << 33);  // 32 GiB of floats declared, 4 bytes present
  bytes = m.SerializeAsString();
  std::string msg = error_message<InvalidModel>([&] { Model::from_bytes(bytes.data(), bytes.size()); });
  EXPECT_NE(msg.find("raw_data holds 4 bytes"), std::string::npos) << msg;
}

// The bytes of a tag and a length-delimited field, as protobuf writes them.
std::string varint(uint64_t v) {
  std::string s;
  for (; v >= 0x80; v >>= 7) s.push_back(static_cast<char>(v | 0x80));
  s.push_back(static_cast<char>(v));
  return s;
}
std::string field(int number, const std::string& payload) {
  return varint(static_cast<uint64_t>(number) << 3 | 2) + varint(payload.size()) + payload;
}

std::vector<double> constant_values(const Model& m, const std::string& name) {
  const Graph& g = m.graph();
  return g.values.at(g.find(name)).constant.to_doubles();
}

// Import reads each initializer's raw_data once, from the file or the caller's bytes, straight
// into its tensor (runtime/onnx_source.hpp); what the tensors hold must be what protobuf's
// reading of the same bytes says, however the message is laid out.
TEST(UntrustedModel, InitializersReadFromFileAndMemoryAlike) {
  onnx::TensorProto* w;
  auto m = add_weight_model(&w);
  w->set_raw_data(floats({1, 2, 3, 4}));
  auto* typed = m.mutable_graph()->add_initializer();  // typed field, no raw_data
  typed->set_name("typed");
  typed->set_data_type(onnx::TensorProto::FLOAT);
  typed->add_dims(2);
  typed->add_float_data(5);
  typed->add_float_data(6);
  auto* flags = m.mutable_graph()->add_initializer();  // bool bytes other than 0 and 1
  flags->set_name("flags");
  flags->set_data_type(onnx::TensorProto::BOOL);
  flags->add_dims(3);
  flags->set_raw_data(std::string("\x00\x07\x01", 3));
  std::string bytes = m.SerializeAsString();
  // A second graph field merges into the first (its initializers follow), and a raw_data given
  // twice in one tensor counts once, the last: protobuf's rules for repeated and singular fields.
  onnx::TensorProto twice;
  twice.set_name("twice");
  twice.set_data_type(onnx::TensorProto::FLOAT);
  twice.add_dims(1);
  twice.set_raw_data(floats({7}));
  std::string tensor = twice.SerializeAsString() + field(9, floats({8}));
  bytes += field(7, field(5, tensor));
  // An unknown length-delimited field in every message the scan takes apart.
  bytes += field(1000, "model");

  detail::ByteSource memory(bytes.data(), bytes.size());
  std::optional<detail::StrippedMessage> stripped = detail::strip_model_raw_data(memory);
  ASSERT_TRUE(stripped);  // the scan followed this layout: no weight went through protobuf
  ASSERT_EQ(stripped->raw.size(), 4u);
  EXPECT_FALSE(stripped->raw[1]);  // "typed" has no raw_data
  EXPECT_EQ(stripped->raw[3]->size, 4u);
  EXPECT_LT(stripped->bytes.size(), bytes.size() - 4 * 4);

  ModelDir d("layout");
  d.write("model.onnx", bytes);
  for (const Model& model : {Model::load(d.path("model.onnx").string()), Model::from_bytes(bytes.data(), bytes.size())}) {
    EXPECT_EQ(constant_values(model, "w"), (std::vector<double>{1, 2, 3, 4}));
    EXPECT_EQ(constant_values(model, "typed"), (std::vector<double>{5, 6}));
    EXPECT_EQ(constant_values(model, "flags"), (std::vector<double>{0, 1, 1}));
    EXPECT_EQ(constant_values(model, "twice"), (std::vector<double>{8}));
    auto out = Session(model).run({{"x", Tensor::from_values({1, 1, 1, 1}, {4}, DType::f32)}});
    EXPECT_EQ(out[0].to_doubles(), (std::vector<double>{2, 3, 4, 5}));
  }
  onnx::ModelProto reference;
  ASSERT_TRUE(reference.ParseFromString(bytes));
  EXPECT_EQ(reference.graph().initializer_size(), 4);
  EXPECT_EQ(reference.graph().initializer(3).raw_data(), floats({8}));
}

// Bytes the scan does not follow (here a group, wire type 3, in the graph) go to protobuf whole,
// which reads the model as before.
TEST(UntrustedModel, GroupFieldsLoadThroughProtobuf) {
  onnx::TensorProto* w;
  auto m = add_weight_model(&w);
  w->set_raw_data(floats({1, 2, 3, 4}));
  std::string group = varint(1000 << 3 | 3) + varint(1 << 3 | 0) + varint(5) + varint(1000 << 3 | 4);
  std::string bytes = m.SerializeAsString() + field(7, group);
  detail::ByteSource memory(bytes.data(), bytes.size());
  EXPECT_FALSE(detail::strip_model_raw_data(memory));
  ModelDir d("group");
  d.write("model.onnx", bytes);
  Model model = Model::load(d.path("model.onnx").string());
  EXPECT_EQ(constant_values(model, "w"), (std::vector<double>{1, 2, 3, 4}));
}

// A file cut anywhere (inside a weight's bytes, inside a field's header) is refused with the
// message of a truncated model, naming the file.
TEST(UntrustedModel, TruncatedInitializerIsRefused) {
  onnx::TensorProto* w;
  auto m = add_weight_model(&w);
  w->clear_dims();
  w->add_dims(1024);
  w->set_raw_data(floats(std::vector<float>(1024, 1.5f)));
  // The initializer is the graph's last field: cut inside its raw_data, and at every byte of the
  // 12 before the weight's bytes (field headers).
  std::string bytes = m.SerializeAsString();
  size_t raw_start = bytes.find(floats(std::vector<float>(1024, 1.5f)));
  ASSERT_NE(raw_start, std::string::npos);
  ModelDir d("truncated");
  std::vector<size_t> cuts = {raw_start + 2048, bytes.size() - 1};
  for (size_t k = raw_start - 12; k <= raw_start; ++k) cuts.push_back(k);
  for (size_t cut : cuts) {
    d.write("model.onnx", bytes.substr(0, cut));
    std::string msg = error_message<InvalidModel>([&] { Model::load(d.path("model.onnx").string()); });
    EXPECT_NE(msg.find("truncated or not ONNX"), std::string::npos) << "cut at " << cut << ": " << msg;
    EXPECT_NE(msg.find("model.onnx"), std::string::npos) << msg;
    msg = error_message<InvalidModel>([&] { Model::from_bytes(bytes.data(), cut); });
    EXPECT_NE(msg.find("truncated or not ONNX"), std::string::npos) << "cut at " << cut << ": " << msg;
  }
}

// A file that shrinks after it was opened (bytes its size promised are gone when they are read)
// gives an error, not a crash: the file is read with pread, never mapped.
TEST(UntrustedModel, FileShorterThanWhenOpenedIsAnError) {
  ModelDir d("shrinks");
  d.write("data.bin", std::string(100, 'x'));
  detail::ByteSource source(d.path("data.bin").string());
  ASSERT_EQ(source.size(), 100u);
  fs::resize_file(d.path("data.bin"), 50);
  char buffer[20];
  source.read(20, buffer, 20);
  std::string msg = error_message<InvalidModel>([&] { source.read(40, buffer, 20); });
  EXPECT_NE(msg.find("became shorter"), std::string::npos) << msg;
  msg = error_message<InvalidModel>([&] { source.read(90, buffer, 20); });
  EXPECT_NE(msg.find("past the end"), std::string::npos) << msg;
}

// A FIFO (or a device) named as the model is refused without blocking on it.
TEST(UntrustedModel, NonRegularFileIsRefused) {
  ModelDir d("fifo");
  ASSERT_EQ(mkfifo(d.path("model.onnx").c_str(), 0600), 0);
  std::string msg = error_message<InvalidModel>([&] { Model::load(d.path("model.onnx").string()); });
  EXPECT_NE(msg.find("not a regular file"), std::string::npos) << msg;
}

TEST(UntrustedModel, TensorProtoFileReadsRawData) {
  ModelDir d("tensor_proto");
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(3);
  t.set_raw_data(floats({1, 2, 3}));
  d.write("t.pb", t.SerializeAsString());
  EXPECT_EQ(read_tensor_proto(d.path("t.pb").string()).to_doubles(), (std::vector<double>{1, 2, 3}));
  d.write("t.pb", t.SerializeAsString().substr(0, 10));
  std::string msg = error_message<InvalidArgument>([&] { read_tensor_proto(d.path("t.pb").string()); });
  EXPECT_NE(msg.find("not a serialized TensorProto"), std::string::npos) << msg;
}

TEST(UntrustedModel, CycleIsRejected) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  declare(g->add_input(), "x", {2});
  declare(g->add_output(), "y", {2});
  auto* a = g->add_node();
  a->set_op_type("Add");
  a->set_name("a");
  a->add_input("x");
  a->add_input("c");
  a->add_output("b");
  auto* b = g->add_node();
  b->set_op_type("Relu");
  b->set_name("b");
  b->add_input("b");
  b->add_output("c");
  auto* y = g->add_node();
  y->set_op_type("Relu");
  y->set_name("out");
  y->add_input("c");
  y->add_output("y");
  std::string bytes = m.SerializeAsString();
  std::string msg = error_message<InvalidModel>([&] { Model::from_bytes(bytes.data(), bytes.size()); });
  EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;
}

TEST(UntrustedModel, NameNothingProducesIsRejected) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  declare(g->add_input(), "x", {2});
  declare(g->add_output(), "y", {2});
  auto* a = g->add_node();
  a->set_op_type("Add");
  a->set_name("a");
  a->add_input("x");
  a->add_input("ghost");
  a->add_output("y");
  std::string bytes = m.SerializeAsString();
  std::string msg = error_message<InvalidModel>([&] { Model::from_bytes(bytes.data(), bytes.size()); });
  EXPECT_NE(msg.find("'ghost'"), std::string::npos) << msg;
}

TEST(UntrustedModel, UnknownOpsAreAllListed) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  declare(g->add_input(), "x", {2});
  declare(g->add_output(), "z", {2});
  auto* a = g->add_node();
  a->set_op_type("FancyOp");
  a->set_name("first");
  a->add_input("x");
  a->add_output("y");
  auto* b = g->add_node();
  b->set_op_type("OtherOp");
  b->set_name("second");
  b->add_input("y");
  b->add_output("z");
  std::string bytes = m.SerializeAsString();
  std::string msg = error_message<Unsupported>([&] { Model::from_bytes(bytes.data(), bytes.size()); });
  for (const char* s : {"FancyOp", "'first'", "OtherOp", "'second'", "opset 17", "PORTA_PLUGIN_PATH", "examples/README.md"})
    EXPECT_NE(msg.find(s), std::string::npos) << msg;
}

TEST(UntrustedModel, OpsetOutsideRangeIsRefused) {
  onnx::TensorProto* w;
  auto m = add_weight_model(&w);
  w->set_raw_data(floats({1, 2, 3, 4}));
  m.mutable_opset_import(0)->set_version(9);
  std::string bytes = m.SerializeAsString();
  std::string msg = error_message<Unsupported>([&] { Model::from_bytes(bytes.data(), bytes.size()); });
  EXPECT_NE(msg.find("opset 9"), std::string::npos) << msg;
}

TEST(UntrustedModel, StaticShapeMismatchFailsAtLoad) {
  onnx::TensorProto* w;
  auto m = add_weight_model(&w);
  w->clear_dims();
  w->add_dims(3);  // x is 4 elements: Add cannot broadcast 4 with 3
  w->set_raw_data(floats({1, 2, 3}));
  std::string bytes = m.SerializeAsString();
  try {
    Model::from_bytes(bytes.data(), bytes.size());
    FAIL() << "expected a ShapeError at load";
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("node 'add'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("4"), std::string::npos) << msg;
  }
}

TEST(UntrustedModel, OutputShapesAreInferredAtLoad) {
  onnx::TensorProto* w;
  auto m = add_weight_model(&w);
  w->set_raw_data(floats({1, 2, 3, 4}));
  m.mutable_graph()->mutable_output(0)->clear_type();
  std::string bytes = m.SerializeAsString();
  Model model = Model::from_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(model.outputs()[0].shape, (Shape{4}));
  EXPECT_EQ(model.outputs()[0].dtype, DType::f32);
}

TEST(UntrustedModel, GatherIndexOutOfRangeIsAnError) {
  Tensor data = Tensor::from_values({1, 2, 3}, {3}, DType::f32);
  Tensor idx = Tensor::from_values({0, 7}, {2}, DType::i64);
  EXPECT_THROW(call_op("Gather", {data, idx}), ShapeError);
}

}  // namespace
}  // namespace porta::test
