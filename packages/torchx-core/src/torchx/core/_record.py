"""What TorchX keeps of a layer in the instance, built or not, and how it is read.

A built leaf layer *is* its native module (``type(layer) is nn.Linear``), so
what makes it a TorchX layer is its :class:`LayerRecord`: the layer class,
the arguments as given, its name. Specs, summaries, error messages and
``load_state_dict`` read layers through these functions, not through the
layer classes, which is why they sit below :mod:`torchx.core._layer`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from torch import nn

from torchx.core._errors import ArgumentError, TorchXError, short_repr

if TYPE_CHECKING:
    from torchx.core._layer import Layer
    from torchx.core._pending import Layout

__all__ = [
    "LayerRecord",
    "given_name",
    "init_module_state",
    "layer_caption",
    "layer_name",
    "layer_view",
    "name_problem",
    "record_of",
    "set_given_name",
]

_NOT_MODULE_STATE = frozenset({"_parameters", "_buffers", "_non_persistent_buffers_set", "_modules"})
MODULE_STATE = frozenset(key for key in nn.Module().__dict__ if key not in _NOT_MODULE_STATE)
"""``nn.Module`` bookkeeping (hooks, training flag) that a layer keeps across a build."""
_MODULE_PROTOTYPE = tuple(
    (key, type(value) if isinstance(value, (dict, set)) else None, value)
    for key, value in nn.Module().__dict__.items()
)


def init_module_state(module: nn.Module) -> None:
    """What ``nn.Module.__init__`` sets up (fresh hook dicts, empty parameter
    stores, the training flag), copied from a prototype: about twice as fast,
    which counts when thousands of unbuilt layers are created in bulk."""
    state = module.__dict__
    for key, container, value in _MODULE_PROTOTYPE:
        state[key] = container() if container else value


@dataclass(slots=True)
class LayerRecord:
    """What TorchX keeps of a layer, in the instance, before and after its build.

    After the build the layer *is* its native module; the record is how specs,
    error messages and ``load_state_dict`` still know it as a TorchX layer,
    even when a tool swaps its class (FSDP, parametrizations).
    """

    layer_class: type[Layer]
    arguments: dict[str, Any]
    """The constructor arguments as given (nothing inferred)."""
    layout: Layout | None = None
    """The native module's parameters and buffers (leaf layers)."""
    inferred: dict[str, Any] | None = field(default=None)
    """The arguments read off the input at the build (``None`` until then)."""
    name: str | None = None
    """The name given with ``name=``: the layer's submodule path in a
    ``Functional`` (``"layer1.0.conv1"``), its key in a ``Sequential``; shown
    in specs, summaries, plots and errors."""
    key: tuple[Any, ...] | None = None
    """The class and arguments as a cache key of what they decide (the layout,
    formulas); None where an argument is not plain data (leaf layers)."""


_NAME = re.compile(r"[^\s.]+(?:\.[^\s.]+)*")
"""Dot-separated non-empty parts without whitespace."""


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a layer, or None when it can: a name is a
    non-empty string of dot-separated parts (a submodule path, ``"layer1.0.conv1"``),
    each part without spaces."""
    if not isinstance(name, str):
        return f"a layer name is a string, got {type(name).__name__}"
    if not _NAME.fullmatch(name) or not name.isprintable():
        return (
            f"layer name {short_repr(name)} is not a submodule path: give non-empty parts "
            "without spaces, separated by dots (like 'head' or 'layer1.0.conv1')"
        )
    return None


def record_of(module: nn.Module) -> LayerRecord | None:
    """The TorchX record of ``module``: a layer, built or not; None for a plain torch module."""
    record = module.__dict__.get("_torchx")
    return record if isinstance(record, LayerRecord) else None


def given_name(module: nn.Module) -> str | None:
    """The name ``module`` was given with ``name=`` (None: none, or a plain torch module)."""
    record = record_of(module)
    return None if record is None else record.name


def set_given_name(module: nn.Module, name: str | None) -> None:
    """Give the TorchX layer ``module`` the name ``name`` (as ``name=`` does)."""
    problem = None if name is None else name_problem(name)
    if problem is not None:
        raise ArgumentError(problem, argument="name")
    record = record_of(module)
    if record is None:
        raise TorchXError(f"{type(module).__name__} is a plain torch module; only TorchX layers take a name")
    record.name = name


def layer_name(module: nn.Module) -> str:
    """How TorchX names ``module`` in messages, summaries and generated code: by
    its layer class for a TorchX layer (built or not: a built ``L.Lambda`` is
    ``Lambda``, not its native ``LambdaModule``), else by its own class."""
    record = record_of(module)
    return (record.layer_class if record is not None else type(module)).__name__


def layer_caption(module: nn.Module) -> str:
    """How summaries and pictures name ``module``: its layer class, after its
    name when it has one (``layer1.0.conv1 (Conv2d)``)."""
    name = given_name(module)
    return layer_name(module) if name is None else f"{name} ({layer_name(module)})"


def layer_view(module: nn.Module) -> Layer:
    """``module``'s TorchX layer: the module itself while it is an instance of
    its layer class (unbuilt, or a container), else (a built leaf, which is its
    native module) an unbuilt stand-in holding its record, on which the layer
    class's methods (``infer_arguments``, ``spec_fields``) run."""
    record = record_of(module)
    if record is None:
        raise TorchXError(f"{type(module).__name__} is a plain torch module, not a TorchX layer")
    if isinstance(module, record.layer_class):
        return module
    view: Layer = record.layer_class.__new__(record.layer_class)
    init_module_state(view)
    view.__dict__["_torchx"] = record
    return view
