"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` (batch-first) and their cells.

``input_size`` is read off the last dim of the ``(batch, time, features)``
input (or of a ``PackedSequence``'s data). Built, a layer is torch's own
class (``type(layer) is nn.LSTM``); with the same seed, weights equal
torch's, and ``state_dict`` keys are torch's.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence

from torchx.core import FromInput, FromState, LeafLayer
from torchx.plugin import DropoutRate, Interval, NonNegativeInt, PositiveInt
from torchx.rnn._modules import (
    GetRNNOutputModule,
    GetRNNStateModule,
    GRUBuilder,
    LSTMBuilder,
    PackLengths,
    RNNBuilder,
    SelectOutput,
)

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "GetRNNOutput", "GetRNNState", "LSTMCell", "RNNCell"]

MAX_STACKED_LAYERS = 1024
"""Most layers a recurrent layer stacks (``num_layers``). torch's constructor
takes time quadratic in it (3,000 layers take 3 s, even on meta; 26,000 many
minutes), so one number in a spec could stall whoever loads it."""

StackedLayers = Annotated[int, Interval(1, MAX_STACKED_LAYERS)]
"""A recurrent layer's ``num_layers``: 1 to :data:`MAX_STACKED_LAYERS`."""

_SEQUENCE = FromInput(dim=-1, ranks=(3,), state=FromState("weight_ih_l0", 1))


class _Recurrent(LeafLayer):
    """Shared by RNN, LSTM, GRU: ``input_size`` from the features of a 3-d input.

    Returns the output at every step (``return_sequences=True``, the default)
    or only the last step (forward direction's last, backward direction's
    first); with ``return_state=True``, ``(output, state)``. Call it as
    ``layer(x)``, ``layer(x, hx)`` or ``layer(x, lengths=lengths)`` (per-sample
    lengths: padded steps are skipped and the last step is each sample's own).

    Built, it is torch's ``nn.RNN``/``nn.LSTM``/``nn.GRU`` itself. ``lengths=``
    and the selection are two call hooks it registers when made, ahead of
    yours: ``layer(x)`` returns the selection, ``layer.forward(x)`` torch's
    ``(output, state)``.
    """

    inferred_arguments: ClassVar = {"input_size": _SEQUENCE}
    input_layout = "(batch, time, features), or (time, batch, features) with batch_first=False"

    def __init__(self, **arguments: Any) -> None:
        super().__init__(**arguments)
        given = self.arguments
        batch_first = given["batch_first"]
        self.register_forward_pre_hook(PackLengths(type(self).__name__, batch_first), with_kwargs=True)
        directions = 2 if given["bidirectional"] else 1
        self.register_forward_hook(
            SelectOutput(given["return_sequences"], given["return_state"], batch_first, directions)
        )

    def infer_arguments(self, *inputs: Any) -> dict[str, Any]:
        if inputs and isinstance(inputs[0], PackedSequence):
            return {"input_size": int(inputs[0].data.shape[-1])}
        return super().infer_arguments(*inputs)


class RNN(_Recurrent):
    """``nn.RNN`` (Elman) with ``input_size`` inferred; batch-first by default."""

    native_class = RNNBuilder
    torch_positional = ("input_size", "hidden_size", "num_layers", "nonlinearity", "bias", "batch_first",
                        "dropout", "bidirectional")  # fmt: skip

    def __init__(
        self,
        hidden_size: PositiveInt,
        *,
        num_layers: StackedLayers = 1,
        nonlinearity: Literal["tanh", "relu"] = "tanh",
        bias: bool = True,
        batch_first: bool = True,
        dropout: DropoutRate = 0.0,
        bidirectional: bool = False,
        return_sequences: bool = True,
        return_state: bool = False,
        input_size: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            hidden_size=hidden_size, num_layers=num_layers, nonlinearity=nonlinearity, bias=bias,
            batch_first=batch_first, dropout=dropout, bidirectional=bidirectional,
            return_sequences=return_sequences, return_state=return_state, input_size=input_size,
            device=device, dtype=dtype,
            name=name,
        )  # fmt: skip


class LSTM(_Recurrent):
    """``nn.LSTM`` with ``input_size`` inferred; batch-first by default.

    Examples::

        >>> L.LSTM(32)(torch.zeros(4, 10, 8)).shape
        torch.Size([4, 10, 32])
        >>> L.LSTM(32, bidirectional=True, return_sequences=False)(torch.zeros(4, 10, 8)).shape
        torch.Size([4, 64])
    """

    native_class = LSTMBuilder
    torch_positional = ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                        "bidirectional", "proj_size")  # fmt: skip

    def __init__(
        self,
        hidden_size: PositiveInt,
        *,
        num_layers: StackedLayers = 1,
        bias: bool = True,
        batch_first: bool = True,
        dropout: DropoutRate = 0.0,
        bidirectional: bool = False,
        proj_size: NonNegativeInt = 0,
        return_sequences: bool = True,
        return_state: bool = False,
        input_size: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            hidden_size=hidden_size, num_layers=num_layers, bias=bias, batch_first=batch_first,
            dropout=dropout, bidirectional=bidirectional, proj_size=proj_size,
            return_sequences=return_sequences, return_state=return_state, input_size=input_size,
            device=device, dtype=dtype,
            name=name,
        )  # fmt: skip


class GRU(_Recurrent):
    """``nn.GRU`` with ``input_size`` inferred; batch-first by default."""

    native_class = GRUBuilder
    torch_positional = ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                        "bidirectional")  # fmt: skip

    def __init__(
        self,
        hidden_size: PositiveInt,
        *,
        num_layers: StackedLayers = 1,
        bias: bool = True,
        batch_first: bool = True,
        dropout: DropoutRate = 0.0,
        bidirectional: bool = False,
        return_sequences: bool = True,
        return_state: bool = False,
        input_size: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            hidden_size=hidden_size, num_layers=num_layers, bias=bias, batch_first=batch_first,
            dropout=dropout, bidirectional=bidirectional,
            return_sequences=return_sequences, return_state=return_state, input_size=input_size,
            device=device, dtype=dtype,
            name=name,
        )  # fmt: skip


class _Cell(LeafLayer):
    inferred_arguments: ClassVar = {
        "input_size": FromInput(dim=-1, ranks=(1, 2), state=FromState("weight_ih", 1))
    }
    input_layout = "(batch, features)"

    def __init__(
        self,
        hidden_size: PositiveInt,
        *,
        bias: bool = True,
        input_size: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(
            hidden_size=hidden_size, bias=bias, input_size=input_size, device=device, dtype=dtype, name=name
        )


class RNNCell(_Cell):
    """``nn.RNNCell`` with ``input_size`` inferred."""

    native_class = nn.RNNCell

    def __init__(
        self,
        hidden_size: PositiveInt,
        *,
        bias: bool = True,
        nonlinearity: Literal["tanh", "relu"] = "tanh",
        input_size: PositiveInt | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        LeafLayer.__init__(
            self,
            hidden_size=hidden_size,
            bias=bias,
            nonlinearity=nonlinearity,
            input_size=input_size,
            device=device,
            dtype=dtype,
            name=name,
        )


class LSTMCell(_Cell):
    """``nn.LSTMCell`` with ``input_size`` inferred."""

    native_class = nn.LSTMCell


class GRUCell(_Cell):
    """``nn.GRUCell`` with ``input_size`` inferred."""

    native_class = nn.GRUCell


class GetRNNOutput(LeafLayer):
    """Takes the output from a recurrent layer's ``(output, state)``."""

    native_class = GetRNNOutputModule

    def __init__(self, *, name: str | None = None) -> None:
        super().__init__(name=name)


class GetRNNState(LeafLayer):
    """Takes the final state from a recurrent layer's ``(output, state)``.

    Args:
        mode: ``"h"`` (hidden state), ``"c"`` (LSTM cell state) or ``"concat"``
            (both). The result is ``(batch, directions * size)``: the last
            layer's state, directions concatenated.
    """

    native_class = GetRNNStateModule

    def __init__(self, mode: Literal["h", "c", "concat"] = "h", *, name: str | None = None) -> None:
        super().__init__(mode=mode, name=name)
