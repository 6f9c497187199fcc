#!/usr/bin/python3
"""Error of a 3x3 convolution computed by Winograd's algorithm with its products in bf16, against
the direct convolution in bf16 (what porta's bf16 sessions run), both against float64.

Why it matters: with AVX-512 the cpu runs 3x3 stride-1 convs in f32 by oneDNN's Winograd
F(4x4, 3x3), a quarter of the direct multiplications; a bf16 session computes them directly
(oneDNN has no bf16 Winograd), so those convs cannot gain the bf16:f32 peak ratio (2.0 here).
A bf16 Winograd would: this measures what it would cost in accuracy. The transforms are exact
(float64 here); only the transformed tiles and weights are rounded to bf16, as a bf16 Winograd
kernel with f32 transforms would round them. Sums stay in float64 (f32 accumulation adds less).

Usage: /usr/bin/python3 bench/winograd_bf16_error.py [--channels C] [--tiles T] [--seed S]
Prints, for F(4x4, 3x3) and F(2x2, 3x3): the relative RMS and max error of the Winograd result
with its products exact and in bf16, and of the direct bf16 convolution, over T random tiles of
C input channels (inputs N(0, 1), weights N(0, 1 / (9 C)), one output channel).
"""
import argparse

import numpy as np

# Winograd matrices (Lavin & Gray), interpolation points 0, +-1, +-2 for F(4x4, 3x3) and
# 0, +-1 for F(2x2, 3x3): Y = A^T [(G g G^T) * (B^T d B)] A.
F4 = (np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
                [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], float),
      np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
                [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], float),
      np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], float))
F2 = (np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], float),
      np.array([[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]], float),
      np.array([[1, 1, 1, 0], [0, 1, -1, -1]], float))


def to_bf16(x):
    """x rounded to bf16 (nearest even), as float64."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


def direct(d, w, m):
    """The m x m outputs of every tile d (tiles x C x (m+2) x (m+2)) for weights w (C x 3 x 3)."""
    out = np.zeros((d.shape[0], m, m))
    for i in range(m):
        for j in range(m):
            out[:, i, j] = np.einsum("ncxy,cxy->n", d[:, :, i:i + 3, j:j + 3], w)
    return out


def errors(y, ref):
    scale = np.sqrt((ref ** 2).mean())
    return np.sqrt(((y - ref) ** 2).mean()) / scale, np.abs(y - ref).max() / scale


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--channels", type=int, default=128)
    parser.add_argument("--tiles", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{args.tiles} tiles of {args.channels} channels; relative error: rms, max (of the rms output)")
    for name, (bt, g, at) in (("F(4x4, 3x3)", F4), ("F(2x2, 3x3)", F2)):
        m = at.shape[0]
        d = rng.standard_normal((args.tiles, args.channels, m + 2, m + 2))
        w = rng.standard_normal((args.channels, 3, 3)) / np.sqrt(9 * args.channels)
        ref = direct(d, w, m)
        v = np.einsum("ab,ncbd,ed->ncae", bt, d, bt)  # transformed tiles
        u = np.einsum("ab,cbd,ed->cae", g, w, g)  # transformed weights
        for precision, (vv, uu) in (("exact", (v, u)), ("bf16", (to_bf16(v), to_bf16(u)))):
            y = np.einsum("ab,nbd,ed->nae", at, np.einsum("ncae,cae->nae", vv, uu), at)
            print("  %-12s winograd, products %-5s  %.2e  %.2e" % ((name, precision) + errors(y, ref)))
        print("  %-12s direct, products bf16      %.2e  %.2e" % ((name,) + errors(direct(to_bf16(d), to_bf16(w), m), ref)))


if __name__ == "__main__":
    main()
