"""porta.check (the per-node error table as data), porta.devices, and the exception classes."""
import subprocess
import sys

import numpy as np
import pytest

import porta
from conftest import MODELS, SOURCE, available_devices, bundled


def test_devices_records():
    records = porta.devices()
    assert records[0]["device"] == "cpu" and records[0]["available"]
    for r in records:
        assert set(r) == {"device", "kind", "index", "available", "detail", "type"}
        assert r["device"].split(":")[0] == r["kind"]
        if not r["available"]:
            assert r["detail"], "an unavailable device says why"


def test_check_table_against_reference():
    path, feeds, _ = bundled("mlp")
    devices = available_devices()
    table = porta.check(path, feeds, devices=devices)
    import onnx

    nodes = onnx.load(path).graph.node
    assert len(table) == len(nodes) * len(devices)
    for i, node in enumerate(nodes):
        for j, device in enumerate(devices):
            r = table[i * len(devices) + j]
            assert r["node"] == node.name and r["op"] == node.op_type and r["device"] == device
            assert r["max_abs"] >= 0 and r["rel"] >= 0
            if r["computed"]:
                assert r["rel"] < 1e-4 and not r["over"]
    assert any(r["computed"] and r["max_abs"] > 0 for r in table)  # f32 against f64 differs somewhere


def test_check_flags_nodes_over_the_tolerance():
    table = porta.check(str(MODELS / "mlp" / "model.onnx"), tolerance=1e-12)
    over = [r for r in table if r["over"]]
    assert over and all(r["rel"] > 1e-12 for r in over)
    assert all(not r["over"] for r in table if r["rel"] <= 1e-12)


def test_check_defaults_to_bundled_inputs_and_errors(tmp_path):
    assert porta.check(MODELS / "cnn" / "model.onnx")
    lonely = tmp_path / "model.onnx"
    lonely.write_bytes((MODELS / "mlp" / "model.onnx").read_bytes())
    with pytest.raises(porta.InvalidArgument, match="feeds are needed"):
        porta.check(lonely)
    with pytest.raises(porta.InvalidArgument, match="'x' was not given"):
        porta.check(lonely, feeds={})


def test_check_agrees_with_the_cli():
    """porta check (the CLI) prints the same table from the same code."""
    cli = SOURCE / "build" / "bin" / "porta"
    import os

    cli = os.environ.get("PORTA_CLI", str(cli))
    if not os.path.exists(cli):
        pytest.skip("no porta CLI at " + cli)
    path = str(MODELS / "cnn" / "model.onnx")
    out = subprocess.run([cli, "check", path], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in out.splitlines()[2:] if line and not line.startswith("ok")]
    table = porta.check(path)
    assert len(rows) == len(table)
    for row, r in zip(rows, table):
        assert row[0] == r["node"] and row[1] == r["op"]
        if row[3] == "-":
            assert not r["computed"]
        else:
            assert r["computed"] and float(row[3]) == pytest.approx(r["rel"], rel=0.01, abs=1e-9)


def test_exception_hierarchy_and_messages():
    kinds = ["InvalidModel", "ShapeError", "DTypeError", "DeviceMismatch", "Unsupported", "OutOfMemory",
             "BackendUnavailable", "BackendError", "InvalidArgument"]
    for k in kinds:
        cls = getattr(porta, k)
        assert issubclass(cls, porta.Error) and cls.__name__ == k and cls.__module__ == "porta"
    assert issubclass(porta.Error, RuntimeError)
    with pytest.raises(porta.ShapeError) as e:
        porta.ops.MatMul(np.ones((2, 3)), np.ones((4, 5)))
    assert str(e.value).startswith("[") and "3" in str(e.value) and "4" in str(e.value)
    with pytest.raises(porta.InvalidArgument, match="known"):
        porta.Tensor(np.ones(2), device="warp_drive:0")


def test_unavailable_backend_out_of_memory_and_unsupported():
    # cuda:99: either cuda is not built, or there is no hundredth device
    with pytest.raises(porta.BackendUnavailable, match="cuda"):
        porta.Session(MODELS / "mlp" / "model.onnx", device="cuda:99")
    with pytest.raises(porta.InvalidArgument, match="one cpu device, got 'cpu:7'"):
        porta.Session(MODELS / "mlp" / "model.onnx", device="cpu:7")
    missing = [d for d in porta.devices() if not d["available"]]
    if missing:
        with pytest.raises(porta.BackendUnavailable):
            porta.Session(MODELS / "mlp" / "model.onnx", device=missing[0]["device"]).run(
                None, {"x": np.ones((1, 64), np.float32)})
    with pytest.raises(porta.OutOfMemory, match="requested 4398046511104 bytes"):
        porta.ops.Expand(np.ones(1, np.float32), np.array([1 << 40], np.int64))  # 4 TiB
    with pytest.raises(porta.Unsupported, match=r"\[Cast\] to must be one of"):
        porta.ops.Cast(np.ones(3), to=8)  # ONNX's STRING
    with pytest.raises(porta.DTypeError, match=r"\[Relu\] input 0 must be one of .*got bool"):
        porta.ops.Relu(np.array([True, False]))


def test_import_does_not_shadow_porta_ops_helper():
    """python/porta_ops.py (the export helper) stays importable beside the package, and the
    source folder's package without its extension says where the built one is."""
    code = "import sys; sys.path.append(sys.argv[1]); import porta_ops, porta; print(porta.Session)"
    out = subprocess.run([sys.executable, "-c", code, str(SOURCE / "python")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    code = "import sys; sys.path.insert(0, sys.argv[1]); import porta"
    out = subprocess.run([sys.executable, "-c", code, str(SOURCE / "python")], capture_output=True, text=True)
    assert out.returncode != 0 and "PYTHONPATH=build/python" in out.stderr


def test_session_and_check_with_a_precision():
    """precision="bf16": the cnn's Convs compute in bf16 (the plan says so), its output stays
    f32 and near the f32 session's; check() reports each node's format and the first jump. On a
    CPU where oneDNN has no bf16 (no AVX-512) the plan says the products compute in f32, and the
    answer is the f32 session's."""
    path, feeds, _ = bundled("cnn")
    f32 = porta.Session(path)
    low = porta.Session(path, precision="bf16")
    assert low.precision == "bf16" and f32.precision == "f32"
    plan = low.plan(feeds)
    convs = [p for p in plan if p["op"] == "Conv"]
    assert convs
    in_f32 = "cpu computes bf16 products in f32" in convs[0]["precision_note"]
    want = "f32" if in_f32 else "bf16"
    assert all(p["precision"] == want for p in convs)
    if not in_f32:
        assert all("inside its kernel" in p["precision_note"] for p in convs)
    a, b = f32.run(None, feeds)[0], low.run(None, feeds)[0]
    assert b.dtype == np.float32 and b.shape == a.shape
    rel = np.abs(b - a).max() / np.abs(a).max()
    if in_f32:
        assert rel == 0
    else:
        assert 1e-6 < rel < 5e-2
    table = porta.check(path, feeds, precision="bf16", tolerance=1e-5)
    # Each Conv is fused into the BatchNormalization after it: that row carries the Conv's format.
    fused = [r for r in table if "Conv" in r["fused"]]
    assert fused and all(r["precision"] == want and r["computed"] for r in fused)
    jumps = [r for r in table if r["jump"]]
    if not in_f32:
        assert jumps and "Conv" in jumps[0]["fused"]
    assert all(not r["over"] for r in porta.check(path, feeds, precision="bf16"))  # 3e-2 by default
    with pytest.raises(porta.InvalidArgument, match="got 'fp8'"):
        porta.Session(path, precision="fp8")
    with pytest.raises(porta.InvalidArgument, match="got 'fp8'"):
        porta.check(path, feeds, precision="fp8")
