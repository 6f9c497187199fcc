// Einsum (opset 12+): a sum of products over subscripted axes, e.g. "bhqd,bhkd->bhqk".
// The equation has one term per input (letters a-z, A-Z; "..." stands for the same leading or
// broadcast axes in every term), then optionally "->" and the output's letters; without "->"
// the output is the letters used exactly once, in alphabetical order, after the "..." axes.
//
// It runs as a decomposition into standard ops on any device, as a contraction path:
// letters that occur in one operand only and not in the output are summed away first
// (ReduceSum); then the operands are contracted left to right, each pair by one batched
// MatMul (Transpose to [batch..., kept, summed] x [batch..., summed, kept], Reshape), batch
// axes broadcasting numpy-style; a last Transpose puts the output's order. A letter repeated
// inside one term (a diagonal, "ii->i") is taken first: the term is multiplied by an identity
// mask over the two axes and summed over the second.
#include <algorithm>
#include <map>
#include <set>

#include "ops/common.hpp"
#include "ops/reference_util.hpp"

namespace porta::opdef {
namespace {

// One parsed equation: a label string per input and for the output. Ellipsis axes become the
// labels '0', '1', ... (outermost first), so the rest of the code sees only single labels.
struct Equation {
  std::vector<std::string> inputs;
  std::string output;
};

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

Equation parse(const std::string& text, const std::vector<Shape>& shapes) {
  std::string eq;
  for (char c : text)
    if (c != ' ') eq.push_back(c);
  auto bad = [&](const std::string& why) { return ShapeError(str("[Einsum] equation '", text, "': ", why)); };
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != shapes.size())
    throw bad(str("expected one term per input (", shapes.size(), " inputs), got ", terms.size()));
  // Ellipsis rank: the largest number of axes "..." covers in any term.
  size_t ellipsis_rank = 0;
  std::vector<int> covered(terms.size(), -1);
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string& t = terms[i];
    size_t dots = t.find("...");
    size_t letters = 0;
    for (size_t j = 0; j < t.size(); ++j) {
      if (dots != std::string::npos && j >= dots && j < dots + 3) continue;
      if (!is_letter(t[j])) throw bad(str("unexpected character '", t[j], "' in term ", i));
      ++letters;
    }
    if (dots != std::string::npos && t.find("...", dots + 1) != std::string::npos)
      throw bad(str("more than one '...' in term ", i));
    int64_t rank = static_cast<int64_t>(shapes[i].size());
    if (dots == std::string::npos) {
      if (static_cast<int64_t>(letters) != rank)
        throw bad(str("term ", i, " '", t, "' has ", letters, " subscripts for an input of rank ", rank));
    } else {
      if (static_cast<int64_t>(letters) > rank)
        throw bad(str("term ", i, " '", t, "' has ", letters, " subscripts for an input of rank ", rank));
      covered[i] = static_cast<int>(rank - static_cast<int64_t>(letters));
      ellipsis_rank = std::max(ellipsis_rank, static_cast<size_t>(covered[i]));
    }
  }
  if (ellipsis_rank > 10) throw bad("'...' covers more than 10 axes");
  auto expand = [&](const std::string& t, int n) {
    std::string out;
    size_t dots = t.find("...");
    if (dots == std::string::npos) return t;
    out = t.substr(0, dots);
    for (int k = 0; k < n; ++k) out.push_back(static_cast<char>('0' + (static_cast<int>(ellipsis_rank) - n + k)));
    return out + t.substr(dots + 3);
  };
  Equation e;
  for (size_t i = 0; i < terms.size(); ++i) e.inputs.push_back(expand(terms[i], covered[i]));
  if (arrow != std::string::npos) {
    std::string rhs = eq.substr(arrow + 2);
    size_t dots = rhs.find("...");
    for (size_t j = 0; j < rhs.size(); ++j) {
      if (dots != std::string::npos && j >= dots && j < dots + 3) continue;
      if (!is_letter(rhs[j])) throw bad(str("unexpected character '", rhs[j], "' in the output"));
      if (rhs.find(rhs[j]) != j) throw bad(str("output subscript '", rhs[j], "' repeated"));
      if (lhs.find(rhs[j]) == std::string::npos)
        throw bad(str("output subscript '", rhs[j], "' is in no input term"));
    }
    if (dots == std::string::npos && ellipsis_rank > 0) {
      bool any = false;
      for (int c : covered) any = any || c > 0;
      if (any) throw bad("inputs use '...' but the output does not");
    }
    e.output = expand(rhs, static_cast<int>(ellipsis_rank));
  } else {
    std::map<char, int> count;
    for (const std::string& t : e.inputs)
      for (char c : t) count[c]++;
    for (size_t k = 0; k < ellipsis_rank; ++k) e.output.push_back(static_cast<char>('0' + k));
    for (auto [c, n] : count)
      if (n == 1 && is_letter(c)) e.output.push_back(c);
  }
  return e;
}

// The size of every label, with broadcasting of size-1 axes (numpy's einsum allows it for
// the ellipsis axes; it is allowed for letters too, as PyTorch does).
std::map<char, int64_t> label_sizes(const Equation& e, const std::vector<Shape>& shapes, const std::string& text) {
  std::map<char, int64_t> size;
  for (size_t i = 0; i < e.inputs.size(); ++i)
    for (size_t j = 0; j < e.inputs[i].size(); ++j) {
      size_t first = e.inputs[i].find(e.inputs[i][j]);
      if (first != j && shapes[i][first] != shapes[i][j])  // a diagonal needs a square
        throw ShapeError(str("[Einsum] equation '", text, "': subscript '", e.inputs[i][j], "' repeated in term ", i,
                             " has sizes ", shapes[i][first], " and ", shapes[i][j], " (input ", shape_str(shapes[i]),
                             ")"));
      char c = e.inputs[i][j];
      int64_t d = shapes[i][j];
      auto it = size.find(c);
      if (it == size.end() || it->second == 1) size[c] = d;
      else if (d != 1 && d != it->second)
        throw ShapeError(str("[Einsum] equation '", text, "': subscript '", c, "' has size ", it->second,
                             " and ", d, " (inputs ", shape_str(shapes[0]), i > 0 ? str(", ", shape_str(shapes[i])) : "",
                             ")"));
    }
  return size;
}

Shape output_shape(const Equation& e, const std::map<char, int64_t>& size) {
  Shape out;
  for (char c : e.output) out.push_back(size.at(c));
  return out;
}

ValueId i64_constant(GraphBuilder& b, const std::vector<int64_t>& values) {
  Tensor t = Tensor::empty({static_cast<int64_t>(values.size())}, DType::i64);
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return b.constant(t);
}

// A value with its labels, one per axis.
struct Term {
  ValueId v;
  std::string labels;
};

Term transpose_to(GraphBuilder& b, Term t, const std::string& order) {
  if (order == t.labels) return t;
  std::vector<int64_t> perm;
  for (char c : order) perm.push_back(static_cast<int64_t>(t.labels.find(c)));
  return {b.add1("Transpose", {t.v}, {{"perm", perm}}), order};
}

Term sum_away(GraphBuilder& b, Term t, const std::string& drop) {
  if (drop.empty()) return t;
  std::vector<int64_t> axes;
  std::string kept;
  for (size_t j = 0; j < t.labels.size(); ++j) {
    if (drop.find(t.labels[j]) != std::string::npos) axes.push_back(static_cast<int64_t>(j));
    else kept.push_back(t.labels[j]);
  }
  return {b.add1("ReduceSum", {t.v, i64_constant(b, axes)}, {{"keepdims", int64_t{0}}}), kept};
}

// A label repeated inside one term: keep the diagonal of the two axes (mask with the
// identity, sum the second away), until every label of the term is unique.
Term take_diagonals(GraphBuilder& b, Term t) {
  for (;;) {
    size_t first = std::string::npos, second = std::string::npos;
    for (size_t j = 0; j < t.labels.size() && second == std::string::npos; ++j)
      if (size_t k = t.labels.find(t.labels[j], j + 1); k != std::string::npos) first = j, second = k;
    if (second == std::string::npos) return t;
    const Shape& shape = b.shape(t.v);
    int64_t n = shape[first];
    if (shape[second] != n)
      throw ShapeError(str("[Einsum] subscript '", t.labels[first], "' repeated in one term has sizes ", n, " and ",
                           shape[second]));
    Shape mask_shape(shape.size(), 1);
    mask_shape[first] = mask_shape[second] = n;
    std::vector<double> eye(static_cast<size_t>(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i) eye[static_cast<size_t>(i * n + i)] = 1.0;
    ValueId mask = b.constant(Tensor::from_values(eye, mask_shape, b.dtype(t.v)));
    ValueId masked = b.add1("Mul", {t.v, mask});
    std::string labels = t.labels;
    labels.erase(second, 1);
    t = {b.add1("ReduceSum", {masked, i64_constant(b, {static_cast<int64_t>(second)})}, {{"keepdims", int64_t{0}}}),
         labels};
  }
}

Term sum_keep(GraphBuilder& b, Term t, char label) {
  std::vector<int64_t> axis{static_cast<int64_t>(t.labels.find(label))};
  return {b.add1("ReduceSum", {t.v, i64_constant(b, axis)}, {{"keepdims", int64_t{1}}}), t.labels};
}

std::vector<ValueId> einsum_composite(GraphBuilder& b, std::span<const ValueId> in, const Attributes& a) {
  std::string text = a.get_string("equation");
  std::vector<Shape> shapes;
  for (ValueId v : in) shapes.push_back(b.shape(v));
  Equation e = parse(text, shapes);
  std::map<char, int64_t> size = label_sizes(e, shapes, text);
  // Labels still needed after operand i: in the output or in a later operand.
  auto needed_after = [&](size_t i) {
    std::set<char> keep(e.output.begin(), e.output.end());
    for (size_t k = i + 1; k < e.inputs.size(); ++k) keep.insert(e.inputs[k].begin(), e.inputs[k].end());
    return keep;
  };
  std::vector<Term> terms;
  for (size_t i = 0; i < in.size(); ++i) terms.push_back(take_diagonals(b, {in[i], e.inputs[i]}));
  for (size_t i = 0; i < in.size(); ++i) e.inputs[i] = terms[i].labels;
  // Sum away what no other operand and not the output uses.
  for (size_t i = 0; i < terms.size(); ++i) {
    std::string drop;
    for (char c : terms[i].labels) {
      bool elsewhere = e.output.find(c) != std::string::npos;
      for (size_t k = 0; k < terms.size(); ++k)
        if (k != i && e.inputs[k].find(c) != std::string::npos) elsewhere = true;
      if (!elsewhere) drop.push_back(c);
    }
    terms[i] = sum_away(b, terms[i], drop);
  }
  Term acc = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) {
    Term y = terms[i];
    std::set<char> keep = needed_after(i);
    std::string batch, x_only, y_only, summed;
    for (char c : acc.labels) {
      bool in_y = y.labels.find(c) != std::string::npos;
      if (in_y && keep.count(c)) batch.push_back(c);
      else if (in_y) summed.push_back(c);
      else x_only.push_back(c);
    }
    for (char c : y.labels)
      if (acc.labels.find(c) == std::string::npos) y_only.push_back(c);
    // A summed letter of size 1 on one side broadcasts: sum(x[0] y[k]) = x[0] sum(y[k]), so the
    // other side is summed over it first (kept as a size-1 axis).
    for (char c : summed) {
      int64_t sx = b.shape(acc.v)[acc.labels.find(c)], sy = b.shape(y.v)[y.labels.find(c)];
      if (sx == 1 && sy != 1) y = sum_keep(b, y, c);
      if (sy == 1 && sx != 1) acc = sum_keep(b, acc, c);
    }
    Term xt = transpose_to(b, acc, batch + x_only + summed);
    Term yt = transpose_to(b, y, batch + summed + y_only);
    // [batch..., M, K] x [batch..., K, N]: batch axes kept apart so MatMul broadcasts them.
    auto dims = [&](const Term& t, size_t from, size_t count) {
      int64_t n = 1;
      for (size_t j = from; j < from + count; ++j) n *= b.shape(t.v)[j];
      return n;
    };
    std::vector<int64_t> xs, ys;
    for (size_t j = 0; j < batch.size(); ++j) {
      xs.push_back(b.shape(xt.v)[j]);
      ys.push_back(b.shape(yt.v)[j]);
    }
    xs.push_back(dims(xt, batch.size(), x_only.size()));
    xs.push_back(dims(xt, batch.size() + x_only.size(), summed.size()));
    ys.push_back(dims(yt, batch.size(), summed.size()));
    ys.push_back(dims(yt, batch.size() + summed.size(), y_only.size()));
    Attributes exact{{"allowzero", int64_t{1}}};  // a 0 is a size here, not "copy this axis"
    ValueId xm = b.add1("Reshape", {xt.v, i64_constant(b, xs)}, exact);
    ValueId ym = b.add1("Reshape", {yt.v, i64_constant(b, ys)}, exact);
    ValueId prod = b.add1("MatMul", {xm, ym});
    std::vector<int64_t> out_dims;
    const Shape& ps = b.shape(prod);
    for (size_t j = 0; j < batch.size(); ++j) out_dims.push_back(ps[j]);
    for (char c : x_only) out_dims.push_back(size.at(c));
    for (char c : y_only) out_dims.push_back(size.at(c));
    acc = {b.add1("Reshape", {prod, i64_constant(b, out_dims)}, exact), batch + x_only + y_only};
  }
  // Whatever the output does not name is summed (a single operand: "ij->i"), then ordered.
  std::string drop;
  for (char c : acc.labels)
    if (e.output.find(c) == std::string::npos) drop.push_back(c);
  acc = sum_away(b, acc, drop);
  acc = transpose_to(b, acc, e.output);
  // Broadcast size-1 axes of the result up to the output's sizes (a label of size 1 in every
  // operand that used it stays 1; one broadcast against another operand was handled by MatMul).
  Shape want = output_shape(e, size);
  if (b.shape(acc.v) != want) acc.v = b.add1("Expand", {acc.v, i64_constant(b, want)});
  return {acc.v};
}

}  // namespace

PORTA_REGISTER_OP(Einsum) {
  OpSchema s;
  s.name = "Einsum";
  s.inputs = {"Inputs..."};
  s.outputs = {"Output"};
  s.attrs = {attr_string("equation", "")};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kFloats);  // the contraction runs on MatMul
    require_same_dtype(ctx);
    std::vector<Shape> shapes;
    for (size_t i = 0; i < ctx.inputs.size(); ++i) shapes.push_back(ctx.shape(i));
    std::string text = ctx.attrs->get_string("equation");
    Equation e = parse(text, shapes);
    ctx.set_output(0, output_shape(e, label_sizes(e, shapes, text)), ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    std::vector<Shape> shapes;
    for (const Tensor& t : ctx.inputs) shapes.push_back(t.shape());
    std::string text = ctx.attrs->get_string("equation");
    Equation e = parse(text, shapes);
    std::map<char, int64_t> size = label_sizes(e, shapes, text);
    std::string all;
    for (auto [c, n] : size) all.push_back(c);
    Shape loop;
    for (char c : all) loop.push_back(size.at(c));
    double* out = ctx.out(0).data<double>();
    const Shape& out_shape = ctx.out(0).shape();
    std::vector<int64_t> oi(e.output.size());
    for_each_index(loop, [&](const std::vector<int64_t>& idx) {
      double prod = 1;
      for (size_t i = 0; i < ctx.inputs.size(); ++i) {
        std::vector<int64_t> ii(e.inputs[i].size());
        for (size_t j = 0; j < ii.size(); ++j)
          ii[j] = shapes[i][j] == 1 ? 0 : idx[all.find(e.inputs[i][j])];
        prod *= ctx.in(i).data<double>()[linear_offset(shapes[i], ii)];
      }
      for (size_t j = 0; j < oi.size(); ++j) oi[j] = idx[all.find(e.output[j])];
      out[linear_offset(out_shape, oi)] += prod;
    });
  };
  s.composite = einsum_composite;
  s.cases = [] {
    auto eq = [](const char* text) { return Attributes{{"equation", std::string(text)}}; };
    std::vector<OpCase> c;
    c.push_back({"matmul", {in({5, 7}), in({7, 3})}, eq("ij,jk->ik"), kF32 | kF64});
    c.push_back({"attention_scores", {in({2, 3, 5, 4}), in({2, 3, 6, 4})}, eq("bhqd,bhkd->bhqk"), kF32 | kF64});
    c.push_back({"attention_values", {in({2, 3, 5, 6}), in({2, 3, 6, 4})}, eq("bhqk,bhkd->bhqd"), kF32});
    // maxvit's relative-position style and swin-like forms torch emits
    c.push_back({"implicit_output", {in({4, 5}), in({5, 6})}, eq("ij,jk"), kF32});
    c.push_back({"transpose", {in({3, 5, 7})}, eq("abc->cba"), kF32 | kF64});
    c.push_back({"sum_axis", {in({3, 5, 7})}, eq("abc->ac"), kF32});
    c.push_back({"trace_like_sum_all", {in({3, 5})}, eq("ij->"), kF32});
    c.push_back({"outer", {in({4}), in({6})}, eq("i,j->ij"), kF32 | kF64});
    c.push_back({"dot", {in({9}), in({9})}, eq("i,i->"), kF32});
    c.push_back({"three_operands", {in({3, 4}), in({4, 5}), in({5, 2})}, eq("ab,bc,cd->ad"), kF32 | kF64});
    c.push_back({"ellipsis_batch", {in({2, 3, 4, 5}), in({2, 3, 5, 6})}, eq("...ij,...jk->...ik"), kF32});
    c.push_back({"ellipsis_broadcast", {in({2, 1, 4, 5}), in({3, 5, 6})}, eq("...ij,...jk->...ik"), kF32});
    c.push_back({"bilinear", {in({4, 3}), in({5, 3, 6}), in({4, 6})}, eq("bi,kij,bj->bk"), kF32});
    c.push_back({"one_side_sum", {in({3, 4, 5}), in({5, 2})}, eq("abc,cd->ad"), kF32});
    c.push_back({"batch_kept_in_output", {in({4, 3}), in({4, 3})}, eq("bi,bi->b"), kF32});
    c.push_back({"empty", {in({0, 5}), in({5, 3})}, eq("ij,jk->ik"), kF32});
    c.push_back({"empty_summed", {in({4, 0}), in({0, 3})}, eq("ij,jk->ik"), kF32});
    c.push_back({"summed_broadcast", {in({4, 1}), in({5, 3})}, eq("ij,jk->ik"), kF32 | kF64});
    c.push_back({"summed_broadcast_left", {in({2, 4, 6}), in({2, 1, 3})}, eq("bij,bjk->bik"), kF32});
    c.push_back({"diagonal", {in({4, 4})}, eq("ii->i"), kF32 | kF64});
    c.push_back({"batch_diagonal_trace", {in({2, 3, 3}), in({2, 5})}, eq("bii,bj->bj"), kF32});
    c.push_back({"large", {in({64, 300}), in({300, 129})}, eq("ik,kj->ij"), kF32});
    return c;
  };
  // The direct sum touches every combination of the letters' values once per operand (the
  // contraction path does less; this is what the reference costs).
  s.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attributes& a) {
    try {
      std::string text = a.get_string("equation");
      Equation e = parse(text, in);
      double n = 1;
      for (auto [c, size] : label_sizes(e, in, text)) n *= static_cast<double>(size);
      return n * static_cast<double>(in.size());
    } catch (const Error&) {
      return 0.0;
    }
  };
  return s;
}

}  // namespace porta::opdef
