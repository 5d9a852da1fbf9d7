"""Placeholders: symbolic tensors on which layer calls and torch operations are recorded.

Every placeholder is the output of one :class:`Node`. A node keeps what
produced it (an input, a module call, a function or a tensor method), its
arguments (other nodes, or constants) and its output on the meta device,
computed when the node is recorded — so a shape error surfaces at definition
time, naming the operation. A ``None`` dim is dynamic: nodes downstream of one
also keep a second meta output, from the second probe (see
:class:`~torchx.plugin.Probes`), and report the dims that differ as ``None``.

The size of a dynamic dim (``x.shape[1]``, ``x.size(1)``) is a :class:`Size`:
a node too, whose value under each probe is that probe's size, so sizes work
out right in both probes through arithmetic (``T // heads``), shapes
(``x.view(b, t, h, d)``), slices (``w[:T]``) and factories
(``torch.arange(T)``); the generated forward reads it off its input at run
time. A static dim is a plain int.
"""

from __future__ import annotations

import contextvars
import itertools
import operator
import os
import sys
import weakref
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, cast

import torch
from torch import nn
from torch.nn.parameter import UninitializedBuffer, UninitializedParameter

import torchx
from torchx.core import Layer, ShapeError, TorchXError, current_scope
from torchx.functional._dims import Dim, probe_sizes
from torchx.functional._ops import (
    FACTORIES,
    MODE_ARGUMENTS,
    ZERO_FILLED_FUNCTIONS,
    ZERO_FILLED_METHODS,
    check_call,
    check_method,
    updated_arguments,
)
from torchx.functional._slices import counted_cut, widen_slices
from torchx.functional._tree import leaves_of, map_leaves
from torchx.plugin import (
    MetaFormulas,
    Probes,
    ValueFold,
    all_or_nothing,
    build_for_meta,
    build_target,
    closed_form_output,
    find_symbolic,
    format_shape,
    layer_name,
    run_on_meta,
    scope_device,
    torch_message,
    unbuilt_layers,
)

__all__ = [
    "AttributeOf",
    "BatchSize",
    "Buffer",
    "ByMode",
    "Node",
    "OwnMetaOutput",
    "Pieces",
    "Placeholder",
    "Size",
    "SymbolicShape",
    "accept_placeholders",
    "answering_copies",
    "may_return_input",
    "meta_call",
    "meta_signature",
    "shares_input",
    "tensor_placeholder",
]

NodeKind = Literal["input", "module", "function", "method", "tensor"]

_ids = itertools.count()

BATCH_SIZED_METHODS = frozenset({"view", "reshape", "expand", "new_zeros", "new_ones"})
"""Methods whose first size argument, when it is ``None`` (as ``x.shape[0]`` is
for a dynamic batch) or equals the batch size the graph was defined with, is
recorded as "the batch size of the input" instead."""


@dataclass(frozen=True)
class BatchSize:
    """A size argument that stands for dim 0 of ``node``'s output at run time."""

    node: Node

    def __repr__(self) -> str:
        return _size_name(self.node, 0)


_FLOATING = frozenset(
    dtype
    for dtype in vars(torch).values()
    if isinstance(dtype, torch.dtype) and (dtype.is_floating_point or dtype.is_complex)
)


@dataclass(frozen=True, eq=False)
class AttributeOf:
    """The ``dtype`` or ``device`` of ``node``'s output at run time: what
    ``x.dtype`` and ``x.device`` give on a placeholder, read off the tensor in
    the generated forward (``x.dtype``), so ``.to(x.dtype)`` and
    ``torch.ones((t, t), dtype=x.dtype)`` follow ``model.to(torch.float64)``,
    ``.cuda()`` and autocast; a factory of a dynamic size makes its tensor on
    its input's device so.

    It has no value at definition time: a floating dtype is whatever ``.to()``
    and autocast make it, so it compares only with itself, and as a kind (an
    integer or bool dtype is never floating, and keeps its dtype;
    ``is_floating_point`` and ``is_complex`` answer); a device compares only
    with itself. Anything else (``x.dtype.itemsize``, ``torch.finfo(x.dtype)``)
    is refused."""

    node: Node
    attribute: Literal["dtype", "device"]

    def __repr__(self) -> str:
        return f"{_node_label(self.node)}.{self.attribute}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AttributeOf) and (other.node, other.attribute) == (self.node, self.attribute):
            return True
        if self.attribute == "dtype" and isinstance(other, (AttributeOf, torch.dtype)):
            dtypes = [
                self.node.meta.dtype,
                other.node.meta.dtype if isinstance(other, AttributeOf) else other,
            ]
            if dtypes[0] not in _FLOATING or dtypes[1] not in _FLOATING:
                return bool(dtypes[0] == dtypes[1])  # an integer or bool dtype is one at every run
        elif not isinstance(other, (AttributeOf, torch.device, str)):
            return NotImplemented
        raise self._no_value(f"{self!r} == {other!r}")

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = object.__hash__

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if self.attribute == "dtype" and name in ("is_floating_point", "is_complex"):
            return getattr(self.node.meta.dtype, name)  # a kind: .to() and autocast keep it
        raise self._no_value(f"{self!r}.{name}")

    def _no_value(self, use: str) -> TorchXError:
        follows, fix = (
            ("model.to(torch.float64) and autocast", "; it compares only as a kind (integer and bool dtypes "
             "stay), and limits are numbers (float('-inf'), not torch.finfo(x.dtype).min)")
            if self.attribute == "dtype"
            else ("model.to(device)", "")
        )  # fmt: skip
        return TorchXError(
            f"{use} needs the {self.attribute} {self!r} has at run time: it follows {follows}, and a graph "
            "cannot keep the one it had when it was defined. It works as an argument "
            f"(t.to({self!r}), torch.ones(3, {self.attribute}={self!r})){fix}"
        )

    @classmethod
    def __torch_function__(
        cls, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        """A call given one (``torch.arange(T, device=x.device)``, ``t.to(x.dtype)``) records itself."""
        return Placeholder.__torch_function__(func, types, args, kwargs)


@dataclass(frozen=True)
class ByMode:
    """An argument that follows the model's mode at run time: ``training``
    while it trains, ``evaluating`` in eval mode (``self.training`` in the
    generated forward). ``F.dropout(x, p)`` records ``training=ByMode(True,
    False)``, ``F.scaled_dot_product_attention(..., dropout_p=p)`` records
    ``dropout_p=ByMode(p, 0.0)``: they drop in train mode only, as ``nn.Dropout`` does."""

    training: bool | int | float
    evaluating: bool | int | float

    def __repr__(self) -> str:
        return f"({self.training!r} if training else {self.evaluating!r})"

    @classmethod
    def __torch_function__(
        cls, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        """A call read back from a spec (``dropout_p=<by mode>``) records itself."""
        return Placeholder.__torch_function__(func, types, args, kwargs)


def _by_mode(
    function: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The call's arguments with the one that only holds in train mode made a
    :class:`ByMode` (see :data:`~torchx.functional._ops.MODE_ARGUMENTS`); None
    where the call has none in force."""
    found = MODE_ARGUMENTS.get(function)
    if found is None:
        return None
    name, position, default = found
    value = args[position] if len(args) > position else kwargs.get(name, default)
    if isinstance(value, ByMode) or value is False or value == 0:
        return None  # by mode already, or never in force
    by_mode = ByMode(value, False if value is True else 0.0)
    if len(args) > position:
        return (*args[:position], by_mode, *args[position + 1 :]), kwargs
    return args, {**kwargs, name: by_mode}


def _node_label(node: Node) -> str:
    """How a message names ``node``'s output: an input by its name, else its operation."""
    return node.name if node.kind == "input" and node.name else f"<{node.describe()}>"


def _size_name(node: Node, dim: int) -> str:
    return f"{_node_label(node)}.shape[{dim}]"


class Node:
    """One recorded step of a graph; placeholders point at nodes, nodes at nodes."""

    __slots__ = (
        "__weakref__",
        "_shape",
        "args",
        "defined_at",
        "fresh",
        "id",
        "kind",
        "kwargs",
        "meta",
        "metas",
        "name",
        "sizes",
        "target",
    )

    def __init__(
        self,
        kind: NodeKind,
        target: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        metas: tuple[Any, ...],
        name: str | None = None,
        fresh: bool = True,
    ) -> None:
        self.id = next(_ids)
        self.kind = kind
        self.target = target
        self.args = args
        self.kwargs = kwargs
        self.metas = metas
        """The output on the meta device under each probe: two where an input
        has a dynamic dim, else one (see :class:`~torchx.plugin.Probes`)."""
        self.meta = metas[0]
        """The output on the meta device under the first probe (its dtype and
        nesting are those of every probe)."""
        self.name = name
        self.fresh = fresh
        """Whether the output is new memory: not an input, nor a view of one
        (what may share memory decides where a graph may work in place)."""
        self.sizes: dict[int, tuple[weakref.ref[Size], weakref.ref[Node]]] | None = None
        """The sizes of its dynamic dims read so far, and their nodes, by dim:
        one node each. Held weakly (a size holds this node): without a cycle, a
        graph no one holds is freed at once, not by the garbage collector."""
        self._shape: tuple[int | None, ...] | None = None
        self.defined_at = _definition_site()
        """The file and line of the code that recorded it (the first frame outside torch and TorchX)."""

    def inputs(self) -> list[Node]:
        """The nodes this node reads."""
        found: list[Node] = []
        for value in (*self.args, *self.kwargs.values()) if self.kwargs else self.args:
            kind = type(value)
            if kind is Node:  # most arguments are
                found.append(value)
            elif kind not in _ATOMS:
                found.extend(
                    leaf.node if isinstance(leaf, (BatchSize, AttributeOf)) else leaf
                    for leaf in leaves_of(value)
                    if isinstance(leaf, (Node, BatchSize, AttributeOf))
                )
        return found

    def meta_under(self, probe: int) -> Any:
        """The output on the meta device under ``probe`` (the first probe's
        where no input had a dynamic dim)."""
        return self.metas[probe if probe < len(self.metas) else 0]

    @property
    def shape(self) -> tuple[int | None, ...]:
        """The output shape, ``None`` where it follows a dynamic dim."""
        if self._shape is None:  # the metas never change: merged once
            self._shape = Probes.merged_shapes(self.metas)
        return self._shape

    def describe(self) -> str:
        """A short name for messages: the layer class, function or method."""
        if self.kind == "module":
            return layer_name(self.target)
        if self.kind == "method":
            return f"Tensor.{self.target}"
        if self.kind == "input":
            return f"Placeholder {self.name!r}" if self.name else "Placeholder"
        if self.kind == "tensor":
            return f"tensor {format_shape(tuple(self.meta.shape))}"
        return getattr(self.target, "__name__", repr(self.target))


_LIBRARIES = (os.path.dirname(torch.__file__), *torchx.__path__, "<")
"""Where torch's and TorchX's own code lies (every folder of the ``torchx``
package: one per distribution in editable installs), and generated forwards
(named ``<torchx-functional-0>``)."""


def _definition_site() -> tuple[str, int] | None:
    """The file and line of the innermost caller outside torch and TorchX: where a node was recorded."""
    frame = sys._getframe(2)
    while frame is not None:
        if not frame.f_code.co_filename.startswith(_LIBRARIES):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _as_meta(value: Any, probe: int) -> Any:
    """``value`` with placeholders replaced by their meta outputs under ``probe``."""
    if type(value) is tuple:  # a call's arguments: placeholders, sizes, numbers without a tree walk
        flat = _flat_metas(value, probe)
        if flat is not None:
            return flat
    elif type(value) is dict and not value:
        return {}
    return map_leaves(lambda leaf: _leaf_meta(leaf, probe), value)


def _leaf_meta(leaf: Any, probe: int) -> Any:
    """A leaf of a call's arguments as it is under ``probe``: a placeholder's or
    size's meta value, the meta device for a device read off a placeholder."""
    if isinstance(leaf, (Placeholder, Size)):
        return leaf.node.meta_under(probe)
    if isinstance(leaf, BatchSize):
        return leaf.node.meta_under(probe).shape[0]
    if isinstance(leaf, AttributeOf):
        return torch.device("meta") if leaf.attribute == "device" else leaf.node.meta_under(probe).dtype
    if isinstance(leaf, ByMode):
        return leaf.training
    return leaf


def _flat_metas(value: tuple[Any, ...], probe: int) -> tuple[Any, ...] | None:
    """:func:`_as_meta` of a tuple of placeholders, sizes and atoms (numbers,
    strings, None); None where it holds anything else."""
    metas = []
    for leaf in value:
        kind = type(leaf)
        if kind is Placeholder:
            metas.append(leaf.node.meta_under(probe))
        elif kind in _ATOMS:
            metas.append(leaf)
        elif kind is Size or kind is BatchSize:
            metas.append(_leaf_meta(leaf, probe))
        else:
            return None
    return tuple(metas)


def _as_metas(value: Any, probes: Probes) -> list[Any]:
    """``value`` with placeholders replaced by their meta outputs, under each of ``probes``."""
    return [_as_meta(value, probe) for probe in probes.indices]


def _as_nodes(value: Any) -> Any:
    if type(value) is tuple:  # a call's arguments: placeholders, sizes, numbers without a tree walk
        nodes = []
        for leaf in value:
            kind = type(leaf)
            if kind is Placeholder or kind is Size:
                nodes.append(leaf.node)
            elif kind in _ATOMS or kind is BatchSize:
                nodes.append(leaf)
            else:
                break
        else:
            return tuple(nodes)
    elif type(value) is dict and not value:
        return {}
    return map_leaves(lambda leaf: leaf.node if isinstance(leaf, (Placeholder, Size)) else leaf, value)


def _named(what: str | nn.Module) -> str:
    """A call's name in messages: ``what`` itself, or a module's layer name
    (worked out only for a message)."""
    return what if isinstance(what, str) else layer_name(what)


def _refuse_torch_checkpoint(what: str | nn.Module) -> None:
    """``torch.utils.checkpoint.checkpoint(block, x)`` on placeholders would
    record the block as plain calls, silently without checkpointing: refuse it
    (it is recognised by the saved-tensor hooks its non-reentrant form pushes)."""
    hooks = torch._C._autograd._top_saved_tensors_default_hooks(False)
    if hooks and "_checkpoint_hook" in getattr(hooks[0], "__qualname__", ""):
        raise TorchXError(
            f"{_named(what)} was called on placeholders inside torch.utils.checkpoint.checkpoint, which a graph "
            "cannot record: the block would run without checkpointing. Wrap it instead: "
            "L.Checkpoint(block)(x) checkpoints it in the generated forward"
        )


def _check_leaves(what: str | nn.Module, leaves: list[Any]) -> bool:
    """Refuse real tensors among the leaves of a call's arguments beside
    placeholders, and recording inside torch's checkpoint; say whether any
    input is dynamic. ``what`` is the call (see :func:`_named`)."""
    _refuse_torch_checkpoint(what)
    dynamic = False
    for leaf in leaves:
        if isinstance(leaf, (Placeholder, Size)):
            dynamic = dynamic or len(leaf.node.metas) > 1
        elif isinstance(leaf, torch.Tensor):  # (nn.Parameter's isinstance check runs Python: tensors only)
            if isinstance(leaf, nn.Parameter):
                raise _ModuleCall(_named(what))
            raise TorchXError(
                f"{_named(what)} was called on a mix of placeholders and a real tensor of shape "
                f"{format_shape(tuple(leaf.shape))}; a graph takes its data only through its inputs. "
                "Fix: make the tensor a Placeholder input, or register it in a layer"
            )
    return dynamic


def _cuts_dynamic_dim(kind: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The dynamic dim of ``args[0]`` this call cuts into a number of pieces
    that follows its length (``x.unbind(1)``, ``x.split(10, 1)``), if it is such a cut."""
    dim = counted_cut(kind, target, args, kwargs)
    shape = args[0].node.shape
    if dim is None or not -len(shape) <= dim < len(shape) or shape[dim] is not None:
        return None
    return dim % len(shape)


class Pieces:
    """The pieces a cut of a dynamic dim gives (``x.unbind(1)``, ``x.split(10, 1)``):
    their number follows the dim's length at run time, so they are taken one
    by one from the front (``pieces[0]``, ``pieces[1]``), each an error at run
    time where the input has fewer, as in torch. What needs their number (a
    loop over them, ``len``, ``pieces[-1]``, ``pieces[:2]``, ``torch.cat(pieces)``)
    is refused: a graph would keep the probe's count."""

    __slots__ = ("_label", "_pieces")

    def __init__(self, label: str, pieces: tuple[Any, ...]) -> None:
        self._label = label
        self._pieces = pieces

    def __repr__(self) -> str:
        return f"<the pieces {self._label}>"

    def __getitem__(self, index: int | slice) -> Any:
        if type(index) is int and index >= 0:
            return self._pieces[index]
        raise self._counted(f"[{index!r}]")  # a slice has as many pieces as there are, up to its stop

    def __iter__(self) -> Iterator[Any]:
        raise self._counted("a loop over them (or unpacking)")

    def __len__(self) -> int:
        raise self._counted("len()")

    def __contains__(self, item: object) -> bool:
        raise self._counted("`in`")

    def _counted(self, use: str) -> TorchXError:
        return TorchXError(
            f"{use} needs the number of pieces {self._label}, a dynamic size: the number follows its length "
            "at run time, and a graph would keep the probe's count (a loop over the pieces would "
            "stop there). Take pieces one by one from the front (pieces[0], pieces[1]); or give that dim a "
            "static size in the Placeholder, cut it into a fixed number of pieces (x.tensor_split(n, dim), "
            "x.split([sizes], dim)), or work along it without a Python loop (a recurrent layer such as L.GRU, "
            "or torch.cumsum)"
        )


def _refuse_updates_of_values(
    function: Callable[..., Any], what: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """A function that updates an argument in place (``F.batch_norm``'s running
    statistics in training) may update only what the model holds (a layer's
    buffer, a constant): never an input or a value the graph computed."""
    for name, value in updated_arguments(function, args, kwargs).items():
        if isinstance(value, Placeholder) and value.node.kind != "tensor":
            raise TorchXError(
                f"{what} updates its argument {name} in place, and was given {value.node.describe()}, a "
                "value of the graph rather than a tensor the model holds; give it a layer's buffer or "
                "parameter (or call it so that it does not update: training=False, max_norm=None)"
            )


class _ModuleCall(TorchXError, RuntimeError):
    """Raised inside a native forward that touched a parameter with a placeholder."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"{what} used a module's parameter on a placeholder: a torch module was called on a "
            "placeholder without being recorded. Use the TorchX layer (torchx.layers), or let the "
            "module record placeholder calls: torchx.functional.accept_placeholders(module)"
        )


_RESULTS: dict[Hashable, tuple[tuple[Any, ...], bool]] = {}
_RESULTS_LIMIT = 4096


def _tensor_signature(tensor: torch.Tensor) -> Hashable:
    """What of a meta tensor decides an operation's output: its shape, strides and dtype."""
    return ("tensor", tensor.shape, tensor.stride(), tensor.dtype)


class _MetaSignature(ValueFold[Hashable]):
    """A hashable description of a meta argument: what decides the output's
    shape and dtype (a tensor's shape, strides and dtype; every other value,
    with its type); raises TypeError for values that cannot be described."""

    def fold(self, value: Any, where: str) -> Hashable:
        if isinstance(value, torch.Tensor):  # most arguments are: looked for before the grammar
            return _tensor_signature(value)
        return super().fold(value, where)

    def atom(self, value: bool | int | float | str | None, where: str) -> Hashable:
        return (type(value).__name__, value)  # 1, 1.0 and True are equal, and differ here

    def sequence(self, value: tuple[Any, ...] | list[Any], items: list[Hashable], where: str) -> Hashable:
        return (type(value).__name__, *items)

    def mapping(self, items: dict[str, Hashable], where: str) -> Hashable:
        return ("dict", *items.items())

    def slice(self, start: Hashable, stop: Hashable, step: Hashable, where: str) -> Hashable:
        return ("slice", start, stop, step)

    def ellipsis(self, where: str) -> Hashable:
        return ("ellipsis", Ellipsis)

    def dtype(self, value: torch.dtype, where: str) -> Hashable:
        return ("dtype", value)

    def other(self, value: Any, where: str) -> Hashable:
        if type(value) is torch.device:  # a factory's device= (meta, in a meta run)
            return ("device", value)
        raise TypeError(type(value).__name__)


_META_SIGNATURE = _MetaSignature()


_ATOMS = frozenset((bool, int, float, str, type(None)))
_PLAIN_TENSOR = frozenset((torch.Tensor,))


def meta_signature(value: Any) -> Hashable:
    """``value``'s :class:`_MetaSignature` (the values recorded calls mostly
    hold, tensors, numbers, indices and flat containers of them, without the grammar's walk)."""
    quick = _quick_signature(value)
    return _META_SIGNATURE.fold(value, "") if quick is None else quick


def _quick_signature(value: Any) -> Hashable | None:
    """:func:`meta_signature` of tensors, atoms, slices, ``...`` and lists,
    tuples and string-keyed dicts of them; None for anything else."""
    kind = type(value)
    if kind is torch.Tensor:
        return _tensor_signature(value)
    if kind in _ATOMS:
        return (kind.__name__, value)
    if kind is tuple or kind is list:
        items = tuple(map(_quick_signature, value))
        return None if None in items else (kind.__name__, *items)
    if kind is dict:
        if not all(type(key) is str for key in value):
            return None
        entries = tuple((key, _quick_signature(item)) for key, item in value.items())
        return None if any(item is None for _, item in entries) else ("dict", *entries)
    if kind is slice:
        parts = (_quick_signature(value.start), _quick_signature(value.stop), _quick_signature(value.step))
        return None if None in parts else ("slice", *parts)
    if value is Ellipsis:
        return ("ellipsis", Ellipsis)
    return None


def shares_input(output: Any, inputs: Any) -> bool:
    """Whether a meta ``output`` may share memory with ``inputs``: a tensor in
    it is one of them, or a view."""
    if (
        type(output) is torch.Tensor and type(inputs) is tuple and _PLAIN_TENSOR.issuperset(map(type, inputs))
    ):  # a layer's call: no tree walk, no generator
        return output._is_view() or id(output) in map(id, inputs)
    given = {id(leaf) for leaf in leaves_of(inputs) if isinstance(leaf, torch.Tensor)}
    return any(
        isinstance(leaf, torch.Tensor) and (leaf._is_view() or id(leaf) in given)
        for leaf in leaves_of(output)
    )


def _compute(
    what: str,
    key: Any,
    function: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    dynamic: bool,
) -> tuple[tuple[Any, ...], bool]:
    """Run ``function`` on the meta values of its inputs under each probe (two
    when ``dynamic``): its outputs, and whether they are fresh memory.

    Meta outputs hold no data, so the same operation on the same shapes (a
    chain of ``x + 1``, repeated residual blocks) is computed once: results
    are remembered by the signature of every probe's inputs.
    """
    probes = Probes(dynamic)
    metas = [(_as_meta(args, probe), _as_meta(kwargs, probe) if kwargs else {}) for probe in probes.indices]
    try:
        signature: Hashable | None = (
            key,
            *[
                (meta_signature(probe_args), meta_signature(probe_kwargs) if probe_kwargs else None)
                for probe_args, probe_kwargs in metas
            ],
        )
    except TypeError:
        signature = None
    found = None if signature is None else _RESULTS.get(signature)
    if found is not None:
        return found
    try:
        with MetaFormulas():
            outputs = probes.run(lambda probe: function(*metas[probe][0], **metas[probe][1]))
    except (RuntimeError, ValueError, IndexError, TypeError, AssertionError) as error:
        if isinstance(error, _ModuleCall):
            raise
        shapes = ", ".join(
            format_shape(leaf.node.shape) if isinstance(leaf, Placeholder) else repr(leaf)
            for leaf in leaves_of(args) + leaves_of(kwargs)
        )
        raise ShapeError(
            what, f"cannot take ({shapes}): {torch_message(error)}", fix=_fix(function, metas)
        ) from None
    found = (tuple(outputs), not shares_input(outputs[0], metas[0]))  # outside the mode: plain tensor calls
    if signature is not None:
        if len(_RESULTS) >= _RESULTS_LIMIT:
            _RESULTS.clear()
        _RESULTS[signature] = found
    return found


def _fix(function: Callable[..., Any], metas: list[tuple[tuple[Any, ...], dict[str, Any]]]) -> str:
    """The fix for an operation the probes refused: where the first probe
    works and the second does not, a dynamic size has a bound the recording
    does not know (a table of 64 rows sliced by it): say it."""
    if len(metas) > 1:
        try:
            function(*metas[0][0], **metas[0][1])
        except Exception:  # noqa: BLE001 - refused at the first probe too: the shapes misfit
            pass
        else:
            return (
                f"it works where the dynamic dims are {Probes(True).sizes[0]} long, not "
                f"{Probes(True).sizes[1]}: if a dynamic size has a bound (a table of that many rows sliced by "
                "it), name it in the input's shape, L.Placeholder((None, L.Dim('T', max=64))), and the "
                "probes stay inside it"
            )
    return "change the inputs' shapes or the operation's arguments"


def record(
    kind: NodeKind,
    target: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    function: Callable[..., Any],
    what: str,
    *,
    fresh: bool = True,
) -> Any:
    """Record one operation on placeholders and return placeholder output(s);
    the real tensors among its arguments are read as values of the graph (see
    :func:`tensor_placeholder`). ``fresh=False``: its output may be its input
    (dropout in eval mode), whatever the probes show."""
    leaves = leaves_of((args, kwargs)) if kwargs else leaves_of(args)
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            args, kwargs = _read_tensors(args, what), _read_tensors(kwargs, what)
            leaves = leaves_of((args, kwargs))
            break
    dynamic = _check_leaves(what, leaves)
    metas, computed_fresh = _compute(what, (kind, target), function, args, kwargs, dynamic)
    fresh = fresh and computed_fresh
    cut = None
    if dynamic and args and isinstance(args[0], Placeholder):
        metas = widen_slices(kind, target, args, kwargs, args[0].node.metas, metas)
        cut = _cuts_dynamic_dim(kind, target, args, kwargs)
    node = Node(kind, target, _as_nodes(args), _as_nodes(kwargs) if kwargs else {}, metas, fresh=fresh)
    if cut is not None:  # as many pieces as every probe has, taken by position only
        label = f"{what} cuts {_size_name(args[0].node, cut)} into"
        return Pieces(label, tuple(_part(node, key) for key in range(min(map(len, metas)))))
    return _outputs(node)


def _symbolic_leaves(value: Any) -> bool:
    """Whether ``value`` holds a placeholder or a dynamic size."""
    return any(isinstance(leaf, (Placeholder, Size)) for leaf in leaves_of(value))


def _read_tensors(value: Any, what: str) -> Any:
    """``value`` with each real tensor in it made a placeholder (:func:`tensor_placeholder`)."""
    return map_leaves(
        lambda leaf: tensor_placeholder(leaf, what) if isinstance(leaf, torch.Tensor) else leaf, value
    )


def tensor_placeholder(tensor: torch.Tensor, what: str = "the graph") -> Placeholder:
    """A placeholder reading the real ``tensor`` that ``what`` was given beside
    placeholders: a parameter or buffer of a layer of the graph, which the
    generated forward reads from the layer at run time (``self.wte.weight``:
    the graph holds the tie, not a copy), or else a constant, which the
    Functional holds as a buffer (see :func:`~torchx.functional._program.trace`).

    A view of a parameter (``wte.weight.T``) reads the parameter and takes the
    view in the graph, so gradients reach it; a tensor computed from one
    (``wte.weight * 2``) is refused: it would be a copy, cut from the parameter.
    """
    if isinstance(tensor, (UninitializedParameter, UninitializedBuffer)):
        raise TorchXError(
            f"{what} was given a parameter or buffer of a layer that is not built yet, so its shape is "
            "unknown; call the layer on a placeholder first (h = wte(ids)), then read its tensor "
            "(F.linear(h, wte.weight))"
        )
    base = tensor._base
    if isinstance(base, nn.Parameter) and not isinstance(tensor, nn.Parameter):
        source = tensor_placeholder(base, what)
        if tensor.dim() == 2 == base.dim() and (tensor.shape, tensor.stride()) == (
            base.shape[::-1],
            base.stride()[::-1],
        ):
            return source.t()  # type: ignore[no-any-return]  # wte.weight.T
        # a view within the parameter (torch made it): recorded as it is, though no graph may write as_strided
        view = (source, tuple(tensor.shape), tensor.stride(), tensor.storage_offset())
        return record("function", torch.as_strided, view, {}, torch.as_strided, "Tensor.as_strided")  # type: ignore[no-any-return]
    if tensor.grad_fn is not None:
        raise TorchXError(
            f"{what} was given a tensor of shape {format_shape(tuple(tensor.shape))} computed from a "
            f"parameter outside the graph ({tensor.grad_fn.name()}): the graph would hold a copy, cut "
            "from the parameter; compute it in the graph from the parameter itself (F.linear(h, "
            "wte.weight) * 2, h @ wte.weight.T)"
        )
    meta = torch.empty_strided(tuple(tensor.shape), tensor.stride(), dtype=tensor.dtype, device="meta")
    return Placeholder._of(Node("tensor", tensor, (), {}, (meta,), fresh=False))


def _outputs(node: Node) -> Any:
    """Placeholder(s) for ``node``'s output: one per tensor, via getitem nodes,
    through any nesting of tuples, lists and dicts (an LSTM returns ``(out,
    (h, c))``, a Functional may return a dict)."""
    if isinstance(node.meta, torch.Tensor):
        return Placeholder._of(node)
    if isinstance(node.meta, (tuple, list, dict)):
        if any(len(meta) != len(node.meta) for meta in node.metas):
            raise _follows_probe(node, f"{len(node.meta)} values")
        items = node.meta.items() if isinstance(node.meta, dict) else enumerate(node.meta)
        parts = {}
        for key, part in items:
            if isinstance(part, (torch.Tensor, tuple, list, dict)):
                parts[key] = _part(node, key)
            elif any(meta[key] != part for meta in node.metas):
                raise _follows_probe(node, repr(part))
            else:
                parts[key] = part
        if isinstance(node.meta, dict):
            return parts
        # tuple subclasses keep their type: torch.return_types give .values/.indices
        return type(node.meta)(parts.values()) if isinstance(node.meta, tuple) else list(parts.values())
    raise TorchXError(
        f"{node.describe()} returned {type(node.meta).__name__}; graph nodes must return tensors"
    )


def _part(node: Node, key: Any) -> Any:
    """Placeholder(s) for the part ``key`` of ``node``'s output, through a getitem
    node: a part shares its container's memory, and the container's node stands for both."""
    part_metas = tuple(meta[key] for meta in node.metas)
    return _outputs(Node("function", operator.getitem, (node, key), {}, part_metas, fresh=False))


def _follows_probe(node: Node, value: str) -> TorchXError:
    """The refusal of a Python value ``node`` returned that depends on a dynamic size."""
    return TorchXError(
        f"{node.describe()} returned {value} for the probe, a value that follows a dynamic size: at run time "
        "it differs, and a graph would keep the probe's. Fix: give the dynamic dims static sizes in the "
        "Placeholder, or compute with tensors and sizes read off x.shape instead"
    )


class OwnMetaOutput:
    """A built module that works out its own meta outputs, without a meta run
    of its forward (a Functional: from its steps, once per input signature)."""

    def meta_output(self, args: tuple[Any, ...]) -> tuple[Any, bool]:
        """The output for meta ``args`` (positional only), and whether it is fresh
        memory (see :func:`shares_input`)."""
        raise NotImplementedError

    def answering_meta_calls(self) -> AbstractContextManager[None]:
        """Inside the block, its forward answers calls on meta tensors with
        :meth:`meta_output` and runs any other call as usual: for a build,
        which runs the modules holding it in place."""
        raise NotImplementedError


_ANSWERING: contextvars.ContextVar[bool] = contextvars.ContextVar("torchx_meta_answers", default=False)


def answering_copies() -> bool:
    """Whether a meta run made for a graph (a placeholder call, a step of a meta
    forward) is in progress in this context: the copies of an
    :class:`OwnMetaOutput` made meanwhile (meta copies of the modules holding
    it) answer calls on meta tensors from their original."""
    return _ANSWERING.get()


@contextmanager
def _answering(module: nn.Module | None = None) -> Iterator[None]:
    """Inside the block, the graphs inside a module run on meta answer from
    what they worked out, instead of running every nested call again (a graph
    in an ``L.Sequential`` called twice per level, ``depth`` levels deep, would
    run 2**depth times): their copies made meanwhile (see :func:`answering_copies`)
    and, given the ``module`` that runs in place (a build), those inside it."""
    token = _ANSWERING.set(True)
    try:
        if module is not None and not module._modules and not isinstance(module, OwnMetaOutput):
            yield  # a leaf: no graph inside to answer (the common case, without an ExitStack)
        else:
            with ExitStack() as stack:
                for sub in () if module is None else module.modules():
                    if isinstance(sub, OwnMetaOutput):
                        stack.enter_context(sub.answering_meta_calls())
                yield
    finally:
        _ANSWERING.reset(token)


def _call_module(
    module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], bool]:
    """Build ``module`` for the placeholders' shapes if needed; its meta
    outputs under each probe, and whether they are fresh memory."""
    if not kwargs and len(args) == 1 and type(args[0]) is Placeholder:  # the common call, without walks
        _refuse_torch_checkpoint(module)
        metas = [(meta,) for meta in args[0].node.metas]  # one per probe
        probes = Probes(len(metas) > 1)
    else:
        probes = Probes(_check_leaves(module, leaves_of((args, kwargs)) if kwargs else leaves_of(args)))
        metas = _as_metas(args, probes)
    meta_kwargs = _as_metas(kwargs, probes) if kwargs else [kwargs] * len(metas)
    if isinstance(module, OwnMetaOutput) and not kwargs:  # built, and answers without a meta run
        results = probes.run(lambda probe: module.meta_output(metas[probe]))
        return tuple(output for output, _ in results), results[0][1]
    unbuilt = unbuilt_layers(module)
    outputs = None
    if unbuilt == [module] and not kwargs:  # an unbuilt leaf layer: its formula may do without a meta run
        outputs = build_for_meta(module, probes, metas, scope_device(), _scope_dtype())
    if outputs is None and unbuilt:
        with (
            _answering(module),
            all_or_nothing(module, unbuilt=unbuilt),
            build_target(scope_device(), _scope_dtype()) as target,
            torch.no_grad(),
        ):
            target.swap.add(module)
            # The first probe builds; the second runs the build's own module, on its swapped stand-ins.
            outputs = probes.run(
                lambda probe: module(*metas[probe], **meta_kwargs[probe]),
                second=lambda probe: _probe(module, metas[probe], meta_kwargs[probe], building=True),
            )
    elif outputs is None:
        outputs = probes.run(lambda probe: _probe(module, metas[probe], meta_kwargs[probe]))
    output, first, first_kwargs = outputs[0], metas[0], meta_kwargs[0]
    shares = shares_input(output, first) or (bool(first_kwargs) and shares_input(output, first_kwargs))
    return tuple(outputs), not shares and not may_return_input(module)


def _scope_dtype() -> torch.dtype | None:
    """The floating dtype the device scope asks for, if any (the layers' default otherwise)."""
    scope = current_scope()
    return None if scope is None else scope.dtype


def meta_call(module: nn.Module, *args: Any, **kwargs: Any) -> Any:
    """``module``'s meta output for meta inputs, where it has no forward hooks:
    its own where it works it out (see :class:`OwnMetaOutput`), its layer's
    formula (see :func:`closed_form_output`); else from a meta run (the graphs
    inside answering, see :func:`_answering`), which also runs its hooks."""
    if not kwargs and not _has_forward_hooks(module):
        if isinstance(module, OwnMetaOutput):
            return module.meta_output(args)[0]
        output = closed_form_output(module, args)
        if output is not None:
            return output
    with _answering():
        return run_on_meta(module, args, kwargs)


def _has_forward_hooks(module: nn.Module) -> bool:
    """Whether ``module`` has forward hooks, which its :meth:`OwnMetaOutput.meta_output` does not run."""
    return bool(module._forward_hooks or module._forward_pre_hooks)


def _probe(
    module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], *, building: bool = False
) -> Any:
    """``module``'s meta output for meta inputs: from its layer's formula where
    it has one (a TorchX leaf: no meta forward to run), else from a meta run
    (of the module itself while it builds: its tensors are stand-ins already)."""
    output = None if kwargs else closed_form_output(module, args)
    if output is not None:
        return output
    if building:
        return module(*args, **kwargs)
    with _answering():
        return run_on_meta(module, args, kwargs)


def may_return_input(module: nn.Module) -> bool:
    """Whether ``module`` may return (a view of) its input in another mode than
    the one it was recorded in: dropout returns its input in eval mode."""
    if not module._modules:  # a leaf, without a generator
        return isinstance(module, nn.modules.dropout._DropoutNd)
    return any(isinstance(sub, nn.modules.dropout._DropoutNd) for sub in module.modules())


class _PlaceholderCalls:
    """Stands in ``module._compiled_call_impl`` (the hook ``nn.Module.__call__``
    consults before anything else): a call on placeholders is recorded as a
    graph node, any other call runs as usual. ``nn.Module`` drops it from
    copies and pickles, as it does a compiled call; modules whose own
    ``__getstate__`` keeps it (torch's recurrent layers) get one bound to the
    copy, and none in a pickle."""

    __slots__ = ("_module",)

    def __init__(self, module: nn.Module) -> None:
        self._module = weakref.ref(module)

    def __deepcopy__(self, memo: dict[int, Any]) -> _PlaceholderCalls | None:
        copied = memo.get(id(self._module()))  # the module's copy, made before its state is copied
        return _PlaceholderCalls(copied) if isinstance(copied, nn.Module) else None

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return type(None), ()  # unpickles as None: a plain call

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        module = self._module()
        assert module is not None
        if not kwargs and len(args) == 1 and type(args[0]) is torch.Tensor:
            return module._call_impl(*args)  # type: ignore[no-untyped-call]
        symbolic = find_symbolic(args, kwargs)
        if symbolic is not None:
            return symbolic.__torchx_call__(module, args, kwargs)
        return module._call_impl(*args, **kwargs)  # type: ignore[no-untyped-call]


def accept_placeholders(module: nn.Module) -> nn.Module:
    """Let ``module`` (any ``nn.Module``, built TorchX layers and plain torch
    modules alike) be called on placeholders, which records the call as one
    graph node; its calls on tensors cost one Python call more. Returns it.

    Layers that build on placeholders get this by themselves, so a layer shared
    by several nodes is called on placeholders again after its build.
    """
    if isinstance(module, Layer):
        return module  # a layer records its placeholder calls itself
    if not isinstance(module.__dict__.get("_compiled_call_impl"), _PlaceholderCalls):
        module.__dict__["_compiled_call_impl"] = _PlaceholderCalls(module)  # no nn.Module.__setattr__ walk
        ignored = module.__dict__.get(  # not getattr: nn.Module.__getattr__ raises for a missing name
            "__jit_ignored_attributes__", getattr(type(module), "__jit_ignored_attributes__", [])
        )
        if "_compiled_call_impl" not in ignored:
            # torch.jit.script types each instance attribute by its class annotation, and a class
            # without annotations of its own (nn.Tanh, nn.Sigmoid, nn.Identity) shows nn.Module's:
            # ``_compiled_call_impl: Callable | None``, which TorchScript cannot resolve
            module.__dict__["__jit_ignored_attributes__"] = [*ignored, "_compiled_call_impl"]
    return module


def _binary(
    function: Callable[[Any, Any], Any], *, reflected: bool = False
) -> Callable[[Placeholder, Any], Placeholder]:
    """The operator method ``self <op> other``, recorded as ``function(self, other)``
    (``function(other, self)`` when ``reflected``: ``2 * x`` calls ``x.__rmul__(2)``)."""

    def method(self: Placeholder, *others: Any) -> Any:
        args = (others[0], self) if reflected else (self, *others)
        return record("function", function, args, {}, function, function.__name__)

    return method


def _augmented(function: Callable[[Any, Any], Any]) -> Callable[[Placeholder, Any], Placeholder]:
    """The operator method ``self <op>= other``: ``function(self, other)`` in
    ``self``'s dtype at run time, as torch's in-place operator keeps it (under
    autocast, ``h += x`` stays bfloat16 where ``h + x`` is float32). A graph's
    values never change: another name for the old ``self`` keeps the old value."""

    def method(self: Placeholder, other: Any) -> Any:
        result = record("function", function, (self, other), {}, function, function.__name__)
        return result._method("to", (self.dtype,), {})

    return method


def _unary(function: Callable[[Any], Any]) -> Callable[[Placeholder], Placeholder]:
    """The operator method ``<op> self``, recorded as ``function(self)``."""

    def method(self: Placeholder) -> Any:
        return record("function", function, (self,), {}, function, function.__name__)

    return method


class Placeholder:
    """A symbolic tensor: the input of a graph, or the output of an operation on one.

    Args:
        shape: the input's shape; ``None`` marks a dynamic dim (typically the
            batch). Dim 0 is the batch: a graph defined on batch 8 runs on any
            batch size.
        dtype: the input's dtype. Default: torch's default dtype.
        name: the input's name: the keyword (or dict key) a Functional takes
            it by, and its parameter name in the generated ``forward`` where
            Python reads the name as written (any string works; the forward
            holds other names in variables of its own).

    Layers called on placeholders return placeholders; so do torch functions
    (``torch.cat``, ``F.relu``...), tensor methods and operators. ``flatten()``
    with no arguments keeps the batch dim. Pass placeholders to
    :class:`~torchx.functional.Functional` to make a model.

    Examples::

        >>> x = Placeholder((None, 3, 32, 32), name="image")
        >>> y = L.Conv2d(8, kernel_size=3)(x).flatten()
        >>> y.shape
        (None, 7200)
    """

    __slots__ = ("node",)

    node: Node

    def __init__(
        self, shape: Sequence[int | Dim | None], dtype: torch.dtype | None = None, name: str | None = None
    ) -> None:
        if not isinstance(shape, (tuple, list, torch.Size)):
            raise TorchXError(f"Placeholder shape must be a tuple of dims, got {shape!r}")
        if isinstance(dtype, AttributeOf) and dtype.attribute == "dtype":
            # declared like another input: L.Placeholder(shape, dtype=x.dtype)
            dtype = dtype.node.meta.dtype
        if dtype is not None and not isinstance(dtype, torch.dtype):
            raise TorchXError(f"Placeholder dtype must be a torch.dtype, got {dtype!r}")
        if name is not None and not isinstance(name, str):
            raise TorchXError(f"Placeholder name must be a string, got {name!r}")
        given = tuple(shape)
        for dim in given:
            if (
                dim is not None
                and not isinstance(dim, Dim)
                and (isinstance(dim, bool) or not isinstance(dim, int) or dim < 0)
            ):
                raise TorchXError(
                    f"Placeholder shape {given!r}: every dim must be a non-negative int, None (dynamic) "
                    "or an L.Dim (dynamic, named and bounded)"
                )
        named = tuple(dim if isinstance(dim, Dim) else None for dim in given)
        dims = tuple(None if isinstance(dim, Dim) else dim for dim in given)
        probes = Probes(None in dims)
        metas = tuple(meta for (meta,) in probes.meta_inputs([dims], dtype))
        if any(named):  # the probes stay inside the bounds
            metas = tuple(
                meta.new_empty(
                    [
                        size if dim is None else probe_sizes(dim)[probe]
                        for dim, size in zip(named, meta.shape, strict=True)
                    ]
                )
                for probe, meta in enumerate(metas)
            )
        self.node = Node("input", named if any(named) else None, (), {}, metas, name)  # see input_dims

    def input_dims(self) -> tuple[Dim | None, ...]:
        """The named dims (:class:`~torchx.functional.Dim`) of an input, None
        for each other dim (an input given none: all None)."""
        target = self.node.target if self.node.kind == "input" else None
        return target if isinstance(target, tuple) else (None,) * len(self.node.shape)

    @classmethod
    def _of(cls, node: Node) -> Placeholder:
        placeholder = cls.__new__(cls)
        placeholder.node = node
        return placeholder

    # -- what a tensor tells about itself ----------------------------------------

    @property
    def shape(self) -> SymbolicShape:
        """The shape: an int per static dim, a :class:`Size` per dynamic one
        (``b, t, c = x.shape``); it prints and compares as the shape with
        ``None`` for the dynamic dims."""
        sizes = (self._size_of(dim, size) for dim, size in enumerate(self.node.shape))
        return SymbolicShape(cast("Iterator[int]", sizes))  # a Size is typed as an int: see SymbolicShape

    def size(self, dim: int | None = None) -> Any:
        """``shape``, or one dim of it: an int, or a :class:`Size` where it is dynamic."""
        if dim is None:
            return self.shape
        shape = self.node.shape
        if isinstance(dim, bool) or not isinstance(dim, int) or not -len(shape) <= dim < len(shape):
            raise IndexError(
                f"size({dim!r}) of a placeholder of shape {format_shape(shape)}: dims are "
                f"{-len(shape)}..{len(shape) - 1}"
            )
        dim %= len(shape)
        return self._size_of(dim, shape[dim])

    def _size_of(self, dim: int, static: int | None) -> int | Size:
        """Dim ``dim``'s size: ``static``, or the dynamic size (one node per dim)."""
        if static is not None:
            return static
        node = self.node
        if node.sizes is None:
            node.sizes = {}
        known = node.sizes.get(dim)
        size, size_node = (None, None) if known is None else (known[0](), known[1]())
        if size is None:
            if size_node is None:
                metas = tuple(meta.shape[dim] for meta in node.metas)
                size_node = Node("method", "size", (node, dim), {}, metas)
            size = Size(size_node, node, _size_name(node, dim))
            node.sizes[dim] = (weakref.ref(size), weakref.ref(size_node))
        return size

    @property
    def ndim(self) -> int:
        return len(self.node.shape)

    def dim(self) -> int:
        return len(self.node.shape)

    @property
    def dtype(self) -> torch.dtype:
        """The dtype at run time (see :class:`AttributeOf`), typed as a dtype as
        :attr:`shape`'s sizes are typed as ints; ``repr(x)`` shows the one it was defined with."""
        return cast("torch.dtype", AttributeOf(self.node, "dtype"))

    @property
    def device(self) -> torch.device:
        """The device at run time (see :class:`AttributeOf`)."""
        return cast("torch.device", AttributeOf(self.node, "device"))

    @property
    def recorded_dtype(self) -> torch.dtype:
        """The dtype it was recorded in: for code that decides while the graph
        is defined, as a converter or a size check does. The graph's own
        computations read :attr:`dtype`, which follows the model at run time."""
        return self.node.meta.dtype  # type: ignore[no-any-return]

    @property
    def name(self) -> str | None:
        return self.node.name

    def __repr__(self) -> str:
        origin = self.node.describe()
        return (
            f"Placeholder(shape={format_shape(self.node.shape)}, dtype={self.node.meta.dtype}, from={origin})"
        )

    def __len__(self) -> int:
        raise TorchXError("len() of a Placeholder is not recorded; use placeholder.shape[0]")

    def __bool__(self) -> bool:
        raise TorchXError("a Placeholder has no truth value at definition time (graphs have no control flow)")

    def __iter__(self) -> Any:
        raise TorchXError("a Placeholder cannot be iterated; use torch.unbind(x, dim) or x.split(...)")

    __hash__ = object.__hash__

    # -- operators: recorded as the functions of ``operator`` (typed: ``x * 2 + x`` is a Placeholder) --

    __add__ = _binary(operator.add)
    __radd__ = _binary(operator.add, reflected=True)
    __sub__ = _binary(operator.sub)
    __rsub__ = _binary(operator.sub, reflected=True)
    __mul__ = _binary(operator.mul)
    __rmul__ = _binary(operator.mul, reflected=True)
    __truediv__ = _binary(operator.truediv)
    __rtruediv__ = _binary(operator.truediv, reflected=True)
    __floordiv__ = _binary(operator.floordiv)
    __rfloordiv__ = _binary(operator.floordiv, reflected=True)
    __mod__ = _binary(operator.mod)
    __rmod__ = _binary(operator.mod, reflected=True)
    __pow__ = _binary(operator.pow)
    __rpow__ = _binary(operator.pow, reflected=True)
    __matmul__ = _binary(operator.matmul)
    __rmatmul__ = _binary(operator.matmul, reflected=True)
    __and__ = _binary(operator.and_)
    __rand__ = _binary(operator.and_, reflected=True)
    __or__ = _binary(operator.or_)
    __ror__ = _binary(operator.or_, reflected=True)
    __xor__ = _binary(operator.xor)
    __rxor__ = _binary(operator.xor, reflected=True)
    __neg__ = _unary(operator.neg)
    __pos__ = _unary(operator.pos)
    __abs__ = _unary(operator.abs)
    __invert__ = _unary(operator.invert)
    __lt__ = _binary(operator.lt)
    __le__ = _binary(operator.le)
    __gt__ = _binary(operator.gt)
    __ge__ = _binary(operator.ge)
    # A bool tensor, as torch's; declared, since a type checker would take object's
    # ``-> bool`` (pyright does, for a name that a base class declares).
    __eq__: ClassVar[Callable[[Placeholder, Any], Placeholder]] = _binary(operator.eq)  # type: ignore[assignment]
    __ne__: ClassVar[Callable[[Placeholder, Any], Placeholder]] = _binary(operator.ne)  # type: ignore[assignment]
    __getitem__ = _binary(operator.getitem)
    __iadd__ = _augmented(operator.add)
    __isub__ = _augmented(operator.sub)
    __imul__ = _augmented(operator.mul)
    __itruediv__ = _augmented(operator.truediv)

    # -- recording ---------------------------------------------------------------

    @classmethod
    def __torch_function__(
        cls, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        func = ZERO_FILLED_FUNCTIONS.get(func, func)
        what = getattr(func, "__name__", repr(func))
        args, kwargs = check_call(func, what, tuple(args), kwargs)
        _refuse_updates_of_values(func, what, args, kwargs)
        if (
            args
            and type(args[0]) is torch.Tensor
            and func in (getattr(torch.Tensor, what, None), getattr(torch._C.TensorBase, what, None))
        ):
            # a method of a real tensor given a value of the graph (table.to(x.dtype)): on the tensor as a constant
            return tensor_placeholder(args[0], f"Tensor.{what}")._method(what, tuple(args[1:]), kwargs)
        if func is torch.reshape and len(args) == 2 and isinstance(args[0], Placeholder):
            args = (args[0], *args[0]._batch_size_in((args[1],)))
        if func in FACTORIES:
            return _record_factory(func, tuple(args), kwargs, what)
        by_mode = _by_mode(func, tuple(args), kwargs)
        if by_mode is not None:  # dropout: its output is its input in eval mode
            return record("function", func, *by_mode, func, what, fresh=False)
        return record("function", func, tuple(args), kwargs, func, what)

    def __torchx_call__(self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Record ``module(*args, **kwargs)``, building the module first if needed."""
        metas, fresh = _call_module(module, args, kwargs)
        if not isinstance(module, Layer):
            accept_placeholders(
                module
            )  # a layer built here is its native module now: shared, it is called again
        node = Node(
            "module", module, _as_nodes(args), _as_nodes(kwargs) if kwargs else {}, metas, fresh=fresh
        )
        return _outputs(node)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """Tensor methods (``x.flatten()``, ``x.view(...)``, ``x.split(...)``): each call
        is recorded and returns a placeholder, or placeholders as torch returns tensors."""
        if name.startswith("__") or not callable(getattr(torch.Tensor, name, None)):
            raise AttributeError(f"Placeholder has no attribute {name!r}")
        return lambda *args, **kwargs: self._method(name, args, kwargs)

    def _method(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        name = ZERO_FILLED_METHODS.get(name, name)  # never uninitialised memory
        check_method(name)
        if name == "flatten" and not args and not kwargs:
            args = (1,)  # keep the batch dim
        if (
            name == "new_tensor"
            and args
            and type(args[0]) in (list, tuple)
            and not _symbolic_leaves((args, kwargs))
        ):
            # data: a constant, in x's dtype at run time unless one is given (a number is written in the call)
            dtype = kwargs.get("dtype")
            constant = tensor_placeholder(
                torch.tensor(args[0], dtype=dtype or self.node.meta.dtype), "Tensor.new_tensor"
            )
            return constant if dtype is not None else constant._method("to", (self.dtype,), {})
        if name in BATCH_SIZED_METHODS and args:
            args = self._batch_size_in(args)
        elif name in BATCH_SIZED_METHODS:
            for key in ("shape", "size"):
                if isinstance(kwargs.get(key), (tuple, list)):
                    kwargs = {**kwargs, key: self._batch_size_in(tuple(kwargs[key]))}

        def call(tensor: torch.Tensor, *rest: Any, **options: Any) -> Any:
            return getattr(tensor, name)(*rest, **options)

        return record("method", name, (self, *args), kwargs, call, f"Tensor.{name}")

    def _batch_size_in(self, sizes: tuple[Any, ...]) -> tuple[Any, ...]:
        """Sizes with a leading size equal to the defined batch recorded as "the batch"."""
        packed = len(sizes) == 1 and isinstance(sizes[0], (tuple, list))
        dims = tuple(sizes[0]) if packed else sizes
        leading = dims[0] if dims else 0
        if self.node.shape and (
            leading is None or (isinstance(leading, int) and leading == self.node.meta.shape[0])
        ):
            dims = (BatchSize(self.node), *dims[1:])
        return (dims,) if packed else dims


def _record_factory(
    function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], what: str
) -> Any:
    """Record a factory of dynamic sizes (``torch.arange(T)``): on the device of
    the input its first size was read from unless ``device=`` is given; its
    meta outputs are made on the meta device."""
    if kwargs.get("device") is None:
        source = next((leaf.source for leaf in leaves_of((args, kwargs)) if isinstance(leaf, Size)), None)
        if source is not None:
            kwargs = {**kwargs, "device": AttributeOf(source, "device")}

    def on_meta(*values: Any, **options: Any) -> Any:
        return function(*values, **{**options, "device": "meta"})

    return record("function", function, args, kwargs, on_meta, what)


MAX_SIZE_TERMS = 1_000
"""Most reads and operations one size expression may hold (``(T + 2) // 2``
holds 4); a size's label in messages is at most :data:`_MAX_LABEL` characters."""

_MAX_LABEL = 120


def _size_op(function: Callable[..., Any], args: tuple[Any, ...], label: str) -> Size:
    """Record integer arithmetic on sizes: a size again, never an int (``T // 128``
    is 0 under both probes, yet not 0). Its cost is bounded: an expression holds
    at most :data:`MAX_SIZE_TERMS` terms (each step may double them: ``s + s``)."""
    sizes = [arg for arg in args if isinstance(arg, Size)]
    terms = 1 + sum(size.terms for size in sizes)
    if terms > MAX_SIZE_TERMS:
        raise TorchXError(
            f"a size computed from {sizes[0].source.describe()}'s shape would hold {terms:,} terms, more "
            f"than {MAX_SIZE_TERMS:,}; compute it in fewer steps (or read it off a tensor's shape)"
        )
    if len(label) > _MAX_LABEL:
        label = f"(a size of {terms} terms)"
    probes = max(len(size.node.metas) for size in sizes)
    metas = tuple(function(*_as_meta(args, probe)) for probe in range(probes))
    return Size(Node("function", function, _as_nodes(args), {}, metas), sizes[0].source, label, terms)


def _label(value: Any) -> str:
    return value.label if isinstance(value, Size) else repr(value)


def _size_arithmetic(
    function: Callable[[Any, Any], Any], symbol: str, *, reflected: bool = False
) -> Callable[[Size, Any], Any]:
    """The operator method ``size <op> other`` (``other <op> size`` when ``reflected``)
    for an int or size ``other``."""

    def method(self: Size, other: Any) -> Any:
        if isinstance(other, bool) or not isinstance(other, (int, Size)):
            return NotImplemented
        args = (other, self) if reflected else (self, other)
        return _size_op(function, args, f"({_label(args[0])} {symbol} {_label(args[1])})")

    return method


def _expression(value: Any) -> Hashable:
    """What a size (or an int) stands for, as a structure of where it was read
    and the arithmetic done on it: equal for two reads of one dim of one value."""
    node = value.node if isinstance(value, Size) else value
    if not isinstance(node, Node):
        return node  # type: ignore[no-any-return]
    if node.kind == "method":  # a read: x.size(dim)
        source, dim = node.args
        return ("size", id(source), dim)
    return (node.target, *map(_expression, node.args))


def _size_comparison(function: Callable[[Any, Any], bool], symbol: str) -> Callable[[Size, Any], bool]:
    """The comparison ``size <op> other`` for an int or size ``other``: answered
    where both sides are the same size (``T == T``), else refused, since a dynamic
    size has no value until the model runs and a graph records one path."""

    def method(self: Size, other: Any) -> Any:
        if isinstance(other, bool) or not isinstance(other, (int, Size)):
            return NotImplemented
        if _expression(self) == _expression(other):
            return function(0, 0)
        raise TorchXError(
            f"{self.label} {symbol} {_label(other)} compares a dynamic size, which has no value until the model "
            "runs; a graph records one path and one value for each argument, so it cannot take the answer "
            "the probe would give. Fix: decide it when you define the model (is_causal=True), or give that "
            "dim a static size in the Placeholder"
        )

    return method


class Size:
    """The size of a dynamic dim (``x.shape[1]`` of a ``(None, None)``
    placeholder), or integer arithmetic on such sizes (``T * 2``, ``T // heads``,
    ``T - 1``, ``-T``): a value of the graph, which the generated forward reads
    off its input at run time (``x.size(1)``).

    It works wherever torch takes a size: shapes (``x.view(b, t, h, d)``,
    ``x.new_zeros(t, t)``), slices (``w[:T]``, ``x[:, :T]``) and factories
    given the sizes as a tuple or one size (``torch.ones((T, T))``,
    ``torch.arange(T)``, on the input's device unless ``device=`` is given).
    It has no value at definition time: ``int(T)``, ``range(T)`` and a real
    tensor's ``t[:T]`` are refused. Messages show it by name: ``ids.shape[1]``.
    """

    __slots__ = ("__weakref__", "label", "node", "source", "terms")
    __torchx_dynamic_size__ = True  # a shape holding it reads as None there (torchx.plugin.is_dynamic_size)

    def __init__(self, node: Node, source: Node, label: str, terms: int = 1) -> None:
        self.node = node
        self.source = source
        """The node whose output's shape it was read from (the first one, for arithmetic)."""
        self.label = label
        self.terms = terms
        """How many reads and operations the expression holds (see :data:`MAX_SIZE_TERMS`)."""

    def __repr__(self) -> str:
        return self.label

    __add__ = _size_arithmetic(operator.add, "+")
    __radd__ = _size_arithmetic(operator.add, "+", reflected=True)
    __sub__ = _size_arithmetic(operator.sub, "-")
    __rsub__ = _size_arithmetic(operator.sub, "-", reflected=True)
    __mul__ = _size_arithmetic(operator.mul, "*")
    __rmul__ = _size_arithmetic(operator.mul, "*", reflected=True)
    __floordiv__ = _size_arithmetic(operator.floordiv, "//")
    __rfloordiv__ = _size_arithmetic(operator.floordiv, "//", reflected=True)
    __mod__ = _size_arithmetic(operator.mod, "%")
    __rmod__ = _size_arithmetic(operator.mod, "%", reflected=True)

    __eq__ = _size_comparison(operator.eq, "==")
    __ne__ = _size_comparison(operator.ne, "!=")
    __lt__ = _size_comparison(operator.lt, "<")
    __le__ = _size_comparison(operator.le, "<=")
    __gt__ = _size_comparison(operator.gt, ">")
    __ge__ = _size_comparison(operator.ge, ">=")
    __hash__ = object.__hash__

    def __neg__(self) -> Size:
        return _size_op(operator.neg, (self,), f"-{self.label}")

    def __pos__(self) -> Size:
        return self

    def _no_value(self) -> TorchXError:
        return TorchXError(
            f"{self.label} is a dynamic size: it has no value until the model runs. It works in shapes "
            f"(x.view(b, {self.label}, -1)), slices of placeholders (w[:{self.label}]), torch.arange("
            f"{self.label}), torch.ones(({self.label}, {self.label})) and integer arithmetic; a real "
            "tensor or Python (int(), range()) needs a value"
        )

    def __index__(self) -> int:
        raise self._no_value()

    def __float__(self) -> float:
        raise self._no_value()

    def __truediv__(self, other: Any) -> Any:
        raise self._no_value()  # a float, which a graph holds only as a tensor: (x.new_ones(()) * T) / 2

    __rtruediv__ = __pow__ = __rpow__ = __truediv__

    def __int__(self) -> int:
        raise self._no_value()

    def __bool__(self) -> bool:
        raise self._no_value()

    @classmethod
    def __torch_function__(
        cls, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        return Placeholder.__torch_function__(func, types, args, kwargs)


class SymbolicShape(tuple[int, ...]):
    """A placeholder's shape: an int per static dim, a :class:`Size` per
    dynamic one. It prints and compares as the shape with ``None`` for the
    dynamic dims: ``(None, 7200)``, a description of the shape (two ``None``
    dims compare equal); its sizes themselves compare only where the answer
    holds at every size (see :class:`Size`).

    Type checkers see every dim as an ``int``, as torch types a ``SymInt``:
    a :class:`Size` goes wherever a size does (``x.view(b, t, h, d)``,
    ``torch.arange(t)``, ``t // 2``), and a layer argument given one is refused
    when the graph is defined, with a message naming the dynamic dim."""

    __slots__ = ()

    def plain(self) -> tuple[int | None, ...]:
        """The shape with ``None`` for the dynamic dims."""
        return tuple(None if isinstance(dim, Size) else dim for dim in self)

    def __eq__(self, other: object) -> bool:
        return self.plain() == (other.plain() if isinstance(other, SymbolicShape) else other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self.plain())

    def __repr__(self) -> str:
        return repr(self.plain())


class Buffer(Placeholder):
    """A constant tensor of a graph, named and persistent as you choose: the
    Functional holds it as a buffer of that name (``model.rel_index``), moved
    by ``.to()``, written to specs as data, and in ``state_dict()`` only when
    ``persistent``.

    Any real tensor a graph is given (``x + torch.ones(7, 7).tril()``) is such
    a constant already, non-persistent and named ``constant``, ``constant_1``...;
    ``Buffer`` gives it a name and a choice.

    Args:
        tensor: the constant's value (not a parameter, nor computed from one).
        persistent: whether ``state_dict()`` holds it. Default: False.
        name: its attribute name in the Functional. Default: ``constant``, ``constant_1``...

    Examples::

        >>> index = L.Buffer(torch.arange(49).view(7, 7), name="rel_index")
        >>> index.shape
        (7, 7)
    """

    __slots__ = ()

    def __init__(self, tensor: torch.Tensor, *, persistent: bool = False, name: str | None = None) -> None:
        if not isinstance(tensor, torch.Tensor) or isinstance(tensor, nn.Parameter):
            raise TorchXError(
                f"Buffer takes a tensor that is not a parameter, got {type(tensor).__name__}; a graph reads "
                "a layer's parameter as it is (F.linear(h, wte.weight))"
            )
        if name is not None and (not isinstance(name, str) or not name.isidentifier()):
            raise TorchXError(f"Buffer name must be an identifier, got {name!r}")
        node = tensor_placeholder(tensor.detach(), "Buffer").node
        node.name, node.kwargs = name, {"persistent": bool(persistent)}
        self.node = node
