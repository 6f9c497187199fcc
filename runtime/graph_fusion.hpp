// porta runtime — graph rewrites a session applies before compiling (inference only).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/graph.hpp"

namespace porta::detail {

/// The single value of a constant scalar (an initializer, or a Constant node's value or
/// value_float), if `v` is one.
std::optional<double> constant_scalar(const Graph& g, int v);
/// The Constant node (ONNX domain) producing `v`, or nullptr (also for an initializer).
const Node* constant_node(const Graph& g, int v);
/// The tensor of a constant value: an initializer, or a Constant node's `value`; else nullptr.
const Tensor* constant_tensor(const Graph& g, int v);

/// For pattern matchers: whether `n` is the ONNX-domain op `name` with one output that exists,
/// and (when `inputs` >= 0) exactly that many inputs.
bool is_onnx_op(const Node& n, const char* name, int inputs = -1);
/// Value v's dtype (its constant's where it has one).
DType dtype_of(const Graph& g, int v);
/// Value v's shape where it is known (a constant's, or load-time inference's, whose dims may
/// still be negative: unknown until inputs are bound), else null.
const Shape* known_shape(const Graph& g, int v);
/// For pattern matchers: when `n` is an ONNX Conv of value `x` (as its X alone) by a weight of
/// known shape M x C x 1... (rank 3 or more, M and C known), group 1, no padding, at most a
/// bias besides (no fused residual), every operand of dtype `dt`: that weight's shape; else
/// null. Strides are the caller's to check (over a 1x1 map any leave one output position).
const Shape* pointwise_conv_weight(const Graph& g, const Node& n, int x, DType dt);

/// Sets `key`, `key`_alpha and `key`_beta of `to` from the activation fused into a node
/// (`porta_activation` and its floats in `from`): how a fused op (SqueezeExcite's `activation`
/// and `gate`, GatedLinear's `activation`) takes over the activations of the nodes it replaces.
void copy_fused_activation(const Attributes& from, Attributes& to, const std::string& key);

/// Whether `device`'s kernel of `op` takes a call with `inputs` (value ids, -1 for an absent
/// optional one), `attrs` and the output `output`, at their shapes in `g` (all fully known:
/// an annotated graph): its `supports` asked through shape probes, as the planner does. Rewrites
/// that make a fused op use it to keep the nodes as they are where the fused op would run its
/// decomposition (which has lost what the nodes had fused).
bool native_for_shapes(const Graph& g, const OpSchema& op, const std::vector<int>& inputs, const Attributes& attrs,
                       int output, Device device);

/// For the `*_candidates` checks of rewrites into a fused op (before shapes are known): whether
/// some node i of `g` ends a match (`x_of(i)`: the value whose dtype the op dispatches on, or
/// -1 where node i ends none) that `domain`::`op` runs natively on `device`.
bool native_match_exists(const Graph& g, const char* domain, const char* op, Device device,
                         const std::function<int(int)>& x_of);

/// For pattern matchers: the nodes reading each value (one entry per read) and which values are
/// graph outputs.
struct ValueReaders {
  explicit ValueReaders(const Graph& g);
  std::vector<std::vector<int>> readers;
  std::vector<bool> is_output;
  /// The node reading v, when exactly one node reads it once and it is no graph output; else -1.
  int only_reader(int v) const;
};

/// What a rewrite of matched patterns builds: each pattern's nodes (in node order; the last one
/// after every other) become one node of `op` with `inputs` and `attrs`, in the last one's place
/// and writing its output (named `name`, or the last node's name when empty). The other nodes
/// go, and so do Constant nodes that only they read. Returns the rewritten graph.
struct PatternRewrite {
  std::vector<int> nodes;
  const OpSchema* op = nullptr;
  std::vector<int> inputs;
  Attributes attrs;
  std::string name;
};
std::shared_ptr<const Graph> rewrite_patterns(const Graph& g, const std::vector<PatternRewrite>& rewrites);

/// The value a chain of Identity nodes passes on to `v` (PyTorch's export shares equal
/// initializers through them, as every LayerNorm's gamma of a freshly built model), or `v`.
int through_identities(const Graph& g, int v);

/// False when PORTA_FUSE=0: the rewrites below, and the private activation layouts that plans
/// chain between kernels declaring one (runtime/plan_layouts.cpp), are off.
bool fusion_enabled();

/// Helpers the rewrites below share. The number of node inputs reading each value.
std::vector<int> consumer_counts(const Graph& g);
/// Per value: whether it is a graph output.
std::vector<bool> graph_output_flags(const Graph& g);
/// Removes the nodes marked in `drop` and renumbers every value's producer (a value no node
/// produces any more has none).
void drop_nodes(Graph& g, const std::vector<bool>& drop);
/// The host prologue's bound on each output of a node it runs (runtime/session_compile.cpp,
/// Compiler::place_on_host).
inline constexpr int64_t kHostPrologueElements = 16384;
/// Whether every element of a float constant of at most kHostPrologueElements elements is the
/// same value (a scalar, or a ConstantOfShape folded): such a constant carries no data of its
/// own, so a value made from masks and it is still a mask (the host prologue's "mask-like").
bool uniform_constant(const Tensor& t);
/// What the host prologue's rule knows of one present input of a node.
struct PrologueInput {
  const Tensor* constant = nullptr;  ///< its value, when it is a constant
  bool floating = false;             ///< a float dtype
  bool host = false;                 ///< made on the host: an index/mask graph input or a prologue output
  bool mask = false;                 ///< a mask-like float value made on the host
};
/// The host prologue's rule for one node, which Compiler::place_on_host and
/// host_prologue_values both apply: the node runs there when at least one input is not a
/// constant, every such input is made on the host (and, if it is a float, mask-like), and
/// each output has a known size of at most kHostPrologueElements (`output_numels`, -1 where
/// unknown). `masks` (when the node runs there): whether its float outputs are mask-like,
/// i.e. every float input is a mask or a uniform constant.
struct PrologueRule {
  bool place = false;
  bool masks = false;
};
PrologueRule prologue_rule(const std::vector<PrologueInput>& inputs, const std::vector<int64_t>& output_numels);
/// Per value of a graph on a device other than the cpu, whether the host prologue will compute
/// it: prologue_rule applied over the graph, from its i64/i32/bool inputs. Rewrites that would
/// hide such a node from the prologue (an ElementwiseChain, which the cpu has no kernel for)
/// leave it.
std::vector<bool> host_prologue_values(const Graph& g);

/// For rewrites that add nodes: a value name not yet in `g` (`base`, else `base_1`, ...).
std::string fresh_name(const Graph& g, const std::string& base);
/// A new int64 constant holding `shape` (a Reshape's target).
int constant_shape(Graph& g, const std::string& name, const Shape& shape);
/// A new value of known dtype and shape that no node produces yet.
int new_value(Graph& g, const std::string& name, DType dtype, Shape shape);
/// A node of the registered op `domain`::`op` with its attributes completed from the schema.
Node new_node(const char* domain, const char* op, std::string name, std::vector<int> inputs, std::vector<int> outputs,
              const Attributes& attrs = {});
/// Rebuilds `g`'s node list: in front of each node i the nodes of `inserted[i]` (moved from),
/// then node i unless `drop[i]`; every value's producer is renumbered.
void splice_nodes(Graph& g, std::vector<std::vector<Node>>& inserted, const std::vector<bool>& drop);
/// Reshape's attributes for a target taken literally (a 0 is an empty axis, not "keep this one").
const Attributes& exact_reshape();
/// Marks in `drop` the Constant nodes producing one of `candidates` that nothing but nodes
/// already marked reads and that are no graph output (a fused Clip's bounds, a folded Pad's pads).
void drop_unread_constants(const Graph& g, const std::vector<int>& candidates, std::vector<bool>& drop);

/// Marks absent (-1) every optional output (the schema's name ends in '?') that no node reads
/// and that is no graph output, so kernels skip it and an op that aliases its input (Identity,
/// Dropout: OpSchema::alias_input0) becomes a view when only its output 0 is read. PyTorch
/// exports every Dropout with its mask output named and unread (swin_t: 24 of them, each a
/// copy of its input). Sessions that keep every intermediate value pass `enabled` = false.
/// Returns `graph` itself when no output is dropped. PORTA_FUSE=0 turns it off.
std::shared_ptr<const Graph> drop_unread_outputs(const std::shared_ptr<const Graph>& graph, bool enabled);

/// Drops the taps of a Conv that read only padding at every output position along an axis (an
/// atrous conv over a map smaller than its dilation, a 7x7 kernel over a 2x2 map): its weights
/// sliced to the taps that read the input (a new constant), kernel_shape and pads cut to match
/// (explicit, auto_pad NOTSET; `porta_taps_of` keeps the kernel's shape as written, for the
/// plan's report), so the output's shape and values stay. Needs the input's shape
/// (an annotated graph) and constant weights; kept where a pad would go negative. Returns
/// `graph` itself when no Conv trims. PORTA_FUSE=0 turns it off.
std::shared_ptr<const Graph> trim_padding_taps(const std::shared_ptr<const Graph>& graph, bool enabled);
/// Whether `g` has a Conv with constant weights wider than 1 along some axis (before shapes).
bool padding_tap_candidates(const Graph& g);

/// Folds each BatchNormalization (inference mode) that directly follows a Conv into that Conv:
/// W'[m] = W[m] * a[m], B'[m] = (B[m] - mean[m]) * a[m] + shift[m], a = scale / sqrt(var + eps),
/// computed in float64 and stored as f32. Applies only when the Conv's weights (and bias) and
/// the BatchNormalization's four parameters are f32 constants, the Conv output feeds that
/// BatchNormalization alone and is not a graph output, and the BatchNormalization has one
/// output. The BatchNormalization node disappears; the Conv (keeping its name) produces its
/// output. Returns `graph` itself when nothing folds. PORTA_FUSE=0 turns folding off.
std::shared_ptr<const Graph> fold_conv_batch_norm(const std::shared_ptr<const Graph>& graph);

/// Folds each Pad that only adds zeros around the spatial axes into the Conv or AveragePool
/// reading it, whose own pads then grow by the Pad's (runtime/pad_fusion.cpp). PyTorch exports
/// avg_pool2d(padding=p, count_include_pad=True) as such a Pad and an AveragePool (Inception
/// v3), and a padding layer before a conv as a Pad and a Conv. A Pad folds only when
///  - mode is "constant", the value is absent or a constant scalar +0.0, there is no axes
///    input, and pads is a constant (initializer or Constant node) of non-negative integers,
///    zero on axes 0 and 1 (N, C), for rank 3 to 5 (pads' length / 2; a reader's own pads
///    then have the length for that rank, which its inference checks against its input);
///  - its output is no graph output and is read by one node alone, as that node's input 0:
///    a Conv whose auto_pad is NOTSET (any pads, strides, dilations, group), or an AveragePool
///    whose auto_pad is NOTSET and ceil_mode 0, with count_include_pad = 1 (pads add up, the
///    divisor stays the kernel size), or count_include_pad = 0 and no pads of its own (every
///    window then lies inside the padded data, so the divisor was the kernel size: it becomes
///    pads = the Pad's, count_include_pad = 1).
/// The results are the same numbers (a sum that only had the Pad's +0.0 besides -0.0 inputs
/// may now be -0.0). MaxPool never takes a Pad's zeros: its padding is no tap, and a zero beats
/// negative inputs (with a -inf value, NaN inputs would still order differently).
/// A Pad whose pads are all zero is the identity and disappears before any readers (any mode,
/// its output no graph output; as graph values have no shapes yet, a model whose zero pads do
/// not fit the data's rank, which the Pad would reject, then runs). The Pad node disappears,
/// and a Constant node that only fed its pads or value. Sessions that keep every intermediate
/// value pass `enabled` = false. Returns `graph` itself when nothing folds. PORTA_FUSE=0 turns
/// folding off.
std::shared_ptr<const Graph> fold_pads(const std::shared_ptr<const Graph>& graph, bool enabled);

/// Fuses the Add that adds a Conv's output to another value (ResNet's shortcut) into that Conv,
/// as its porta-internal input 3 `porta_residual` (ops/conv.cpp: Act(Conv + residual), so an
/// activation after the Add fuses afterwards); the same for a MatMul or Gemm (a transformer
/// block's residual after its output projection or second feed-forward layer; ops/matmul.cpp,
/// ops/gemm.cpp), when
///  - the node (ONNX domain, no activation fused yet, at most 3 inputs) writes y, read by that
///    Add alone (as either operand) and no graph output; the Add's other operand r is not y;
///  - y and r have the same fully known shape (load-time inference; no broadcasting) and dtype;
///  - every kernel that may run the node on `device` for its dtype declares "porta_residual"
///    in KernelDef::fused_activations (the cpu's kernels too, as for activations).
/// The fused node takes the Add's place in the node order (r may be computed after the Conv's
/// inputs) and writes the Add's output. Returns `graph` itself when nothing fuses; sessions
/// keeping every value pass `enabled` = false; PORTA_FUSE=0 turns it off. Shapes are those of
/// Value::shape_known: sessions run it per plan on a graph annotated for the plan's input
/// shapes (detail::annotate_shapes), so models with dynamic dimensions fuse too.
std::shared_ptr<const Graph> fuse_residual_add(const std::shared_ptr<const Graph>& graph, Device device,
                                               bool enabled);
/// Whether `graph` has a Conv, MatMul or Gemm whose output feeds an Add alone and whose kernels
/// on `device` take a residual: the structural part of fuse_residual_add's test, without shapes (sessions
/// annotate shapes per plan only when this holds).
bool residual_add_candidates(const Graph& graph, Device device);

/// Rewrites each squeeze-and-excitation block into one SqueezeExcite (ai.porta,
/// ops/squeeze_excite.cpp; runtime/squeeze_excite_fusion.cpp): y = Mul(x, s) (either order)
/// with s = Conv(Conv(p, W1, B1?), W2, B2?) and p = GlobalAveragePool(x), or ReduceMean of x
/// over every spatial axis keeping them (axes as an attribute or a constant input), where
///  - p, the first Conv's output and s are each read by the next node alone and no graph output;
///  - both Convs are ONNX Convs of group 1 without padding or residual, their weights of known
///    shape (constants) with ones past the first two axes, R x C and C x R (x's rank is taken
///    to be theirs: the op's inference checks it when shapes are bound);
///    the activations already fused into them (porta_activation) become the op's `activation`
///    and `gate`;
///  - x and every Conv input have one dtype, f32 or f16;
///  - `device`'s kernel of SqueezeExcite takes the call at the plan's shapes (native_for_shapes:
///    where it would decline, the decomposition would lose the Convs' fused activations).
/// The op takes the Mul's place and writes its output. Shapes are those of Value::shape_known
/// (sessions run it per plan on an annotated graph). Returns `graph` itself when nothing
/// matches; sessions keeping every value pass `enabled` = false; PORTA_FUSE=0 turns it off.
std::shared_ptr<const Graph> fuse_squeeze_excite(const std::shared_ptr<const Graph>& graph, Device device,
                                                 bool enabled);
/// Whether `graph` has a squeeze-and-excitation block as fuse_squeeze_excite matches it, for a
/// device that runs the op natively, without the shapes (sessions annotate shapes per plan only
/// when a rewrite may apply).
bool squeeze_excite_candidates(const Graph& graph, Device device);

/// Rewrites each gated linear unit into one GatedLinear (ai.porta, ops/gated_linear.cpp;
/// runtime/gated_linear_fusion.cpp): y = Mul(a, b) (either order) where a and b are ONNX
/// MatMuls of one X, each read by the Mul alone and no graph output, without a residual, their
/// weights (through Identity nodes) K x F of known and equal shape, and
///  - at most one of them carries a fused activation (porta_activation): it is the gate, and
///    its activation the op's `activation`; with none, the first in node order gates (a
///    bilinear layer, activation "");
///  - their fused biases (porta_bias) become Bg and Bu;
///  - X, the weights and the biases have one dtype, f32 or f16;
///  - `device`'s kernel of GatedLinear takes the call at the plan's shapes (native_for_shapes:
///    vulkan's declines products of at most 8 rows, whose "rows" MatMuls are faster).
/// The op takes the Mul's place and writes its output. Shapes are those of Value::shape_known
/// (sessions run it per plan on an annotated graph). Returns `graph` itself when nothing
/// matches; sessions keeping every value pass `enabled` = false; PORTA_FUSE=0 turns it off.
std::shared_ptr<const Graph> fuse_gated_linear(const std::shared_ptr<const Graph>& graph, Device device, bool enabled);
/// Whether `graph` has a gated linear unit as fuse_gated_linear matches it, for a device that
/// runs the op natively, without the shapes.
bool gated_linear_candidates(const Graph& graph, Device device);

/// Transposes of rows moved across row-wise products (runtime/transpose_sinking.cpp): MatMul
/// with a 2-D weight, Gemm with transA = 0 and a bias row. A Transpose feeding such a product
/// whose output only data-movement nodes read moves after it; one reached from the product's
/// output through Reshapes that keep the last axis moves onto A when A comes from a Transpose.
/// Either way it joins a chain of copies that runs as one strided copy. Needs known shapes;
/// only where `device` runs StridedCopy natively.
std::shared_ptr<const Graph> move_row_transposes(const std::shared_ptr<const Graph>& graph, Device device,
                                                 bool enabled);
/// Whether `graph` has a Transpose move_row_transposes could move (a cheap pre-check).
bool row_transpose_candidates(const Graph& graph);

/// Rewrites scaled dot-product attention written as its pieces (runtime/attention_fusion.cpp)
/// into one ScaledDotProductAttention (ai.porta): Y = MatMul(Softmax(S [+ Mask]), V) with
/// S = [scalings of] MatMul(A, B), A = [a scaling of] Q, B = [a scaling of] K^T (or the Einsum
/// forms "<lead>id,<lead>jd-><lead>ij" of Q and K and "<lead>ij,<lead>jd-><lead>id" of P and V),
/// where
///  - a scaling is Mul by, or Div by, a finite constant scalar (either side of a Mul) that keeps
///    its operand's shape; their product is the fused op's `scale`;
///  - K^T is Transpose(X, perm): K becomes one Transpose of X (perm with its last two entries
///    swapped; none when that is the identity); any other B gets a Transpose of its last two axes;
///  - Softmax is over the last axis; S, the Add's output, P = Softmax(.) and every scaled or
///    transposed intermediate are read by the next node of the pattern alone and no graph output;
///  - Q [.., Sq, D], K^T [.., D, Skv], V [.., Skv, Dv] have one rank (2 or more) and the same
///    leading axes (no broadcasting between them), one float dtype, and the Mask (either operand
///    of the Add) broadcasts to [.., Sq, Skv] without changing S's shape (past rank 4, varying
///    along the last three axes only);
///  - `device` runs ScaledDotProductAttention natively for that dtype.
/// Windowed attention's second mask goes in too: scores (after the first mask) reshaped from
/// [B * nW, rest] to [B, nW, rest], a mask broadcast to that added, reshaped back (torchvision's
/// swin exports its shifted windows so); the op's mask becomes Reshape(Expand(first + window
/// mask, [B, nW, 1, ..]), [B * nW, ..]), computed once per plan when both are constants.
/// An inference Dropout or Identity between the Softmax and the last product goes too. Operands
/// of another rank than 4 are reshaped (views) to [B, H, S, D] — rank 2 and 3 get leading axes
/// of 1, past 4 the axes before the last three merge into B — and the result back. The fused
/// nodes take the last product's place and write its output. The scores' roundings
/// differ (the scale is applied once, to the product), as between any two attention kernels.
/// Shapes are those of Value::shape_known (sessions run it per plan on an annotated graph).
/// Returns `graph` itself when nothing matches; sessions keeping every value pass `enabled` =
/// false; PORTA_FUSE=0 turns it off.
std::shared_ptr<const Graph> fuse_attention(const std::shared_ptr<const Graph>& graph, Device device, bool enabled);
/// Whether `graph` has a Softmax whose output a MatMul or Einsum reads as its first operand: the
/// structural part of fuse_attention's test, without shapes.
bool attention_candidates(const Graph& graph);

/// Fuses the Add of a constant row into the MatMul before it, as the MatMul's porta-internal
/// input 2 `porta_bias` (ops/matmul.cpp: a Linear layer's bias added to every row), when
///  - the MatMul (ONNX domain, 2 inputs) writes y, read by that Add alone and no graph output;
///  - the Add's other operand is a constant (an initializer or a Constant node) of shape [N],
///    N the last axis of B (a constant, or a value whose shape load-time inference knows, of
///    rank 2 or more), in B's float dtype: the broadcast then keeps y's shape, in either order;
///  - every kernel that may run the MatMul on `device` for that dtype declares "porta_bias" in
///    KernelDef::fused_activations (the cpu's kernels too).
/// The fused MatMul takes the Add's place in the node order and writes the Add's output.
/// Returns `graph` itself when nothing fuses; sessions keeping every value pass `enabled` =
/// false; PORTA_FUSE=0 turns it off.
std::shared_ptr<const Graph> fuse_matmul_bias(const std::shared_ptr<const Graph>& graph, Device device, bool enabled);

/// Fuses the activation that directly follows a node whose op has the attributes
/// `porta_activation`, `porta_activation_alpha` and `porta_activation_beta` (Conv,
/// BatchNormalization, MatMul, Gemm) into that node, by setting them (names and meaning in
/// ops/fused_activation.hpp), when every kernel that may run the node on `device` for its
/// dtype declares that activation name
/// (KernelDef::fused_activations; the cpu's kernels too, as they take calls the device's
/// decline). The node must have one output y that is not a graph output, and y must be read by
///  - one node alone: Relu, Sigmoid, Tanh, HardSwish, LeakyRelu (alpha), Elu (alpha) or
///    HardSigmoid (alpha, beta) of y alone (their attributes, ONNX's defaults when absent),
///    Gelu of y alone -> "Gelu" (approximate "none") or "GeluTanh" ("tanh"), or
///    Clip(y, min?, max?) whose present bounds are constant scalars (initializers or Constant
///    nodes; not NaN) -> "Clip" with alpha = min, beta = max (-inf / +inf when absent). Clip's
///    bounds are inputs since opset 11; porta imports opset 13's Clip and refuses an older
///    model whose Clip carries them as attributes (runtime/onnx_import.cpp), so those never
///    reach this pass;
///  - or exactly Sigmoid(y) and Mul(y, s) / Mul(s, y), where s is that Sigmoid's output, read by
///    the Mul alone and not a graph output -> "Swish" (SiLU); the same with HardSigmoid(y) of
///    alpha 1/6 (to 1e-7) and beta 0.5 -> "HardSwish" (PyTorch's hardswish below opset 14).
/// The activation's nodes disappear (and a Constant node that only fed a fused Clip's bounds);
/// the producer (keeping its name) produces the last one's output. Sessions that keep every
/// intermediate value (`keep_values`) pass `enabled` = false. Returns `graph` itself when
/// nothing fuses. PORTA_FUSE=0 turns fusion off.
std::shared_ptr<const Graph> fuse_activations(const std::shared_ptr<const Graph>& graph, Device device, bool enabled);

/// Rewrites PyTorch's export of GELU at opsets 13-17 (Div(x, sqrt 2) or Mul(x, 1/sqrt 2), Erf,
/// Add 1, and x * . * 0.5 in any association; runtime/gelu_fusion.cpp) into one Gelu node
/// (approximate "none"), and its tanh approximation (Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)),
/// x^3 = Pow(x, 3) or x * (x * x), constants on either side, then the same Add 1 and products:
/// nn.GELU(approximate="tanh")'s export and GPT-2's hand-written form) into a Gelu with
/// approximate "tanh", when `device` runs Gelu natively for x's dtype. Constants match to a
/// relative 1e-6 (float32 storage of sqrt 2); every intermediate value must be read by the next
/// node of the pattern alone and be no graph output, so nothing else sees it disappear. The
/// Gelu takes the Erf (Tanh) node's name with "Erf" ("Tanh") turned into "Gelu". Sessions that keep every
/// value pass `enabled` = false. Returns `graph` itself when nothing matches. PORTA_FUSE=0
/// turns it off.
std::shared_ptr<const Graph> fuse_gelu(const std::shared_ptr<const Graph>& graph, Device device, bool enabled);

/// Rewrites normalizations written out as elementwise ops and reductions
/// (runtime/layer_norm_fusion.cpp):
///  - PyTorch's export of nn.LayerNorm at opsets 13-16:
///      mean = ReduceMean(x), d = Sub(x, mean), var = ReduceMean(Pow(d, 2)),
///      y = Div(d, Sqrt(Add(var, eps))) * gamma + beta
///    into one LayerNormalization(x, gamma, beta; axis -1, epsilon eps);
///  - RMSNorm (LLaMA's, T5's; no ONNX op): y = x * r * w with r = Div(1, s) (torch.rsqrt's
///    export) or Reciprocal(s), or y = Div(x, s) * w, s = Sqrt(Add(ReduceMean(Pow(x, 2) or
///    Mul(x, x)), eps)), into one RmsNorm(x, w; epsilon eps) (ai.porta);
/// where the ReduceMeans run over the last axis alone with keepdims (an attribute or a constant
/// axes input); eps is a constant scalar >= 0 on either side of its Add; gamma, beta and w are
/// 1-D constants of the last axis' length in x's float dtype (read through Identity nodes), on
/// either side of their Mul and Add; every intermediate is read by the next node of the pattern
/// alone (d by the Pow and the Div) and is no graph output; and `device` runs the op natively
/// for x's dtype. x's rank comes from Value::shape_known (sessions run it per plan on an
/// annotated graph). The op takes the last node's place and name. Returns `graph` itself when
/// nothing matches; sessions keeping every value pass `enabled` = false; PORTA_FUSE=0 turns it
/// off.
std::shared_ptr<const Graph> fuse_norms(const std::shared_ptr<const Graph>& graph, Device device, bool enabled);
/// Whether `graph` has a ReduceMean that a Sub of its own input reads, or that averages a Pow or
/// a square: the structural part of fuse_norms' test.
bool norm_candidates(const Graph& graph);

/// Rewrites an RmsNorm (ai.porta) read by ONNX MatMuls (as their A; one packed q/k/v
/// projection or several) and GatedLinears (as their X) alone into one RmsNormMatMul (ai.porta,
/// ops/rms_norm_matmul.cpp; runtime/rms_norm_matmul_fusion.cpp) of the norm's X per MatMul and a
/// GatedLinear of the norm's X with `rms_epsilon` set (its Wg and Wu folded alike) per
/// GatedLinear, the norm gone: the norm's
/// output no graph output; its Scale and every MatMul's B constants (through Identity nodes), B
/// 2-D with Scale's length rows, each op's W being B with row k multiplied by Scale[k] (a new
/// constant, rounded once from float64); a MatMul's fused bias (porta_bias) its op's B, nothing
/// else fused into any (no activation, no residual); X, the constants and the biases of one
/// dtype, f32 or f16; and `device`'s kernel of RmsNormMatMul takes every call at the plan's
/// shapes (native_for_shapes: vulkan's declines products of at most 8 rows, whose "rows"
/// MatMuls are faster). Each op takes its MatMul's place and writes its output. Returns
/// `graph` itself when nothing matches; sessions keeping every value pass `enabled` = false;
/// PORTA_FUSE=0 turns it off.
std::shared_ptr<const Graph> fuse_rms_norm_matmul(const std::shared_ptr<const Graph>& graph, Device device,
                                                  bool enabled);
/// Whether `graph` may hold such a pair (an RmsNorm node, or an RMSNorm written out that
/// fuse_norms makes one, and a MatMul) for a device that runs RmsNormMatMul natively.
bool rms_norm_matmul_candidates(const Graph& graph, Device device);

/// A BatchNormalization in inference mode (constant parameters, its activation fused) read by
/// pointwise Convs alone (1x1, stride 1, no padding, group 1, no fused residual) becomes one
/// PreActConv (ai.porta, ops/pre_act_conv.cpp; runtime/pre_act_conv_fusion.cpp) per Conv, of
/// the normalization's X with its per-channel scale and shift folded, where `device`'s kernel
/// takes every one at the plan's shapes (native_for_shapes: vulkan's takes channels of a
/// multiple of 4 on CPU-like devices). DenseNet's layers and pre-activation ResNets.
std::shared_ptr<const Graph> fuse_pre_act_conv(const std::shared_ptr<const Graph>& graph, Device device, bool enabled);
/// Whether `graph` has such a normalization that `device` may fuse.
bool pre_act_conv_candidates(const Graph& graph, Device device);

/// Rewrites rotary position embeddings written out (runtime/rotary_fusion.cpp), as LLaMA-style
/// code writes them: y = Add(Mul(x, cos), Mul(Concat(Neg(x[..., D/2:]), x[..., :D/2]), sin))
/// (Slices of the last axis, step 1, with constant bounds; the Concat over the last axis; either
/// order in the Muls and the Add; every intermediate read by the next node alone and no graph
/// output), x [B, H, S, D] of a float dtype with D even, cos and sin [S, D] in x's dtype whose
/// two halves are equal in every row, each a constant or rows 0.. of a constant [P, D] (cos[:n]),
/// into RotaryEmbedding(x, cos', sin') (ai.porta, interleaved 0) with the tables' first halves
/// as new constants (taken by a Slice with the original's bounds), when `device` runs
/// RotaryEmbedding natively for x's dtype. Shapes are Value::shape_known (per plan, annotated).
/// The op takes the Add's place and name. Returns `graph` itself when nothing matches; sessions
/// keeping every value pass `enabled` = false; PORTA_FUSE=0 turns it off.
std::shared_ptr<const Graph> fuse_rotary(const std::shared_ptr<const Graph>& graph, Device device, bool enabled);
/// Whether `graph` has a Concat whose first input is a Neg's: the structural part of fuse_rotary's
/// test.
bool rotary_candidates(const Graph& graph);

/// Rewrites groups of elementwise nodes into one ElementwiseChain (ai.porta;
/// ops/elementwise_chain.hpp, runtime/elementwise_fusion.cpp): one pass over the data and one
/// dispatch instead of one per node. Steps are the ONNX ops chain::find_op_info lists (Add, Sub,
/// Mul, Div, Pow, two-input Max and Min, PRelu, and the one-operand float ops, Clip with constant
/// bounds) on a float output the plan does not fold. A step's output joins its readers' group when
/// it is no graph output and every node reading it is a step. A group becomes a chain when
///  - exactly one of its values leaves it (a graph output, or read by a node outside), the last
///    node's; every other value is read inside it alone;
///  - it has at least 2 nodes and 1 tensor input, and at most the "steps", "inputs" and "floats"
///    (immediates and the steps' attribute values) that the device's ElementwiseChain kernels
///    declare (KernelDef::limits; a group stops growing where it would pass the first two);
///    its inputs have the output's dtype and broadcast to its shape (Value::shape_known:
///    sessions run it per plan on an annotated graph); scalar constants that do not widen
///    their node's output become immediates;
///  - `device` runs ElementwiseChain natively for that dtype.
/// The chain takes the last node's place and name and writes its output; a kernel that declines a
/// call leaves it to the op's decomposition, the original nodes. Returns `graph` itself when
/// nothing fuses; sessions keeping every value pass `enabled` = false; PORTA_FUSE=0 turns it off.
std::shared_ptr<const Graph> fuse_elementwise_chains(const std::shared_ptr<const Graph>& graph, Device device,
                                                     bool enabled);
/// Whether `graph` has a step whose output only steps read, on a device that runs
/// ElementwiseChain: the structural part of fuse_elementwise_chains' test, without shapes.
bool elementwise_chain_candidates(const Graph& graph, Device device);

}  // namespace porta::detail
