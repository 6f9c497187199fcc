"""porta.Session: bundled models against their saved PyTorch outputs, metadata, output
subsets, feed errors, placement and profile."""
import threading

import numpy as np
import pytest

import porta
from conftest import MODELS, available_devices, bundled

MODEL_NAMES = sorted(p.name for p in MODELS.iterdir() if (p / "model.onnx").exists() and (p / "outputs.txt").exists())


@pytest.mark.parametrize("device", available_devices())
@pytest.mark.parametrize("name", [n for n in MODEL_NAMES if n != "image_custom"])
def test_bundled_models_match_saved_outputs(name, device):
    path, feeds, expected = bundled(name)
    s = porta.Session(path, device=device)
    got = s.run(None, feeds)
    assert [o.name for o in s.outputs] == list(expected)
    for array, (out, want) in zip(got, expected.items()):
        assert isinstance(array, np.ndarray)
        assert array.shape == want.shape, out
        assert array.dtype == want.dtype, out
        np.testing.assert_allclose(array.astype(np.float64), want.astype(np.float64), rtol=2e-3, atol=2e-4, err_msg=out)


def test_mlp_against_numpy_float64(rng):
    """A model computed in numpy float64 from the model's own weights (onnx reads them)."""
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper

    path = str(MODELS / "mlp" / "model.onnx")
    m = onnx.load(path)
    weights = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in m.graph.initializer}
    x = rng.standard_normal((5, 64)).astype(np.float32)
    values = {"x": x.astype(np.float64)}
    from math import erf

    verf = np.vectorize(erf)
    for node in m.graph.node:
        ins = [values.get(n, weights.get(n)) for n in node.input]
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "Constant":
            out = numpy_helper.to_array(attrs["value"]).astype(np.float64)
        elif node.op_type == "Gemm":
            b = ins[1].T if attrs.get("transB", 0) else ins[1]
            out = ins[0] @ b + ins[2]
        elif node.op_type == "Div":
            out = ins[0] / ins[1]
        elif node.op_type == "Mul":
            out = ins[0] * ins[1]
        elif node.op_type == "Add":
            out = ins[0] + ins[1]
        elif node.op_type == "Erf":
            out = verf(ins[0])
        elif node.op_type == "LayerNormalization":
            mean = ins[0].mean(-1, keepdims=True)
            var = ((ins[0] - mean) ** 2).mean(-1, keepdims=True)
            out = (ins[0] - mean) / np.sqrt(var + attrs.get("epsilon", 1e-5)) * ins[1] + ins[2]
        else:
            pytest.fail(f"the numpy reference lacks {node.op_type}")
        values[node.output[0]] = out
    want = values[m.graph.output[0].name]
    (got,) = porta.Session(path).run(None, {"x": x})
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-4, atol=1e-5)


def test_inputs_outputs_metadata():
    s = porta.Session(MODELS / "attention" / "model.onnx")
    assert [i.name for i in s.inputs] == ["query", "keys"]
    assert [o.name for o in s.outputs] == ["context", "weights"]
    q = s.inputs[0]
    assert q.dtype == "f32" and q.numpy_dtype == np.float32
    assert len(q.shape) == 2 and q.shape[1] == 32
    assert not isinstance(q.shape[0], int)  # the dynamic batch: its name or None
    img = porta.Session(MODELS / "image" / "model.onnx").inputs[0]
    assert img.dtype == "u8" and img.shape[1:] == (32, 32, 3)
    assert repr(q) == f"ValueInfo(name='query', shape=({q.shape[0]!r}, 32), dtype='f32')"
    assert [i.name for i in s.get_inputs()] == ["query", "keys"]  # ONNX Runtime's spelling
    assert [o.name for o in s.get_outputs()] == ["context", "weights"]
    assert s.device == "cpu" and s.strict is False


def test_run_output_subset_and_order():
    path, feeds, expected = bundled("attention")
    s = porta.Session(path)
    (weights,) = s.run(["weights"], feeds)
    np.testing.assert_allclose(weights, expected["weights"], rtol=1e-4, atol=1e-5)
    weights2, context = s.run(["weights", "context"], feeds)
    np.testing.assert_array_equal(weights2, weights)
    np.testing.assert_allclose(context, expected["context"], rtol=1e-4, atol=1e-5)
    with pytest.raises(porta.InvalidArgument, match="no output 'nope'.*'context', 'weights'"):
        s.run(["nope"], feeds)
    assert s.run(outputs=[], feeds=feeds) == []


def test_run_keyword_arguments_and_dynamic_batch(rng):
    s = porta.Session(MODELS / "mlp" / "model.onnx")
    for batch in (1, 3, 0):
        x = rng.standard_normal((batch, 64)).astype(np.float32)
        (y,) = s.run(feeds={"x": x})
        assert y.shape == (batch, 16)


def test_outputs_are_fresh_arrays_each_run():
    path, feeds, _ = bundled("mlp")
    s = porta.Session(path)
    (a,) = s.run(None, feeds)
    keep = a.copy()
    (b,) = s.run(None, {"x": feeds["x"] * 2})
    np.testing.assert_array_equal(a, keep)  # the second run did not write into the first result
    assert not np.shares_memory(a, b)
    del s
    np.testing.assert_array_equal(a, keep)  # results outlive their session


@pytest.mark.parametrize("device", [d for d in available_devices() if d.startswith("vulkan")])
def test_later_runs_replay_and_match_recorded_runs(rng, device):
    """From the fourth run on a Vulkan session resubmits the work its third run recorded; every
    run's result is that of a session that records each run, and earlier results stay as
    they were."""
    path, feeds, _ = bundled("cnn")
    s = porta.Session(path, device=device)
    recorded = porta.Session(path, device=device, replay=False)
    name, x = next(iter(feeds.items()))
    kept = []
    for i in range(6):
        feed = {name: (x * rng.uniform(0.5, 2.0)).astype(x.dtype)}
        got = s.run(None, feed)
        assert s.replayed == (i >= 3), i
        assert s.replay_blocker == ""
        want = recorded.run(None, feed)
        assert not recorded.replayed
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
        kept.append(([a.copy() for a in got], got))
    for copies, arrays in kept:
        for c, a in zip(copies, arrays):
            np.testing.assert_array_equal(c, a)
    assert recorded.replay_blocker == "SessionOptions::replay is off"


def test_non_contiguous_feed_gives_the_contiguous_result():
    path, feeds, expected = bundled("mlp")
    x = feeds["x"]
    wide = np.zeros((x.shape[0], 2 * x.shape[1]), np.float32)
    wide[:, ::2] = x
    strided = wide[:, ::2]
    assert not strided.flags.c_contiguous
    (y,) = porta.Session(path).run(None, {"x": strided})
    np.testing.assert_allclose(y, expected["y"], rtol=2e-3, atol=2e-4)
    fortran = np.asfortranarray(x)
    (y2,) = porta.Session(path).run(None, {"x": fortran})
    np.testing.assert_allclose(y2, y, rtol=1e-6, atol=1e-6)


def test_feed_errors():
    path, feeds, _ = bundled("mlp")
    s = porta.Session(path)
    with pytest.raises(porta.InvalidArgument, match="'x'"):
        s.run(None, {})
    with pytest.raises(porta.DTypeError, match="f32.*f64|f64.*f32"):
        s.run(None, {"x": feeds["x"].astype(np.float64)})
    with pytest.raises(porta.ShapeError, match="64"):
        s.run(None, {"x": np.zeros((4, 63), np.float32)})
    with pytest.raises(porta.ShapeError):
        s.run(None, {"x": np.zeros((4,), np.float32)})
    with pytest.raises(porta.DTypeError, match="int16"):
        s.run(None, {"x": np.zeros((4, 64), np.int16)})
    with pytest.raises(porta.InvalidArgument, match="feeds should be a dict"):
        s.run(None, [feeds["x"]])
    with pytest.raises(porta.InvalidArgument, match="list of names"):
        s.run("y", feeds)


def test_model_errors(tmp_path):
    with pytest.raises(porta.InvalidModel):
        porta.Session(tmp_path / "missing.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07 certainly not a model")
    with pytest.raises(porta.InvalidModel):
        porta.Session(bad)
    with pytest.raises(porta.InvalidModel):
        porta.Session(b"\x01\x02\x03")
    with pytest.raises(porta.InvalidArgument, match="vulkan"):
        porta.Session(MODELS / "mlp" / "model.onnx", device="nosuchdevice:0")


def test_session_from_bytes_matches_file():
    path, feeds, expected = bundled("mlp")
    with open(path, "rb") as f:
        s = porta.Session(f.read())
    np.testing.assert_allclose(s.run(None, feeds)[0], expected["y"], rtol=2e-3, atol=2e-4)


@pytest.mark.parametrize("device", available_devices())
def test_placement_report(device):
    path, feeds, _ = bundled("cnn")
    s = porta.Session(path, device=device)
    plan = s.plan()
    assert plan, "a plan with no nodes"
    for p in plan:
        assert set(p) == {"node", "op", "device", "path", "reason", "fallback_bytes", "precision", "precision_note"}
        assert p["path"] in {"native", "composite", "fallback", "folded", "unsupported"}
        assert p["reason"]
    assert {"Conv", "MaxPool", "Gemm"} <= {p["op"] for p in plan}  # (Relu may be fused into Conv)
    assert s.plan(feeds) == plan
    if device == "cpu":
        assert all(p["path"] in {"native", "composite", "folded"} for p in plan)


def test_profile_lists_every_timed_node():
    path, feeds, _ = bundled("cnn")
    s = porta.Session(path, profile=True)
    s.run(None, feeds)
    prof = s.profile()
    assert prof and all(r["time_us"] >= 0 and r["device"] == "cpu" for r in prof)
    assert {"Conv"} <= {r["op"] for r in prof}
    assert all(isinstance(r["kernel"], str) for r in prof)


def test_run_releases_the_gil_and_concurrent_sessions_agree():
    path, feeds, expected = bundled("cnn")
    sessions = [porta.Session(path) for _ in range(3)]
    results, errors = {}, []

    def work(i):
        try:
            for _ in range(5):
                results[i] = sessions[i].run(None, feeds)[0]
        except Exception as e:  # collected and asserted on below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for r in results.values():
        np.testing.assert_allclose(r, expected["logits"], rtol=2e-3, atol=2e-4)


def test_one_session_from_two_threads_is_refused_or_serial():
    """The C++ Session runs one call at a time and refuses a concurrent one with
    InvalidArgument: from Python each call either completes or raises exactly that."""
    path, feeds, expected = bundled("cnn")
    s = porta.Session(path)
    outcomes = []

    def work():
        for _ in range(10):
            try:
                outcomes.append(s.run(None, feeds)[0])
            except porta.InvalidArgument as e:
                outcomes.append(e)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(outcomes) == 20
    for o in outcomes:
        if isinstance(o, Exception):
            assert "[session]" in str(o)
        else:
            np.testing.assert_allclose(o, expected["logits"], rtol=2e-3, atol=2e-4)


def test_run_as_tensors_keeps_results_on_the_device():
    path, feeds, expected = bundled("mlp")
    for device in available_devices():
        (t,) = porta.Session(path, device=device).run(None, feeds, as_tensors=True)
        assert isinstance(t, porta.Tensor) and t.device == device
        np.testing.assert_allclose(t.numpy(), expected["y"], rtol=2e-3, atol=2e-4)
