// porta — op schemas, kernels and their registration.
//
// An op is defined once (ops/<name>.cpp): schema, shape/dtype inference, a float64 reference,
// optionally a composite decomposition into other ops, and the test/bench cases. Kernels live
// in kernels/<backend>/ and register themselves for (op, backend, dtypes). Nothing central
// lists ops or kernels.
#pragma once
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "porta/attributes.hpp"
#include "porta/backend.hpp"
#include "porta/tensor.hpp"

namespace porta {

struct OpSchema;

// ---------------------------------------------------------------------------------------
// Shape and dtype inference

/// What inference knows about one value.
struct ValueInfo {
  bool present = true;      ///< false for an absent optional input
  Shape shape;
  DType dtype = DType::f32;
  const Tensor* value = nullptr;  ///< host value when known at compile time (constants)
};

struct InferContext {
  const OpSchema* op = nullptr;
  const Attributes* attrs = nullptr;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;  ///< sized to the node's output count; fill shape+dtype

  size_t num_inputs() const { return inputs.size(); }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i].present; }
  const Shape& shape(size_t i) const { return inputs.at(i).shape; }
  DType dtype(size_t i) const { return inputs.at(i).dtype; }
  /// Host value of input i (i64 shape tensors, axes...); throws ShapeError when it is not
  /// known before running (porta needs it to size outputs).
  const Tensor& value(size_t i) const;
  std::vector<int64_t> int_values(size_t i) const;
  void set_output(size_t i, Shape shape, DType dtype);
};
using InferFn = std::function<void(InferContext&)>;

// ---------------------------------------------------------------------------------------
// Kernels and references

/// Everything a kernel call receives. Outputs are allocated by the caller with the inferred
/// shapes and dtypes; inputs are contiguous unless the kernel asked for strided inputs.
struct KernelContext {
  const OpSchema* op = nullptr;
  const Attributes* attrs = nullptr;
  Device device;
  Backend* backend = nullptr;
  std::vector<Tensor> inputs;   ///< undefined Tensor for an absent optional input
  std::vector<Tensor> outputs;
  /// (reference only) dtype each input had before it was converted to f64, so references of
  /// dtype-sensitive ops (integer Div, wrap-around of narrow integers) can follow it.
  std::vector<DType> source_dtypes;
  /// Bit i set: input i is a session constant (a weight: its storage and contents never change
  /// while the session lives), so a kernel may cache data derived from it (reordered weights)
  /// keyed on its storage. 0 for eager calls.
  uint64_t constant_inputs = 0;
  /// Prepared data a kernel may keep between calls (a primitive, bound memory objects, packed
  /// weights). In a session it belongs to the step, lives as long as the session's plan and is
  /// only ever used by one thread at a time; an eager call starts empty. A kernel checks that
  /// what it finds fits the call (shapes, constant weights) before using it.
  std::shared_ptr<void> state;
  /// Constant inputs the kernel's `state` holds in full and exactly (a weight packed in its own
  /// dtype), set by the kernel when it prepares that state: while later calls fit the state
  /// the kernel does not read those inputs' data (it tells them apart by storage and offset,
  /// not by reading raw_data()), and `rebuild` writes the input's contents, in C order, into
  /// `dst`. A session may then free the constant's own bytes (Storage::release).
  struct HeldInput {
    size_t input = 0;
    std::function<void(void* dst)> rebuild;
  };
  std::vector<HeldInput> held;
  /// Bytes of all the session's constants (its weights) on this kernel's device, 0 for eager
  /// calls: a kernel whose weights stream from memory may tell from it whether they all stay
  /// in cache from one run to the next, and skip prefetching them (kernels/cpu/cache_size.hpp).
  int64_t session_constant_bytes = 0;
  /// In a session, per input: for the op's host_read_inputs on a device, the input's value on
  /// the host where the session knows it there (same shape, dtype and values as in(i));
  /// undefined otherwise. Empty for eager calls.
  std::vector<Tensor> host_copies;

  const Tensor& in(size_t i) const { return inputs.at(i); }
  /// Input i's values on the host: its host copy, else in(i) read back (which waits for the
  /// device's work so far).
  Tensor on_host(size_t i) const {
    return i < host_copies.size() && host_copies[i].defined() ? host_copies[i] : inputs.at(i).to(Device::cpu());
  }
  bool is_constant_input(size_t i) const { return i < 64 && ((constant_inputs >> i) & 1); }
  Tensor& out(size_t i) { return outputs.at(i); }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i].defined(); }
};
using KernelFn = std::function<void(KernelContext&)>;
/// Returns "" to accept the call, or the reason it declines (shapes, limits, attributes).
using SupportsFn = std::function<std::string(const KernelContext&)>;

/// One implementation among several of an op on a backend (as oneDNN keeps an ordered list
/// per primitive): the dispatcher tries them in descending priority, skipping those whose
/// `supports` declines the call, and `porta ops` names the one chosen and why the ones before
/// it declined. Kernels of one (op, backend) whose dtypes overlap must differ in priority.
struct KernelImpl {
  std::string name;   ///< "onednn", "rows", "cudnn"...; "" for the only kernel of its op
  int priority = 0;   ///< higher is tried first
};

struct KernelDef {
  /// The op: "Name" (resolved as find_op resolves a plain name: porta's own ops, '' then
  /// ai.porta) or "domain::Name". Plugins' kernels are stored qualified.
  std::string op;
  DeviceType backend = DeviceType::cpu;
  KernelImpl impl;            ///< name and place among the backend's kernels for the op
  DTypeSet dtypes = 0;        ///< accepted dtypes of the op's dispatch input
  KernelFn fn;
  SupportsFn supports;        ///< optional
  bool strided_inputs = false;  ///< kernel handles non-contiguous inputs itself
  /// With strided_inputs: true when the kernel reads input `i` of `call` (a strided view, as
  /// call.in(i) describes it: shape, strides, offset) where it lies, without a copy of its own.
  /// A session then passes such a reader the view of a chain of Slice, Transpose and reshape
  /// steps instead of running the chain's copy (Compiler::read_chains_in_place).
  std::function<bool(const KernelContext& call, size_t i)> reads_view;
  /// True when the kernel writes output `i` of `call` through the strided view call.out(i)
  /// describes (its elements where the view puts them, nothing else of the memory). A session
  /// then has it write a value that only a Transpose (or chain of copies) reads straight into
  /// that copy's result (Compiler::write_chains_in_place). Kernels without it get contiguous
  /// outputs.
  std::function<bool(const KernelContext& call, size_t i)> writes_view;
  std::string source = "builtin";  ///< "builtin" or the plugin's name
  /// Takes calls whose dispatch input is bf16 or f16 and whose output 0 is f32: its f32
  /// accumulators written without rounding to the half type. A session with a low precision
  /// asks for that (instead of a Cast after the product) with the attribute
  /// `porta_f32_output` = 1, only when every kernel that may run the node on its device
  /// declares it; a kernel that does not declines such a call. Such a kernel also takes a
  /// fused bias (MatMul's porta_bias) in f32 with half inputs: a low-precision session keeps
  /// the bias f32 where every kernel of the node declares this.
  bool f32_output = false;
  /// Low float formats (bf16, f16) the kernel computes in while its inputs and outputs stay
  /// f32: it converts activations and weights itself (weights once per session when they are
  /// constants) and accumulates in f32. A session with that precision asks for it with the
  /// attribute `porta_compute` (the format's ONNX dtype code) rather than Casts around the
  /// node, only when every kernel that may run the node on its device declares the format; a
  /// kernel that does not declines such a call.
  DTypeSet computes_in = 0;
  /// Activations (op names, e.g. "Relu") the kernel applies to its output when the call
  /// carries the attribute `porta_activation` naming one. A session folds an activation into
  /// its producer only when every kernel that may run the producer declares it.
  std::vector<std::string> fused_activations;
  /// A backend-private activation layout ("" for none), e.g. the cpu's oneDNN channels-last.
  /// `layout_use(call)` says which operands of a call the kernel can take in it: a bit per
  /// input (bit i = input i) and whether output 0 can be written in it. A session keeps a
  /// value in the layout when its producer writes it there and every reader takes it there (or
  /// is layout-agnostic, below), on one device; each such step learns which of its operands
  /// are in the layout from the attribute `porta_layout` (see porta::LayoutSides).
  std::string private_layout;
  struct LayoutUse {
    uint64_t inputs = 0;
    bool output = false;
    bool tied = false;  ///< the operands named are all in the layout or all plain (never mixed)
  };
  std::function<LayoutUse(const KernelContext&)> layout_use;
  /// Elementwise kernels: the kernel reads every input shaped like output 0 and writes output 0
  /// as flat arrays in one element order (inputs of one element aside), so any private layout
  /// those operands share works unchanged. A session passes such a step values in a private
  /// layout when all of them are in it, and its output is then in it too (as a `tied` use).
  /// A kernel with both takes `layout_use` where that names operands, else this.
  bool layout_agnostic = false;
  /// Sizes, by name, the kernel takes at most in the calls a session builds for it (e.g.
  /// ElementwiseChain's "inputs", "steps" and "floats": what one dispatch binds, unrolls and
  /// passes as push constants). A rewrite that joins nodes into one such call keeps it within
  /// the smallest limit among the kernels that may run it on the device
  /// (detail::kernel_limit); `supports` still declines any call past one, as the op itself has
  /// none (a model file may carry larger calls; the op's decomposition runs them).
  std::vector<std::pair<std::string, int64_t>> limits;
};

/// Which operands of a step are in its kernel's private layout: parsed from the attribute
/// `porta_layout` that a session sets ("" when none is): one '0'/'1' per input, then ':' and
/// '0'/'1' for output 0 (e.g. "01:1": input 1 and output 0).
struct LayoutSides {
  uint64_t inputs = 0;
  bool output = false;
  bool input(size_t i) const { return i < 64 && ((inputs >> i) & 1); }
  bool any() const { return inputs != 0 || output; }
  static LayoutSides parse(const std::string& code);
  static std::string format(uint64_t inputs, size_t n_inputs, bool output);
};

// ---------------------------------------------------------------------------------------
// Composite decomposition

/// A value inside a graph being built; -1 means absent.
using ValueId = int;

/// Receives the nodes a composite decomposition emits. Shapes and dtypes of every value are
/// known while building, so decompositions can depend on them.
class GraphBuilder {
 public:
  virtual ~GraphBuilder() = default;
  /// Adds a node of `op` and returns its outputs.
  virtual std::vector<ValueId> add(std::string_view op, std::vector<ValueId> inputs,
                                   Attributes attrs = {}, int num_outputs = 1) = 0;
  ValueId add1(std::string_view op, std::vector<ValueId> inputs, Attributes attrs = {}) {
    return add(op, std::move(inputs), std::move(attrs), 1).at(0);
  }
  /// A constant (host tensor) as a value.
  virtual ValueId constant(const Tensor& value) = 0;
  virtual const Shape& shape(ValueId v) const = 0;
  virtual DType dtype(ValueId v) const = 0;
};
using CompositeFn =
    std::function<std::vector<ValueId>(GraphBuilder&, std::span<const ValueId>, const Attributes&)>;

// ---------------------------------------------------------------------------------------
// Test and benchmark cases (one set, used by conformance tests and `porta bench`)

struct InputSpec {
  Shape shape;
  std::optional<DType> dtype;   ///< nullopt: the case's dtype
  double lo = -2.0, hi = 2.0;   ///< uniform random range
  bool integers = false;        ///< draw integers in [lo, hi]
  std::vector<double> values;   ///< fixed contents (shape tensors, axes...) when non-empty
  bool absent = false;          ///< leave this optional input out
  bool transposed = false;      ///< pass a non-contiguous view (last two axes swapped)
};

struct OpCase {
  std::string name;
  std::vector<InputSpec> inputs;
  Attributes attrs;
  DTypeSet dtypes = dtype_bit(DType::f32);  ///< dtypes this case runs with
  int num_outputs = 1;
  bool perf = false;        ///< part of the default benchmark suite
  double tolerance = 0.0;   ///< relative error bound; 0 = default for the dtype
};

/// Work of one call for benchmarks: floating-point operations (0 for data movement ops).
using FlopsFn = std::function<double(const std::vector<Shape>& inputs,
                                     const std::vector<Shape>& outputs, const Attributes&)>;

// ---------------------------------------------------------------------------------------
// Schema

struct AttrDef {
  std::string name;
  AttrType type;
  std::optional<AttrValue> default_value;  ///< filled in when the attribute is absent
  bool required = false;                   ///< absent is an error (InvalidModel)
};

struct OpSchema {
  std::string name;
  std::string domain;  ///< "" for ONNX's default domain, "ai.porta" for porta's own ops
  /// Versions of the domain the op belongs to (custom domains, as ONNX Runtime's custom-op
  /// domains): a model importing the domain at another version is refused, naming both.
  /// Ops of ONNX's default domain follow the model's opset instead.
  int since_version = 1;
  int until_version = 0;  ///< 0: no last version
  std::vector<std::string> inputs;   ///< names; a trailing "?" marks optional, "..." variadic
  std::vector<std::string> outputs;  ///< names; "?" optional, "..." variadic
  std::vector<AttrDef> attrs;
  InferFn infer;
  /// float64 reference: a kernel over f64 host tensors (inputs converted, outputs f64).
  KernelFn reference;
  CompositeFn composite;            ///< optional
  std::vector<int> host_inputs;     ///< inputs whose values decide output shapes
  /// Inputs whose values a device's kernels read on the host before their work: indices they
  /// check (Gather: an index out of range is an error, never a read out of bounds), scalars they
  /// pass as constants (Clip's bounds, Pad's value), LSTM/GRU's sequence lengths. Where a
  /// session knows such a value on the host (a constant, a graph input the caller passed, an
  /// output of the host prologue) it hands it over in KernelContext::host_copies, and it folds
  /// a chain of constants that ends there, so the kernel does not wait for the device to read
  /// the values back.
  std::vector<int> host_read_inputs;
  int dispatch_input = 0;           ///< input whose dtype selects the kernel (-1: output 0)
  bool alias_input0 = false;        ///< output 0 may share input 0's memory (reshape-like)
  std::function<std::vector<OpCase>()> cases;
  FlopsFn flops;                    ///< optional

  /// "Name" for ONNX's default domain, "domain::Name" otherwise: the op's key in the registry
  /// and how messages, `porta ops` and `porta bench --op` name it.
  std::string qualified_name() const;

  int min_inputs() const;
  int max_inputs() const;  ///< -1: variadic
  int min_outputs() const;
  int max_outputs() const;
};

// ---------------------------------------------------------------------------------------
// Registry

/// The registry key of an op: "Name" in ONNX's default domain ('' or "ai.onnx"),
/// "domain::Name" in any other.
std::string op_key(std::string_view domain, std::string_view name);
/// Registers an op; throws InvalidArgument if an op of that domain and name exists. Ops of one
/// name may exist in several domains (a plugin's LeakyRelu in com.example beside ONNX's).
void register_op(OpSchema schema);
/// Registers a kernel; checked against its op's schema when the registry is first used.
/// Throws InvalidArgument when a kernel of the same (op, backend) with overlapping dtypes and
/// the same priority exists (their order would be arbitrary).
void register_kernel(KernelDef kernel);
/// register_kernel for PORTA_REGISTER_KERNEL (and for a KernelDef built whole); returns true.
bool register_kernel_at_load(KernelDef kernel);
bool register_kernel_at_load(const char* op, DeviceType backend, DTypeSet dtypes, KernelFn fn,
                             SupportsFn supports = nullptr, KernelImpl impl = {});
/// As register_kernel_at_load, for a kernel with KernelDef::layout_agnostic set.
bool register_elementwise_kernel_at_load(const char* op, DeviceType backend, DTypeSet dtypes, KernelFn fn);
/// "cpu kernel", "cpu kernel 'onednn'", "cpu kernel from my_plugin": how messages name one.
std::string kernel_label(const KernelDef& kernel);
/// The op a name means, nullptr when none: "domain::Name" names exactly one op; a plain "Name"
/// means ONNX's default domain, then porta's own (ai.porta), then the only other domain that
/// has an op of that name (none when several do: see describe_unknown_op).
const OpSchema* find_op(std::string_view name);
/// The op of exactly that domain ("" and "ai.onnx" are the default domain) and name.
const OpSchema* find_op(std::string_view domain, std::string_view name);
/// Why find_op(name) found nothing: "unknown op 'X'", with the qualified names of the ops
/// called X in other domains when there are several.
std::string describe_unknown_op(std::string_view name);
std::vector<const OpSchema*> all_ops();
/// Kernels registered for an op (after PORTA_DISABLE_KERNELS is applied), per backend in the
/// order the dispatcher tries them.
std::vector<const KernelDef*> kernels_for(const OpSchema& op);
/// kernels_for(*find_op(op)); none when the name finds no op.
std::vector<const KernelDef*> kernels_for(std::string_view op);

// Dtype sets for kernel registration.
inline constexpr DTypeSet kF32 = dtype_bit(DType::f32);
inline constexpr DTypeSet kF64 = dtype_bit(DType::f64);
inline constexpr DTypeSet kF16 = dtype_bit(DType::f16);
inline constexpr DTypeSet kBF16 = dtype_bit(DType::bf16);
inline constexpr DTypeSet kI64 = dtype_bit(DType::i64);
inline constexpr DTypeSet kI32 = dtype_bit(DType::i32);
inline constexpr DTypeSet kI8 = dtype_bit(DType::i8);
inline constexpr DTypeSet kU8 = dtype_bit(DType::u8);
inline constexpr DTypeSet kBool = dtype_bit(DType::boolean);
inline constexpr DTypeSet kFloats = kF32 | kF64 | kF16 | kBF16;
inline constexpr DTypeSet kInts = kI64 | kI32 | kI8 | kU8;
inline constexpr DTypeSet kNumeric = kFloats | kInts;
inline constexpr DTypeSet kAllTypes = kNumeric | kBool;

}  // namespace porta

#define PORTA_CONCAT_INNER(a, b) a##b
#define PORTA_CONCAT(a, b) PORTA_CONCAT_INNER(a, b)

/// Defines and registers an op schema:
///   PORTA_REGISTER_OP(Relu) { OpSchema s; s.name = "Relu"; ...; return s; }
#define PORTA_REGISTER_OP(Name)                                                       \
  static ::porta::OpSchema porta_op_schema_##Name();                                  \
  namespace {                                                                        \
  const bool porta_op_registered_##Name =                                             \
      (::porta::register_op(porta_op_schema_##Name()), true);                          \
  }                                                                                  \
  static ::porta::OpSchema porta_op_schema_##Name()

/// Registers a kernel at library load:
///   PORTA_REGISTER_KERNEL(Relu, cpu, kF32 | kF64, relu_cpu)
///   PORTA_REGISTER_KERNEL(Softmax, cpu, kF32, softmax_rows, rows_supports)   // may decline
///   PORTA_REGISTER_KERNEL(Conv, cpu, kF32, conv_winograd, winograd_supports,
///                         (::porta::KernelImpl{"winograd", 10}))             // one of several
/// No lambda: hipcc gives lambdas in namespace-scope initializers of one file one mangled name.
#define PORTA_REGISTER_KERNEL(Op, Backend, DTypes, ...)                                     \
  namespace {                                                                             \
  const bool PORTA_CONCAT(porta_kernel_registered_##Op##_##Backend##_, __LINE__) =           \
      ::porta::register_kernel_at_load(#Op, ::porta::DeviceType::Backend, (DTypes), __VA_ARGS__); \
  }

/// Registers an elementwise kernel that is a flat loop over operands of one shape
/// (KernelDef::layout_agnostic), at library load:
///   PORTA_REGISTER_ELEMENTWISE_KERNEL(Relu, cpu, kF32 | kF64, relu_cpu)
#define PORTA_REGISTER_ELEMENTWISE_KERNEL(Op, Backend, DTypes, Fn)                            \
  namespace {                                                                             \
  const bool PORTA_CONCAT(porta_kernel_registered_##Op##_##Backend##_, __LINE__) =           \
      ::porta::register_elementwise_kernel_at_load(#Op, ::porta::DeviceType::Backend, (DTypes), Fn); \
  }
