// porta_fuzz_ops — drawing random op calls from an op's own test cases (see draw.hpp).
#include "tools/fuzz_ops/draw.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "porta/util.hpp"

namespace porta::fuzz {
namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  double u() { return std::uniform_real_distribution<double>(0.0, 1.0)(g_); }
  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(g_); }
  int64_t range(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(g_); }
  uint64_t next() { return g_(); }

 private:
  std::mt19937_64 g_;
};

// ---- attributes ------------------------------------------------------------------------

// Every value an attribute takes in some case of the op; nullopt: some case leaves it out.
struct AttrOptions {
  std::string name;
  std::vector<std::optional<AttrValue>> values;
};

std::vector<AttrOptions> attribute_options(const std::vector<OpCase>& cases) {
  std::vector<AttrOptions> out;
  std::vector<std::vector<std::string>> keys;  // str() of each value, to deduplicate
  for (const OpCase& c : cases) {
    for (const auto& [name, value] : c.attrs.items()) {
      size_t k = 0;
      while (k < out.size() && out[k].name != name) ++k;
      if (k == out.size()) {
        out.push_back({name, {}});
        keys.emplace_back();
      }
      std::string key = Attributes{{name, value}}.str();
      if (std::find(keys[k].begin(), keys[k].end(), key) == keys[k].end()) {
        keys[k].push_back(key);
        out[k].values.emplace_back(value);
      }
    }
  }
  for (AttrOptions& o : out) {
    bool all_have = std::all_of(cases.begin(), cases.end(),
                                [&](const OpCase& c) { return c.attrs.has(o.name); });
    if (!all_have) o.values.emplace_back(std::nullopt);
  }
  return out;
}

Attributes mix_attributes(const OpCase& t, const std::vector<OpCase>& cases, Rng& rng,
                          std::string& note) {
  Attributes out = t.attrs;
  if (rng.u() >= 0.5) return out;  // half of the draws keep the template's attributes
  std::vector<AttrOptions> options = attribute_options(cases);
  // Decisions per attribute name, applied in one pass so the order stays the template's.
  std::map<std::string, std::optional<AttrValue>> changed;
  for (const AttrOptions& o : options) {
    if (o.values.size() < 2 || rng.u() >= 0.35) continue;
    changed[o.name] = o.values[rng.pick(o.values.size())];
  }
  if (changed.empty()) return out;
  Attributes mixed;
  for (const auto& [name, value] : t.attrs.items()) {
    auto it = changed.find(name);
    if (it == changed.end()) mixed.set(name, value);
    else if (it->second) mixed.set(name, *it->second);
  }
  for (const auto& [name, value] : changed)
    if (value && !t.attrs.has(name)) mixed.set(name, *value);
  if (mixed.str() != t.attrs.str()) note += str(note.empty() ? "" : "; ", "attrs mixed from other cases");
  return mixed;
}

// ---- shapes ----------------------------------------------------------------------------

int64_t new_size(int64_t v, Rng& rng) {
  double r = rng.u();
  if (r < 0.06) return 0;
  if (r < 0.16) return 1;
  if (r < 0.40) return rng.range(2, 9);
  if (r < 0.60) {
    const int64_t scaled[] = {v * 2, v * 3, std::max<int64_t>(1, v / 2), v + 1, std::max<int64_t>(1, v - 1),
                              2 * v + 1};
    return scaled[rng.pick(6)];
  }
  if (r < 0.85) return rng.range(10, 129);
  const int64_t large[] = {255, 257, 511, 1000, 1023, 1025, 2047, 4097, 4099};
  if (rng.u() < 0.5) return large[rng.pick(9)];
  return rng.range(130, 5000);
}

// Where each dim of each input takes its size from: a key into the size map. Keys are the
// template's dim values (so equal dims stay equal), 1 for a dim made a broadcast, or a
// negative key for a fresh size given to a former broadcast dim.
using Keys = std::vector<std::vector<int64_t>>;

std::vector<Shape> apply(const std::vector<InputSpec>& in, const Keys& keys,
                         const std::map<int64_t, int64_t>& size_of) {
  std::vector<Shape> out(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    out[i] = in[i].shape;
    for (size_t a = 0; a < keys[i].size(); ++a) {
      auto it = size_of.find(keys[i][a]);
      out[i][a] = it == size_of.end() ? keys[i][a] : it->second;
    }
  }
  return out;
}

bool fits(const std::vector<InputSpec>& in, const std::vector<Shape>& shapes, int64_t max_elements) {
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].absent) continue;
    double n = 1;
    for (int64_t d : shapes[i]) n *= static_cast<double>(d);
    if (n > static_cast<double>(max_elements)) return false;
  }
  return true;
}

void mutate_shapes(const OpSchema& op, std::vector<InputSpec>& in, Rng& rng, const DrawLimits& limits, std::string& note) {
  bool keep = rng.u() < 0.15;
  // Sizes that occur in a fixed-value input (shape tensors, axes, fixed data) stay as they are,
  // and so do the dims equal to them elsewhere.
  std::map<int64_t, int64_t> size_of;  // key -> new size; absent: unchanged
  std::vector<int64_t> frozen;
  for (const InputSpec& s : in)
    if (!s.absent && !s.values.empty())
      for (int64_t d : s.shape) frozen.push_back(d);
  auto is_frozen = [&](int64_t v) { return std::find(frozen.begin(), frozen.end(), v) != frozen.end(); };

  Keys keys(in.size());
  std::vector<int64_t> distinct;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].absent) continue;
    keys[i] = in[i].shape;
    for (int64_t d : in[i].shape)
      if (std::find(distinct.begin(), distinct.end(), d) == distinct.end()) distinct.push_back(d);
  }
  std::sort(distinct.begin(), distinct.end());
  std::vector<std::string> ties;
  for (int64_t v : distinct) {
    if (keep || v == 1 || is_frozen(v)) continue;
    if (v == 0) {
      if (rng.u() < 0.3) size_of[v] = rng.range(1, 5);
      continue;
    }
    // A size that is 2, 3, 4 or 8 times a smaller one that changed (LSTM's 4 x hidden,
    // RotaryEmbedding's D and D/2) keeps that ratio half of the time.
    std::vector<int64_t> bases;
    for (const auto& [b, nb] : size_of)
      if (b >= 2 && v % b == 0 && (v / b == 2 || v / b == 3 || v / b == 4 || v / b == 8)) bases.push_back(b);
    if (!bases.empty() && rng.u() < 0.5) {
      int64_t b = bases[rng.pick(bases.size())];
      size_of[v] = size_of[b] * (v / b);
      ties.push_back(str(v, "=", v / b, "x", b));
    } else if (rng.u() < 0.65) {
      size_of[v] = new_size(v, rng);
    }
  }
  // Broadcasts: with several random inputs, a dim may become 1 (broadcast), and a size-1 dim
  // may take the size of the dim it is aligned with (right-aligned) in another input.
  int random_inputs = 0;
  for (const InputSpec& s : in) random_inputs += !s.absent && s.values.empty();
  int64_t fresh_key = -1;
  std::vector<std::string> moves;
  if (random_inputs >= 2 && !keep) {
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i].absent || !in[i].values.empty()) continue;
      size_t r = in[i].shape.size();
      for (size_t a = 0; a < r; ++a) {
        int64_t v = in[i].shape[a];
        if (is_frozen(v)) continue;
        if (v > 1 && rng.u() < 0.04) {
          keys[i][a] = 1;
          moves.push_back(str("in", i, "[", a, "]->1"));
        } else if (v == 1 && rng.u() < 0.08) {
          std::optional<int64_t> aligned;
          for (size_t j = 0; j < in.size() && !aligned; ++j) {
            if (j == i || in[j].absent) continue;
            size_t rj = in[j].shape.size();
            size_t from_end = r - a;
            if (from_end <= rj && in[j].shape[rj - from_end] > 1) aligned = in[j].shape[rj - from_end];
          }
          if (aligned) {
            keys[i][a] = *aligned;
          } else {
            keys[i][a] = fresh_key;
            size_of[fresh_key--] = rng.range(2, 7);
          }
          moves.push_back(str("in", i, "[", a, "] 1->", aligned ? "aligned" : "fresh"));
        }
      }
    }
  }
  std::vector<Shape> shapes = apply(in, keys, size_of);
  // Too large (a mutation, or a benchmark-size template): halve the largest size that may
  // change until every input fits.
  for (int step = 0; step < 64 && !fits(in, shapes, limits.max_elements); ++step) {
    int64_t key = 0, size = 1;
    for (size_t i = 0; i < in.size(); ++i)
      for (size_t a = 0; a < keys[i].size(); ++a)
        if (shapes[i][a] > size && !is_frozen(keys[i][a])) key = keys[i][a], size = shapes[i][a];
    if (size <= 1) break;
    size_of[key] = size / 2;
    shapes = apply(in, keys, size_of);
  }
  if (!fits(in, shapes, limits.max_elements)) {
    note += str(note.empty() ? "" : "; ", "template shapes (mutation too large)");
    return;
  }
  // Random index inputs (named "indices" in the schema) whose range is the index range of a
  // dim that changed ([-v, v-1] or [0, v-1], e.g. Gather's) follow the dim's new size.
  for (size_t i = 0; i < in.size(); ++i) {
    InputSpec& s = in[i];
    if (s.absent || !s.values.empty() || !s.integers) continue;
    std::string name = i < op.inputs.size() ? op.inputs[i] : "";
    if (name.find("indices") == std::string::npos) continue;
    int64_t v = static_cast<int64_t>(s.hi) + 1;
    auto it = size_of.find(v);
    if (v < 1 || static_cast<double>(v) != s.hi + 1 || it == size_of.end() || it->second < 1) continue;
    if (s.lo != 0 && s.lo != -static_cast<double>(v)) continue;
    double lo = s.lo == -static_cast<double>(v) ? -static_cast<double>(it->second) : s.lo;
    double hi = static_cast<double>(it->second - 1);
    if (lo <= hi) s.lo = lo, s.hi = hi;
  }
  std::string changes;
  for (const auto& [k, v] : size_of)
    if (k >= 0 && k != v) changes += str(changes.empty() ? "" : ",", k, "->", v);
  for (size_t i = 0; i < in.size(); ++i) in[i].shape = shapes[i];
  std::string m = changes.empty() ? (keep ? "template shapes" : "no dim changed") : "dims " + changes;
  for (auto& mv : moves) m += " " + mv;
  if (!ties.empty()) {
    m += " (kept ratios";
    for (auto& t : ties) m += " " + t;
    m += ")";
  }
  note += str(note.empty() ? "" : "; ", m);
}

}  // namespace

uint64_t iteration_seed(uint64_t seed, const std::string& op, uint64_t iteration) {
  return splitmix(splitmix(seed) ^ splitmix(fnv1a(op) + iteration * 0x632BE59BD9B4E019ull));
}

Draw draw_call(const OpSchema& op, const std::vector<OpCase>& cases, uint64_t seed,
               uint64_t iteration, const DrawLimits& limits) {
  Rng rng(iteration_seed(seed, op.name, iteration));
  const OpCase& t = cases[rng.pick(cases.size())];
  Draw d;
  d.op = &op;
  d.case_name = t.name;
  d.inputs = t.inputs;
  d.num_outputs = t.num_outputs;
  d.tolerance = t.tolerance;
  std::vector<DType> dtypes;
  for (int k = 0; k < kNumDTypes; ++k)
    if (dtype_in(t.dtypes, static_cast<DType>(k))) dtypes.push_back(static_cast<DType>(k));
  d.dtype = dtypes.empty() ? DType::f32 : dtypes[rng.pick(dtypes.size())];
  d.attrs = mix_attributes(t, cases, rng, d.mutation);
  mutate_shapes(op, d.inputs, rng, limits, d.mutation);
  d.strided_first = !d.inputs.empty() && !d.inputs[0].absent && rng.u() < 0.1;
  d.data_seed = rng.next();
  return d;
}

std::string describe_inputs(const Draw& d) {
  std::string out;
  for (size_t i = 0; i < d.inputs.size(); ++i) {
    const InputSpec& s = d.inputs[i];
    out += i ? " " : "";
    if (s.absent) {
      out += "absent";
      continue;
    }
    out += shape_str(s.shape) + std::string(dtype_name(s.dtype.value_or(d.dtype)));
    if (!s.values.empty()) {
      out += "=[";
      for (size_t k = 0; k < s.values.size() && k < 8; ++k) out += str(k ? "," : "", s.values[k]);
      out += s.values.size() > 8 ? ",...]" : "]";
    }
    if (s.transposed) out += "(T)";
    if (i == 0 && d.strided_first) out += "(strided)";
  }
  return out;
}

}  // namespace porta::fuzz
