"""Shared fixtures of the porta Python tests (run by ctest python_api with PYTHONPATH set to the
build tree's package: PYTHONPATH=build/python python3 -m pytest -q python/tests)."""
import os
import pathlib

import numpy as np
import pytest

import porta

SOURCE = pathlib.Path(__file__).resolve().parents[2]
MODELS = pathlib.Path(os.environ.get("PORTA_MODELS_DIR", SOURCE / "models"))


@pytest.fixture
def rng(request):
    # Fresh inputs every run; the seed is printed on failure by pytest's captured output.
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"seed {seed}")
    return np.random.default_rng(seed)


def available_devices():
    """Every available device of the built backends (cpu always)."""
    return [d["device"] for d in porta.devices() if d["available"]]


def plugin_dir():
    folder = os.environ.get("PORTA_TEST_PLUGIN_DIR")
    if not folder:
        pytest.skip("PORTA_TEST_PLUGIN_DIR is not set (ctest python_api sets it)")
    return pathlib.Path(folder)


def bundled(model):
    """A bundled model's folder: (path of model.onnx, feeds, reference outputs by name)."""
    folder = MODELS / model
    feeds, outputs = {}, {}
    for listing, into in (("inputs.txt", feeds), ("outputs.txt", outputs)):
        for line in (folder / listing).read_text().splitlines():
            if line.strip():
                name, file = line.split()
                into[name] = np.load(folder / file)
    return str(folder / "model.onnx"), feeds, outputs
