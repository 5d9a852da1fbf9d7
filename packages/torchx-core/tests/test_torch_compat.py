"""What torchx.core._torch_compat takes from torch's private names does what
TorchX needs, on the torch installed (CI runs the oldest and the newest torch
TorchX supports): a torch release that changes one fails here."""

from __future__ import annotations

import torch
from torch import nn

from torchx.core._torch_compat import has_any_global_hook, is_fx_tracing


def test_a_global_module_hook_is_seen_as_torch_sees_it() -> None:
    assert not has_any_global_hook()
    handle = nn.modules.module.register_module_forward_hook(lambda module, args, output: None)
    try:
        assert has_any_global_hook()
    finally:
        handle.remove()
    assert not has_any_global_hook()


def test_fx_tracing_is_seen_while_symbolic_trace_runs() -> None:
    seen = []

    class Probe(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            seen.append(is_fx_tracing())
            return x + 1

    assert not is_fx_tracing()
    torch.fx.symbolic_trace(Probe())
    assert seen == [True]
