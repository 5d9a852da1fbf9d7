"""Slices of a dynamic dim whose length the two probes cannot see vary.

A dynamic dim takes two large sizes in the probes (61 and 127), so a slice by
static bounds (``x[:, :10]``, ``x[:, -10:]``, ``x.split(10, 1)``) is 10 long
under both, and would be recorded as a static 10; yet at run time it has
``min(10, T)`` rows, as torch.export says. Such an output dim is recorded
dynamic here: under each probe it takes the size of the dim it was sliced
from (what a slice ``:10`` gives when ``T <= 10``), so the shape shows
``None`` and the layers after it see a dynamic dim. A dynamic dim is taken to
be at least 1 long, so a slice that has one length at every such size
(``x[:, :1]``, ``x[:, -1:]``) stays static, as does any slice of a static dim.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Iterator
from typing import Any

import torch

__all__ = ["varies", "widen_slices"]

_SPLITS = frozenset(("split", "chunk", "tensor_split"))
"""The functions and tensor methods that cut a dim into pieces."""

Piece = slice | None
"""Where one output comes from along the sliced dim: static bounds, or None
where its length depends on the dim's size whatever it is (``chunk``)."""


def varies(piece: slice, length: int) -> bool:
    """Whether a dim sliced by ``piece`` (int or None bounds) is other than
    ``length`` long at some size of at least 1.

    Between the sizes where a bound starts or stops being clipped (its
    absolute value, and one more), the start and stop indices each stay put or
    move with the size, so the length changes monotonically; so it is the same
    everywhere iff it is at those sizes, at 1, and one step apart past them all.
    """
    bounds = [abs(bound) for bound in (piece.start, piece.stop) if bound is not None]
    far = max(bounds, default=0) + 1
    sizes = {1, far, far + (piece.step or 1), *bounds, *(bound + 1 for bound in bounds)}
    return any(len(range(*piece.indices(size))) != length for size in sizes if size >= 1)


def _static(piece: slice) -> bool:
    """Whether ``piece``'s bounds are ints or None (not dynamic sizes, which the probes follow)."""
    return all(bound is None or type(bound) is int for bound in (piece.start, piece.stop, piece.step))


def _index_pieces(index: Any, ndim: int) -> Iterator[tuple[int | None, int, int, Piece]]:
    """``(key, input dim, output dim, piece)`` for each slice of static bounds in
    a basic index (``x[:, :10]``, ``x[..., None, 2:]``); none for advanced
    indexing (tensors, lists, bools)."""
    items = index if type(index) is tuple else (index,)
    if not all(item is None or item is Ellipsis or type(item) is slice or _is_int(item) for item in items):
        return
    consumed = sum(1 for item in items if item is not None and item is not Ellipsis)
    source = output = 0
    for item in items:
        if item is Ellipsis:
            source, output = source + ndim - consumed, output + ndim - consumed
        elif item is None:
            output += 1
        elif type(item) is slice:
            if _static(item):
                yield None, source, output, item
            source, output = source + 1, output + 1
        else:
            source += 1


def _is_int(item: Any) -> bool:
    """An int index, or a dynamic size standing for one (``x[:, T - 1]``)."""
    return type(item) is int or getattr(type(item), "__torchx_dynamic_size__", False)


def _split_pieces(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any], ndim: int
) -> Iterator[tuple[int | None, int, int, Piece]]:
    """``(key, dim, dim, piece)`` for each piece ``split``, ``chunk`` or
    ``tensor_split`` cuts (``x.split(10, 1)``: ``0:10``, ``10:20``...)."""
    amount, dim = _cut_arguments(args, kwargs)
    if type(dim) is not int or not -ndim <= dim < ndim:
        return
    pieces: Iterable[Piece]
    if name == "split" and type(amount) is int and amount > 0:
        pieces = (slice(start, start + amount) for start in itertools.count(0, amount))
    elif (
        name == "tensor_split" and isinstance(amount, (tuple, list)) and all(type(at) is int for at in amount)
    ):
        cuts = [None, *amount, None]
        pieces = [slice(start, stop) for start, stop in itertools.pairwise(cuts)]
    elif name in ("chunk", "tensor_split") and type(amount) is int:
        pieces = itertools.repeat(None)  # a share of the size: it varies with it
    else:
        return
    for key, piece in enumerate(pieces):
        yield key, dim % ndim, dim % ndim, piece


def _cut_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """The amount (a size, sizes, a count or indices) and the dim of a call of
    ``split``, ``chunk`` or ``tensor_split``, given in place or by keyword."""
    amount = (
        args[1] if len(args) > 1 else next((value for key, value in kwargs.items() if key != "dim"), None)
    )
    return amount, args[2] if len(args) > 2 else kwargs.get("dim", 0)


def _part(output: Any, key: int | None) -> torch.Tensor | None:
    """The tensor ``key`` names in ``output`` (the output itself for None), if it has one."""
    if key is None:
        return output if isinstance(output, torch.Tensor) else None
    return output[key] if isinstance(output, (tuple, list)) and key < len(output) else None


def _replaced(output: Any, key: int | None, meta: torch.Tensor) -> Any:
    """``output`` with the tensor ``key`` names replaced by ``meta``."""
    if key is None:
        return meta
    return type(output)(meta if at == key else part for at, part in enumerate(output))


def widen_slices(
    kind: str,
    target: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    sources: tuple[torch.Tensor, ...],
    outputs: tuple[Any, ...],
) -> tuple[Any, ...]:
    """``outputs`` (one per probe) of ``target(*args, **kwargs)``, which cut the
    placeholder ``args[0]`` (``sources`` under each probe), with each output
    dim that is sliced by static bounds from a dynamic dim and varies with it
    sized as that dim in each probe (see the module's docstring)."""
    ndim = sources[0].dim()
    name = target if kind == "method" else getattr(target, "__name__", None)
    if target is operator.getitem and len(args) == 2:
        sites = _index_pieces(args[1], ndim)
    elif name in _SPLITS:
        sites = _split_pieces(name, args, kwargs, ndim)
    else:
        return outputs
    widened = list(outputs)
    for key, source_dim, dim, piece in sites:
        found = [_part(output, key) for output in widened]
        if any(part is None for part in found):
            break  # past the pieces every probe has
        parts: list[torch.Tensor] = [part for part in found if part is not None]
        sizes = [source.shape[source_dim] for source in sources]
        lengths = {part.shape[dim] for part in parts}
        if (
            len(set(sizes)) == 1
            or len(lengths) > 1
            or (piece is not None and not varies(piece, lengths.pop()))
        ):
            continue
        for probe, (part, size) in enumerate(zip(parts, sizes, strict=True)):
            shape = (*part.shape[:dim], size, *part.shape[dim + 1 :])
            meta = torch.empty_strided(shape, part.stride(), dtype=part.dtype, device="meta")
            widened[probe] = _replaced(widened[probe], key, meta)
    return tuple(widened)


_COUNTED_CUTS = frozenset(("unbind", "split", "unsafe_split", "chunk", "unsafe_chunk"))
"""The functions and tensor methods whose number of pieces may follow the
length of the dim they cut: one per step (``unbind``), one per ``k`` steps
(``split(k)``), or up to ``n`` (``chunk(n)``: 2 pieces of a 4-long dim for ``n=3``)."""


def counted_cut(kind: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The dim ``target(*args, **kwargs)`` cuts into a number of pieces that
    may vary with its length (``x.unbind(1)``, ``x.split(10, 1)``,
    ``x.chunk(3, 1)``), if it is such a cut; None for any other call, and for
    cuts whose count is fixed (``split([3, 4], 1)``, ``tensor_split(3, 1)``,
    ``chunk(1)``)."""
    name = target if kind == "method" else getattr(target, "__name__", None)
    if name not in _COUNTED_CUTS:
        return None
    if name == "unbind":
        dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    else:
        amount, dim = _cut_arguments(args, kwargs)
        if type(amount) is not int or (name.endswith("chunk") and amount == 1):
            return None  # sizes given as a list (a fixed count), or one chunk
    return dim if type(dim) is int else None
