"""porta's custom operators (ONNX domain ``ai.porta``, version 1) for PyTorch models.

Each op is a Python function with the op's reference semantics (plain PyTorch, so eager runs,
autograd and CPU/GPU tensors all work) that ``torch.onnx.export`` turns into one ``ai.porta``
node, so porta runs it with its own kernels (or its composite decomposition). Needs PyTorch
1.13 (Debian ``python3-torch``); export with ``custom_opsets=porta_ops.CUSTOM_OPSETS``:

    import porta_ops
    y = porta_ops.rms_norm(x, scale, epsilon=1e-6)
    torch.onnx.export(model, args, "model.onnx", opset_version=17,
                      custom_opsets=porta_ops.CUSTOM_OPSETS)

The semantics (shapes, attributes, defaults) are those of ops/*.cpp in porta:
  rms_norm(X, Scale, epsilon=1e-6)                 X / sqrt(mean(X^2, -1) + eps) * Scale
  bias_gelu(X, Bias, approximate="none")           gelu(X + Bias), "none" (erf) or "tanh"
  scaled_dot_product_attention(Q, K, V, mask=None, scale=None, causal=False)
                                                   softmax(Q K^T * scale + mask) V
  rotary_embedding(X, Cos, Sin, interleaved=False) rotate halves (or pairs) of the last axis
  normalize_image(X, mean, std, layout="NCHW")     (X / 255 - mean[c]) / std[c], f32 NCHW
"""
import math

import torch

DOMAIN = "ai.porta"
VERSION = 1
CUSTOM_OPSETS = {DOMAIN: VERSION}


def _node(g, op, *inputs, like=None, **attrs):
    """Emits one ai.porta node; its output takes `like`'s type (dtype and shape) when given, so
    the exporter's shape inference can continue past it."""
    out = g.op(f"{DOMAIN}::{op}", *inputs, **attrs)
    if like is not None:
        out.setType(like.type())
    return out


# ---- RmsNorm ----------------------------------------------------------------------------------

def _rms_norm_ref(x, scale, epsilon):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + epsilon) * scale


class _RmsNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale, epsilon):
        return _rms_norm_ref(x, scale, epsilon)

    @staticmethod
    def symbolic(g, x, scale, epsilon):
        return _node(g, "RmsNorm", x, scale, like=x, epsilon_f=float(epsilon))


def rms_norm(x, scale, epsilon=1e-6):
    """Y = X / sqrt(mean(X^2 over the last axis) + epsilon) * Scale (Scale: 1-D, last axis)."""
    if torch.onnx.is_in_onnx_export():
        return _RmsNorm.apply(x, scale, float(epsilon))
    return _rms_norm_ref(x, scale, epsilon)


# ---- BiasGelu ---------------------------------------------------------------------------------

def _check_approximate(approximate):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"bias_gelu: approximate should be 'none' or 'tanh', got {approximate!r}")


class _BiasGelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bias, approximate):
        return torch.nn.functional.gelu(x + bias, approximate=approximate)

    @staticmethod
    def symbolic(g, x, bias, approximate):
        return _node(g, "BiasGelu", x, bias, like=x, approximate_s=approximate)


def bias_gelu(x, bias, approximate="none"):
    """Y = gelu(X + Bias), Bias (1-D) along the last axis; PyTorch's gelu formulas."""
    _check_approximate(approximate)
    if torch.onnx.is_in_onnx_export():
        return _BiasGelu.apply(x, bias, approximate)
    return torch.nn.functional.gelu(x + bias, approximate=approximate)


# ---- ScaledDotProductAttention ----------------------------------------------------------------

def _sdpa_ref(q, k, v, mask, scale, causal):
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale
    if mask is not None:
        scores = scores + mask
    if causal:
        sq, skv = q.shape[-2], k.shape[-2]
        visible = torch.ones(sq, skv, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~visible, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)


class _Sdpa(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, mask, scale, causal):
        return _sdpa_ref(q, k, v, mask, scale, causal)

    @staticmethod
    def symbolic(g, q, k, v, mask, scale, causal):
        inputs = [q, k, v] if mask is None or mask.node().mustBeNone() else [q, k, v, mask]
        attrs = {"causal_i": int(causal)}
        if scale is not None:
            attrs["scale_f"] = float(scale)
        same_shape = q.type().sizes() == v.type().sizes() if hasattr(q.type(), "sizes") else False
        return _node(g, "ScaledDotProductAttention", *inputs, like=q if same_shape else None, **attrs)


def scaled_dot_product_attention(q, k, v, mask=None, scale=None, causal=False):
    """softmax(Q K^T * scale + mask [+ causal]) V over Q [B,H,Sq,D], K [B,H,Skv,D],
    V [B,H,Skv,Dv]; mask additive (broadcast to [B,H,Sq,Skv]); causal: key j visible to
    query i when j <= i; scale defaults to 1/sqrt(D)."""
    if torch.onnx.is_in_onnx_export():
        return _Sdpa.apply(q, k, v, mask, scale, bool(causal))
    return _sdpa_ref(q, k, v, mask, scale, causal)


# ---- RotaryEmbedding --------------------------------------------------------------------------

def _rotary_ref(x, cos, sin, interleaved):
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        y1, y2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
        return torch.stack((y1, y2), dim=-1).flatten(-2)
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class _Rotary(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, cos, sin, interleaved):
        return _rotary_ref(x, cos, sin, interleaved)

    @staticmethod
    def symbolic(g, x, cos, sin, interleaved):
        return _node(g, "RotaryEmbedding", x, cos, sin, like=x, interleaved_i=int(interleaved))


def rotary_embedding(x, cos, sin, interleaved=False):
    """Rotates pairs of X's last axis (X [B,H,S,D], Cos/Sin [S,D/2]): halves
    (x[i], x[i+D/2]) by default, adjacent pairs (x[2i], x[2i+1]) when interleaved."""
    if torch.onnx.is_in_onnx_export():
        return _Rotary.apply(x, cos, sin, bool(interleaved))
    return _rotary_ref(x, cos, sin, interleaved)


def rotary_tables(seq_len, dim, base=10000.0, dtype=torch.float32):
    """Cos and Sin [seq_len, dim/2] for the usual RoPE frequencies base^(-2i/dim)."""
    inv_freq = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = torch.arange(seq_len, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return torch.cos(angles).to(dtype), torch.sin(angles).to(dtype)


# ---- NormalizeImage ---------------------------------------------------------------------------

def _normalize_ref(x, mean, std, layout):
    y = x.to(torch.float32)
    if layout == "NHWC":
        y = y.permute(0, 3, 1, 2)
    m = torch.tensor(mean, dtype=torch.float32, device=x.device).view(-1, 1, 1)
    s = torch.tensor(std, dtype=torch.float32, device=x.device).view(-1, 1, 1)
    return (y / 255.0 - m) / s


class _NormalizeImage(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, mean, std, layout):
        return _normalize_ref(x, mean, std, layout)

    @staticmethod
    def symbolic(g, x, mean, std, layout):
        return _node(g, "NormalizeImage", x, mean_f=[float(m) for m in mean],
                     std_f=[float(s) for s in std], layout_s=layout)


def normalize_image(x, mean, std, layout="NCHW"):
    """uint8 image (NCHW or NHWC) -> float32 NCHW, (X / 255 - mean[c]) / std[c]."""
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"normalize_image: layout should be 'NCHW' or 'NHWC', got {layout!r}")
    if x.dtype != torch.uint8:
        raise TypeError(f"normalize_image: X should be uint8, got {x.dtype}")
    mean, std = tuple(float(m) for m in mean), tuple(float(s) for s in std)
    if torch.onnx.is_in_onnx_export():
        return _NormalizeImage.apply(x, mean, std, layout)
    return _normalize_ref(x, mean, std, layout)
