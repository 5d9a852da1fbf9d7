"""The private names of torch that TorchX uses, in one place, for the torch
releases TorchX supports (the README's tested range, which CI runs at both
ends): a torch release that moves one fails here, at import, and in
``tests/test_torch_compat.py``, which checks each against what torch does."""

from __future__ import annotations

from torch.fx._symbolic_trace import is_fx_symbolic_tracing as _fx_tracing
from torch.nn.modules.module import _has_any_global_hook

__all__ = ["has_any_global_hook", "is_fx_tracing"]


def has_any_global_hook() -> bool:
    """Whether a hook registered for every module (``register_module_forward_hook``...) is set."""
    return bool(_has_any_global_hook())  # type: ignore[no-untyped-call]


def is_fx_tracing() -> bool:
    """Whether ``torch.fx.symbolic_trace`` is tracing the code running now."""
    return bool(_fx_tracing())
