"""The symbolic-input protocol: how a graph-building value takes over a module call.

A value whose type defines ``__torchx_call__(module, args, kwargs)`` is
*symbolic* (torchx-functional's ``Placeholder`` is one). When a TorchX layer or
container is called with a symbolic input, the call is handed to that method,
which records it (and builds the layer) instead of running it. Core defines
only the protocol; it never imports the graph package.
"""

from __future__ import annotations

from typing import Any, Protocol

from torch import nn

__all__ = ["Symbolic", "find_symbolic", "is_symbolic"]


class Symbolic(Protocol):
    """A value that records module calls made on it."""

    def __torchx_call__(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any: ...


def is_symbolic(value: object) -> bool:
    """Whether ``value`` follows the symbolic-input protocol."""
    return hasattr(type(value), "__torchx_call__")


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
