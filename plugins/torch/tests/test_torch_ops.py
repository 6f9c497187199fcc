"""torch.ops.porta.*: porta's CPU kernels against PyTorch composites of the same formulas, for
fresh random inputs (printed seed), and wrong inputs raising Python exceptions that carry
porta's message. Run with Debian's python3-torch:
    PORTA_TORCH_LIBRARY=build/lib/libporta_torch.so /usr/bin/python3 -m unittest test_torch_ops
"""
import math
import os
import random
import unittest

import torch

torch.ops.load_library(os.environ["PORTA_TORCH_LIBRARY"])
porta = torch.ops.porta

SEED = int(os.environ.get("PORTA_TEST_SEED", random.randrange(1 << 31)))
print(f"test_torch_ops: seed {SEED}")
torch.manual_seed(SEED)


def rms_norm_ref(x, scale, eps):
    x64 = x.double()
    return (x64 / torch.sqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * scale.double())


def sdpa_ref(q, k, v, mask=None, scale=None, causal=False):
    q, k, v = q.double(), k.double(), v.double()
    s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    scores = q @ k.transpose(-2, -1) * s
    if mask is not None:
        scores = scores + mask.double()
    if causal:
        hidden = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).triu(1)
        scores = scores.masked_fill(hidden, float("-inf"))
    return torch.softmax(scores, -1) @ v


def rotary_ref(x, cos, sin, interleaved):
    x, cos, sin = x.double(), cos.double(), sin.double()
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).flatten(-2)
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


def normalize_ref(x, mean, std, layout):
    if layout == "NHWC":
        x = x.permute(0, 3, 1, 2)
    m = torch.tensor(mean, dtype=torch.float64).view(1, -1, 1, 1)
    s = torch.tensor(std, dtype=torch.float64).view(1, -1, 1, 1)
    return (x.double() / 255.0 - m) / s


class PortaTorchOps(unittest.TestCase):
    def close(self, got, want, tol=1e-5):
        self.assertEqual(tuple(got.shape), tuple(want.shape))
        self.assertFalse(torch.isnan(got).any() and not torch.isnan(want).any(), "NaN in result")
        err = (got.double() - want.double()).abs().max().item() if got.numel() else 0.0
        self.assertLessEqual(err, tol * (1 + want.double().abs().max().item() if want.numel() else 1),
                             f"max error {err}")

    def test_rms_norm(self):
        for shape, eps in [((3, 17), 1e-6), ((2, 5, 33), 1e-3), ((1,), 0.5), ((4, 1031), 1e-6), ((0, 8), 1e-6)]:
            x = torch.randn(shape)
            scale = torch.randn(shape[-1])
            self.close(porta.RmsNorm(x, scale, epsilon=eps), rms_norm_ref(x, scale, eps))
        x = torch.randn(6, 10).t()  # non-contiguous input
        scale = torch.randn(6)
        self.close(porta.RmsNorm(x, scale), rms_norm_ref(x, scale, 1e-6))
        x64 = torch.randn(3, 9, dtype=torch.float64)
        got = porta.RmsNorm(x64, torch.ones(9, dtype=torch.float64))
        self.assertEqual(got.dtype, torch.float64)
        self.close(got, rms_norm_ref(x64, torch.ones(9, dtype=torch.float64), 1e-6), 1e-12)

    def test_bias_gelu(self):
        for approx in ["none", "tanh"]:
            for shape in [(4, 7), (2, 3, 64), (1,)]:
                x, b = torch.randn(shape), torch.randn(shape[-1])
                want = torch.nn.functional.gelu((x + b).double(), approximate=approx)
                self.close(porta.BiasGelu(x, b, approximate=approx), want)

    def test_scaled_dot_product_attention(self):
        q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 4)
        self.close(porta.ScaledDotProductAttention(q, k, v), sdpa_ref(q, k, v))
        mask = torch.randn(1, 1, 5, 7)
        self.close(porta.ScaledDotProductAttention(q, k, v, mask, scale=0.3),
                   sdpa_ref(q, k, v, mask, scale=0.3))
        qs = torch.randn(1, 2, 6, 8)
        ks, vs = torch.randn(1, 2, 6, 8), torch.randn(1, 2, 6, 8)
        self.close(porta.ScaledDotProductAttention(qs, ks, vs, causal=True), sdpa_ref(qs, ks, vs, causal=True))

    def test_rotary_embedding(self):
        for interleaved in [False, True]:
            x = torch.randn(2, 3, 5, 16)
            angles = torch.randn(5, 8)
            cos, sin = angles.cos(), angles.sin()
            self.close(porta.RotaryEmbedding(x, cos, sin, interleaved=interleaved),
                       rotary_ref(x, cos, sin, interleaved))

    def test_normalize_image(self):
        mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
        x = torch.randint(0, 256, (2, 3, 5, 7), dtype=torch.uint8)
        self.close(porta.NormalizeImage(x, mean, std), normalize_ref(x, mean, std, "NCHW"))
        xh = torch.randint(0, 256, (1, 4, 6, 3), dtype=torch.uint8)
        got = porta.NormalizeImage(xh, mean, std, layout="NHWC")
        self.assertEqual(tuple(got.shape), (1, 3, 4, 6))
        self.close(got, normalize_ref(xh, mean, std, "NHWC"))

    def test_composite_kernels_run_where_porta_does_not(self):
        # Meta tensors have no porta kernel: the CompositeImplicitAutograd kernels answer.
        x = torch.empty(4, 9, device="meta")
        self.assertEqual(porta.RmsNorm(x, torch.empty(9, device="meta")).shape, (4, 9))
        self.assertEqual(porta.BiasGelu(x, torch.empty(9, device="meta")).shape, (4, 9))
        q = torch.empty(1, 2, 3, 8, device="meta")
        self.assertEqual(porta.ScaledDotProductAttention(q, q, q).shape, (1, 2, 3, 8))

    def test_wrong_inputs_raise_with_porta_message(self):
        with self.assertRaisesRegex(RuntimeError, r"\[RmsNorm\].*Scale"):
            porta.RmsNorm(torch.randn(3, 5), torch.randn(4))
        with self.assertRaisesRegex(RuntimeError, r"\[RmsNorm\]"):
            porta.RmsNorm(torch.randn(3, 5), torch.randn(5, dtype=torch.float64))
        with self.assertRaisesRegex(RuntimeError, r"\[BiasGelu\].*approximate"):
            porta.BiasGelu(torch.randn(3, 5), torch.randn(5), approximate="fast")
        with self.assertRaisesRegex(RuntimeError, r"\[NormalizeImage\].*mean"):
            porta.NormalizeImage(torch.zeros(1, 3, 2, 2, dtype=torch.uint8), [0.5, 0.5], [1.0, 1.0, 1.0])
        with self.assertRaisesRegex(RuntimeError, r"\[RotaryEmbedding\]"):
            porta.RotaryEmbedding(torch.randn(1, 1, 4, 7), torch.randn(4, 3), torch.randn(4, 3))
        with self.assertRaisesRegex(RuntimeError, r"\[ScaledDotProductAttention\]"):
            porta.ScaledDotProductAttention(torch.randn(1, 1, 2, 4), torch.randn(1, 1, 3, 5), torch.randn(1, 1, 3, 4))
        with self.assertRaisesRegex(RuntimeError, r"porta does not support"):
            porta.RmsNorm(torch.zeros(2, 2, dtype=torch.complex64), torch.zeros(2, dtype=torch.complex64))


if __name__ == "__main__":
    unittest.main()
