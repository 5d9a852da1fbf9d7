# ruff: noqa: UP006, UP045
# (TorchScript reads typing's Optional and Tuple in annotations)
"""How a built recurrent layer is torch's own ``nn.RNN``/``nn.LSTM``/``nn.GRU``.

The layer's native class runs torch's constructor and leaves an instance of
torch's exact class, so ``torch.fx`` takes it as a leaf and
``quantize_dynamic(model, {nn.LSTM})`` swaps it. What TorchX adds to the call
(``lengths=``, ``return_sequences``, ``return_state``) are two call hooks
the layer registers when it is made, ahead of any of yours: :class:`PackLengths`
and :class:`SelectOutput`. Hooks go wherever the module goes: through the
build, copies, pickles, ``torch.fx`` graphs, and quantization's module swap
(which keeps forward hooks). ``layer.forward(x)`` is torch's forward, which
hooks never wrap. Weights and ``state_dict`` keys are torch's own.
"""

from __future__ import annotations

import weakref
from typing import Any, ClassVar, Optional, Tuple  # noqa: UP035 - TorchScript reads typing's forms

import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from torchx.core import ShapeError
from torchx.plugin import is_symbolic

__all__ = [
    "GRUBuilder",
    "GetRNNOutputModule",
    "GetRNNStateModule",
    "LSTMBuilder",
    "PackLengths",
    "RNNBuilder",
    "SelectOutput",
    "checked_lengths",
    "last_step",
]


class _Padded(PackedSequence):
    """A padded batch packed for ``lengths=``; the output is padded back to ``total_length`` steps."""

    total_length: int


class PackLengths:
    """Forward pre-hook (with keyword arguments): takes ``lengths=`` out of the
    call and packs the padded batch by it, so that torch's forward skips the
    padded steps. Meta inputs (a build) and ``PackedSequence`` inputs pass as
    they are; placeholders too (a graph records the call with its lengths)."""

    __slots__ = ("batch_first", "label")
    torchx_part_of_layer = True
    """Kept in the meta copies that drop observers' hooks (see torchx.core's meta_copy)."""

    def __init__(self, label: str, batch_first: bool) -> None:
        self.label, self.batch_first = label, batch_first

    def __call__(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None
    ) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
        if not kwargs or "lengths" not in kwargs:
            return None  # (no kwargs at all: registered without them, as quantization's swap does)
        input = args[0] if args else kwargs.get("input")
        if is_symbolic(input):
            return None  # a placeholder: the graph keeps lengths for its real calls
        kwargs = dict(kwargs)
        lengths = kwargs.pop("lengths")
        if lengths is None or not isinstance(input, torch.Tensor) or input.is_meta:
            return args, kwargs  # packed already, or a build on meta (the same shapes)
        time_dim = 1 if self.batch_first else 0
        on_cpu = checked_lengths(self.label, lengths, input.shape[1 - time_dim], input.shape[time_dim])
        packed = pack_padded_sequence(input, on_cpu, batch_first=self.batch_first, enforce_sorted=False)
        padded = _Padded(packed.data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
        padded.total_length = input.shape[time_dim]
        if not args:
            del kwargs["input"]
        return (padded, *args[1:]), kwargs


class SelectOutput:
    """Forward hook: what the layer returns, from torch's ``(output, state)``:
    the output at every step (``return_sequences``) or at the last (see
    :func:`last_step`), with the state (``return_state``) or not; padded
    back to the input's steps after :class:`PackLengths`."""

    __slots__ = ("batch_first", "directions", "return_sequences", "return_state")
    torchx_part_of_layer = True
    """Kept in the meta copies that drop observers' hooks (see torchx.core's meta_copy)."""

    def __init__(
        self, return_sequences: bool, return_state: bool, batch_first: bool, directions: int
    ) -> None:
        self.return_sequences, self.return_state = return_sequences, return_state
        self.batch_first, self.directions = batch_first, directions

    def __call__(self, module: nn.Module, args: tuple[Any, ...], result: Any) -> Any:
        if type(result) is not tuple or not isinstance(result[0], (torch.Tensor, PackedSequence)):
            return None  # placeholders: the graph recorded what this hook selected on meta tensors
        output, state = result
        if args and isinstance(args[0], _Padded):
            output, _ = pad_packed_sequence(
                output, batch_first=self.batch_first, total_length=args[0].total_length
            )
        elif self.return_sequences and self.return_state:
            return None
        if not self.return_sequences:
            output = last_step(state[0] if isinstance(state, tuple) else state, self.directions)
        return (output, state) if self.return_state else output


def last_step(hidden: torch.Tensor, directions: int) -> torch.Tensor:
    """The output at "the last step" of a recurrent layer from its final hidden
    state: the forward direction's last (valid) step and the backward
    direction's first, concatenated: ``(batch, directions * hidden)``."""
    return torch.cat(hidden[-directions:].unbind(0), dim=-1)


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


# -- the native classes -----------------------------------------------------------


class _Builder:
    """A recurrent layer's ``native_class``: it runs torch's constructor (the
    same seed gives torch's weights) and leaves an instance of torch's exact
    class. It takes the layer's two selection options too, for what
    ``torch.jit.script`` compiles (see :class:`_ScriptAs`)."""

    torch_class: ClassVar[type[nn.RNNBase]]

    def __init__(
        self,
        *args: Any,
        return_sequences: bool = True,
        return_state: bool = False,
        device: Any = None,
        dtype: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, device=device, dtype=dtype, **kwargs)  # type: ignore[call-arg]
        object.__setattr__(self, "__class__", type(self).torch_class)
        self.__dict__["__prepare_scriptable__"] = _ScriptAs(self, return_sequences, return_state)  # type: ignore[arg-type]


class RNNBuilder(_Builder, nn.RNN):
    """Builds ``nn.RNN`` for ``L.RNN``."""

    torch_class = nn.RNN


class LSTMBuilder(_Builder, nn.LSTM):
    """Builds ``nn.LSTM`` for ``L.LSTM``."""

    torch_class = nn.LSTM


class GRUBuilder(_Builder, nn.GRU):
    """Builds ``nn.GRU`` for ``L.GRU``."""

    torch_class = nn.GRU


# -- TorchScript --------------------------------------------------------------------


class _ScriptAs:
    """A built layer's ``__prepare_scriptable__`` (an instance attribute: the
    class is torch's): ``torch.jit.script`` compiles torch's module, sharing
    the layer's parameters, inside a typed selection of what the layer
    returns. Holds the layer weakly; copies and pickles bind to the copy."""

    __slots__ = ("_module", "return_sequences", "return_state")

    def __init__(self, module: nn.RNNBase, return_sequences: bool, return_state: bool) -> None:
        self._module = weakref.ref(module)
        self.return_sequences, self.return_state = return_sequences, return_state

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self._module(), self.return_sequences, self.return_state)

    def __call__(self) -> nn.Module:
        module = self._module()
        assert module is not None  # it holds this object
        native = type(module)
        plain = native.__new__(native)
        plain.__dict__.update(module.__dict__)
        for key in ("_torchx", "__prepare_scriptable__"):
            plain.__dict__.pop(key, None)
        plain._compiled_call_impl = None
        plain._forward_pre_hooks = _without_selection(module._forward_pre_hooks)
        plain._forward_hooks = _without_selection(module._forward_hooks)
        plain._init_flat_weights()  # a list of its own, read from the parameters as they are now
        scriptable = _SCRIPTABLE[isinstance(module, nn.LSTM), self.return_state]
        return scriptable(plain, self.return_sequences, self.return_state)


def _without_selection(hooks: dict[int, Any]) -> Any:
    return type(hooks)((key, hook) for key, hook in hooks.items() if not isinstance(hook, _SELECTION_HOOKS))


_SELECTION_HOOKS = (PackLengths, SelectOutput)


class _ScriptableSelection(nn.Module):
    """What ``torch.jit.script`` compiles for a TorchX recurrent layer: torch's
    module, then the layer's selection (``lengths=`` is not offered in
    TorchScript). Subclasses type what it returns: the output, with the state
    or not (an LSTM's state is ``(h, c)``), so scripted code can index it."""

    __constants__ = ("return_sequences", "return_state")  # TorchScript compiles only the branch they take

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


# -- helpers that take an (output, state) pair apart ------------------------------


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
