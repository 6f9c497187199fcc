// Replayed runs (SessionOptions::replay, vk::Context::begin_recording): from a plan's third run
// on, a Vulkan session submits the command buffers its third run recorded instead of recording
// again. Checked here: every run's outputs against float64 references computed for that run's
// fresh inputs, and bit for bit against a session that records every run; outputs and device
// inputs the caller keeps are never written by later runs; inputs of any layout; each plan of a
// session its own kept run; plans that read the host do not replay and say why; and, on the
// context, what makes a recording unreplayable, the signature, and the pinning that keeps a
// kept run's memory from other tensors.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "backends/vulkan/vk_context.hpp"
#include "porta/session.hpp"
#include "tests/onnx_graph_builder.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

using Ints = std::vector<int64_t>;

std::vector<Device> vulkan_devices() {
  std::vector<Device> out;
  for (Device d : test_devices())
    if (d.type == DeviceType::vulkan && device_unusable(d).empty()) out.push_back(d);
  return out;
}

struct Weights {
  Tensor w1 = random_f32({8, 8, 3, 3}, -0.3, 0.3), b1 = random_f32({8}), w2 = random_f32({8, 8, 1, 1}, -0.3, 0.3),
         b2 = random_f32({8}), w3 = random_f32({5, 8}), b3 = random_f32({5});
};

// conv 3x3 -> relu -> conv 1x1 -> + x ("sum", an output) -> transpose -> mean over the map ->
// gemm ("y"): kernels, a residual, a transposing copy, a reduction, a small and a large output.
ReferenceGraph block(const Weights& w, const Tensor& x, const std::string& batch = "") {
  ReferenceGraph g;
  if (batch.empty()) g.input("x", x);
  else g.input("x", x, batch);
  g.initializer("w1", w.w1);
  g.initializer("b1", w.b1);
  g.initializer("w2", w.w2);
  g.initializer("b2", w.b2);
  g.initializer("w3", w.w3);
  g.initializer("b3", w.b3);
  g.node("Conv", {"x", "w1", "b1"}, "c1", {{"pads", Ints{1, 1, 1, 1}}});
  g.node("Relu", {"c1"}, "r1");
  g.node("Conv", {"r1", "w2", "b2"}, "c2");
  g.node("Add", {"c2", "x"}, "sum");
  g.node("Transpose", {"sum"}, "t", {{"perm", Ints{0, 2, 3, 1}}});
  g.node("ReduceMean", {"t"}, "m", {{"axes", Ints{1, 2}}, {"keepdims", int64_t{0}}});
  g.node("Gemm", {"m", "w3", "b3"}, "y", {{"transB", int64_t{1}}});
  g.output("sum");
  g.output("y");
  return g;
}

void expect_reference(const std::vector<Tensor>& out, const ReferenceGraph& g, const std::string& what) {
  ASSERT_EQ(out.size(), 2u) << what;
  Comparison a = compare(out[0], g.reference("sum"), 1e-5), b = compare(out[1], g.reference("y"), 1e-5);
  EXPECT_TRUE(a.ok) << what << " sum: " << a.message;
  EXPECT_TRUE(b.ok) << what << " y: " << b.message;
}

void expect_same_bits(const Tensor& a, const Tensor& b, const std::string& what) {
  EXPECT_EQ(a.to_doubles(), b.to_doubles()) << what;
}

TEST(Replay, LaterRunsReplayWithFreshInputsAndKeepEveryOutput) {
  for (Device d : vulkan_devices()) {
    SCOPED_TRACE(d.str());
    Weights w;
    std::vector<Tensor> xs;
    std::vector<ReferenceGraph> refs;
    for (int i = 0; i < 7; ++i) {
      xs.push_back(random_f32({1, 8, 12, 12}));
      refs.push_back(block(w, xs.back()));
    }
    const Model model = refs[0].model();
    SessionOptions o;
    o.device = d;
    Session s(model, o);
    o.replay = false;
    Session recorded(model, o);
    vk::Context& c = vk::context(d.index);
    std::vector<std::vector<Tensor>> kept;  // every run's outputs, held until the end
    std::vector<Tensor> device_inputs;      // the caller's device tensors, checked at the end too
    for (int i = 0; i < 7; ++i) {
      const std::string what = str("run ", i);
      // Even runs pass the input on the device: the kept run must copy it, never bind it.
      device_inputs.push_back(i % 2 == 0 ? xs[i].to(d) : Tensor());
      std::map<std::string, Tensor> in{{"x", i % 2 == 0 ? device_inputs.back() : xs[i]}};
      const uint64_t replays = c.replays;
      kept.push_back(s.run(in));
      EXPECT_EQ(s.replayed(), i >= 3) << what;
      EXPECT_EQ(c.replays - replays, i >= 3 ? 1u : 0u) << what;
      EXPECT_EQ(s.replay_blocker(), "") << what;
      std::vector<Tensor> want = recorded.run(in);
      EXPECT_FALSE(recorded.replayed()) << what;
      expect_same_bits(kept.back()[0], want[0], what + " sum");
      expect_same_bits(kept.back()[1], want[1], what + " y");
    }
    for (int i = 0; i < 7; ++i) {
      expect_reference(kept[i], refs[i], str("kept outputs of run ", i));
      if (device_inputs[i].defined()) expect_same_bits(device_inputs[i], xs[i], str("the device input of run ", i));
    }
    EXPECT_EQ(recorded.replay_blocker(), "SessionOptions::replay is off");
  }
}

TEST(Replay, InputsOfAnyLayoutAndEveryPlanItsOwnKeptRun) {
  for (Device d : vulkan_devices()) {
    SCOPED_TRACE(d.str());
    Weights w;
    SessionOptions o;
    o.device = d;
    std::unique_ptr<Session> s;
    // Batch 1 and batch 2 alternate in blocks: each plan keeps its own run.
    for (int i = 0; i < 14; ++i) {
      const int64_t batch = (i / 4) % 2 == 0 ? 1 : 2;
      // A view of every other column of a wider tensor: not contiguous.
      Tensor wide = random_f32({batch, 8, 12, 24});
      Tensor x = wide.as_strided({batch, 8, 12, 12}, {8 * 12 * 24, 12 * 24, 24, 2}, 0);
      Tensor dense = Tensor::from_values(x.to_doubles(), {batch, 8, 12, 12}, DType::f32);
      ReferenceGraph g = block(w, dense, "batch");
      if (!s) s = std::make_unique<Session>(g.model(), o);
      std::vector<Tensor> out = s->run({{"x", x}});
      expect_reference(out, g, str("run ", i, " (batch ", batch, ")"));
      // Plan runs: 0-3 batch 1 (replays from the 4th), 4-7 batch 2, 8-11 batch 1 again.
      const int plan_runs = i < 8 ? i % 4 + 1 : (i < 12 ? i - 8 + 5 : i - 12 + 5);
      EXPECT_EQ(s->replayed(), plan_runs >= 4) << "run " << i;
    }
  }
}

TEST(Replay, PlansThatReadTheHostOrRunElsewhereRecordEveryRun) {
  for (Device d : vulkan_devices()) {
    SCOPED_TRACE(d.str());
    // Gather's indices come from a graph input the session binds on the host each run.
    OnnxGraph g;
    g.input("x", {10, 4});
    g.input("ids", {4});
    for (onnx::ValueInfoProto& v : *g.g->mutable_input())
      if (v.name() == "ids") v.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
    g.node("Gather", {"x", "ids"}, "rows");
    g.node("Relu", {"rows"}, "y");
    g.output("y", {4, 4});
    SessionOptions o;
    o.device = d;
    Session s(g.model(), o);
    for (int i = 0; i < 5; ++i) {
      const Tensor x = random_f32({10, 4});
      const std::vector<double> ids{double(i), 9, 3, double(9 - i)}, xv = x.to_doubles();
      std::vector<double> want;
      for (double r : ids)
        for (int c = 0; c < 4; ++c) want.push_back(std::max(xv[static_cast<size_t>(r) * 4 + c], 0.0));
      std::vector<Tensor> out = s.run({{"x", x}, {"ids", Tensor::from_values(ids, {4}, DType::i64)}});
      EXPECT_FALSE(s.replayed());
      Comparison c = compare(out.at(0), Tensor::from_values(want, {4, 4}, DType::f64), 1e-6);
      EXPECT_TRUE(c.ok) << "run " << i << ": " << c.message;
    }
    EXPECT_EQ(s.replay_blocker(), "the run reads graph inputs on the host");

    // Profiling times every node; it never replays either.
    Weights w;
    ReferenceGraph b = block(w, random_f32({1, 8, 12, 12}));
    o.profile = true;
    Session p(b.model(), o);
    for (int i = 0; i < 5; ++i) {
      expect_reference(p.run(b.inputs()), b, str("profiled run ", i));
      EXPECT_FALSE(p.replayed());
    }
    EXPECT_EQ(p.replay_blocker(), "profiling times every node");
  }
}

TEST(Replay, SessionsOnSeveralThreadsStayRight) {
  // Each thread's session records, keeps and replays while the others do the same on the same
  // device (one recording at a time: a session that finds another's open records as usual, and
  // another thread's work spoils only the recording it gets into).
  for (Device d : vulkan_devices()) {
    SCOPED_TRACE(d.str());
    Weights w;
    const Model model = block(w, random_f32({1, 8, 12, 12})).model();
    std::vector<std::vector<Tensor>> xs(4);
    std::vector<std::vector<ReferenceGraph>> refs(4);
    for (int t = 0; t < 4; ++t)
      for (int i = 0; i < 8; ++i) {
        xs[t].push_back(random_f32({1, 8, 12, 12}));
        refs[t].push_back(block(w, xs[t].back()));
      }
    std::vector<std::vector<std::vector<Tensor>>> outs(4);
    std::vector<int> replayed(4, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        try {
          SessionOptions o;
          o.device = d;
          Session s(model, o);
          for (int i = 0; i < 8; ++i) {
            outs[t].push_back(s.run({{"x", xs[t][i]}}));
            replayed[t] += s.replayed() ? 1 : 0;
          }
        } catch (const std::exception& e) {
          ADD_FAILURE() << "thread " << t << ": " << e.what();
        }
      });
    for (auto& th : threads) th.join();
    int total = 0;
    for (int t = 0; t < 4; ++t) {
      total += replayed[t];
      ASSERT_EQ(outs[t].size(), 8u) << "thread " << t;
      for (int i = 0; i < 8; ++i) expect_reference(outs[t][i], refs[t][i], str("thread ", t, " run ", i));
    }
    std::cout << "[  replay  ] " << total << " of 32 runs on 4 threads replayed\n";
  }
}

// ---- the context ----

vk::Buffer* record_of(const Tensor& t) { return static_cast<vk::Buffer*>(t.storage()->handle()); }

TEST(Replay, UploadsReadBacksAndOtherThreadsMakeARecordingUnreplayable) {
  for (Device d : vulkan_devices()) {
    SCOPED_TRACE(d.str());
    vk::Context& c = vk::context(d.index);
    Tensor a = random_f32({256}).to(d), b = Tensor::empty({256}, DType::f32, d);

    c.begin_recording(true);
    b.copy_(a);
    RecordedRun fine = c.end_recording();
    EXPECT_EQ(fine.not_replayable, "");
    EXPECT_TRUE(fine.commands);

    c.begin_recording(true);
    b.copy_(random_f32({256}));  // host data in the commands or the staging buffer
    RecordedRun up = c.end_recording();
    EXPECT_NE(up.not_replayable.find("upload"), std::string::npos) << up.not_replayable;
    EXPECT_FALSE(up.commands);

    c.begin_recording(true);
    b.copy_(a);
    Tensor back = b.to(Device::cpu());
    RecordedRun read = c.end_recording();
    EXPECT_NE(read.not_replayable.find("read back"), std::string::npos) << read.not_replayable;
    EXPECT_EQ(back.to_doubles(), a.to_doubles());

    c.begin_recording(false);
    std::thread other([&] { b.copy_(a); });
    other.join();
    RecordedRun mixed = c.end_recording();
    EXPECT_NE(mixed.not_replayable.find("another thread"), std::string::npos) << mixed.not_replayable;
    EXPECT_FALSE(mixed.commands);  // not kept: noted only
    backend_for(d).synchronize(d.index);
  }
}

TEST(Replay, TheSignatureFollowsTheWorkNotTheAddresses) {
  for (Device d : vulkan_devices()) {
    SCOPED_TRACE(d.str());
    vk::Context& c = vk::context(d.index);
    Tensor a = random_f32({300}).to(d), b = Tensor::empty({300}, DType::f32, d);
    Tensor a2 = random_f32({300}).to(d), b2 = Tensor::empty({300}, DType::f32, d);
    auto signature = [&](auto work) {
      c.begin_recording(false);
      work();
      return c.end_recording().signature;
    };
    const uint64_t s1 = signature([&] { b.copy_(a); });
    EXPECT_EQ(signature([&] { b2.copy_(a2); }), s1) << "other buffers, the same work";
    EXPECT_NE(signature([&] { b.reshape({300}).as_strided({100}, {1}, 0).copy_(a.as_strided({100}, {1}, 0)); }), s1)
        << "a copy of another size";
    EXPECT_NE(signature([&] { b.copy_(a); b2.copy_(a2); }), s1) << "more work";
    backend_for(d).synchronize(d.index);
  }
}

TEST(Replay, AKeptRunsMemoryIsNotGivenToOtherTensors) {
  for (Device d : vulkan_devices()) {
    SCOPED_TRACE(d.str());
    vk::Context& c = vk::context(d.index);
    Tensor a = random_f32({4096}).to(d), b = Tensor::empty({4096}, DType::f32, d);
    const vk::Buffer* a_record = record_of(a);
    const VkDeviceSize a_offset = a_record->offset;
    const VkBuffer a_buffer = a_record->buffer;
    c.begin_recording(true);
    b.copy_(a);
    RecordedRun kept = c.end_recording();
    ASSERT_TRUE(kept.commands);
    a = Tensor();  // its allocation stays the kept run's
    std::vector<Tensor> others;
    for (int i = 0; i < 8; ++i) {
      others.push_back(Tensor::empty({4096}, DType::f32, d));
      const vk::Buffer* r = record_of(others.back());
      EXPECT_FALSE(r->buffer == a_buffer && r->offset == a_offset) << "allocation " << i << " took the kept memory";
    }
    // Replayed: copies the kept source (its values intact) into b again.
    Tensor before = b.to(Device::cpu());
    b.copy_(Tensor::zeros({4096}, DType::f32, Device::cpu()));
    backend_for(d).begin_batch(d.index);
    backend_for(d).replay(d.index, kept.commands);
    backend_for(d).end_batch(d.index);
    EXPECT_EQ(b.to(Device::cpu()).to_doubles(), before.to_doubles());
    // Once the kept run goes, so does the pin.
    kept.commands.reset();
    backend_for(d).synchronize(d.index);
    EXPECT_EQ(c.pinned_allocations(), 0u);
  }
}

}  // namespace
}  // namespace porta::test
