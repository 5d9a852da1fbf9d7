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
from torchx.functional._dims import Dim
from torchx.functional._ops import function_named, is_spec_method, name_of_function
from torchx.functional._placeholder import (
    AttributeOf,
    BatchSize,
    Buffer,
    ByMode,
    Placeholder,
    tensor_placeholder,
)
from torchx.functional._program import AttributeVar, BatchOf, IdentifierForms, Input, Var, normal_form
from torchx.functional._tree import leaves_of
from torchx.plugin import (
    SpecReader,
    SpecWriter,
    TaggedReader,
    TaggedValues,
    dtype_name,
    dtype_named,
    layer_name,
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
        if isinstance(value, AttributeVar):
            return {f"{value.attribute}_of": self.names.get(value.name, value.name)}
        if isinstance(value, ByMode):
            return {"by_mode": [self.fold(value.training, where), self.fold(value.evaluating, where)]}
        if isinstance(value, Input):
            shape = [size if dim is None else dim.to_spec() for size, dim in value.each_dim()]
            return {"input": value.name, "shape": shape, "dtype": dtype_name(value.dtype)}
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
        elif step.kind == "attribute" and step.target in program.constants:
            node["constant"] = _constant_to_spec(model, step.target, program.constants[step.target], place)
        elif step.kind == "attribute":
            node["attribute"] = step.target
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
        if step.kind == "attribute":
            nodes.append(node)
            continue
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


MAX_CONSTANT_VALUES = 1_000_000
"""Most values a constant of a graph may have to be written to a spec (a spec
holds at most :data:`~torchx.core.MAX_SPEC_VALUES` values in all)."""

_CONSTANT_KEYS = ("buffer", "persistent", "dtype", "shape", "values")


def _constant_to_spec(model: Functional, path: str, persistent: bool, place: str) -> dict[str, Any]:
    """The constant held at ``path`` as spec data: its buffer's name and
    persistence, dtype, shape and values (flat, in order; ``{"float": "inf"}``
    for the floats JSON has no literal for)."""
    tensor = model.get_buffer(path)
    if tensor.is_complex() or tensor.numel() > MAX_CONSTANT_VALUES:
        raise SpecError(
            f"{place}.constant",
            f"the constant {path!r} {tuple(tensor.shape)} {tensor.dtype} cannot be written to a spec "
            f"(at most {MAX_CONSTANT_VALUES:,} real values); hold it in a layer, as a parameter or "
            "persistent buffer that a checkpoint carries",
        )
    values = TaggedValues()
    return {
        "buffer": path,
        "persistent": persistent,
        "dtype": dtype_name(tensor.dtype),
        "shape": list(tensor.shape),
        "values": [values.atom(value, place) for value in tensor.detach().cpu().flatten().tolist()],
    }


def _constant_from_spec(data: Any, replay: _Replay, place: str) -> Placeholder:
    """The constant a spec's ``constant`` entry describes, as a :class:`Buffer`."""
    if not isinstance(data, Mapping) or sorted(data, key=str) != sorted(_CONSTANT_KEYS):
        raise SpecError(place, f"a constant has {', '.join(_CONSTANT_KEYS)}")
    dtype, shape, values = dtype_named(data["dtype"]), data["shape"], data["values"]
    if (
        dtype is None
        or not isinstance(shape, list)
        or not isinstance(values, list)
        or _values_held(shape) != len(values)
    ):
        raise SpecError(
            place, "a constant has a known dtype, a shape of sizes and as many values as the shape holds"
        )
    numbers = [replay.read(value, f"{place}.values[{index}]") for index, value in enumerate(values)]
    tensor = torch.tensor(numbers, dtype=dtype).reshape(shape)
    return Buffer(tensor, persistent=data["persistent"] is True, name=str(data["buffer"]))


def _values_held(shape: list[Any]) -> int | None:
    """How many values a constant of ``shape`` holds, or None if ``shape`` is not a list
    of sizes (ints >= 0); past MAX_CONSTANT_VALUES, some number larger than that.

    Each size is checked before it is multiplied, and the product stops once it passes
    MAX_CONSTANT_VALUES, so it never grows past an int64 times that bound: a shape of
    thousands of huge sizes costs one pass, not a product thousands of words long."""
    if not all(isinstance(size, int) and not isinstance(size, bool) and size >= 0 for size in shape):
        return None
    if 0 in shape:
        return 0
    held = 1
    for size in shape:
        held *= size
        if held > MAX_CONSTANT_VALUES:
            break
    return held


class _ModulePaths:
    """The modules of a spec by the dotted parts of their names, so that finding the
    module a path reads (``blocks.attn.weight``: the longest name it starts with) costs
    time linear in the path, whatever the number of modules."""

    _HERE = None
    """The key, in a part's entry, of the module whose name ends there (every part is a string)."""

    def __init__(self, modules: Mapping[Any, Any]) -> None:
        self.modules = modules
        self._parts: dict[Any, Any] = {}
        for key in modules:
            entry = self._parts
            for part in str(key).split("."):
                entry = entry.setdefault(part, {})
            entry[self._HERE] = key

    def find(self, parts: list[str]) -> tuple[Any, int] | None:
        """The module key that is the longest proper prefix of the path ``parts``,
        and how many parts it takes; None when none is."""
        found = None
        entry = self._parts
        for taken, part in enumerate(parts[:-1], start=1):
            if part not in entry:
                break
            entry = entry[part]
            if self._HERE in entry:
                found = (entry[self._HERE], taken)
        return found

    def names(self) -> str:
        """The modules' names, for a message (the first few)."""
        return short_repr(sorted(map(str, self.modules)))


def _attribute_from_spec(path: Any, modules: _ModulePaths, place: str) -> Placeholder:
    """A read of the parameter or buffer at ``path`` (``wte.weight``) of one of ``modules``.

    The path is walked part by part through the module's own tables of child modules,
    parameters and buffers (never an attribute lookup of a name the spec gives), so
    each read costs time linear in its path."""
    parts = path.split(".") if isinstance(path, str) else []
    found = modules.find(parts)
    if found is None:
        raise SpecError(
            place, f"{short_repr(path)} is no parameter or buffer of the modules {modules.names()}"
        )
    key, taken = found
    module = modules.modules[key]
    owner: Any = module
    for part in parts[taken:-1]:
        owner = _table(owner, "_modules").get(part)
        if owner is None:
            break
    last = parts[-1]
    tensor = None
    if owner is not None:
        tensor = _table(owner, "_parameters").get(last)
        if tensor is None:
            tensor = _table(owner, "_buffers").get(last)
    if not isinstance(tensor, torch.Tensor):
        name = ".".join(parts[taken:])
        raise SpecError(
            place, f"{layer_name(module)} {short_repr(key)} has no parameter or buffer {short_repr(name)}"
        )
    return tensor_placeholder(tensor, f"node reading {path}")


def _table(module: Any, table: str) -> Mapping[str, Any]:
    """``module``'s own table of child modules, parameters or buffers (empty for a value that is no module)."""
    found = vars(module).get(table) if isinstance(module, torch.nn.Module) else None
    return found if isinstance(found, Mapping) else {}


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


def _dim(entry: Any, where: str) -> Any:
    """A dim of an input's shape: an int, null, or a named dim ``{"dim": "T", "max": 64}``."""
    if not isinstance(entry, Mapping):
        return entry  # an int or None: Placeholder checks it
    if not isinstance(entry.get("dim"), str) or not set(entry) <= {"dim", "min", "max"}:
        raise SpecError(where, 'a named dim is {"dim": name, "min": int, "max": int} (min and max optional)')
    return Dim(entry["dim"], min=entry.get("min", 1), max=entry.get("max"))


def _by_mode(content: Any, where: str) -> ByMode:
    """``{"by_mode": [in training, in eval]}``: two bools or two numbers."""
    if (
        isinstance(content, list)
        and len(content) == 2
        and all(type(value) in (bool, int, float) for value in content)
        and (type(content[0]) is bool) == (type(content[1]) is bool)
    ):
        return ByMode(*content)
    raise SpecError(where, "by_mode is [value in training, value in eval]: two bools or two numbers")


class _Replay(TaggedReader):
    """Decodes spec values, replaying nodes on placeholders."""

    tags_shown = ("node", "by_mode", *TaggedReader.tags_shown)

    def __init__(self, reader: SpecReader) -> None:
        self.reader = reader
        self.env: dict[str, Any] = {}
        self.names = _Names()  # of inputs and nodes, which share ``env``

    def reference(self, tag: Any, content: Any, where: str) -> Any:
        """The node (``{"node": name}``), its batch size (``{"batch_of": name}``),
        its device (``{"device_of": name}``) or its dtype (``{"dtype_of": name}``)
        a value refers to, or a value by mode (``{"by_mode": [0.1, 0.0]}``)."""
        if tag == "by_mode":
            return _by_mode(content, where)
        if tag not in ("node", "batch_of", "device_of", "dtype_of"):
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
        if tag in ("device_of", "dtype_of"):
            return AttributeOf(found.node, "device" if tag == "device_of" else "dtype")
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
                placeholder = Placeholder([_dim(size, where) for size in shape], dtype=dtype, name=name)
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
    paths = _ModulePaths(modules)
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
        unknown = sorted(set(node) - {"name", *_NODE_KINDS, "args", "kwargs"}, key=str)
        kinds = [key for key in _NODE_KINDS if key in node]
        if unknown or len(kinds) != 1:
            raise SpecError(
                place, f"a node has a name, exactly one of {'/'.join(_NODE_KINDS)}, and args/kwargs"
            )
        if node["name"] in replay.env:
            raise SpecError(f"{place}.name", f"node name {short_repr(node['name'])} is already taken")
        replay.names.add(node["name"], f"{place}.name")
        with as_spec_error(place):
            call_args = tuple(replay.read(arg, f"{place}.args[{i}]") for i, arg in enumerate(args))
            call_kwargs = {
                str(key): replay.read(item, f"{place}.kwargs.{key}") for key, item in kwargs.items()
            }
            replay.env[node["name"]] = _call(node, paths, call_args, call_kwargs, place, replay)
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
    paths: _ModulePaths,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    place: str,
    replay: _Replay,
) -> Any:
    if "constant" in node:
        return _constant_from_spec(node["constant"], replay, f"{place}.constant")
    if "attribute" in node:
        return _attribute_from_spec(node["attribute"], paths, f"{place}.attribute")
    modules = paths.modules
    if "module" in node:
        module = modules.get(node["module"])
        if module is None:
            raise SpecError(
                f"{place}.module",
                f"unknown module {short_repr(node['module'])}; modules are {paths.names()}",
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
            f"unknown operation {short_repr(node.get('op'))}; an op is a function on the allow-list of "
            "the operations a graph records (torchx.functional._allow_list), named in torch, F (torch.nn.functional), torch.linalg, torch.special, torch.fft or torch.Tensor "
            '("F.layer_norm"), or an operator ("operator.add")',
        )
    if all(isinstance(leaf, _DATA) for leaf in leaves_of((args, kwargs))):
        raise SpecError(
            place,
            f"{node['op']} is called on data alone; a node's op takes a value of the graph (a node, "
            "an input, a size), so that reading a spec records it rather than runs it",
        )
    return function(*args, **kwargs)


_NODE_KINDS = ("module", "op", "method", "attribute", "constant")
"""What a node of a spec does: call a layer, a function or a tensor method, or
read a tensor the model holds (a layer's parameter or buffer, or a constant)."""

_DATA = (type(None), bool, int, float, str, type(Ellipsis), torch.dtype)
"""The leaves of a spec value that are data rather than values of the graph."""
