"""The operations a graph spec may name: functions, operators and tensor methods.

A spec names a function by its place in one of torch's own namespaces
("torch.cat", "F.scaled_dot_product_attention", "torch.linalg.norm",
"torch.Tensor.split"), an operator by "operator.mul", and a tensor method
by its name ("flatten"). A name resolves only by looking its last part up as
an attribute of one of those namespace objects, and only to a function a graph
records (one that dispatches on placeholders through ``__torch_function__``):
nothing is imported or evaluated by name, and modules, classes and private
names are never reached. Graphs that use anything else still run, but refuse
to be written to a spec.
"""

from __future__ import annotations

import functools
import inspect
import operator
import types
from collections.abc import Callable
from typing import Any, cast

import torch
import torch.nn.functional as F

__all__ = [
    "FACTORIES",
    "INFIX",
    "LAYOUT_METHODS",
    "MODE_ARGUMENTS",
    "UNINITIALISED_METHODS",
    "ZERO_FILLED_FUNCTIONS",
    "ZERO_FILLED_METHODS",
    "function_named",
    "is_spec_method",
    "name_of_function",
]

_NAMESPACES: dict[str, Any] = {
    "torch": torch,
    "F": F,
    "torch.nn.functional": F,
    "torch.linalg": torch.linalg,
    "torch.special": torch.special,
    "torch.fft": torch.fft,
    "torch.Tensor": torch.Tensor,
}
"""The namespaces a spec's function names are looked up in, by the prefix it
writes (the first one an object is found in is how it is written)."""

_OPERATORS = (
    "add sub mul truediv floordiv mod pow matmul and_ or_ xor neg pos abs invert lt le gt ge eq ne getitem"
).split()
_OPERATOR_FUNCTIONS: dict[str, Callable[..., Any]] = {
    f"operator.{name}": getattr(operator, name) for name in _OPERATORS
}
"""Python's operators a graph records (``x + 1``), by name: a list, because
``operator`` also holds ``attrgetter`` and ``methodcaller``, which reach any attribute."""
_OPERATOR_NAMES: dict[int, str] = {id(function): name for name, function in _OPERATOR_FUNCTIONS.items()}

_DENIED = frozenset(
    (
        # files and code: read or write a path, or load a program
        "load", "save", "from_file", "import_ir_module", "import_ir_module_from_buffer", "compile",
        # process-wide state: seeds, defaults, threads, flags
        "manual_seed", "seed", "set_rng_state", "use_deterministic_algorithms",
        # tensor methods that act outside the value: autograd, hooks, storage, streams, host memory
        "backward", "register_hook", "register_post_accumulate_grad_hook", "retain_grad", "record_stream",
        "pin_memory", "share_memory_", "storage", "untyped_storage", "data_ptr", "module_load", "as_subclass",
        "numpy", "tolist", "item",
    )
)  # fmt: skip
"""Names a spec may not call, whatever the namespace: defence in depth. The
namespace rule alone keeps out ``torch.hub``, ``torch.utils`` and ``torch.jit``
(modules), ``os``/``builtins`` (not torch's) and private names (``torch._C``);
the recorded-function rule keeps out what cannot take a placeholder
(``torch.load``, ``torch.save``, ``torch.from_file`` and the ``set_*`` functions
are not among torch's overridable functions). This list refuses them by name as
well, so a later torch that made one of them overridable would still not let a
spec read a file, run a program, change process-wide state or touch memory
outside a tensor's value."""


def _allowed_name(name: Any) -> bool:
    """A public identifier (no dots, no ``_`` prefix, ASCII), not denied."""
    return (
        isinstance(name, str)
        and name.isascii()
        and name.isidentifier()
        and not name.startswith("_")
        and name not in _DENIED
        and not name.startswith("set_")
    )


ZERO_FILLED_METHODS: dict[str, str] = {"new_empty": "new_zeros"}
"""Tensor methods that return uninitialised memory, and the zero-filled twin
with the same signature that a graph records in their place.

Uninitialised memory holds whatever a freed tensor left there (another model's
activations, another user's data); a graph, and above all a spec (data anyone
can load), must not hand it out. The contents of ``new_empty`` are unspecified,
so zeros are a correct value for them: the graph keeps its meaning, its code
shows what runs (``x.new_zeros(...)``) and one behaviour holds for graphs
defined in Python and graphs read from a spec."""

ZERO_FILLED_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    torch.empty: torch.zeros,
    torch.empty_like: torch.zeros_like,
    torch.Tensor.new_empty: torch.Tensor.new_zeros,
}
"""Torch functions recorded as their zero-filled twins, as ZERO_FILLED_METHODS."""

FACTORIES = frozenset((torch.arange, torch.eye, torch.full, torch.ones, torch.zeros))
"""Torch functions that make a tensor from sizes alone: a graph records them
where a size is dynamic (``torch.arange(x.shape[1])``), on the device of the
input the size was read from unless the call names one."""

LAYOUT_METHODS = frozenset(("stride", "storage_offset", "is_contiguous", "is_non_overlapping_and_dense"))
"""Tensor methods that read how a tensor lies in memory: at run time that
follows the inputs (their lengths, views of larger tensors, channels-last),
which a graph does not know when it is defined, so it refuses to record them."""

MODE_ARGUMENTS: dict[Callable[..., Any], tuple[str, int, Any]] = {
    **{
        dropout: ("training", 2, inspect.signature(dropout).parameters["training"].default)
        for dropout in (
            F.dropout,
            F.dropout1d,
            F.dropout2d,
            F.dropout3d,
            F.alpha_dropout,
            F.feature_alpha_dropout,
        )
    },
    F.scaled_dot_product_attention: ("dropout_p", 4, 0.0),
}
"""Functions with an argument that a module writes by its mode
(``dropout_p=p if self.training else 0.0``), which a graph records to follow
the model's mode: the argument's name, its position and its default.
``training=True``, given or by default (``F.dropout(x, p)``: torch passes the
default on, so the two cannot be told apart), follows the mode, and so does
any ``dropout_p``; ``training=False`` never drops (``F.alpha_dropout``'s
default). Dropout in both modes (Monte Carlo dropout) is ``torch.dropout(x, p, True)``."""

UNINITIALISED_METHODS = frozenset(("new", "new_empty_strided", "resize", "resize_as"))
"""Tensor methods that may return uninitialised memory and have no zero-filled
twin with their signature: a graph refuses to record them."""

INFIX: dict[Callable[..., Any], str] = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
    operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
    operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.lt: "<", operator.le: "<=",
    operator.gt: ">", operator.ge: ">=", operator.eq: "==", operator.ne: "!=",
}  # fmt: skip
"""Binary operators written infix in generated code."""


@functools.cache
def _recorded_functions() -> frozenset[Callable[..., Any]]:
    """The functions of torch's namespaces a graph records: those that dispatch on
    placeholders through ``__torch_function__``, and the factories of sizes."""
    overridable = torch.overrides.get_overridable_functions()
    found: set[Callable[..., Any]] = {
        function for functions in overridable.values() for function in functions
    }
    found.update(ZERO_FILLED_FUNCTIONS.values(), cast("frozenset[Callable[..., Any]]", FACTORIES))
    # torch's list misses some functional ops that dispatch all the same (F.hardsigmoid, F.hardswish)
    found.update(
        function
        for function in vars(F).values()
        if isinstance(function, types.FunctionType) and function.__module__ == F.__name__
    )
    return frozenset(found)


_FUNCTION_TYPES = (
    types.BuiltinFunctionType,
    types.FunctionType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
)


def _member(namespace: Any, attribute: Any) -> Callable[..., Any] | None:
    """The function ``attribute`` names in ``namespace`` if a spec may call it: a
    public name, found in the namespace's own dict (no ``__getattr__`` or
    descriptor runs), a function (not a module, class or other object), and one
    a graph records."""
    if not _allowed_name(attribute):
        return None
    found = inspect.getattr_static(namespace, attribute, None)
    # torch.Tensor's C methods take tensors only; its Python ones dispatch on placeholders
    kinds = types.FunctionType if namespace is torch.Tensor else _FUNCTION_TYPES
    if not isinstance(found, kinds) or found not in _recorded_functions():
        return None
    return found


@functools.cache
def _spec_names() -> dict[Callable[..., Any], str]:
    """The spec name of each function a spec may call: its first place in
    :data:`_NAMESPACES`, under its own ``__name__`` where a namespace holds it
    under several (``torch.special.expit`` is named ``special_expit``)."""
    names: dict[Callable[..., Any], str] = {}
    for prefix, namespace in _NAMESPACES.items():
        found = {
            attribute: function
            for attribute in dir(namespace)
            if (function := _member(namespace, attribute)) is not None and function not in names
        }
        for attribute, function in sorted(found.items(), key=lambda item: item[1].__name__ != item[0]):
            names.setdefault(function, f"{prefix}.{attribute}")
    return names


def name_of_function(function: Callable[..., Any]) -> str | None:
    """The spec name of ``function`` ("torch.cat", "F.layer_norm"), or None if specs cannot name it."""
    name = _OPERATOR_NAMES.get(id(function))
    if name is not None:
        return name
    try:
        return _spec_names().get(function)
    except TypeError:  # unhashable: no function of torch's
        return None


def function_named(name: Any) -> Callable[..., Any] | None:
    """The function a spec names: ``operator.<name>`` of the operators a graph
    records, or ``<prefix>.<name>`` with a prefix of :data:`_NAMESPACES`, looked up
    as an attribute of that namespace object; None for anything else."""
    if not isinstance(name, str):
        return None
    if name in _OPERATOR_FUNCTIONS:
        return _OPERATOR_FUNCTIONS[name]
    prefix, _, attribute = name.rpartition(".")
    namespace = _NAMESPACES.get(prefix)
    return None if namespace is None else _member(namespace, attribute)


def is_spec_method(name: Any) -> bool:
    """Whether a spec may name the tensor method ``name``: a public method of
    ``torch.Tensor`` (not a property), not denied. A graph records a method on
    its placeholders (shapes worked out on meta tensors), never on data."""
    if not _allowed_name(name):
        return False
    method = inspect.getattr_static(torch.Tensor, name, None)
    return isinstance(method, (types.MethodDescriptorType, types.FunctionType))
