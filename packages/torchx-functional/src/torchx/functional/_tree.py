"""``tree_map`` and ``tree_leaves`` with a fast path for what graphs mostly hold.

Nearly every recorded call takes a flat tuple of placeholders and constants
and no keyword arguments; pytree's general walk costs more than the rest of
recording such a call. Nested values still go through pytree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.utils._pytree import SUPPORTED_NODES, tree_leaves, tree_map

__all__ = ["leaves_of", "map_leaves"]


def _is_flat(value: Any) -> bool:
    """Whether ``value`` is a tuple or list of leaves (no containers inside)."""
    return (type(value) is tuple or type(value) is list) and not any(
        type(item) in SUPPORTED_NODES for item in value
    )


def map_leaves(function: Callable[[Any], Any], value: Any) -> Any:
    """``tree_map(function, value)``."""
    if _is_flat(value):
        return type(value)(map(function, value))
    if type(value) is dict and not value:
        return {}
    return tree_map(function, value)


def leaves_of(value: Any) -> list[Any]:
    """``tree_leaves(value)``."""
    if _is_flat(value):
        return list(value)
    if type(value) is dict and not value:
        return []
    return tree_leaves(value)
