"""Keras tensors in the converted graph, and the layouts they are stored in.

Keras keeps channels last; torch's convolutions, pools and norms want them at
dim 1. A converted tensor is stored in whatever order its last layer left
it: ``order[i]`` is the Keras axis held at stored dim ``i``. A layer asks for
the order it needs (:meth:`Layouts.keras`, :meth:`Layouts.axis_first`), and
the permute that gets it there is recorded once per tensor and order, so an
image input feeding several convolutions is permuted once, and a chain of
convolutions stays channels-first with no permute between them.

A ``Flatten`` of a channels-first tensor flattens the stored order and
remembers it (``flattened``): a ``Dense`` reading it (through elementwise
layers such as ``Dropout``) permutes its kernel's rows instead of the data,
and anything else gets the Keras order of the features back with one
unflatten-permute-flatten.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Flattened", "Layouts", "PendingPadding", "Value", "channels_first", "keras_order"]


def keras_order(rank: int) -> tuple[int, ...]:
    return tuple(range(rank))


def channels_first(rank: int, axis: int | None = None) -> tuple[int, ...]:
    """The order with Keras ``axis`` (default: the last) at dim 1 and the rest as in Keras."""
    axis = rank - 1 if axis is None else axis % rank
    if axis == 0:
        return keras_order(rank)
    return (0, axis, *(dim for dim in range(1, rank) if dim != axis))


@dataclass(frozen=True, eq=False)
class Value:
    """One Keras tensor: the placeholder holding it, in ``order``."""

    placeholder: Any
    """The placeholder; ``None`` while a zero padding is pending (see ``padding``)."""
    order: tuple[int, ...]
    flattened: Flattened | None = None
    """For the features of a Flatten of a permuted tensor: how they are ordered."""
    padding: PendingPadding | None = None
    """A Keras ZeroPadding not recorded yet: a convolution reading it pads inside itself instead."""

    @property
    def tensor(self) -> Any:
        """The placeholder (recording a pending padding first, once)."""
        if self.placeholder is None and self.padding is not None:
            object.__setattr__(self, "placeholder", self.padding.record())
        return self.placeholder

    @property
    def rank(self) -> int:
        return len(self.order)

    @property
    def keras_shape(self) -> tuple[int | None, ...]:
        if self.placeholder is None and self.padding is not None:
            return self.padding.keras_shape()
        stored = tuple(self.tensor.shape)
        shape: list[int | None] = [None] * self.rank
        for dim, axis in enumerate(self.order):
            shape[axis] = stored[dim]
        return tuple(shape)

    def stored_axis(self, keras_axis: int) -> int:
        """Where Keras ``keras_axis`` (negative counts from the end) is stored."""
        return self.order.index(keras_axis % self.rank)

    def with_tensor(self, tensor: Any) -> Value:
        """A layer's output that keeps this tensor's order (elementwise layers, same-rank layers)."""
        return Value(tensor, self.order, self.flattened)

    @property
    def in_keras_order(self) -> bool:
        return self.flattened is None and self.order == keras_order(self.rank)


@dataclass(frozen=True, eq=False)
class PendingPadding:
    """Zeros around the spatial dims of ``source`` (channels first), recorded by ``record`` if something needs them."""

    source: Value
    pads: tuple[tuple[int, int], ...]
    """(before, after) for each spatial dim, in order."""
    record: Callable[[], Any]

    @property
    def symmetric(self) -> tuple[int, ...] | None:
        """The padding per dim where it is the same on both sides (what a torch convolution can take)."""
        if all(before == after for before, after in self.pads):
            return tuple(before for before, _ in self.pads)
        return None

    def keras_shape(self) -> tuple[int | None, ...]:
        shape = list(self.source.keras_shape)
        for index, (before, after) in enumerate(self.pads):
            size = shape[1 + index]
            shape[1 + index] = None if size is None else size + before + after
        return tuple(shape)


@dataclass(frozen=True)
class Flattened:
    """Features flattened from a tensor stored as ``shape`` (no batch) in ``order`` (no batch)."""

    shape: tuple[int, ...]
    order: tuple[int, ...]

    def keras_index(self) -> list[int]:
        """For each stored feature, the index Keras's Flatten gives it."""
        keras_shape = [0] * len(self.shape)
        for dim, axis in enumerate(self.order):
            keras_shape[axis] = self.shape[dim]
        index = np.arange(int(np.prod(keras_shape, dtype=np.int64))).reshape(keras_shape)
        return [int(i) for i in index.transpose(self.order).reshape(-1)]

    def to_keras(self, tensor: Any) -> Any:
        """``tensor``'s features in Keras's order: unflatten, permute, flatten."""
        dims = [1 + self.order.index(axis) for axis in range(len(self.order))]
        return tensor.unflatten(1, self.shape).permute(0, *dims).flatten(1)


class Layouts:
    """The permutes recorded so far, so that each tensor is permuted to an order once."""

    def __init__(self) -> None:
        self._permuted: dict[tuple[Value, tuple[int, ...]], Value] = {}

    def to_order(self, value: Value, order: tuple[int, ...]) -> Value:
        """``value`` stored in ``order`` (a permute recorded once; none when it already is)."""
        if value.order == order and value.flattened is None:
            return value
        key = (value, order)
        if key not in self._permuted:
            if value.flattened is not None:
                self._permuted[key] = Value(value.flattened.to_keras(value.tensor), order)
            else:
                dims = tuple(value.order.index(axis) for axis in order)
                self._permuted[key] = Value(value.tensor.permute(*dims), order)
        return self._permuted[key]

    def keras(self, value: Value) -> Value:
        """``value`` in Keras's own order."""
        return self.to_order(value, keras_order(value.rank))

    def axis_first(self, value: Value, axis: int = -1) -> Value:
        """``value`` with Keras ``axis`` (default: channels) at dim 1, as torch's layers want it."""
        return self.to_order(value, channels_first(value.rank, axis))
