"""``tree_map`` and ``tree_leaves`` with a fast path for what graphs mostly hold.

Recorded calls take tuples, lists and dicts of placeholders and constants
(``torch.cat([a, b], 1)``); pytree's general walk of them costs more than the
rest of recording such a call, so plain tuples, lists and dicts are walked
here and only other containers (namedtuples, ``torch.Size``, registered
nodes) go through pytree. Both look inside slices (pytree's leaves), whose
bounds may be dynamic sizes (``w[:T]``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.utils._pytree import SUPPORTED_NODES, tree_leaves, tree_map

__all__ = ["leaves_of", "map_leaves"]


def _is_container(value: Any) -> bool:
    """Whether pytree walks into ``value``: a registered node type, or a
    subclass of a builtin container (namedtuples, ``torch.Size``)."""
    return type(value) in SUPPORTED_NODES or isinstance(value, (tuple, list, dict))


def _map_leaf(function: Callable[[Any], Any], leaf: Any) -> Any:
    """``function(leaf)``, or a slice of ``function`` of each bound."""
    if type(leaf) is slice:
        return slice(function(leaf.start), function(leaf.stop), function(leaf.step))
    return function(leaf)


def map_leaves(function: Callable[[Any], Any], value: Any) -> Any:
    """``tree_map(function, value)``, into slices."""
    kind = type(value)
    if kind is tuple or kind is list:
        return kind(
            [
                map_leaves(function, item) if _is_container(item) else _map_leaf(function, item)
                for item in value
            ]
        )
    if kind is dict:
        return {
            key: map_leaves(function, item) if _is_container(item) else _map_leaf(function, item)
            for key, item in value.items()
        }
    if _is_container(value):
        return tree_map(lambda leaf: _map_leaf(function, leaf), value)
    return _map_leaf(function, value)


def leaves_of(value: Any) -> list[Any]:
    """``tree_leaves(value)``, the bounds of a slice in its place."""
    leaves: list[Any] = []
    _collect(value, leaves)
    return leaves


def _collect(value: Any, leaves: list[Any]) -> None:
    kind = type(value)
    if kind is tuple or kind is list or kind is dict:
        for item in value.values() if kind is dict else value:
            if _is_container(item) or type(item) is slice:
                _collect(item, leaves)
            else:
                leaves.append(item)
    elif kind is slice:
        leaves.extend((value.start, value.stop, value.step))
    elif _is_container(value):
        for leaf in tree_leaves(value):
            _collect(leaf, leaves)
    else:
        leaves.append(value)
