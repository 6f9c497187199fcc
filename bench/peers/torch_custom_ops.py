#!/usr/bin/python3
"""PyTorch 1.13 eager timings of porta's custom ops' perf cases, for comparison with
bench/custom_ops_bench.cpp (custom_kernel/ and custom_composite/).

Usage: /usr/bin/python3 bench/peers/torch_custom_ops.py [--repeat N] [--warmup W] [--threads T]

The ops run as python/porta_ops.py defines them: plain PyTorch compositions (PyTorch 1.13 has
no fused CPU attention; its matmul goes through the BLAS it was built with). Inputs are f32
(u8 for NormalizeImage) with the perf cases' shapes. Prints one line per case:
  case=<name> median_ms=<median> min_ms=<fastest> GB/s=<input+output bytes / median>
"""
import argparse
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import porta_ops  # noqa: E402

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def cases():
    g = torch.Generator().manual_seed(7)
    x = torch.rand(4096, 4096, generator=g) * 4 - 2
    v = torch.rand(4096, generator=g) * 4 - 2
    img_nchw = torch.randint(0, 256, (1, 3, 4096, 4096), generator=g, dtype=torch.uint8)
    img_nhwc = torch.randint(0, 256, (1, 4096, 4096, 3), generator=g, dtype=torch.uint8)
    q, k, vv = (torch.rand(1, 8, 1024, 64, generator=g) * 4 - 2 for _ in range(3))
    rx = torch.rand(1, 32, 1024, 128, generator=g)
    cos, sin = porta_ops.rotary_tables(1024, 128)
    return [
        ("RmsNorm/4096x4096", lambda: porta_ops.rms_norm(x, v), [x, v]),
        ("BiasGelu/4096x4096", lambda: porta_ops.bias_gelu(x, v), [x, v]),
        ("BiasGelu/tanh_4096x4096", lambda: porta_ops.bias_gelu(x, v, "tanh"), [x, v]),
        ("NormalizeImage/4096x4096_nchw", lambda: porta_ops.normalize_image(img_nchw, MEAN, STD), [img_nchw]),
        ("NormalizeImage/4096x4096_nhwc", lambda: porta_ops.normalize_image(img_nhwc, MEAN, STD, "NHWC"),
         [img_nhwc]),
        ("RotaryEmbedding/B1_H32_S1024_D128", lambda: porta_ops.rotary_embedding(rx, cos, sin), [rx, cos, sin]),
        ("ScaledDotProductAttention/B1_H8_S1024_D64_causal",
         lambda: porta_ops.scaled_dot_product_attention(q, k, vv, causal=True), [q, k, vv]),
        ("ScaledDotProductAttention/B1_H8_S1024_D64",
         lambda: porta_ops.scaled_dot_product_attention(q, k, vv), [q, k, vv]),
    ]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    with torch.inference_mode():
        for name, fn, ins in cases():
            out = fn()
            for _ in range(args.warmup):
                fn()
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter_ns()
                fn()
                times.append((time.perf_counter_ns() - t0) / 1e6)
            med = statistics.median(times)
            nbytes = sum(t.numel() * t.element_size() for t in ins) + out.numel() * out.element_size()
            print(f"case={name} median_ms={med:.3f} min_ms={min(times):.3f} GB/s={nbytes / med / 1e6:.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
