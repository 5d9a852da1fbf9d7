"""Peak memory of a call: the most bytes of tensor storage it held alive at once."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


class _LiveStorage(TorchDispatchMode):
    """Counts the storages that ops create while it is on, until each is freed.

    A storage keeps one Python object while it lives, so a finalizer on that
    object runs when the memory is freed. Storages that existed before (the
    inputs, the weights) are not counted, nor are views of them.
    """

    def __init__(self, existing: set[int]) -> None:
        super().__init__()
        self.existing = existing
        self.live: dict[int, int] = {}
        self.bytes = 0
        self.peak = 0

    def _freed(self, key: int) -> None:
        self.bytes -= self.live.pop(key, 0)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        output = func(*args, **(kwargs or {}))
        for leaf in tree_leaves(output):
            if not isinstance(leaf, torch.Tensor):
                continue
            storage = leaf.untyped_storage()
            key = id(storage)
            if key in self.existing or key in self.live:
                continue
            self.live[key] = storage.nbytes()
            self.bytes += self.live[key]
            self.peak = max(self.peak, self.bytes)
            weakref.finalize(storage, self._freed, key)
        return output


def peak_bytes(call: Callable[[], Any], *holding: Any) -> int:
    """The peak of tensor memory ``call()`` allocates (beyond what ``holding``,
    tensors and modules, already hold), its result freed at the end."""
    existing: set[int] = set()
    for item in holding:
        tensors = item.state_dict(keep_vars=True).values() if isinstance(item, torch.nn.Module) else [item]
        existing.update(id(tensor.untyped_storage()) for tensor in tensors)
    with _LiveStorage(existing) as mode:
        call()
    return mode.peak
