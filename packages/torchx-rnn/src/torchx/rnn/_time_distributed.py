"""``TimeDistributed``: the same layers applied to every time step, by folding time into batch."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Optional

import torch
from torch import nn

from torchx.core import Container, LayerError
from torchx.layers import Sequential
from torchx.plugin import format_shape, is_fx_tracing, is_symbolic
from torchx.rnn._modules import checked_lengths

__all__ = ["TimeDistributed"]


def _unfolded(output: torch.Tensor, batch: int, time: int, lengths: torch.Tensor | None) -> torch.Tensor:
    """``(batch * time, ...)`` back to ``(batch, time, ...)``; steps at or past a
    sample's length become zeros."""
    output = output.unflatten(0, (batch, time))  # type: ignore[no-untyped-call]
    if lengths is not None:
        steps = torch.arange(time, device=output.device)
        padded = steps >= torch.as_tensor(lengths, device=output.device).unsqueeze(1)
        # (batch, time) broadcasts over the trailing dims: written so that torch.fx can trace it
        output = output.movedim((0, 1), (-2, -1)).masked_fill(padded, 0).movedim((-2, -1), (0, 1))
    return output


class _ScriptableTimeDistributed(nn.Module):
    """What ``torch.jit.script`` compiles for a TimeDistributed: the fold, typed."""

    def __init__(self, layers: nn.Sequential) -> None:
        super().__init__()
        self.layers = layers

    def forward(self, input: torch.Tensor, lengths: Optional[torch.Tensor] = None) -> torch.Tensor:  # noqa: UP045 - TorchScript reads the annotation
        batch, time = input.shape[0], input.shape[1]
        return _unfolded(self.layers(input.flatten(0, 1)), batch, time, lengths)


class TimeDistributed(Container):
    """Applies ``layers`` to every temporal slice of a ``(batch, time, ...)`` input.

    Time is folded into the batch (``(batch * time, ...)``), the layers run
    once, and the result is unfolded to ``(batch, time, ...)``: no Python loop
    over time steps. The layers' input-side sizes are inferred from one slice.
    Any module works inside (TorchX layers, plain modules, Sequential,
    Functional); layers that carry state from one step to the next do not
    belong here. Because of the fold, a BatchNorm inside normalises over
    batch and time together.

    Call it as ``layer(x)`` or ``layer(x, lengths=lengths)``: with per-sample
    ``lengths``, the outputs of padded steps are zeros.

    Examples::

        >>> frames = torch.zeros(4, 16, 3, 16, 16)
        >>> L.TimeDistributed(L.Conv2d(8, 3), L.ReLU(), L.Flatten(), L.Linear(10))(frames).shape
        torch.Size([4, 16, 10])
    """

    input_layout = "(batch, time, ...), at least 3-d"

    def __init__(self, *layers: nn.Module, name: str | None = None) -> None:
        super().__init__(name=name)
        if not layers:
            raise TypeError("TimeDistributed needs at least one layer")
        self.layers = Sequential(*layers)

    def forward(self, input: Any, lengths: torch.Tensor | None = None) -> Any:
        if type(input) is not torch.Tensor and is_symbolic(input):
            return input.__torchx_call__(self, (input,), {} if lengths is None else {"lengths": lengths})
        tracing = is_fx_tracing()  # torch.fx: the input is a Proxy, only its ops are recorded
        if not tracing and (not isinstance(input, torch.Tensor) or input.dim() < 3):
            shape = (
                format_shape(tuple(input.shape)) if isinstance(input, torch.Tensor) else type(input).__name__
            )
            raise self.shape_error(
                f"expected input of shape {self.input_layout}, got {shape}",
                fix="give it (batch, time, features...): a batch of sequences",
            )
        batch, time = input.shape[0], input.shape[1]
        if lengths is not None and not tracing:
            checked_lengths("TimeDistributed", lengths, batch, time, shortest=0)
        try:
            output = self.layers(input.flatten(0, 1))
        except LayerError as error:
            raise error.within("TimeDistributed", self) from None
        if not tracing and not isinstance(output, torch.Tensor):
            raise self.shape_error(
                f"its layers returned a {type(output).__name__}, but TimeDistributed unfolds one tensor",
                fix="end the layers with one that returns a tensor (e.g. L.GetRNNOutput())",
            )
        return _unfolded(output, batch, time, lengths)

    def __prepare_scriptable__(self) -> nn.Module:
        """``torch.jit.script`` compiles the fold itself (same submodules, same state dict keys)."""
        if not self.is_built:
            return super().__prepare_scriptable__()
        return _ScriptableTimeDistributed(nn.Sequential(OrderedDict(self.layers._modules)))

    def spec_layers(self) -> list[nn.Module]:
        return list(self.layers)
