#!/usr/bin/python3
"""porta's example networks: defined in PyTorch, exported to ONNX with fixtures.

Usage: /usr/bin/python3 scripts/export_models.py [OUT_DIR] [--only NAME[,NAME...]]
       (OUT_DIR defaults to models/ at the top of the source tree)

Needs Debian's python3-torch (1.13), python3-onnx (1.12) and python3-numpy (1.24); call the
system interpreter (/usr/bin/python3) when another python3 comes first on PATH.

For each model NAME it writes, into OUT_DIR/NAME/:
  model.onnx      torch.onnx.export, opset 17, dynamic batch axis where natural
  input_<k>.npy   fixed-seed input for the k-th ONNX graph input (k = 0, 1, ...)
  output_<k>.npy  PyTorch's eager result for the k-th ONNX graph output
  inputs.txt      one line `<onnx input name> <file>` per graph input, in graph order
  outputs.txt     one line `<onnx output name> <file>` per graph output, in graph order

Re-running reproduces byte-identical files: every seed is fixed and the export is made
deterministic (constant folding, fixed node order from tracing).

The model classes and `build()` are importable (bench/peers/torch_bench.py times them).
"""
import argparse
import os
import sys
import warnings

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import porta_ops  # noqa: E402  (porta's ai.porta custom ops)

OPSET = 17


class ConvBlock(nn.Module):
    """Conv3x3 + BatchNorm + ReLU + MaxPool2x2."""

    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel_size=3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        return self.pool(self.relu(self.bn(self.conv(x))))


class Cnn(nn.Module):
    """Three conv blocks, global average pool, linear classifier (the bundled example)."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(ConvBlock(3, 16), ConvBlock(16, 32), ConvBlock(32, 64))
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.gap(self.features(x)), 1))


class Mlp(nn.Module):
    """Linear + GELU + LayerNorm, three times, then a linear head."""

    def __init__(self, width=128, depth=3, dim_in=64, dim_out=16):
        super().__init__()
        layers, d = [], dim_in
        for _ in range(depth):
            layers += [nn.Linear(d, width), nn.GELU(), nn.LayerNorm(width)]
            d = width
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, dim_out)

    def forward(self, x):
        return self.head(self.body(x))


class Transformer(nn.Module):
    """One post-norm transformer encoder layer (batch_first)."""

    def __init__(self, d_model=64, heads=4, ff=128):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=ff,
                                                dropout=0.1, batch_first=True)

    def forward(self, x):
        return self.layer(x)


class Lstm(nn.Module):
    """Two-layer LSTM over a sequence, linear projection of every step."""

    def __init__(self, dim_in=32, hidden=48, dim_out=8):
        super().__init__()
        self.lstm = nn.LSTM(dim_in, hidden, num_layers=2, batch_first=True)
        self.fc = nn.Linear(hidden, dim_out)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y)


class AdditiveAttention(nn.Module):
    """Bahdanau attention: score_t = v . tanh(W q + U k_t); context = sum_t softmax(score)_t k_t.

    Returns the context (batch x dim) and the attention weights (batch x time)."""

    def __init__(self, dim_q=32, dim_k=32, dim_attn=48):
        super().__init__()
        self.w = nn.Linear(dim_q, dim_attn, bias=False)
        self.u = nn.Linear(dim_k, dim_attn)
        self.v = nn.Linear(dim_attn, 1, bias=False)

    def forward(self, query, keys):
        # query: B x Dq, keys: B x T x Dk
        energy = torch.tanh(self.w(query).unsqueeze(1) + self.u(keys))  # B x T x A
        scores = self.v(energy).squeeze(-1)                              # B x T
        weights = torch.softmax(scores, dim=-1)
        context = torch.sum(weights.unsqueeze(-1) * keys, dim=1)        # B x Dk
        return context, weights


class Image(nn.Module):
    """uint8 NHWC image -> float, /255, (x - mean) / std, NCHW, then a small CNN.

    The preprocessing is part of the exported graph (Cast, Div, Sub, Transpose, ...)."""

    def __init__(self, classes=5):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]))
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(16, classes)

    def forward(self, image):
        x = image.to(torch.float32) / 255.0
        x = (x - self.mean) / self.std          # broadcast over the channel (last) axis
        x = x.permute(0, 3, 1, 2)               # NHWC -> NCHW
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        x = torch.mean(x, dim=(2, 3))
        return self.fc(x)


class DecoderBlock(nn.Module):
    """A pre-norm decoder block on porta's custom ops: RmsNorm, RotaryEmbedding on Q and K,
    causal ScaledDotProductAttention, output projection, RmsNorm, Linear + BiasGelu (tanh),
    Linear; two residual connections. Exports to ai.porta nodes plus standard ones."""

    def __init__(self, dim=64, heads=4, ff=160, max_seq=64):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.Parameter(1.0 + 0.1 * torch.randn(dim))
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.Parameter(1.0 + 0.1 * torch.randn(dim))
        self.up = nn.Linear(dim, ff, bias=False)
        self.up_bias = nn.Parameter(0.1 * torch.randn(ff))
        self.down = nn.Linear(ff, dim)
        cos, sin = porta_ops.rotary_tables(max_seq, dim // heads)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)

    def forward(self, x):
        b, s, d = x.shape
        h = porta_ops.rms_norm(x, self.norm1, epsilon=1e-6)
        qkv = self.qkv(h).reshape(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        cos, sin = self.cos[:s], self.sin[:s]
        q = porta_ops.rotary_embedding(qkv[0], cos, sin)
        k = porta_ops.rotary_embedding(qkv[1], cos, sin)
        a = porta_ops.scaled_dot_product_attention(q, k, qkv[2], causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        h = porta_ops.rms_norm(x, self.norm2, epsilon=1e-6)
        return x + self.down(porta_ops.bias_gelu(self.up(h), self.up_bias, approximate="tanh"))


class ImageCustom(nn.Module):
    """uint8 NHWC image -> porta's NormalizeImage (to f32 NCHW) -> a small CNN (two conv
    blocks with BatchNorm, global average pool, Linear)."""

    MEAN = (0.485, 0.456, 0.406)
    STD = (0.229, 0.224, 0.225)

    def __init__(self, classes=7):
        super().__init__()
        self.features = nn.Sequential(ConvBlock(3, 8), ConvBlock(8, 16))
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, classes)

    def forward(self, image):
        x = porta_ops.normalize_image(image, self.MEAN, self.STD, layout="NHWC")
        return self.fc(torch.flatten(self.gap(self.features(x)), 1))


def _randomize_batchnorm(module, gen):
    """Gives BatchNorm layers non-trivial running statistics and affine parameters, so that
    the exported normalization is actually exercised (fresh layers are the identity)."""
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(c, generator=gen) * 0.1)


def _perturb_layernorm(module, gen):
    """Non-trivial LayerNorm scale and shift (fresh layers have weight 1, bias 0)."""
    for m in module.modules():
        if isinstance(m, nn.LayerNorm):
            m.weight.data.copy_(1.0 + 0.1 * torch.randn(m.weight.shape, generator=gen))
            m.bias.data.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))


class Spec:
    """One example model: the module (eval mode), example inputs, ONNX names, dynamic axes."""

    def __init__(self, name, module, inputs, input_names, output_names, dynamic_axes):
        self.name = name
        self.module = module
        self.inputs = inputs
        self.input_names = input_names
        self.output_names = output_names
        self.dynamic_axes = dynamic_axes


def build(name, batch=None):
    """Builds model `name` with fixed weights and its fixed-seed inputs (batch: override the
    example batch size, e.g. for benchmarking)."""
    torch.manual_seed(1234)
    gen = torch.Generator().manual_seed(5678)
    if name == "cnn":
        m = Cnn()
        _randomize_batchnorm(m, gen)
        inputs = (torch.randn(batch or 1, 3, 64, 64, generator=gen),)
        spec = Spec(name, m, inputs, ["input"], ["logits"],
                    {"input": {0: "batch"}, "logits": {0: "batch"}})
    elif name == "mlp":
        m = Mlp()
        _perturb_layernorm(m, gen)
        inputs = (torch.randn(batch or 4, 64, generator=gen),)
        spec = Spec(name, m, inputs, ["x"], ["y"], {"x": {0: "batch"}, "y": {0: "batch"}})
    elif name == "transformer":
        m = Transformer()
        _perturb_layernorm(m, gen)
        inputs = (torch.randn(batch or 2, 16, 64, generator=gen),)
        spec = Spec(name, m, inputs, ["tokens"], ["encoded"],
                    {"tokens": {0: "batch", 1: "sequence"},
                     "encoded": {0: "batch", 1: "sequence"}})
    elif name == "lstm":
        m = Lstm()
        inputs = (torch.randn(batch or 2, 12, 32, generator=gen),)
        spec = Spec(name, m, inputs, ["sequence"], ["projected"],
                    {"sequence": {0: "batch", 1: "time"}, "projected": {0: "batch", 1: "time"}})
    elif name == "attention":
        m = AdditiveAttention()
        b = batch or 3
        inputs = (torch.randn(b, 32, generator=gen), torch.randn(b, 10, 32, generator=gen))
        spec = Spec(name, m, inputs, ["query", "keys"], ["context", "weights"],
                    {"query": {0: "batch"}, "keys": {0: "batch", 1: "time"},
                     "context": {0: "batch"}, "weights": {0: "batch", 1: "time"}})
    elif name == "image":
        m = Image()
        inputs = (torch.randint(0, 256, (batch or 1, 32, 32, 3), generator=gen,
                                dtype=torch.uint8),)
        spec = Spec(name, m, inputs, ["image"], ["logits"],
                    {"image": {0: "batch"}, "logits": {0: "batch"}})
    elif name == "decoder":
        m = DecoderBlock()
        inputs = (torch.randn(batch or 2, 24, 64, generator=gen),)
        spec = Spec(name, m, inputs, ["hidden"], ["out"],
                    {"hidden": {0: "batch", 1: "sequence"}, "out": {0: "batch", 1: "sequence"}})
    elif name == "image_custom":
        m = ImageCustom()
        _randomize_batchnorm(m, gen)
        inputs = (torch.randint(0, 256, (batch or 1, 40, 48, 3), generator=gen, dtype=torch.uint8),)
        spec = Spec(name, m, inputs, ["image"], ["logits"],
                    {"image": {0: "batch"}, "logits": {0: "batch"}})
    else:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    spec.module.eval()
    return spec


MODELS = ["cnn", "mlp", "transformer", "lstm", "attention", "image", "decoder", "image_custom"]


def export(spec, out_dir):
    """Exports one model and its fixtures into out_dir/<name>/."""
    import onnx  # only the exporter needs it

    d = os.path.join(out_dir, spec.name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    # Grad stays enabled on purpose: under no_grad, eval TransformerEncoderLayer takes a fused
    # fast path (aten::_transformer_encoder_layer_fwd) that has no ONNX export. The reference
    # outputs are computed on the same (exported) path.
    outputs = spec.module(*spec.inputs)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    outputs = tuple(t.detach() for t in outputs)
    # PRESERVE keeps BatchNormalization nodes (EVAL would fold them into the convolutions);
    # the modules are in eval mode, so they export with training_mode=0.
    torch.onnx.export(spec.module, spec.inputs, path, opset_version=OPSET,
                      input_names=spec.input_names, output_names=spec.output_names,
                      dynamic_axes=spec.dynamic_axes, do_constant_folding=True,
                      training=torch.onnx.TrainingMode.PRESERVE,
                      custom_opsets=porta_ops.CUSTOM_OPSETS)
    model = onnx.load(path)
    onnx.checker.check_model(model)
    graph_inputs = [i.name for i in model.graph.input]
    graph_outputs = [o.name for o in model.graph.output]
    if graph_inputs != spec.input_names or graph_outputs != spec.output_names:
        raise RuntimeError(f"{spec.name}: exported names {graph_inputs} -> {graph_outputs} "
                           f"differ from {spec.input_names} -> {spec.output_names}")
    with open(os.path.join(d, "inputs.txt"), "w") as f:
        for k, (n, t) in enumerate(zip(spec.input_names, spec.inputs)):
            np.save(os.path.join(d, f"input_{k}.npy"), t.numpy())
            f.write(f"{n} input_{k}.npy\n")
    with open(os.path.join(d, "outputs.txt"), "w") as f:
        for k, (n, t) in enumerate(zip(spec.output_names, outputs)):
            np.save(os.path.join(d, f"output_{k}.npy"), t.numpy())
            f.write(f"{n} output_{k}.npy\n")
    ops = sorted({n.op_type for n in model.graph.node})
    size = os.path.getsize(path)
    print(f"{spec.name}: {size} bytes, ops: {' '.join(ops)}")
    return ops


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir", nargs="?", default=os.path.join(here, "..", "models"))
    p.add_argument("--only", default=",".join(MODELS))
    args = p.parse_args(argv)
    # The 1.13 exporter warns about things that do not apply here (constant folding with
    # PRESERVE on eval modules, shape inference of prim::Constant, LSTM batch size: the
    # exported initial states are sized from the input's shape).
    warnings.filterwarnings("ignore", category=UserWarning)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # identical float summation order on every run
    for name in args.only.split(","):
        export(build(name), os.path.normpath(args.out_dir))


if __name__ == "__main__":
    main(sys.argv[1:])
