"""Eager ops: every op of porta's registry, plugins' included, as porta.ops.<Name>.

    porta.ops.MatMul(a, b)                    # inputs positional
    porta.ops.Softmax(x, axis=0)              # attributes as keywords, checked against the schema
    porta.ops.call("com.example::ScaledSwish", x, alpha=1.5)   # a name with its domain

Inputs are porta.Tensor, numpy arrays (borrowed without copy when their strides allow), DLPack
producers (torch tensors) or anything numpy.asarray takes; None stands for an absent optional
input. The op runs on its inputs' device. One output is returned as a porta.Tensor, several as
a tuple; num_outputs=N asks for N outputs of an op with optional ones.
"""
from . import _porta


def find(name):
    """The op a name means ('MatMul', 'com.example::ScaledSwish'), as a callable porta.Op."""
    return _porta.find_op(name)


def call(name, *inputs, **attributes):
    """Runs the op `name` eagerly: call('MatMul', a, b)."""
    return _porta.find_op(name)(*inputs, **attributes)


def names():
    """Qualified names of every registered op ('Add', 'com.example::ScaledSwish', ...)."""
    return _porta.op_names()


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return _porta.find_op(name)
    except _porta.InvalidArgument as e:
        raise AttributeError(str(e)) from None


def __dir__():
    return sorted(set(globals()) | {n for n in _porta.op_names() if "::" not in n})
