"""DLPack with torch 1.13 both ways: zero copy checked by data pointers and by writes seen on
the other side, the producer kept alive, strided views, bf16, and what is refused."""
import gc

import numpy as np
import pytest

import porta

torch = pytest.importorskip("torch")
import torch.utils.dlpack  # noqa: E402

TORCH_DTYPES = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int64: "i64", torch.int32: "i32", torch.int8: "i8", torch.uint8: "u8",
}


@pytest.mark.parametrize("dtype", list(TORCH_DTYPES))
def test_torch_to_porta_zero_copy(dtype):
    x = (torch.randn(4, 5) * 50).to(dtype)
    t = porta.from_dlpack(x)
    assert t.dtype == TORCH_DTYPES[dtype] and t.shape == (4, 5)
    assert t.data_ptr() == x.data_ptr()
    x[2, 3] = 7
    got = t.numpy()
    assert got[2, 3] == 7
    np.testing.assert_array_equal(got, x.to(torch.float32 if dtype == torch.bfloat16 else dtype).numpy())
    # through the capsule of torch 1.13's to_dlpack too
    t2 = porta.from_dlpack(torch.utils.dlpack.to_dlpack(x))
    assert t2.data_ptr() == x.data_ptr()


def test_porta_to_torch_zero_copy_and_lifetime():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = porta.Tensor(a)
    x = torch.utils.dlpack.from_dlpack(t)
    assert x.data_ptr() == t.data_ptr() == a.ctypes.data
    x[0, 1] = 100
    assert a[0, 1] == 100 and t.numpy()[0, 1] == 100
    del t, a
    gc.collect()
    assert x[0, 1].item() == 100 and x.sum().item() == sum(range(12)) - 1 + 100
    # a capsule can be taken once
    cap = porta.Tensor(np.ones(3, np.float32)).__dlpack__()
    torch.utils.dlpack.from_dlpack(cap)
    with pytest.raises(porta.InvalidArgument, match="can be taken once"):
        porta.from_dlpack(cap)


def test_torch_strided_and_bf16_round_trip():
    x = torch.randn(6, 8)
    view = x.t()[1:, ::2]
    t = porta.from_dlpack(view)
    assert t.data_ptr() == view.data_ptr()
    assert t.strides == tuple(view.stride())
    np.testing.assert_array_equal(t.numpy(), view.numpy())
    y = torch.utils.dlpack.from_dlpack(t)
    assert y.stride() == view.stride() and y.data_ptr() == view.data_ptr()
    torch.testing.assert_close(y, view)
    b = torch.randn(5).to(torch.bfloat16)
    back = torch.utils.dlpack.from_dlpack(porta.from_dlpack(b))
    assert back.dtype == torch.bfloat16 and torch.equal(back, b)


def test_torch_inputs_to_ops_and_sessions_without_copies():
    x = torch.randn(3, 4, dtype=torch.float64)
    y = porta.ops.Relu(x)
    np.testing.assert_array_equal(y.numpy(), np.maximum(x.numpy(), 0))


def test_dlpack_refusals():
    with pytest.raises(porta.InvalidArgument, match="__dlpack__"):
        porta.from_dlpack([1, 2, 3])
    with pytest.raises(porta.DTypeError, match="no porta dtype"):
        porta.from_dlpack(torch.zeros(3, dtype=torch.int16))
    with pytest.raises(porta.DTypeError, match="no porta dtype"):
        porta.from_dlpack(torch.zeros(3, dtype=torch.complex64))
