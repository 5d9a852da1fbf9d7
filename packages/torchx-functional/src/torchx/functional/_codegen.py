"""Python source for a Program: the Functional's forward, one statement per step.

The code reads like a hand-written forward (``conv2d = self.conv2d(x)``,
``mul = conv2d * conv2d_1``) and costs what one costs: no graph walk, no
per-call wrapper. Its source is registered with ``linecache``, so tracebacks
show the generated line.

Every name the code uses comes from one namespace (the program's): first the
generator's own (:data:`CODE_LOCALS` and :data:`CODE_GLOBALS`, claimed by
:func:`code_namespace` before the program's variables, so they read as
themselves), then the variables, then the constants and the caller's helpers,
claimed as the code is written. The globals the code is run with are exactly
those the generator put there: none comes from ``builtins``.
"""

from __future__ import annotations

import inspect
import itertools
import keyword
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from torchx.core import TorchXError
from torchx.functional._liveness import IN_PLACE_METHODS, liveness
from torchx.functional._ops import INFIX, name_of_function
from torchx.functional._placeholder import ByMode
from torchx.functional._program import (
    AttributeVar,
    BatchOf,
    Input,
    Namespace,
    Parameter,
    Program,
    Step,
    Var,
    normal_form,
)
from torchx.functional._sources import compile_function
from torchx.plugin import ValueFold, find_symbolic

__all__ = [
    "CODE_GLOBALS",
    "CODE_LOCALS",
    "MISSING",
    "MetaHelpers",
    "code_namespace",
    "compile_forward",
    "generate",
    "generate_scriptable",
]


@dataclass(frozen=True)
class Copy:
    """A step argument passed as a copy (``x.clone()``)."""

    value: Any


class _Missing:
    def __repr__(self) -> str:
        return "<missing input>"


MISSING = _Missing()
"""Default of every forward parameter, so that missing inputs are reported together."""


@dataclass(frozen=True)
class MetaHelpers:
    """What a forward generated for meta inputs calls instead of the model's
    layers: ``call(module, *args, **kwargs)`` for a module step's meta output,
    ``tensor(parameter)`` for a meta stand-in of an ``L.Parameter``'s tensor."""

    call: Callable[..., Any]
    tensor: Callable[[torch.Tensor], torch.Tensor]


CODE_LOCALS = ("self", "error", "_extra", "_keywords", "_shape", "_recorded")
"""The generated forward's own local names: its module, the exception it
explains, the inputs given beyond its parameters (by position, by a name that
is not their variable), the shape of the input being checked, the output
recorded on placeholders."""

CODE_GLOBALS: dict[str, Any] = {
    # what the steps name: torch.cat, F.relu, operator.xor, torch.float16
    "torch": torch, "F": F, "operator": operator,
    # builtins the code calls (as globals of its own, which no input can shadow)
    "type": type, "dict": dict, "float": float, "slice": slice, "getattr": getattr, "len": len,
    "Exception": Exception,
    # the input checks of generate(), and TorchScript's parameter types
    "_MISSING": MISSING, "_Tensor": torch.Tensor, "_find_symbolic": find_symbolic,
    "Tensor": torch.Tensor,
}  # fmt: skip
"""The globals the generated code writes as they are named here, and what each is."""


def code_namespace() -> Namespace:
    """A namespace holding the generator's own names (:data:`CODE_LOCALS`,
    :data:`CODE_GLOBALS`), to claim a program's variables from: see
    :func:`~torchx.functional._program.trace`."""
    return Namespace((*CODE_LOCALS, *CODE_GLOBALS))


class _Writer(ValueFold[str]):
    """Renders values as source; what has no literal goes into the globals,
    under a name claimed from the program's namespace.

    With ``meta``, module steps call ``meta_call(module, *args)`` and tensors of
    ``L.Parameter`` steps are read through ``meta_tensor(tensor)``: helpers of
    the caller's, bound as globals (see :func:`generate`)."""

    def __init__(self, program: Program, meta: MetaHelpers | None = None) -> None:
        self.names = program.namespace.copy()
        unclaimed = [name for name in (*CODE_LOCALS, *CODE_GLOBALS) if not self.names.holds(name)]
        if unclaimed:
            raise TorchXError(
                f"the program's variables were not named from code_namespace() ({', '.join(unclaimed)} "
                "not claimed), so they could hide the generated code's own names; this is a TorchX bug"
            )
        self.globals: dict[str, Any] = dict(CODE_GLOBALS)
        self._constants = itertools.count()
        self._tensor_shapes = {
            path: tuple(layer.arguments["shape"]) for path, layer in program.tensor_layers.items()
        }
        self._meta_call = None if meta is None else self.bind("_meta_call", meta.call)
        self._meta_tensor = None if meta is None else self.bind("_meta_tensor", meta.tensor)

    def constant(self, value: Any) -> str:
        return self.bind(f"_constant_{next(self._constants)}", value)

    def bind(self, base: str, value: Any) -> str:
        """A global holding ``value``, named ``base`` unless a variable (or
        another global) has that name already."""
        name = self.names.claim(base)
        self.globals[name] = value
        return name

    def value(self, value: Any) -> str:
        """``value`` as source: a literal, a variable, or a global holding it."""
        if type(value) is Var:  # most arguments are
            return value.name
        return self.fold(value, "")

    def atom(self, value: bool | int | float | str | None, where: str) -> str:
        if isinstance(value, float) and not math.isfinite(value):
            return f"float({str(value)!r})"
        return repr(value)

    def sequence(self, value: tuple[Any, ...] | list[Any], items: list[str], where: str) -> str:
        if isinstance(value, list):
            return "[" + ", ".join(items) + "]"
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"

    def mapping(self, items: dict[str, str], where: str) -> str:
        return "{" + ", ".join(f"{key!r}: {item}" for key, item in items.items()) + "}"

    def slice(self, start: str, stop: str, step: str, where: str) -> str:
        return f"slice({start}, {stop}, {step})"

    def ellipsis(self, where: str) -> str:
        return "..."

    def dtype(self, value: torch.dtype, where: str) -> str:
        return str(value)

    def other(self, value: Any, where: str) -> str:
        if isinstance(value, Var):
            return value.name
        if isinstance(value, Copy):
            return f"{self.value(value.value)}.clone()"
        if isinstance(value, BatchOf):
            return f"{value.name}.shape[0]"
        if isinstance(value, AttributeVar):
            return f"{value.name}.{value.attribute}"
        if isinstance(value, ByMode):
            if (value.training, value.evaluating) == (True, False):
                return "self.training"
            return f"({self.value(value.training)} if self.training else {self.value(value.evaluating)})"
        return self.constant(value)

    def index(self, value: Any) -> str:
        """An index as written between brackets: ``x[:, 1:3, None]``; only the
        outermost tuple loses its parentheses."""
        if isinstance(value, tuple) and value:
            return ", ".join(self._index_item(item) for item in value) + ("," if len(value) == 1 else "")
        return self._index_item(value)

    def _index_item(self, value: Any) -> str:
        if isinstance(value, slice):
            parts = [
                "" if part is None else self.value(part) for part in (value.start, value.stop, value.step)
            ]
            return ":".join(parts[:2]) + (f":{parts[2]}" if value.step is not None else "")
        return self.value(value)

    def function(self, function: Callable[..., Any]) -> str:
        name = name_of_function(function)
        if name is not None:
            return name
        return self.constant(function)

    def call(
        self, function: str, args: tuple[Any, ...], kwargs: dict[str, Any], first: str | None = None
    ) -> str:
        """``function(*args, **kwargs)`` as source; ``first``: source of an argument before ``args``."""
        parts = [first] if first is not None else []
        parts += [self.value(arg) for arg in args] + [
            f"{key}={self.value(item)}" for key, item in kwargs.items()
        ]
        return f"{function}({', '.join(parts)})"

    def step(self, step: Step, copy_input: bool = False, into: int | None = None) -> str:
        """The call ``step`` makes; ``copy_input``: on a copy of its first input
        (a layer working in place on memory the graph reads again); ``into``:
        arithmetic computed into that operand where both are of one dtype at
        run time (``bn3.add_(identity) if bn3.dtype is identity.dtype else bn3
        + identity``; see :mod:`~torchx.functional._liveness`), and of one shape
        where the result has a dynamic dim (the other may broadcast it longer at run time)."""
        if into is not None:
            operand, other = self.value(step.args[into]), self.value(step.args[1 - into])
            in_place = f"{operand}.{IN_PLACE_METHODS[step.target]}({other})"
            fits = f"{operand}.dtype is {other}.dtype"
            if step.shape is not None and None in step.shape:
                fits += f" and {operand}.shape == {other}.shape"
            return f"{in_place} if {fits} else {self.step(step)}"
        if step.kind == "parameter":
            return self.parameter(step)
        if step.kind == "attribute":  # a tensor the model holds: self.wte.weight, self.constant
            tensor = submodule_expression(step.target)
            return tensor if self._meta_tensor is None else f"{self._meta_tensor}({tensor})"
        if step.kind == "module":
            module = submodule_expression(step.target)
            args = (Copy(step.args[0]), *step.args[1:]) if copy_input else step.args
            if self._meta_call is not None:
                return self.call(self._meta_call, args, step.kwargs, first=module)
            return self.call(module, args, step.kwargs)
        if step.kind == "method":
            receiver, *rest = step.args
            return self.call(f"{self.value(receiver)}.{step.target}", tuple(rest), step.kwargs)
        target = step.target
        if not step.kwargs:
            if target in INFIX and len(step.args) == 2:
                left, right = (self.value(arg) for arg in step.args)
                return f"{left} {INFIX[target]} {right}"
            if target is operator.getitem and len(step.args) == 2:
                return f"{self.value(step.args[0])}[{self.index(step.args[1])}]"
            if target in (operator.neg, operator.pos, operator.invert) and len(step.args) == 1:
                sign = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}[target]
                return f"{sign}{self.value(step.args[0])}"
        return self.call(self.function(target), step.args, step.kwargs)

    def parameter(self, step: Step) -> str:
        """An ``L.Parameter``'s value, as its module computes it: the parameter,
        a leading size of 1 expanded to the batch of the step's input (a view:
        ``self.class_token.expand(x.shape[0], -1, -1)``)."""
        tensor = submodule_expression(step.target)
        if self._meta_tensor is not None:
            tensor = f"{self._meta_tensor}({tensor})"
        shape = self._tensor_shapes[step.target]
        if not shape or shape[0] != 1:
            return tensor
        sizes = ", ".join([f"{self.value(step.args[0])}.shape[0]", *["-1"] * (len(shape) - 1)])
        return f"{tensor}.expand({sizes})"


def submodule_expression(path: str) -> str:
    """How the forward reaches the submodule (or parameter) at ``path``:
    ``self.layer1``, ``getattr(self.layer1, "0").conv1``."""
    expression = "self"
    for part in path.split("."):
        readable = (
            part.isidentifier()
            and not keyword.iskeyword(part)
            and (part.isascii() or normal_form(part) == part)  # NFKC leaves ASCII as it is
        )
        expression = f"{expression}.{part}" if readable else f"getattr({expression}, {part!r})"
    return expression


def _structure(writer: _Writer, structure: Any) -> str:
    if isinstance(structure, Var):
        return structure.name
    if isinstance(structure, dict):
        return (
            "{"
            + ", ".join(f"{writer.value(key)}: {_structure(writer, item)}" for key, item in structure.items())
            + "}"
        )
    if isinstance(structure, tuple):
        items = ", ".join(_structure(writer, item) for item in structure)
        return f"({items},)" if len(structure) == 1 else f"({items})"
    if isinstance(structure, list):
        return "[" + ", ".join(_structure(writer, item) for item in structure) + "]"
    raise TypeError(f"unexpected output structure {structure!r}")


def _unpack_lines(writer: _Writer, variables: dict[str, str], name: str, structure: Any) -> list[str]:
    """Statements binding nested inputs inside a parameter (``meta_0 = meta[0]``)."""
    lines: list[str] = []
    if isinstance(structure, Input):
        return lines
    items = structure.items() if isinstance(structure, dict) else enumerate(structure)
    for key, item in items:
        if isinstance(item, Input):
            lines.append(f"{variables[item.name]} = {name}[{writer.value(key)}]")
        else:
            lines.extend(_unpack_lines(writer, variables, f"{name}[{writer.value(key)}]", item))
    return lines


def parameters_of(program: Program) -> list[Parameter]:
    """The forward's parameters, in order."""
    return program.parameters


def generate_scriptable(program: Program) -> tuple[str, dict[str, Any]]:
    """A forward for ``torch.jit.script``: the steps alone, its parameters
    typed for TorchScript (no input checks, no placeholder calls, no error
    translation)."""
    writer = _Writer(program)
    parameters = parameters_of(program)
    typed = ", ".join(
        f"{parameter.variable}: {_script_type(parameter.key, parameter.structure)}"
        for parameter in parameters
    )
    lines = [f"def forward(self, {typed}):"]
    lines += [f"    {line}" for line in _unpacking(writer, program)]
    lines += [f"    {statement}" for statement in _statements(writer, program, release=False)]
    lines.append(f"    return {_structure(writer, program.outputs)}")
    return "\n".join(lines) + "\n", writer.globals


def _script_type(key: str, structure: Any) -> str:
    """The TorchScript type of a parameter receiving ``structure``: ``Tensor``,
    ``list[Tensor]``, ``dict[str, Tensor]``, ``tuple[Tensor, list[Tensor]]``..."""
    if isinstance(structure, Input):
        return "Tensor"
    if isinstance(structure, tuple):
        return f"tuple[{', '.join(_script_type(key, item) for item in structure)}]"
    items = list(structure.values() if isinstance(structure, dict) else structure)
    kinds = {_script_type(key, item) for item in items}
    if len(kinds) != 1:
        raise TorchXError(
            f"torch.jit.script types each input: {key!r} holds a {type(structure).__name__} of "
            f"{' and '.join(sorted(kinds)) or 'nothing'}, which TorchScript cannot type (a list or dict "
            "holds one type); pass those inputs as a tuple, or as separate inputs"
        )
    inner = kinds.pop()
    return f"dict[str, {inner}]" if isinstance(structure, dict) else f"list[{inner}]"


def _unpacking(writer: _Writer, program: Program) -> list[str]:
    """The statements binding every input held inside a list or dict parameter."""
    return [
        line
        for parameter in parameters_of(program)
        for line in _unpack_lines(writer, program.variables, parameter.variable, parameter.structure)
    ]


def _statements(writer: _Writer, program: Program, release: bool = True) -> list[str]:
    """One statement per step; with ``release``, each followed on its line by
    the release of the values it read for the last time (``del conv2d``)."""
    live = liveness(program)
    statements = []
    for step, released, copied, into in zip(
        program.steps, live.released, live.copied, live.into, strict=True
    ):
        statement = f"{step.var} = {writer.step(step, copied, into)}"
        if release and released:
            statement += f";  del {', '.join(released)}"
        statements.append(statement)
    return statements


def dtype_kind(dtype: torch.dtype) -> str:
    """``"floating"``, ``"complex"``, ``"bool"`` or ``"integer"`` (ids, quantized and bit types)."""
    if dtype == torch.bool:
        return "bool"
    if dtype.is_complex:
        return "complex"
    return "floating" if dtype.is_floating_point else "integer"


def _dtypes_by_kind() -> dict[str, tuple[torch.dtype, ...]]:
    """torch's dtypes by :func:`dtype_kind`, in the order of their names."""
    found: dict[str, list[torch.dtype]] = {}
    for dtype in sorted({value for value in vars(torch).values() if isinstance(value, torch.dtype)}, key=str):
        found.setdefault(dtype_kind(dtype), []).append(dtype)
    return {kind: tuple(dtypes) for kind, dtypes in found.items()}


_DTYPES_OF_KIND = _dtypes_by_kind()


def input_test(writer: _Writer, variable: str, item: Input) -> str:
    """A cheap test, true when the value of ``variable`` may not fit ``item``:
    it is not a plain tensor, its rank or a static dim after the batch (dim 0)
    differs, a named dim lies outside its bounds, or its dtype is not of the kind of a placeholder that is not
    floating (integer ids, bool masks). A floating placeholder takes any dtype."""
    tests = [f"type({variable}) is not _Tensor"]
    static = [(index, size) for index, size in enumerate(item.shape) if index and size is not None]
    bounded = [(index, dim) for index, dim in enumerate(item.dims) if dim is not None]
    if static or bounded:
        tests.append(f"len(_shape := {variable}.shape) != {len(item.shape)}")
        tests += [f"_shape[{index}] != {size}" for index, size in static]
        tests += [f"_shape[{index}] < {dim.min}" for index, dim in bounded if dim.min > 1]
        tests += [f"_shape[{index}] > {dim.max}" for index, dim in bounded if dim.max is not None]
    else:
        tests.append(f"{variable}.ndim != {len(item.shape)}")
    kind = dtype_kind(item.dtype)
    if kind != "floating":
        tests.append(f"{variable}.dtype not in {writer.constant(_DTYPES_OF_KIND[kind])}")
    return " or ".join(tests)


def generate(
    program: Program, helpers: Mapping[str, Callable[..., Any]], meta: MetaHelpers | None = None
) -> tuple[str, dict[str, Any]]:
    """The forward's source and the globals it needs.

    Callers pass inputs by position, by name or as one dict of them. Where an
    input's variable is not its name (``torch`` is held in ``torch_1``), every
    parameter is positional-only; names that are not parameters arrive in
    ``_keywords``, matched against the input names as Python matches
    identifiers: a variable is never a name callers can use.

    Before the steps, one test of the call (see :func:`input_test`) costs a
    few attribute reads per input; only when it is true (inputs given by
    name, missing, placeholders, or not plain tensors that fit) does the
    forward call a helper to place, record or check them.

    ``helpers`` are the caller's functions the forward calls with the model
    first, by the name they are called here: ``_prepared_inputs(self, values,
    extra, keywords)`` returns the output recorded on placeholders (else
    None) and the inputs, placed by name or from one dict and checked;
    ``_check_inputs(self, given)`` raises for inputs inside a list or dict
    parameter that do not fit; ``_explain(self, error, given)`` returns the
    exception to raise.

    With ``meta``, the forward computes meta outputs for meta inputs without
    running a layer: each module step asks ``meta.call`` (see :class:`MetaHelpers`).
    Its statements are on the lines they have in the plain forward, so that
    ``_explain`` reads a failure the same way.
    """
    writer = _Writer(program, meta)
    prepared_inputs, check_inputs, explain = (
        writer.bind(name, helpers[name]) for name in ("_prepared_inputs", "_check_inputs", "_explain")
    )
    parameters = parameters_of(program)
    names = [parameter.variable for parameter in parameters]
    renamed = any(parameter.key != parameter.variable for parameter in parameters)
    signature = ", ".join(
        [*(f"{name}=_MISSING" for name in names), *(["/"] if renamed else []), "*_extra", "**_keywords"]
    )
    arguments = ", ".join(names) + ("," if len(names) == 1 else "")
    given = "{" + ", ".join(f"{parameter.key!r}: {parameter.variable}" for parameter in parameters) + "}"
    unusual = ["_extra", "_keywords"]
    for parameter in parameters:
        if isinstance(parameter.structure, Input):
            unusual.append(input_test(writer, parameter.variable, parameter.structure))
        else:  # a list or dict of inputs: tested once unpacked
            unusual += [
                f"{parameter.variable} is _MISSING",
                f"_find_symbolic(({parameter.variable},), {{}}) is not None",
            ]
    if isinstance(program.inputs, dict) and not isinstance(parameters[0].structure, Input):
        unusual.append(f"type({names[0]}) is dict")  # maybe every input in one dict
    lines = [f"def forward(self, {signature}):"]
    body = [
        f"if {' or '.join(unusual)}:  # inputs to place, record or check",
        f"    _recorded, ({arguments}) = {prepared_inputs}(self, ({arguments}), _extra, _keywords)",
        "    if _recorded is not None:  # called on placeholders: this model is one node of a graph",
        "        return _recorded",
        *_unpacking(writer, program),
    ]
    plain = {parameter.variable for parameter in parameters if isinstance(parameter.structure, Input)}
    inside = [item for item in program.input_list() if program.variables[item.name] not in plain]
    if inside:
        tests = " or ".join(input_test(writer, program.variables[item.name], item) for item in inside)
        body.append(f"if {tests}:  # an input may not fit its placeholder: check it")
        body.append(f"    {check_inputs}(self, {given})")
    body.append("try:")
    body.extend(f"    {statement}" for statement in _statements(writer, program))
    body.append(f"    return {_structure(writer, program.outputs)}")
    body.append("except Exception as error:")
    body.append(f"    raise {explain}(self, error, {given})")
    lines.extend(f"    {line}" for line in body)
    return "\n".join(lines) + "\n", writer.globals


def compile_forward(source: str, namespace: dict[str, Any]) -> Callable[..., Any]:
    """Compile ``source`` (one function named ``forward``), visible to tracebacks
    (see :mod:`~torchx.functional._sources`); its signature leaves out
    ``*_extra`` (see :func:`generate`)."""
    forward = compile_function(source, "forward", namespace)
    signature = inspect.signature(forward)
    # ``*_extra`` only catches a mistake: tools reading the signature (how many inputs) do not see it
    forward.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[parameter for parameter in signature.parameters.values() if parameter.name != "_extra"]
    )
    return forward
