#!/usr/bin/env python3
"""Writes the small committed seeds of fuzz/corpus/ (python3-onnx, numpy). Larger seeds (the
models of models/, ONNX's node-case tensors) are added at run time by scripts/fuzz.sh."""
import io
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(fmt, name, data):
    os.makedirs(os.path.join(ROOT, fmt), exist_ok=True)
    with open(os.path.join(ROOT, fmt, name), "wb") as f:
        f.write(data)


def model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "seed", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return m.SerializeToString()


f32 = TensorProto.FLOAT
x = helper.make_tensor_value_info("x", f32, [2, 3])
y = helper.make_tensor_value_info("y", f32, None)
w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
write("onnx", "seed-add", model([helper.make_node("Add", ["x", "w"], ["y"])], [x], [y], [w]))
shape = helper.make_tensor_value_info("shape", TensorProto.INT64, [2])
one = helper.make_tensor_value_info("x", f32, [1, 1])  # the fuzz target feeds ones
write("onnx", "seed-reshape-by-input",
      model([helper.make_node("Reshape", ["x", "shape"], ["y"])], [one, shape], [y]))
dyn = helper.make_tensor_value_info("x", f32, ["batch", 4])
mm = numpy_helper.from_array(np.ones((4, 2), dtype=np.float32), "m")
write("onnx", "seed-matmul-relu-dynamic",
      model([helper.make_node("MatMul", ["x", "m"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
            [dyn], [y], [mm]))
ext = TensorProto(name="w", data_type=f32, dims=[2, 3])
ext.data_location = TensorProto.EXTERNAL
for k, v in (("location", "weights.bin"), ("offset", "16"), ("length", "24")):
    ext.external_data.add(key=k, value=v)
write("onnx", "seed-external-data", model([helper.make_node("Mul", ["x", "w"], ["y"])], [x], [y], [ext]))
cs = helper.make_node("ConstantOfShape", ["s"], ["y"],
                      value=helper.make_tensor("v", f32, [1], [2.0]))
s = numpy_helper.from_array(np.array([3, 4], dtype=np.int64), "s")
write("onnx", "seed-constant-of-shape", model([cs], [], [y], [s]))

write("tensor_proto", "seed-raw-f32", numpy_helper.from_array(np.arange(4, dtype=np.float32), "t").SerializeToString())
t = helper.make_tensor("t", TensorProto.INT64, [2, 2], [1, 2, 3, 4])
write("tensor_proto", "seed-int64-field", t.SerializeToString())
t = helper.make_tensor("t", TensorProto.FLOAT16, [3], np.array([1, 2, 3], dtype=np.float16).view(np.uint16).tolist())
write("tensor_proto", "seed-f16-int32-field", t.SerializeToString())
write("tensor_proto", "seed-external", ext.SerializeToString())

for name, arr in (("f32-2x3", np.arange(6, dtype=np.float32).reshape(2, 3)),
                  ("i64-scalar", np.array(7, dtype=np.int64)),
                  ("bool-4", np.array([True, False, True, True])),
                  ("u8-empty", np.zeros((0, 5), dtype=np.uint8))):
    buf = io.BytesIO()
    np.save(buf, arr)
    write("npy", "seed-" + name, buf.getvalue())

write("json", "seed-ceilings", b'{\n  "schema_version": 1,\n  "devices": {\n    "AMD EPYC": {"device": "cpu", '
      b'"copy_gbps": 24.1, "fma_gflops": {"f32": 301.2, "bf16": 1e3}, "measured_at": '
      b'"2026-11-30T12:00:00Z"}\n  }\n}\n')
write("json", "seed-values", b'[null, true, false, -1.5e-3, "a\\"b\\\\c\\u0001\\n", {"k": []}]')
