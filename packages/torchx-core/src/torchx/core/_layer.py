"""``Layer``: what every TorchX layer is, leaf or container.

A layer is an ``nn.Module`` that records its constructor arguments as given
(and a ``name=``), so that it can be written as a spec and read back. It is
always one of two kinds, each with its own base class:

- a leaf layer (:class:`~torchx.core.LeafLayer`) builds one native
  module from its first input and then *is* that module (``L.Linear``);
- a container (:class:`~torchx.core.Container`) holds layers and
  modules and runs its own forward over them (``L.Sequential``).

This module holds what the two share: the record, naming, errors, specs and
drawing.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

import torch
from torch import nn

from torchx.core._arguments import checker_of, signature_of
from torchx.core._errors import ArgumentError, NotBuiltError, ShapeError
from torchx.core._native_signature import is_default
from torchx.core._record import LayerRecord, init_module_state, layer_caption, name_problem
from torchx.core._shapes import TypedShape
from torchx.core._specs import SpecReader, SpecWriter, from_spec, to_spec
from torchx.core._torch_compat import is_fx_tracing
from torchx.core._tree import by_class

if TYPE_CHECKING:
    from torchx.core._graph import Graph

__all__ = [
    "Layer",
    "cannot_build_while_compiling",
    "is_built",
    "is_fx_tracing",
    "native_module",
]


class Layer(nn.Module):
    r"""Base class of every TorchX layer: an ``nn.Module`` that records how it was made.

    Subclass :class:`~torchx.core.LeafLayer` for a layer that builds one
    native module, or :class:`~torchx.core.Container` for one made
    of layers; ``Layer`` itself is what both are (``isinstance(m, Layer)``).
    """

    input_layout: ClassVar[str] = "(N, *)"
    """The expected input layout, for error messages (``"(N, C_in, H, W)"``)."""

    spec_version: ClassVar[int] = 1
    """The version of this layer's spec entry. Raise it when the entry changes
    (an argument renamed, a field moved), and register a migration from the
    previous version (:class:`~torchx.core.MigrationRegistry`), so
    that specs written before still load."""

    _torchx: LayerRecord
    _torchx_kind: ClassVar[str | None] = None
    """``"leaf"`` or ``"container"``: set by the two base classes only."""
    _torchx_plain_init: ClassVar[bool] = False

    def __init__(self, *, name: str | None = None, **arguments: Any) -> None:
        self._record_construction(name, arguments)

    def _record_construction(self, name: str | None, arguments: dict[str, Any]) -> None:
        """Set up the module and record ``arguments`` (checked against the
        annotations) and ``name``: what ``__init__`` does, callable without
        repacking the arguments (a leaf layer's constructor runs in bulk)."""
        cls = type(self)
        if cls._torchx_plain_init:
            init_module_state(self)
        else:
            super().__init__()
        problem = None if name is None else name_problem(name)
        if problem is not None:
            raise ArgumentError(f"{cls.__name__}: {problem}", argument="name")
        checker_of(cls).check(cls.__name__, arguments)
        self.__dict__["_torchx"] = LayerRecord(cls, arguments, name=name)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls._torchx_kind is None:
            raise TypeError(
                f"{cls.__name__} subclasses Layer directly: subclass torchx.core.LeafLayer for a "
                "layer that builds one native module, or torchx.core.Container for one made of layers"
            )
        after_layer = cls.__mro__[cls.__mro__.index(Layer) + 1 :]
        cls._torchx_plain_init = (
            next(base for base in after_layer if "__init__" in base.__dict__) is nn.Module
        )

    @property
    def arguments(self) -> Mapping[str, Any]:
        """The constructor arguments as the user gave them (nothing inferred)."""
        return self._torchx.arguments

    @property
    def is_built(self) -> bool:
        """Whether nothing in this layer is left to build."""
        raise NotImplementedError

    def layer_label(self) -> str:
        """How errors name this layer: its class name."""
        return self._torchx.layer_class.__name__

    def shape_error(self, problem: str, fix: str | None = None) -> ShapeError:
        """A ShapeError attributed to this layer."""
        return ShapeError(self.layer_label(), problem, fix, source=self)

    def check_inputs(self, *inputs: TypedShape) -> bool:
        """Check, without running anything, that this built layer takes inputs of
        these shapes and dtypes (``None``: a dynamic dim), raising a ShapeError or
        DtypeError for one that does not fit; False (the default) where it cannot
        tell, and :func:`torchx.build` runs it on meta tensors instead. A
        Functional can: its placeholders hold the shapes it takes."""
        return False

    def native_module(self) -> nn.Module:
        """The built native module, which is this very object after the build."""
        if not self.is_built:
            raise NotBuiltError(
                f"{self.layer_label()} is not built yet: call it on an input, or "
                "torchx.build(layer, input_shape) first"
            )
        return self

    # -- torch.compile builds it first ----------------------------------------
    # ``torch.compile(layer)`` treats a layer whose ``_initialize_hook`` is set as
    # torch's lazy modules: before each compiled call, outside the compiled
    # code, it calls ``_infer_parameters``. So the first compiled call builds
    # the layer, and dynamo compiles the built model once, never a build.
    # torch asks in two ways: ``hasattr`` (2.9 to 2.13 at least), and (2.15) whether
    # ``object.__getattribute__`` gives something other than None, as for the
    # hook handle a lazy module holds; the property answers both.

    @property
    def _initialize_hook(self) -> Callable[..., None]:
        """Present (not None) while the layer has something to build: the
        method that builds it, as a lazy module's hook. Once found built, a
        layer is taken to stay built: asked before every compiled call, this
        then costs a lookup, not a walk of the model (a layer added unbuilt
        later makes the compiled call say to build it)."""
        state = self.__dict__
        if state.get("_torchx_found_built") or self.is_built:
            state["_torchx_found_built"] = True
            raise AttributeError("_initialize_hook")
        return self._infer_parameters

    def _infer_parameters(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: Mapping[str, Any] | None = None
    ) -> None:
        """Build ``module`` (this layer) for the inputs of a compiled call, without running it."""
        raise NotImplementedError

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """``nn.Module.compile``: compile this layer's calls in place with
        ``torch.compile(*args, **kwargs)``; a layer not built yet builds on the
        first call, before the compiled code runs."""
        super().compile(*args, **kwargs)
        if not self.is_built and self._compiled_call_impl is not None:
            self.__dict__["_compiled_call_impl"] = _BuildsFirst(self, self._compiled_call_impl)

    # -- specs ------------------------------------------------------------------

    def to_spec(self) -> dict[str, Any]:
        """This layer (and its children) as plain JSON-compatible data."""
        return to_spec(self)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Layer:
        """Construct an unbuilt layer from ``spec`` (see :func:`torchx.core.from_spec`)."""
        return from_spec(spec, expect=cls)

    def spec_fields(self, writer: SpecWriter) -> dict[str, Any]:
        """The spec entries besides ``"type"`` and ``"name"``: the constructor
        arguments that differ from their defaults, as ``"args"``."""
        arguments = {
            name: writer.value(value, f"args.{name}") for name, value in self._given_arguments().items()
        }
        return {"args": arguments} if arguments else {}

    def _given_arguments(self) -> dict[str, Any]:
        """The constructor arguments that differ from their defaults."""
        defaults = _signature_defaults(self._torchx.layer_class)
        return {
            name: value
            for name, value in self.arguments.items()
            if name not in defaults or not is_default(value, defaults[name])
        }

    def _check_arguments(self) -> None:
        """Raise ArgumentError where torch's constructor refuses the arguments
        whatever the input (a leaf layer runs it on meta); a layer otherwise
        finds that out at its build. Specs, data from anywhere, are checked
        when read."""

    @classmethod
    def from_spec_fields(cls, fields: Mapping[str, Any], reader: SpecReader) -> Layer:
        """Construct from the spec entries besides ``"type"`` (see :meth:`spec_fields`)."""
        arguments = reader.arguments(cls, fields)
        return reader.construct(cls, arguments)

    # -- pictures ---------------------------------------------------------------

    def io_names(self) -> tuple[list[str] | None, list[str] | None]:
        """The names of this model's inputs and of its outputs, in order, for
        pictures (None: they are numbered); a Functional's are its own."""
        return None, None

    def draw_graph(self, graph: Graph, inputs: list[str]) -> list[str]:
        """Draw this layer into ``graph``, fed by the nodes ``inputs``; returns its
        output nodes. A layer is one node; containers draw their children."""
        return [graph.node(layer_caption(self), graph.next_output(self), "layer", inputs)]


def is_built(module: nn.Module) -> bool:
    """Whether ``module`` has nothing left to build (a plain torch module never has)."""
    return not isinstance(module, Layer) or module.is_built


def native_module(module: nn.Module) -> nn.Module:
    """The built native module of ``module``: ``module`` itself, once built (a
    built layer is its native module); raises for an unbuilt layer."""
    if isinstance(module, Layer):
        return module.native_module()
    return module


class _BuildsFirst:
    """The compiled call ``layer.compile()`` gives a layer not built yet: it
    builds the layer (:meth:`Layer._infer_parameters`), then, once the layer
    is built, gives way to the compiled call."""

    def __init__(self, layer: Layer, compiled: Callable[..., Any]) -> None:
        self.layer = layer
        self.compiled = compiled

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        layer = self.layer
        state = layer.__dict__
        state["_compiled_call_impl"] = None  # the build calls the layer: eagerly
        try:
            if not is_built(layer):
                layer._infer_parameters(layer, args, kwargs)
        finally:  # (a failed build resets the layer's state)
            state["_compiled_call_impl"] = self.compiled if is_built(layer) else self
        return self.compiled(*args, **kwargs)


def cannot_build_while_compiling(label: str) -> NotBuiltError:
    """The error for an unbuilt layer met by a tracer (``torch.compile``,
    ``torch.export``, ``torch.fx``). Under dynamo it raises the error itself,
    from code dynamo runs rather than traces: dynamo answers an exception
    raised by the traced code by skipping every frame on the stack from then
    on, for every model, until ``torch._dynamo.reset()``."""
    if torch.compiler.is_dynamo_compiling():
        _THIS_MODULE._refuse_in_dynamo(label)  # see __getattr__ below
    return _not_built_while_tracing(label)


def _not_built_while_tracing(label: str) -> NotBuiltError:
    return NotBuiltError(
        f"{label} is not built, and a layer cannot build itself while torch.compile, "
        "torch.export or torch.fx traces it: call torchx.build(model, input_shape) first"
    )


def _refuse(label: str) -> NoReturn:
    raise _not_built_while_tracing(label)


_THIS_MODULE = sys.modules[__name__]


def __getattr__(name: str) -> object:
    """``_refuse_in_dynamo``: :func:`_refuse` marked for dynamo to call rather than
    trace, made when dynamo first reads it (as it traces
    :func:`cannot_build_while_compiling`: dynamo reads a module's attribute with
    ``getattr``) rather than at import, since ``torch.compiler.assume_constant_result``
    imports ``torch._dynamo``, which costs more than half of ``import torch`` again."""
    if name != "_refuse_in_dynamo":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    marked = torch.compiler.assume_constant_result(_refuse)  # type: ignore[no-untyped-call]
    globals()[name] = marked  # one object: dynamo's guards on it hold
    return marked


@by_class
def _signature_defaults(cls: type[Layer]) -> Mapping[str, Any]:
    """The default of each ``cls.__init__`` parameter that has one (cached)."""
    parameters = signature_of(cls)
    return {name: p.default for name, p in parameters.items() if p.default is not inspect.Parameter.empty}
