#!/usr/bin/env python3
"""Compares porta's output with make_model.py's float64 expectation.
Usage: check_output.py EXPECTED.npy GOT.npy -> prints the relative error, exits 1 above 1e-5."""
import sys

import numpy as np

want = np.load(sys.argv[1])
got = np.load(sys.argv[2]).astype(np.float64)
if got.shape != want.shape:
    print(f"shape {got.shape}, expected {want.shape}")
    sys.exit(1)
err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
print(f"max relative error {err:.2e}")
sys.exit(0 if err <= 1e-5 else 1)
