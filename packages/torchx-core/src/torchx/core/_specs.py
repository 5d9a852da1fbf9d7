"""Specs: layers and models as plain data, and back.

A spec is a JSON-compatible dict::

    {"format_version": 1, "type": "Sequential", "layers": [
        {"type": "Conv2d", "args": {"out_channels": 20, "kernel_size": 5}},
        {"type": "ReLU"}]}

``"type"`` resolves only through the layer registry (case-insensitive, with
aliases); nothing is imported by dotted path or evaluated. YAML is read with
PyYAML's safe loader (its C version where installed), which refuses Python
tags. Every problem raises :class:`~torchx.core.SpecError` naming its
place in the document.

Reading is bounded whatever the document: its text (MAX_SPEC_BYTES), its
size once YAML aliases are expanded (MAX_SPEC_VALUES, MAX_LAYERS), its
nesting (MAX_DEPTH) and its integers (each an int64, MAX_SPEC_INT; the text of
one at most MAX_INT_DIGITS digits) are checked before anything is built, in
time linear in the document as stored.
"""

from __future__ import annotations

import difflib
import functools
import json
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

from torch import nn

from torchx.core._arguments import ArgumentMismatch, coerce, hint_of, signature_of
from torchx.core._errors import (
    ArgumentError,
    SpecError,
    SpecMigrationWarning,
    TorchXError,
    short_repr,
)
from torchx.core._files import write_bytes_atomically
from torchx.core._plugins import current_plugins
from torchx.core._record import layer_view, name_problem, record_of, set_given_name
from torchx.core._registry import LayerRegistry
from torchx.core._spec_values import INT64_RANGE, MAX_SPEC_INT, JsonValues, int_outside, read_json_value

if TYPE_CHECKING:
    from torchx.core._layer import Layer

__all__ = [
    "FORMAT_VERSION",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_LAYERS",
    "MAX_SPEC_BYTES",
    "MAX_SPEC_INT",
    "MAX_SPEC_VALUES",
    "SpecReader",
    "SpecWriter",
    "from_spec",
    "load_spec",
    "parse_spec",
    "read_document",
    "read_spec_file",
    "save_spec",
    "to_spec",
]

FORMAT_VERSION = 1
"""The spec format this TorchX writes; it reads this version and older."""

MAX_DEPTH = 64
"""Deepest nesting a spec may have; deeper documents are refused, not recursed."""

MAX_LAYERS = 100_000
"""Most layers a spec may describe (YAML aliases can make a small file describe
exponentially many); larger documents are refused before they are built."""

MAX_SPEC_VALUES = 2_000_000
"""Most values (objects, lists, keys, strings, numbers) a spec may hold once its
YAML aliases are expanded: an alias counts what it names again at each use,
wherever it is (layer arguments, a Functional's node arguments, unknown keys).
A ResNet-152 written as a Functional holds about 8,600."""

MAX_SPEC_BYTES = 16 * 2**20
"""Longest spec text read, in bytes of a file or characters of a string
(16 MiB; a ResNet-152 Functional is 70 KB of JSON)."""

MAX_INT_DIGITS = 640
"""Most decimal digits the text of an integer in a spec may have to be converted
at all (Python's conversion costs quadratic time in the digits); the value is
then bounded by MAX_SPEC_INT (an int64: 19 digits)."""

_INT_CHARACTERS = 4 * MAX_INT_DIGITS
"""Longest text of a non-decimal YAML integer (hex, octal, binary, 1:30:00) converted
(binary needs 3.33 characters per decimal digit); sexagesimal ones cost quadratic time."""
_INT_MIN = -MAX_SPEC_INT - 1

_L = TypeVar("_L", bound="Layer")

_PLACEMENT = ("device", "dtype")
"""Constructor arguments that place a layer rather than describe it."""

_ENTRY_KEYS = ("type", "name", "version", "frozen")
"""The keys every layer entry may have; its class reads the others (``args``, ``layers``...)."""

_JSON_VALUES = JsonValues()


def _registry(registry: LayerRegistry | None) -> LayerRegistry:
    if registry is not None:
        return registry
    return current_plugins().registry


class SpecWriter:
    """Turns layers into spec data; containers call :meth:`layer` for children."""

    def __init__(self, registry: LayerRegistry, where: str = "$") -> None:
        self.registry = registry
        self.where = where

    def layer(self, layer: object, where: str | None = None) -> dict[str, Any]:
        """The spec of one (child) layer, built or not, without a format version."""
        place = where or self.where
        record = record_of(layer) if isinstance(layer, nn.Module) else None
        if record is None:
            raise SpecError(
                place,
                f"{type(layer).__name__} is a plain torch module, which specs cannot "
                "describe; use the TorchX layer of the same name (torchx.layers)",
            )
        child = SpecWriter(self.registry, place)
        # The record, not the class: a built layer is its native module, and tools
        # (FSDP, parametrizations) swap classes.
        type_name = self.registry.type_name(record.layer_class)
        named = {"name": record.name} if record.name is not None else {}
        version = record.layer_class.spec_version
        versioned = {"version": version} if version > 1 else {}
        frozen = _frozen_entry(layer)  # type: ignore[arg-type]
        fields = layer_view(layer).spec_fields(child)  # type: ignore[arg-type]
        return {"type": type_name, **named, **versioned, **fields, **frozen}

    def value(self, value: Any, where: str) -> Any:
        """``value`` as JSON data (tuples become lists); refuses anything else
        (see :class:`~torchx.core._spec_values.JsonValues`)."""
        return _JSON_VALUES.fold(value, f"{self.where}.{where}")


class SpecReader:
    """Turns spec data into layers; containers call :meth:`layer` for children.

    With an ``errors`` list, reading goes on past a layer entry it cannot
    read (the error is appended, and ``stand_in()`` takes the layer's place),
    so that one pass finds every unreadable entry. ``places`` maps
    each layer made to where in the document it came from; ``migrated`` lists
    the entries read through migrations (see :mod:`torchx.core._registry`).
    """

    def __init__(
        self,
        registry: LayerRegistry,
        where: str = "$",
        depth: int = 0,
        *,
        errors: list[SpecError] | None = None,
        stand_in: Callable[[], Layer] | None = None,
        places: dict[int, str] | None = None,
        migrated: list[str] | None = None,
    ) -> None:
        if (errors is None) != (stand_in is None):
            raise TypeError("SpecReader takes errors and stand_in together (or neither)")
        self.registry = registry
        self.where = where
        self.depth = depth
        self.errors = errors
        self.stand_in = stand_in
        self.places = places if places is not None else {}
        self.migrated = migrated if migrated is not None else []

    def layer(self, data: Any, where: str | None = None) -> Layer:
        """Construct the (child) layer described by ``data``."""
        place = where or self.where
        if self.errors is None or self.stand_in is None:
            return self._layer(data, place)
        try:
            return self._layer(data, place)
        except SpecError as error:
            self.errors.append(error)
            return self.stand_in()

    def _layer(self, data: Any, place: str) -> Layer:
        if self.depth > MAX_DEPTH:
            raise SpecError(place, f"spec nests deeper than {MAX_DEPTH} levels")
        if not isinstance(data, Mapping):
            raise SpecError(place, f"expected a layer object with a 'type', got {_kind(data)}")
        odd_keys = [key for key in data if not isinstance(key, str)]
        if odd_keys:
            raise SpecError(place, f"keys of a layer object are strings, got {_kind(odd_keys[0])}")
        if "type" not in data:
            typo = next((key for key in data if _closest(key, ("type",)) is not None), None)
            if typo is not None:
                raise _unknown_key(place, typo, (), "a layer entry names its class in 'type'")
            raise SpecError(f"{place}.type", "missing: a layer entry names its class in 'type'")
        type_name = data["type"]
        if not isinstance(type_name, str):
            raise SpecError(f"{place}.type", f"expected a layer type name, got {_kind(type_name)}")
        cls = self.registry.resolve(type_name, where=f"{place}.type")
        name = data.get("name")
        problem = None if name is None else name_problem(name)
        if problem is not None:
            raise SpecError(f"{place}.name", problem)
        fields = {
            key: value for key, value in data.items() if key not in ("type", "name", "version", "frozen")
        }
        fields = self._migrated(cls, fields, data.get("version", 1), place)
        child = SpecReader(
            self.registry,
            place,
            self.depth + 1,
            errors=self.errors,
            stand_in=self.stand_in,
            places=self.places,
            migrated=self.migrated,
        )
        layer = cls.from_spec_fields(fields, child)
        if name is not None:
            set_given_name(layer, name)
        if "frozen" in data:
            _freeze(layer, data["frozen"], f"{place}.frozen")
        self.places[id(layer)] = place
        return layer

    def _migrated(self, cls: type[Layer], fields: dict[str, Any], version: Any, place: str) -> dict[str, Any]:
        """``fields`` of an entry written at ``version``, as ``cls``'s current version reads them."""
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise SpecError(f"{place}.version", f"expected a positive integer, got {_kind(version)}")
        if version == cls.spec_version:
            return fields
        type_name = self.registry.type_name(cls)
        fields = self.registry.migrations.upgrade(type_name, fields, version, cls.spec_version, place)
        self.migrated.append(f"{place} ({type_name}: version {version} to {cls.spec_version})")
        return fields

    def check_keys(self, fields: Iterable[Any], known: Sequence[str], has: str) -> None:
        """Refuse a key of an entry's ``fields`` that its class does not read (not one
        of ``known``, nor a key every entry may have), at its place; a misspelled key is
        named with the one meant. ``has`` says what the entry holds."""
        extra = sorted(set(fields) - {*known, *_ENTRY_KEYS}, key=str)
        if extra:
            raise _unknown_key(self.where, extra[0], known, has)

    def arguments(self, cls: type[Layer], fields: Mapping[str, Any]) -> dict[str, Any]:
        """Check ``fields`` holds only ``args``, and the args against ``cls.__init__``."""
        self.check_keys(
            fields, ("args",), f"a {cls.__name__} spec has only 'type', 'name', 'version' and 'args'"
        )
        raw = fields.get("args", {})
        if not isinstance(raw, Mapping):
            raise SpecError(f"{self.where}.args", f"expected an object of arguments, got {_kind(raw)}")
        parameters = signature_of(cls)
        accepted = [
            name
            for name, p in parameters.items()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name not in _PLACEMENT
        ]
        arguments: dict[str, Any] = {}
        for name, value in raw.items():
            if name in _PLACEMENT:
                raise SpecError(
                    f"{self.where}.args.{name}",
                    f"{name} is where a model runs, not part of its architecture, so specs leave it out; "
                    f"give it to torchx.build(model, shape, {name}=...) or model.to(...)",
                )
            if name not in accepted:
                raise SpecError(
                    f"{self.where}.args.{name}",
                    f"unknown argument; {cls.__name__} takes {', '.join(accepted) or 'no arguments'}",
                )
            where = f"{self.where}.args.{name}"
            try:
                arguments[name] = coerce(read_json_value(value, where), hint_of(cls, name))
            except ArgumentMismatch as error:
                raise SpecError(where, str(error)) from None
        missing = [
            name
            for name in accepted
            if parameters[name].default is parameters[name].empty and name not in arguments
        ]
        if missing:
            raise SpecError(
                f"{self.where}.args", f"missing required argument {missing[0]!r} of {cls.__name__}"
            )
        return arguments

    def construct(
        self, cls: type[_L], arguments: Mapping[str, Any], layers: Sequence[Layer] | None = None
    ) -> _L:
        """``cls(**arguments)``, or ``cls(*layers, **arguments)`` for a container
        given its child layers, with constructor errors reported as SpecErrors
        (at the argument they name, else at the ``args``, or at the entry when
        there are ``layers``)."""
        try:
            layer = cls(**arguments) if layers is None else cls(*layers, **arguments)
            layer._check_arguments()
        except (TorchXError, ValueError, TypeError, KeyError, OverflowError) as error:
            if isinstance(error, SpecError):
                raise
            name = cls.__name__
            message = str(error) if str(error).startswith(name) else f"{name}: {error}"
            argument = error.argument if isinstance(error, ArgumentError) else None
            if argument is not None:
                place = f"{self.where}.args.{argument}"
            else:
                place = self.where if layers is not None else f"{self.where}.args"
            raise SpecError(place, message) from error
        return layer


def _closest(key: Any, known: Sequence[str]) -> str | None:
    """The one of ``known`` that ``key`` is a misspelling of (``typ``, ``arg``), if any."""
    close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.7)
    return close[0] if close and close[0] != key else None


def _unknown_key(where: str, key: Any, known: Sequence[str], has: str) -> SpecError:
    """The error for ``key`` of the entry at ``where``, which its class does not read."""
    meant = _closest(key, (*_ENTRY_KEYS, *known))
    return SpecError(
        f"{where}.{key}", "unknown key" + (f" (did you mean {meant!r}?)" if meant else "") + f"; {has}"
    )


def _frozen_entry(layer: nn.Module) -> dict[str, Any]:
    """A layer's ``"frozen"`` entry: ``true`` when none of its own parameters train, the names of those
    that do not when some do; nothing when all train (child layers say it for themselves)."""
    parameters = dict(_own_parameters(layer))
    frozen = [name for name, parameter in parameters.items() if not parameter.requires_grad]
    if not frozen:
        return {}
    return {"frozen": True if len(frozen) == len(parameters) else frozen}


def _freeze(layer: Layer, frozen: Any, where: str) -> None:
    """Apply a ``"frozen"`` entry: ``true`` (every own parameter), ``false``, or a list of their names."""
    parameters = dict(_own_parameters(layer))
    if isinstance(frozen, bool):
        names = list(parameters) if frozen else []
    elif isinstance(frozen, list) and all(isinstance(name, str) for name in frozen):
        names = frozen
    else:
        raise SpecError(where, f"expected true, false or a list of parameter names, got {_kind(frozen)}")
    if frozen and not parameters:
        raise SpecError(
            where, "the layer has no parameters of its own to freeze (its child layers have theirs)"
        )
    for name in names:
        if name not in parameters:
            raise SpecError(
                where, f"{name!r} is not a parameter of the layer (it has {', '.join(parameters)})"
            )
        parameters[name].requires_grad_(False)


def _own_parameters(module: nn.Module, prefix: str = "") -> Iterator[tuple[str, nn.Parameter]]:
    """``module``'s parameters, but not those of the TorchX layers inside it (a container's children)."""
    for name, parameter in module.named_parameters(prefix=prefix.rstrip("."), recurse=False):
        yield name, parameter
    for name, child in module.named_children():
        if record_of(child) is None:
            yield from _own_parameters(child, f"{prefix}{name}.")


def _kind(value: Any) -> str:
    return "null" if value is None else f"{type(value).__name__} {short_repr(value)}"


_CONTAINERS = (Mapping, list, tuple, set, frozenset)


def _is_mapping(value: Any) -> bool:
    return isinstance(value, Mapping)


_SCALARS = frozenset((str, int, float, bool, type(None)))


def _path(entry: tuple[Any, ...], is_mapping: Callable[[Any], bool] = _is_mapping) -> str:
    """The place in the document of a walk entry ``(value, parent entry, key)``:
    ``$.layers[3].args``, with keys that are not short strings shown bounded.
    ``is_mapping`` tells a parent whose children have keys from one whose have indices."""
    parts: list[str] = []
    while entry[1] is not None:
        key, entry = entry[2], entry[1]
        if not is_mapping(entry[0]):
            parts.append(f"[{key}]")  # an index
        elif isinstance(key, str) and len(key) <= 60:
            parts.append(f".{key}")
        else:
            parts.append(f"[{short_repr(key)}]")
    return "$" + "".join(reversed(parts))


def _entry_of(
    root: Any, target: Any, children: Callable[[Any], Iterable[tuple[Any, Any]]]
) -> tuple[Any, ...]:
    """The walk entry ``(value, parent entry, key)`` of ``target`` in the tree under ``root``
    (whose ``children(value)`` are ``(key, child)`` pairs): each value visited once, without
    recursion, so that a document of shared parts (YAML aliases) is walked as stored."""
    stack: list[tuple[Any, ...]] = [(root, None, None)]
    seen: set[int] = set()
    while stack:
        entry = stack.pop()
        if entry[0] is target:
            return entry
        if id(entry[0]) not in seen:
            seen.add(id(entry[0]))
            stack.extend((child, entry, key) for key, child in reversed(list(children(entry[0]))))
    return (target, None, None)  # not under root: the root's place


def _check_int(value: Any, where: tuple[Any, ...]) -> None:
    """Refuse ``value`` at ``where`` if it is an integer outside int64 (see MAX_SPEC_INT)."""
    problem = int_outside(value) if isinstance(value, int) else None
    if problem is not None:
        raise SpecError(_path(where), problem)


SEARCH_MARKERS = frozenset({"$int", "$float", "$choice", "$repeat"})
"""The keys of torchx-tune's search-space markers, which a plain spec may not hold."""


def _is_marker(key: str, value: Any) -> bool:
    """Whether ``key: value`` in an object is a search-space marker: ``$int``,
    ``$float`` or ``$choice`` of a list, ``$repeat`` of an object with layers.
    (Elsewhere a key is a name, which may be any string: a graph output ``"$"``.)"""
    if key not in SEARCH_MARKERS:
        return False
    return isinstance(value, dict) and "layers" in value if key == "$repeat" else isinstance(value, list)


def _measure(document: Any, *, markers: bool = False) -> None:
    """Refuse ``document`` if, with every shared subtree (a YAML alias) counted once
    per use, it holds more than MAX_SPEC_VALUES values or MAX_LAYERS layer objects,
    or if it holds itself or an integer outside int64 (MAX_SPEC_INT); unless
    ``markers``, a search-space marker too (see :func:`_is_marker`).

    Each distinct list and object is visited once (its expanded size is kept by
    ``id``; every one stays alive in ``document`` meanwhile), and without recursion,
    so the check is linear in the document as stored however deep it nests or
    large it expands (about a second per million values stored).
    """
    sizes: dict[int, tuple[int, int]] = {}  # id -> (values, layers), expanded
    walking: set[int] = set()  # entered, not yet measured: the path from the root
    stack: list[tuple[tuple[Any, ...], bool]] = [((document, None, None), False)]
    while stack:
        entry, entered = stack.pop()
        data = entry[0]
        mapping = isinstance(data, Mapping)
        if entered:  # every child is measured by now: add them up
            values, layers = 1, 0
            if mapping:
                values, layers = 1 + len(data), int("type" in data)
            size_of = sizes.get
            for item in data.values() if mapping else data:
                found = size_of(id(item))  # None for a scalar
                if found is None:
                    values += 1
                else:
                    values, layers = values + found[0], layers + found[1]
            walking.discard(id(data))
            sizes[id(data)] = (values, layers)
            if values > MAX_SPEC_VALUES:
                raise SpecError(
                    _path(entry),
                    f"the spec expands to more than {MAX_SPEC_VALUES:,} values here (YAML aliases repeat "
                    "what they name at every use); write a smaller spec",
                )
            if layers > MAX_LAYERS:
                raise SpecError(_path(entry), f"spec describes more than {MAX_LAYERS} layers here")
            continue
        if id(data) in sizes:
            continue
        if id(data) in walking:
            raise SpecError(
                _path(entry),
                "the document holds itself here (a YAML alias inside its own anchor), so it has no end",
            )
        walking.add(id(data))
        stack.append((entry, True))
        if mapping:
            for key in data:
                if type(key) is not str:
                    _check_int(key, (key, entry, key))
                elif not markers and _is_marker(key, data[key]):
                    raise SpecError(
                        _path(entry),
                        f"{short_repr(key)} is a search-space marker, which a plain spec cannot hold: "
                        "read the file with torchx.tune.load_space (torchx-tune) and sample a spec from it",
                    )
        for key, item in data.items() if mapping else enumerate(data):
            kind = type(item)
            if kind in _SCALARS:
                if kind is int and (item > MAX_SPEC_INT or item < _INT_MIN):
                    _check_int(item, (item, entry, key))
            elif isinstance(item, _CONTAINERS):
                if id(item) not in sizes:
                    stack.append(((item, entry, key), False))
            else:
                _check_int(item, (item, entry, key))  # an int subclass (not bool), or any other object


def to_spec(layer: nn.Module, *, registry: LayerRegistry | None = None) -> dict[str, Any]:
    """``layer`` (a TorchX layer or model, built or not) as a spec document (with ``format_version``).

    A tensor held under two names (tied weights, or one layer held in two
    places) is refused: a spec records layers, not ties, so reading it back
    would give two tensors."""
    _check_untied(layer)
    document = SpecWriter(_registry(registry)).layer(layer)
    return {"format_version": FORMAT_VERSION, **document}


def _check_untied(layer: nn.Module) -> None:
    """Raise a SpecError if ``layer`` holds one tensor under two names."""
    first_name: dict[int, str] = {}
    named = (
        *layer.named_parameters(remove_duplicate=False),
        *layer.named_buffers(remove_duplicate=False),
    )
    for name, tensor in named:
        first = first_name.setdefault(id(tensor), name)
        if first != name:
            raise SpecError(
                "$",
                f"{type(layer).__name__}: {first} and {name} are one tensor (tied weights, or one layer held "
                "in two places); a spec records layers, not ties, so reading it back would give two tensors\n"
                f"  fix: write the spec before tying, and tie again after reading it (set {name} to {first}); "
                "a layer called twice in a graph is held once, and is fine",
            )


@overload
def from_spec(
    spec: Mapping[str, Any], *, registry: LayerRegistry | None = None, expect: None = None
) -> Layer: ...
@overload
def from_spec(spec: Mapping[str, Any], *, registry: LayerRegistry | None = None, expect: type[_L]) -> _L: ...
def from_spec(
    spec: Mapping[str, Any],
    *,
    registry: LayerRegistry | None = None,
    expect: type[Layer] | None = None,
) -> Layer:
    """Construct the (unbuilt) layer or model that ``spec`` describes; with
    ``expect``, one of that class (else a SpecError), typed so."""
    return read_document(spec, SpecReader(_registry(registry)), expect)


def _check_version(spec: Mapping[str, Any]) -> None:
    version = spec.get("format_version", FORMAT_VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise SpecError("$.format_version", f"expected a positive integer, got {_kind(version)}")
    problem = int_outside(version)  # before it is shown: Python prints at most 4,300 digits
    if problem is not None:
        raise SpecError("$.format_version", problem)
    if version > FORMAT_VERSION:
        raise SpecError(
            "$.format_version",
            f"this spec has format version {version}, newer than the {FORMAT_VERSION} "
            "this TorchX reads; upgrade torchx-core",
        )


def read_document(spec: Any, reader: SpecReader, expect: type[_L] | None = None) -> _L:
    """The layer a whole spec document describes, read with ``reader`` (the
    format version checked, the document measured before anything is built)."""
    if not isinstance(spec, Mapping):
        raise SpecError("$", f"a spec is an object with a 'type', got {_kind(spec)}")
    _check_version(spec)
    body = {key: value for key, value in spec.items() if key != "format_version"}
    _measure(body)
    layer = reader.layer(body)
    if reader.migrated:
        shown = ", ".join(reader.migrated[:5]) + (
            f" and {len(reader.migrated) - 5} more" if len(reader.migrated) > 5 else ""
        )
        warnings.warn(
            f"the spec was written by older versions of its layers and was migrated as it was read: {shown}; "
            "write it anew (torchx convert spec.yaml -o spec.yaml) to read it as it is",
            SpecMigrationWarning,
            stacklevel=3,
        )
    if expect is not None and not isinstance(layer, expect):
        raise SpecError("$.type", f"expected a {expect.__name__} spec, got {type(layer).__name__}")
    return layer  # type: ignore[return-value]


def _format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".json":
        return "json"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    raise SpecError(str(path), "spec files end in .json, .yaml or .yml")


def load_spec(path: str | Path, *, registry: LayerRegistry | None = None) -> Layer:
    """Read a ``.json``/``.yaml`` spec file and construct its (unbuilt) model."""
    return from_spec(_read_file(Path(path)), registry=registry)


def read_spec_file(path: str | Path) -> Any:
    """The data of a ``.json``/``.yaml`` spec file, read and bounded exactly as
    :func:`load_spec` reads it (its text, its values and layers once YAML aliases
    are expanded, its integers), without constructing anything. Search-space
    markers (``{"$int": [2, 8]}``, which a spec itself may not hold) are kept:
    this is how a reader of documents *like* specs stays within the same bounds.

    :raises SpecError: the file is not such a document, or is past a bound.
    """
    document = _read_file(Path(path))
    _measure(document, markers=True)
    return document


def _read_file(path: Path) -> Any:
    """The document in a ``.json``/``.yaml`` spec file, parsed (not yet measured)."""
    kind = _format(path)
    _check_file_size(path)
    with path.open(encoding="utf-8") as file:
        text = file.read(MAX_SPEC_BYTES + 1)  # a device or a pipe has no size to check
    return parse_spec(text, kind, where=str(path))


def _check_file_size(path: Path) -> None:
    """Refuse a spec file larger than MAX_SPEC_BYTES before reading it (a stat, no read)."""
    size = path.stat().st_size
    if size > MAX_SPEC_BYTES:
        raise SpecError(str(path), f"the file is {size:,} bytes; spec files are at most {MAX_SPEC_BYTES:,}")


def parse_spec(text: str, kind: str = "yaml", *, where: str = "<spec>") -> Any:
    """The spec document in ``text``: ``kind`` is ``"json"`` or ``"yaml"`` (which
    also reads JSON). YAML is read with PyYAML's safe loader (its C version where
    installed): plain data only. Text longer than MAX_SPEC_BYTES, and integers
    outside int64 (MAX_SPEC_INT), are refused."""
    if len(text) > MAX_SPEC_BYTES:
        raise SpecError(
            where, f"the document is {len(text):,} characters; spec documents are at most {MAX_SPEC_BYTES:,}"
        )
    if kind == "json":
        repeated: list[tuple[dict[str, Any], str]] = []  # the first object with a key given twice

        def json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
            data = dict(pairs)
            if len(data) < len(pairs) and not repeated:
                keys = [key for key, _ in pairs]
                repeated.append((data, next(key for key in keys if keys.count(key) > 1)))
            return data

        try:
            document = json.loads(
                text, parse_int=lambda digits: _json_int(digits, where), object_pairs_hook=json_object
            )
        except json.JSONDecodeError as error:
            raise SpecError(where, f"invalid JSON: {error}") from None
        except RecursionError:
            raise SpecError(where, _TOO_DEEP) from None
        if repeated:
            data, key = repeated[0]
            place = _path((key, _entry_of(document, data, _data_children), key))
            raise SpecError(f"{where}, {place}", f"the key {key!r} is given twice; {_ONCE}")
        return document
    import yaml

    try:
        return yaml.load(text, Loader=_yaml_loader())  # a safe loader: see _safe_loader
    except yaml.YAMLError as error:
        if "maximum nesting depth" in str(getattr(error, "problem", "")):  # libyaml stops at 1,000 levels
            raise SpecError(where, _TOO_DEEP) from None
        raise SpecError(where, f"invalid or unsafe YAML (only plain data is read): {error}") from None
    except RecursionError:  # the pure-Python loader recurses
        raise SpecError(where, _TOO_DEEP) from None
    except _YamlLimit as error:
        raise SpecError(f"{where}, {error.where}" if error.where else where, error.problem) from None
    except UnicodeEncodeError as error:  # libyaml reads UTF-8: a lone surrogate (an undecodable byte)
        raise SpecError(
            where, f"is not UTF-8 text: character {error.start} is {short_repr(text[error.start])}"
        ) from None


_TOO_DEEP = f"the document nests too deeply to read (a spec nests at most {MAX_DEPTH} layers)"
_ONCE = "an object names each key once (which one was meant?)"


def _data_children(value: Any) -> Iterable[tuple[Any, Any]]:
    if isinstance(value, dict):
        return value.items()
    return enumerate(value) if isinstance(value, list) else ()


def _json_int(digits: str, where: str) -> int:
    """A JSON integer, bounded: its text measured before it is converted, its value after."""
    count = len(digits) - digits.startswith("-")
    if count > MAX_INT_DIGITS:
        raise SpecError(where, f"an integer of {count:,} digits; {INT64_RANGE}")
    value = int(digits)
    problem = int_outside(value)
    if problem is not None:
        raise SpecError(where, problem)
    return value


class _YamlLimit(Exception):
    """YAML text refused (past a limit, a key given twice), at ``where`` (line and
    column, or the place in the document) where known."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


def _construct_int(loader: Any, node: Any) -> int:
    """PyYAML's int constructor, bounded: the text is measured before it is
    converted (Python refuses more than 4,300 decimal digits with a ValueError,
    and a sexagesimal ``1:00:00...`` costs quadratic time), the value after."""
    text = str(node.value)
    where = f"line {node.start_mark.line + 1}, column {node.start_mark.column + 1}"
    digits = text.lstrip("+-").replace("_", "")
    if digits.isascii() and digits.isdigit() and not digits.startswith("0") and len(digits) > MAX_INT_DIGITS:
        raise _YamlLimit(where, f"an integer of {len(digits):,} digits; {INT64_RANGE}")
    if len(text) > _INT_CHARACTERS:
        raise _YamlLimit(where, f"an integer of {len(text):,} characters; {INT64_RANGE}")
    try:
        value: int = loader.construct_yaml_int(node)
    except ValueError:  # more digits than this interpreter's int_max_str_digits
        raise _YamlLimit(where, f"an integer of {len(digits):,} digits; {INT64_RANGE}") from None
    problem = int_outside(value)
    if problem is not None:
        raise _YamlLimit(where, problem)
    return value


def _resolve(loader: Any, kind: Any, value: Any, implicit: Any) -> Any:
    """PyYAML's tag resolution, which composing calls for every node it makes
    without an explicit tag: counted, so that a document of millions of tiny
    values (``[1,1,1,...]``: a few bytes each) stops before it is all in memory."""
    loader.spec_nodes += 1
    if loader.spec_nodes > MAX_SPEC_VALUES:
        raise _YamlLimit("", f"the document holds more than {MAX_SPEC_VALUES:,} values; write a smaller spec")
    return loader.resolve_tag(kind, value, implicit)


_MERGE = "tag:yaml.org,2002:merge"
_TEXT = ("tag:yaml.org,2002:str", "tag:yaml.org,2002:value")
"""Tags of keys that are their text (PyYAML reads the ``=`` key as a string)."""


def _construct_document(loader: Any, node: Any) -> Any:
    """PyYAML's document constructor, keeping the root node for :func:`_check_keys`."""
    loader.spec_root, loader.spec_checked = node, set()
    return loader.construct_spec_document(node)


def _flatten_mapping(loader: Any, node: Any) -> None:
    """PyYAML's merge of ``<<`` keys into a mapping, once per mapping (a merged mapping is
    merged again at each use), after its own keys are checked. A key of the mapping's
    own overrides a merged one: PyYAML keeps the first pair of a key, so a mapping merged
    in that overrides a key it merged itself (``b: {<<: *a, x: 2}``, ``c: {<<: *b}``)
    would give ``c`` the ``x`` of ``a``."""
    if node in loader.spec_checked:
        return
    loader.spec_checked.add(node)
    merges = _check_keys(loader, node)
    loader.flatten_spec_mapping(node)
    if merges:
        node.value = list({_key(loader, pair[0]): pair for pair in node.value}.values())


def _key(loader: Any, key_node: Any) -> Any:
    """What the key ``key_node`` is as a dict key (a node that is not a scalar stands for itself:
    PyYAML refuses it as a key)."""
    import yaml

    if not isinstance(key_node, yaml.ScalarNode):
        return key_node
    return key_node.value if key_node.tag in _TEXT else loader.construct_object(key_node)


def _check_keys(loader: Any, node: Any) -> bool:
    """Refuse a key given twice in the mapping ``node``, as written (keys merged in
    with ``<<`` may be overridden: that is what merging is for); whether it merges."""
    if len({key.value for key, _ in node.value if key.tag in _TEXT}) == len(node.value):
        return False  # every key a string, none twice (most mappings: checked at C speed)
    seen: dict[Any, Any] = {}
    merge = None
    for key_node, _ in node.value:
        if key_node.tag == _MERGE:
            if merge is not None:
                raise _duplicate(
                    loader, node, key_node, merge, "<<", "merge several mappings in one: <<: [*a, *b]"
                )
            merge = key_node
            continue
        key = _key(loader, key_node)
        first = seen.setdefault(key, key_node)
        if first is not key_node:
            raise _duplicate(loader, node, key_node, first, key, _ONCE)
    return merge is not None


def _duplicate(loader: Any, node: Any, key_node: Any, first: Any, key: Any, fix: str) -> _YamlLimit:
    """The error for ``key`` given twice in the mapping ``node``: at its place in the document."""
    import yaml

    def children(value: Any) -> Iterable[tuple[Any, Any]]:
        if isinstance(value, yaml.MappingNode):
            return ((getattr(k, "value", "?"), v) for k, v in value.value)
        return enumerate(value.value) if isinstance(value, yaml.SequenceNode) else ()

    entry = _entry_of(loader.spec_root, node, children)
    place = _path((key_node, entry, key), lambda value: isinstance(value, yaml.MappingNode))
    lines = f"lines {first.start_mark.line + 1} and {key_node.start_mark.line + 1}"
    return _YamlLimit(place, f"the key {key!r} is given twice ({lines}); {fix}")


def _safe_loader(base: Any) -> Any:
    """A subclass of PyYAML's safe loader ``base`` whose integers and node count are
    bounded, and whose mappings name each key once."""
    loader: Any = type(
        f"_Spec{base.__name__}",
        (base,),
        {
            "spec_nodes": 0,
            "resolve": _resolve,
            "resolve_tag": base.resolve,
            "construct_document": _construct_document,
            "construct_spec_document": base.construct_document,
            "flatten_mapping": _flatten_mapping,
            "flatten_spec_mapping": base.flatten_mapping,
        },
    )
    loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
    return loader


@functools.cache
def _pure_yaml_loader() -> Any:
    """The spec loader on PyYAML's pure-Python safe loader."""
    import yaml

    return _safe_loader(yaml.SafeLoader)


@functools.cache
def _yaml_loader() -> Any:
    """The spec loader: on PyYAML's C safe loader (libyaml), about three times
    faster, where PyYAML was built with it; else the pure-Python one. Both
    construct only plain data, with the same constructors."""
    import yaml

    base = getattr(yaml, "CSafeLoader", None)
    return _pure_yaml_loader() if base is None else _safe_loader(base)


def save_spec(model: nn.Module, path: str | Path, *, registry: LayerRegistry | None = None) -> None:
    """Write ``model``'s spec to a ``.json`` or ``.yaml`` file; if writing fails,
    the old file at ``path`` stays as it was.

    :raises OSError: the file could not be written.
    """
    path = Path(path)
    document = to_spec(model, registry=registry)
    if _format(path) == "json":
        text = json.dumps(document, indent=2) + "\n"
    else:
        import yaml

        text = yaml.safe_dump(document, sort_keys=False)
    write_bytes_atomically(path, text.encode("utf-8"))
