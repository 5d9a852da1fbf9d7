"""The values specs and graphs hold, defined once: which kinds exist, and how to walk them.

A layer's arguments, and the arguments of the calls a graph records, are made of

- atoms: ``None``, ``bool``, ``int``, ``float``, ``str``;
- sequences: ``tuple`` and ``list`` (their subclasses too: ``torch.Size``);
- mappings: dicts whose keys are all strings;
- slices (of values), ``Ellipsis`` and torch dtypes.

A plain layer's spec holds only the JSON subset (:data:`JSON_KINDS`: JSON's
numbers, strings, booleans, null and lists); a graph holds every kind
(:data:`GRAPH_KINDS`). Anything else (a graph's reference to one of its values,
a tensor, any other object) is outside the grammar.

:class:`ValueFold` is the one walk of a value; its subclasses say what each kind
becomes, and what a value outside their kinds does: :class:`JsonValues` writes
a plain layer's arguments, :class:`TaggedValues` writes every kind as tagged
JSON for graph specs, and :class:`TaggedReader` reads that back (dtypes by
their names in :mod:`torchx.core._dtypes`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Generic, Literal, TypeVar

import torch

from torchx.core._dtypes import dtype_name, dtype_named
from torchx.core._errors import SpecError, short_repr

__all__ = [
    "GRAPH_KINDS",
    "JSON_KINDS",
    "JsonValues",
    "KIND_TYPES",
    "Kind",
    "TaggedReader",
    "TaggedValues",
    "ValueFold",
    "kind_of",
]

T = TypeVar("T")


Kind = Literal["atom", "sequence", "mapping", "slice", "ellipsis", "dtype"]
"""A kind of value in the grammar."""

KIND_TYPES: dict[Kind, tuple[type, ...]] = {
    "atom": (type(None), bool, int, float, str),
    "sequence": (tuple, list),
    "mapping": (dict,),  # whose keys are all strings
    "slice": (slice,),
    "ellipsis": (type(Ellipsis),),
    "dtype": (torch.dtype,),
}
"""The Python types of each kind, their subclasses included (``torch.Size`` is
a sequence); a dict is a mapping only when its keys are all strings."""

JSON_KINDS: frozenset[Kind] = frozenset({"atom", "sequence"})
"""What a plain layer's spec holds: JSON's numbers, strings, booleans, null and lists."""

GRAPH_KINDS: frozenset[Kind] = frozenset(KIND_TYPES)
"""What the calls a graph records hold: every kind."""

_KIND_OF_TYPE: dict[type, Kind] = {cls: kind for kind, types in KIND_TYPES.items() for cls in types}


def kind_of(value: Any) -> Kind | None:
    """The kind of ``value``, or None for a value outside the grammar."""
    kind = _KIND_OF_TYPE.get(type(value))
    if kind is None:  # a subclass, or a value outside the grammar
        kind = next((kind for kind, types in KIND_TYPES.items() if isinstance(value, types)), None)
    if kind == "mapping" and not all(isinstance(key, str) for key in value):
        return None
    return kind


class ValueFold(Generic[T]):
    """What a value becomes, computed from what its parts become.

    A subclass declares the ``kinds`` it folds and says what each becomes;
    :meth:`other` is what any other value becomes (a leaf of its own, such as
    a graph reference, or an error). ``where`` is a value's place, for
    messages: an item of a sequence is at ``where[0]``, an entry of a mapping
    at ``where.key``, the parts of a slice at the slice's place.
    """

    kinds: ClassVar[frozenset[Kind]] = GRAPH_KINDS

    def fold(self, value: Any, where: str) -> T:
        """What ``value``, at ``where``, becomes."""
        kind = kind_of(value)
        if kind not in self.kinds:
            return self.other(value, where)
        if kind == "atom":
            return self.atom(value, where)
        if kind == "sequence":
            items = [self.fold(item, f"{where}[{index}]") for index, item in enumerate(value)]
            return self.sequence(value, items, where)
        if kind == "mapping":
            entries = {key: self.fold(item, f"{where}.{key}") for key, item in value.items()}
            return self.mapping(entries, where)
        if kind == "slice":
            start, stop, step = (self.fold(part, where) for part in (value.start, value.stop, value.step))
            return self.slice(start, stop, step, where)
        if kind == "ellipsis":
            return self.ellipsis(where)
        return self.dtype(value, where)

    def atom(self, value: bool | int | float | str | None, where: str) -> T:
        raise NotImplementedError(f"{type(self).__name__} does not fold atoms")

    def sequence(self, value: tuple[Any, ...] | list[Any], items: list[T], where: str) -> T:
        """``value`` (a tuple or a list), whose items became ``items``."""
        raise NotImplementedError(f"{type(self).__name__} does not fold sequences")

    def mapping(self, items: dict[str, T], where: str) -> T:
        """A dict whose values became ``items``."""
        raise NotImplementedError(f"{type(self).__name__} does not fold mappings")

    def slice(self, start: T, stop: T, step: T, where: str) -> T:
        """A slice whose start, stop and step became these."""
        raise NotImplementedError(f"{type(self).__name__} does not fold slices")

    def ellipsis(self, where: str) -> T:
        raise NotImplementedError(f"{type(self).__name__} does not fold Ellipsis")

    def dtype(self, value: torch.dtype, where: str) -> T:
        raise NotImplementedError(f"{type(self).__name__} does not fold dtypes")

    def other(self, value: Any, where: str) -> T:
        """A value outside :attr:`kinds`."""
        raise NotImplementedError(f"{type(self).__name__} does not fold a {type(value).__name__}")


class JsonValues(ValueFold[Any]):
    """Values as JSON data: the JSON subset only (tuples become lists), as a
    plain layer's spec holds its arguments; anything else is a SpecError."""

    kinds = JSON_KINDS

    def atom(self, value: bool | int | float | str | None, where: str) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            raise SpecError(where, f"{short_repr(value)} is not representable in JSON")
        return value

    def sequence(self, value: tuple[Any, ...] | list[Any], items: list[Any], where: str) -> Any:
        return items

    def other(self, value: Any, where: str) -> Any:
        raise SpecError(
            where,
            f"a {type(value).__name__} value ({short_repr(value)}) cannot be written to a spec; "
            "specs hold only numbers, strings, booleans, null and lists",
        )


class TaggedValues(JsonValues):
    """Values of every kind as JSON data, as a graph spec holds its calls' arguments.

    Atoms are themselves; every other kind is an object of one key, its tag:
    ``{"tuple": [...]}``, ``{"list": [...]}``, ``{"dict": {...}}``,
    ``{"slice": [start, stop, step]}``, ``{"ellipsis": true}``,
    ``{"dtype": "float32"}``. A graph adds tags of its own in :meth:`other`
    (references to its values); :class:`TaggedReader` reads them all back.
    """

    kinds = GRAPH_KINDS

    def sequence(self, value: tuple[Any, ...] | list[Any], items: list[Any], where: str) -> Any:
        return {"tuple" if isinstance(value, tuple) else "list": items}

    def mapping(self, items: dict[str, Any], where: str) -> Any:
        return {"dict": items}

    def slice(self, start: Any, stop: Any, step: Any, where: str) -> Any:
        return {"slice": [start, stop, step]}

    def ellipsis(self, where: str) -> Any:
        return {"ellipsis": True}

    def dtype(self, value: torch.dtype, where: str) -> Any:
        return {"dtype": dtype_name(value)}

    def other(self, value: Any, where: str) -> Any:
        if isinstance(value, dict):  # outside the grammar: a key is not a string
            key = next(key for key in value if not isinstance(key, str))  # str(key) would be another key
            raise SpecError(where, f"dict keys in a spec are strings, got {short_repr(key)}")
        return super().other(value, where)


class TaggedReader:
    """Reads the values :class:`TaggedValues` writes; a tag it does not know
    is a graph's own, for :meth:`reference` to read."""

    tags_shown: ClassVar[tuple[str, ...]] = ("list", "tuple", "dict", "slice", "dtype")
    """The tags a message about a malformed value names."""

    def read(self, data: Any, where: str) -> Any:
        """The value ``data``, at ``where`` in the document, stands for."""
        if not isinstance(data, Mapping):
            if isinstance(data, list):
                raise SpecError(where, 'lists are written as {"list": [...]}')
            return data
        if len(data) != 1:
            raise SpecError(
                where, f"expected one tag ({', '.join(self.tags_shown)}...), got {sorted(data, key=str)}"
            )
        ((tag, content),) = data.items()
        container = self.read_container(tag, content, where, self.read)
        if container is not None:
            return container
        if tag == "slice" and isinstance(content, list) and len(content) == 3:
            return slice(*(self.read(part, where) for part in content))
        if tag == "ellipsis":
            return Ellipsis
        dtype = dtype_named(content) if tag == "dtype" else None
        if dtype is not None:
            return dtype
        return self.reference(tag, content, where)

    @staticmethod
    def read_container(
        tag: Any, content: Any, where: str, read_item: Callable[[Any, str], Any]
    ) -> list[Any] | tuple[Any, ...] | dict[Any, Any] | None:
        """The list, tuple or dict ``{tag: content}`` stands for, its items read
        by ``read_item(item, place)``; None if it stands for none."""
        if tag in ("list", "tuple") and isinstance(content, list):
            items = [read_item(item, f"{where}[{index}]") for index, item in enumerate(content)]
            return items if tag == "list" else tuple(items)
        if tag == "dict" and isinstance(content, Mapping):
            return {key: read_item(item, f"{where}.{key}") for key, item in content.items()}
        return None

    def reference(self, tag: Any, content: Any, where: str) -> Any:
        """The value of a tag outside the grammar (a graph's reference to one of its values)."""
        raise SpecError(where, f"unknown value tag {short_repr(tag)} or malformed content")
