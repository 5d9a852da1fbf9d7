# ruff: noqa: UP006, UP045
# (TorchScript reads typing's Optional and Tuple in annotations)
"""The native modules behind the recurrent layers: torch's RNN/LSTM/GRU plus
the output selection TorchX adds (``return_sequences``, ``return_state``,
``lengths=``). They add no parameters: ``state_dict`` keys and weights are
torch's own, so checkpoints move both ways."""

from __future__ import annotations

from typing import Any, Optional, Tuple  # noqa: UP035 - TorchScript reads typing's forms

import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from torchx.core import ShapeError
from torchx.core._record import layer_name

__all__ = [
    "GRUModule",
    "GetRNNOutputModule",
    "GetRNNStateModule",
    "LSTMModule",
    "RNNModule",
    "checked_lengths",
    "last_step",
]


class _Selecting:
    """Runs the torch recurrent forward, then picks what the layer returns.

    Mixed in before ``nn.RNN``/``nn.LSTM``/``nn.GRU``: it takes the two extra
    options, makes batch-first the default, and passes everything else (and
    ``device``/``dtype``, named so that TorchX builds on the right device) to
    torch's constructor unchanged.
    """

    _torch_class: type[nn.RNNBase]
    return_sequences: bool
    return_state: bool
    batch_first: bool
    bidirectional: bool

    def __init__(
        self,
        *args: Any,
        return_sequences: bool = True,
        return_state: bool = False,
        device: Any = None,
        dtype: Any = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("batch_first", True)
        super().__init__(*args, device=device, dtype=dtype, **kwargs)  # type: ignore[call-arg]
        self.return_sequences, self.return_state = return_sequences, return_state

    def forward(self, input: Any, hx: Any = None, lengths: torch.Tensor | None = None) -> Any:
        return self._run(self._torch_class, input, hx, lengths)

    def _run(self, native: Any, input: Any, hx: Any, lengths: torch.Tensor | None) -> Any:
        if lengths is not None and not isinstance(input, PackedSequence) and not input.is_meta:
            time_dim = 1 if self.batch_first else 0
            on_cpu = checked_lengths(
                layer_name(self),  # type: ignore[arg-type]  # a mixin of an nn.Module
                lengths,
                input.shape[1 - time_dim],
                input.shape[time_dim],
            )
            packed = pack_padded_sequence(input, on_cpu, batch_first=self.batch_first, enforce_sorted=False)
            output, state = native.forward(self, packed, hx)
            output, _ = pad_packed_sequence(
                output, batch_first=self.batch_first, total_length=input.shape[time_dim]
            )
        else:
            output, state = native.forward(self, input, hx)
        if not self.return_sequences:
            output = last_step(
                state[0] if isinstance(state, tuple) else state, 2 if self.bidirectional else 1
            )
        return (output, state) if self.return_state else output

    def __prepare_scriptable__(self) -> nn.Module:
        """``torch.jit.script`` compiles torch's own module (sharing these
        parameters) inside a typed selection of what this layer returns."""
        native = self._torch_class
        plain = native.__new__(native)
        plain.__dict__.update(
            (key, value) for key, value in self.__dict__.items() if key not in ("_torchx", *_SELECTION)
        )
        plain._init_flat_weights()  # a list of its own, read from the parameters as they are now
        scriptable = _SCRIPTABLE[native is nn.LSTM, bool(self.return_state)]
        return scriptable(plain, self.return_sequences, self.return_state)


_SELECTION = ["return_sequences", "return_state"]


def last_step(hidden: torch.Tensor, directions: int) -> torch.Tensor:
    """The output at "the last step" of a recurrent layer from its final hidden
    state: the forward direction's last (valid) step and the backward
    direction's first, concatenated: ``(batch, directions * hidden)``."""
    return torch.cat(hidden[-directions:].unbind(0), dim=-1)


class _ScriptableSelection(nn.Module):
    """What ``torch.jit.script`` compiles for a TorchX recurrent layer: torch's
    module, then the layer's selection (``lengths=`` is not offered in
    TorchScript). Subclasses type what it returns: the output, with the state
    or not (an LSTM's state is ``(h, c)``), so scripted code can index it."""

    __constants__ = _SELECTION  # TorchScript compiles only the branch the flags take

    def __init__(self, rnn: nn.Module, return_sequences: bool, return_state: bool) -> None:
        super().__init__()
        self.rnn = rnn
        self.return_sequences, self.return_state = return_sequences, return_state
        self.directions = 2 if rnn.bidirectional else 1


class _ScriptableLSTM(_ScriptableSelection):
    def forward(
        self, input: torch.Tensor, hx: Optional[Tuple[torch.Tensor, torch.Tensor]] = None
    ) -> torch.Tensor:
        output, state = self.rnn(input, hx)
        return output if self.return_sequences else last_step(state[0], self.directions)


class _ScriptableLSTMWithState(_ScriptableSelection):
    def forward(
        self,
        input: torch.Tensor,
        hx: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
    ) -> Tuple[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
        output, state = self.rnn(input, hx)
        return (output if self.return_sequences else last_step(state[0], self.directions)), state


class _ScriptableRNN(_ScriptableSelection):
    def forward(self, input: torch.Tensor, hx: Optional[torch.Tensor] = None) -> torch.Tensor:
        output, state = self.rnn(input, hx)
        return output if self.return_sequences else last_step(state, self.directions)


class _ScriptableRNNWithState(_ScriptableSelection):
    def forward(
        self, input: torch.Tensor, hx: Optional[torch.Tensor] = None
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        output, state = self.rnn(input, hx)
        return (output if self.return_sequences else last_step(state, self.directions)), state


_SCRIPTABLE = {
    (True, False): _ScriptableLSTM,
    (True, True): _ScriptableLSTMWithState,
    (False, False): _ScriptableRNN,
    (False, True): _ScriptableRNNWithState,
}
"""The typed form TorchScript compiles, by (is an LSTM, returns its state)."""


def checked_lengths(layer: str, lengths: Any, batch: int, time: int, shortest: int = 1) -> torch.Tensor:
    """``lengths`` as a CPU tensor of one length in [shortest, time] per sample, or a ShapeError."""
    values = torch.as_tensor(lengths).cpu()
    if values.shape != (batch,):
        raise ShapeError(layer, f"lengths has shape {tuple(values.shape)}, but the batch has {batch} samples",
                         fix="pass one length per sample")  # fmt: skip
    if values.numel() and (values.min() < shortest or values.max() > time):
        raise ShapeError(layer, f"lengths must lie in [{shortest}, {time}] (the time steps), got {values.tolist()}",
                         fix="give each sample its number of valid steps")  # fmt: skip
    return values


class RNNModule(_Selecting, nn.RNN):
    """``nn.RNN`` with TorchX's output selection; batch-first by default."""

    _torch_class = nn.RNN


class LSTMModule(_Selecting, nn.LSTM):
    """``nn.LSTM`` with TorchX's output selection; batch-first by default."""

    _torch_class = nn.LSTM


class GRUModule(_Selecting, nn.GRU):
    """``nn.GRU`` with TorchX's output selection; batch-first by default."""

    _torch_class = nn.GRU


class GetRNNOutputModule(nn.Module):
    """The output of ``(output, state)``, as a recurrent layer with ``return_state`` returns."""

    def forward(self, pair: tuple[Any, Any]) -> Any:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise ValueError(
                f"GetRNNOutput expects the (output, state) pair of a recurrent layer with "
                f"return_state=True, got {type(pair).__name__}"
            )
        return pair[0]


class GetRNNStateModule(nn.Module):
    """The last layer's final state of ``(output, state)``: ``(batch, directions * hidden)``.

    ``mode``: ``"h"`` the hidden state, ``"c"`` the LSTM cell state, ``"concat"``
    both, concatenated on the feature dim.
    """

    def __init__(self, mode: str = "h") -> None:
        super().__init__()
        self.mode = mode

    def forward(self, pair: tuple[Any, Any]) -> torch.Tensor:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise ValueError(
                "GetRNNState needs the state: give the recurrent layer before it return_state=True "
                f"(got {type(pair).__name__}, so the output was already reduced)"
            )
        output, state = pair
        is_lstm = isinstance(state, tuple)
        if self.mode in ("c", "concat") and not is_lstm:
            raise ValueError(
                f"GetRNNState(mode={self.mode!r}) needs an LSTM's (h, c) state; this layer has only h"
            )
        hidden = state[0] if is_lstm else state
        features = output.data if isinstance(output, PackedSequence) else output
        directions = max(1, features.shape[-1] // hidden.shape[-1])
        chosen = {
            "h": [hidden],
            "c": [state[1]] if is_lstm else [],
            "concat": [hidden, state[1]] if is_lstm else [],
        }
        return torch.cat([part for tensor in chosen[self.mode] for part in tensor[-directions:]], dim=-1)
