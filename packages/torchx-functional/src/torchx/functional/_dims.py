"""Dynamic dims with a name and bounds: ``L.Dim("T", max=64)`` in a placeholder's shape.

A ``None`` dim is dynamic and unbounded; a :class:`Dim` is dynamic too, and
says what the model needs of it: a position table of 64 rows takes sequences
of at most 64 (``table[:T] + x``). The probes stay inside the bounds, the
model refuses an input outside them, specs and summaries show them, and
:meth:`~torchx.functional.Functional.dynamic_shapes` gives them to
``torch.export`` (inputs' dims of one name are one dim there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torchx.core import TorchXError
from torchx.plugin import Probes

__all__ = ["Dim", "export_shapes", "probe_sizes"]

_PROBES = Probes(True).sizes
"""The sizes an unbounded dynamic dim takes in the two probes."""


@dataclass(frozen=True)
class Dim:
    """A dynamic dim of a placeholder, named, with bounds, as ``torch.export.Dim``.

    Args:
        name: what messages, summaries, specs and ``torch.export`` call it; the
            dims of one name in a model's inputs are one size.
        min: the smallest size it takes. Default: 1.
        max: the largest size it takes. Default: no bound.

    Examples::

        >>> ids = L.Placeholder((None, L.Dim("T", max=64)), dtype=torch.long)
        >>> ids.shape
        (None, None)
    """

    name: str
    min: int = 1
    max: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise TorchXError(f"Dim name must be an identifier, got {self.name!r}")
        for bound in (self.min, self.max):
            if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int)):
                raise TorchXError(f"Dim {self.name!r}: bounds are ints, got {bound!r}")
        if self.min < 1:
            raise TorchXError(f"Dim {self.name!r}: min must be at least 1 (a dynamic dim is never empty)")
        if self.max is not None and self.max <= max(self.min, 1):
            raise TorchXError(
                f"Dim {self.name!r}: max={self.max} leaves it one size at most; give that size as an int"
            )

    def __repr__(self) -> str:
        bounds = "".join(
            f", {key}={value}"
            for key, value in (("min", self.min), ("max", self.max))
            if value not in (None, 1)
        )
        return f"Dim({self.name!r}{bounds})"

    def shown(self) -> str:
        """How summaries and messages show it: ``T``, ``T<=64``, ``8<=T<=64``."""
        low = f"{self.min}<=" if self.min > 1 else ""
        high = f"<={self.max}" if self.max is not None else ""
        return f"{low}{self.name}{high}"

    def admits(self, size: int) -> bool:
        """Whether a run-time size lies within its bounds."""
        return self.min <= size and (self.max is None or size <= self.max)

    def to_spec(self) -> dict[str, Any]:
        """Its spec form: ``{"dim": "T", "max": 64}``."""
        spec: dict[str, Any] = {"dim": self.name}
        if self.min > 1:
            spec["min"] = self.min
        if self.max is not None:
            spec["max"] = self.max
        return spec


def probe_sizes(dim: Dim | None) -> tuple[int, ...]:
    """The sizes a dynamic dim takes in the two probes: the usual ones (61 and
    127) where its bounds admit them, else two inside its bounds as far apart
    as they allow (so strided layers still give two lengths), at least 2
    (a probe of 1 would broadcast)."""
    if dim is None or (dim.admits(_PROBES[0]) and dim.admits(_PROBES[1])):
        return _PROBES
    high = dim.max if dim.max is not None else max(_PROBES[1], dim.min + 66)
    low = max(dim.min, 2, min(_PROBES[0], high // 2))
    return (low, high) if low < high else (high - 1, high)


def export_shapes(structures: dict[str, Any]) -> dict[str, Any]:
    """``torch.export``'s ``dynamic_shapes`` for a forward whose parameters take
    ``structures`` (an :class:`~torchx.functional.Input`, or lists, tuples and
    dicts of them), by parameter name: for each input, its dynamic dims by
    index. A named dim is a ``torch.export.Dim`` of its name and bounds, one
    for every input naming it; an unnamed dim 0 is the batch, one for every
    input; any other unnamed dim is its own (``ids_1``)."""
    from torch.export import Dim as ExportDim  # torch.export is imported where it is used

    made: dict[str, Any] = {}

    def export_dim(name: str, low: int, high: int | None) -> Any:
        if name not in made:
            made[name] = ExportDim(name, min=low, max=high)
        return made[name]

    def shapes(structure: Any) -> Any:
        if isinstance(structure, dict):
            return {key: shapes(item) for key, item in structure.items()}
        if isinstance(structure, (list, tuple)):
            return type(structure)(shapes(item) for item in structure)
        found = {}
        for index, (size, dim) in enumerate(structure.each_dim()):
            if dim is not None:
                found[index] = export_dim(dim.name, dim.min, dim.max)
            elif size is None:
                own = "batch" if index == 0 else _identifier(f"{structure.name}_{index}")
                found[index] = export_dim(own, 1, None)
        return found or None

    return {key: shapes(structure) for key, structure in structures.items()}


def _identifier(name: str) -> str:
    """``name`` as an identifier (what ``torch.export.Dim`` names must be)."""
    cleaned = "".join(char if char.isalnum() or char == "_" else "_" for char in name)
    return cleaned if cleaned.isidentifier() else f"dim_{cleaned}"
