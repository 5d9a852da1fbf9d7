"""``tree_map`` and ``tree_leaves`` with a fast path for what graphs mostly hold.

Nearly every recorded call takes a flat tuple of placeholders and constants
and no keyword arguments; pytree's general walk costs more than the rest of
recording such a call. Nested values still go through pytree. Both look inside
slices (pytree's leaves), whose bounds may be dynamic sizes (``w[:T]``).
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


def _map_leaf(function: Callable[[Any], Any], leaf: Any) -> Any:
    """``function(leaf)``, or a slice of ``function`` of each bound."""
    if type(leaf) is slice:
        return slice(function(leaf.start), function(leaf.stop), function(leaf.step))
    return function(leaf)


def map_leaves(function: Callable[[Any], Any], value: Any) -> Any:
    """``tree_map(function, value)``, into slices."""
    if _is_flat(value):
        return type(value)(_map_leaf(function, item) for item in value)
    if type(value) is dict and not value:
        return {}
    return tree_map(lambda leaf: _map_leaf(function, leaf), value)


def leaves_of(value: Any) -> list[Any]:
    """``tree_leaves(value)``, the bounds of a slice in its place."""
    if _is_flat(value):
        leaves = list(value)
    elif type(value) is dict and not value:
        return []
    else:
        leaves = tree_leaves(value)
    if any(type(leaf) is slice for leaf in leaves):
        return [
            part
            for leaf in leaves
            for part in ((leaf.start, leaf.stop, leaf.step) if type(leaf) is slice else (leaf,))
        ]
    return leaves
