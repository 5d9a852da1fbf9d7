"""The symbolic-input protocol: how a graph-building value takes over a module call.

A value whose type defines ``__torchx_call__(module, args, kwargs)`` is
*symbolic* (torchx-functional's ``Placeholder`` is one). When a TorchX layer or
container is called with a symbolic input, the call is handed to that method,
which records it (and builds the layer) instead of running it. Core defines
only the protocol; it never imports the graph package.

A value whose type sets ``__torchx_dynamic_size__`` is the size of a dynamic
dim of such a value (torchx-functional's ``x.shape[1]`` of a ``(None, None)``
placeholder): it has no value before the model runs, and a shape holding it
is read with ``None`` there.
"""

from __future__ import annotations

from typing import Any, Protocol

from torch import nn

__all__ = ["Symbolic", "find_symbolic", "is_dynamic_size", "is_symbolic"]


class Symbolic(Protocol):
    """A value that records module calls made on it."""

    def __torchx_call__(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any: ...


def is_symbolic(value: object) -> bool:
    """Whether ``value`` follows the symbolic-input protocol."""
    return hasattr(type(value), "__torchx_call__")


def is_dynamic_size(value: object) -> bool:
    """Whether ``value`` is the size of a dynamic dim of a symbolic value (see the module's docs)."""
    return getattr(type(value), "__torchx_dynamic_size__", False) is True


def find_symbolic(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Symbolic | None:
    """The first symbolic value among ``args`` and ``kwargs`` (one level into lists,
    tuples and dicts), or None."""
    for value in (*args, *kwargs.values()):
        if is_symbolic(value):
            return value  # type: ignore[no-any-return]
        if isinstance(value, (list, tuple)):
            for item in value:
                if is_symbolic(item):
                    return item  # type: ignore[no-any-return]
        elif isinstance(value, dict):
            for item in value.values():
                if is_symbolic(item):
                    return item  # type: ignore[no-any-return]
    return None
