"""The values specs and graphs hold, defined once: which kinds exist, and how to walk them.

A layer's arguments, and the arguments of the calls a graph records, are made of

- atoms: ``None``, ``bool``, ``int`` (an int64: :data:`MAX_SPEC_INT`), ``float``
  (``inf``, ``-inf`` and ``nan`` too), ``str``;
- sequences: ``tuple`` and ``list`` (their subclasses too: ``torch.Size``);
- mappings: dicts whose keys are all strings;
- slices (of values), ``Ellipsis`` and torch dtypes.

A plain layer's spec holds only the JSON subset (:data:`JSON_KINDS`: JSON's
numbers, strings, booleans, null and lists, and ``{"float": "inf"}`` for the
numbers JSON has no literal for: see :data:`NON_FINITE`); a graph holds every kind
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
from torchx.core._errors import SpecError, int_digits, short_repr

__all__ = [
    "GRAPH_KINDS",
    "INT64_RANGE",
    "JSON_KINDS",
    "JsonValues",
    "KIND_TYPES",
    "Kind",
    "MAX_SPEC_INT",
    "NON_FINITE",
    "TaggedReader",
    "TaggedValues",
    "ValueFold",
    "int_outside",
    "kind_of",
    "read_json_value",
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

NON_FINITE: dict[str, float] = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
"""The floats JSON has no literal for, by the name a spec writes them with:
``{"float": "-inf"}``. A one-key object tagged ``float`` cannot be a legitimate
value of its own: a plain layer's arguments hold no objects, and a graph's
objects are all tagged. YAML's ``.inf``, ``-.inf`` and ``.nan`` read as these floats too."""

MAX_SPEC_INT = 2**63 - 1
"""The largest integer a spec holds; ``-MAX_SPEC_INT - 1`` is the least. Integers
in a spec are int64, as tensor sizes are: each is checked as a document is read
(and as a spec is written), before any arithmetic on it, so no size, product or
count computed from a spec grows past what an int64 holds."""

INT64_RANGE = (
    "integers in a spec are int64 (-2**63 to 2**63 - 1), as tensor sizes are; "
    "a larger number is written as a float (1e30)"
)
"""What a message about an integer outside :data:`MAX_SPEC_INT` says of the bound."""


def int_outside(value: int) -> str | None:
    """Why the integer ``value`` cannot be in a spec (it is not an int64), or None
    when it can. Comparisons only: no conversion to text, whatever its size."""
    if -MAX_SPEC_INT - 1 <= value <= MAX_SPEC_INT:
        return None
    shown = (
        f"an integer of about {int_digits(value):,} digits"
        if value.bit_length() > 128
        else f"the integer {value}"
    )
    return f"{shown}; {INT64_RANGE}"


_NON_FINITE_FORM = 'non-finite numbers are written {"float": "inf"}, {"float": "-inf"} or {"float": "nan"}'

_KIND_OF_TYPE: dict[type, Kind | None] = {cls: kind for kind, types in KIND_TYPES.items() for cls in types}
"""The kind of each type met so far (None: outside the grammar), subclasses included."""
_KINDS_REMEMBERED = 4096
"""How many types :data:`_KIND_OF_TYPE` remembers (classes made on the fly would grow it)."""


def kind_of(value: Any) -> Kind | None:
    """The kind of ``value``, or None for a value outside the grammar."""
    cls = type(value)
    try:
        kind = _KIND_OF_TYPE[cls]
    except KeyError:  # a subclass, or a value outside the grammar: looked up once per type
        kind = next((kind for kind, types in KIND_TYPES.items() if issubclass(cls, types)), None)
        if len(_KIND_OF_TYPE) < _KINDS_REMEMBERED:
            _KIND_OF_TYPE[cls] = kind
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


def _non_finite(name: Any, where: str) -> float:
    """The float ``{"float": name}`` stands for."""
    value = NON_FINITE.get(name) if isinstance(name, str) else None
    if value is None:
        raise SpecError(where, f"{_NON_FINITE_FORM}, got {short_repr(name)}")
    return value


def read_json_value(data: Any, where: str) -> Any:
    """A plain layer argument as read from a spec: ``data`` with the non-finite
    numbers ``{"float": "inf"}`` (see :data:`NON_FINITE`) made floats, in lists
    too. Any other object is left as it is, for the argument's type to refuse.

    Lists are walked without recursion and each once (a YAML alias is read once
    however often it is used), so any depth the document measure lets through is read."""
    if not isinstance(data, list):
        return _non_finite(data["float"], where) if _is_tagged_float(data) else data
    read: dict[int, Any] = {}  # id of each list walked -> what it reads as
    stack: list[tuple[list[Any], tuple[Any, ...], bool]] = [(data, (where,), False)]
    while stack:
        items, place, entered = stack.pop()
        if not entered and id(items) in read:
            continue  # a list held twice: read already
        if not entered:
            stack.append((items, place, True))
            stack.extend(  # reversed: the first is read first, and named if it is wrong
                (item, (place, index), False)
                for index, item in reversed(list(enumerate(items)))
                if isinstance(item, list) and id(item) not in read
            )
            continue
        new = [
            read.get(id(item), item)
            if isinstance(item, list)
            else _non_finite(item["float"], _place((place, index)))
            if _is_tagged_float(item)
            else item
            for index, item in enumerate(items)
        ]
        same = all(a is b for a, b in zip(new, items, strict=True))
        read[id(items)] = items if same else new
    return read[id(data)]


def _is_tagged_float(data: Any) -> bool:
    return isinstance(data, Mapping) and len(data) == 1 and "float" in data


def _place(place: tuple[Any, ...]) -> str:
    """``$.args.x[1][0]`` from the chain ``((("$.args.x",), 1), 0)``."""
    indices: list[str] = []
    while len(place) == 2:
        place, index = place
        indices.append(f"[{index}]")
    return str(place[0]) + "".join(reversed(indices))


class JsonValues(ValueFold[Any]):
    """Values as JSON data: the JSON subset only (tuples become lists), as a
    plain layer's spec holds its arguments; anything else is a SpecError.
    ``inf``, ``-inf`` and ``nan`` are written ``{"float": "inf"}`` (:data:`NON_FINITE`)."""

    kinds = JSON_KINDS

    def atom(self, value: bool | int | float | str | None, where: str) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return {"float": "nan" if math.isnan(value) else repr(float(value))}
        if isinstance(value, int) and (value > MAX_SPEC_INT or value < -MAX_SPEC_INT - 1):
            raise SpecError(where, f"cannot be written to a spec: {int_outside(value)}")
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
    ``{"dtype": "float32"}``, and ``{"float": "-inf"}`` for the floats JSON has
    no literal for. A graph adds tags of its own in :meth:`other`
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

    tags_shown: ClassVar[tuple[str, ...]] = ("list", "tuple", "dict", "slice", "dtype", "float")
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
        if tag == "float":
            return _non_finite(content, where)
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
