"""Walking a module tree."""

from __future__ import annotations

from torch import nn

__all__ = ["submodules"]


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
