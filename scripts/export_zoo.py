#!/usr/bin/python3
"""porta's real-model zoo: torchvision 0.14 architectures and torch.nn text stacks, exported
to ONNX the way users export them, with PyTorch's float64 outputs as the reference.

Usage: /usr/bin/python3 scripts/export_zoo.py OUT_DIR [--only NAME[,NAME...]] [--force] [--full]
       /usr/bin/python3 scripts/export_zoo.py --list [--full]  (member names, one per line)

Needs Debian's python3-torch (1.13), python3-torchvision (0.14), python3-onnx and numpy.
Weights are random (fixed seeds): nothing is downloaded. Every member is exported at opset 13
and opset 17 (`<name>_op13`, `<name>_op17`), with a dynamic batch axis where the export
allows it. Each folder OUT_DIR/<member>/ holds what tests/model_fixtures.hpp reads:

  model.onnx       torch.onnx.export of the float32 model
  input_<k>.npy    fixed-seed input k (float32 images, int64 tokens)
  output_<k>.npy   the same model run by PyTorch in float64 on the same inputs (float64)
  inputs.txt       `<onnx input name> <file>` per graph input
  outputs.txt      `<onnx output name> <file>` per graph output

A folder whose model.onnx exists is kept (so ctest's fixture exports once per build tree);
--force exports again. Members are small configurations of each family (64x64 images where the
architecture allows) so that the whole zoo runs on the cpu within a few minutes.

--full exports the other set instead: the models the speed goals name at the sizes they are
published at, where their products are compute-bound (resnet50, convnext_tiny and vit_b_16 at
224x224, a BERT-base encoder over 128 tokens), opset 17 only. It is for benchmarks
(bench/compare_precision.sh --zoo DIR, bench/compare_zoo.sh --zoo DIR), not for ctest.
"""
import argparse
import os
import sys
import warnings

# Members: name -> (builder name, input kind, input shape, dynamic batch). Builders are looked
# up after torch is imported, so --list needs neither torch nor torchvision.
MEMBERS = {
    # torchvision classification, one or more per family
    "resnet18": ("tv:resnet18", "image", (1, 3, 64, 64), True),
    "resnext50_32x4d": ("tv:resnext50_32x4d", "image", (1, 3, 64, 64), True),
    "vgg11": ("tv:vgg11", "image", (1, 3, 224, 224), True),  # 7x7 adaptive pool: 224 exports
    "alexnet": ("tv:alexnet", "image", (1, 3, 224, 224), True),  # 6x6 adaptive pool: 224 exports
    "squeezenet1_1": ("tv:squeezenet1_1", "image", (1, 3, 64, 64), True),
    "densenet121": ("tv:densenet121", "image", (1, 3, 64, 64), True),
    "googlenet": ("googlenet", "image", (1, 3, 64, 64), True),
    "inception_v3": ("inception_v3", "image", (1, 3, 80, 80), True),
    "mobilenet_v2": ("tv:mobilenet_v2", "image", (1, 3, 64, 64), True),
    "mobilenet_v3_small": ("tv:mobilenet_v3_small", "image", (1, 3, 64, 64), True),
    "mnasnet0_5": ("tv:mnasnet0_5", "image", (1, 3, 64, 64), True),
    "shufflenet_v2_x0_5": ("tv:shufflenet_v2_x0_5", "image", (1, 3, 64, 64), True),
    "efficientnet_b0": ("tv:efficientnet_b0", "image", (1, 3, 64, 64), True),
    "efficientnet_v2_s": ("tv:efficientnet_v2_s", "image", (1, 3, 64, 64), True),
    "regnet_y_400mf": ("tv:regnet_y_400mf", "image", (1, 3, 64, 64), True),
    "convnext_tiny": ("tv:convnext_tiny", "image", (1, 3, 64, 64), True),
    "vit_b_16": ("vit_b_16", "image", (1, 3, 64, 64), True),
    "swin_t": ("tv:swin_t", "image", (1, 3, 64, 64), True),
    "maxvit_t": ("tv:maxvit_t", "image", (1, 3, 224, 224), True),
    # torchvision segmentation (the ones whose export works at opsets 13 and 17)
    "lraspp_mobilenet_v3_large": ("seg:lraspp_mobilenet_v3_large", "image", (1, 3, 64, 64), True),
    "deeplabv3_mobilenet_v3_large": ("seg:deeplabv3_mobilenet_v3_large", "image", (1, 3, 64, 64), True),
    "fcn_resnet50": ("seg:fcn_resnet50", "image", (1, 3, 64, 64), True),
    # text stacks with integer token inputs
    "bert_encoder": ("bert", "tokens", (2, 16), True),
    "gpt_decoder": ("gpt", "tokens", (2, 16), True),
    "llama_decoder": ("llama", "tokens", (2, 16), True),
    "lstm_lm": ("lstm_lm", "tokens", (1, 64), True),
    "gru_lm": ("gru_lm", "tokens", (1, 64), True),
    # boolean-mask indexing (NonZero + GatherND): the output's length depends on the tokens
    "masked_tokens": ("masked_tokens", "tokens", (2, 16), False),
}
# --full: name -> (builder name, input kind, input shape, dynamic batch), opset 17 only.
FULL_MEMBERS = {
    "resnet50_224": ("tv:resnet50", "image", (1, 3, 224, 224), True),
    "convnext_tiny_224": ("tv:convnext_tiny", "image", (1, 3, 224, 224), True),
    "vit_b_16_224": ("vit_b_16", "image", (1, 3, 224, 224), True),
    "bert_base_128": ("bert_base", "tokens", (1, 128), True),
}
OPSETS = (13, 17)
VOCAB = 100


def use_full_set():
    """Makes --full's members the ones every function here builds and exports."""
    global MEMBERS, OPSETS
    MEMBERS, OPSETS = FULL_MEMBERS, (17,)


def member_names():
    return [f"{name}_op{opset}" for name in MEMBERS for opset in OPSETS]


def build(torch, name):
    """The float32 module of member `name` (eval mode, fixed-seed random weights)."""
    import torchvision
    from torch import nn

    torch.manual_seed(0)
    kind, _, shape, _ = MEMBERS[name]
    if kind.startswith("tv:"):
        return getattr(torchvision.models, kind[3:])(weights=None)
    if kind == "googlenet":
        # init_weights=False: its truncated-normal init (std 0.01) shrinks the features until the
        # logits are the classifier bias alone, which would hide any error before it.
        return torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=False)
    if kind == "inception_v3":
        return torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=True)
    if kind == "vit_b_16":
        return torchvision.models.vit_b_16(weights=None, image_size=shape[-1])
    if kind.startswith("seg:"):
        seg = getattr(torchvision.models.segmentation, kind[4:])(weights=None, weights_backbone=None, aux_loss=False)

        class Out(nn.Module):  # the exporter wants tensors, not the {"out": ...} dict
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, x):
                return self.m(x)["out"]

        return Out(seg)

    d_model, heads = 64, 4

    class Bert(nn.Module):
        """Token + position embeddings, post-norm encoder layers (2 of width 64 in the zoo; 12
        of BERT-base's 768 with 12 heads in --full's), a padding mask from token 0."""

        def __init__(self, width=d_model, n_heads=heads, ff=128, layers=2, positions=64):
            super().__init__()
            self.tok = nn.Embedding(VOCAB, width)
            self.pos = nn.Embedding(positions, width)
            layer = nn.TransformerEncoderLayer(width, n_heads, ff, dropout=0.0, batch_first=True)
            self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(width, 8)

        def forward(self, tokens):
            pos = torch.arange(tokens.shape[1], device=tokens.device).unsqueeze(0)
            h = self.tok(tokens) + self.pos(pos)
            h = self.enc(h, src_key_padding_mask=tokens == 0)
            return self.head(h)

    class Gpt(nn.Module):
        """Pre-norm causal decoder: 2 layers, a causal mask sliced from a buffer (as nanoGPT
        does; torch.triu has no export before opset 14), vocabulary head."""

        def __init__(self):
            super().__init__()
            self.register_buffer("causal", torch.triu(torch.full((64, 64), float("-inf")), diagonal=1))
            self.tok = nn.Embedding(VOCAB, d_model)
            self.pos = nn.Embedding(64, d_model)
            layer = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.0, batch_first=True,
                                               norm_first=True, activation="gelu")
            self.blocks = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(d_model)
            self.head = nn.Linear(d_model, VOCAB, bias=False)

        def forward(self, tokens):
            n = tokens.shape[1]
            pos = torch.arange(n, device=tokens.device).unsqueeze(0)
            h = self.blocks(self.tok(tokens) + self.pos(pos), mask=self.causal[:n, :n])
            return self.head(self.norm(h))

    class RmsNorm(nn.Module):
        """As LLaMA writes it (ONNX has no RMSNorm op at any opset)."""

        def __init__(self, width, eps=1e-6):
            super().__init__()
            self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(width))
            self.eps = eps

        def forward(self, x):
            return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    class LlamaBlock(nn.Module):
        """Pre-norm block: RMSNorm, causal attention with rotary position embeddings written
        out (rotate_half as slices and a concat), RMSNorm, SwiGLU MLP; no biases."""

        def __init__(self, width, n_heads, ff, positions):
            super().__init__()
            self.heads, self.head_dim = n_heads, width // n_heads
            self.attn_norm, self.mlp_norm = RmsNorm(width), RmsNorm(width)
            self.qkv = nn.Linear(width, 3 * width, bias=False)
            self.out = nn.Linear(width, width, bias=False)
            self.gate = nn.Linear(width, ff, bias=False)
            self.up = nn.Linear(width, ff, bias=False)
            self.down = nn.Linear(ff, width, bias=False)
            inv = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
            angles = torch.outer(torch.arange(positions).float(), inv)
            angles = torch.cat([angles, angles], dim=-1)
            self.register_buffer("cos", angles.cos())
            self.register_buffer("sin", angles.sin())
            self.register_buffer("causal", torch.triu(torch.full((positions, positions), float("-inf")), diagonal=1))

        @staticmethod
        def rotate_half(x):
            half = x.shape[-1] // 2
            return torch.cat([-x[..., half:], x[..., :half]], dim=-1)

        def forward(self, h):
            b, n, w = h.shape
            q, k, v = self.qkv(self.attn_norm(h)).split(w, dim=-1)
            q, k, v = (t.reshape(b, n, self.heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
            cos, sin = self.cos[:n], self.sin[:n]
            q = q * cos + self.rotate_half(q) * sin
            k = k * cos + self.rotate_half(k) * sin
            scores = q @ k.transpose(-2, -1) / self.head_dim ** 0.5 + self.causal[:n, :n]
            a = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, n, w)
            h = h + self.out(a)
            x = self.mlp_norm(h)
            return h + self.down(nn.functional.silu(self.gate(x)) * self.up(x))

    class Llama(nn.Module):
        """Token embeddings, 2 LLaMA-style blocks, a final RMSNorm and the vocabulary head."""

        def __init__(self, layers=2, positions=64):
            super().__init__()
            self.tok = nn.Embedding(VOCAB, d_model)
            self.blocks = nn.ModuleList(LlamaBlock(d_model, heads, 3 * d_model, positions) for _ in range(layers))
            self.norm = RmsNorm(d_model)
            self.head = nn.Linear(d_model, VOCAB, bias=False)

        def forward(self, tokens):
            h = self.tok(tokens)
            for block in self.blocks:
                h = block(h)
            return self.head(self.norm(h))

    class RnnLm(nn.Module):
        """Embedding 128 -> 2-layer LSTM/GRU, hidden 256 -> vocabulary logits (batch first)."""

        def __init__(self, cell):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, 128)
            self.rnn = cell(128, 256, num_layers=2, batch_first=True)
            self.head = nn.Linear(256, VOCAB)

        def forward(self, tokens):
            out, _ = self.rnn(self.emb(tokens))
            return self.head(out)

    class MaskedTokens(nn.Module):
        """Embeds the tokens, keeps the non-padding ones (h[tokens != 0]: NonZero + GatherND in
        the export) and classifies each; the output has one row per non-padding token."""

        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(VOCAB, d_model)
            self.head = nn.Linear(d_model, 8)

        def forward(self, tokens):
            h = self.tok(tokens)
            return self.head(torch.relu(h[tokens != 0]))

    if kind == "bert":
        return Bert()
    if kind == "bert_base":
        model = Bert(width=768, n_heads=12, ff=3072, layers=12, positions=shape[1])
        # nn.TransformerEncoder deep-copies one layer, so its layers start equal and the export
        # shares one set of weights among them; a trained BERT's layers differ: draw each anew.
        for layer in model.enc.layers:
            layer.self_attn._reset_parameters()
            for linear in (layer.self_attn.out_proj, layer.linear1, layer.linear2):
                linear.reset_parameters()
        return model
    if kind == "masked_tokens":
        return MaskedTokens()
    if kind == "gpt":
        return Gpt()
    if kind == "llama":
        return Llama()
    if kind == "lstm_lm":
        return RnnLm(nn.LSTM)
    if kind == "gru_lm":
        return RnnLm(nn.GRU)
    raise SystemExit(f"unknown zoo builder {kind}")


def make_input(torch, name):
    _, what, shape, _ = MEMBERS[name]
    g = torch.Generator().manual_seed(1)
    if what == "image":
        return torch.randn(*shape, generator=g)
    tokens = torch.randint(1, VOCAB, shape, generator=g)
    if MEMBERS[name][0] in ("bert", "bert_base", "masked_tokens"):
        tokens[0, -3:] = 0  # padding at the end of the first sequence
    return tokens


def export(torch, np, name, opset, out_dir, force):
    folder = os.path.join(out_dir, f"{name}_op{opset}")
    path = os.path.join(folder, "model.onnx")
    if os.path.exists(path) and not force:
        return "kept"
    os.makedirs(folder, exist_ok=True)
    model = build(torch, name).eval()
    # Zero-initialised weight matrices (ViT's classifier head) would make the output constant and
    # the comparison blind to every layer before them: draw them like a Linear's default init.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2 and not p.any():
                bound = 1.0 / max(1, p[0].numel()) ** 0.5
                p.uniform_(-bound, bound)
    x = make_input(torch, name)
    dynamic = {"input": {0: "batch"}, "output": {0: "batch"}} if MEMBERS[name][3] else None
    tmp = path + ".tmp"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Exported with autograd on: under no_grad, torch 1.13's attention modules take their
        # fused fast path (aten::_native_multi_head_attention), which has no ONNX export.
        torch.onnx.export(model, (x,), tmp, opset_version=opset, input_names=["input"],
                          output_names=["output"], dynamic_axes=dynamic, do_constant_folding=True)
        with torch.no_grad():
            ref = model.double()(x.double() if x.is_floating_point() else x)
    np.save(os.path.join(folder, "input_0.npy"), x.numpy())
    np.save(os.path.join(folder, "output_0.npy"), ref.numpy().astype(np.float64))
    with open(os.path.join(folder, "inputs.txt"), "w") as f:
        f.write("input input_0.npy\n")
    with open(os.path.join(folder, "outputs.txt"), "w") as f:
        f.write("output output_0.npy\n")
    os.replace(tmp, path)  # last: a folder with model.onnx is complete
    return "exported"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir", nargs="?")
    parser.add_argument("--only", default="")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--full", action="store_true", help="the full-size benchmark set instead of the zoo")
    args = parser.parse_args()
    if args.full:
        use_full_set()
    if args.list:
        print("\n".join(member_names()))
        return
    if not args.out_dir:
        parser.error("OUT_DIR is required")
    import numpy as np
    import torch

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    names = [n for n in args.only.split(",") if n] or list(MEMBERS)
    for n in names:
        if n not in MEMBERS:
            raise SystemExit(f"unknown zoo member '{n}'; members: {', '.join(MEMBERS)}")
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "members.txt"), "w") as f:
        f.write("\n".join(member_names()) + "\n")
    for n in names:
        for opset in OPSETS:
            print(f"[zoo] {n}_op{opset}: {export(torch, np, n, opset, args.out_dir, args.force)}", flush=True)


if __name__ == "__main__":
    main()
