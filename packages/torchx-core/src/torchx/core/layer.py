"""The Layer protocol: a module that builds its native module from its first input.

A layer subclass declares

- ``native_class``: the ``nn.Module`` it builds (``nn.Linear``);
- ``inferred_arguments``: which constructor arguments are read off the input
  (``{"in_features": FromInput(dim=-1)}``), one declaration per family;
- a typed ``__init__`` with the native signature minus the inferred arguments,
  passing every argument by keyword to ``Layer.__init__``.

On its first call (or in :func:`torchx.build`) the layer runs the native
constructor *on itself* and becomes an instance of a subclass of both the
layer class and ``native_class``, as torch's own lazy modules do. From then on
``forward`` is the native forward, ``state_dict`` keys are the native keys, and
the same ``torch.manual_seed`` gives bit-identical weights to constructing the
native module directly (the native constructor runs its own
``reset_parameters()``).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import nn
from torch.utils._pytree import tree_leaves

from torchx.core.errors import (
    ArgumentError,
    ShapeError,
    TorchXError,
    format_call,
    format_shape,
    short_repr,
    torch_message,
)
from torchx.core.helpers import ModuleHelpers
from torchx.core.memory import check_allocation
from torchx.core.shapes import Shape, current_build_target, run_on_meta
from torchx.core.symbolic import find_symbolic

if TYPE_CHECKING:
    from torchx.core.graph import Graph
    from torchx.core.specs import SpecReader, SpecWriter

__all__ = ["FromInput", "Layer", "all_or_nothing", "is_shape_problem", "shapes_of", "unbuilt_layers"]

_NOT_MODULE_STATE = frozenset({"_parameters", "_buffers", "_non_persistent_buffers_set", "_modules"})
_MODULE_STATE = frozenset(key for key in nn.Module().__dict__ if key not in _NOT_MODULE_STATE)
"""``nn.Module`` bookkeeping (hooks, training flag) that a layer keeps across its build."""
_MODULE_PROTOTYPE = tuple(
    (key, type(value) if isinstance(value, (dict, set)) else None, value)
    for key, value in nn.Module().__dict__.items()
)


def _init_module_state(module: nn.Module) -> None:
    """What ``nn.Module.__init__`` sets up (fresh hook dicts, empty parameter
    stores, the training flag), copied from a prototype: about twice as fast,
    which counts when thousands of unbuilt layers are created in bulk."""
    state = module.__dict__
    for key, container, value in _MODULE_PROTOTYPE:
        state[key] = container() if container else value


_META = torch.device("meta")
_LARGEST_SIZE = 2**63 - 1
"""Tensor sizes are int64."""
_BUILD_LOCK = threading.RLock()


def shapes_of(inputs: tuple[Any, ...]) -> str:
    """Describe positional inputs for an error message: ``(8, 3, 32, 32)``."""
    described = [
        format_shape(tuple(value.shape)) if isinstance(value, torch.Tensor) else type(value).__name__
        for value in inputs
    ]
    return ", ".join(described) if described else "no inputs"


@dataclass(frozen=True)
class FromInput:
    """A constructor argument read off one dim of one positional input.

    :param dim: the dim whose size is the argument (``-1``: last dim).
    :param input: which positional input (0 for the first).
    :param ranks: the input ranks the layer accepts; ``None`` accepts any rank
        that has ``dim``.
    """

    dim: int
    input: int = 0
    ranks: tuple[int, ...] | None = None

    def read(self, layer: Layer, inputs: tuple[Any, ...]) -> int:
        """The size of ``dim`` in input ``input``, or a ShapeError naming ``layer``."""
        if self.input >= len(inputs) or not isinstance(inputs[self.input], torch.Tensor):
            raise layer.shape_error(
                f"expects a tensor as positional input {self.input}, got {shapes_of(inputs)}",
                fix=f"call it as {layer.layer_label()}(x) with x shaped {layer.input_layout}",
            )
        shape = tuple(inputs[self.input].shape)
        fits = -len(shape) <= self.dim < len(shape)
        if self.ranks is not None:
            fits = fits and len(shape) in self.ranks
        if not fits:
            raise layer.shape_error(
                f"expected input of shape {layer.input_layout} "
                f"({self._ranks_text()}), got {format_shape(shape)} ({len(shape)}-d)",
                fix=self._rank_fix(len(shape)),
            )
        return int(shape[self.dim])

    def _ranks_text(self) -> str:
        if self.ranks is None:
            return f"at least {self.dim + 1 if self.dim >= 0 else -self.dim}-d"
        return " or ".join(f"{rank}-d" for rank in self.ranks)

    def _rank_fix(self, rank: int) -> str:
        if self.ranks is not None and rank + 1 == min(self.ranks):
            return "add the batch dim: x.unsqueeze(0)"
        return "reshape the input first (L.Flatten(), L.Reshape(...) or L.Unflatten(...))"


_FACTORY_KWARGS: dict[type, bool] = {}
_DEFAULTS: dict[type, Mapping[str, Any]] = {}


def _takes_factory_kwargs(native_class: type[nn.Module]) -> bool:
    """Whether ``native_class(...)`` accepts ``device=`` and ``dtype=`` (cached)."""
    takes = _FACTORY_KWARGS.get(native_class)
    if takes is None:
        parameters = inspect.signature(native_class.__init__).parameters
        takes = _FACTORY_KWARGS[native_class] = "device" in parameters and "dtype" in parameters
    return takes


def _signature_defaults(cls: type[Layer]) -> Mapping[str, Any]:
    """The default of each ``cls.__init__`` parameter that has one (cached)."""
    defaults = _DEFAULTS.get(cls)
    if defaults is None:
        parameters = inspect.signature(cls.__init__).parameters
        defaults = _DEFAULTS[cls] = {
            name: parameter.default
            for name, parameter in parameters.items()
            if parameter.default is not inspect.Parameter.empty
        }
    return defaults


def _new_built_layer(layer_class: type[Layer]) -> Layer:
    """Unpickling helper: an empty instance of ``layer_class``'s built class."""
    built = layer_class._torchx_built_class
    return built.__new__(built)


class Layer(ModuleHelpers):
    r"""Base class of every TorchX layer: an ``nn.Module`` that infers its input side.

    Until its first input a layer holds only its constructor arguments; after
    it, it *is* its native module (``isinstance(layer, nn.Linear)``), with the
    native forward and ``state_dict`` keys. Every layer has the
    :class:`~torchx.core.helpers.ModuleHelpers` methods (``soft_update``,
    ``freeze``, ``save``...); containers are also ``torchx.nn.Module``\s.
    """

    native_class: ClassVar[type[nn.Module] | None] = None
    """The ``torch.nn`` module this layer builds; ``None`` for containers."""

    inferred_arguments: ClassVar[Mapping[str, FromInput]] = {}
    """Native constructor arguments read off the input, by argument name."""

    input_layout: ClassVar[str] = "(N, *)"
    """The expected input layout, for error messages (``"(N, C_in, H, W)"``)."""

    positive_arguments: ClassVar[tuple[str, ...]] = ()
    """Arguments that must be positive integers, or lists of them (sizes, strides)."""

    nonnegative_arguments: ClassVar[tuple[str, ...]] = ()
    """Arguments that must be integers >= 0, or lists of them (paddings); strings pass."""

    same_shape: ClassVar[bool] = False
    """True when the output shape always equals the input shape (a fast path)."""

    _torchx_built: ClassVar[bool] = False
    _torchx_layer_class: ClassVar[type[Layer]]
    _torchx_built_class: ClassVar[type[Layer]]
    _torchx_arguments: dict[str, Any]
    _torchx_plain_init: ClassVar[bool] = False

    def __init__(self, **arguments: Any) -> None:
        if type(self)._torchx_plain_init:
            _init_module_state(self)
        else:
            super().__init__()
        for name in self.positive_arguments:
            _check_size(self, name, arguments.get(name), 1)
        for name in self.nonnegative_arguments:
            _check_size(self, name, arguments.get(name), 0)
        self.__dict__["_torchx_arguments"] = arguments

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("_torchx_built", False):
            return
        cls._torchx_layer_class = cls
        after_layer = cls.__mro__[cls.__mro__.index(Layer) + 1 :]
        cls._torchx_plain_init = (
            next(base for base in after_layer if "__init__" in base.__dict__) is nn.Module
        )
        if cls.native_class is not None:
            cls._torchx_built_class = _make_built_class(cls, cls.native_class)

    # -- the protocol ---------------------------------------------------------

    @property
    def arguments(self) -> Mapping[str, Any]:
        """The constructor arguments as the user gave them (nothing inferred)."""
        return self._torchx_arguments

    @property
    def is_built(self) -> bool:
        """Whether the native module has been built."""
        return type(self)._torchx_built

    def layer_label(self) -> str:
        """How errors name this layer: its class name."""
        return type(self).__name__

    def shape_error(self, problem: str, fix: str | None = None) -> ShapeError:
        """A ShapeError attributed to this layer."""
        return ShapeError(self.layer_label(), problem, fix, source=self)

    def infer_arguments(self, *inputs: Any) -> dict[str, Any]:
        """The native constructor arguments read off ``inputs``.

        The default reads ``inferred_arguments``; override it for arguments that
        are inferred only sometimes (``LayerNorm``'s ``normalized_shape``).
        """
        return {name: rule.read(self, inputs) for name, rule in self.inferred_arguments.items()}

    def infer_output_shape(self, *input_shapes: Shape) -> Shape | None:
        """A closed-form output shape for a built layer, or None to run on meta.

        Only a fast path: a test checks every formula against the meta run.
        """
        return input_shapes[0] if self.same_shape and input_shapes else None

    def native_module(self) -> nn.Module:
        """The built native module, which is this very object after the build."""
        if not self.is_built:
            raise TorchXError(
                f"{self.layer_label()} is not built yet: call it on an input, or "
                "torchx.build(layer, input_shape) first"
            )
        return self

    def to_spec(self) -> dict[str, Any]:
        """This layer (and its children) as plain JSON-compatible data."""
        from torchx.core.specs import to_spec

        return to_spec(self)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Layer:
        """Construct an unbuilt layer from ``spec`` (see :func:`torchx.core.specs.from_spec`)."""
        from torchx.core.specs import from_spec

        return from_spec(spec, expect=cls)

    def spec_fields(self, writer: SpecWriter) -> dict[str, Any]:
        """The spec entries besides ``"type"``; containers override this."""
        arguments = {
            name: writer.value(value, f"args.{name}") for name, value in self._given_arguments().items()
        }
        return {"args": arguments} if arguments else {}

    def _given_arguments(self) -> dict[str, Any]:
        """The constructor arguments that differ from their defaults."""
        defaults = _signature_defaults(type(self)._torchx_layer_class)
        return {
            name: value
            for name, value in self._torchx_arguments.items()
            if name not in defaults or not _same(value, defaults[name])
        }

    @classmethod
    def from_spec_fields(cls, fields: Mapping[str, Any], reader: SpecReader) -> Layer:
        """Construct from the spec entries besides ``"type"``; containers override."""
        arguments = reader.arguments(cls, fields)
        return reader.construct(cls, arguments)

    def draw_graph(self, graph: Graph, inputs: list[str]) -> list[str]:
        """Draw this layer into ``graph``, fed by the nodes ``inputs``; returns its
        output nodes. A layer is one node; containers draw their children."""
        return [graph.node(self.layer_label(), graph.next_output(self), "layer", inputs)]

    # -- building -------------------------------------------------------------

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Build from ``inputs``, then run the native forward on them.

        Inside :func:`torchx.build`, meta inputs build the native module on the
        build's device and return meta outputs: no FLOPs, no activations.
        """
        symbolic = find_symbolic(inputs, kwargs)
        if symbolic is not None:
            return symbolic.__torchx_call__(self, inputs, kwargs)
        if torch.compiler.is_compiling():
            raise TorchXError(
                f"{self.layer_label()} is not built, and a layer cannot build itself while "
                "torch.compile or torch.export traces it: call torchx.build(model, input_shape) first"
            )
        tensors = _tensors_in(inputs)
        target = current_build_target()
        abstract = target is not None and all(t.is_meta for t in tensors)
        with _BUILD_LOCK:  # two threads calling one unbuilt layer build it once
            built_here = not self.is_built
            if built_here:
                if abstract:
                    device = None if target.device_is_default else target.device  # type: ignore[union-attr]
                    dtype = target.dtype  # type: ignore[union-attr]
                else:
                    device, dtype = tensors[0].device if tensors else torch.get_default_device(), None
                requested_device, requested_dtype = self.__dict__.get("_torchx_placement", (None, None))
                self._build(inputs, tensors, requested_device or device, requested_dtype or dtype)
        try:
            if not abstract:
                return self.forward(*inputs, **kwargs)
            output = self._abstract_output(inputs, kwargs)
            if target is not None:
                target.swap.add(self)  # a second call in this build (a shared layer) stays on meta
            return output
        except Exception as error:
            if built_here:
                self._unbuild()
            if not is_shape_problem(error):
                raise
            raise self.shape_error(
                f"input {shapes_of(inputs)} does not fit: {torch_message(error)}",
                fix=f"give it input shaped {self.input_layout}",
            ) from error

    def _build(
        self,
        inputs: tuple[Any, ...],
        tensors: list[torch.Tensor],
        device: torch.device | None,
        dtype: torch.dtype | None,
    ) -> None:
        """Become the native module, built for ``inputs`` on ``device``.

        Parameters take ``dtype``, else the first floating input's dtype. The
        native constructor runs as usual (its own ``reset_parameters()``
        included, so the same seed gives the same weights), then this layer
        adopts the result. A device or dtype equal to torch's default is not
        passed (explicit factory kwargs cost the constructor a few
        microseconds) unless a function mode, such as a device scope's, is on.
        """
        native = self.native_class
        if native is None:
            raise NotImplementedError(f"{type(self).__name__} must override forward")
        inferred = self.infer_arguments(*inputs)
        arguments = {**self._torchx_arguments, **inferred}
        takes_factory_kwargs = _takes_factory_kwargs(native)
        if takes_factory_kwargs:
            if device is not None:
                arguments["device"] = device
            dtype = dtype or next((t.dtype for t in tensors if t.is_floating_point()), None)
            # A function mode (a device scope's) may change what "default" means: then say it.
            if dtype is not None and (
                dtype != torch.get_default_dtype() or torch._C._len_torch_function_stack()
            ):
                arguments["dtype"] = dtype
        try:
            check_allocation(self, native, arguments, device, takes_factory_kwargs)
            built = native(**arguments)
        except Exception as error:
            if not is_shape_problem(error):
                raise
            raise self.shape_error(
                f"cannot build {format_call(native, arguments)} for input "
                f"{shapes_of(inputs)}: {torch_message(error)}",
                fix="change the layer's arguments or the input shape so that they agree",
            ) from error
        self._adopt(built)
        self.__dict__["_torchx_inferred"] = inferred
        # Last: until the class changes, other threads still take the locked build path.
        object.__setattr__(self, "__class__", type(self)._torchx_built_class)
        if not self.training:
            self.train(False)

    def _adopt(self, built: nn.Module) -> None:
        """Take over ``built``'s tensors, children and attributes.

        The layer keeps its own hooks and training flag (hook handles point at
        its hook dicts); hooks the native constructor registered are merged in.
        """
        state = self.__dict__
        for key, value in built.__dict__.items():
            if key not in _MODULE_STATE:
                state[key] = value
            elif value and isinstance(value, dict):
                state[key].update(value)

    def _unbuild(self) -> None:
        """Return to the unbuilt state, keeping hooks and the training flag."""
        state = self.__dict__
        kept = {key: state[key] for key in (*_MODULE_STATE, "_torchx_arguments")}
        object.__setattr__(self, "__class__", type(self)._torchx_layer_class)
        state.clear()
        nn.Module.__init__(self)
        state.update(kept)

    def _abstract_output(self, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if not kwargs and inputs and all(isinstance(value, torch.Tensor) for value in inputs):
            if self.same_shape:
                return inputs[0]  # a meta tensor: only its shape and dtype are read
            shape = self.infer_output_shape(*(tuple(value.shape) for value in inputs))
            if shape is not None and None not in shape:
                return torch.empty(shape, dtype=inputs[0].dtype, device=_META)  # type: ignore[arg-type]
        return run_on_meta(self, inputs, kwargs, call=self.forward)

    def _forward_failed(self, error: RuntimeError, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The slow path of a built layer's forward, taken only when torch raised.

        A symbolic input (a graph placeholder) raises to get here: hand it the
        call. Otherwise re-raise, as a ShapeError when the input no longer fits
        the built layer.
        """
        symbolic = find_symbolic(args, kwargs)
        if symbolic is not None:
            return symbolic.__torchx_call__(self, args, kwargs)
        mismatch = self._shape_mismatch(args)
        if mismatch is None:
            raise error
        raise mismatch from error

    def _shape_mismatch(self, inputs: tuple[Any, ...]) -> ShapeError | None:
        """Why ``inputs`` do not fit this built layer, if it is their shape."""
        try:
            now = self.infer_arguments(*inputs)
        except ShapeError as error:
            return error
        built: dict[str, Any] = self.__dict__.get("_torchx_inferred", {})
        changed = [
            f"{name}={now[name]} (built with {built[name]})" for name in now if now[name] != built.get(name)
        ]
        if not changed:
            return None
        return self.shape_error(
            f"got input {shapes_of(inputs)}, which needs {', '.join(changed)}; "
            "a built layer never rebuilds itself",
            fix="feed inputs of the size it was built for, or use a new layer for the new size",
        )

    # -- interoperability -------------------------------------------------------

    def _apply(self, fn: Any, recurse: bool = True) -> Any:
        """``.to()``, ``.cuda()``, ``.double()``... on an unbuilt layer are remembered
        and applied when it builds; on a built layer they act as on any module."""
        if type(self)._torchx_built or self.native_class is None:
            return super()._apply(fn, recurse)  # type: ignore[no-untyped-call]
        before = torch.empty(0, device="cpu", dtype=torch.float32)  # explicit: a device scope may be open
        probe = fn(before)
        device, dtype = self.__dict__.get("_torchx_placement", (None, None))
        if probe.device != before.device:
            device = probe.device
        if probe.dtype != before.dtype:
            dtype = probe.dtype
        self.__dict__["_torchx_placement"] = (device, dtype)
        return self

    def extra_repr(self) -> str:
        arguments = ", ".join(f"{name}={value!r}" for name, value in self._given_arguments().items())
        return f"{arguments}, not built" if arguments else "not built"

    def __reduce_ex__(self, protocol: Any) -> Any:
        reduced = super().__reduce_ex__(max(int(protocol), 2))
        if not self.is_built or self.native_class is None:
            return reduced
        return (_new_built_layer, (type(self)._torchx_layer_class,), *reduced[2:])

    def __prepare_scriptable__(self) -> nn.Module:
        """``torch.jit.script`` compiles the plain native module sharing this one's tensors."""
        native = self.native_class
        if native is None:
            return self
        if not self.is_built:
            raise TorchXError(
                f"{self.layer_label()} is not built: build it (torchx.build) before torch.jit.script"
            )
        plain = native.__new__(native)
        state = {key: value for key, value in self.__dict__.items() if not key.startswith("_torchx_")}
        state["_modules"] = dict(state["_modules"])
        plain.__dict__.update(state)
        return plain


def _check_size(layer: Layer, name: str, value: Any, smallest: int) -> None:
    """Refuse ``value`` unless it is None, a string, or ints (one, or a list) in
    ``[smallest, 2**63 - 1]``: torch would fail on it later, or build nonsense."""
    if (type(value) is int and smallest <= value <= _LARGEST_SIZE) or value is None or isinstance(value, str):
        return
    items = value if isinstance(value, (list, tuple)) else (value,)
    if not all(type(item) is int and smallest <= item <= _LARGEST_SIZE for item in items):
        kind = "positive" if smallest else "non-negative"
        raise ArgumentError(
            f"{type(layer).__name__}: {name} must be a {kind} int or a list of them (at most 2**63 - 1), "
            f"got {short_repr(value)}",
            argument=name,
        )


def is_shape_problem(error: BaseException) -> bool:
    """Whether ``error``, raised by torch for some input, may be about its shape.

    Memory exhaustion and interrupts never are.
    """
    if isinstance(error, torch.OutOfMemoryError):
        return False
    return isinstance(error, (RuntimeError, ValueError, AssertionError, IndexError, TypeError))


def unbuilt_layers(module: nn.Module) -> list[Layer]:
    """Every layer in ``module`` (itself included) that has yet to build."""
    return [
        sub for sub in module.modules() if isinstance(sub, Layer) and sub.native_class and not sub.is_built
    ]


@contextmanager
def all_or_nothing(module: nn.Module) -> Iterator[None]:
    """Layers of ``module`` may build inside the block; if it raises, every layer
    built inside it returns to its unbuilt state, so nothing stays half-built."""
    pending = unbuilt_layers(module)
    try:
        yield
    except BaseException:
        for layer in pending:
            if layer.is_built:
                layer._unbuild()
        raise


def _same(value: Any, default: Any) -> bool:
    try:
        return bool(value == default) and type(value) is type(default)
    except Exception:  # noqa: BLE001 - tensors and odd objects compare ambiguously
        return False


def _tensors_in(inputs: tuple[Any, ...]) -> list[torch.Tensor]:
    """The tensors among ``inputs``, looking inside lists, tuples and dicts."""
    if all(isinstance(value, torch.Tensor) for value in inputs):
        return list(inputs)
    return [leaf for leaf in tree_leaves(inputs) if isinstance(leaf, torch.Tensor)]


def _guarded_forward(native_forward: Callable[..., Any]) -> Callable[..., Any]:
    """``native_forward`` behind a ``try`` that hands torch's errors to
    :meth:`Layer._forward_failed`, with the native signature.

    The wrapper repeats the native parameters instead of taking ``*args,
    **kwargs``: packing and unpacking those on every call costs more than the
    extra frame itself, and a built layer's forward must cost what the native
    one costs. Signatures that cannot be repeated fall back to the generic form.
    """
    try:
        parameters = list(inspect.signature(native_forward).parameters.values())[1:]
    except (TypeError, ValueError):
        parameters = None
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    if parameters is None or any(p.kind not in kinds for p in parameters):

        def generic(self: Layer, *args: Any, **kwargs: Any) -> Any:
            try:
                return native_forward(self, *args, **kwargs)
            except RuntimeError as error:
                return self._forward_failed(error, args, kwargs)

        return generic
    defaults = {f"_default_{i}": p.default for i, p in enumerate(parameters) if p.default is not p.empty}
    declared, positional, keywords = [], [], []
    for index, parameter in enumerate(parameters):
        default = f"=_default_{index}" if parameter.default is not parameter.empty else ""
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            if "*" not in declared:
                declared.append("*")
            keywords.append(f"{parameter.name}={parameter.name}")
        else:
            positional.append(parameter.name)
        declared.append(f"{parameter.name}{default}")
    call = ", ".join(["self", *positional, *keywords])
    packed = "(" + "".join(f"{name}, " for name in positional) + ")"
    source = (
        f"def forward(self, {', '.join(declared)}):\n"
        f"    try:\n"
        f"        return native_forward({call})\n"
        f"    except RuntimeError as error:\n"
        f"        return self._forward_failed(error, {packed}, {{}})\n"
    )
    namespace: dict[str, Any] = {"native_forward": native_forward, **defaults}
    exec(compile(source, f"<torchx guarded {native_forward.__qualname__}>", "exec"), namespace)
    forward: Callable[..., Any] = namespace["forward"]
    return forward


def _make_built_class(layer_class: type[Layer], native: type[nn.Module]) -> type[Layer]:
    """The class a ``layer_class`` instance becomes once built: layer + native."""
    forward = _guarded_forward(native.forward)
    forward.__doc__ = native.forward.__doc__
    namespace = {
        "forward": forward,
        "extra_repr": native.extra_repr,
        "_torchx_built": True,
        "__module__": layer_class.__module__,
        "__qualname__": layer_class.__qualname__,
        "__doc__": layer_class.__doc__,
    }
    return type(layer_class.__name__, (layer_class, native), namespace)
