// porta runtime — C ABI: loading ONNX models and running them in sessions.
#include <cstddef>
#include <map>

#include "porta/porta.hpp"
#include "runtime/c_api_handles.hpp"

using namespace porta;
using namespace porta::capi;

namespace porta::capi {
porta_tensor wrap_tensor(Tensor t);
}

namespace {

porta_model new_model(Model m) {
  auto model = std::make_shared<Model>(std::move(m));
  porta_model h = make_handle<porta_model_s>();
  h->model = std::move(model);
  return h;
}

const ValueDesc& desc_at(const std::vector<ValueDesc>& list, size_t i, const char* fn, const char* what) {
  if (i >= list.size())
    bad_argument(str("[", fn, "] ", what, " index should be below ", list.size(), ", got ", i));
  return list[i];
}

}  // namespace

extern "C" {

porta_status porta_model_load(const char* path, porta_model* out) {
  PORTA_C_GUARD({
    need(path, "porta_model_load", "path");
    need(out, "porta_model_load", "out");
    *out = new_model(Model::load(path));
  })
}

porta_status porta_model_load_bytes(const void* data, size_t size, porta_model* out) {
  PORTA_C_GUARD({
    need(data, "porta_model_load_bytes", "data");
    need(out, "porta_model_load_bytes", "out");
    *out = new_model(Model::from_bytes(data, size));
  })
}

porta_status porta_model_num_inputs(porta_model model, size_t* count) {
  PORTA_C_GUARD({
    porta_model_s& m = get(model, "porta_model_num_inputs", "model");
    need(count, "porta_model_num_inputs", "count");
    *count = m.model->inputs().size();
  })
}

porta_status porta_model_num_outputs(porta_model model, size_t* count) {
  PORTA_C_GUARD({
    porta_model_s& m = get(model, "porta_model_num_outputs", "model");
    need(count, "porta_model_num_outputs", "count");
    *count = m.model->outputs().size();
  })
}

porta_status porta_model_input_name(porta_model model, size_t index, const char** name) {
  PORTA_C_GUARD({
    const char* fn = "porta_model_input_name";
    porta_model_s& m = get(model, fn, "model");
    need(name, fn, "name");
    *name = desc_at(m.model->inputs(), index, fn, "input").name.c_str();
  })
}

porta_status porta_model_output_name(porta_model model, size_t index, const char** name) {
  PORTA_C_GUARD({
    const char* fn = "porta_model_output_name";
    porta_model_s& m = get(model, fn, "model");
    need(name, fn, "name");
    *name = desc_at(m.model->outputs(), index, fn, "output").name.c_str();
  })
}

porta_status porta_model_free(porta_model model) {
  PORTA_C_GUARD({
    if (!model) return PORTA_OK;
    get(model, "porta_model_free", "model");
    destroy_handle(model);  // sessions keep their own reference to the graph
  })
}

namespace {

porta_session create_session(porta_model_s& m, porta_device device, const SessionOptions& base, const char* fn) {
  SessionOptions o = base;
  o.device = read_device(device, fn);
  backend_for(o.device);  // unavailable devices fail here, not at the first run
  auto session = std::make_unique<Session>(*m.model, o);
  porta_session h = make_handle<porta_session_s>();
  h->session = std::move(session);
  return h;
}

}  // namespace

porta_status porta_session_create(porta_model model, porta_device device, int strict, porta_session* out) {
  PORTA_C_GUARD({
    const char* fn = "porta_session_create";
    porta_model_s& m = get(model, fn, "model");
    need(out, fn, "out");
    SessionOptions o;
    o.strict = strict != 0;
    *out = create_session(m, device, o, fn);
  })
}

porta_status porta_session_create_with(porta_model model, porta_device device, const porta_session_options* options,
                                       porta_session* out) {
  PORTA_C_GUARD({
    const char* fn = "porta_session_create_with";
    porta_model_s& m = get(model, fn, "model");
    need(out, fn, "out");
    SessionOptions o;
    if (options) {
      // Fields past the caller's `size` were not in its header: they keep their defaults.
      const size_t size = options->size;
      if (size < offsetof(porta_session_options, strict) + sizeof(int32_t))
        throw InvalidArgument(str("[", fn, "] options->size should be sizeof(porta_session_options) (",
                                  sizeof(porta_session_options), "), got ", size));
      o.strict = options->strict != 0;
      if (size >= offsetof(porta_session_options, precision) + sizeof(const char*) && options->precision)
        o.precision = parse_precision(options->precision);
    }
    *out = create_session(m, device, o, fn);
  })
}

porta_status porta_session_run(porta_session session, const char* const* input_names,
                               const porta_tensor* inputs, size_t num_inputs,
                               const char* const* output_names, porta_tensor* outputs,
                               size_t num_outputs) {
  PORTA_C_GUARD({
    const char* fn = "porta_session_run";
    porta_session_s& s = get(session, fn, "session");
    if (num_inputs) {
      need(input_names, fn, "input_names");
      need(inputs, fn, "inputs");
    }
    if (num_outputs) need(outputs, fn, "outputs");
    std::map<std::string, Tensor> feeds;
    for (size_t i = 0; i < num_inputs; ++i) {
      if (!input_names[i]) bad_argument(str("[", fn, "] input_names[", i, "] should not be NULL"));
      Tensor& t = get(inputs[i], fn, "each input").tensor;
      if (!feeds.emplace(input_names[i], t).second)
        bad_argument(str("[", fn, "] input '", input_names[i], "' is given twice"));
    }
    const std::vector<ValueDesc>& descs = s.session->model().outputs();
    std::vector<size_t> picks;
    if (!output_names) {
      if (num_outputs != descs.size())
        bad_argument(str("[", fn, "] num_outputs should be the model's ", descs.size(),
                         " outputs when output_names is NULL, got ", num_outputs));
      for (size_t i = 0; i < descs.size(); ++i) picks.push_back(i);
    } else {
      for (size_t i = 0; i < num_outputs; ++i) {
        if (!output_names[i]) bad_argument(str("[", fn, "] output_names[", i, "] should not be NULL"));
        size_t k = 0;
        while (k < descs.size() && descs[k].name != output_names[i]) ++k;
        if (k == descs.size()) {
          std::string have;
          for (auto& d : descs) have += str(have.empty() ? "" : ", ", "'", d.name, "'");
          bad_argument(str("[", fn, "] the model has no output '", output_names[i], "' (outputs: ", have, ")"));
        }
        picks.push_back(k);
      }
    }
    std::vector<Tensor> results = s.session->run(feeds);
    std::vector<porta_tensor> made;
    try {
      for (size_t k : picks) made.push_back(wrap_tensor(results.at(k)));
    } catch (...) {
      for (porta_tensor h : made) destroy_handle(h);
      throw;
    }
    std::copy(made.begin(), made.end(), outputs);
  })
}

porta_status porta_session_free(porta_session session) {
  PORTA_C_GUARD({
    if (!session) return PORTA_OK;
    get(session, "porta_session_free", "session");
    destroy_handle(session);
  })
}

}  // extern "C"
