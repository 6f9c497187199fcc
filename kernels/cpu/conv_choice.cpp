// porta cpu kernels — the measured rules by which a oneDNN Conv primitive gets its algorithm
// and its activation layout (conv_choice.hpp).
#include "kernels/cpu/conv_choice.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "kernels/cpu/thread_policy.hpp"

namespace porta::cpu {

// Winograd (oneDNN's F(4x4, 3x3), AVX-512 only) for 2-D 3x3 stride-1 undilated ungrouped convs
// whose input and output channels are multiples of 16: it does about a quarter of direct's
// multiplications there. Measured single-threaded on cnn: 16->32 @32x32 94 -> 77 us and
// 32->64 @16x16 84 -> 60 us, but 3->16 @64x64 53 -> 174 us (few input channels), hence the
// channel condition. Its rounding differs from direct's (transforms in f32); the results stay
// within the conformance and model tolerances. PORTA_CONV_WINOGRAD=0 disables it. When
// oneDNN has no Winograd kernel for a shape, the direct one is used. Outputs smaller than one
// 4x4 tile stay direct: a single tile saves no multiplications worth its transformed weights
// (which oneDNN's F(2x2, 3x3) kernel, picked there, holds 16/9 as large), and such convs are
// bound by reading the weights. On the zoo at 64x64 (AMD EPYC Zen 5, one thread, median of 30
// runs, profile): resnet18's 512-channel convs over 2x2 pixels 605-663 -> 412-419 us each,
// googlenet's inception5 convs 134 -> 75 and 163 -> 105 us; at 4x4 Winograd stays ahead
// (googlenet's inception4b 57 vs 78 us) or even (resnet18's layer3).
// Convs of fewer than kWinogradMinMacsPerThread direct multiply-adds per thread of the call's
// budget stay direct: there the transforms cost more than the multiplications saved, and the
// direct kernel splits over two threads where Winograd (whole or as row blocks) hardly does.
// Zen 5, per node, `--profile`, median of 5 processes, Winograd / direct us: at two threads
// resnet18's 64->64 over 16x16 (9.4 M multiply-adds) 72 / 57, its 128->128 over 8x8 76 / 61,
// densenet121's 128->32 over 8x8 47 / 19, inception_v3's 64->96 over 7x7 44 / 24, against
// googlenet's 64->192 over 16x16 (28 M) 96 / 134, inception_v3's 32->64 over 37x37 (25 M) 104
// / 131, resnet50's 512->512 over 7x7 595 / 781; at one thread resnet18's 64->64 over 16x16
// 71 / 92, densenet121's 128->32 over 8x8 (2.4 M) 30 / 23, googlenet's 16->32 over 8x8 10 / 7.
constexpr int64_t kWinogradMinMacsPerThread = int64_t{1} << 23;
bool use_winograd(const Shape& x, const Shape& w, int64_t group, const opdef::WindowGeometry& g) {
  static const bool enabled = [] {
    const char* e = std::getenv("PORTA_CONV_WINOGRAD");
    return !(e && std::string(e) == "0");
  }();
  if (!enabled || group != 1 || x.size() != 4 || w[2] != 3 || w[3] != 3) return false;
  for (size_t i = 0; i < 2; ++i)
    if (g.strides[i] != 1 || g.dilations[i] != 1) return false;
  if (g.out[0] < 4 || g.out[1] < 4) return false;  // less than one F(4x4) output tile
  if (x[1] % 16 != 0 || w[0] % 16 != 0) return false;
  const int64_t macs = x[0] * g.out[0] * g.out[1] * w[0] * x[1] * 9;
  return macs >= kWinogradMinMacsPerThread * call_thread_budget();
}

// A dense conv whose output has at most 16 pixels per image (the last stages of CNNs at small
// images) runs channel-blocked even between channels-last steps, reordering its few pixels in
// and out inside the step: oneDNN's blocked jit kernels read the weights of these
// weight-bound convs faster than its channels-last brgconv (resnext50's layer4 1x1 convs over
// 2x2 pixels: ~450 vs ~510 us each; model minimum of 4 alternating runs at one thread:
// resnet18 5.90 -> 5.46 ms, mobilenet_v2 1.41 -> 1.23 ms, with CI sharing the machine).
// Undilated only: deeplabv3's dilated ASPP convs over 2x2 pixels fell to oneDNN's reference
// loop in the blocked layout (534 ms for the model against 4 ms).
bool small_blocked(const Shape& x, const Shape& y, int64_t group, const opdef::WindowGeometry& g) {
  for (int64_t d : g.dilations)
    if (d != 1) return false;
  return group == 1 && y.size() >= 3 && shape_numel(y) / std::max<int64_t>(1, y[0] * y[1]) <= 16 &&
         channel_blocked_tag(x) != dnnl::memory::format_tag::undef &&
         channel_blocked_tag(y) != dnnl::memory::format_tag::undef;
}

// A network's first conv: a plain input of a few channels (an image) into a channels-last
// output of 16 or 32 channels. oneDNN's direct kernel reads the plain image and writes
// nChw16c, which a per-pixel block transpose then stores channels-last; the channels-last
// primitive instead needs the image transposed first and runs brgconv over 3 input channels.
// Measured on one thread (a standalone oneDNN program, the conv and its reorders, 3x3 stride 2
// over 64x64): 16 channels 9.9 -> 5.6 us, 32 channels 12.5 -> 10.7 us; at 64 channels the
// channels-last route was ahead (19.3 vs 20.9 us). A fused residual keeps channels-last.
bool image_to_blocked(const Shape& x, const Shape& y, int64_t group, LayoutSides layout, bool residual) {
  return group == 1 && !residual && !layout.input(0) && layout.output &&
         channel_blocked_tag(x) == dnnl::memory::format_tag::undef &&
         channel_blocked_tag(y) != dnnl::memory::format_tag::undef && y[1] <= 32;
}

}  // namespace porta::cpu
