#!/usr/bin/env python3
"""Per-call overhead of porta.Session.run from Python against the same Session::run called from
C++ (porta._porta._time_cpp_runs loops in C++ with the same inputs): a one-node model, so the
difference is what the Python layer costs (feed conversion, GIL release, numpy results).
`run(..., as_tensors=True)` leaves results on the device as the C++ loop does; plain `run`
also copies them to numpy (free on the cpu, a device-to-host copy elsewhere).

    PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [--calls 20000] [--device cpu]
"""
import argparse
import os
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

import porta
from porta import _porta


def tiny_model(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "tiny", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=5, help="best of this many rounds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "relu.onnx")
        tiny_model(path)
        session = porta.Session(path, device=args.device)
    feeds = {"x": np.random.default_rng(0).standard_normal((1, 16)).astype(np.float32)}
    for _ in range(100):  # compile and warm the caches
        session.run(None, feeds)
    python_us, tensors_us, cpp_us = [], [], []

    def per_call(**kwargs):
        start = time.perf_counter()
        for _ in range(args.calls):
            session.run(None, feeds, **kwargs)
        return (time.perf_counter() - start) / args.calls * 1e6

    for _ in range(args.repeats):
        python_us.append(per_call())
        tensors_us.append(per_call(as_tensors=True))
        cpp_us.append(_porta._time_cpp_runs(session, feeds, args.calls))
    best_py, best_tensors, best_cpp = min(python_us), min(tensors_us), min(cpp_us)
    print(f"model: Relu 1x16 f32, device {args.device}, {args.calls} calls, best of {args.repeats}")
    print(f"{'Session.run (Python)':>22} {'run(as_tensors=True)':>22} {'Session::run (C++)':>20} "
          f"{'run - C++':>10}")
    print(f"{best_py:>19.2f} us {best_tensors:>19.2f} us {best_cpp:>17.2f} us {best_py - best_cpp:>7.2f} us")


if __name__ == "__main__":
    main()
