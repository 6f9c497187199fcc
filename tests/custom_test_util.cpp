#include "tests/custom_test_util.hpp"

#include <cstdlib>

namespace porta::test {

DisabledKernels::DisabledKernels(const std::string& list) {
  if (const char* e = std::getenv("PORTA_DISABLE_KERNELS")) {
    had_ = true;
    previous_ = e;
  }
  setenv("PORTA_DISABLE_KERNELS", list.c_str(), 1);
  detail::reload_disabled_kernels();
}

DisabledKernels::~DisabledKernels() {
  if (had_) setenv("PORTA_DISABLE_KERNELS", previous_.c_str(), 1);
  else unsetenv("PORTA_DISABLE_KERNELS");
  detail::reload_disabled_kernels();
}

std::string kernel_key(Device device, const std::string& op) {
  return str(device_type_name(device.type), ":", op);
}

Model single_node_model(const std::string& op_name, const std::vector<Tensor>& inputs, const Attributes& attrs) {
  auto g = std::make_shared<Graph>();
  Node n;
  n.name = op_name + "_node";
  n.op = find_op(op_name);
  if (!n.op) throw InvalidArgument(str("[test] unknown op ", op_name));
  n.attrs = complete_attributes(*n.op, attrs, "");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      n.inputs.push_back(-1);
      continue;
    }
    std::string name = str("in", i);
    int v = g->add_value(name);
    g->values[v].dtype = inputs[i].dtype();
    g->values[v].shape = inputs[i].shape();
    g->values[v].shape_known = true;
    g->inputs.push_back(v);
    g->input_descs.push_back({name, inputs[i].dtype(), inputs[i].shape(), {}});
    n.inputs.push_back(v);
  }
  std::vector<DType> out_dtypes;
  std::vector<Tensor> ref = reference_op(op_name, inputs, attrs, 1, &out_dtypes);
  int out = g->add_value("out");
  g->values[out].dtype = out_dtypes.at(0);
  n.outputs = {out};
  g->outputs = {out};
  g->output_descs.push_back({"out", out_dtypes.at(0), ref.at(0).shape(), {}});
  g->nodes.push_back(std::move(n));
  return Model(std::shared_ptr<const Graph>(std::move(g)));
}

std::map<std::string, Tensor> single_node_inputs(const std::vector<Tensor>& inputs) {
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined()) out[str("in", i)] = inputs[i];
  return out;
}

}  // namespace porta::test
