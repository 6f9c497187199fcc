#!/usr/bin/python3
"""torch.ops.porta.RmsNorm (porta's CPU kernel through libporta_torch.so) against PyTorch 1.13's
composite of the same formula, x * rsqrt(mean(x^2, -1) + eps) * scale, on a 4096x4096 f32 CPU
tensor. Target: porta at least 3x faster. Prints the median of each and the ratio.
Usage: bench/peers/torch_rmsnorm.py BUILD/lib/libporta_torch.so [REPEATS]"""
import os
import statistics
import sys
import time

import torch

torch.ops.load_library(sys.argv[1])
# PyTorch gets every core, as porta does (Debian's build may default to fewer).
torch.set_num_threads(os.cpu_count())
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 20
x = torch.randn(4096, 4096)
scale = torch.randn(4096)
eps = 1e-6


def composite(x, scale):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * scale


def median_ms(fn):
    fn()  # warm up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


with torch.no_grad():
    got = torch.ops.porta.RmsNorm(x, scale, epsilon=eps)
    want = composite(x.double(), scale.double())
    err = ((got.double() - want).abs().max() / want.abs().max()).item()
    assert err < 1e-5, f"porta RmsNorm differs from the composite: {err}"
    porta_ms = median_ms(lambda: torch.ops.porta.RmsNorm(x, scale, epsilon=eps))
    torch_ms = median_ms(lambda: composite(x, scale))
print(f"threads {torch.get_num_threads()}  4096x4096 f32  (median of {repeats})")
print(f"torch.ops.porta.RmsNorm  {porta_ms:8.2f} ms  {x.numel() * 8 / porta_ms / 1e6:6.1f} GB/s")
print(f"PyTorch composite        {torch_ms:8.2f} ms  {x.numel() * 8 / torch_ms / 1e6:6.1f} GB/s")
print(f"speed-up {torch_ms / porta_ms:.2f}x (target >= 3x)")
