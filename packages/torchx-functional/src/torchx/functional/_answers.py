"""What a Functional keeps of its meta outputs, and how long it keeps them.

A Functional asked for its meta output (called on placeholders, or on meta
tensors in a shape query) works it out from its steps once per input signature
and keeps the answer (see ``Functional.meta_output``). An answer stands while
:func:`state_below` is unchanged: what a meta run of the Functional reads, from
the modules below it, anywhere below it (inside an ``L.Sequential`` too).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy

from torchx.functional._placeholder import OwnMetaOutput
from torchx.functional._tree import leaves_of, map_leaves

__all__ = ["Answer", "KnownOutputs", "MetaAnswers", "state_below"]

KNOWN_LIMIT = 64
"""Most input signatures a Functional keeps answers for (then it forgets them all)."""

_ATOMS = frozenset((bool, int, float, complex, str, type(None), torch.dtype, torch.device))
_FUNCTIONS = frozenset((types.FunctionType, types.BuiltinFunctionType))
_SEQUENCES = frozenset((tuple, list, torch.Size))


def state_below(module: nn.Module) -> tuple[Hashable, ...]:
    """What a meta run of ``module`` reads, as a value to compare: for each
    module below (itself included, a shared one once) its class, its children
    by name (as positions in this walk: a layer replaced, removed or inserted
    anywhere changes it), its forward hooks, the shapes and dtypes of its
    parameters and buffers, and its settings: the public attributes that are
    numbers, strings, dtypes, functions, or sequences of atoms (``training``,
    ``stride``, ``start_dim``; attributes holding other objects are not
    compared). A walk over the modules below, a few µs each."""
    modules = list(module.modules())
    position = {id(sub): index for index, sub in enumerate(modules)}
    return tuple(
        (
            type(sub),
            tuple(
                (name, None if child is None else position[id(child)]) for name, child in sub._modules.items()
            ),
            tuple(sub._forward_pre_hooks),
            tuple(sub._forward_hooks),
            tuple((name, _tensor_state(tensor)) for name, tensor in sub._parameters.items()),
            tuple((name, _tensor_state(tensor)) for name, tensor in sub._buffers.items()),
            _settings(sub),
        )
        for sub in modules
    )


def _tensor_state(tensor: torch.Tensor | None) -> Hashable:
    if tensor is None:
        return None
    return "pending" if is_lazy(tensor) else (tensor.shape, tensor.dtype)


def _settings(module: nn.Module) -> tuple[tuple[str, Any], ...]:
    """``module``'s public attributes that are settings (see :func:`state_below`)."""
    found = []
    for name, value in module.__dict__.items():
        if name[0] == "_":
            continue
        kind = type(value)
        if kind in _ATOMS or kind in _FUNCTIONS:
            found.append((name, value))
        elif kind in _SEQUENCES and all(type(item) in _ATOMS for item in value):
            found.append((name, tuple(value)))
    return tuple(found)


@dataclass(frozen=True)
class _Passed:
    """An output that is the call's input: its position among the inputs' leaves."""

    index: int


@dataclass(frozen=True)
class Answer:
    """A meta output kept for one input signature, its outputs that are inputs
    marked (:class:`_Passed`); and whether it is fresh memory."""

    output: Any
    fresh: bool

    @classmethod
    def of(cls, output: Any, args: tuple[Any, ...], fresh: bool) -> Answer:
        given = {id(leaf): index for index, leaf in enumerate(leaves_of(args))}
        return cls(
            map_leaves(
                lambda leaf: (
                    _Passed(given[id(leaf)]) if isinstance(leaf, torch.Tensor) and id(leaf) in given else leaf
                ),
                output,
            ),
            fresh,
        )

    def output_for(self, args: tuple[Any, ...]) -> Any:
        """The output of a call on ``args``: each output that was an input is
        that input of this call, each other tensor a new meta tensor like the
        kept one (a view where it was one), so what callers see shares memory
        as a run would, and what they change (``unsqueeze_``) is their own."""
        leaves = leaves_of(args)
        made: dict[int, torch.Tensor] = {}  # an output appearing twice is one tensor

        def make(leaf: Any) -> Any:
            if isinstance(leaf, _Passed):
                return leaves[leaf.index]
            if not isinstance(leaf, torch.Tensor):
                return leaf
            tensor = made.get(id(leaf))
            if tensor is None:
                tensor = torch.empty_strided(leaf.shape, leaf.stride(), dtype=leaf.dtype, device="meta")
                made[id(leaf)] = tensor = tensor.view(leaf.shape) if leaf._is_view() else tensor
            return tensor

        return map_leaves(make, self.output)


@dataclass
class KnownOutputs:
    """A Functional's answers while ``state`` (its :func:`state_below`) stands,
    by input signature, and whether a layer in it may return its input."""

    state: tuple[Hashable, ...]
    answers: dict[Hashable, Answer] = field(default_factory=dict)
    may_return_input: bool | None = None

    def keep(self, key: Hashable, answer: Answer) -> None:
        if len(self.answers) >= KNOWN_LIMIT:
            self.answers.clear()
        self.answers[key] = answer


class MetaAnswers:
    """A Functional's forward that answers calls on meta tensors from what
    ``source`` worked out (its ``meta_output``: the same graph, the Functional
    itself or the original of a meta copy) and runs ``forward`` for any other
    call, so it is right for every caller."""

    __slots__ = ("forward", "source")

    def __init__(self, source: OwnMetaOutput, forward: Callable[..., Any]) -> None:
        self.source = source
        self.forward = forward

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves = leaves_of(args)
        if leaves and not kwargs and all(isinstance(leaf, torch.Tensor) and leaf.is_meta for leaf in leaves):
            return self.source.meta_output(args)[0]
        return self.forward(*args, **kwargs)
