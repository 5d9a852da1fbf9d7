"""What a layer's native class takes, and the check that a layer asks for nothing else.

Checked when a layer class is defined, as pluggy checks a hook implementation
against its spec when it is registered: every parameter of the layer's
``__init__`` and every inferred argument must be a parameter of its
``native_class``, so that ``def __init__(self, out_feature: int)`` in a layer
around ``nn.Linear`` fails at ``class`` time, naming ``out_features``.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from torchx.core._arguments import signature_of
from torchx.core._errors import ArgumentError, short_repr

if TYPE_CHECKING:
    from torchx.core._leaf import LeafLayer

__all__ = ["check_layer_signature", "is_default", "native_parameters", "refuse_missing_newer"]

LAYER_PARAMETERS = frozenset({"self", "name"})
"""Parameters every layer's ``__init__`` may take that the native does not (``name=``)."""


def native_parameters(native: type[nn.Module]) -> Mapping[str, inspect.Parameter] | None:
    """The keyword parameters ``native(...)`` takes, following ``**kwargs`` up the
    class's bases; None when that cannot be read off the signatures (an
    ``__init__(*args, **kwargs)`` such as ``nn.LSTM``'s, which picks its
    arguments itself)."""
    found: dict[str, inspect.Parameter] = {}
    for base in native.__mro__:
        if "__init__" not in base.__dict__ or base is object:
            continue
        try:
            parameters = signature_of(base)  # kept: the first build of the layer reads it again
        except (TypeError, ValueError):
            return None
        named = {name: p for name, p in parameters.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        if not named:
            return None  # (*args, **kwargs) alone, as nn.LSTM's: what it takes is not written down
        found.update(named)
        if not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
            return found
    return found


def check_layer_signature(cls: type[LeafLayer]) -> None:
    """Refuse a layer class whose ``__init__``, ``inferred_arguments`` or ``native_arguments`` name a
    parameter its ``native_class`` does not take; set its ``_torchx_missing_newer``.

    :raises TypeError: naming the parameter, the native class, and the
        closest parameter the native does take.
    """
    native = cls.native_class
    accepted = None if native is None else native_parameters(native)
    cls._torchx_missing_newer = (
        frozenset() if accepted is None else cls.newer_native_arguments.difference(accepted)
    )
    if native is None or accepted is None:
        return
    own = [
        name
        for name, parameter in signature_of(cls).items()
        if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
    ]
    for name, where in [
        *((name, "__init__ parameter") for name in own),
        *((name, "inferred argument") for name in cls.inferred_arguments),
        *((name, "native argument") for name in cls.native_arguments),
    ]:
        if name in accepted or name in LAYER_PARAMETERS or name in cls.newer_native_arguments:
            continue
        close = difflib.get_close_matches(name, accepted, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise TypeError(
            f"{cls.__qualname__}: {where} {name!r} is not a parameter of {native.__qualname__} "
            f"(it takes {', '.join(p for p in accepted if p != 'self')}){hint}"
        )


def refuse_missing_newer(
    cls: type[LeafLayer], arguments: dict[str, Any], defaults: Mapping[str, Any]
) -> None:
    """Where the torch installed is older than some of ``cls.newer_native_arguments``:
    leave out of ``arguments`` those given at their default (what the native does
    without them), and refuse one given another value.

    :raises ArgumentError: naming the argument, the native class and the torch installed.
    """
    for name in cls._torchx_missing_newer.intersection(arguments):
        value = arguments[name]
        if name in defaults and is_default(value, defaults[name]):
            del arguments[name]
            continue
        native_name = "" if cls.native_class is None else cls.native_class.__qualname__
        raise ArgumentError(
            f"{cls.__qualname__}: {name}={short_repr(value)} needs a newer torch: {native_name} of torch "
            f"{torch.__version__} takes no {name}",
            argument=name,
            fix=f"leave {name} at its default ({short_repr(defaults.get(name))}), or upgrade torch",
        )


def is_default(value: Any, default: Any) -> bool:
    """Whether ``value`` is ``default``: equal, of its type."""
    try:
        return bool(value == default) and type(value) is type(default)
    except Exception:  # noqa: BLE001 - tensors and odd objects compare ambiguously: not the default
        return False
