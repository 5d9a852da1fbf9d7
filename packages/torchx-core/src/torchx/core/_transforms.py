"""TorchX layers under torch's function transforms (``torch.vmap``, ``torch.func.grad``...).

A layer that builds inside a transform builds outside it: initialising
weights is the model's setup, not part of the function transformed (vmap
refuses random initialisation, and weights made inside ``grad`` would be
that transform's). The layer sees the shapes the transformed function sees.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch

_clear_transforms: Callable[[], AbstractContextManager[Any]] | None
try:
    from torch._functorch.pyfunctorch import temporarily_clear_interpreter_stack as _clear_transforms
except ImportError:  # an older torch: builds run inside the transforms
    _clear_transforms = None

__all__ = ["outside_transforms"]


def outside_transforms() -> AbstractContextManager[object]:
    """A block whose operations run outside every ``torch.func`` transform in
    progress; tensors from inside keep the shapes the transformed function sees."""
    if _clear_transforms is None or torch._C._functorch.peek_interpreter_stack() is None:
        return _NOTHING_TO_CLEAR
    return _clear_transforms()


_NOTHING_TO_CLEAR = nullcontext()
"""No transform in progress: one block that does nothing serves every call (it holds no state)."""
