#include "tests/vulkan_shared_test.hpp"

#include "runtime/eager.hpp"

namespace porta::test {

std::vector<Tensor> to_vk(const std::vector<Tensor>& host) {
  std::vector<Tensor> dev;
  for (const Tensor& t : host) dev.push_back(t.defined() ? t.to(kVk) : Tensor());
  return dev;
}

Resolution resolve_vk(const char* op_name, const std::vector<Tensor>& inputs, const Attributes& attrs,
                      std::optional<DType> dtype) {
  const OpSchema* op = find_op(op_name);
  Attributes full = attrs;
  for (const AttrDef& a : op->attrs)
    if (!full.has(a.name) && a.default_value) full.set(a.name, *a.default_value);
  KernelContext call;
  call.op = op;
  call.device = kVk;
  call.backend = &backend_for(kVk);
  call.attrs = &full;
  call.inputs = inputs;
  return resolve_call(call, dtype ? *dtype : inputs.at(0).dtype());
}

int check_cases(const std::vector<const char*>& names) {
  int checked = 0;
  for (const char* name : names) {
    const OpSchema* op = find_op(name);
    if (!op || !op->cases) continue;
    for (const OpCase& c : op->cases()) {
      if (c.perf || !dtype_in(c.dtypes, DType::f32)) continue;
      std::vector<Tensor> host;
      for (const InputSpec& s : c.inputs) host.push_back(s.absent ? Tensor() : make_input(s, DType::f32));
      std::vector<Tensor> ref;
      try {
        ref = reference_op(name, host, c.attrs, c.num_outputs);
      } catch (const Error&) {
        continue;  // error cases are checked by the conformance suite
      }
      std::vector<Tensor> got = call_op(name, to_vk(host), c.attrs, c.num_outputs);
      EXPECT_EQ(got.size(), ref.size()) << name << " " << c.name;
      for (size_t i = 0; i < got.size() && i < ref.size(); ++i) {
        if (!ref[i].defined()) continue;
        double tol = c.tolerance > 0 ? c.tolerance : default_tolerance(got[i].dtype());
        Comparison cmp = compare(got[i], ref[i], tol);
        EXPECT_TRUE(cmp.ok) << name << " " << c.name << " output " << i << ": " << cmp.message;
      }
      ++checked;
    }
  }
  return checked;
}

}  // namespace porta::test
