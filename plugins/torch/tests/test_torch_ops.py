"""torch.ops.porta.*: every op of porta's registry, plugins' included, against float64
references written with torch's own ops, for fresh random inputs (printed seed) and edge
shapes; gradients through the ops' composites (gradcheck in float64); errors carrying porta's
message. Run with Debian's python3-torch (ctest sets both variables):
    PORTA_TORCH_LIBRARY=build/lib/libporta_torch.so \
    PORTA_PLUGIN_PATH=build/torch_test_plugins/libexample_swish.so:build/test_plugins/porta_test_plugin_domains.so \
    /usr/bin/python3 -m unittest test_torch_ops
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


def fused_leaky_relu_ref(x, b, slope=0.2, scale=math.sqrt(2.0)):
    shape = [1, -1] + [1] * (x.dim() - 2)
    return torch.nn.functional.leaky_relu(x.double() + b.double().view(shape), slope) * scale


class Checks(unittest.TestCase):
    def close(self, got, want, tol=1e-5):
        self.assertEqual(tuple(got.shape), tuple(want.shape))
        self.assertFalse(torch.isnan(got).any() and not torch.isnan(want).any(), "NaN in result")
        err = (got.double() - want.double()).abs().max().item() if got.numel() else 0.0
        self.assertLessEqual(err, tol * (1 + want.double().abs().max().item() if want.numel() else 1),
                             f"max error {err}")


class BuiltinOps(Checks):
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
        self.close(porta.ScaledDotProductAttention(q, k, v, mask, scale=0.3), sdpa_ref(q, k, v, mask, scale=0.3))
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
        self.close(porta.NormalizeImage(x, mean=mean, std=std), normalize_ref(x, mean, std, "NCHW"))
        xh = torch.randint(0, 256, (1, 4, 6, 3), dtype=torch.uint8)
        got = porta.NormalizeImage(xh, mean=mean, std=std, layout="NHWC")
        self.assertEqual(tuple(got.shape), (1, 3, 4, 6))
        self.close(got, normalize_ref(xh, mean, std, "NHWC"))

    def test_onnx_ops_edge_shapes(self):
        # Broadcast, size 0 and 1, odd sizes, non-contiguous and expanded (stride 0) inputs.
        for a, b in [(torch.randn(3, 1, 5), torch.randn(4, 1)), (torch.randn(0, 3), torch.randn(3)),
                     (torch.randn(1), torch.randn(7, 1)), (torch.randn(9, 7).t(), torch.randn(9)),
                     (torch.randn(5, 1).expand(5, 6), torch.randn(6)[::2].repeat(2))]:
            self.close(porta.Add(a, b), a.double() + b.double())
            self.close(porta.Mul(a, b), a.double() * b.double())
        x = torch.randn(4, 6, dtype=torch.float64)[:, ::2]  # non-contiguous
        self.close(porta.Softmax(x, axis=0), torch.softmax(x, 0), 1e-12)
        self.close(porta.Softmax(x), torch.softmax(x, -1), 1e-12)
        a, b = torch.randn(2, 5, 3), torch.randn(7, 3).t()
        self.close(porta.MatMul(a, b), a.double() @ b.double(), 1e-5)
        self.close(porta.Transpose(a, perm=[2, 0, 1]), a.permute(2, 0, 1))
        self.close(porta.Transpose(a), a.permute(2, 1, 0))

    def test_variadic_inputs_and_several_outputs(self):
        parts = [torch.randn(2, n) for n in (3, 1, 0, 4)]
        self.close(porta.Concat(parts, axis=1), torch.cat(parts, 1))
        x = torch.randn(3, 11)
        values, indices = porta.TopK(x, torch.tensor([4]), axis=1)
        want = torch.topk(x.double(), 4, dim=1)
        self.close(values, want.values)
        self.assertEqual(indices.dtype, torch.int64)
        self.assertTrue(torch.equal(indices, want.indices))

    def test_variadic_outputs(self):
        # The count comes from Split's num_outputs attribute.
        x = torch.randn(7, 3)
        parts = porta.Split(x, torch.tensor([2, 5]), num_outputs=2)
        self.assertEqual(len(parts), 2)
        for got, want in zip(parts, torch.split(x, [2, 5])):
            self.close(got, want)
        parts = porta.Split(x, axis=1, num_outputs=3)
        self.assertEqual([tuple(p.shape) for p in parts], [(7, 1)] * 3)
        self.close(parts[2], x[:, 2:])

    def test_optional_inputs(self):
        x = torch.randn(5, 6)
        self.close(porta.Clip(x), x)
        self.close(porta.Clip(x, torch.tensor(-0.5)), x.clamp(min=-0.5))
        self.close(porta.Clip(x, None, torch.tensor(0.25)), x.clamp(max=0.25))

    def test_attribute_types(self):
        # Tensor, floats and ints attributes (Constant), strings (LSTM's activations).
        v = torch.randn(3, dtype=torch.float64)
        self.assertTrue(torch.equal(porta.Constant(value=v), v))
        self.assertTrue(torch.equal(porta.Constant(value_floats=[1.5, -2.0]), torch.tensor([1.5, -2.0])))
        self.assertTrue(torch.equal(porta.Constant(value_ints=[3, 4]), torch.tensor([3, 4])))
        x, w, r = torch.randn(2, 1, 3), torch.randn(1, 8, 3), torch.randn(1, 8, 2)
        default = porta.LSTM(x, w, r, hidden_size=2)
        named = porta.LSTM(x, w, r, hidden_size=2, activations=["Sigmoid", "Tanh", "Tanh"])
        self.assertEqual(len(named), 3)
        for a, b in zip(default, named):
            self.assertTrue(torch.equal(a, b))
        with self.assertRaisesRegex(RuntimeError, r"\[LSTM\].*got Foo"):
            porta.LSTM(x, w, r, hidden_size=2, activations=["Foo", "Tanh", "Tanh"])

    def test_outputs_do_not_share_input_memory(self):
        # Reshape-like ops: the output must not follow later writes to the input or its freeing.
        x = torch.randn(4, 6)
        want = x.clone().reshape(3, 8)
        y = porta.Reshape(x, torch.tensor([3, -1]))
        x.fill_(7.0)
        del x
        self.assertTrue(torch.equal(y, want))

    def test_integer_and_bool_tensors(self):
        a = torch.randint(-50, 50, (4, 5), dtype=torch.int32)
        b = torch.randint(-50, 50, (5,), dtype=torch.int32)
        got = porta.Add(a, b)
        self.assertEqual(got.dtype, torch.int32)
        self.assertTrue(torch.equal(got, a + b))
        c = torch.rand(4, 5) > 0.5
        self.assertTrue(torch.equal(porta.Where(c, a.double(), b.double()), torch.where(c, a, b).double()))


class PluginOps(Checks):
    def test_plugin_op_by_plain_and_domain_name(self):
        x = torch.randn(3, 17)
        want = x.double() * torch.sigmoid(1.5 * x.double())
        self.close(porta.ScaledSwish(x, alpha=1.5), want)
        self.close(porta.com_example__ScaledSwish(x, alpha=1.5), want)
        self.close(porta.ScaledSwish(x), x.double() * torch.sigmoid(x.double()))
        self.close(porta.ScaledSwish(torch.randn(0, 4)), torch.zeros(0, 4, dtype=torch.float64))
        xt = torch.randn(5, 8).t()
        self.close(porta.ScaledSwish(xt), xt.double() * torch.sigmoid(xt.double()))

    def test_plugin_op_with_bias_and_attributes(self):
        for shape in [(2, 3, 4, 5), (1, 1, 1, 1), (3, 7), (2, 5, 3, 3)]:
            for dtype in [torch.float32, torch.float64]:
                x, b = torch.randn(shape, dtype=dtype), torch.randn(shape[1], dtype=dtype)
                self.close(porta.FusedLeakyReLU(x, b), fused_leaky_relu_ref(x, b))
                self.close(porta.com_stylegan2__FusedLeakyReLU(x, b, negative_slope=0.1, scale=2.0),
                           fused_leaky_relu_ref(x, b, 0.1, 2.0))

    def test_name_clash_between_domains(self):
        # ONNX's LeakyRelu keeps the plain name; the plugin's (Y = 3 X) is reached by its domain.
        x = torch.randn(4, 6)
        self.close(porta.LeakyRelu(x), torch.nn.functional.leaky_relu(x.double(), 0.01))
        self.close(porta.com_bad__LeakyRelu(x), 3 * x.double())

    def test_plugin_loaded_later(self):
        folder = os.environ["PORTA_TORCH_TEST_PLUGINS"]
        self.assertFalse(hasattr(porta, "com_porta_test__TestNegate"))
        added = porta.load_plugin(os.path.join(folder, "porta_test_plugin_good.so"))
        self.assertEqual(sorted(added), ["TestNegate", "com_porta_test__TestNegate"])
        x = torch.randn(4, 3)
        self.close(porta.TestNegate(x), -x.double())
        with self.assertRaisesRegex(RuntimeError, r"ABI version"):
            porta.load_plugin(os.path.join(folder, "porta_test_plugin_abi99.so"))
        with self.assertRaisesRegex(RuntimeError, r"no_such_plugin\.so"):
            porta.load_plugin(os.path.join(folder, "no_such_plugin.so"))

    def test_every_registered_op_is_bound(self):
        table = porta._op_table()
        unbound = [e for e in table if e.startswith("!")]
        self.assertEqual(unbound, [])
        bound = dict(e.split("=", 1) for e in table)
        for name in ["Add", "RmsNorm", "ai_porta__RmsNorm", "ScaledSwish", "com_example__ScaledSwish",
                     "com_stylegan2__FusedLeakyReLU", "com_bad__LeakyRelu", "LeakyRelu"]:
            self.assertIn(name, bound)
        self.assertEqual(bound["com_bad__LeakyRelu"], "com.bad::LeakyRelu")
        self.assertEqual(bound["LeakyRelu"], "LeakyRelu")
        self.assertEqual(bound["RmsNorm"], "ai.porta::RmsNorm")
        for name in bound:
            self.assertTrue(callable(getattr(porta, name)), name)


class Gradients(Checks):
    def check(self, fn, *inputs):
        self.assertTrue(torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-6, rtol=1e-5))

    def randn(self, *shape):
        return torch.randn(*shape, dtype=torch.float64, requires_grad=True)

    def test_gradcheck_builtin_composites(self):
        self.check(lambda x, s: porta.RmsNorm(x, s, epsilon=1e-3), self.randn(3, 7), self.randn(7))
        for approx in ["none", "tanh"]:
            self.check(lambda x, b: porta.BiasGelu(x, b, approximate=approx), self.randn(2, 5), self.randn(5))
        self.check(lambda q, k, v, m: porta.ScaledDotProductAttention(q, k, v, m, scale=0.4),
                   self.randn(1, 2, 3, 4), self.randn(1, 2, 5, 4), self.randn(1, 2, 5, 3), self.randn(1, 1, 3, 5))
        angles = torch.randn(3, 4, dtype=torch.float64)
        self.check(lambda x: porta.RotaryEmbedding(x, angles.cos(), angles.sin(), interleaved=True),
                   self.randn(1, 2, 3, 8))

    def test_gradcheck_plugin_composite(self):
        self.check(lambda x, b: porta.FusedLeakyReLU(x, b, negative_slope=0.3), self.randn(2, 3, 2, 2), self.randn(3))
        # ScaledSwish is f32-only: its gradient against torch's of the same formula.
        x = torch.randn(4, 9, requires_grad=True)
        porta.ScaledSwish(x, alpha=0.7).sum().backward()
        x64 = x.detach().double().requires_grad_()
        (x64 * torch.sigmoid(0.7 * x64)).sum().backward()
        self.close(x.grad, x64.grad, 1e-5)

    def test_gradcheck_ops_with_torch_formulas(self):
        self.check(porta.MatMul, self.randn(3, 4), self.randn(4, 2))
        self.check(lambda x: porta.Softmax(x, axis=0), self.randn(4, 3))
        self.check(lambda a, b: porta.Div(a, b), self.randn(3, 1), self.randn(4) .detach().abs().add(0.5).requires_grad_())

    def test_second_order_gradients(self):
        self.assertTrue(torch.autograd.gradgradcheck(lambda x, b: porta.BiasGelu(x, b), (self.randn(3, 4), self.randn(4))))
        self.assertTrue(torch.autograd.gradgradcheck(lambda x, b: porta.FusedLeakyReLU(x, b),
                                                     (self.randn(1, 2, 3, 3), self.randn(2))))

    def test_gradcheck_every_torch_formula(self):
        # Each op called directly: gradcheck compares the formula's gradient with the numerical
        # derivative of porta's forward, so a formula that disagrees with porta's op fails.
        r, pos, i64 = self.randn, lambda *s: (torch.rand(*s, dtype=torch.float64) + 0.5).requires_grad_(), \
            lambda *v: torch.tensor(v, dtype=torch.int64)
        cond = torch.rand(3, 4) > 0.5
        cases = {
            "Abs": (lambda x: porta.Abs(x), [pos(3, 4)]), "Neg": (porta.Neg, [r(3, 4)]),
            "Add": (porta.Add, [r(3, 1), r(4)]), "Sub": (porta.Sub, [r(3, 4), r(1, 4)]),
            "Mul": (porta.Mul, [r(2, 3, 4), r(3, 1)]), "Div": (porta.Div, [r(3, 4), pos(4)]),
            "Pow": (porta.Pow, [pos(3, 4), r(4)]), "Exp": (porta.Exp, [r(5)]), "Log": (porta.Log, [pos(5)]),
            "Sqrt": (porta.Sqrt, [pos(5)]), "Reciprocal": (porta.Reciprocal, [pos(5)]),
            "Sin": (porta.Sin, [r(5)]), "Cos": (porta.Cos, [r(5)]), "Tanh": (porta.Tanh, [r(5)]),
            "Sigmoid": (porta.Sigmoid, [r(5)]), "Erf": (porta.Erf, [r(5)]), "Relu": (porta.Relu, [pos(5)]),
            "LeakyRelu": (lambda x: porta.LeakyRelu(x, alpha=0.3), [r(6)]),
            "Gelu": (lambda x: porta.Gelu(x, approximate="tanh"), [r(6)]), "Identity": (porta.Identity, [r(2, 3)]),
            "Softmax": (lambda x: porta.Softmax(x, axis=1), [r(2, 5)]),
            "MatMul": (porta.MatMul, [r(2, 3, 4), r(4, 5)]),
            "Cast": (lambda x: porta.Cast(x, to=11), [r(3)]),
            "Concat": (lambda a, b: porta.Concat([a, b], axis=1), [r(2, 3), r(2, 1)]),
            "Sum": (lambda a, b, c: porta.Sum([a, b, c]), [r(3, 1), r(4), r(3, 4)]),
            "Max": (lambda a, b: porta.Max([a, b]), [r(3, 4), r(4)]), "Min": (lambda a, b: porta.Min([a, b]), [r(3, 4), r(4)]),
            "Where": (lambda a, b: porta.Where(cond, a, b), [r(3, 4), r(4)]),
            "Expand": (lambda x: porta.Expand(x, i64(2, 3, 4)), [r(3, 1)]),
            "Reshape": (lambda x: porta.Reshape(x, i64(0, -1)), [r(2, 3, 2)]),
            "Transpose": (lambda x: porta.Transpose(x, perm=[1, 2, 0]), [r(2, 3, 4)]),
            "Squeeze": (lambda x: porta.Squeeze(x, i64(-2)), [r(3, 1, 4)]),
            "Unsqueeze": (lambda x: porta.Unsqueeze(x, i64(0, -1)), [r(3, 4)]),
            "ReduceMean": (lambda x: porta.ReduceMean(x, i64(1), keepdims=0), [r(3, 4, 2)]),
            "ReduceSum": (lambda x: porta.ReduceSum(x), [r(3, 4)]),
            "Slice": (lambda x: porta.Slice(x, i64(4, 0), i64(-10, 3), i64(0, 1), i64(-2, 2)), [r(6, 5)]),
        }
        for name, (fn, inputs) in cases.items():
            with self.subTest(op=name):
                self.check(fn, *inputs)

    def test_gradients_only_where_asked(self):
        x, s = self.randn(3, 5), torch.randn(5, dtype=torch.float64)
        y = porta.RmsNorm(x, s)
        self.assertIsNotNone(y.grad_fn)
        y.sum().backward()
        self.assertIsNotNone(x.grad)
        self.assertIsNone(s.grad)
        with torch.no_grad():
            self.assertIsNone(porta.RmsNorm(x, s).grad_fn)

    def test_op_without_differentiable_path_errs_on_backward(self):
        x = torch.randn(3, 4, requires_grad=True)
        y = porta.com_porta_test__Shadowed(x)  # the forward runs
        self.close(y, x.detach().double() + 1)
        with self.assertRaisesRegex(RuntimeError, r"\[com\.porta\.test::Shadowed\] has no differentiable path"):
            y.sum().backward()


class Errors(unittest.TestCase):
    def test_wrong_inputs_raise_with_porta_message(self):
        with self.assertRaisesRegex(RuntimeError, r"\[RmsNorm\].*Scale"):
            porta.RmsNorm(torch.randn(3, 5), torch.randn(4))
        with self.assertRaisesRegex(RuntimeError, r"\[RmsNorm\]"):
            porta.RmsNorm(torch.randn(3, 5), torch.randn(5, dtype=torch.float64))
        with self.assertRaisesRegex(RuntimeError, r"\[BiasGelu\].*approximate"):
            porta.BiasGelu(torch.randn(3, 5), torch.randn(5), approximate="fast")
        with self.assertRaisesRegex(RuntimeError, r"\[NormalizeImage\].*mean"):
            porta.NormalizeImage(torch.zeros(1, 3, 2, 2, dtype=torch.uint8), mean=[0.5, 0.5], std=[1.0, 1.0, 1.0])
        with self.assertRaisesRegex(RuntimeError, r"\[RotaryEmbedding\]"):
            porta.RotaryEmbedding(torch.randn(1, 1, 4, 7), torch.randn(4, 3), torch.randn(4, 3))
        with self.assertRaisesRegex(RuntimeError, r"\[ScaledDotProductAttention\]"):
            porta.ScaledDotProductAttention(torch.randn(1, 1, 2, 4), torch.randn(1, 1, 3, 5), torch.randn(1, 1, 3, 4))

    def test_wrong_dtype(self):
        with self.assertRaisesRegex(RuntimeError, r"\[ai.porta::RmsNorm\] input 0 'X' has dtype ComplexFloat, which "
                                                  r"porta does not support"):
            porta.RmsNorm(torch.zeros(2, 2, dtype=torch.complex64), torch.zeros(2, dtype=torch.complex64))
        with self.assertRaisesRegex(RuntimeError, r"\[ScaledSwish\] X should be f32"):
            porta.ScaledSwish(torch.randn(3, dtype=torch.float64))

    def test_wrong_number_of_inputs(self):
        with self.assertRaisesRegex(RuntimeError, r"porta::RmsNorm\(\) is missing value for argument 'Scale'"):
            porta.RmsNorm(torch.randn(3, 5))
        with self.assertRaisesRegex(RuntimeError, r"porta::Add\(\) expected at most 2 argument"):
            porta.Add(torch.randn(2), torch.randn(2), torch.randn(2))
        with self.assertRaisesRegex(RuntimeError, r"\[Concat\].*input"):
            porta.Concat([], axis=0)

    def test_unknown_attribute_and_wrong_attribute_type(self):
        with self.assertRaisesRegex(RuntimeError, r"Unknown keyword argument 'epsilonn' for operator 'porta::RmsNorm'"):
            porta.RmsNorm(torch.randn(3, 5), torch.randn(5), epsilonn=1e-3)
        with self.assertRaisesRegex(RuntimeError, r"Expected a value of type 'float' for argument 'epsilon' but "
                                                  r"instead found type 'str'"):
            porta.RmsNorm(torch.randn(3, 5), torch.randn(5), epsilon="small")
        with self.assertRaisesRegex(RuntimeError, r"Expected a value of type 'Optional\[List\[int\]\]' for argument 'perm'"):
            porta.Transpose(torch.randn(3, 5), perm=1)
        with self.assertRaisesRegex(RuntimeError, r"\[Transpose\].*perm"):
            porta.Transpose(torch.randn(3, 5), perm=[0, 0])

    def test_device_porta_lacks(self):
        with self.assertRaisesRegex(RuntimeError, r"\[ai.porta::RmsNorm\] input 0 'X' is on device 'meta', which "
                                                  r"porta cannot run torch tensors on"):
            porta.RmsNorm(torch.empty(4, 9, device="meta"), torch.empty(9, device="meta"))


if __name__ == "__main__":
    unittest.main()
