"""Specs: layers and models as plain data, and back.

A spec is a JSON-compatible dict::

    {"format_version": 1, "type": "Sequential", "layers": [
        {"type": "Conv2d", "args": {"out_channels": 20, "kernel_size": 5}},
        {"type": "ReLU"}]}

``"type"`` resolves only through the layer registry (case-insensitive, with
aliases); nothing is imported by dotted path or evaluated. YAML files are read
with ``yaml.safe_load``, which refuses Python tags. Every problem raises
:class:`~torchx.core.errors.SpecError` naming its place in the document.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn

from torchx.core.arguments import ArgumentMismatch, coerce, signature_of
from torchx.core.errors import ArgumentError, LayerError, SpecError, TorchXError, short_repr
from torchx.core.layer import Layer, layer_view, record_of
from torchx.core.registry import LayerRegistry
from torchx.core.shapes import InputLike

__all__ = [
    "FORMAT_VERSION",
    "check_spec",
    "SpecProblem",
    "SpecReader",
    "SpecWriter",
    "from_spec",
    "load_spec",
    "parse_spec",
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

_L = TypeVar("_L", bound="Layer")

_PLACEMENT = ("device", "dtype")
"""Constructor arguments that place a layer rather than describe it."""


def _registry(registry: LayerRegistry | None) -> LayerRegistry:
    if registry is not None:
        return registry
    from torchx.core.plugins import current_plugins

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
        return {"type": type_name, **layer_view(layer).spec_fields(child)}  # type: ignore[arg-type]

    def value(self, value: Any, where: str) -> Any:
        """``value`` as JSON data (tuples become lists); refuses anything else."""
        place = f"{self.where}.{where}"
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise SpecError(place, f"{short_repr(value)} is not representable in JSON")
            return value
        if isinstance(value, (list, tuple)):
            return [self.value(item, f"{where}[{index}]") for index, item in enumerate(value)]
        raise SpecError(
            place,
            f"a {type(value).__name__} value ({short_repr(value)}) cannot be written to a spec; "
            "specs hold only numbers, strings, booleans, null and lists",
        )


class SpecReader:
    """Turns spec data into layers; containers call :meth:`layer` for children.

    With an ``errors`` list, reading goes on past a layer entry it cannot
    read (the error is appended, and an identity stand-in takes the layer's
    place), so that one pass finds every unreadable entry. ``places`` maps
    each layer made to where in the document it came from.
    """

    def __init__(
        self,
        registry: LayerRegistry,
        where: str = "$",
        depth: int = 0,
        *,
        errors: list[SpecError] | None = None,
        places: dict[int, str] | None = None,
    ) -> None:
        self.registry = registry
        self.where = where
        self.depth = depth
        self.errors = errors
        self.places = places if places is not None else {}

    def layer(self, data: Any, where: str | None = None) -> Layer:
        """Construct the (child) layer described by ``data``."""
        place = where or self.where
        if self.errors is None:
            return self._layer(data, place)
        try:
            return self._layer(data, place)
        except SpecError as error:
            self.errors.append(error)
            return _Unreadable()

    def _layer(self, data: Any, place: str) -> Layer:
        if self.depth > MAX_DEPTH:
            raise SpecError(place, f"spec nests deeper than {MAX_DEPTH} levels")
        if not isinstance(data, Mapping):
            raise SpecError(place, f"expected a layer object with a 'type', got {_kind(data)}")
        odd_keys = [key for key in data if not isinstance(key, str)]
        if odd_keys:
            raise SpecError(place, f"keys of a layer object are strings, got {_kind(odd_keys[0])}")
        type_name = data.get("type")
        if not isinstance(type_name, str):
            raise SpecError(f"{place}.type", f"expected a layer type name, got {_kind(type_name)}")
        cls = self.registry.resolve(type_name, where=f"{place}.type")
        fields = {key: value for key, value in data.items() if key != "type"}
        child = SpecReader(self.registry, place, self.depth + 1, errors=self.errors, places=self.places)
        layer = cls.from_spec_fields(fields, child)
        self.places[id(layer)] = place
        return layer

    def arguments(self, cls: type[Layer], fields: Mapping[str, Any]) -> dict[str, Any]:
        """Check ``fields`` holds only ``args``, and the args against ``cls.__init__``."""
        extra = sorted(set(fields) - {"args"}, key=str)
        if extra:
            raise SpecError(
                f"{self.where}.{extra[0]}", f"unknown key; a {cls.__name__} spec has only 'type' and 'args'"
            )
        raw = fields.get("args", {})
        if not isinstance(raw, Mapping):
            raise SpecError(f"{self.where}.args", f"expected an object of arguments, got {_kind(raw)}")
        parameters, hints = signature_of(cls)
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
            try:
                arguments[name] = coerce(value, hints.get(name, Any))
            except ArgumentMismatch as error:
                raise SpecError(f"{self.where}.args.{name}", str(error)) from None
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

    def construct(self, cls: type[_L], arguments: Mapping[str, Any]) -> _L:
        """``cls(**arguments)``, with constructor errors reported as SpecErrors."""
        try:
            return cls(**arguments)
        except (TorchXError, ValueError, TypeError, KeyError, OverflowError) as error:
            if isinstance(error, SpecError):
                raise
            name = cls.__name__
            message = str(error) if str(error).startswith(f"{name}:") else f"{name}: {error}"
            argument = error.argument if isinstance(error, ArgumentError) else None
            place = f"{self.where}.args" if argument is None else f"{self.where}.args.{argument}"
            raise SpecError(place, message) from error


class _Unreadable(Layer):
    """Stands where a spec entry could not be read, so that reading the rest
    goes on (``check_spec`` reports every unreadable entry). Passes its input through."""

    def forward(self, *inputs: Any) -> Any:
        return inputs[0] if inputs else None


def _kind(value: Any) -> str:
    return "null" if value is None else f"{type(value).__name__} {short_repr(value)}"


def _count_layers(data: Any, seen: dict[int, int], depth: int) -> int:
    """How many layer objects ``data`` describes, counting shared (YAML alias)
    subtrees once per use but visiting each only once; stops past the limits."""
    if depth > 2 * MAX_DEPTH or not isinstance(data, (Mapping, list)):
        return 0
    known = seen.get(id(data))
    if known is not None:
        return known
    values = data.values() if isinstance(data, Mapping) else data
    count = int(isinstance(data, Mapping) and "type" in data)
    for value in values:
        count += _count_layers(value, seen, depth + 1)
        if count > MAX_LAYERS:
            break
    seen[id(data)] = count
    return count


def to_spec(layer: nn.Module, *, registry: LayerRegistry | None = None) -> dict[str, Any]:
    """``layer`` (a TorchX layer or model, built or not) as a spec document (with ``format_version``)."""
    document = SpecWriter(_registry(registry)).layer(layer)
    return {"format_version": FORMAT_VERSION, **document}


def from_spec(
    spec: Mapping[str, Any],
    *,
    registry: LayerRegistry | None = None,
    expect: type[_L] | None = None,
) -> _L:
    """Construct the (unbuilt) layer or model that ``spec`` describes."""
    if not isinstance(spec, Mapping):
        raise SpecError("$", f"a spec is an object with a 'type', got {_kind(spec)}")
    _check_version(spec)
    return _read(spec, SpecReader(_registry(registry)), expect)


def _check_version(spec: Mapping[str, Any]) -> None:
    version = spec.get("format_version", FORMAT_VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise SpecError("$.format_version", f"expected a positive integer, got {_kind(version)}")
    if version > FORMAT_VERSION:
        raise SpecError(
            "$.format_version",
            f"this spec has format version {version}, newer than the {FORMAT_VERSION} "
            "this TorchX reads; upgrade torchx-core",
        )


def _read(spec: Mapping[str, Any], reader: SpecReader, expect: type[_L] | None) -> _L:
    body = {key: value for key, value in spec.items() if key != "format_version"}
    if _count_layers(body, {}, 0) > MAX_LAYERS:
        raise SpecError("$", f"spec describes more than {MAX_LAYERS} layers")
    layer = reader.layer(body)
    if expect is not None and not isinstance(layer, expect):
        raise SpecError("$.type", f"expected a {expect.__name__} spec, got {type(layer).__name__}")
    return layer  # type: ignore[return-value]


@dataclass(frozen=True)
class SpecProblem:
    """One problem :func:`check_spec` found: where in the document, and what."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def check_spec(
    spec: Any, *inputs: InputLike, dtype: torch.dtype | None = None, registry: LayerRegistry | None = None
) -> list[SpecProblem]:
    """Every problem of ``spec``, without allocating any weights.

    Every layer entry that cannot be read is reported (not only the first);
    when all can be and ``inputs`` are given, the model is built for them on
    the meta device, and a shape error is reported at the failing layer's
    place in the document. An empty list means the spec is sound.
    """
    from torchx.core.build import build

    errors: list[SpecError] = []
    reader = SpecReader(_registry(registry), errors=errors)
    try:
        if not isinstance(spec, Mapping):
            raise SpecError("$", f"a spec is an object with a 'type', got {_kind(spec)}")
        _check_version(spec)
        model: Layer | None = _read(spec, reader, None)
    except SpecError as error:
        errors.append(error)
        model = None
    problems = [SpecProblem(error.where, error.problem) for error in errors]
    if problems or model is None or not inputs:
        return problems
    try:
        build(model, *inputs, device="meta", dtype=dtype)
    except LayerError as error:
        problems.append(SpecProblem(reader.places.get(id(error.origin), "$"), str(error)))
    return problems


def _format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".json":
        return "json"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    raise SpecError(str(path), "spec files end in .json, .yaml or .yml")


def load_spec(path: str | Path, *, registry: LayerRegistry | None = None) -> Layer:
    """Read a ``.json``/``.yaml`` spec file and construct its (unbuilt) model."""
    path = Path(path)
    kind = _format(path)
    data = parse_spec(path.read_text(encoding="utf-8"), kind, where=str(path))
    return from_spec(data, registry=registry)


def parse_spec(text: str, kind: str = "yaml", *, where: str = "<spec>") -> Any:
    """The spec document in ``text``: ``kind`` is ``"json"`` or ``"yaml"`` (which
    also reads JSON). YAML is read with ``yaml.safe_load``: plain data only."""
    if kind == "json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise SpecError(where, f"invalid JSON: {error}") from None
        except RecursionError:
            raise SpecError(where, _TOO_DEEP) from None
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise SpecError(where, f"invalid or unsafe YAML (only plain data is read): {error}") from None
    except RecursionError:
        raise SpecError(where, _TOO_DEEP) from None


_TOO_DEEP = f"the document nests too deeply to read (a spec nests at most {MAX_DEPTH} layers)"


def save_spec(model: nn.Module, path: str | Path, *, registry: LayerRegistry | None = None) -> None:
    """Write ``model``'s spec to a ``.json`` or ``.yaml`` file."""
    path = Path(path)
    document = to_spec(model, registry=registry)
    if _format(path) == "json":
        path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        return
    import yaml

    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
