#!/usr/bin/python3
"""PyTorch eager timings of porta's example models, for bench/compare_models.sh.

Usage: /usr/bin/python3 bench/peers/torch_bench.py [--repeat N] [--warmup W] [--threads T]
                                                   [--models-dir DIR] [NAME ...]
The models are the definitions in scripts/export_models.py (same weights, same seeds), fed the
saved inputs models/<name>/input_<k>.npy. Runs under torch.inference_mode() with
torch.set_num_threads(T) (default 2): W warm-up calls (default 10), then N timed calls (default
50). Prints one line per model:
  model=<name> median_us=<median wall time> min_us=<fastest> rel_err=<e>
where rel_err compares with the saved outputs (0 unless inference mode takes another path).
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import export_models  # noqa: E402  (the model definitions)


def read_listing(d, name):
    with open(os.path.join(d, name)) as f:
        return [(a, os.path.join(d, b)) for a, b in (line.split() for line in f if line.strip())]


def bench(name, models_dir, repeat, warmup):
    d = os.path.join(models_dir, name)
    module = export_models.build(name).module
    inputs = [torch.from_numpy(np.load(f)) for _, f in read_listing(d, "inputs.txt")]
    refs = [np.load(f) for _, f in read_listing(d, "outputs.txt")]
    with torch.inference_mode():
        out = module(*inputs)
        outs = (out,) if isinstance(out, torch.Tensor) else out
        diff = sum(float(np.sum((o.numpy().astype(np.float64) - r) ** 2)) for o, r in zip(outs, refs))
        norm = sum(float(np.sum(r.astype(np.float64) ** 2)) for r in refs)
        rel = (diff / norm) ** 0.5 if norm > 0 else diff ** 0.5
        for _ in range(warmup):
            module(*inputs)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter_ns()
            module(*inputs)
            times.append((time.perf_counter_ns() - t0) / 1000.0)
    return statistics.median(times), min(times), rel


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--models-dir", default=os.path.join(ROOT, "models"))
    p.add_argument("names", nargs="*")
    args = p.parse_args()
    if args.repeat < 1 or args.warmup < 0 or args.threads < 1:
        p.error("--repeat and --threads must be positive, --warmup non-negative")
    torch.set_num_threads(args.threads)
    names = args.names or sorted(
        n for n in os.listdir(args.models_dir)
        if os.path.exists(os.path.join(args.models_dir, n, "model.onnx")))
    failed = False
    for name in names:
        try:
            median, fastest, rel = bench(name, args.models_dir, args.repeat, args.warmup)
            print(f"model={name} median_us={median:.1f} min_us={fastest:.1f} rel_err={rel:.2e}",
                  flush=True)
        except Exception as e:  # report and go on with the other models
            failed = True
            print(f"model={name} error={str(e)!r}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
