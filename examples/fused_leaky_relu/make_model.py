#!/usr/bin/env python3
"""Writes a StyleGAN2-style block using the plugin's op, its input and the expected output:
Y = FusedLeakyReLU(Conv(X, W), bias) (domain com.stylegan2), so the plugin op follows a
standard ONNX op. The expected output is computed here in float64 with numpy.
Usage: make_model.py OUT_DIR   (writes model.onnx, x.npy, expected.npy)"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)
n, c_in, c_out, h, w = 2, 3, 8, 9, 7
x = rng.uniform(-2, 2, (n, c_in, h, w)).astype(np.float32)
weight = rng.uniform(-1, 1, (c_out, c_in, 1, 1)).astype(np.float32)
bias = rng.uniform(-1, 1, (c_out,)).astype(np.float32)
slope, scale = 0.2, math.sqrt(2)

conv = helper.make_node("Conv", ["X", "W"], ["F"], name="conv")
act = helper.make_node("FusedLeakyReLU", ["F", "B"], ["Y"], domain="com.stylegan2", name="act",
                       negative_slope=slope, scale=scale)
graph = helper.make_graph(
    [conv, act], "fused_leaky_relu_example",
    [helper.make_tensor_value_info("X", TensorProto.FLOAT, [n, c_in, h, w])],
    [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [n, c_out, h, w])],
    initializer=[numpy_helper.from_array(weight, "W"), numpy_helper.from_array(bias, "B")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                helper.make_opsetid("com.stylegan2", 1)])
onnx.save(model, os.path.join(out, "model.onnx"))

f = np.einsum("nchw,oc->nohw", x.astype(np.float64), weight[:, :, 0, 0].astype(np.float64))
v = f + bias.astype(np.float64)[None, :, None, None]
np.save(os.path.join(out, "x.npy"), x)
np.save(os.path.join(out, "expected.npy"), np.where(v >= 0, v, v * slope) * scale)
