"""``Functional``: a model defined by placeholders, run by generated code."""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from torchx.core import Container, DtypeError, Layer, LayerError, ShapeError
from torchx.functional._answers import Answer, KnownOutputs, MetaAnswers, state_below
from torchx.functional._codegen import (
    MISSING,
    MetaHelpers,
    code_namespace,
    compile_forward,
    dtype_kind,
    generate,
    generate_scriptable,
    parameters_of,
)
from torchx.functional._dims import Dim, export_shapes
from torchx.functional._placeholder import (
    OwnMetaOutput,
    answering_copies,
    may_return_input,
    meta_call,
    meta_signature,
    shares_input,
)
from torchx.functional._program import AttributeVar, BatchOf, Input, Program, Step, Var, normal_form, trace
from torchx.plugin import (
    Graph,
    InputLike,
    MetaFormulas,
    SpecReader,
    SpecWriter,
    Summary,
    TypedShape,
    add_note,
    allocation_budget,
    copying_for_shapes,
    explain_failure,
    find_symbolic,
    format_shape,
    given_name,
    init_module_state,
    is_fx_tracing,
    is_symbolic,
    layer_name,
)

__all__ = ["Functional"]


_KNOWN = "_torchx_known"
"""Instance key: the Functional's :class:`KnownOutputs`."""
_META_FORWARD = "_torchx_meta_forward"
"""Instance key: the forward for meta inputs (see :meth:`Functional._meta_forward`)."""
_ANSWERING_CALLS = "_torchx_answering"
"""Instance key: how many blocks of :meth:`Functional.answering_meta_calls` are open."""
_ANSWERING_LOCK = threading.Lock()


class Functional(Container, OwnMetaOutput):
    """A model from placeholders: ``Functional(inputs=x, outputs=y)``.

    ``inputs`` and ``outputs`` are each a placeholder, or a list, tuple or dict
    of them (nested allowed). The model's ``forward`` takes the inputs in that
    structure — positionally for a single placeholder or a list, by keyword (or
    as one dict) for a dict — and returns the outputs in theirs (dict outputs
    keep their key order). Inputs may be intermediate placeholders: the model is
    then the sub-graph between them and the outputs.

    The forward is generated Python, one statement per recorded operation (see
    :attr:`code`); a layer called at several places is one submodule. A layer
    given a ``name=`` is the submodule of that name (``name="layer1.0.conv1"``
    gives the state-dict keys ``layer1.0.conv1.weight``...); the others get
    readable generated names (``conv2d``, ``conv2d_1``). An ``L.Parameter``'s
    tensor is the model's own parameter of that name (``name="class_token"``:
    ``model.class_token``, key ``class_token``, as in torchvision). A
    Functional is a TorchX layer: call it on placeholders inside another graph,
    put it in ``L.Sequential`` or in any ``nn.Module``.

    Each call checks its inputs against their placeholders first (rank, static
    dims after the batch, the dtype kind of a placeholder that is not
    floating): a misfit is a ``ShapeError`` (``DtypeError``) naming the input,
    and says ``inputs swapped?`` where the tensors fit in another order.

    Examples::

        >>> x = Placeholder((8, 3, 32, 32))
        >>> y = L.Linear(10)(L.Conv2d(16, 3)(x).flatten())
        >>> model = Functional(inputs=x, outputs=y)
        >>> model(torch.randn(30, 3, 32, 32)).shape
        torch.Size([30, 10])
    """

    _torchx_program: Program
    _torchx_code: str

    def __init__(self, inputs: Any, outputs: Any, *, name: str | None = None) -> None:
        super().__init__(name=name)
        program = trace(inputs, outputs, code_namespace(), _reserved_names(Functional))
        self._mirror_modules(program.modules, program.tensors)
        for path, tensor in program.buffers.items():
            owner, last = self._owner_of(path)
            owner.register_buffer(last, tensor, persistent=program.constants[path])
        program.modules, program.tensors, program.buffers = {}, {}, {}
        self.__dict__["_torchx_program"] = program
        self._compile()

    def _compile(self) -> None:
        source, namespace = generate(self._torchx_program, _HELPERS)
        self.__dict__["_torchx_code"] = source
        self.__dict__["forward"] = compile_forward(source, namespace).__get__(self)

    # -- shapes: what the steps give, without running the layers ----------------------

    def meta_output(self, args: tuple[Any, ...]) -> tuple[Any, bool]:
        """The output for meta ``args`` (the forward's parameters), and whether it
        is fresh memory: the steps run on meta tensors, each layer on a meta
        copy of itself, each nested Functional answering from what it worked out.

        Answers are kept by input signature, so a Functional called at several
        places, or nested in others, is worked out once per input shape, not
        once per call of each enclosing one (a model calling the one inside it
        twice, twelve levels deep, would be 4,096 runs). They stand while what
        a meta run reads below is unchanged (see :func:`state_below`: a layer
        replaced anywhere below, tensors cast, a setting changed), which each
        call checks.
        """
        known = self._known_outputs()
        try:
            key: Hashable | None = meta_signature(args)
        except TypeError:
            key = None
        answer = None if key is None else known.answers.get(key)
        if answer is None:
            with MetaFormulas():  # torch's own meta ops may import its compiler
                output = self._meta_forward()(*args)
            if known.may_return_input is None:
                known.may_return_input = may_return_input(self)
            answer = Answer.of(output, args, not shares_input(output, args) and not known.may_return_input)
            if key is not None:
                known.keep(key, answer)
        return answer.output_for(args), answer.fresh

    def _known_outputs(self) -> KnownOutputs:
        """The answers kept for what is below now (taken before an answer is
        worked out: a change meanwhile makes the next call work it out again)."""
        state = state_below(self)
        known: KnownOutputs | None = self.__dict__.get(_KNOWN)
        if known is None or known.state != state:
            known = self.__dict__[_KNOWN] = KnownOutputs(state)
        return known

    def _meta_forward(self) -> Callable[..., Any]:
        """The forward for meta inputs (see :func:`generate`), made on first use."""
        forward: Callable[..., Any] | None = self.__dict__.get(_META_FORWARD)
        if forward is None:
            source, namespace = generate(self._torchx_program, _HELPERS, MetaHelpers(meta_call, _meta_tensor))
            forward = self.__dict__[_META_FORWARD] = compile_forward(source, namespace).__get__(self)
        return forward

    @contextmanager
    def answering_meta_calls(self) -> Iterator[None]:
        """Inside the block, the forward answers calls on meta tensors from
        :meth:`meta_output` (see :class:`MetaAnswers`), for a build that runs
        the modules holding this one in place. Blocks may overlap (threads,
        nested builds): the plain forward returns when the last one ends."""
        state = self.__dict__
        with _ANSWERING_LOCK:
            count = state.get(_ANSWERING_CALLS, 0)
            if not count:
                state["forward"] = MetaAnswers(self, state["forward"])
            state[_ANSWERING_CALLS] = count + 1
        try:
            yield
        finally:
            with _ANSWERING_LOCK:
                count = state.pop(_ANSWERING_CALLS) - 1
                if count:
                    state[_ANSWERING_CALLS] = count
                else:
                    state["forward"] = state["forward"].forward

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the generated forward (see :attr:`code`).

        Calls reach the generated function directly (it is an instance
        attribute, so it costs what a hand-written forward costs); this
        class-level entry serves tools that read ``type(model).forward``, such
        as ``torch.fx.symbolic_trace``.
        """
        generated = self.__dict__["forward"]
        if is_fx_tracing():  # the arguments arrive as one Proxy
            return generated(*(args[index] for index in range(len(self._torchx_program.parameters))))
        return generated(*args, **kwargs)

    def __prepare_scriptable__(self) -> nn.Module:
        """``torch.jit.script`` compiles the steps alone, over the same submodules; a
        layer inside that a TorchX layer knows cannot be scripted (a ``Lambda``)
        raises torch's error first, noted with its place in this Functional."""
        for path, module in self.named_modules():
            check = getattr(module, "__torchx_script_check__", None)
            if check is not None:
                check("Functional", path)
        source, namespace = generate_scriptable(self._torchx_program)
        # A class of its own: TorchScript shares one compiled forward among
        # modules of one class with the same attributes.
        form_class = type(
            "ScriptableFunctional", (_ScriptableFunctional,), {"forward": compile_forward(source, namespace)}
        )
        form: nn.Module = form_class(self._modules, self._parameters, self._buffers)
        form.training = self.training  # its forward reads the mode (dropout_p=(p if self.training else 0.0))
        return form

    @property
    def code(self) -> str:
        """The generated ``forward``'s Python source."""
        return self._torchx_code

    @property
    def is_built(self) -> bool:
        """Always True: a Functional's layers build on its placeholders."""
        return True

    def check_inputs(self, *inputs: TypedShape) -> bool:
        """Check inputs of these shapes against the placeholders, without running
        anything: each fits as a tensor does when the model is called (a
        dynamic dim, ``None``, fits only a dynamic dim of its placeholder).
        False where one does not fit, and for a forward taking lists or dicts
        of tensors, which :func:`torchx.build` cannot give."""
        parameters = parameters_of(self._torchx_program)
        if len(inputs) != len(parameters) or not all(isinstance(p.structure, Input) for p in parameters):
            return False
        given = {}
        for parameter, typed in zip(parameters, inputs, strict=True):
            expected: Input = parameter.structure
            dims = list(expected.each_dim())
            sizes: list[int] = []
            for index, size in enumerate(typed.shape):
                want, dim = dims[index] if index < len(dims) else (None, None)
                if size is None and index and want is not None:
                    raise ShapeError(
                        f"{_label(self)} input {parameter.key!r}",
                        f"dim {index} is dynamic (None) in the shape given, {want} in its placeholder",
                        fix=f"give {want} there, or define the placeholder with None in dim {index}",
                        source=self,
                    )
                sizes.append(size if size is not None else 1 if dim is None else dim.min)
            given[parameter.key] = torch.empty(sizes, dtype=typed.dtype, device="meta")
        return _input_error(self, given) is None  # else the meta run names the misfit, in the shapes given

    def dynamic_shapes(self) -> dict[str, Any]:
        """The dynamic dims of its inputs, as ``torch.export`` takes them:
        ``torch.export.export(model, (ids,), dynamic_shapes=model.dynamic_shapes())``
        keeps every ``None`` dim and :class:`~torchx.functional.Dim` dynamic, bounds
        included (dim 0 is one batch for every input; dims of one name are one dim)."""
        return export_shapes(
            {parameter.key: parameter.structure for parameter in parameters_of(self._torchx_program)}
        )

    @property
    def inputs(self) -> list[Input]:
        """The model's inputs: name, shape (``None``: dynamic) and dtype."""
        return self._torchx_program.input_list()

    # -- copies and pickles regenerate the forward -----------------------------------

    def _mirror_modules(
        self, modules: Mapping[str, nn.Module | None], tensors: Mapping[str, nn.Parameter]
    ) -> None:
        """Hold ``modules`` (by submodule path) as submodules that are also
        plain attributes, and ``tensors`` (by path) as parameters; the parts of
        dotted paths are ModuleGroups."""
        mirror_modules(self, {})
        for path, module in modules.items():
            owner, last = self._owner_of(path)
            owner._modules[last] = module
        for path, tensor in tensors.items():
            owner, last = self._owner_of(path)
            owner.register_parameter(last, tensor)

    def _owner_of(self, path: str) -> tuple[nn.Module, str]:
        """The module holding what ``path`` names (made as needed), and its name there."""
        *groups, last = path.split(".")
        owner: nn.Module = self
        for part in groups:
            group = owner._modules.get(part)
            if group is None:
                group = owner._modules[part] = ModuleGroup()
            owner = group
        return owner, last

    def __getstate__(self) -> dict[str, Any]:
        state = mirrored_state(self, super().__getstate__())
        for key in ("forward", _META_FORWARD, _KNOWN, _ANSWERING_CALLS):
            state.pop(key, None)
        if answering_copies() or copying_for_shapes():  # a meta copy: it answers as this model does
            state[_ORIGINAL] = _Original(self)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        original = state.pop(_ORIGINAL, None)
        super().__setstate__(state)  # type: ignore[no-untyped-call]
        mirror_modules(self, dict(self._modules))
        if isinstance(original, _Original):
            self.__dict__["forward"] = MetaAnswers(original.model, self._compiled_forward)
        else:
            self._compile()

    def _compiled_forward(self, *args: Any, **kwargs: Any) -> Any:
        """A meta copy's generated forward, made on the first call its original
        does not answer (most copies never make it)."""
        answers = self.__dict__["forward"]
        self._compile()
        answers.forward = self.__dict__["forward"]
        self.__dict__["forward"] = answers
        return answers.forward(*args, **kwargs)

    def extra_repr(self) -> str:
        inputs = ", ".join(f"{item.name}: {format_shape(item.shown())}" for item in self.inputs)  # type: ignore[arg-type]
        return f"inputs=({inputs})"

    # -- specs and summaries are in their own modules --------------------------------

    def spec_fields(self, writer: SpecWriter) -> dict[str, Any]:
        from torchx.functional._spec import program_to_spec

        return program_to_spec(self, writer)

    @classmethod
    def from_spec_fields(cls, fields: Mapping[str, Any], reader: SpecReader) -> Layer:
        from torchx.functional._spec import as_spec_error, program_from_spec

        with allocation_budget():  # its layers build one by one, but are checked as one model
            inputs, outputs = program_from_spec(fields, reader)
        with as_spec_error(reader.where):
            return cls(inputs, outputs)

    @classmethod
    def reserved_names(cls) -> set[str]:
        """The names a Functional's submodules cannot take: its own attributes (``summary``,
        ``training``, ``forward``...), which a layer's ``name=`` must keep clear of."""
        return set(_reserved_names(cls))

    def io_names(self) -> tuple[list[str] | None, list[str] | None]:
        """The inputs' names, and the outputs' dict keys (``aux.loss`` when
        nested; None for outputs in a list or tuple)."""
        outputs = self._torchx_program.outputs
        output_names = _key_paths(outputs, "") if isinstance(outputs, dict) else None
        return [item.name for item in self.inputs], output_names

    def draw_graph(self, graph: Graph, inputs: list[str]) -> list[str]:
        from torchx.functional._draw import draw_program

        return draw_program(self, graph, inputs)

    def summary(
        self,
        *inputs: InputLike,
        depth: int | None = None,
        columns: Sequence[str] | None = None,
        dtype: torch.dtype | None = None,
    ) -> Summary:
        """``torchx.nn.Module.summary``, for the model's own input shapes when
        no ``inputs`` are given (inputs in a list or dict: give them)."""
        if not inputs:
            if any(
                not isinstance(parameter.structure, Input) for parameter in self._torchx_program.parameters
            ):
                raise TypeError("this Functional takes a list or dict of inputs: give summary() their shapes")
            inputs = tuple(TypedShape(item.shape, item.dtype) for item in self.inputs)
        return super().summary(*inputs, depth=depth, columns=columns, dtype=dtype)

    def node_table(self) -> str:
        """A table of the graph's steps: node, layer or operation, output
        shape, parameters (shared layers once); and totals."""
        from torchx.functional._summary import node_table

        return node_table(self)


class _ScriptableFunctional(nn.Module):
    """What ``torch.jit.script`` compiles for a Functional: its submodules and
    the plain steps of its forward."""

    def __init__(
        self,
        modules: Mapping[str, nn.Module | None],
        parameters: Mapping[str, nn.Parameter | None],
        buffers: Mapping[str, torch.Tensor | None],
    ) -> None:
        super().__init__()
        for name, module in modules.items():
            self.add_module(name, module)
        for name, parameter in parameters.items():
            self.register_parameter(name, parameter)
        for name, buffer in buffers.items():
            self.register_buffer(name, buffer)


class ModuleGroup(nn.Module):
    """Holds the layers whose names share a first part: ``layer1`` of
    ``layer1.0.conv1`` (a Functional's named layers nest as their names do),
    and the tensors of ``L.Parameter`` layers named inside it (``encoder`` of
    ``encoder.pos_embedding``, a parameter of the group). It has no forward;
    its submodules are plain attributes, as a Functional's are."""

    def __init__(self) -> None:
        init_module_state(self)  # nn.Module.__init__'s state: a graph with nested names makes many groups
        mirror_modules(self, {})

    def __getstate__(self) -> dict[str, Any]:
        return mirrored_state(self, super().__getstate__())  # type: ignore[no-untyped-call]

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)  # type: ignore[no-untyped-call]
        mirror_modules(self, dict(self._modules))


def mirror_modules(owner: nn.Module, modules: Mapping[str, nn.Module | None]) -> None:
    """Make ``owner._modules`` an :class:`_AttributeModules` holding ``modules``."""
    mirrored = _AttributeModules(owner)
    owner.__dict__["_modules"] = mirrored
    for name, module in modules.items():
        mirrored[name] = module


def mirrored_state(owner: nn.Module, state: dict[str, Any]) -> dict[str, Any]:
    """``owner``'s pickled state without the attribute mirrors of its submodules."""
    state["_modules"] = modules = dict(owner._modules)
    for name in modules:
        state.pop(name, None)
    return state


class _AttributeModules(dict[str, "nn.Module | None"]):
    """A Functional's ``_modules`` that mirrors every entry as a plain instance
    attribute, so that ``self.conv2d`` in the generated forward resolves like any
    attribute, without nn.Module.__getattr__'s fallback search: the forward costs
    what a hand-written one costs. Every way torch adds, replaces or removes a
    submodule goes through this dict, so the mirror cannot go stale."""

    def __init__(self, owner: nn.Module) -> None:
        super().__init__()
        self._owner = weakref.ref(owner)  # whose attributes it mirrors into (weakly: no cycle through them)

    def _owner_state(self) -> dict[str, Any]:
        owner = self._owner()
        return {} if owner is None else owner.__dict__

    def __setitem__(self, name: str, module: nn.Module | None) -> None:
        super().__setitem__(name, module)
        self._owner_state()[name] = module

    def __delitem__(self, name: str) -> None:
        super().__delitem__(name)
        self._owner_state().pop(name, None)

    def pop(self, name: str, *default: Any) -> Any:
        self._owner_state().pop(name, None)
        return super().pop(name, *default)


_ORIGINAL = "_torchx_original"
"""State key: the :class:`_Original` of a Functional copied for a meta run."""


class _Original:
    """The Functional a meta copy is made of (see :func:`answering_copies`):
    deep copies keep it as it is, pickles drop it (it unpickles as None)."""

    __slots__ = ("model",)

    def __init__(self, model: Functional) -> None:
        self.model = model

    def __deepcopy__(self, memo: dict[int, Any]) -> _Original:
        return self

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return type(None), ()


def _meta_tensor(tensor: torch.Tensor) -> torch.Tensor:
    """A meta stand-in of a tensor the model holds (an ``L.Parameter``'s, a
    layer's parameter the graph reads, a constant)."""
    return tensor if tensor.is_meta else torch.empty_like(tensor, device="meta")


_RESERVED_NAMES: dict[type[Functional], frozenset[str]] = {}


def _reserved_names(cls: type[Functional]) -> frozenset[str]:
    """What :meth:`Functional.reserved_names` gives, worked out once per class (its attributes, as
    ``dir`` lists them, and a module's own)."""
    names = _RESERVED_NAMES.get(cls)
    if names is None:
        names = _RESERVED_NAMES[cls] = frozenset(
            {*(name for klass in cls.__mro__ for name in vars(klass)), *vars(nn.Module())}
            | {"_torchx", "_torchx_code", "_torchx_program"}
        )
    return names


def _label(model: Functional) -> str:
    """How messages name ``model``: ``Functional``, or ``Functional 'encoder'`` when it was given a name."""
    name = given_name(model)
    return "Functional" if name is None else f"Functional {name!r}"


def _described(structure: Any) -> str:
    """What an input takes, as messages show it: ``(None, 4)`` (dim 0, the
    batch, as None; a named dim by name and bounds: ``(None, T<=64)``), with the dtype where it is not floating (``(None, 10)
    torch.int64``); lists, tuples and dicts of them as written."""
    if isinstance(structure, Input):
        dims = list(structure.shown())  # named dims by name and bounds: (None, T<=64)
        if dims and not isinstance(dims[0], str):
            dims[0] = None  # the batch
        shown = format_shape(dims)  # type: ignore[arg-type]  # format_shape prints str dims as they are
        return shown if structure.dtype.is_floating_point else f"{shown} {structure.dtype}"
    if isinstance(structure, dict):
        return "{" + ", ".join(f"{key!r}: {_described(item)}" for key, item in structure.items()) + "}"
    items = ", ".join(_described(item) for item in structure)
    return f"[{items}]" if isinstance(structure, list) else f"({items}{',' if len(structure) == 1 else ''})"


def _takes(model: Functional) -> str:
    """The model's inputs by name, with what each takes: ``a: (None, 1), b: (None, 4)``."""
    return ", ".join(
        f"{parameter.key}: {_described(parameter.structure)}"
        for parameter in parameters_of(model._torchx_program)
    )


def _prepared_inputs(
    model: Functional, values: tuple[Any, ...], extra: tuple[Any, ...], keywords: dict[str, Any]
) -> tuple[Any, tuple[Any, ...]]:
    """The forward's call where its cheap test is true: the output recorded
    on placeholders (this model as one node of a graph), else None; and the
    inputs, placed by name or from one dict, all given, and checked against
    their placeholders (see :func:`_check_inputs`)."""
    if extra or keywords:
        values = _keyword_inputs(model, values, extra, keywords)
    program = model._torchx_program
    if isinstance(program.inputs, dict) and type(values[0]) is dict and all(v is MISSING for v in values[1:]):
        values = _unpack_inputs(model, values[0])
    parameters = parameters_of(program)
    given = {parameter.key: value for parameter, value in zip(parameters, values, strict=True)}
    if any(value is MISSING for value in values):
        missing = [name for name, value in given.items() if value is MISSING]
        raise TypeError(f"{_label(model)} is missing inputs {missing}; it takes {_takes(model)}")
    if any(
        is_symbolic(value)
        if isinstance(parameter.structure, Input)
        else find_symbolic((value,), {}) is not None
        for parameter, value in zip(parameters, values, strict=True)
    ):
        symbolic = find_symbolic(values, {})
        assert symbolic is not None
        return symbolic.__torchx_call__(model, values, {}), values
    _check_inputs(model, given)
    return None, values


def _unpack_inputs(model: Functional, given: dict[str, Any]) -> tuple[Any, ...]:
    """The forward's parameters from one dict of inputs, by their names."""
    names = [parameter.key for parameter in parameters_of(model._torchx_program)]
    extra = sorted(map(str, set(given) - set(names)))
    if extra:
        raise TypeError(f"{_label(model)} got unexpected inputs {extra}; it takes {_takes(model)}")
    return tuple(given.get(name, MISSING) for name in names)


def _keyword_inputs(
    model: Functional, values: tuple[Any, ...], extra: tuple[Any, ...], keywords: dict[str, Any]
) -> tuple[Any, ...]:
    """The forward's parameters from the inputs given beyond them: refused
    when given by position (one too many), else added by name. A name matches
    as Python matches identifiers (``image=`` in fullwidth letters is
    ``image=``); input names that Python reads as one are refused when the
    model is defined."""
    if extra:
        count = len(values)
        raise TypeError(
            f"{_label(model)} takes {count} input{'s' if count > 1 else ''} ({_takes(model)}), "
            f"got {count + len(extra)} by position"
        )
    names = [parameter.key for parameter in parameters_of(model._torchx_program)]
    position = {normal_form(name): index for index, name in enumerate(names)}
    merged = list(values)
    unknown = []
    for name, value in keywords.items():
        index = position.get(normal_form(name))
        if index is None:
            unknown.append(name)
        elif merged[index] is not MISSING:
            raise TypeError(f"{_label(model)} got input {names[index]!r} twice (by position and by name)")
        else:
            merged[index] = value
    if unknown:
        raise TypeError(f"{_label(model)} got unexpected inputs {sorted(unknown)}; it takes {_takes(model)}")
    return tuple(merged)


def _check_inputs(model: Functional, given: dict[str, Any]) -> None:
    """Raise the error of the first input that does not fit its placeholder
    (see :func:`_input_error`). The forward calls it when its cheap test of
    the inputs fails; tracers' proxies and vmap's per-example tensors are let
    through, each as its tracer takes it. Under torch.compile the fit is traced
    (shape compares that dynamo guards on: inputs that fit stay in one graph)
    and a misfit breaks the graph to raise the error as eager does (with
    ``fullgraph=True``, torch refuses the break and names the reason)."""
    if not torch.compiler.is_dynamo_compiling():
        if not is_fx_tracing() and torch._C._functorch.peek_interpreter_stack() is None:
            _raise_input_error(model, given)
    elif not all(
        not isinstance(value, torch.Tensor)
        or _fits(expected, value)
        or torch._C._functorch.is_batchedtensor(value)
        for _, expected, value in _input_leaves(model, given)
    ):
        _THIS_MODULE._raise_input_error_eagerly(model, given)  # see __getattr__ below


def _raise_input_error(model: Functional, given: dict[str, Any]) -> None:
    """Raise :func:`_input_error`'s error, if any."""
    error = _input_error(model, given)
    if error is not None:
        raise error


_MISFIT = (
    "an input of a TorchX Functional does not fit its placeholder; "
    "call the model uncompiled to see which and how to fix it"
)
"""Why a compiled Functional breaks its graph on a misfit (torch names it under ``fullgraph=True``)."""

_THIS_MODULE = sys.modules[__name__]


def __getattr__(name: str) -> object:
    """``_raise_input_error_eagerly``: :func:`_raise_input_error` that dynamo runs
    rather than traces, made when dynamo first reads it (as it traces
    :func:`_check_inputs`: dynamo reads a module's attribute with ``getattr``)
    rather than at import, since ``torch.compiler.disable`` imports
    ``torch._dynamo``, which costs more than half of ``import torch`` again."""
    if name != "_raise_input_error_eagerly":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    disabled = torch.compiler.disable(_raise_input_error, reason=_MISFIT)  # type: ignore[no-untyped-call]
    globals()[name] = disabled  # one object: dynamo's guards on it hold
    return disabled


def _input_error(model: Functional, given: dict[str, Any]) -> LayerError | None:
    """The error for the first tensor in ``given`` that does not fit its
    placeholder (rank, static dims after the batch, dtype kind where the
    placeholder is not floating), naming the input; None when all fit. The
    fix says which inputs to swap where the tensors fit in another order."""
    leaves = list(_input_leaves(model, given))
    for where, expected, value in leaves:
        if not isinstance(value, torch.Tensor) or _fits(expected, value):
            continue
        layer = f"{_label(model)} input {where}"
        fix = _swap_fix(leaves)
        shown = format_shape((None, *expected.shape[1:]) if expected.shape else ())
        if not _fits_shape(expected.shape, tuple(value.shape)):
            if fix is None:
                fix = _shape_fix(where, expected.shape, tuple(value.shape))
            problem = f"expected shape {shown} (dim 0 is the batch), got {format_shape(tuple(value.shape))}"
            return ShapeError(layer, problem, fix=fix, source=model)
        outside = _outside_bounds(expected, value)
        if outside is not None:
            index, dim = outside
            problem = f"dim {index} is {dim.shown()}, got {value.shape[index]} (shape {format_shape(tuple(value.shape))})"
            fix = f"give inputs within {dim.shown()}, or define the model for them: L.Dim({dim.name!r}, ...) with wider bounds"
            return ShapeError(layer, problem, fix=fix, source=model)
        kind = dtype_kind(expected.dtype)
        problem = f"expected {kind} dtype (the placeholder's is {expected.dtype}), got {value.dtype}"
        return DtypeError(
            layer, problem, fix=fix or f"pass {_source(where)}.to({expected.dtype})", source=model
        )
    return None


def _input_leaves(model: Functional, given: dict[str, Any]) -> Iterator[tuple[str, Input, Any]]:
    """Each input with its path in messages (``'image'``, ``inputs[0]['foo']``)
    and the value given for it (the values of missing entries are left out)."""
    program = model._torchx_program
    for index, parameter in enumerate(parameters_of(program)):
        structure = parameter.structure
        start = (
            repr(parameter.key)
            if isinstance(structure, Input)
            else _entry(program.inputs, index, parameter.key)
        )
        yield from _leaves(start, structure, given.get(parameter.key))


def _fits(expected: Input, value: torch.Tensor) -> bool:
    """Whether tensor ``value`` fits the placeholder ``expected``: its shape,
    its named dims' bounds, and its dtype's kind where the placeholder is not floating."""
    kind = dtype_kind(expected.dtype)
    return (
        _fits_shape(expected.shape, tuple(value.shape))
        and _outside_bounds(expected, value) is None
        and (kind == "floating" or dtype_kind(value.dtype) == kind)
    )


def _outside_bounds(expected: Input, value: torch.Tensor) -> tuple[int, Dim] | None:
    """The first named dim of ``expected`` whose size in ``value`` lies outside its bounds, with its index."""
    for index, dim in enumerate(expected.dims):
        if dim is not None and index < value.dim() and not dim.admits(value.shape[index]):
            return index, dim
    return None


def _fits_shape(expected: tuple[int | None, ...], got: tuple[int, ...]) -> bool:
    """Whether shape ``got`` fits ``expected`` (dim 0, the batch, always fits)."""
    return len(got) == len(expected) and all(
        want is None or index == 0 or want == size
        for index, (want, size) in enumerate(zip(expected, got, strict=True))
    )


def _shape_fix(where: str, expected: tuple[int | None, ...], got: tuple[int, ...]) -> str | None:
    """The fix for one input's shape: add the batch dim it lacks, or, for the
    same rank, define the placeholder with None in the dims that differ (if
    the model takes other sizes there, as a CNN with adaptive pooling does)."""
    if _fits_shape(expected, (1, *got)):
        return f"add the batch dim: {_source(where)}.unsqueeze(0)"
    if len(got) != len(expected):
        return None
    differ = [
        index for index, (want, size) in enumerate(zip(expected, got, strict=True)) if index and want != size
    ]
    dims = ", ".join(map(str, differ))
    free = format_shape(
        [None if index == 0 or index in differ else want for index, want in enumerate(expected)]
    )
    return (
        f"pass a tensor of that shape; if the model takes other sizes in dim{'s' * (len(differ) > 1)} "
        f"{dims}, define its placeholder with None there: Placeholder({free})"
    )


def _swap_fix(leaves: list[tuple[str, Input, Any]]) -> str | None:
    """``inputs swapped? ...`` where every given tensor fits some input and
    together they fit all, in an order other than the one given (a matching
    found by augmenting paths, each input trying its own tensor first)."""
    if not all(isinstance(value, torch.Tensor) for _, _, value in leaves):
        return None
    count = len(leaves)
    fitting = [[_fits(expected, value) for _, _, value in leaves] for _, expected, _ in leaves]
    taken_by: list[int | None] = [None] * count  # tensor -> the input it goes to

    def place(slot: int, seen: set[int]) -> bool:
        for tensor in sorted(range(count), key=lambda tensor: tensor != slot):
            if fitting[slot][tensor] and tensor not in seen:
                seen.add(tensor)
                holder = taken_by[tensor]
                if holder is None or place(holder, seen):
                    taken_by[tensor] = slot
                    return True
        return False

    if not all(place(slot, set()) for slot in range(count)):
        return None
    moves = [
        f"{leaves[slot][0]} takes the tensor given as {leaves[tensor][0]}"
        for tensor, slot in enumerate(taken_by)
        if slot is not None and slot != tensor
    ]
    return "inputs swapped? they fit in another order: " + ", ".join(sorted(moves))


def _source(where: str) -> str:
    """How a fix writes the value of the input at ``where``: ``image``, ``inputs[0]['foo']``."""
    return where.strip("'") if where.startswith("'") else where


def _explain(model: Functional, error: Exception, given: dict[str, Any]) -> Exception:
    """The error naming the input that does not fit its placeholder (see
    :func:`_input_error`), or the layer (by its attribute name) whose built
    size the input no longer fits; else ``error`` itself."""
    misfit = _input_error(model, given)
    if misfit is not None:
        return misfit
    step, values = _failing_step(model, error)
    if step is None or step.kind != "module":
        if step is not None:
            add_note(error, f"raised in Functional step {step.var!r}{_defined_at(step)}")
        return error
    module = model.get_submodule(step.target)
    explained = explain_failure(module, tuple(_resolved(arg, values) for arg in step.args), error)
    if explained is None:
        add_note(error, f"raised in Functional.{step.target} ({layer_name(module)}){_defined_at(step)}")
        return error
    return explained.within(f"Functional.{step.target}", model)


def _defined_at(step: Step) -> str:
    """Where ``step`` was recorded, as messages say it: `` (defined at model.py:12)``."""
    return "" if step.defined_at is None else " (defined at {}:{})".format(*step.defined_at)


def _key_paths(structure: Any, prefix: str) -> list[str] | None:
    """The dotted key of each leaf of a structure of dicts (None if a list or
    tuple is inside: its entries have no names)."""
    if isinstance(structure, Var):
        return [prefix]
    if not isinstance(structure, dict):
        return None
    paths: list[str] = []
    for key, item in structure.items():
        inner = _key_paths(item, f"{prefix}{key}." if isinstance(item, dict) else f"{prefix}{key}")
        if inner is None:
            return None
        paths.extend(inner)
    return paths


def _entry(inputs: Any, index: int, key: str) -> str:
    """How messages name a top-level entry holding several inputs: ``inputs[0]``, ``inputs['meta']``."""
    return f"inputs[{key!r}]" if isinstance(inputs, dict) else f"inputs[{index}]"


def _leaves(where: str, structure: Any, value: Any) -> Iterator[tuple[str, Input, Any]]:
    """Each input inside ``structure`` with its path (``inputs[0]['foo']``) and
    its value in ``value``; the inputs whose values are missing are left out."""
    if isinstance(structure, Input):
        yield where, structure, value
        return
    items = structure.items() if isinstance(structure, dict) else enumerate(structure)
    for key, item in items:
        try:
            inner = value[key]
        except (KeyError, IndexError, TypeError):
            continue  # a missing or odd value: the forward's own error says so
        yield from _leaves(f"{where}[{key!r}]", item, inner)


def _failing_step(model: Functional, error: BaseException) -> tuple[Step | None, dict[str, Any]]:
    """The generated statement that raised ``error``, and the forward's variables then."""
    trace = error.__traceback__
    if trace is None:
        return None, {}
    lines = model._torchx_code.splitlines()
    line = lines[trace.tb_lineno - 1].strip() if 0 < trace.tb_lineno <= len(lines) else ""
    var = line.split(" = ", 1)[0]
    for step in model._torchx_program.steps:
        if step.var == var:
            return step, dict(trace.tb_frame.f_locals)
    return None, {}


def _resolved(value: Any, variables: dict[str, Any]) -> Any:
    """A step argument as the forward saw it (variables replaced by their values)."""
    if isinstance(value, Var):
        return variables.get(value.name)
    if isinstance(value, BatchOf):
        tensor = variables.get(value.name)
        return tensor.shape[0] if isinstance(tensor, torch.Tensor) else None
    if isinstance(value, AttributeVar):
        tensor = variables.get(value.name)
        return getattr(tensor, value.attribute) if isinstance(tensor, torch.Tensor) else None
    if isinstance(value, (tuple, list)):
        return type(value)(_resolved(item, variables) for item in value)
    return value


_HELPERS: dict[str, Callable[..., Any]] = {
    "_prepared_inputs": _prepared_inputs,
    "_check_inputs": _check_inputs,
    "_explain": _explain,
}
"""The functions the generated forwards call with the model first (see :func:`generate`)."""
