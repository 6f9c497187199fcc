#!/usr/bin/env python3
"""Writes the example model: Y = ScaledSwish(X, alpha) (domain com.example) followed by Relu,
so a plugin op sits between standard ONNX ops. Usage: make_model.py OUT.onnx [ALPHA]"""
import sys

import onnx
from onnx import TensorProto, helper

alpha = float(sys.argv[2]) if len(sys.argv) > 2 else 1.5
swish = helper.make_node("ScaledSwish", ["X"], ["S"], domain="com.example", name="swish", alpha=alpha)
relu = helper.make_node("Relu", ["S"], ["Y"], name="relu")
graph = helper.make_graph(
    [swish, relu], "swish_example",
    [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 1000])],
    [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3, 1000])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                helper.make_opsetid("com.example", 1)])
onnx.save(model, sys.argv[1])
