"""From placeholders to a program: the steps a Functional runs, in order, with names.

Tracing walks back from the outputs (iteratively: no recursion limit) and stops
at the given inputs, so intermediate placeholders can be inputs (sub-graphs)
and branches no output needs are left out. Every node gets a readable,
deterministic variable name; every module a readable attribute name
(``conv2d``, ``conv2d_1``); a module called at several nodes is one attribute.

Names never change what the program computes. Python reads an identifier in
its NFKC form (``relu`` in fullwidth letters is ``relu``), so every variable and attribute the
generator writes is an NFKC identifier, unique in that form, and neither a
keyword nor a name the generated code itself uses (``self``, ``torch``...): the
variables are claimed from the namespace the code generator made, which holds
its own names first, and which it then claims its constants from.
An input's name is the user's (a keyword, a dict key: any string); its
variable is the generator's, the name itself wherever Python would read it
unchanged. Two input names Python reads as one identifier are refused.
"""

from __future__ import annotations

import functools
import keyword
import operator
import re
import unicodedata
import warnings
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import torch
from torch import nn

import torchx.layers as L
from torchx.core import BuildWarning, TorchXError
from torchx.functional._dims import Dim
from torchx.functional._placeholder import _ATOMS, AttributeOf, BatchSize, Node, Placeholder
from torchx.functional._tree import leaves_of, map_leaves
from torchx.plugin import Layer, format_shape, given_name, layer_name, layer_view, record_of, short_repr

__all__ = [
    "BatchOf",
    "AttributeVar",
    "IdentifierForms",
    "Input",
    "Namespace",
    "Parameter",
    "Program",
    "Step",
    "Var",
    "as_identifier",
    "normal_form",
    "trace",
]


@dataclass(frozen=True)
class Var:
    """A reference to a variable of the generated forward."""

    name: str


@dataclass(frozen=True)
class BatchOf:
    """The run-time batch size (dim 0) of a variable."""

    name: str


@dataclass(frozen=True)
class AttributeVar:
    """The run-time ``dtype`` or ``device`` of a variable (``t.to(x.dtype)``, a factory's ``device=``)."""

    name: str
    attribute: str


@dataclass(frozen=True)
class Input:
    """One input of the model: its parameter name, shape (``None``: dynamic),
    dtype and named dims (a :class:`~torchx.functional.Dim` or None per dim; empty if none is named).

    The name is what callers pass the input by (a keyword, a dict key) and may
    be any string; the generated forward holds it in a variable of its own
    where Python would read the name as another identifier (see
    :attr:`Program.variables`).
    """

    name: str
    shape: tuple[int | None, ...]
    dtype: torch.dtype
    dims: tuple[Dim | None, ...] = ()

    def each_dim(self) -> zip[tuple[int | None, Dim | None]]:
        """Each dim's size (``None``: dynamic) with its named dim, if any."""
        return zip(self.shape, self.dims or (None,) * len(self.shape), strict=True)

    def shown(self) -> tuple[int | str | None, ...]:
        """The shape as summaries show it: a named dim by name and bounds (``T<=64``)."""
        return tuple(size if dim is None else dim.shown() for size, dim in self.each_dim())


@dataclass(frozen=True)
class Parameter:
    """One parameter of the generated forward: the name callers pass it by
    (``key``), its identifier in the code (``variable``) and what it receives
    (an Input, or a list or dict of them)."""

    key: str
    variable: str
    structure: Any


@dataclass
class Step:
    """One statement of the generated forward: ``var = <call>``."""

    var: str
    kind: str
    """``"module"`` (a submodule's call), ``"parameter"`` (an ``L.Parameter``:
    the model's own parameter, expanded to the batch), ``"attribute"`` (a
    tensor the model holds, read by its path: a layer's parameter or buffer,
    ``wte.weight``, or a constant), ``"method"`` or ``"function"``."""
    target: Any  # module or parameter path, function, or method name
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    shape: tuple[int | None, ...] | None
    dtype: torch.dtype | None = None
    """The output's dtype (None: not one tensor)."""
    fresh: bool = True
    """Whether the step returns new memory (not an input, nor a view of one)."""
    in_place: bool = False
    """Whether the step's layer overwrites its first input (``inplace=True``)."""
    output_saved: bool = True
    """Whether the step's backward may read its output (False only where known
    not to: convolutions, linear layers, norms, sums and products)."""
    defined_at: tuple[str, int] | None = None
    """The file and line that recorded it, for messages."""


@dataclass
class Program:
    """What a Functional runs: inputs (a structure of Input), steps, outputs (a structure of Var)."""

    inputs: Any
    steps: list[Step]
    outputs: Any
    parameters: list[Parameter]
    """The forward's parameters, in order."""
    variables: dict[str, str] = field(default_factory=dict)
    """Each input's variable in the generated forward, by the input's name: the
    name itself where Python reads it as written, else one the generator chose."""
    modules: dict[str, nn.Module] = field(default_factory=dict)
    """The submodules, by path: handed to the Functional, which holds them."""
    tensors: dict[str, nn.Parameter] = field(default_factory=dict)
    """The tensors of the ``L.Parameter`` layers, by path: handed to the
    Functional, which holds them as its own parameters."""
    tensor_layers: dict[str, Layer] = field(default_factory=dict)
    """The ``L.Parameter`` layers, by path: unbuilt stand-ins holding no tensor,
    which keep what specs, tables and pictures say of them."""
    buffers: dict[str, torch.Tensor] = field(default_factory=dict)
    """The constants, by path: handed to the Functional, which holds them as buffers."""
    constants: dict[str, bool] = field(default_factory=dict)
    """Whether each constant's buffer is persistent (in ``state_dict()``), by path."""
    namespace: Namespace = field(default_factory=lambda: Namespace())
    """The names of the generated forward: the code generator's own, then every
    variable; the generator claims its constants from a copy."""

    def layer_at(self, model: nn.Module, path: str) -> nn.Module:
        """The layer of the steps at ``path``: ``model``'s submodule there, or
        the stand-in of an ``L.Parameter`` (whose tensor ``model`` holds)."""
        layer = self.tensor_layers.get(path)
        return model.get_submodule(path) if layer is None else layer

    def input_list(self) -> list[Input]:
        return [leaf for leaf in leaves_of(self.inputs) if isinstance(leaf, Input)]


def _snake(name: str) -> str:
    """``Conv2d`` -> ``conv2d``, ``BatchNorm2d`` -> ``batch_norm2d``, ``LeakyReLU``
    -> ``leaky_relu``, ``GELU`` -> ``gelu``: a class name as an attribute name."""
    if name.upper() == name:
        return name.lower()
    name = name.replace("ReLU", "Relu").replace("SiLU", "Silu")
    cuts = [0]  # where each word starts: "aB" -> "a|B", "ABc" -> "A|Bc" (ASCII letters)
    for index in range(1, len(name)):
        before, char, after = name[index - 1], name[index], name[index + 1 : index + 2]
        if "A" <= char <= "Z" and ("a" <= before <= "z" or ("A" <= before <= "Z" and "a" <= after <= "z")):
            cuts.append(index)
    return "_".join(name[start:end] for start, end in pairwise([*cuts, len(name)])).lower()


def normal_form(name: str) -> str:
    """``name`` as Python reads an identifier: its NFKC normal form."""
    return unicodedata.normalize("NFKC", name)


_NOT_ASCII_WORD = re.compile(r"[^0-9A-Za-z_]")


@functools.lru_cache(maxsize=4096)  # a graph claims the same few names again and again
def as_identifier(name: str) -> str:
    """``name`` made an identifier in NFKC form (``relu`` in fullwidth -> ``relu``, ``a b``
    -> ``a_b``, ``1x`` -> ``_1x``, ``class`` -> ``_class``), which Python reads
    exactly as written; not checked against reserved or taken names."""
    if name.isascii():  # the common case: NFKC leaves ASCII as it is
        text = _NOT_ASCII_WORD.sub("_", name) or "value"
    else:
        text = "".join(char if f"_{char}".isidentifier() else "_" for char in normal_form(name)) or "value"
    if not text[0].isidentifier():
        text = f"_{text}"
    if not text.isascii() and (not text.isidentifier() or normal_form(text) != text):  # a rare composition
        text = _NOT_ASCII_WORD.sub("_", text)  # ASCII is safe
    return f"_{text}" if keyword.iskeyword(text) else text


class IdentifierForms:
    """Names taken so far, by the identifier Python reads each as (its NFKC form)."""

    def __init__(self) -> None:
        self._forms: dict[str, str] = {}

    def add(self, name: str) -> str | None:
        """Take ``name``; the name taken earlier that Python reads as the same
        identifier (``name`` itself, if taken twice), or None."""
        form = normal_form(name)
        earlier = self._forms.get(form)
        if earlier is None:
            self._forms[form] = name
        return earlier


class Namespace:
    """Hands out unique identifiers: ``conv2d``, ``conv2d_1``, ... (O(1) each),
    each an NFKC identifier (see :func:`as_identifier`), so two names it gives
    are two variables for Python too."""

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self._taken = set(reserved)
        self._next: dict[str, int] = {}

    def reserve(self, name: str) -> None:
        """Take ``name`` as it is, so that :meth:`claim` never hands it out."""
        self._taken.add(name)

    def holds(self, name: str) -> bool:
        """Whether ``name`` is taken."""
        return name in self._taken

    def keeps(self, name: str) -> bool:
        """Whether :meth:`claim` would hand out ``name`` as it is: an NFKC
        identifier, not a keyword, not taken."""
        return as_identifier(name) == name and not self.holds(name)

    def copy(self) -> Namespace:
        """A namespace holding what this one holds, claiming on its own from now on."""
        copied = Namespace(self._taken)
        copied._next = dict(self._next)
        return copied

    def claim(self, base: str) -> str:
        base = as_identifier(base)
        name, count = base, self._next.get(base, 0)
        if count:
            name = f"{base}_{count}"
        while name in self._taken:
            count += 1
            name = f"{base}_{count}"
        self._next[base] = count + 1
        self._taken.add(name)
        return name


def _leaves(structure: Any, kind: type) -> list[Any]:
    return [leaf for leaf in leaves_of(structure) if isinstance(leaf, kind)]


def _check_structure(structure: Any, what: str) -> None:
    for leaf in leaves_of(structure):
        if not isinstance(leaf, Placeholder):
            raise TorchXError(
                f"Functional {what} must be placeholders (in lists, tuples or dicts), got {type(leaf).__name__}"
            )


def _input_names(
    inputs: Any, namespace: Namespace
) -> tuple[dict[int, tuple[str, str]], dict[Any, tuple[str, str]]]:
    """The name and variable of each input node (by node id), and of each
    top-level entry that holds a structure of inputs (by key): one forward
    parameter each.

    An input's name is its dict key at the top level, else the placeholder's
    own name, else ``x``, ``x_1``...; an entry's is its dict key, else
    ``inputs_<i>``. Given names must be unique, also as Python reads them
    (NFKC), among the inputs and among the forward's parameters. Variables:
    given names Python reads as written keep themselves, then the other given
    names and the automatic ones get fresh identifiers.
    """
    top = list(
        inputs.items()
        if isinstance(inputs, Mapping)
        else enumerate(inputs if isinstance(inputs, (list, tuple)) else [inputs])
    )
    leaves: list[tuple[int, str | None]] = []  # (node id, given name)
    entries: list[tuple[Any, str | None]] = []  # (key, given name)
    parameter_names: list[str] = []  # the names callers pass the forward's parameters by
    seen: set[int] = set()
    for key, value in top:
        if not isinstance(value, Placeholder):
            entry = key if isinstance(key, str) and isinstance(inputs, Mapping) else None
            entries.append((key, entry))
            parameter_names.extend([entry] if entry is not None else [])
        for leaf in _leaves(value, Placeholder):
            if id(leaf.node) in seen:
                raise TorchXError(f"Functional inputs: {leaf!r} is given twice")
            seen.add(id(leaf.node))
            given = key if isinstance(key, str) and leaf is value else leaf.name
            leaves.append((id(leaf.node), given))
            parameter_names.extend([given] if given is not None and leaf is value else [])
    if not leaves:
        raise TorchXError("Functional needs at least one input placeholder")
    _check_distinct([name for _, name in leaves if name is not None])
    _check_distinct(parameter_names)
    given = [(("leaf", ref), name) for ref, name in leaves] + [
        (("entry", ref), name) for ref, name in entries
    ]
    variables: dict[tuple[str, Any], str] = {}
    for ref, name in given:  # the names Python reads as written first: they keep themselves
        if name is not None and namespace.keeps(name):
            variables[ref] = namespace.claim(name)
    for ref, name in given:
        if name is not None and ref not in variables:
            variables[ref] = namespace.claim(name)
    for ref, name in given:
        if name is None:
            variables[ref] = namespace.claim("x" if ref[0] == "leaf" else f"inputs_{ref[1]}")
    names = {
        ref: (variables[("leaf", ref)] if name is None else name, variables[("leaf", ref)])
        for ref, name in leaves
    }
    keys = {
        ref: (variables[("entry", ref)] if name is None else name, variables[("entry", ref)])
        for ref, name in entries
    }
    return names, keys


def _check_distinct(names: list[str]) -> None:
    """Refuse a name given twice, and two names Python reads as one identifier
    (``x`` and a fullwidth ``x``): a keyword call, or a reader of the code, could not tell
    them apart."""
    forms = IdentifierForms()
    for name in names:
        earlier = forms.add(name)
        if earlier is None:
            continue
        if earlier == name:
            raise TorchXError(f"two Functional inputs are named {name!r}; input names must be unique")
        raise TorchXError(
            f"Functional inputs {earlier!r} and {name!r} are the same Python identifier after Unicode "
            f"normalisation (NFKC: {normal_form(name)!r}), so a keyword call could not tell them apart; "
            "rename one"
        )


def trace(inputs: Any, outputs: Any, namespace: Namespace, own_attributes: AbstractSet[str]) -> Program:
    """The program computing ``outputs`` from ``inputs`` (placeholder structures),
    its variables claimed from ``namespace`` (the code generator's: see
    :func:`~torchx.functional._codegen.code_namespace`), which it keeps;
    its submodules' names keep clear of ``own_attributes`` (the model's)."""
    _check_structure(inputs, "inputs")
    _check_structure(outputs, "outputs")
    attributes = Namespace(own_attributes)
    input_names, entries = _input_names(inputs, namespace)
    needed = _reachable(outputs, input_names)
    used_inputs = {id(node) for node in needed if id(node) in input_names}
    for leaf in _leaves(inputs, Placeholder):
        if id(leaf.node) not in used_inputs:
            warnings.warn(
                f"Functional input {input_names[id(leaf.node)][0]!r} {format_shape(leaf.node.shape)} is not used by "
                "any output: the model takes it and ignores it",
                BuildWarning,
                stacklevel=3,
            )

    variables: dict[int, str] = {key: variable for key, (_, variable) in input_names.items()}
    ordered = sorted((node for node in needed if id(node) not in input_names), key=lambda node: node.id)
    module_names = _named_modules(ordered, attributes, own_attributes)
    for node in ordered:
        if node.kind == "module" and id(node.target) not in module_names:
            module_names[id(node.target)] = attributes.claim(_snake(layer_name(node.target)))
    held = _held_tensors(ordered, module_names)
    modules: dict[str, nn.Module] = {}
    tensors: dict[str, nn.Parameter] = {}
    tensor_layers: dict[str, Layer] = {}
    buffers: dict[str, torch.Tensor] = {}
    constants: dict[str, bool] = {}
    steps: list[Step] = []

    def ref(leaf: Any) -> Any:
        if isinstance(leaf, Node):
            return Var(variables[id(leaf)])
        if isinstance(leaf, BatchSize):
            return BatchOf(variables[id(leaf.node)])
        if isinstance(leaf, AttributeOf):
            return AttributeVar(variables[id(leaf.node)], leaf.attribute)
        return leaf

    for node in ordered:
        kind: str = node.kind
        target: Any
        if node.kind == "tensor":
            kind, target = "attribute", _tensor_path(node, held, attributes, buffers, constants)
            var = namespace.claim(target.rsplit(".", 1)[-1])
        elif node.kind == "module":
            attribute = module_names[id(node.target)]
            if is_parameter_layer(node.target):
                kind = "parameter"
                tensors.setdefault(attribute, node.target.value)
                tensor_layers.setdefault(attribute, layer_view(node.target))
            else:
                modules.setdefault(attribute, node.target)
            var = namespace.claim(attribute)
            target = attribute
        elif node.kind == "method":
            var, target = namespace.claim(node.target), node.target
        else:
            var, target = namespace.claim(getattr(node.target, "__name__", "value")), node.target
        variables[id(node)] = var
        tensor, plain = isinstance(node.meta, torch.Tensor), _is_plain(node)
        steps.append(
            Step(
                var,
                kind,
                target,
                _refs(node.args, variables, ref),
                {}
                if kind == "attribute" or not node.kwargs
                else map_leaves(ref, node.kwargs),  # a Buffer's persistence is held
                node.shape if tensor else None,
                dtype=node.meta.dtype if tensor else None,
                fresh=node.fresh or plain,
                in_place=node.kind == "module" and _works_in_place(node.target),
                output_saved=not plain,
                defined_at=node.defined_at,
            )
        )

    def describe(leaf: Placeholder) -> Input:
        name, _ = input_names[id(leaf.node)]
        dims = leaf.input_dims()
        return Input(name, leaf.node.shape, leaf.node.meta.dtype, dims if any(dims) else ())

    program_inputs = map_leaves(describe, inputs)
    program_outputs = map_leaves(lambda leaf: Var(variables[id(leaf.node)]), outputs)
    names = dict(input_names.values())
    parameters = _parameters(program_inputs, names, entries)
    return Program(
        program_inputs,
        steps,
        program_outputs,
        parameters,
        names,
        modules,
        tensors,
        tensor_layers,
        buffers,
        constants,
        namespace,
    )


def _refs(args: Any, variables: Mapping[int, str], ref: Callable[[Any], Any]) -> Any:
    """``args`` with ``ref`` of each leaf: a node argument becomes its variable directly, a number stays."""
    if type(args) is not tuple:
        return map_leaves(ref, args)
    return tuple(
        [
            Var(variables[id(arg)])
            if type(arg) is Node
            else arg
            if type(arg) in _ATOMS
            else map_leaves(ref, arg)
            for arg in args
        ]
    )


def _works_in_place(module: nn.Module) -> bool:
    """Whether ``module`` was made with ``inplace=True`` (``nn.ReLU(inplace=True)``)."""
    if "inplace" in module.__dict__:  # most modules have no such attribute: no nn.Module.__getattr__ miss
        return module.__dict__["inplace"] is True
    return hasattr(type(module), "inplace") and getattr(module, "inplace", False) is True


def _held_tensors(nodes: list[Node], module_names: Mapping[int, str]) -> dict[int, str]:
    """The path of each tensor the graph reads (its tensor nodes) that one of
    its layers holds as a parameter or buffer (the tensor of an ``L.Parameter``
    at the layer's own path), by tensor id."""
    read = {id(node.target) for node in nodes if node.kind == "tensor"}
    held: dict[int, str] = {}
    if not read:
        return held
    for node in nodes:
        if node.kind != "module":
            continue
        path = module_names[id(node.target)]
        if is_parameter_layer(node.target):
            held.setdefault(id(node.target.value), path)
            continue
        modules = list(node.target.named_modules(prefix=path, remove_duplicate=False))
        for store in ("_parameters", "_buffers"):  # parameters first, as named_parameters() gives them
            for prefix, module in modules:
                for name, tensor in getattr(module, store).items():
                    if id(tensor) in read:
                        held.setdefault(id(tensor), f"{prefix}.{name}")
    return held


def _tensor_path(
    node: Node,
    held: Mapping[int, str],
    attributes: Namespace,
    buffers: dict[str, torch.Tensor],
    constants: dict[str, bool],
) -> str:
    """Where the model holds the real tensor ``node`` reads: a parameter or
    buffer of one of its layers, or a constant, added to ``buffers`` and
    ``constants`` (once per tensor). A parameter no layer of the graph holds is an error."""
    tensor = node.target
    path = held.get(id(tensor))
    if path is not None:
        return path
    if isinstance(tensor, nn.Parameter):
        raise TorchXError(
            f"the graph reads a parameter of shape {format_shape(tuple(tensor.shape))} of a layer it does "
            "not call; call the layer on a placeholder in the graph (h = wte(ids)), so that the model "
            "holds it, or pass the tensor as an input (a Placeholder). A torch module called on "
            "placeholders reads its parameters like this: use the TorchX layer (torchx.layers), or "
            "torchx.functional.accept_placeholders(module)"
        )
    path = next((path for path, held_tensor in buffers.items() if held_tensor is tensor), None)
    if path is not None:
        return path
    if node.name is None:
        path = attributes.claim("constant")
    elif attributes.holds(node.name):
        raise TorchXError(
            f"Buffer name {node.name!r} is taken (by a layer, another buffer, or the Functional's own "
            "attributes); give it another name"
        )
    else:
        path = node.name
        attributes.reserve(path)
    buffers[path] = tensor
    constants[path] = bool(node.kwargs.get("persistent", False))
    return path


def is_parameter_layer(module: nn.Module) -> bool:
    """Whether ``module`` is a built ``L.Parameter``, whose tensor a Functional
    holds as its own parameter at the layer's path (``class_token``, not
    ``class_token.value``: torchvision's key), read by the generated forward
    as a hand-written one reads it (``self.class_token.expand(n, -1, -1)``)."""
    return type(module) is L.Parameter.native_class and record_of(module) is not None


_PLAIN_MODULES = (
    nn.modules.conv._ConvNd,
    nn.Linear,
    nn.modules.batchnorm._BatchNorm,
    nn.GroupNorm,
    nn.LayerNorm,
)
"""Torch modules whose forward always returns new memory and whose backward
never reads their output (convolutions, linear layers, norms)."""
_PLAIN_FUNCTIONS = frozenset((operator.add, operator.sub, operator.mul))
"""Operators whose backward never reads their output."""


def _is_plain(node: Node) -> bool:
    """Whether ``node`` computes new memory that its backward never reads."""
    if node.kind == "module":
        # torch's own classes only: a subclass may return something else
        return isinstance(node.target, _PLAIN_MODULES) and type(node.target).__module__.startswith("torch.nn")
    return node.kind == "function" and node.target in _PLAIN_FUNCTIONS and node.fresh


def _named_modules(nodes: list[Node], attributes: Namespace, taken: AbstractSet[str]) -> dict[int, str]:
    """The submodule path of each module given a ``name=``, by module id; the
    first part of each is taken from ``attributes``, so generated names keep
    clear of them. Refuses two modules of one name, a name inside another
    layer's (``fc`` and ``fc.bias``), and a part that is one of the
    Functional's own attributes, ``taken`` (``forward``)."""
    named: dict[str, nn.Module] = {}
    paths: dict[int, str] = {}
    for node in nodes:
        if node.kind != "module" or id(node.target) in paths:
            continue
        name = given_name(node.target)
        if name is None:
            continue
        earlier = named.get(name)
        if earlier is not None:
            raise TorchXError(
                f"two layers of the Functional are named {name!r}: {short_repr(earlier)} and "
                f"{short_repr(node.target)}; give each layer its own name (a layer used at several "
                "places is one layer: call the same object)"
            )
        named[name] = node.target
        paths[id(node.target)] = name
    for name, module in named.items():
        clash = next((part for part in name.split(".") if part in taken), None)
        if clash is not None:
            raise TorchXError(
                f"layer name {name!r} ({short_repr(module)}): {clash!r} is an attribute of Functional "
                "and nn.Module, so it cannot name a submodule; rename the layer"
            )
        parts = name.split(".")
        for end in range(1, len(parts)):
            outer = named.get(".".join(parts[:end]))
            if outer is not None:
                raise TorchXError(
                    f"layer name {name!r} ({short_repr(module)}) puts it inside the layer named "
                    f"{'.'.join(parts[:end])!r} ({short_repr(outer)}); a layer holds no other layers "
                    "by name: rename one"
                )
    for name in sorted({name.split(".")[0] for name in named}):
        attributes.reserve(name)
    return paths


def _parameters(
    inputs: Any, variables: dict[str, str], entries: dict[Any, tuple[str, str]]
) -> list[Parameter]:
    """The forward's parameters: an input is its own parameter; a nested list or
    dict of inputs is one parameter, named by its dict key or ``inputs_<i>``."""
    if isinstance(inputs, Input):
        return [Parameter(inputs.name, variables[inputs.name], inputs)]
    parameters = []
    for key, item in inputs.items() if isinstance(inputs, dict) else enumerate(inputs):
        if isinstance(item, Input):
            parameters.append(Parameter(item.name, variables[item.name], item))
        else:
            name, variable = entries[key]
            parameters.append(Parameter(name, variable, item))
    return parameters


def _reachable(outputs: Any, input_names: Mapping[int, object]) -> list[Node]:
    """Every node the outputs need, stopping at inputs; a root that is not an
    input is an error naming it."""
    stack = [leaf.node for leaf in _leaves(outputs, Placeholder)]
    seen: dict[int, Node] = {}
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        if id(node) in input_names:
            continue
        if node.kind == "input":
            label = f"{node.name!r} " if node.name else ""
            raise TorchXError(
                f"Functional outputs depend on the placeholder {label}{format_shape(node.shape)}, "
                "which is not among the inputs; add it to inputs"
            )
        stack.extend(node.inputs())
    return list(seen.values())
