"""porta from Python: models (Session), tensors and devices, eager ops, accuracy checks, plugins.

    import numpy as np, porta
    s = porta.Session("models/mlp/model.onnx", device="cpu")
    (y,) = s.run(None, {"x": np.random.rand(4, 64).astype(np.float32)})
    z = porta.ops.MatMul(np.ones((2, 3)), np.ones((3, 4)))   # a porta.Tensor; np.asarray(z)

Errors raise porta.Error subclasses (porta.ShapeError, porta.DTypeError, ...) with porta's
message.
"""
import os as _os

try:
    from . import _porta
except ImportError as e:
    raise ImportError(
        f"porta's extension module (_porta) is not in {_os.path.dirname(__file__)}: import the built "
        "package (PYTHONPATH=build/python after building with pybind11) or an installed one; "
        f"the error was: {e}") from e
from ._porta import (  # noqa: F401  (re-exported)
    BackendError,
    BackendUnavailable,
    DeviceMismatch,
    DTypeError,
    Error,
    InvalidArgument,
    InvalidModel,
    OutOfMemory,
    Session,
    ShapeError,
    Tensor,
    Unsupported,
    ValueInfo,
    devices,
    from_dlpack,
    load_plugin,
    tensor,
)
from . import ops  # noqa: F401

__version__ = _porta.__version__

__all__ = [
    "Session", "ValueInfo", "Tensor", "tensor", "from_dlpack", "devices", "ops", "check",
    "load_plugin", "Error", "InvalidModel", "ShapeError", "DTypeError", "DeviceMismatch",
    "Unsupported", "OutOfMemory", "BackendUnavailable", "BackendError", "InvalidArgument",
]


def _bundled_feeds(model):
    """Inputs listed in the model folder's inputs.txt ('name file.npy' lines), as porta's
    bundled models (models/*/) have them."""
    import numpy as np

    folder = _os.path.dirname(_os.path.abspath(model))
    listing = _os.path.join(folder, "inputs.txt")
    if not _os.path.exists(listing):
        raise InvalidArgument(
            f"[check] feeds are needed: {model!r} has no inputs.txt beside it to take them from")
    feeds = {}
    with open(listing) as f:
        for line in f:
            if line.strip():
                name, file = line.split()
                feeds[name] = np.load(_os.path.join(folder, file))
    return feeds


# A low precision's own rounding (as `porta check --precision`): bf16 keeps 8 significant bits,
# f16 11.
_CHECK_TOLERANCE = {"f32": 1e-4, "bf16": 3e-2, "f16": 4e-3, "auto": 3e-2}


def check(model, feeds=None, devices=("cpu",), strict=False, tolerance=None, precision="f32"):
    """Runs `model` (a path) on each device and node by node on the float64 reference, and
    returns the per-node error table as a list of dicts, nodes in graph order and the devices
    of a node next to each other:

        {"node", "op", "device", "max_abs", "rel", "computed", "over", "precision", "jump", "fused"}

    `precision` runs the sessions in that compute format (porta.Session's precision);
    "precision" is the format each node computed in, and "jump" marks a node over the
    tolerance whose error is more than 4x the worst error of the values it read (where the
    accuracy was lost); "fused" names the ops computed inside the node (a graph fusion folded
    them into it; their own rows are not computed). `tolerance` defaults to 1e-4 (f32), 3e-2 (bf16, auto) or 4e-3 (f16).

    max_abs = max |device - reference|, rel = ||device - reference||_2 / ||reference||_2 over
    the node's outputs; computed is False for a node the device fused into another (no value
    of its own); over is rel > tolerance. `feeds` defaults to the model folder's inputs.txt.
    The same table as `porta check MODEL --devices ...` prints.
    """
    model = _os.fspath(model)
    if feeds is None:
        feeds = _bundled_feeds(model)
    if isinstance(devices, str):
        devices = [devices]
    if precision not in _CHECK_TOLERANCE:
        raise InvalidArgument(f"[precision] should be one of f32, bf16, f16, auto; got '{precision}'")
    if tolerance is None:
        tolerance = _CHECK_TOLERANCE[precision]
    return _porta._check(model, dict(feeds), list(devices), bool(strict), float(tolerance), precision)
