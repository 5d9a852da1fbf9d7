"""When each value of a program dies, and where a step may overwrite its input.

The generated forward releases every intermediate right after its last use
(``relu = self.relu(conv2d);  del conv2d``), so a forward holds what a
hand-written one holds, not every activation.

A layer built with ``inplace=True`` (``L.ReLU(inplace=True)``) overwrites its
input. In a graph that is only right when nothing reads that memory again: not
the input itself, nor any value sharing its memory (a view of it, a value an
operation returned unchanged), nor anything the caller passed in, nor a
backward (of the step that made it, or of another step that read it). Where
that holds (a ReLU after a convolution and a norm), the step runs in place, as
in a hand-written forward; elsewhere it runs on a copy, so the values and the
gradients are the ones the graph means.

A sum or difference of two tensors (``out + identity``) is computed into
one of its operands, as a hand-written ``out += identity`` is, where that
changes nothing anyone can see: the operand is read by this step alone,
shares its memory with nothing, has the result's shape, and was made by an
operation whose backward never reads its own output (a convolution, a linear
layer, a norm, a sum or a product). A fresh result would cost a large
allocation; this one costs none, and the values are the same.

That holds only where the result's dtype is the operand's, and a dtype
recorded at definition is not the one at run time (autocast makes a linear
layer's output bfloat16, an input may come in float64). So the operands must
have the result's dtype when recorded, and the code checks it again at run
time, at the cost of a dtype comparison:
``add = bn3.add_(identity) if bn3.dtype is identity.dtype else bn3 + identity``
(dtypes are singletons, so ``is`` is equality; under ``torch.fx`` tracing,
where a dtype is a proxy, it is false and the sum is traced as written).
A sum with a number runs as written: an integer tensor plus 0.5 is floating.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import torch

from torchx.functional._placeholder import _ATOMS
from torchx.functional._program import AttributeVar, BatchOf, Program, Step, Var
from torchx.functional._tree import leaves_of

__all__ = ["IN_PLACE_METHODS", "Liveness", "liveness"]

IN_PLACE_METHODS = {operator.add: "add_", operator.sub: "sub_"}
"""Operators a step may compute into an operand, and the tensor method that
does: those whose backward reads neither operand (a product's does)."""

_COMMUTATIVE = frozenset((operator.add,))


@dataclass(frozen=True)
class Liveness:
    """For each step (by index): the variables to release after it, whether
    its in-place layer must run on a copy of its input, and which operand (by
    position) its arithmetic is computed into, if any."""

    released: list[list[str]]
    copied: list[bool]
    into: list[int | None]


def _read(*values: Any) -> list[str]:
    """The variables step arguments read (a batch size reads its variable)."""
    return _reads(values)[0]


def _reads(values: tuple[Any, ...]) -> tuple[list[str], list[str]]:
    """The variables ``values`` (step arguments) read, and those whose dtype or
    device alone they read (``h.to(x.dtype)``): that keeps the variable, not
    its memory, so it may be overwritten before (``h += x``: ``add =
    linear.add_(x)``, then ``add.to(linear.dtype)``)."""
    names: list[str] = []
    attributes: list[str] = []
    for value in values:
        if not value:
            continue
        flat = _flat_reads(value) if type(value) is tuple else None
        for leaf in leaves_of(value) if flat is None else flat:
            kind = type(leaf)
            if kind is Var or kind is BatchOf:
                names.append(leaf.name)
            elif kind is AttributeVar:
                attributes.append(leaf.name)
    return names, attributes


def _flat_reads(value: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The leaves of a tuple of variables, sizes read off them and numbers (most
    steps' arguments), without a tree walk; None for anything else."""
    for leaf in value:
        kind = type(leaf)
        if kind is not Var and kind is not BatchOf and kind is not AttributeVar and kind not in _ATOMS:
            return None
    return value


class _Memory:
    """Which values share memory, and how long each piece of memory is read."""

    def __init__(self, program: Program) -> None:
        steps = program.steps
        self.outputs = {leaf.name for leaf in leaves_of(program.outputs) if isinstance(leaf, Var)}
        self.produced = {step.var: step for step in steps}
        self.dtypes: dict[str, torch.dtype | None] = {
            program.variables[item.name]: item.dtype for item in program.input_list()
        }
        """Each variable's dtype as recorded (None: not a tensor)."""
        self.dtypes.update((step.var, step.dtype) for step in steps)
        self.last_use: dict[str, int] = {}
        """The last step reading each value's memory."""
        self.last_read: dict[str, int] = {}
        """The last step reading each variable, its memory or its dtype or device: when it is released."""
        self.uses: dict[str, int] = dict.fromkeys(self.outputs, 1)
        """How many times each value is read (an output once more, by the caller)."""
        # The values whose memory a variable may share (its "roots"): itself, when
        # its step returns fresh memory; else whatever its arguments share.
        self.roots: dict[str, frozenset[str]] = {}
        last_use, last_read, uses, roots = self.last_use, self.last_read, self.uses, self.roots
        for index, step in enumerate(steps):
            arguments, attributes = _reads((step.args, step.kwargs) if step.kwargs else (step.args,))
            for name in arguments:
                last_use[name] = last_read[name] = index
                uses[name] = uses.get(name, 0) + 1
            for name in attributes:
                last_read[name] = index
            if step.fresh:
                roots[step.var] = frozenset((step.var,))
            else:
                roots[step.var] = frozenset().union(
                    *[roots.get(name, frozenset((name,))) for name in arguments]
                )
        self.readers: dict[str, list[str]] = {}
        for name, shared in self.roots.items():
            for root in shared:
                self.readers.setdefault(root, []).append(name)

    def overwritable(self, name: str, index: int, result: str) -> bool:
        """Whether step ``index`` may overwrite the memory of ``name``: nothing
        but its own ``result`` reads that memory afterwards, and it is not the
        caller's."""
        for root in self.roots.get(name, frozenset((name,))):
            if root not in self.produced:
                return False
            for reader in self.readers[root]:
                if reader != result and (reader in self.outputs or self.last_use.get(reader, -1) > index):
                    return False
        return True

    def reusable(self, name: str, index: int, result: str) -> bool:
        """Whether step ``index`` may write its ``result`` into the memory of
        ``name``, for values and for gradients alike: ``name`` is new memory
        that only this step reads (no other step kept it for its backward),
        made by a step whose backward never reads it, and nothing else shares it."""
        producer = self.produced.get(name)
        return (
            producer is not None
            and producer.fresh
            and not producer.output_saved
            and self.uses.get(name) == 1
            and self.overwritable(name, index, result)
        )

    def into(self, step: Step, index: int) -> int | None:
        """The operand (by position) arithmetic ``step`` may be computed into,
        where the generated code finds both operands of one dtype at run time."""
        if (
            step.kind != "function"
            or step.dtype is None  # not a tensor: arithmetic on sizes
            or step.target not in IN_PLACE_METHODS
            or step.kwargs
            or len(step.args) != 2
            or not all(type(arg) is Var and self.dtypes.get(arg.name) == step.dtype for arg in step.args)
        ):
            return None
        positions = (0, 1) if step.target in _COMMUTATIVE else (0,)
        for position in positions:
            name = step.args[position].name
            if self.reusable(name, index, step.var) and self.produced[name].shape == step.shape:
                return position
        return None


def liveness(program: Program) -> Liveness:
    """Release points and in-place decisions for ``program``'s steps."""
    memory = _Memory(program)
    released: list[list[str]] = [[] for _ in program.steps]
    for name, index in memory.last_read.items():
        if name in memory.produced and name not in memory.outputs:
            released[index].append(name)
    copied = []
    for index, step in enumerate(program.steps):
        read = _read(step.args[:1]) if step.in_place else []
        copied.append(bool(read) and not memory.reusable(read[0], index, step.var))
    into = [memory.into(step, index) for index, step in enumerate(program.steps)]
    return Liveness(released, copied, into)
