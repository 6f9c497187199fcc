"""Eager ops (porta.ops.<Name>) against numpy float64 references: broadcasting, size-0 and
size-1 shapes, attributes checked against the schema, plugin ops through load_plugin."""
import numpy as np
import pytest

import porta
from conftest import available_devices, plugin_dir

BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide}
BROADCAST_SHAPES = [
    ((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 5), (3, 1)), ((1,), (7,)), ((), (2, 3)),
    ((0, 3), (3,)), ((4, 0), (1, 1)), ((2, 3, 1), (1, 1, 5)),
]


def close(got, want, dtype):
    tol = {np.float32: 1e-5, np.float64: 1e-12}[dtype]
    got = np.asarray(got)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", list(BINARY))
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES)
def test_binary_broadcasting(rng, op, shapes, dtype):
    a = rng.standard_normal(shapes[0]).astype(dtype)
    b = (rng.standard_normal(shapes[1]) + (3 if op == "Div" else 0)).astype(dtype)
    got = getattr(porta.ops, op)(a, b)
    assert isinstance(got, porta.Tensor) and got.dtype == porta.Tensor(a).dtype
    close(got, BINARY[op](a.astype(np.float64), b.astype(np.float64)), dtype)


@pytest.mark.parametrize("device", available_devices())
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 5, 7), (0, 4, 3), (4, 0, 3), (17, 33, 9)])
def test_matmul(rng, m, k, n, device):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    got = porta.ops.MatMul(porta.Tensor(a, device=device), porta.Tensor(b, device=device))
    assert got.device == device
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=1e-4, atol=1e-4 * max(k, 1))


def test_matmul_batched_broadcast_and_strided(rng):
    a = rng.standard_normal((2, 1, 4, 6))
    b = rng.standard_normal((3, 6, 5))
    close(porta.ops.MatMul(a, b), a @ b, np.float64)
    at = rng.standard_normal((6, 4)).T  # non-contiguous numpy input
    close(porta.ops.MatMul(at, b[0]), at @ b[0], np.float64)


def test_attributes_as_keywords(rng):
    x = rng.standard_normal((3, 4, 5))
    for axis in (0, 1, -1):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        close(porta.ops.Softmax(x, axis=axis), e / e.sum(axis=axis, keepdims=True), np.float64)
    close(porta.ops.Transpose(x, perm=[2, 0, 1]), x.transpose(2, 0, 1), np.float64)
    close(porta.ops.LeakyRelu(x, alpha=0.3), np.where(x > 0, x, 0.3 * x), np.float64)
    close(porta.ops.LeakyRelu(x, alpha=2), np.where(x > 0, x, 2 * x), np.float64)  # an int for a float
    close(porta.ops.Relu(x[:0]), x[:0], np.float64)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8, np.uint8, np.float16])
def test_other_dtypes(rng, dtype):
    a = rng.integers(0, 10, (3, 1, 4)).astype(dtype)
    b = rng.integers(0, 10, (5, 1)).astype(dtype)
    got = porta.ops.Add(a, b)
    assert got.numpy().dtype == dtype
    np.testing.assert_array_equal(got.numpy(), (a.astype(np.int64) + b.astype(np.int64)).astype(dtype))
    got = porta.ops.Mul(a, b).numpy()
    np.testing.assert_array_equal(got, (a.astype(np.int64) * b.astype(np.int64)).astype(dtype))


def test_variadic_inputs(rng):
    parts = [rng.standard_normal((n, 3)) for n in (2, 0, 1, 5)]
    close(porta.ops.Concat(*parts, axis=0), np.concatenate(parts, axis=0), np.float64)
    close(porta.ops.Sum(*parts[:1] * 3), parts[0] * 3, np.float64)
    with pytest.raises(porta.InvalidArgument, match=r"Concat takes at least 1 input\(s\), got 0"):
        porta.ops.Concat(axis=0)


def test_several_outputs_and_optional_inputs(rng):
    x = rng.standard_normal((4, 6))
    values, indices = porta.ops.TopK(x, np.array([3], np.int64), axis=1)
    want = np.sort(x, axis=1)[:, ::-1][:, :3]
    close(values, want, np.float64)
    np.testing.assert_array_equal(np.take_along_axis(x, indices.numpy(), 1), values.numpy())
    assert indices.dtype == "i64"
    clipped = porta.ops.Clip(x, None, np.array(0.5))  # absent min
    close(clipped, np.minimum(x, 0.5), np.float64)


def test_unknown_op_and_bad_calls():
    with pytest.raises(AttributeError, match="unknown op 'NoSuchOp'"):
        porta.ops.NoSuchOp
    with pytest.raises(porta.InvalidArgument, match="unknown op 'NoSuchOp'"):
        porta.ops.call("NoSuchOp", np.ones(2))
    with pytest.raises(porta.InvalidArgument, match=r"MatMul takes 2 input\(s\), got 1"):
        porta.ops.MatMul(np.ones((2, 2)))
    # porta-internal inputs (a MatMul's fused bias) are set by sessions, not passed by callers
    with pytest.raises(porta.InvalidArgument, match=r"MatMul takes 2 input\(s\), got 3"):
        porta.ops.MatMul(np.ones((2, 2)), np.ones((2, 2)), np.ones(2))
    with pytest.raises(porta.InvalidArgument, match=r"Relu takes 1 input\(s\), got 3"):
        porta.ops.Relu(np.ones(2), np.ones(2), np.ones(2))
    with pytest.raises(porta.InvalidArgument, match="Softmax has no attribute 'axes'; its attributes: axis"):
        porta.ops.Softmax(np.ones(3), axes=0)
    with pytest.raises(porta.InvalidArgument, match="'axis' should be an int, got float 1.5"):
        porta.ops.Softmax(np.ones(3), axis=1.5)
    with pytest.raises(porta.InvalidArgument, match="'perm' should be a list of ints"):
        porta.ops.Transpose(np.ones((2, 2)), perm="10")
    with pytest.raises(porta.InvalidArgument, match="'alpha' should be a float, got str"):
        porta.ops.LeakyRelu(np.ones(3), alpha="big")
    with pytest.raises(porta.ShapeError):
        porta.ops.MatMul(np.ones((2, 3)), np.ones((4, 5)))
    with pytest.raises(porta.ShapeError):
        porta.ops.Add(np.ones((2, 3)), np.ones((4,)))
    with pytest.raises(porta.DTypeError):
        porta.ops.Add(np.ones(3, np.float32), np.ones(3, np.float64))


def test_ops_namespace_lists_the_registry():
    names = porta.ops.names()
    assert {"MatMul", "Conv", "Softmax"} <= set(names)
    assert "MatMul" in dir(porta.ops)
    op = porta.ops.find("Softmax")
    assert op.name == "Softmax" and op.attributes == {"axis": "int"}
    assert "axis" in op.signature and repr(op) == "porta.ops.Softmax"


@pytest.mark.parametrize("device", [d for d in available_devices() if d != "cpu"])
def test_inputs_on_different_devices_are_refused(device):
    with pytest.raises(porta.DeviceMismatch):
        porta.ops.Add(porta.Tensor(np.ones(3, np.float32), device=device), np.ones(3, np.float32))


def test_plugin_ops_with_attributes(rng):
    info = porta.load_plugin(str(plugin_dir() / "porta_test_plugin_domains.so"))
    assert info["name"] == "test_domains"
    assert "com.stylegan2::FusedLeakyReLU" in info["ops"]
    assert porta.load_plugin(str(plugin_dir() / "porta_test_plugin_domains.so"))["name"] == "test_domains"
    x = rng.standard_normal((2, 3, 4, 5))
    bias = rng.standard_normal(3)
    for slope, scale in ((0.2, 2 ** 0.5), (0.05, 3.0)):
        kwargs = {} if slope == 0.2 else {"negative_slope": slope, "scale": scale}
        got = porta.ops.call("com.stylegan2::FusedLeakyReLU", x.astype(np.float32), bias.astype(np.float32), **kwargs)
        v = x + bias.reshape(1, 3, 1, 1)
        close(got, np.where(v > 0, v, slope * v) * scale, np.float32)
    assert porta.ops.FusedLeakyReLU.name == "com.stylegan2::FusedLeakyReLU"  # plain name: the only domain
    with pytest.raises(porta.InvalidArgument, match="no attribute 'slope'; its attributes: negative_slope, scale"):
        porta.ops.FusedLeakyReLU(x, bias, slope=1.0)


def test_plugin_op_and_plugin_errors(rng):
    info = porta.load_plugin(str(plugin_dir() / "porta_test_plugin_good.so"))
    assert info["name"] == "test_good" and "com.porta.test::TestNegate" in info["ops"]
    x = rng.standard_normal((3, 7)).astype(np.float32)
    close(porta.ops.TestNegate(x), -x.astype(np.float64), np.float32)
    with pytest.raises(porta.Error, match="ABI|abi"):
        porta.load_plugin(str(plugin_dir() / "porta_test_plugin_abi99.so"))
    with pytest.raises(porta.Error):
        porta.load_plugin(str(plugin_dir() / "no_such_plugin.so"))
