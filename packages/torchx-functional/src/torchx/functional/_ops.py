"""The operations a graph spec may name: functions, operators and tensor methods.

A spec names a function by its place in one of torch's own namespaces
("torch.cat", "F.scaled_dot_product_attention", "torch.linalg.norm",
"torch.Tensor.split"), an operator by "operator.mul", and a tensor method
by its name ("flatten"). A name resolves only by looking its last part up as
an attribute of one of those namespace objects, and only to a function a graph
records (one that dispatches on placeholders through ``__torch_function__``)
and that is on the allow-list (:mod:`torchx.functional._allow_list`): nothing
is imported or evaluated by name, and modules, classes and private names are
never reached. A graph defined in Python is held to the same list when it
records a call (:func:`check_call`), so what can be defined can be saved; only
what lies outside torch's namespaces (a Python operator's dunder) is recorded
and refused when written to a spec.
"""

from __future__ import annotations

import functools
import inspect
import operator
import types
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from torchx.core import TorchXError
from torchx.functional._allow_list import FUNCTIONS, METHODS

__all__ = [
    "FACTORIES",
    "INFIX",
    "LAYOUT_METHODS",
    "MODE_ARGUMENTS",
    "UNINITIALISED_METHODS",
    "ZERO_FILLED_FUNCTIONS",
    "ZERO_FILLED_METHODS",
    "check_call",
    "check_method",
    "function_named",
    "is_spec_method",
    "name_of_function",
    "updated_arguments",
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

_LISTED_AS = {"torch.nn.functional": "F"}
"""Prefixes the allow-list knows by another name."""

_OPERATORS = (
    "add sub mul truediv floordiv mod pow matmul and_ or_ xor neg pos abs invert lt le gt ge eq ne getitem"
).split()
_OPERATOR_FUNCTIONS: dict[str, Callable[..., Any]] = {
    f"operator.{name}": getattr(operator, name) for name in _OPERATORS
}
"""Python's operators a graph records (``x + 1``), by name: a list, because
``operator`` also holds ``attrgetter`` and ``methodcaller``, which reach any attribute."""
_OPERATOR_NAMES: dict[int, str] = {id(function): name for name, function in _OPERATOR_FUNCTIONS.items()}

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


_RECORDED_FACTORIES = frozenset([*ZERO_FILLED_FUNCTIONS.values(), *FACTORIES])
_TORCH_PUBLIC = frozenset([*torch.__all__, *torch.functional.__all__])
"""The names of ``torch`` that dispatch on placeholders: a name outside them (a
removed function's stub, ``torch.cholesky`` on torch 2.14) does not."""


def _records(function: Callable[..., Any]) -> bool:
    """Whether a graph records ``function`` of torch's namespaces: it dispatches
    on placeholders through ``__torch_function__`` (every function but those
    torch lists as ignoring it; its list of those that dispatch takes a
    hundred times longer to make, and misses functional ops that dispatch all
    the same, F.hardsigmoid, F.hardswish), or is a factory of sizes."""
    return (
        function not in torch.overrides.get_ignored_functions()
        or function in _RECORDED_FACTORIES
        or (isinstance(function, types.FunctionType) and function.__module__ == F.__name__)
    )


_FUNCTION_TYPES = (
    types.BuiltinFunctionType,
    types.FunctionType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
)


def _member(prefix: str, attribute: str) -> Callable[..., Any] | None:
    """The function ``attribute`` names in the namespace ``prefix`` if a spec may
    call it: on the allow-list, found in the namespace's own dict (no
    ``__getattr__`` or descriptor runs) and a function (not a module, class or
    other object)."""
    if attribute not in FUNCTIONS[prefix] or (prefix == "torch" and attribute not in _TORCH_PUBLIC):
        return None
    namespace = _NAMESPACES[prefix]
    found = (
        vars(namespace).get(attribute)
        if isinstance(namespace, types.ModuleType)
        else inspect.getattr_static(namespace, attribute, None)
    )
    # torch.Tensor's C methods take tensors only; its Python ones dispatch on placeholders
    kinds = types.FunctionType if namespace is torch.Tensor else _FUNCTION_TYPES
    return found if isinstance(found, kinds) else None


def name_of_function(function: Callable[..., Any]) -> str | None:
    """The spec name of ``function``, a function a graph recorded ("torch.cat",
    "F.layer_norm"), or None if specs cannot name it (whether a function
    records at all is asked by :func:`function_named`, as a spec is read)."""
    name = _OPERATOR_NAMES.get(id(function))
    if name is not None:
        return name
    try:
        return _name_in_namespaces(function)
    except TypeError:  # unhashable: no function of torch's
        return None


@functools.cache
def _name_in_namespaces(function: Callable[..., Any]) -> str | None:
    """The first place in :data:`_NAMESPACES` where a spec may call
    ``function``: the first namespace holding it under a listed name (the
    first such name there, should it hold several). Looked up first by its own
    name, a few dict reads, where a namespace holds it under that name: for
    every function of torch's that is the first name reaching it (the scan of
    whole namespaces, 0.1 ms each, is left to those held under other names)."""
    name = getattr(function, "__name__", None)
    if isinstance(name, str):
        for prefix in _NAMESPACES:
            if _member(_LISTED_AS.get(prefix, prefix), name) is function:
                return f"{prefix}.{name}"
    for prefix, namespace in _NAMESPACES.items():
        listed = _LISTED_AS.get(prefix, prefix)
        held = sorted(attribute for attribute, value in vars(namespace).items() if value is function)
        for attribute in held:
            if _member(listed, attribute) is function:
                return f"{prefix}.{attribute}"
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
    prefix = _LISTED_AS.get(prefix, prefix)
    found = _member(prefix, attribute) if prefix in FUNCTIONS else None
    return found if found is not None and _records(found) else None


def is_spec_method(name: Any) -> bool:
    """Whether a spec may name the tensor method ``name``: one on the allow-list
    that is a method of ``torch.Tensor`` (not a property). A graph records a
    method on its placeholders (shapes worked out on meta tensors), never on data."""
    if not isinstance(name, str) or name not in METHODS:
        return False
    method = inspect.getattr_static(torch.Tensor, name, None)
    return isinstance(method, (types.MethodDescriptorType, types.FunctionType))


def _unlisted(what: str, kind: str) -> TorchXError:
    return TorchXError(
        f"{what} is not on the allow-list of the {kind} a graph records (and a spec names): those that "
        "compute new values from their arguments and never read or write memory beyond them, format "
        "strings or call functions (torchx.functional._allow_list says what is left out and why). "
        "Fix: compute it with listed operations"
    )


_IN_PLACE_OPERATORS = frozenset(
    (
        "__setitem__", "__delitem__",
        *(f"__i{op}__" for op in "add sub mul truediv floordiv mod pow matmul and or xor lshift rshift".split()),
    )
)  # fmt: skip
"""The operators of a tensor that write into it (``t += x``, ``t[i] = x``)."""


def check_method(name: str) -> None:
    """Refuse to record the tensor method ``name`` unless it is on the allow-list
    or one of Python's operators (``t + x``: recorded, and refused by specs) that
    does not write into the tensor."""
    what = f"Tensor.{name}"
    _refuse_kind(name, what)
    if name not in METHODS and not (name.startswith("__") and name.endswith("__")):
        raise _unlisted(what, "tensor methods")


def _refuse_kind(name: str, what: str) -> None:
    """Refuse what writes into its input, returns uninitialised memory or reads the memory layout."""
    if name in _IN_PLACE_OPERATORS or (name.endswith("_") and not name.endswith("__")):
        raise TorchXError(
            f"{what} works in place, which a graph cannot record; use the out-of-place form "
            f"({name.strip('_').removeprefix('i') if name.startswith('__') else name.rstrip('_')}) and use its result"
        )
    if name in UNINITIALISED_METHODS:
        raise TorchXError(
            f"{what} may return uninitialised memory (whatever a freed tensor held there), which a graph "
            "does not record; use x.new_zeros(size) (or x.new_tensor(data), torch.zeros_like(x))"
        )
    if name in LAYOUT_METHODS:
        raise TorchXError(
            f"{what} reads how a tensor lies in memory, which a graph only knows at run time (it follows "
            "the inputs' lengths and layout), so it cannot be recorded. Fix: cut windows with "
            "x.unfold(dim, size, step), and give shapes with sizes read off x.shape (x.view(b, t, -1))"
        )


def check_call(
    function: Callable[..., Any], what: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments to record ``function`` with, or a refusal: a function of
    torch's namespaces must be on the allow-list, and no call writes ``out=``.
    ``inplace=True`` gives the same value as the out-of-place call, which is
    recorded in its place (by keyword or by position: ``F.relu(x, True)``)."""
    name = getattr(function, "__name__", "")
    if isinstance(function, types.MethodDescriptorType) or function in _TENSOR_FUNCTIONS:
        check_method(name)  # torch.Tensor.add_(x, 1): a method by another name
    elif name_of_function(function) is None and _in_namespaces(function):
        _refuse_kind(name, what)
        raise _unlisted(what, "functions")
    code = getattr(function, "__code__", None)  # a function written in Python: its positional parameters
    positional = code.co_varnames[: code.co_argcount] if code is not None else ()
    out = args[positional.index("out")] if "out" in positional[: len(args)] else kwargs.get("out")
    if out is not None:
        raise TorchXError(
            f"{what} was given out=, which writes the result into a tensor the graph does not own (an "
            "input, a layer's parameter); use the value it returns"
        )
    if kwargs.get("inplace") is True:
        kwargs = {key: value for key, value in kwargs.items() if key != "inplace"}
    if "inplace" in positional[: len(args)] and args[positional.index("inplace")] is True:
        position = positional.index("inplace")
        args = (*args[:position], False, *args[position + 1 :])
    return args, kwargs


_TENSOR_FUNCTIONS = frozenset(
    value for value in vars(torch.Tensor).values() if isinstance(value, types.FunctionType)
)
"""The methods of torch.Tensor written in Python (``split``, ``norm``)."""


def _in_namespaces(function: Callable[..., Any]) -> bool:
    """Whether ``function`` is a public function of one of torch's namespaces a spec names from."""
    name = getattr(function, "__name__", None)
    return (
        isinstance(name, str)
        and not name.startswith("_")
        and any(inspect.getattr_static(space, name, None) is function for space in _NAMESPACES.values())
    )


UPDATED_ARGUMENTS: dict[Callable[..., Any], tuple[str, tuple[str, ...]]] = {
    F.batch_norm: ("training", ("running_mean", "running_var")),
    F.instance_norm: ("use_input_stats", ("running_mean", "running_var")),
    F.embedding: ("max_norm", ("weight",)),
    F.embedding_bag: ("max_norm", ("weight",)),
}
"""Functions that update some of their arguments in place: the argument that
makes them do so (unless it is False or None: training, max_norm) and the
arguments they update (running statistics, a renormalised embedding table)."""


def updated_arguments(
    function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The arguments a call of ``function`` updates in place, by name (see :data:`UPDATED_ARGUMENTS`)."""
    if function not in UPDATED_ARGUMENTS:
        return {}
    flag, updated = UPDATED_ARGUMENTS[function]
    given = inspect.signature(function).bind_partial(*args, **kwargs)
    given.apply_defaults()
    if given.arguments.get(flag) in (False, None):
        return {}
    return {name: given.arguments[name] for name in updated if given.arguments.get(name) is not None}
