"""What the torch installed does that some TorchX behaviour rests on, probed
rather than read off its version: the tests of such behaviour skip, saying why,
on a torch of the supported range (the README's) that does not do it.

TorchX works out shapes on the meta device (and a summary's counts on fake
tensors with symbolic sizes), so where torch's meta kernels check less, a
misfit that TorchX names when it builds on a newer torch is named by torch at
the model's first real call instead."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

__all__ = ["META_CHECKS_IDS_AND_DTYPES", "META_CHECKS_KERNEL_SIZES", "SYMBOLIC_ATTENTION"]


def _meta_refuses(function: object) -> bool:
    try:
        function()  # type: ignore[operator]
    except RuntimeError:
        return True
    return False


META_CHECKS_IDS_AND_DTYPES = _meta_refuses(
    lambda: F.embedding(torch.empty(2, 3, device="meta"), torch.empty(10, 4, device="meta"))
) and _meta_refuses(lambda: F.dropout(torch.empty(2, 3, dtype=torch.long, device="meta"), 0.1))
"""Whether meta kernels refuse float ids into an embedding and integers into dropout (torch 2.13: yes; 2.9: no)."""

META_CHECKS_KERNEL_SIZES = _meta_refuses(
    lambda: F.conv2d(
        torch.empty(2, 3, 8, 2, device="meta"), torch.empty(4, 3, 3, 3, device="meta"), dilation=2, padding=1
    )
)
"""Whether a meta convolution refuses a kernel that spans more than its padded input (2.13: yes; 2.9: no)."""


def _attention_keeps_sizes_symbolic() -> bool:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

    shape_env = ShapeEnv()
    mode = FakeTensorMode(shape_env=shape_env, allow_non_fake_inputs=True)
    context: StatelessSymbolicContext[Any, Any] = StatelessSymbolicContext(
        dynamic_sizes=[DimDynamic.DUCK, DimDynamic.DUCK, DimDynamic.STATIC]
    )
    fake = mode.from_tensor(torch.empty(2, 3, 8, device="meta"), symbolic_context=context)
    with mode:
        F.scaled_dot_product_attention(fake, fake, fake, is_causal=True)
    return not shape_env.guards


SYMBOLIC_ATTENTION = _attention_keeps_sizes_symbolic()
"""Whether ``scaled_dot_product_attention`` on fake tensors keeps their sizes symbols
(2.13: yes; 2.9: it fixes them), which a summary's polynomial counts in N and T need."""
