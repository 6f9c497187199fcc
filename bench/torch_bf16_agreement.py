#!/usr/bin/env python3
"""PyTorch's own bf16 against its f32, on the zoo's image classifiers: the peer figure next to
porta's `ctest -R zoo_precision` (tests/zoo_test.cpp, ZooPrecisionRun).

Each member is built as scripts/export_zoo.py builds it (the same fixed-seed random weights),
then fed N fresh random images drawn like its sample input (normal, the sample's mean and
spread), once in f32 and once under torch.autocast("cpu", dtype=torch.bfloat16), which runs the
convolutions and linear layers in bf16 with f32 accumulation and keeps the rest in f32, as
porta's --precision bf16 does. Printed per member, as the ctest prints porta's: top-1
agreement with f32, the flips between classes that f32 separates by less than twice that
input's largest logit error ("close calls"), and the median and worst relative error of the
logits (max |bf16 - f32| / max |f32| per input).

Usage: /usr/bin/python3 bench/torch_bf16_agreement.py [--inputs N] [--threads T] [NAME ...]
  NAMEs are zoo members without the opset suffix (default: every image classifier).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import export_zoo  # noqa: E402  (the zoo's members, weights and sample inputs)

SEGMENTATION = ("seg:",)


def classifiers():
    return [name for name, (kind, what, _, _) in export_zoo.MEMBERS.items()
            if what == "image" and not kind.startswith(SEGMENTATION)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    names = args.names or classifiers()
    unknown = [n for n in names if n not in classifiers()]
    if unknown:
        sys.exit(f"[torch-bf16] not an image classifier of the zoo: {', '.join(unknown)} "
                 f"(they are: {', '.join(classifiers())})")
    total = agree_all = 0
    print(f"# torch {torch.__version__}: autocast('cpu', bfloat16) against f32, {args.inputs} inputs per model")
    failed = []
    for name in names:
        try:
            agree, rows = measure(torch, name, args.inputs)
        except RuntimeError as e:  # autocast has no bf16 path for some modules in some versions
            failed.append(name)
            print(f"{name}: torch's autocast failed: {str(e).splitlines()[0]}", flush=True)
            continue
        total += rows
        agree_all += agree
    left_out = f"; left out: {', '.join(failed)}" if failed else ""
    print(f"all: {agree_all}/{total} ({100.0 * agree_all / max(total, 1):.1f}%){left_out}")


def measure(torch, name, inputs):
    """Prints member `name`'s agreement line; returns (inputs agreeing, inputs)."""
    model = export_zoo.build(torch, name).eval()
    sample = export_zoo.make_input(torch, name)
    mean, spread = float(sample.mean()), float(sample.std())
    g = torch.Generator().manual_seed(2)
    agree = close = 0
    errors = []
    with torch.no_grad():
        for _ in range(inputs):
            x = torch.randn(sample.shape, generator=g) * spread + mean
            a = model(x).float()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                b = model(x).float()
            worst = float((a - b).abs().max())
            errors.append(worst / float(a.abs().max()))
            for row in range(a.shape[0]):
                top, top_low = int(a[row].argmax()), int(b[row].argmax())
                if top == top_low:
                    agree += 1
                elif float(a[row, top] - a[row, top_low]) <= 2 * worst:
                    close += 1
    rows = inputs * sample.shape[0]
    errors.sort()
    print(f"{name}: top-1 agreement with f32 {agree}/{rows} ({100.0 * agree / rows:.0f}%; {close} close calls), "
          f"logits relative error median {errors[len(errors) // 2]:.3g}, worst {errors[-1]:.3g}", flush=True)
    return agree, rows


if __name__ == "__main__":
    main()
