"""When each value of a program dies, and where a step may overwrite its input.

The generated forward releases every intermediate right after its last use
(``relu = self.relu(conv2d);  conv2d = None``), as ``torch.fx``'s code does,
so a forward holds what a hand-written one holds, not every activation.

A layer built with ``inplace=True`` (``L.ReLU(inplace=True)``) overwrites its
input. In a graph that is only right when nothing reads that memory again: not
the input itself, nor any value sharing its memory (a view of it, a value an
operation returned unchanged), nor anything the caller passed in. Where that
holds, the step runs in place, as in a hand-written forward; elsewhere it runs
on a copy, so the result is the one the graph means.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from torch.utils._pytree import tree_leaves

from torchx.functional._program import BatchOf, Program, Var

__all__ = ["Liveness", "liveness"]


@dataclass(frozen=True)
class Liveness:
    """For each step (by index): the variables to release after it, and whether
    its in-place layer must run on a copy of its input."""

    released: list[list[str]]
    copied: list[bool]


def _read(value: Any) -> Iterator[str]:
    """The variables a step argument reads (a batch size reads its variable)."""
    for leaf in tree_leaves(value):
        if isinstance(leaf, (Var, BatchOf)):
            yield leaf.name


def liveness(program: Program) -> Liveness:
    """Release points and in-place safety for ``program``'s steps."""
    steps = program.steps
    outputs = {leaf.name for leaf in tree_leaves(program.outputs) if isinstance(leaf, Var)}
    produced = {step.var for step in steps}
    last_use: dict[str, int] = {}
    for index, step in enumerate(steps):
        for name in _read((step.args, step.kwargs)):
            last_use[name] = index

    # The values whose memory a variable may share (its "roots"): itself, when
    # its step returns fresh memory; else whatever its arguments share.
    roots: dict[str, frozenset[str]] = {}
    for step in steps:
        if step.fresh:
            roots[step.var] = frozenset((step.var,))
        else:
            tensor_args = [name for name in _read(step.args) if name in roots or name not in produced]
            roots[step.var] = frozenset().union(*(roots.get(name, {name}) for name in tensor_args))
    # How long each root's memory is read, by each variable sharing it.
    readers: dict[str, list[str]] = {}
    for name, shared in roots.items():
        for root in shared:
            readers.setdefault(root, []).append(name)

    def read_after(name: str, index: int, exempt: str) -> bool:
        return name != exempt and (name in outputs or last_use.get(name, -1) > index)

    released: list[list[str]] = [[] for _ in steps]
    for name, index in last_use.items():
        if name in produced and name not in outputs:
            released[index].append(name)
    copied = []
    for index, step in enumerate(steps):
        first = next(_read(step.args[:1]), None) if step.in_place else None
        if first is None:
            copied.append(False)
            continue
        # The step's own output shares the memory it overwrites: that is the point.
        copied.append(
            any(
                root not in produced or any(read_after(name, index, step.var) for name in readers[root])
                for root in roots.get(first, frozenset((first,)))
            )
        )
    return Liveness(released, copied)
