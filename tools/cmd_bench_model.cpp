// porta bench MODEL.onnx — whole-model latency per device and batch size, throughput, and the
// peak intermediate memory the session planned on each device.
//
// Inputs: the model folder's inputs.txt, --input files, or random values (as `porta run`),
// then resized along the first axis to each batch size, samples repeated in turn (only inputs
// whose first dimension is dynamic). Inputs are placed on the device before timing: a run is
// Session::run up to the device finishing, outputs left on the device. Host wall time.
#include <cstring>
#include <iostream>

#include "tools/cmd_bench.hpp"

namespace porta::cli::bench {
namespace {

bool batch_is_dynamic(const ValueDesc& d) { return d.rank_known && !d.shape.empty() && d.shape[0] < 0; }

// `t` resized to `batch` along the first axis, its samples repeated in turn.
Tensor repeat_batch(const Tensor& t, int64_t batch) {
  Tensor host = t.to(Device::cpu()).contiguous();
  Shape shape = host.shape();
  if (shape.empty() || shape[0] < 1)
    throw ShapeError(str("[bench] to make batch ", batch, " from an input it needs a first dimension of at least 1, got ",
                         shape_str(shape)));
  int64_t have = shape[0];
  size_t sample = host.nbytes() / static_cast<size_t>(have);
  shape[0] = batch;
  Tensor out = Tensor::empty(shape, host.dtype());
  for (int64_t b = 0; b < batch; ++b)
    std::memcpy(static_cast<char*>(out.raw_data()) + b * sample,
                static_cast<const char*>(host.raw_data()) + (b % have) * sample, sample);
  return out;
}

}  // namespace

std::vector<ModelResult> run_models(const std::string& path, const std::vector<Device>& devices,
                                    const std::vector<int64_t>& batches, const Settings& settings) {
  Model model = Model::load(path);
  std::map<std::string, Tensor> base = model_inputs(model, path, {});
  bool dynamic = false;
  std::string described;
  for (auto& d : model.inputs()) {
    dynamic |= batch_is_dynamic(d);
    described += str(described.empty() ? "" : ", ", d.name, " ", shape_str(d.shape));
  }
  for (int64_t b : batches) {
    if (b < 1) throw InvalidArgument(str("[bench] --batch sizes must be at least 1, got ", b));
    if (b != 1 && !dynamic)
      throw InvalidArgument(str("[bench] --batch ", b, " needs an input with a dynamic first dimension; ", path,
                                " has inputs ", described, " (negative = dynamic)"));
  }
  // No --batch: the inputs as they come, reported at their own batch size.
  std::vector<int64_t> sizes = batches;
  if (sizes.empty()) {
    int64_t own = 1;
    for (auto& d : model.inputs())
      if (batch_is_dynamic(d) && base.count(d.name) && base.at(d.name).rank() > 0) {
        own = base.at(d.name).shape()[0];
        break;
      }
    sizes.push_back(own);
  }
  std::vector<ModelResult> out;
  for (int64_t b : sizes) {
    std::map<std::string, Tensor> inputs;
    for (auto& d : model.inputs()) {
      auto it = base.find(d.name);
      if (it == base.end()) continue;
      bool resize = !batches.empty() && batch_is_dynamic(d);
      inputs[d.name] = resize ? repeat_batch(it->second, b) : it->second;
    }
    for (Device dev : devices) {
      ModelResult r;
      r.model = path;
      r.device = dev.str();
      r.batch = b;
      if (settings.progress) std::cerr << "\r\033[K" << path << " batch " << b << " on " << dev.str() << std::flush;
      try {
        SessionOptions o;
        o.device = dev;
        Session session(model, o);
        std::map<std::string, Tensor> on_device;
        for (auto& [name, t] : inputs) on_device[name] = t.to(dev);
        // The first run compiles the session for these shapes (pipelines, plans): not timed,
        // and not mistaken for a slow warm-up.
        session.run(on_device);
        backend_for(dev).synchronize(dev.index);
        r.m = measure(dev, [&] { session.run(on_device); }, settings, /*device_timer=*/false);
        if (r.m.runs == 0) {
          r.status = "skipped";
          r.note = str("one run took ", r.m.warmup_us * 1e-6 / std::max(1, settings.warmup_runs),
                       " s, over --max-case-time ", settings.max_case_s, " s");
        }
        r.throughput = r.m.host_us.median > 0 ? static_cast<double>(b) * 1e6 / r.m.host_us.median : 0;
        r.peak_memory = session.peak_memory();
      } catch (const Error& e) {
        r.status = "error";
        r.note = str(e.kind(), ": ", e.what());
      }
      out.push_back(std::move(r));
    }
  }
  if (settings.progress) std::cerr << "\r\033[K" << std::flush;
  return out;
}

}  // namespace porta::cli::bench
