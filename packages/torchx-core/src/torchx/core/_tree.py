"""Walking a module tree; caching what a class says."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

from torch import nn

__all__ = ["by_class", "submodules"]

_Class = TypeVar("_Class", bound=type)
_Result = TypeVar("_Result")


def by_class(function: Callable[[_Class], _Result]) -> Callable[[_Class], _Result]:
    """``function`` of a class, cached by class: ``functools.cache``, typed for mypy (to which a class is not Hashable)."""
    return functools.cache(function)


def submodules(module: nn.Module) -> list[nn.Module]:
    """``module`` and every module inside it, each once (as ``module.modules()``,
    without its generators: a build walks the model a few times)."""
    found, seen, stack = [], set(), [module]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        found.append(current)
        children = current._modules
        if children:
            stack.extend(child for child in reversed(children.values()) if child is not None)
    return found
