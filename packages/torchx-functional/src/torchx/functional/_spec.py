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
from torchx.functional._ops import function_named, is_spec_method, name_of_function
from torchx.functional._placeholder import BatchSize, DeviceOf, Placeholder
from torchx.functional._program import BatchOf, DeviceVar, IdentifierForms, Input, Var, normal_form
from torchx.functional._tree import leaves_of
from torchx.plugin import (
    SpecReader,
    SpecWriter,
    TaggedReader,
    TaggedValues,
    dtype_name,
    dtype_named,
    short_repr,
)

if TYPE_CHECKING:
    from torchx.functional._functional import Functional

__all__ = ["as_spec_error", "program_from_spec", "program_to_spec"]


class _GraphValues(TaggedValues):
    """A graph's values as spec data: :class:`TaggedValues`, and references
    to its inputs and nodes by their names in the spec."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = names
        """The inputs' names, by the variables that hold them."""

    def other(self, value: Any, where: str) -> Any:
        if isinstance(value, Var):
            return {"node": self.names.get(value.name, value.name)}
        if isinstance(value, BatchOf):
            return {"batch_of": self.names.get(value.name, value.name)}
        if isinstance(value, DeviceVar):
            return {"device_of": self.names.get(value.name, value.name)}
        if isinstance(value, Input):
            return {"input": value.name, "shape": list(value.shape), "dtype": dtype_name(value.dtype)}
        return super().other(value, where)


def program_to_spec(model: Functional, writer: SpecWriter) -> dict[str, Any]:
    """The spec fields of ``model``: inputs, modules, nodes, outputs."""
    program = model._torchx_program
    where = writer.where
    encode = _GraphValues({variable: name for name, variable in program.variables.items()}).fold
    paths = dict.fromkeys(step.target for step in program.steps if step.kind in ("module", "parameter"))
    modules = {path: writer.layer(program.layer_at(model, path), f"{where}.modules.{path}") for path in paths}
    nodes = []
    for index, step in enumerate(program.steps):
        place = f"{where}.nodes[{index}]"
        node: dict[str, Any] = {"name": step.var}
        if step.kind in ("module", "parameter"):  # an L.Parameter is a layer of the spec like any other
            node["module"] = step.target
        elif step.kind == "method":
            if not is_spec_method(step.target):
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
                    f"node {step.var!r} calls {shown}, which specs cannot name (they name the functions "
                    "of torch, torch.nn.functional, torch.linalg, torch.special, torch.fft and torch.Tensor "
                    "that a graph records)",
                )
            node["op"] = name
        node["args"] = [encode(arg, f"{place}.args[{i}]") for i, arg in enumerate(step.args)]
        if step.kwargs:
            node["kwargs"] = {key: encode(item, f"{place}.kwargs.{key}") for key, item in step.kwargs.items()}
        nodes.append(node)
    return {
        "inputs": encode(program.inputs, f"{where}.inputs"),
        "modules": modules,
        "nodes": nodes,
        "outputs": encode(program.outputs, f"{where}.outputs"),
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


class _Replay(TaggedReader):
    """Decodes spec values, replaying nodes on placeholders."""

    tags_shown = ("node", *TaggedReader.tags_shown)

    def __init__(self, reader: SpecReader) -> None:
        self.reader = reader
        self.env: dict[str, Any] = {}
        self.names = _Names()  # of inputs and nodes, which share ``env``

    def reference(self, tag: Any, content: Any, where: str) -> Any:
        """The node (``{"node": name}``), its batch size (``{"batch_of": name}``) or
        its device (``{"device_of": name}``) a value refers to."""
        if tag not in ("node", "batch_of", "device_of"):
            return super().reference(tag, content, where)
        if content not in self.env:
            raise SpecError(
                where,
                f"refers to node {short_repr(content)}, which is not defined before it (a dangling edge)",
            )
        found = self.env[content]
        if tag != "node" and not isinstance(found, Placeholder):
            raise SpecError(where, f"{tag} needs a tensor node, {short_repr(content)} is not one")
        if tag == "batch_of":
            return BatchSize(found.node)
        if tag == "device_of":
            return DeviceOf(found.node)
        return found

    def inputs(self, value: Any, where: str) -> Any:
        if isinstance(value, Mapping) and "input" in value:
            name, shape = value.get("input"), value.get("shape")
            dtype = dtype_named(value.get("dtype", "float32"))
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
            container = self.read_container(tag, content, where, self.inputs)
            if container is not None:
                return container
        raise SpecError(where, "expected an input, or a list/tuple/dict of inputs")


def program_from_spec(fields: Mapping[str, Any], reader: SpecReader) -> tuple[Any, Any]:
    """Replay a Functional spec on placeholders; returns (inputs, outputs)."""
    where = reader.where
    reader.check_keys(
        fields,
        ("inputs", "modules", "nodes", "outputs"),
        "a Functional spec has inputs, modules, nodes, outputs",
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
            call_args = tuple(replay.read(arg, f"{place}.args[{i}]") for i, arg in enumerate(args))
            call_kwargs = {
                str(key): replay.read(item, f"{place}.kwargs.{key}") for key, item in kwargs.items()
            }
            replay.env[node["name"]] = _call(node, modules, call_args, call_kwargs, place)
    with as_spec_error(f"{where}.outputs"):
        outputs = replay.read(fields.get("outputs"), f"{where}.outputs")
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
        if not is_spec_method(method) or not args or not isinstance(args[0], Placeholder):
            raise SpecError(
                f"{place}.method",
                f"unknown tensor method {short_repr(method)} (a public method of torch.Tensor), "
                "or no tensor to call it on",
            )
        return getattr(args[0], method)(*args[1:], **kwargs)
    function = function_named(node.get("op"))
    if function is None:
        raise SpecError(
            f"{place}.op",
            f"unknown operation {short_repr(node.get('op'))}; an op is a function a graph records, named "
            "in torch, F (torch.nn.functional), torch.linalg, torch.special, torch.fft or torch.Tensor "
            '("F.layer_norm"), or an operator ("operator.add")',
        )
    if all(isinstance(leaf, _DATA) for leaf in leaves_of((args, kwargs))):
        raise SpecError(
            place,
            f"{node['op']} is called on data alone; a node's op takes a value of the graph (a node, "
            "an input, a size), so that reading a spec records it rather than runs it",
        )
    return function(*args, **kwargs)


_DATA = (type(None), bool, int, float, str, type(Ellipsis), torch.dtype)
"""The leaves of a spec value that are data rather than values of the graph."""
