"""Model summaries: every module's output shape and parameters, from a meta run.

``summarize(model, (None, 3, 32, 32))`` builds the model on the meta device
(no memory for weights, no FLOPs), runs it there with forward hooks, and
returns one row per module plus totals. Memory figures follow torchinfo's
definitions, so the two tools agree on the same model: parameter bytes,
input bytes, and "forward/backward" bytes = twice the output bytes of every
call of a layer that has parameters (the outputs kept for the backward pass);
input bytes are the data alone (torchinfo also counts 64 bytes of Python
object per input tensor). With a dynamic batch alone they are per sample.

With a dynamic dim other than the batch (a sequence: ``(None, None)`` token
ids, an image: ``(None, 3, None, None)``), multiply-adds and every memory
figure that grows with it (input, forward/backward, total, the largest
tensor) are counted once more on fake tensors whose dynamic dims are symbols
(see :mod:`torchx.core._scaling`): they read as polynomials in ``N`` (the
batch) and ``T`` (the positions), ``1,024*N*T + 32*N*T^2``, exact where ``T``
is a multiple of what strided layers divide it by. The largest tensor is the
largest for large dims (a 112x112 map over a 1x1 one). A count that is no
polynomial, or a forward that cannot run on fake tensors, keeps the probes'
figure for mult-adds (per sample where proportional to the batch), and is
``-`` for memory, never a figure of the probes' sizes.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import flop_registry

from torchx.core import _memory as memory
from torchx.core._build import build
from torchx.core._dtypes import dtype_name
from torchx.core._errors import MemoryWarning, format_shape
from torchx.core._layer import Layer
from torchx.core._leaf import unbuilt_layers
from torchx.core._memory import format_bytes
from torchx.core._record import layer_name
from torchx.core._scaling import Scaling, symbols
from torchx.core._shapes import (
    DYNAMIC_PROBES,
    InputLike,
    Probes,
    Shape,
    input_dtype,
    input_shape,
    merge_probes,
    meta_copy,
    shape_of,
)

if TYPE_CHECKING:
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

__all__ = [
    "Allocation",
    "Recording",
    "Summary",
    "SummaryRow",
    "built_on_meta",
    "format_table",
    "forward_too_large",
    "memory_problems",
    "record_calls",
    "shape_text",
    "summarize",
]

_MB = 1e6


@dataclass(frozen=True)
class SummaryRow:
    """One module: where it is, what it is, its output, its parameters."""

    path: str
    """Dotted path from the model (``""`` is the model itself)."""
    depth: int
    type: str
    output_shape: Any
    """Shape tuple (``None``: dynamic), or the nesting of the output's shapes."""
    parameters: int
    """Parameters in this module and below (shared ones once)."""
    trainable: int
    calls: int
    """How many times the module ran in one forward (shared layers: more than once)."""
    mult_adds: int | Scaling | None = None
    """Multiply-adds of this module and below in one forward (convolutions,
    matrix products, attention), as torchinfo counts them; per sample with a
    dynamic batch; a :class:`~torchx.core._scaling.Scaling` in ``N`` and ``T``
    where they grow with another dynamic dim; None where neither describes them."""


@dataclass(frozen=True)
class Summary:
    """A model's rows and totals; ``str()`` is the table, :meth:`to_json` the data."""

    rows: tuple[SummaryRow, ...]
    total_parameters: int
    trainable_parameters: int
    input_bytes: int | Scaling | None
    """Bytes of the inputs: per sample with a dynamic batch, a :class:`~torchx.core._scaling.Scaling`
    where they grow with another dynamic dim (memory figures below alike), None where unknown."""
    activation_bytes: int | Scaling | None
    """Twice the output bytes of every call of a leaf with parameters (torchinfo's forward/backward)."""
    parameter_bytes: int
    largest_tensor: Allocation | None = None
    """The largest tensor one forward allocates (any op, inside layers or not):
    a forward needs at least this much memory at once."""
    per_sample: bool = False
    """Whether mult-adds are per sample (the batch is dynamic)."""
    depth: int | None = None
    """How deep the table shows modules (None: every level; 1: the model's children)."""
    columns: tuple[str, ...] = ("output_size", "num_params", "frozen")
    """The table's columns after the layer and its type, of :data:`COLUMNS`."""
    inputs: tuple[tuple[str, Any], ...] = ()
    """The model's named inputs and their shapes (a Functional's placeholders), listed first in the
    table, as Keras lists its input layers."""

    def __post_init__(self) -> None:
        unknown = [name for name in self.columns if name not in COLUMNS]
        if unknown:
            raise ValueError(f"unknown summary columns {unknown}; choose from {sorted(COLUMNS)}")

    @property
    def total_mult_adds(self) -> int | Scaling | None:
        """Multiply-adds of one forward (per sample with a dynamic batch, a
        :class:`~torchx.core._scaling.Scaling` with a dynamic sequence)."""
        return self.rows[0].mult_adds if self.rows else None

    @property
    def frozen_parameters(self) -> int:
        return self.total_parameters - self.trainable_parameters

    @property
    def total_bytes(self) -> int | Scaling | None:
        if self.input_bytes is None or self.activation_bytes is None:
            return None
        return self.input_bytes + self.activation_bytes + self.parameter_bytes

    def to_json(self) -> str:
        data = asdict(self)
        for row, written in zip(self.rows, data["rows"], strict=True):
            written["mult_adds"] = _count_data(row.mult_adds)
        if self.largest_tensor is not None:
            data["largest_tensor"] = {
                "op": self.largest_tensor.op,
                "shape": self.largest_tensor.shape,
                "dtype": dtype_name(self.largest_tensor.dtype),
                "bytes": _count_data(self.largest_tensor.bytes),
            }
        for name in ("depth", "columns"):
            data.pop(name)
        data["frozen_parameters"] = self.frozen_parameters
        data["total_mult_adds"] = _count_data(self.total_mult_adds)
        data["input_bytes"] = _count_data(self.input_bytes)
        data["activation_bytes"] = _count_data(self.activation_bytes)
        data["total_bytes"] = _count_data(self.total_bytes)
        if self._multiple() > 1:
            data["position_multiple"] = self._multiple()
        return json.dumps(data, indent=2)

    def __str__(self) -> str:
        headers = ("layer", "type", *(COLUMNS[name][0] for name in self.columns))
        table = [
            (
                "  " * row.depth + (row.path.rsplit(".", 1)[-1] if row.path else "(model)"),
                row.type + (f" x{row.calls}" if row.calls > 1 else ""),
                *(COLUMNS[name][1](row, self) for name in self.columns),
            )
            for row in (*self.rows[:1], *self._input_rows(), *self.rows[1:])
            if self.depth is None or row.depth <= self.depth
        ]
        right = [COLUMNS[name][2] for name in self.columns]
        trailing = next((index for index, flag in enumerate(reversed(right)) if not flag), len(right))
        lines = format_table(headers, table, numeric=trailing)
        rule = lines[1]
        totals = [
            f"total parameters: {self.total_parameters:,} (trainable {self.trainable_parameters:,}, "
            f"frozen {self.frozen_parameters:,})",
            self._mult_adds_total(),
            _size_text("input size", self.input_bytes),
            _size_text("forward/backward pass size", self.activation_bytes),
            _size_text("params size", self.parameter_bytes),
            _size_text("estimated total size", self.total_bytes),
        ]
        if self.largest_tensor is not None:
            largest = self.largest_tensor
            totals.append(
                f"{_size_text('largest tensor of a forward', largest.bytes)} "
                f"({largest.op}, {shape_text(largest.shape)})"
            )
        if self._scalings():
            multiple = self._multiple()
            totals.append(_LEGEND + (f", exact where T is a multiple of {multiple}" if multiple > 1 else ""))
        return "\n".join([*lines, rule, *totals])

    def _scalings(self) -> list[Scaling]:
        """The figures that are polynomials in ``N`` and ``T``."""
        largest = None if self.largest_tensor is None else self.largest_tensor.bytes
        figures = (*(row.mult_adds for row in self.rows), self.input_bytes, self.activation_bytes, largest)
        return [figure for figure in figures if isinstance(figure, Scaling)]

    def _multiple(self) -> int:
        """Where ``T`` is a multiple of this, every polynomial of the summary is exact."""
        return math.lcm(*(scaling.multiple for scaling in self._scalings()))

    def _mult_adds_total(self) -> str:
        total = self.total_mult_adds
        if isinstance(total, Scaling):
            return f"total mult-adds: {total}"
        per = " per sample" if self.per_sample else ""
        return f"total mult-adds{per} (M): {'-' if total is None else f'{total / 1e6:,.2f}'}"

    def _input_rows(self) -> Iterator[SummaryRow]:
        for name, shape in self.inputs:
            yield SummaryRow(name, 1, "Input", shape, parameters=0, trainable=0, calls=1)


_LEGEND = "N: the batch size, T: the size of each other dynamic dim (None in the shapes)"


def _count_data(count: int | Scaling | None) -> int | dict[str, int | float] | None:
    return count.to_data() if isinstance(count, Scaling) else count


def _size_text(label: str, size: int | Scaling | None) -> str:
    """``input size (MB): 0.60``, ``input size (bytes): 12*N*T^2`` or ``input size (MB): -``."""
    if isinstance(size, Scaling):
        return f"{label} (bytes): {size}"
    return f"{label} (MB): {'-' if size is None else f'{size / _MB:.2f}'}"


COLUMNS: dict[str, tuple[str, Any, bool]] = {
    "output_size": ("output shape", lambda row, summary: shape_text(row.output_shape), False),
    "num_params": ("parameters", lambda row, summary: f"{row.parameters:,}", True),
    "trainable": ("trainable", lambda row, summary: f"{row.trainable:,}", True),
    "frozen": ("frozen", lambda row, summary: f"{row.parameters - row.trainable:,}", True),
    "params_percent": (
        "% params",
        lambda row, summary: f"{100 * row.parameters / max(summary.total_parameters, 1):.2f}%",
        True,
    ),
    "mult_adds": (
        "mult-adds",
        lambda row, summary: (
            "-"
            if row.mult_adds is None
            else f"{row.mult_adds:,}"
            if isinstance(row.mult_adds, int)
            else str(row.mult_adds)
        ),
        True,
    ),
}
"""The columns a summary table can show, by torchinfo's names: (header, cell, right-aligned)."""


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, numeric: int = 1) -> list[str]:
    """Lines of a plain-text table: a header, a rule, the rows; the last
    ``numeric`` columns are right-aligned."""
    widths = [max(len(cells[i]) for cells in [headers, *rows]) for i in range(len(headers))]
    split = len(headers) - numeric

    def line(cells: Sequence[str]) -> str:
        left = [cell.ljust(width) for cell, width in zip(cells[:split], widths[:split], strict=True)]
        right = [cell.rjust(width) for cell, width in zip(cells[split:], widths[split:], strict=True)]
        return "  ".join([*left, *right]).rstrip()

    header = line(headers)
    return [header, "-" * len(header), *(line(cells) for cells in rows)]


def shape_text(shape: Any) -> str:
    if isinstance(shape, tuple) and all(dim is None or isinstance(dim, int) for dim in shape):
        return format_shape(shape)
    if isinstance(shape, (list, tuple)):
        return "[" + ", ".join(shape_text(item) for item in shape) + "]"
    if isinstance(shape, dict):
        return "{" + ", ".join(f"{key}: {shape_text(value)}" for key, value in shape.items()) + "}"
    return "-"


def _bytes(shape: Any, dtype: torch.dtype) -> int:
    """Bytes of a tensor shaped ``shape`` (``None`` dims count as 1: per sample, with a dynamic batch)."""
    count = 1
    for dim in shape:
        count *= 1 if dim is None else dim
    return count * torch.empty(0, dtype=dtype, device="meta").element_size()


@contextmanager
def built_on_meta(
    model: nn.Module, inputs: Sequence[InputLike], dtype: torch.dtype | None
) -> Iterator[nn.Module]:
    """Inside the block, a private meta copy of ``model`` (see
    :func:`~torchx.core._shapes.meta_copy`), built for ``inputs`` if it was not:
    what summaries and graphs run, leaving ``model`` as it is and copying none
    of its weights."""
    with meta_copy(model) as copied:
        if unbuilt_layers(copied):
            build(copied, *inputs, device="meta", dtype=dtype)
        yield copied


def summarize(model: nn.Module, *inputs: InputLike, dtype: torch.dtype | None = None) -> Summary:
    """Summarise ``model`` for ``inputs``, without running it for real.

    ``inputs`` are shapes (``None``: a dynamic dim) or tensors, as for
    :func:`torchx.build`. ``model`` is left as it is: the summary runs on a
    meta copy of it (built on meta, if it was not), which holds none of its
    weights. A forward whose largest tensor is more than the memory available
    (on the model's device) gives a :class:`~torchx.core.MemoryWarning`.
    """
    with built_on_meta(model, inputs, dtype) as copied:
        summary = _summary(copied, inputs, dtype)
    too_large = forward_too_large(summary.largest_tensor, _device_of(model))
    if too_large is not None:
        warnings.warn(too_large, MemoryWarning, stacklevel=2)
    return summary


def forward_too_large(largest: Allocation | None, device: torch.device) -> str | None:
    """Why a forward whose largest tensor is ``largest`` cannot run on
    ``device``, or None where it fits (or the memory or its size is unknown:
    a size growing with a dynamic dim after the batch)."""
    if largest is None or isinstance(largest.bytes, Scaling):
        return None
    available = memory.available_memory(device)
    if available is None or largest.bytes <= available:
        return None
    per = " per sample" if None in largest.shape else ""
    return (
        f"a forward allocates a tensor of {format_bytes(largest.bytes)}{per} ({largest.op}, "
        f"{shape_text(largest.shape)}), more than the {format_bytes(available)} available on {device}"
    )


def memory_problems(model: nn.Module, inputs: Sequence[InputLike], dtype: torch.dtype | None) -> list[str]:
    """What of ``model`` (built for ``inputs``) will not fit in the memory
    available on torch's default device: its weights, or the largest tensor of
    one forward for ``inputs`` (run on a meta copy)."""
    device = torch.get_default_device()
    problems = []
    weights = memory.weight_bytes(model)
    available = memory.available_memory(device)
    if available is not None and weights > available:
        problems.append(
            f"its parameters and buffers take {format_bytes(weights)}, more than the "
            f"{format_bytes(available)} available on {device}"
        )
    with built_on_meta(model, inputs, dtype) as copied:
        largest = record_calls(copied, [], inputs, dtype).largest
    too_large = forward_too_large(largest, device)
    return problems if too_large is None else [*problems, too_large]


def _device_of(model: nn.Module) -> torch.device:
    tensors = [t for t in (*model.parameters(), *model.buffers()) if not is_lazy(t) and not t.is_meta]
    return tensors[0].device if tensors else torch.get_default_device()


def _summary(model: nn.Module, inputs: Sequence[InputLike], dtype: torch.dtype | None) -> Summary:
    named = list(model.named_modules())
    recording = record_calls(model, named, inputs, dtype)
    calls = recording.calls
    mult_adds_of: dict[int, int | Scaling | None] = dict(recording.mult_adds)
    input_bytes: int | Scaling | None = sum(
        _bytes(input_shape(value), input_dtype(value, dtype)) for value in inputs
    )
    activation: int | Scaling | None = 2 * sum(_bytes(*leaf) for leaf in _kept_outputs(named, calls))
    largest = recording.largest
    sized = _sizes_by_position(model, named, inputs, dtype)
    if sized is not None:
        mult_adds_of.update(sized.mult_adds)
        input_bytes, largest = sized.input_bytes, sized.largest
        if sized.activation_bytes is None or sized.activation_bytes.position_degree:
            activation = sized.activation_bytes
    rows = []
    for path, module in named:
        parameters = list(module.parameters())
        mult_adds = mult_adds_of.get(id(module), 0 if calls[id(module)] else None)
        rows.append(
            SummaryRow(
                path=path,
                depth=path.count(".") + 1 if path else 0,
                type=layer_name(module),
                output_shape=calls[id(module)][0].shape if calls[id(module)] else None,
                parameters=sum(p.numel() for p in parameters),
                trainable=sum(p.numel() for p in parameters if p.requires_grad),
                calls=len(calls[id(module)]),
                mult_adds=mult_adds,
            )
        )
    all_parameters = list(model.parameters())
    return Summary(
        rows=tuple(rows),
        total_parameters=sum(p.numel() for p in all_parameters),
        trainable_parameters=sum(p.numel() for p in all_parameters if p.requires_grad),
        input_bytes=input_bytes,
        activation_bytes=activation,
        parameter_bytes=sum(p.numel() * p.element_size() for p in all_parameters),
        largest_tensor=largest,
        per_sample=Probes.for_inputs(inputs).dynamic,
        inputs=_named_inputs(model, inputs),
    )


def _kept_outputs(
    named: list[tuple[str, nn.Module]], calls: dict[int, list[_Call]]
) -> Iterator[tuple[Shape, torch.dtype]]:
    """The shape and dtype of each output torchinfo counts as kept for the
    backward pass: of every call of a leaf module with parameters."""
    for _, module in named:
        if next(module.parameters(), None) is not None and next(module.children(), None) is None:
            for call in calls[id(module)]:
                yield from call.leaves


def _named_inputs(model: nn.Module, inputs: Sequence[InputLike]) -> tuple[tuple[str, Any], ...]:
    """Each input's name and shape, for a model that names its inputs (a Functional)."""
    names = model.io_names()[0] if isinstance(model, Layer) else None
    if not names or len(names) != len(inputs):
        return ()
    return tuple((name, input_shape(value)) for name, value in zip(names, inputs, strict=True))


@dataclass(frozen=True)
class Allocation:
    """A tensor that an op of a forward allocates."""

    op: str
    """The aten op, such as ``aten.constant_pad_nd``."""
    shape: Shape
    """``None``: a dim that follows a dynamic input dim."""
    dtype: torch.dtype
    scaling: Scaling | None = None
    """Its bytes in ``N`` and ``T``, where it grows with a dynamic dim other than the batch."""

    @property
    def bytes(self) -> int | Scaling:
        """Its size in bytes: per sample with a dynamic batch, else :attr:`scaling` where there is one."""
        return _bytes(self.shape, self.dtype) if self.scaling is None else self.scaling


class _ForwardRecorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Records every tensor the ops of a meta forward allocate (views and
    in-place results, which share their input's memory, are not allocations),
    and the multiply-adds of each module running (``running``: their ids,
    kept by the module hooks), counted by torch's FLOP formulas."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.allocations: list[tuple[str, Shape, torch.dtype]] = []
        self.running: list[int] = []
        self.mult_adds: dict[int, int] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        output = func(*args, **(kwargs or {}))
        flops = flop_registry.get(func.overloadpacket)
        if flops is not None and self.running:
            count = flops(*args, **(kwargs or {}), out_val=output) // 2
            for module in set(self.running):
                self.mult_adds[module] = self.mult_adds.get(module, 0) + count
        returns = func._schema.returns
        tensors = output if isinstance(output, (tuple, list)) else (output,)
        for index, tensor in enumerate(tensors):
            aliased = index < len(returns) and returns[index].alias_info is not None
            if isinstance(tensor, torch.Tensor) and not aliased:
                self.allocations.append(
                    (
                        func.overloadpacket._qualified_op_name.replace("::", "."),
                        tuple(tensor.shape),
                        tensor.dtype,
                    )
                )
        return output


def _largest(
    first: list[tuple[str, Shape, torch.dtype]], second: list[tuple[str, Shape, torch.dtype]]
) -> Allocation | None:
    """The largest allocation of a forward, its dims merged over the two probes."""
    if len(first) != len(second):  # a forward whose ops depend on the batch size: the first probe
        second = first
    merged = [
        Allocation(op, merge_probes(shape, other[1]), dtype)
        for (op, shape, dtype), other in zip(first, second, strict=True)
    ]
    return max(merged, key=lambda allocation: _bytes(allocation.shape, allocation.dtype), default=None)


@dataclass(frozen=True)
class _Call:
    """One call of a module: its output's shapes, and each output tensor's shape and dtype."""

    shape: Any
    leaves: tuple[tuple[Shape, torch.dtype], ...]

    @classmethod
    def of(cls, output: Any) -> _Call:
        tensors = [leaf for leaf in tree_leaves(output) if isinstance(leaf, torch.Tensor)]
        return cls(shape_of(output), tuple((tuple(t.shape), t.dtype) for t in tensors))

    def merged(self, other: _Call) -> _Call:
        """This probe's call and the other probe's: dims that differ are dynamic."""
        leaves = tuple(
            (merge_probes(mine[0], theirs[0]), mine[1])
            for mine, theirs in zip(self.leaves, other.leaves, strict=True)
        )
        return _Call(merge_probes(self.shape, other.shape), leaves)


@dataclass(frozen=True)
class Recording:
    """What one meta forward did: every module's calls, its largest tensor,
    and each module's multiply-adds."""

    calls: dict[int, list[_Call]]
    """By ``id`` of the module: its calls in order."""
    largest: Allocation | None
    mult_adds: dict[int, int | None]
    """By ``id`` of the module (and below); per sample with dynamic inputs, or
    None where the count does not scale with them."""


def record_calls(
    model: nn.Module,
    named: list[tuple[str, nn.Module]],
    inputs: Sequence[InputLike],
    dtype: torch.dtype | None,
) -> Recording:
    """Every call of every module, and every tensor allocated, in one meta
    forward (two, merged, with dynamic dims) of ``model``, a meta copy (see
    :func:`built_on_meta`)."""
    probes = Probes.for_inputs(inputs)
    metas = probes.meta_inputs(inputs, dtype)
    runs = probes.run(lambda probe: _record_forward(model, named, metas[probe]))
    (first, first_recorder), (last, last_recorder) = runs[0], runs[-1]
    calls = {key: [a.merged(b) for a, b in zip(first[key], last[key], strict=True)] for key in first}
    largest = _largest(first_recorder.allocations, last_recorder.allocations)
    return Recording(calls, largest, _mult_adds(first_recorder.mult_adds, last_recorder.mult_adds, probes))


def _record_forward(
    model: nn.Module, named: list[tuple[str, nn.Module]], metas: tuple[torch.Tensor, ...]
) -> tuple[dict[int, list[_Call]], _ForwardRecorder]:
    """``model``'s forward on ``metas``: the calls of each of the modules
    ``named`` (by ``id``), and the recorder of its ops."""
    seen: dict[int, list[_Call]] = {id(module): [] for _, module in named}
    recorder = _ForwardRecorder()

    def enter(module: nn.Module, args: Any) -> None:
        recorder.running.append(id(module))

    def leave(module: nn.Module, args: Any, output: Any) -> None:
        recorder.running.pop()
        seen[id(module)].append(_Call.of(output))

    handles = [hook for _, module in named for hook in (
        module.register_forward_pre_hook(enter), module.register_forward_hook(leave, always_call=True)
    )]  # fmt: skip
    try:
        with torch.no_grad(), recorder:
            model(*metas)
    finally:
        for handle in handles:
            handle.remove()
    return seen, recorder


@dataclass(frozen=True)
class _Sizes:
    """A forward's figures in ``N`` and ``T`` (None: no polynomial)."""

    mult_adds: dict[int, Scaling]
    """By ``id`` of the module, those whose count is a polynomial."""
    input_bytes: Scaling | None
    activation_bytes: Scaling | None
    largest: Allocation | None
    """The largest tensor for large dims (None unless every size is a polynomial)."""


def _sizes_by_position(
    model: nn.Module,
    named: list[tuple[str, nn.Module]],
    inputs: Sequence[InputLike],
    dtype: torch.dtype | None,
) -> _Sizes | None:
    """With a dynamic dim other than the batch, the figures of a forward
    that grow with it, counted on symbols (see :class:`_SymbolicRun`); only
    the inputs' bytes where that forward fails. None without such a dim."""
    shapes = [input_shape(value) for value in inputs]
    if not any(dim is None for shape in shapes for dim in shape[1:]):
        return None
    import sympy  # type: ignore[import-untyped]  # here, not at import: it takes a second

    sizes = (
        _symbolic_bytes(shape, input_dtype(value, dtype)) for value, shape in zip(inputs, shapes, strict=True)
    )
    input_bytes = Scaling.of(sympy.Add(*sizes))
    run = _SymbolicRun.of(model, named, inputs, shapes, dtype)
    if run is None:
        return _Sizes({}, input_bytes, None, None)
    mult_adds = {
        key: scaled
        for key, count in run.recorder.mult_adds.items()
        if (scaled := Scaling.of(run.count(count))) is not None
    }
    kept = sympy.Add(*(run.bytes(*leaf) for leaf in _kept_outputs(named, run.calls)))
    return _Sizes(mult_adds, input_bytes, Scaling.of(2 * kept), _largest_by_position(run))


def _symbolic_bytes(shape: Shape, dtype: torch.dtype) -> Any:
    """Bytes of an input shaped ``shape``: a dynamic dim 0 is ``N``, any other ``T``."""
    import sympy

    batch, position, _ = symbols()
    dims = (dim if dim is not None else batch if index == 0 else position for index, dim in enumerate(shape))
    return sympy.Mul(dtype.itemsize, *dims)


def _largest_by_position(run: _SymbolicRun) -> Allocation | None:
    """The tensor of ``run`` that is largest for large dims (see :class:`Scaling`'s
    order), or None where a size is no polynomial."""
    sized = []
    for op, shape, dtype in run.recorder.allocations:
        size = Scaling.of(run.bytes(shape, dtype))
        if size is None:
            return None
        sized.append((size, op, shape, dtype))
    if not sized:
        return None
    size, op, shape, dtype = max(sized, key=lambda item: item[0])
    dims = tuple(dim if isinstance(dim, int) else None for dim in shape)
    return Allocation(op, dims, dtype, size if size.position_degree else None)


@dataclass(frozen=True)
class _SymbolicRun:
    """A forward on fake tensors whose dynamic dims are symbols: torch's
    ``ShapeEnv`` writes every size and count as an expression in them."""

    calls: dict[int, list[_Call]]
    recorder: _ForwardRecorder
    shape_env: ShapeEnv
    symbols: dict[Any, Any]
    """Torch's symbol of each dynamic dim, by ``N`` (dim 0) or ``T`` (another)."""

    @classmethod
    def of(
        cls,
        model: nn.Module,
        named: list[tuple[str, nn.Module]],
        inputs: Sequence[InputLike],
        shapes: list[Shape],
        dtype: torch.dtype | None,
    ) -> _SymbolicRun | None:
        """``model``'s forward on ``inputs`` shaped ``shapes``, or None where it
        fails (ops without fake kernels, control flow on a size) or fixes a
        dynamic dim (inputs whose dims must be equal)."""
        import sympy
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

        shape_env = ShapeEnv()
        mode = FakeTensorMode(shape_env=shape_env, allow_non_fake_inputs=True)
        try:
            # dim 0 and the other dynamic dims take different sizes: duck sizing makes one symbol of each
            fakes = tuple(
                mode.from_tensor(
                    torch.empty(
                        [
                            DYNAMIC_PROBES[min(index, 1)] if dim is None else dim
                            for index, dim in enumerate(shape)
                        ],
                        dtype=input_dtype(value, dtype),
                        device="meta",
                    ),
                    symbolic_context=StatelessSymbolicContext(
                        dynamic_sizes=[DimDynamic.DUCK if dim is None else DimDynamic.STATIC for dim in shape]
                    ),
                )
                for value, shape in zip(inputs, shapes, strict=True)
            )
            with mode:
                calls, recorder = _record_forward(model, named, fakes)
        except Exception:  # noqa: BLE001 - any failure of the fake run: the probes' mult-adds, memory unknown
            return None
        run = cls(calls, recorder, shape_env, {})
        batch, position, _ = symbols()
        roles = {
            (run.count(size), batch if index == 0 else position)
            for fake, shape in zip(fakes, shapes, strict=True)
            for index, (size, dim) in enumerate(zip(fake.shape, shape, strict=True))
            if dim is None
        }
        by_symbol = dict(roles)
        if len(by_symbol) != len(roles) or not all(isinstance(symbol, sympy.Symbol) for symbol in by_symbol):
            return None  # a dynamic dim was fixed, or the batch had to equal the positions
        return replace(run, symbols=by_symbol)

    def count(self, value: object) -> Any:
        """``value`` (an int or a ``SymInt``) in ``N`` and ``T``, a floor division as a ``floor``."""
        import sympy
        from torch.utils._sympy.functions import FloorDiv

        raw = (
            self.shape_env.replace(value.node.expr)
            if isinstance(value, torch.SymInt)
            else sympy.sympify(value)
        )
        return raw.replace(FloorDiv, lambda base, divisor: sympy.floor(base / divisor)).xreplace(self.symbols)

    def bytes(self, shape: Shape, dtype: torch.dtype) -> Any:
        """Bytes of a tensor shaped ``shape`` (of ``SymInt``s and ints), in ``N`` and ``T``."""
        import sympy

        return sympy.Mul(dtype.itemsize, *map(self.count, shape))


def _mult_adds(first: dict[int, int], last: dict[int, int], probes: Probes) -> dict[int, int | None]:
    """Multiply-adds by module: as counted, or with dynamic inputs per sample,
    where the two probes' counts are proportional to their sizes (else None)."""
    if not probes.dynamic:
        return dict(first)
    small, large = probes.sizes
    return {
        key: count // small if count * large == last.get(key, 0) * small and count % small == 0 else None
        for key, count in first.items()
    }
