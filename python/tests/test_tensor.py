"""porta.Tensor: numpy round trips for every dtype, memory sharing, devices, DLPack with numpy
and torch (zero copy checked by pointers and by writes seen on the other side)."""
import gc

import numpy as np
import pytest

import porta
from conftest import MODELS, available_devices

NUMPY_DTYPES = {
    np.float32: "f32", np.float64: "f64", np.float16: "f16", np.int64: "i64", np.int32: "i32",
    np.int8: "i8", np.uint8: "u8", np.bool_: "bool",
}
SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 0, 3), (1, 1, 1), (2, 3, 5, 7)]


def random_array(rng, shape, dtype):
    if dtype == np.bool_:
        return np.asarray(rng.integers(0, 2, shape).astype(bool))
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.asarray(rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True))
    return np.asarray((rng.standard_normal(shape) * 100).astype(dtype))


@pytest.mark.parametrize("dtype", list(NUMPY_DTYPES))
@pytest.mark.parametrize("shape", SHAPES)
def test_numpy_round_trip(rng, dtype, shape):
    a = random_array(rng, shape, dtype)
    t = porta.Tensor(a)
    assert t.shape == shape and t.dtype == NUMPY_DTYPES[dtype] and t.device == "cpu"
    b = t.numpy()
    assert b.dtype == a.dtype and b.shape == a.shape
    np.testing.assert_array_equal(b, a)
    np.testing.assert_array_equal(np.asarray(t), a)
    if a.size:
        assert np.shares_memory(a, b)


def test_tensor_borrows_numpy_memory_both_ways():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = porta.Tensor(a)
    assert t.data_ptr() == a.ctypes.data
    a[1, 2] = -5
    assert t.numpy()[1, 2] == -5
    b = t.numpy()
    b[0, 0] = 42
    assert a[0, 0] == 42


def test_tensor_keeps_the_array_alive():
    a = np.arange(1000, dtype=np.float64)
    t = porta.Tensor(a)
    del a
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), np.arange(1000, dtype=np.float64))
    b = t.numpy()
    del t
    gc.collect()
    np.testing.assert_array_equal(b, np.arange(1000, dtype=np.float64))


def test_non_contiguous_and_unusual_numpy_layouts(rng):
    a = rng.standard_normal((6, 8)).astype(np.float32)
    cases = {
        "columns": a[:, ::3],
        "transposed": a.T,
        "reversed": a[::-1],  # negative strides: copied
        "broadcast": np.broadcast_to(a[:1], (4, 8)),  # stride 0
        "big-endian": a.astype(">f4"),
        "fortran": np.asfortranarray(a),
    }
    for name, view in cases.items():
        t = porta.Tensor(view)
        assert t.shape == view.shape, name
        np.testing.assert_array_equal(t.numpy(), view, err_msg=name)
        np.testing.assert_array_equal(t.contiguous().numpy(), view, err_msg=name)
    strided = porta.Tensor(a[:, ::3])
    assert not strided.is_contiguous() and strided.strides == (8, 3)
    assert strided.data_ptr() == a.ctypes.data  # a view, not a copy


def test_read_only_arrays_are_not_made_writable():
    a = np.arange(6, dtype=np.float32)
    a.flags.writeable = False
    t = porta.Tensor(a)
    assert t.data_ptr() != a.ctypes.data  # copied: t.numpy() is writable
    t.numpy()[0] = 5
    assert a[0] == 0
    view = porta.ops.Reshape(a, np.array([2, 3], np.int64)).numpy()
    view[0, 0] = 7
    assert a[0] == 0
    # a session's feeds never come back to the caller: read-only ones are read in place
    path = str(MODELS / "mlp" / "model.onnx")
    x = np.ones((2, 64), np.float32)
    x.flags.writeable = False
    (y,) = porta.Session(path).run(None, {"x": x})
    assert y.shape == (2, 16)


def test_unsupported_numpy_dtypes_are_refused():
    for dtype in (np.int16, np.uint16, np.uint32, np.uint64, np.complex64):
        with pytest.raises(porta.DTypeError, match="has no porta dtype"):
            porta.Tensor(np.zeros(3, dtype))
    with pytest.raises(porta.DTypeError):
        porta.Tensor(np.array(["a", "b"]))


def test_python_values_and_scalars():
    t = porta.Tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.shape == (2, 2) and t.dtype == "f64"
    s = porta.Tensor(np.float32(2.5))
    assert s.shape == () and s.numpy() == np.float32(2.5)
    with pytest.raises(TypeError):
        len(s)
    assert len(t) == 2


def test_bf16_widens_to_float32_and_cast():
    a = np.array([1.0, -2.5, 3.140625, 1e30], np.float32)  # exactly representable in bf16 except 1e30
    t = porta.Tensor(a).cast("bf16")
    assert t.dtype == "bf16"
    back = t.numpy()
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back[:3], a[:3])
    np.testing.assert_allclose(back[3], a[3], rtol=2 ** -8)
    with pytest.raises(porta.DTypeError):
        porta.Tensor(a).cast("f128")


@pytest.mark.parametrize("device", [d for d in available_devices() if d != "cpu"])
def test_device_copies(rng, device):
    a = rng.standard_normal((3, 17)).astype(np.float32)
    t = porta.Tensor(a, device=device)
    assert t.device == device
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(t.to("cpu").numpy(), a)
    back = porta.Tensor(t)  # a porta.Tensor stays where it is, unless a device is named
    assert back.device == device and porta.Tensor(t, device="cpu").device == "cpu"
    with pytest.raises(porta.DeviceMismatch, match="cpu"):
        t.__dlpack__()
    with pytest.raises(porta.DeviceMismatch):
        t.data_ptr()


def test_numpy_from_dlpack_shares_porta_memory():
    source = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = porta.Tensor(source)
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)  # numpy 1.24 marks what it takes by DLPack read-only
    assert a.ctypes.data == t.data_ptr() == source.ctypes.data
    source[1, 1] = 99
    assert a[1, 1] == 99
    del t, source
    gc.collect()
    assert a[1, 1] == 99 and a.sum() == 0 + 1 + 2 + 3 + 99 + 5


def test_porta_from_numpy_dlpack():
    a = np.arange(10, dtype=np.float64)
    t = porta.from_dlpack(a)
    assert t.data_ptr() == a.ctypes.data
    a[3] = -1
    assert t.numpy()[3] == -1
    del a
    gc.collect()
    assert t.numpy()[3] == -1
    strided = np.arange(20, dtype=np.int64).reshape(4, 5)[:, 1::2]
    ts = porta.from_dlpack(strided)
    assert ts.strides == (5, 2)
    np.testing.assert_array_equal(ts.numpy(), strided)
