"""From placeholders to a program: the steps a Functional runs, in order, with names.

Tracing walks back from the outputs (iteratively: no recursion limit) and stops
at the given inputs, so intermediate placeholders can be inputs (sub-graphs)
and branches no output needs are left out. Every node gets a readable,
deterministic variable name; every module a readable attribute name
(``conv2d``, ``conv2d_1``); a module called at several nodes is one attribute.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils._pytree import tree_map

from torchx.core import TorchXError
from torchx.core.errors import format_shape
from torchx.core.layer import layer_name
from torchx.functional._placeholder import BatchSize, Node, Placeholder

__all__ = ["Input", "Program", "Step", "Var", "trace"]


@dataclass(frozen=True)
class Var:
    """A reference to a variable of the generated forward."""

    name: str


@dataclass(frozen=True)
class BatchOf:
    """The run-time batch size (dim 0) of a variable."""

    name: str


@dataclass(frozen=True)
class Input:
    """One input of the model: its parameter name, shape (``None``: dynamic) and dtype."""

    name: str
    shape: tuple[int | None, ...]
    dtype: torch.dtype


@dataclass
class Step:
    """One statement of the generated forward: ``var = <call>``."""

    var: str
    kind: str
    target: Any  # module attribute name, function, or method name
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    shape: tuple[int | None, ...] | None


@dataclass
class Program:
    """What a Functional runs: inputs (a structure of Input), steps, outputs (a structure of Var)."""

    inputs: Any
    steps: list[Step]
    outputs: Any
    parameters: list[tuple[str, Any]]
    """The forward's parameters: (name, the input structure it receives)."""
    modules: dict[str, nn.Module] = field(default_factory=dict)

    def input_list(self) -> list[Input]:
        leaves: list[Input] = []
        tree_map(lambda leaf: leaves.append(leaf) if isinstance(leaf, Input) else None, self.inputs)
        return leaves


def _snake(name: str) -> str:
    """``Conv2d`` -> ``conv2d``, ``BatchNorm2d`` -> ``batch_norm2d``, ``LeakyReLU``
    -> ``leaky_relu``, ``GELU`` -> ``gelu``: a class name as an attribute name."""
    if name.upper() == name:
        return name.lower()
    name = name.replace("ReLU", "Relu").replace("SiLU", "Silu")
    return re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


class Namespace:
    """Hands out unique identifiers: ``conv2d``, ``conv2d_1``, ... (O(1) each)."""

    def __init__(self, reserved: set[str]) -> None:
        self._taken = set(reserved)
        self._next: dict[str, int] = {}

    def claim(self, base: str) -> str:
        base = re.sub(r"\W", "_", base) or "value"
        if base[0].isdigit() or keyword.iskeyword(base):
            base = f"_{base}"
        name, count = base, self._next.get(base, 0)
        if count:
            name = f"{base}_{count}"
        while name in self._taken:
            count += 1
            name = f"{base}_{count}"
        self._next[base] = count + 1
        self._taken.add(name)
        return name


RESERVED = {
    "self", "torch", "F", "operator", "Tensor", "builtins", "error",  # what the generated code refers to
    "type", "float", "dict", "slice",  # builtins it calls
    "_MISSING", "_Tensor", "_is_symbolic", "_find_symbolic", "_unpack_inputs", "_missing_inputs", "_explain",
}  # fmt: skip
"""Names generated code uses; no input or variable may take them."""


def _module_attributes() -> set[str]:
    """Names a Functional's submodules must not take (its own attributes)."""
    from torchx.functional._functional import Functional

    return set(dir(Functional)) | set(nn.Module().__dict__)


def _leaves(structure: Any, kind: type) -> list[Any]:
    found: list[Any] = []
    tree_map(lambda leaf: found.append(leaf) if isinstance(leaf, kind) else None, structure)
    return found


def _check_structure(structure: Any, what: str) -> None:
    def check(leaf: Any) -> Any:
        if not isinstance(leaf, Placeholder):
            raise TorchXError(
                f"Functional {what} must be placeholders (in lists, tuples or dicts), got {type(leaf).__name__}"
            )
        return leaf

    tree_map(check, structure)


def _input_names(inputs: Any, namespace: Namespace) -> dict[int, str]:
    """The parameter name of each input node: its dict key at the top level, else
    the placeholder's own name, else ``x``, ``x_1``... Given names must be unique."""
    top = (
        inputs.items()
        if isinstance(inputs, Mapping)
        else enumerate(inputs if isinstance(inputs, (list, tuple)) else [inputs])
    )
    wanted: list[tuple[Placeholder, str | None]] = []
    seen: set[int] = set()
    for key, value in top:
        for leaf in _leaves(value, Placeholder):
            given = key if isinstance(key, str) and leaf is value else leaf.name
            if given is not None and (
                not given.isidentifier() or keyword.iskeyword(given) or given in RESERVED
            ):
                raise TorchXError(
                    f"Functional input name {given!r} cannot be a parameter name (not an identifier, a "
                    f"keyword, or reserved: {sorted(RESERVED)}); choose another"
                )
            if id(leaf.node) in seen:
                raise TorchXError(f"Functional inputs: {leaf!r} is given twice")
            seen.add(id(leaf.node))
            wanted.append((leaf, given))
    if not wanted:
        raise TorchXError("Functional needs at least one input placeholder")
    names: dict[int, str] = {}
    for leaf, given in wanted:  # given names first, so that automatic ones never take them
        if given is not None:
            if given in names.values():
                raise TorchXError(f"two Functional inputs are named {given!r}; input names must be unique")
            names[id(leaf.node)] = namespace.claim(given)
    for leaf, given in wanted:
        if given is None:
            names[id(leaf.node)] = namespace.claim("x")
    return names


def trace(inputs: Any, outputs: Any) -> Program:
    """The program computing ``outputs`` from ``inputs`` (placeholder structures)."""
    _check_structure(inputs, "inputs")
    _check_structure(outputs, "outputs")
    namespace = Namespace(RESERVED)
    attributes = Namespace(_module_attributes())
    input_names = _input_names(inputs, namespace)
    needed = _reachable(outputs, input_names)
    used_inputs = {id(node) for node in needed if id(node) in input_names}
    for leaf in _leaves(inputs, Placeholder):
        if id(leaf.node) not in used_inputs:
            raise TorchXError(
                f"Functional input {input_names[id(leaf.node)]!r} {format_shape(leaf.shape)} is not used by "
                "any output; remove it from inputs or use it"
            )

    variables: dict[int, str] = dict(input_names)
    module_names: dict[int, str] = {}
    modules: dict[str, nn.Module] = {}
    steps: list[Step] = []
    for node in sorted((node for node in needed if id(node) not in input_names), key=lambda node: node.id):
        if node.kind == "module":
            attribute = module_names.get(id(node.target))
            if attribute is None:
                attribute = module_names[id(node.target)] = attributes.claim(_snake(layer_name(node.target)))
                modules[attribute] = node.target
            var = namespace.claim(attribute)
            target: Any = attribute
        elif node.kind == "method":
            var, target = namespace.claim(node.target), node.target
        else:
            var, target = namespace.claim(getattr(node.target, "__name__", "value")), node.target
        variables[id(node)] = var

        def ref(leaf: Any) -> Any:
            if isinstance(leaf, Node):
                return Var(variables[id(leaf)])
            if isinstance(leaf, BatchSize):
                return BatchOf(variables[id(leaf.node)])
            return leaf

        shape = node.shape if isinstance(node.meta, torch.Tensor) else None
        steps.append(
            Step(var, node.kind, target, tree_map(ref, node.args), tree_map(ref, node.kwargs), shape)
        )

    program_inputs = tree_map(lambda leaf: Input(input_names[id(leaf.node)], leaf.shape, leaf.dtype), inputs)
    program_outputs = tree_map(lambda leaf: Var(variables[id(leaf.node)]), outputs)
    parameters = _parameters(program_inputs, namespace)
    return Program(program_inputs, steps, program_outputs, parameters, modules)


def _parameters(inputs: Any, namespace: Namespace) -> list[tuple[str, Any]]:
    """The forward's parameters: an input is its own parameter; a nested list or
    dict of inputs is one parameter, named by its dict key or ``inputs_<i>``."""
    if isinstance(inputs, Input):
        return [(inputs.name, inputs)]
    entries = inputs.items() if isinstance(inputs, dict) else enumerate(inputs)
    parameters = []
    for key, item in entries:
        if isinstance(item, Input):
            parameters.append((item.name, item))
            continue
        if isinstance(key, str) and (not key.isidentifier() or keyword.iskeyword(key) or key in RESERVED):
            raise TorchXError(f"Functional input name {key!r} cannot be a parameter name; choose another")
        parameters.append((namespace.claim(key if isinstance(key, str) else f"inputs_{key}"), item))
    return parameters


def _reachable(outputs: Any, input_names: dict[int, str]) -> list[Node]:
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
