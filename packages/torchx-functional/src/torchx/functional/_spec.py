"""Functional specs: inputs, modules (layer specs), nodes and outputs as data.

Writing refuses, with a SpecError naming the node, any module that is not a
TorchX layer and any operation outside the op tables. Reading replays the
nodes on placeholders, so a loaded graph is checked exactly like a written one.

Names in a spec (inputs, nodes, modules) only label values: the generated code
chooses its own identifiers. Two names of one kind that Python would read as
one identifier (``x`` and a fullwidth ``x``, NFKC) are refused all the same, naming both:
a reader could not tell them apart, nor a keyword call the two inputs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import torch

from torchx.core import SpecError
from torchx.core.dtypes import dtype_name, dtype_named
from torchx.core.errors import short_repr
from torchx.core.specs import SpecReader, SpecWriter
from torchx.functional._ops import METHODS, function_named, name_of_function
from torchx.functional._placeholder import BatchSize, Placeholder
from torchx.functional._program import BatchOf, IdentifierForms, Input, Var, normal_form

if TYPE_CHECKING:
    from torchx.functional._functional import Functional

__all__ = ["as_spec_error", "program_from_spec", "program_to_spec"]


def _encode(value: Any, where: str, writer: SpecWriter, names: Mapping[str, str]) -> Any:
    """``value`` as spec data; ``names`` maps the variables of inputs to the
    inputs' names (the names a spec refers to them by)."""
    if isinstance(value, Var):
        return {"node": names.get(value.name, value.name)}
    if isinstance(value, BatchOf):
        return {"batch_of": names.get(value.name, value.name)}
    if isinstance(value, Input):
        return {
            "input": value.name,
            "shape": list(value.shape),
            "dtype": dtype_name(value.dtype),
        }
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, slice):
        parts = (value.start, value.stop, value.step)
        return {"slice": [_encode(part, where, writer, names) for part in parts]}
    if value is Ellipsis:
        return {"ellipsis": True}
    if isinstance(value, tuple):
        return {"tuple": [_encode(item, where, writer, names) for item in value]}
    if isinstance(value, list):
        return {"list": [_encode(item, where, writer, names) for item in value]}
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):  # str(key) would give back another key
                raise SpecError(where, f"dict keys in a spec are strings, got {short_repr(key)}")
        return {"dict": {key: _encode(item, where, writer, names) for key, item in value.items()}}
    return writer.value(value, where)


def program_to_spec(model: Functional, writer: SpecWriter) -> dict[str, Any]:
    """The spec fields of ``model``: inputs, modules, nodes, outputs."""
    program = model._torchx_program
    where = writer.where
    names = {variable: name for name, variable in program.variables.items()}
    paths = dict.fromkeys(step.target for step in program.steps if step.kind in ("module", "parameter"))
    modules = {path: writer.layer(program.layer_at(model, path), f"{where}.modules.{path}") for path in paths}
    nodes = []
    for index, step in enumerate(program.steps):
        place = f"{where}.nodes[{index}]"
        node: dict[str, Any] = {"name": step.var}
        if step.kind in ("module", "parameter"):  # an L.Parameter is a layer of the spec like any other
            node["module"] = step.target
        elif step.kind == "method":
            if step.target not in METHODS:
                raise SpecError(
                    place, f"node {step.var!r} calls Tensor.{step.target}, which specs cannot name"
                )
            node["method"] = step.target
        else:
            name = name_of_function(step.target)
            if name is None:
                shown = getattr(step.target, "__qualname__", repr(step.target))
                raise SpecError(
                    place,
                    f"node {step.var!r} calls {shown}, which is not in the op registry; specs cannot name it",
                )
            node["op"] = name
        node["args"] = [_encode(arg, place, writer, names) for arg in step.args]
        if step.kwargs:
            node["kwargs"] = {key: _encode(item, place, writer, names) for key, item in step.kwargs.items()}
        nodes.append(node)
    return {
        "inputs": _encode(program.inputs, f"{where}.inputs", writer, names),
        "modules": modules,
        "nodes": nodes,
        "outputs": _encode(program.outputs, f"{where}.outputs", writer, names),
    }


class _Names:
    """The names of one kind read so far, by the identifier Python reads them as."""

    def __init__(self) -> None:
        self._forms = IdentifierForms()

    def add(self, name: str, where: str) -> None:
        """Take ``name``; refuse it if an earlier name is the same identifier (NFKC)."""
        earlier = self._forms.add(name)
        if earlier is not None and earlier != name:
            raise SpecError(
                where,
                f"{short_repr(earlier)} and {short_repr(name)} are the same Python identifier after Unicode "
                f"normalisation (NFKC: {short_repr(normal_form(name))}); rename one",
            )


class _Replay:
    """Decodes spec values, replaying nodes on placeholders."""

    def __init__(self, reader: SpecReader) -> None:
        self.reader = reader
        self.env: dict[str, Any] = {}
        self.names = _Names()  # of inputs and nodes, which share ``env``

    def decode(self, value: Any, where: str) -> Any:
        if not isinstance(value, Mapping):
            if isinstance(value, list):
                raise SpecError(where, 'lists are written as {"list": [...]}')
            return value
        if len(value) != 1:
            raise SpecError(
                where,
                f"expected one tag (node, list, tuple, dict, slice, dtype...), got {sorted(value, key=str)}",
            )
        ((tag, content),) = value.items()
        if tag in ("node", "batch_of"):
            if content not in self.env:
                raise SpecError(
                    where,
                    f"refers to node {short_repr(content)}, which is not defined before it (a dangling edge)",
                )
            found = self.env[content]
            if tag == "batch_of":
                if not isinstance(found, Placeholder):
                    raise SpecError(where, f"batch_of needs a tensor node, {short_repr(content)} is not one")
                return BatchSize(found.node)
            return found
        if tag in ("list", "tuple") and isinstance(content, list):
            items = [self.decode(item, f"{where}[{i}]") for i, item in enumerate(content)]
            return items if tag == "list" else tuple(items)
        if tag == "dict" and isinstance(content, Mapping):
            return {key: self.decode(item, f"{where}.{key}") for key, item in content.items()}
        if tag == "slice" and isinstance(content, list) and len(content) == 3:
            return slice(*(self.decode(part, where) for part in content))
        if tag == "ellipsis":
            return Ellipsis
        dtype = dtype_named(content) if tag == "dtype" else None
        if dtype is not None:
            return dtype
        raise SpecError(where, f"unknown value tag {short_repr(tag)} or malformed content")

    def inputs(self, value: Any, where: str) -> Any:
        if isinstance(value, Mapping) and "input" in value:
            name, shape, dtype = (
                value.get("input"),
                value.get("shape"),
                dtype_named(value.get("dtype", "float32")),
            )
            if not isinstance(name, str) or not isinstance(shape, list) or dtype is None:
                raise SpecError(where, 'an input is {"input": name, "shape": [...], "dtype": "float32"}')
            if name in self.env:
                raise SpecError(where, f"two inputs are named {short_repr(name)}")
            self.names.add(name, where)
            try:
                placeholder = Placeholder(shape, dtype=dtype, name=name)
            except Exception as error:  # noqa: BLE001 - report as a spec problem
                raise SpecError(where, str(error)) from None
            self.env[name] = placeholder
            return placeholder
        if isinstance(value, Mapping) and len(value) == 1:
            ((tag, content),) = value.items()
            if tag in ("list", "tuple") and isinstance(content, list):
                items = [self.inputs(item, f"{where}[{i}]") for i, item in enumerate(content)]
                return items if tag == "list" else tuple(items)
            if tag == "dict" and isinstance(content, Mapping):
                return {key: self.inputs(item, f"{where}.{key}") for key, item in content.items()}
        raise SpecError(where, "expected an input, or a list/tuple/dict of inputs")


def program_from_spec(fields: Mapping[str, Any], reader: SpecReader) -> tuple[Any, Any]:
    """Replay a Functional spec on placeholders; returns (inputs, outputs)."""
    where = reader.where
    extra = sorted(set(fields) - {"inputs", "modules", "nodes", "outputs"}, key=str)
    if extra:
        raise SpecError(
            f"{where}.{extra[0]}", "unknown key; a Functional spec has inputs, modules, nodes, outputs"
        )
    replay = _Replay(reader)
    inputs = replay.inputs(fields.get("inputs"), f"{where}.inputs")
    raw_modules = fields.get("modules", {})
    if not isinstance(raw_modules, Mapping):
        raise SpecError(f"{where}.modules", "expected an object of named layer specs")
    module_names = _Names()
    for name in raw_modules:
        module_names.add(str(name), f"{where}.modules.{name}")
    modules = {name: reader.layer(spec, f"{where}.modules.{name}") for name, spec in raw_modules.items()}
    nodes = fields.get("nodes")
    if not isinstance(nodes, list):
        raise SpecError(f"{where}.nodes", "expected a list of nodes")
    for index, node in enumerate(nodes):
        place = f"{where}.nodes[{index}]"
        if not isinstance(node, Mapping) or not isinstance(node.get("name"), str):
            raise SpecError(place, "a node is an object with a 'name'")
        args = node.get("args", [])
        kwargs = node.get("kwargs", {})
        if not isinstance(args, list) or not isinstance(kwargs, Mapping):
            raise SpecError(place, "'args' is a list and 'kwargs' an object")
        unknown = sorted(set(node) - {"name", "module", "op", "method", "args", "kwargs"}, key=str)
        kinds = [key for key in ("module", "op", "method") if key in node]
        if unknown or len(kinds) != 1:
            raise SpecError(place, "a node has a name, exactly one of module/op/method, and args/kwargs")
        if node["name"] in replay.env:
            raise SpecError(f"{place}.name", f"node name {short_repr(node['name'])} is already taken")
        replay.names.add(node["name"], f"{place}.name")
        with as_spec_error(place):
            call_args = tuple(replay.decode(arg, f"{place}.args[{i}]") for i, arg in enumerate(args))
            call_kwargs = {
                str(key): replay.decode(item, f"{place}.kwargs.{key}") for key, item in kwargs.items()
            }
            replay.env[node["name"]] = _call(node, modules, call_args, call_kwargs, place)
    with as_spec_error(f"{where}.outputs"):
        outputs = replay.decode(fields.get("outputs"), f"{where}.outputs")
    return inputs, outputs


@contextmanager
def as_spec_error(place: str) -> Iterator[None]:
    """Report anything a replayed node raises as a SpecError at its place in the spec."""
    try:
        yield
    except SpecError:
        raise
    except Exception as error:
        raise SpecError(place, f"{type(error).__name__}: {error}") from error


def _call(
    node: Mapping[str, Any],
    modules: Mapping[str, Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    place: str,
) -> Any:
    if "module" in node:
        module = modules.get(node["module"])
        if module is None:
            raise SpecError(
                f"{place}.module",
                f"unknown module {short_repr(node['module'])}; modules are {sorted(modules)}",
            )
        return module(*args, **kwargs)
    if "method" in node:
        method = node["method"]
        if method not in METHODS or not args or not isinstance(args[0], Placeholder):
            raise SpecError(
                f"{place}.method", f"unknown tensor method {short_repr(method)}, or no tensor to call it on"
            )
        return getattr(args[0], method)(*args[1:], **kwargs)
    function = function_named(node.get("op", ""))
    if function is None:
        raise SpecError(
            f"{place}.op",
            f"unknown operation {short_repr(node.get('op'))}; ops come only from the op registry",
        )
    return function(*args, **kwargs)
