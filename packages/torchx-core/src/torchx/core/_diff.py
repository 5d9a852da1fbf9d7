"""What differs between two architectures: their specs, and their summaries.

``diff_specs(a, b)`` compares two spec documents (plain data, as read from
JSON or YAML) and lists every difference by its place in the document::

    $.layers[3].args.out_channels: 30 → 40
    $.layers[4]: added {"type": "Dropout", "args": {"p": 0.1}}

Both documents are first read into models and written back
(``to_spec(from_spec(document))``), so what does not change the model does
not count: type names are canonical, arguments equal to their defaults are
dropped, and Sequential's object form of named layers becomes its list form.
Paths are places in these canonical documents (the ones ``torchx convert``
writes), whose lists of layers are the files' own.

Lists of layer entries are aligned rather than compared index by index, as
``diff`` aligns lines (``difflib.SequenceMatcher``, after the common start and
end): equal entries match first, then, among the rest, entries of the same
``(type, name)``, which are compared key by key; what is left pairs up in
order. So inserting a layer reports one added layer, not every layer after it
as changed. Paired entries whose type differs are one change of the whole
entry. Lists of plain values (a ``kernel_size``, a shape) are one value.

``diff_summaries(a, b)`` does the same for two :class:`~torchx.core.Summary`
objects: rows (modules) are aligned on ``(depth, type, name)`` and paired rows
whose type, parameter count or output shape differ are reported.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, Literal, TypeVar

from torchx.core._registry import LayerRegistry
from torchx.core._specs import from_spec, to_spec
from torchx.core._summary import Summary, SummaryRow

__all__ = ["Change", "LayerDifference", "SpecDifference", "canonical_spec", "diff_specs", "diff_summaries"]

Change = Literal["changed", "added", "removed"]
"""How one place differs: a value changed, or an entry is only in the second
document (added) or only in the first (removed)."""

_T = TypeVar("_T")
_SPEC_INDEX = re.compile(r"(?<=\[)(\d+)(?=\])")
"""A list index in a spec path: the ``3`` of ``$.layers[3]``."""
_ROW_INDEX = re.compile(r"(?<![^.])(\d+)(?![^.])")
"""A numbered child in a module path: the ``3`` of ``0.layers.3``."""


def _merged_path(a: str | None, b: str | None, index: re.Pattern[str]) -> str:
    """One path for a place of both sides: ``a``, or ``a`` with the indices that
    differ shown as ``3→4``, or ``a → b`` where the paths differ otherwise."""
    if a is None or b is None or a == b:
        return a or b or ""
    parts_a, parts_b = index.split(a), index.split(b)
    if len(parts_a) != len(parts_b) or parts_a[::2] != parts_b[::2]:
        return f"{a} → {b}"
    return "".join(
        part if position % 2 == 0 or part == other else f"{part}→{other}"
        for position, (part, other) in enumerate(zip(parts_a, parts_b, strict=True))
    )


@dataclass(frozen=True)
class SpecDifference:
    """One difference between two spec documents."""

    change: Change
    a_path: str | None
    """Where in the first document (None: added, only in the second)."""
    b_path: str | None
    """Where in the second document (None: removed, only in the first)."""
    a: Any = None
    """The value in the first document (None where added)."""
    b: Any = None
    """The value in the second document (None where removed)."""

    @property
    def path(self) -> str:
        """Where, for both sides: ``$.layers[3].args.out_channels``, or
        ``$.layers[3→4].args.out_channels`` where an insertion moved the entry."""
        return _merged_path(self.a_path, self.b_path, _SPEC_INDEX)

    def __str__(self) -> str:
        if self.change == "changed":
            return f"{self.path}: {_shown(self.a)} → {_shown(self.b)}"
        return f"{self.path}: {self.change} {_shown(self.b if self.change == 'added' else self.a)}"


@dataclass(frozen=True)
class LayerDifference:
    """One module whose type, parameter count or output shape differs between
    two summaries (``changed``), or that only one of them has."""

    change: Change
    a: SummaryRow | None
    """The module's row in the first summary (None: added, only in the second)."""
    b: SummaryRow | None
    """The module's row in the second summary (None: removed, only in the first)."""

    @property
    def path(self) -> str:
        """The module's path for both sides: ``0.layers.3``, or ``0.layers.3→4`` where it moved."""
        return _merged_path(
            None if self.a is None else self.a.path, None if self.b is None else self.b.path, _ROW_INDEX
        )


def canonical_spec(document: Mapping[str, Any], *, registry: LayerRegistry | None = None) -> dict[str, Any]:
    """``document`` as TorchX writes it back: read into a model and written out
    again (canonical type names, default arguments dropped). A document that is
    not a valid spec raises :class:`~torchx.core.SpecError`."""
    return to_spec(from_spec(document, registry=registry), registry=registry)


def diff_specs(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    *,
    normalize: bool = True,
    registry: LayerRegistry | None = None,
) -> list[SpecDifference]:
    """Every difference between spec documents ``a`` and ``b``, in document order.

    With ``normalize`` (the default), both are compared as
    :func:`canonical_spec` writes them, so only differences of the models count;
    without, the documents are compared as they are. Empty: the same model.
    """
    if normalize:
        a, b = canonical_spec(a, registry=registry), canonical_spec(b, registry=registry)
    return list(_differences(a, b, "$", "$"))


def _differences(a: Any, b: Any, a_path: str, b_path: str) -> Iterator[SpecDifference]:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if _is_layer(a) and _is_layer(b) and a["type"] != b["type"]:
            yield SpecDifference("changed", a_path, b_path, a, b)  # another layer: its args do not compare
            return
        for key, value in a.items():
            if key in b:
                yield from _differences(value, b[key], _key_path(a_path, key), _key_path(b_path, key))
            else:
                yield SpecDifference("removed", _key_path(a_path, key), None, value, None)
        for key, value in b.items():
            if key not in a:
                yield SpecDifference("added", None, _key_path(b_path, key), None, value)
    elif _is_list(a) and _is_list(b) and not (_is_plain(a) and _is_plain(b)):
        for i, j in _aligned(a, b, (_value_key, _entry_key)):
            if j is None:
                yield SpecDifference("removed", f"{a_path}[{i}]", None, a[i], None)
            elif i is None:
                yield SpecDifference("added", None, f"{b_path}[{j}]", None, b[j])
            else:
                yield from _differences(a[i], b[j], f"{a_path}[{i}]", f"{b_path}[{j}]")
    elif not _same(a, b):
        yield SpecDifference("changed", a_path, b_path, a, b)


def _aligned(
    a: Sequence[_T], b: Sequence[_T], keys: Sequence[Callable[[_T], Hashable]]
) -> Iterator[tuple[int | None, int | None]]:
    """Pairs of indices of ``a`` and ``b`` that correspond, in order; ``(i, None)``:
    only in ``a``, ``(None, j)``: only in ``b``. Items match on ``keys[0]`` (as
    diff matches lines); where they do not, their runs are aligned again on the
    next key, and what the last key leaves unmatched pairs up in order."""
    key_a, key_b = [keys[0](item) for item in a], [keys[0](item) for item in b]
    # The common start and end first: SequenceMatcher would match a model of
    # repeated blocks against a copy of itself shifted by a block, where the
    # shifted match is as long as the true one.
    start, end, shorter = 0, 0, min(len(a), len(b))
    while start < shorter and key_a[start] == key_b[start]:
        start += 1
    while end < shorter - start and key_a[-1 - end] == key_b[-1 - end]:
        end += 1
    middle = SequenceMatcher(None, key_a[start : len(a) - end], key_b[start : len(b) - end], autojunk=False)
    runs = [("equal", 0, start, 0, start)]
    runs += [
        (tag, start + i1, start + i2, start + j1, start + j2) for tag, i1, i2, j1, j2 in middle.get_opcodes()
    ]
    runs.append(("equal", len(a) - end, len(a), len(b) - end, len(b)))
    for tag, a_start, a_end, b_start, b_end in runs:
        if tag != "equal" and len(keys) > 1:
            for i, j in _aligned(a[a_start:a_end], b[b_start:b_end], keys[1:]):
                yield (None if i is None else a_start + i), (None if j is None else b_start + j)
            continue
        for offset in range(max(a_end - a_start, b_end - b_start)):
            i, j = a_start + offset, b_start + offset
            yield (i if i < a_end else None), (j if j < b_end else None)


def _value_key(item: Any) -> Hashable:
    """An item's whole value: equal items match first."""
    return json.dumps(item, sort_keys=True, default=repr)


def _entry_key(item: Any) -> Hashable:
    """A layer entry's (or node's) type and name: entries that differ in their
    arguments still match."""
    if isinstance(item, Mapping) and ("type" in item or "name" in item):
        return _shown(item.get("type")), _shown(item.get("name"))
    return _value_key(item)


def _is_layer(value: Mapping[str, Any]) -> bool:
    return isinstance(value.get("type"), str)


def _is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def _is_plain(values: Sequence[Any]) -> bool:
    """Whether a list holds no lists or objects (a shape, a kernel size): one value."""
    return not any(isinstance(item, (Mapping, list, tuple)) for item in values)


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same type (``1``, ``1.0`` and ``true`` differ)."""
    if _is_list(a) and _is_list(b):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _key_path(path: str, key: Any) -> str:
    return f"{path}.{key}" if isinstance(key, str) else f"{path}[{key!r}]"


def _shown(value: Any) -> str:
    """``value`` as compact JSON (what a spec file holds)."""
    return json.dumps(value, ensure_ascii=False, default=repr)


def diff_summaries(a: Summary, b: Summary) -> list[LayerDifference]:
    """The modules whose type, parameter count or output shape differ between
    summaries ``a`` and ``b``, and those only one of them has, in model order.

    Rows are aligned on (depth, type, name), where a numbered child (``3`` of
    a Sequential) has no name: an inserted layer is one added row.
    """
    differences = []
    for i, j in _aligned(a.rows, b.rows, (_row_value, _row_key)):
        row_a = None if i is None else a.rows[i]
        row_b = None if j is None else b.rows[j]
        if row_a is not None and row_b is not None and _same_row(row_a, row_b):
            continue
        change: Change = "added" if row_a is None else "removed" if row_b is None else "changed"
        differences.append(LayerDifference(change, row_a, row_b))
    return differences


def _row_value(row: SummaryRow) -> Hashable:
    """A row's place and what is compared: equal rows match first."""
    return _row_key(row), row.parameters, repr(row.output_shape)


def _row_key(row: SummaryRow) -> Hashable:
    name = row.path.rsplit(".", 1)[-1]
    return (row.depth, row.type, None if name.isdigit() else name)


def _same_row(a: SummaryRow, b: SummaryRow) -> bool:
    return a.type == b.type and a.parameters == b.parameters and a.output_shape == b.output_shape
