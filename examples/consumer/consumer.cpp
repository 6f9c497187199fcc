// consumer MODEL.onnx PLUGIN.so ALPHA — runs the example model (ScaledSwish then Relu) on every
// available device and checks Y against relu(x * sigmoid(alpha * x)) computed here; prints one
// line per device: "<device> swish <native|composite|fallback> max_error=<e>". Exit 1 on a
// wrong result, 2 on a porta error.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "porta/plugin.hpp"
#include "porta/porta.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: consumer MODEL.onnx PLUGIN.so ALPHA\n";
    return 2;
  }
  try {
    std::cout << "plugin " << porta::load_plugin(argv[2]) << " loaded\n";
    double alpha = std::atof(argv[3]);
    porta::Model model = porta::Model::load(argv[1]);
    std::vector<float> x(3 * 1000);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.37 * i) * 6.0);
    porta::Tensor input = porta::Tensor::from_host(x.data(), {3, 1000}, porta::DType::f32);
    int failures = 0;
    for (porta::Device d : porta::all_devices()) {
      porta::Backend* b = porta::find_backend(d.type);
      if (d.index >= b->device_count() || !b->availability(d.index).available) continue;
      porta::SessionOptions o;
      o.device = d;
      porta::Session session(model, o);
      std::string path = "?";
      for (auto& p : session.plan({{"X", input}}))
        if (p.op == "com.example::ScaledSwish") path = std::string(porta::path_name(p.path));
      std::vector<double> y = session.run({{"X", input}}).at(0).to_doubles();
      double worst = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        double v = x[i], want = std::max(0.0, v / (1.0 + std::exp(-alpha * v)));
        worst = std::max(worst, std::abs(y[i] - want) / (1.0 + std::abs(want)));
      }
      std::cout << d.str() << " swish " << path << " max_error=" << worst << "\n";
      if (!(worst < 1e-5)) ++failures;
    }
    return failures ? 1 : 0;
  } catch (const porta::Error& e) {
    std::cerr << "consumer: " << e.what() << "\n";
    return 2;
  }
}
