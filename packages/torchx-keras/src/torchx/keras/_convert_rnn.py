"""Converters of Keras's sequence layers: SimpleRNN, LSTM, GRU, Bidirectional, TimeDistributed, MultiHeadAttention.

The recurrent layers become torch's own (``L.RNN``, ``L.LSTM``, ``L.GRU``,
batch-first), their kernels transposed and the gates reordered where torch
stacks them differently (a GRU's ``z, r, h`` become ``r, z, n``). A Keras
GRU with ``reset_after=False`` has no torch module and becomes
:class:`~torchx.keras._gru_reset_before.GRUResetBefore`.

Keras's SimpleRNN and LSTM have one bias per gate, torch's two (``bias_ih``
and ``bias_hh``, added together): Keras's bias is loaded into ``bias_ih``
and ``bias_hh`` is kept at zero with ``requires_grad=False``, so that
training updates what Keras would and the trainable parameter count is
Keras's. (A GRU with ``reset_after=True`` has both biases in Keras too.)

``go_backwards`` flips the input in time and, as Keras does, leaves the
output sequence in the order it was computed. Options whose training or
results torch's layers cannot reproduce (``stateful``, dropout inside the
recurrence, other activations) are refused with what to change.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

import torchx.layers as L
from torchx.keras._gru_reset_before import GRUResetBefore
from torchx.keras._layer import KerasLayer, assign, converts
from torchx.keras._model import check_entry
from torchx.keras._values import Value, keras_order

if TYPE_CHECKING:
    from torchx.keras._model import GraphBuilder

__all__: list[str] = []

_GATES = {"SimpleRNN": 1, "LSTM": 4, "GRU": 3}
_GATE_ORDER = {"SimpleRNN": (0,), "LSTM": (0, 1, 2, 3), "GRU": (1, 0, 2)}
"""For each kind, the Keras gate at each of torch's gate places (Keras GRU: z, r, h; torch: r, z, n)."""

_TRAINING_DIFFERS = "torch's recurrent layers have no dropout inside the recurrence, so training would differ"


@dataclass(frozen=True)
class Recurrence:
    """What a Keras recurrent layer's config asks for, once checked."""

    kind: str
    units: int
    use_bias: bool
    nonlinearity: str
    reset_after: bool
    return_sequences: bool
    return_state: bool
    go_backwards: bool

    @property
    def native(self) -> bool:
        """Whether torch has this recurrence (all but a GRU with ``reset_after=False``)."""
        return self.kind != "GRU" or self.reset_after

    @property
    def two_biases(self) -> bool:
        """Whether Keras, like torch, adds a bias on the input side and one on the recurrent side."""
        return self.kind == "GRU" and self.reset_after


def read_recurrence(layer: KerasLayer) -> Recurrence:
    """``layer``'s recurrence, or a SpecError for each option torch's layers cannot reproduce."""
    if layer.get("stateful", False):
        raise layer.error(
            "stateful=True carries the state from one batch to the next, which a converted model does not: "
            "save the model with stateful=False and pass the state yourself"
        )
    for key in ("dropout", "recurrent_dropout"):
        if float(layer.get(key, 0.0) or 0.0) > 0.0:
            raise layer.error(
                f"{key}={layer.get(key)} is not supported: {_TRAINING_DIFFERS}; save the model with {key}=0 "
                "(inference is the same) and add dropout between layers if you train it"
            )
    kind = layer.class_name
    activations = ("tanh", "relu") if kind == "SimpleRNN" else ("tanh",)
    nonlinearity = layer.require("activation", activations, "torch's recurrent layers fix their activation")
    if kind != "SimpleRNN":
        layer.require("recurrent_activation", ("sigmoid",), "torch's gates are sigmoids")
    return Recurrence(
        kind=kind,
        units=layer.integer("units"),
        use_bias=bool(layer.get("use_bias", True)),
        nonlinearity=nonlinearity,
        reset_after=bool(layer.get("reset_after", True)) if kind == "GRU" else True,
        return_sequences=bool(layer.get("return_sequences", False)),
        return_state=bool(layer.get("return_state", False)),
        go_backwards=bool(layer.get("go_backwards", False)),
    )


def _make(cell: Recurrence, name: str, bidirectional: bool = False) -> Callable[[], nn.Module]:
    """The TorchX layer for ``cell`` (it returns ``(output, state)`` when Keras returns states)."""
    options: dict[str, Any] = {
        "bias": cell.use_bias, "return_sequences": cell.return_sequences, "return_state": cell.return_state,
        "name": name,
    }  # fmt: skip
    if not cell.native:
        return lambda: GRUResetBefore(cell.units, **options)
    if cell.kind == "SimpleRNN":
        options["nonlinearity"] = cell.nonlinearity
    layer_class = {"SimpleRNN": L.RNN, "LSTM": L.LSTM, "GRU": L.GRU}[cell.kind]
    return lambda: layer_class(cell.units, bidirectional=bidirectional, **options)


def _torch_gates(cell: Recurrence, array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``array``, gates stacked on dim 0 in Keras's order, with them in torch's."""
    gates = np.split(array, _GATES[cell.kind], axis=0)
    return np.concatenate([gates[index] for index in _GATE_ORDER[cell.kind]], axis=0)


def _native_weights(cell: Recurrence, source: KerasLayer, suffix: str) -> dict[str, np.ndarray[Any, Any]]:
    """Torch's parameters (names ending in ``suffix``) for the Keras cell of ``source``."""
    kernel, recurrent, *bias = source.arrays(3 if cell.use_bias else 2, source.weights.group("cell"))
    if not cell.native:
        return {"weight_ih": kernel.T, "weight_hh": recurrent.T, **({"bias": bias[0]} if bias else {})}
    weights = {
        f"weight_ih_l0{suffix}": _torch_gates(cell, kernel.T),
        f"weight_hh_l0{suffix}": _torch_gates(cell, recurrent.T),
    }
    if bias:
        rows = bias[0].reshape(-1, _GATES[cell.kind] * cell.units)  # one row, or a GRU's (input, recurrent)
        weights[f"bias_ih_l0{suffix}"] = _torch_gates(cell, rows[0])
        recurrent_bias = rows[1] if cell.two_biases else np.zeros_like(rows[0])
        weights[f"bias_hh_l0{suffix}"] = _torch_gates(cell, recurrent_bias)
    return weights


def _loader(layer: KerasLayer, cell: Recurrence, directions: list[KerasLayer]) -> Callable[[nn.Module], None]:
    """Loads the cells of ``directions`` (forward, then backward) into a built module.

    Where Keras has one bias, torch's ``bias_hh`` stays zero and frozen.
    """

    def load(module: nn.Module) -> None:
        for source, suffix in zip(directions, ("", "_reverse"), strict=False):
            assign(layer, module, **_native_weights(cell, source, suffix))
        if cell.native and cell.use_bias and not cell.two_biases:
            for name, parameter in module.named_parameters():
                if name.startswith("bias_hh"):
                    parameter.requires_grad_(False)

    return load


def _results(cell: Recurrence, result: Any, directions: int) -> list[Value]:
    """The layer's output, then (with ``return_state``) each direction's final states as Keras orders them."""
    output, state = result if cell.return_state else (result, None)
    values = [Value(output, keras_order(3 if cell.return_sequences else 2))]
    if state is not None:
        states = state if isinstance(state, tuple) else (state,)  # an LSTM's (h, c)
        values += [Value(part[direction], (0, 1)) for direction in range(directions) for part in states]
    return values


def _run(
    layer: KerasLayer, cell: Recurrence, source: KerasLayer, sequence: Any, part: str = ""
) -> list[Value]:
    """One direction: ``source``'s cell over ``sequence`` (flipped first when it goes backwards)."""
    if cell.go_backwards:
        sequence = sequence.flip(1)
    make = _make(cell, layer.part_name(part))
    return _results(cell, layer.apply(make, sequence, load=_loader(layer, cell, [source]), part=part), 1)


def _sequence(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    """The one input sequence of a recurrent layer, in Keras's order; initial states are refused."""
    if len(inputs) != 1 or layer.node_kwargs.get("initial_state") is not None:
        raise layer.error(
            "is called with an initial state, which is not supported: call it on the sequence only"
        )
    value = graph.layouts.keras(inputs[0])
    if value.rank != 3:
        raise layer.error(f"its input has rank {value.rank}: recurrent layers take (batch, time, features)")
    return value


@converts(
    "SimpleRNN", "LSTM", "GRU",
    becomes="RNN, LSTM, GRU (batch-first; bias_hh frozen at zero where Keras has one bias); GRU with "
    "reset_after=False: GRUResetBefore",
)  # fmt: skip
def recurrent(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> list[Value]:
    """A SimpleRNN, LSTM or GRU: its output, then (``return_state``) its final states."""
    cell = read_recurrence(layer)
    return _run(layer, cell, layer, _sequence(layer, inputs, graph).tensor)


# -- Bidirectional ------------------------------------------------------------


def _wrapped(
    layer: KerasLayer, key: str, weights_key: str, graph: GraphBuilder, entry: dict[str, Any] | None = None
) -> KerasLayer:
    """The layer config ``entry`` (default ``layer.config[key]``), checked as data, with its weights at ``weights_key``."""
    entry = layer.get(key) if entry is None else entry
    place = f"{layer.place}.{key}"
    if not isinstance(entry, dict):
        raise layer.error(f"{key} is not a layer config")
    check_entry(entry, place)
    return graph.layer_of(entry, place, layer.weights.group(weights_key))


def _directions(layer: KerasLayer, graph: GraphBuilder) -> tuple[KerasLayer, KerasLayer]:
    """A Bidirectional's forward and backward layers (the backward one made as Keras makes it, if absent)."""
    forward = _wrapped(layer, "layer", "forward_layer", graph)
    if forward.class_name not in _GATES:
        raise layer.error(f"wraps a {forward.class_name}: only SimpleRNN, LSTM and GRU are supported")
    if layer.get("backward_layer") is not None:
        backward = _wrapped(layer, "backward_layer", "backward_layer", graph)
    else:
        config = {**forward.config, "go_backwards": not forward.get("go_backwards", False)}
        entry = {**layer.get("layer"), "config": config}
        backward = _wrapped(layer, "layer", "backward_layer", graph, entry=entry)
    return forward, backward


_DIRECTION_MERGES: dict[str, Callable[[Any, Any], Any]] = {
    "concat": lambda forward, backward: torch.cat([forward, backward], dim=-1),
    "sum": operator.add,
    "mul": operator.mul,
    "ave": lambda forward, backward: (forward + backward) / 2,
}
"""Keras's ``merge_mode`` (but None: both outputs) -> how the two directions' outputs combine."""


def _merge(mode: str | None, forward: Value, backward: Value) -> list[Value]:
    """The two directions' outputs merged as Keras's ``merge_mode`` says."""
    if mode is None:
        return [forward, backward]
    return [forward.with_tensor(_DIRECTION_MERGES[mode](forward.tensor, backward.tensor))]


@converts(
    "Bidirectional",
    becomes="one bidirectional RNN/LSTM/GRU where both directions match (two layers otherwise), then the merge",
)
def bidirectional(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> list[Value]:
    """Both directions, merged by ``merge_mode`` (None: both outputs), then (``return_state``) forward's and backward's states."""
    sequence = _sequence(layer, inputs, graph).tensor
    forward, backward = _directions(layer, graph)
    cell, reverse = read_recurrence(forward), read_recurrence(backward)
    if cell.go_backwards or not reverse.go_backwards:
        raise layer.error(
            "its forward layer goes backwards: only a forward layer with a backward one is supported"
        )
    if (cell.return_sequences, cell.return_state) != (reverse.return_sequences, reverse.return_state):
        raise layer.error("its two layers differ in return_sequences or return_state")
    mode = layer.require("merge_mode", ("concat", "sum", "mul", "ave", None))
    if cell.native and dataclasses.replace(reverse, go_backwards=False) == cell:
        make = _make(cell, layer.module_name, bidirectional=True)
        result = layer.apply(make, sequence, load=_loader(layer, cell, [forward, backward]))
        output, *states = _results(cell, result, 2)
        if mode == "concat":
            return [output, *states]
        halves = output.tensor[..., : cell.units], output.tensor[..., cell.units :]
        ahead, behind = output.with_tensor(halves[0]), output.with_tensor(halves[1])
    else:  # a direction torch has no bidirectional module for, or directions that differ: one layer each
        ahead, *ahead_states = _run(layer, cell, forward, sequence, part="forward")
        behind, *behind_states = _run(layer, reverse, backward, sequence, part="backward")
        if reverse.return_sequences:  # Keras gives the backward outputs in the input's time order
            behind = behind.with_tensor(behind.tensor.flip(1))
        states = [*ahead_states, *behind_states]
    return [*_merge(mode, ahead, behind), *states]


# -- TimeDistributed ----------------------------------------------------------


@converts(
    "TimeDistributed",
    becomes="TimeDistributed (the inner layer converted on one frame); of a Dense: its Linear",
)
def time_distributed(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    """The inner layer converted as a Functional of one frame, applied to every frame by ``L.TimeDistributed``."""
    (value,) = inputs
    value = graph.layouts.keras(value)
    if value.rank < 3:
        raise layer.error(f"its input has rank {value.rank}: TimeDistributed takes (batch, time, ...)")
    if layer.get("layer", {}).get("class_name") == "Dense":
        # A Dense acts on the last axis at any rank: on every frame at once, as torch code would write it.
        if "dense" not in layer.state:
            inner = _wrapped(layer, "layer", "layer", graph)
            layer.state["dense"] = replace(inner, module_name=layer.module_name)
        return graph.call(layer.state["dense"], [value])[0]

    def make() -> nn.Module:
        inner = _wrapped(layer, "layer", "layer", graph)
        frame_shape = (None, *value.keras_shape[2:])
        frame = L.Placeholder(
            frame_shape, dtype=value.tensor.recorded_dtype, name=f"{layer.module_name}_frame"
        )
        outputs = graph.call(inner, [Value(frame, keras_order(len(frame_shape)))])
        if len(outputs) != 1:
            raise layer.error(
                f"its {inner.class_name} returns {len(outputs)} tensors: TimeDistributed takes one"
            )
        per_frame = L.Functional(
            inputs=frame, outputs=graph.layouts.keras(outputs[0]).tensor, name=inner.module_name
        )
        return L.TimeDistributed(per_frame, name=layer.module_name)

    # The per-frame model is made for the first call's frame shape: a shared layer's calls must agree.
    frame_shape = layer.state.setdefault("frame shape", value.keras_shape[2:])
    if value.keras_shape[2:] != frame_shape:
        raise layer.error(
            f"is shared by inputs with frames {frame_shape} and {value.keras_shape[2:]}: one converted "
            "per-frame model takes one frame shape; use one TimeDistributed per input"
        )
    out = layer.apply(make, value.tensor)
    return Value(out, keras_order(len(out.shape)))


# -- MultiHeadAttention -------------------------------------------------------


def _attention_input(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    """The one tensor a self-attention reads (query, value and key); anything else is refused."""
    kwargs = layer.node_kwargs
    for key, refused in (
        ("attention_mask", None),
        ("use_causal_mask", False),
        ("return_attention_scores", False),
    ):
        if kwargs.get(key, refused) not in (refused, None):
            raise layer.error(f"is called with {key}, which is not supported: call it on the sequence only")
    tensors = [
        *inputs,
        *(kwargs[key] for key in ("query", "value", "key") if isinstance(kwargs.get(key), Value)),
    ]
    if not tensors or any(tensor is not tensors[0] for tensor in tensors):
        raise layer.error(
            "only self-attention (query, value and key the same tensor) is supported: torch's "
            "MultiheadAttention with distinct inputs needs separate projections; write that part in PyTorch"
        )
    value = graph.layouts.keras(tensors[0])
    if value.rank != 3:
        raise layer.error(f"its input has rank {value.rank}: only (batch, time, features) is supported")
    return value


def _check_attention(layer: KerasLayer, features: int) -> tuple[int, int]:
    """``(num_heads, key_dim)``, refused unless torch's MultiheadAttention computes the same."""
    heads, key_dim = layer.integer("num_heads"), layer.integer("key_dim")
    value_dim = layer.get("value_dim") or key_dim
    if heads * key_dim != features or value_dim != key_dim:
        raise layer.error(
            f"num_heads * key_dim = {heads * key_dim} and value_dim = {value_dim} with {features} features: torch's "
            f"MultiheadAttention needs num_heads * key_dim == features ({features}) and value_dim == key_dim"
        )
    if layer.get("output_shape") not in (None, [features], features):
        raise layer.error(
            f"output_shape={layer.get('output_shape')!r} is not supported: only the input's features"
        )
    if layer.get("attention_axes") not in (None, [1], 1):
        raise layer.error(
            f"attention_axes={layer.get('attention_axes')!r}: only attention over time is supported"
        )
    if layer.get("use_gate", False) or layer.get("sliding_window") is not None:
        raise layer.error("use_gate and sliding_window have no torch equivalent in MultiheadAttention")
    return heads, key_dim


def _attention_loader(layer: KerasLayer, use_bias: bool) -> Callable[[nn.Module], None]:
    """Loads the query/key/value kernels ``(D, H, k)`` into ``in_proj`` and the output's ``(H, k, D)`` into ``out_proj``."""
    count = 2 if use_bias else 1

    def arrays(group: str) -> list[np.ndarray[Any, Any]]:
        return layer.arrays(count, layer.weights.group(group))

    def load(module: nn.Module) -> None:
        projections = [arrays(f"{name}_dense") for name in ("query", "key", "value")]
        output = arrays("output_dense")
        features = output[0].shape[-1]
        assign(
            layer, module, in_proj_weight=np.concatenate([p[0].reshape(features, -1).T for p in projections])
        )
        assign(layer, module, **{"out_proj.weight": output[0].reshape(-1, features).T})
        if use_bias:
            assign(layer, module, in_proj_bias=np.concatenate([p[1].reshape(-1) for p in projections]))
            assign(layer, module, **{"out_proj.bias": output[1]})

    return load


@converts("MultiHeadAttention", becomes="MultiheadAttention(batch_first=True), self-attention over time only")
def multi_head_attention(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    """Self-attention: torch's MultiheadAttention with Keras's per-head kernels flattened into its projections."""
    value = _attention_input(layer, inputs, graph)
    heads, _ = _check_attention(layer, int(value.keras_shape[-1] or 0))
    use_bias = bool(layer.get("use_bias", True))
    make = lambda: L.MultiheadAttention(  # noqa: E731
        heads,
        dropout=float(layer.get("dropout", 0.0)),
        bias=use_bias,
        batch_first=True,
        name=layer.module_name,
    )
    x = value.tensor
    out = layer.apply(make, x, x, x, need_weights=False, load=_attention_loader(layer, use_bias))
    return value.with_tensor(out[0])
