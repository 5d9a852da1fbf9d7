"""``LeafLayer``: a layer that builds one native module from its first input.

A leaf layer subclass declares

- ``native_class``: the ``nn.Module`` it builds (``nn.Linear``);
- ``inferred_arguments``: which constructor arguments are read off the input
  (``{"in_features": FromInput(dim=-1, state=FromState("weight", 1))}``), one
  declaration per family; ``state`` says where a state dict shows the same size;
- a typed ``__init__``: the arguments TorchX cannot infer, the required ones
  positional and the rest keyword-only, then the inferred ones keyword-only
  (given, they are checked against the input), all passed by keyword to
  ``LeafLayer.__init__``, which checks every value against the annotations.

Before its first input a leaf layer shows the parameters and buffers its
native module will have, as pending tensors (see :mod:`torchx.core._pending`).
On its first call (or in :func:`torchx.build`, or when a state dict is loaded
into it) it runs the native constructor on itself and *becomes* the native
module: ``type(layer) is nn.Linear``, the same seed gives bit-identical
weights, the pending tensors become its parameters. What TorchX knows of it
(the layer class and the given arguments, for specs) stays in the instance,
as a :class:`~torchx.core.LayerRecord`. The build machinery that
containers share (the build lock, :func:`all_or_nothing`, failures explained)
is here too.
"""

from __future__ import annotations

import inspect
import math
import os
import traceback
import warnings
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar, cast

import torch
from torch import nn
from torch.utils._pytree import tree_leaves, tree_map

from torchx.core._arguments import signature_of
from torchx.core._errors import (
    ArgumentError,
    BuildWarning,
    DtypeError,
    LayerError,
    NotBuiltError,
    ShapeError,
    add_note,
    format_call,
    format_shape,
    is_probe_size,
    short_repr,
    torch_message,
)
from torchx.core._layer import Layer, _signature_defaults, cannot_build_while_compiling, is_fx_tracing
from torchx.core._memory import Rehearsal, allocation_budget, check_allocation
from torchx.core._native_signature import check_layer_signature, refuse_missing_newer
from torchx.core._pending import (
    BUILD_LOCK,
    Layout,
    PlacementRequest,
    add_pending,
    become_native,
    is_pending,
    layout_of,
    measure_layout,
    move_pending,
    pending_stores,
    pending_tensors,
    request_of,
    revert_to_pending,
    save_pending_state,
    stand_in_size,
)
from torchx.core._record import MODULE_STATE, LayerRecord, init_module_state, layer_view, record_of
from torchx.core._shapes import (
    _META,
    DYNAMIC_PROBES,
    BuildTarget,
    Probes,
    Shape,
    current_build_target,
    lacks_meta_kernel,
    meta_copy,
    run_on_meta,
)
from torchx.core._symbolic import find_symbolic
from torchx.core._torch_compat import has_any_global_hook
from torchx.core._torch_style import positional_error
from torchx.core._transforms import outside_transforms
from torchx.core._tree import by_class, submodules

__all__ = [
    "FromInput",
    "FromState",
    "LeafLayer",
    "all_or_nothing",
    "build_for_meta",
    "closed_form_output",
    "describe_inputs",
    "explain_failure",
    "formula_calls",
    "is_shape_problem",
    "load_building",
    "takes_factory_kwargs",
    "unbuild",
    "unbuilt_layers",
]

_LAYOUTS: dict[Any, Layout] = {}
_LAYOUTS_LIMIT = 4096
_NESTS: dict[tuple[Any, ...], bool] = {}
"""Whether the native module holds tensors in submodules (a MultiheadAttention's
``out_proj``), as first measured, by class and arguments other than sizes (see
:func:`_nesting_key`): such a layer measures its layout at construction, to
hold its stand-in children from the start; the others measure it when first
needed, which a layer built at its first call (the usual case) never does.
Most of torch's own modules are known without measuring (see
:func:`_torch_holds_tensors_itself`)."""

_FORK_WAIT_SECONDS = 10.0
_MAX_BYTES = 2**63
"""No tensor holds this many bytes: its storage size overflows int64."""

_held_for_fork: list[bool] = []


def _before_fork() -> None:
    """A fork waits (a while) for builds in progress, so the child does not
    inherit a half-built layer; past the wait it forks anyway rather than risk
    a deadlock with a builder waiting on the forking thread."""
    _held_for_fork.append(BUILD_LOCK.acquire(timeout=_FORK_WAIT_SECONDS))


def _after_fork_in_parent() -> None:
    if _held_for_fork.pop():
        BUILD_LOCK.release()


def _after_fork_in_child() -> None:
    """The child starts with a lock that no thread of its own holds."""
    _held_for_fork.clear()
    BUILD_LOCK._at_fork_reinit()  # type: ignore[attr-defined]  # as threading's own locks are


os.register_at_fork(
    before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child
)


def describe_inputs(inputs: tuple[Any, ...]) -> str:
    """Positional inputs as an error message shows them: ``(8, 3, 32, 32)``."""
    described = [
        format_shape(tuple(value.shape)) if isinstance(value, torch.Tensor) else type(value).__name__
        for value in inputs
    ]
    return ", ".join(described) if described else "no inputs"


@dataclass(frozen=True)
class FromState:
    """Where a state dict shows the size of an inferred argument.

    :param key: the key (relative to the layer), or several to try in order
        (``("weight", "running_mean")``: BatchNorm without affine has no weight).
    :param dim: the dim of that tensor whose size it is.
    :param times: the argument the size is multiplied by (a convolution's
        weight has ``in_channels / groups`` input channels).
    """

    key: str | tuple[str, ...]
    dim: int
    times: str | None = None

    def read(self, state: Mapping[str, Any], arguments: Mapping[str, Any]) -> int | None:
        """The size, or None when the state has none of the keys."""
        for key in (self.key,) if isinstance(self.key, str) else self.key:
            tensor = state.get(key)
            if (
                isinstance(tensor, torch.Tensor)
                and not is_pending(tensor)
                and -tensor.dim() <= self.dim < tensor.dim()
            ):
                factor = arguments.get(self.times, 1) if self.times else 1
                return int(tensor.shape[self.dim]) * int(factor)
        return None


@dataclass(frozen=True)
class FromInput:
    """A constructor argument read off one dim of one positional input.

    :param dim: the dim whose size is the argument (``-1``: last dim).
    :param input: which positional input (0 for the first).
    :param ranks: the input ranks the layer accepts; ``None`` accepts any rank
        that has ``dim``.
    :param state: where a state dict shows the same size, so that loading one
        builds the layer without an input.
    """

    dim: int
    input: int = 0
    ranks: tuple[int, ...] | None = None
    state: FromState | None = None

    def read(self, layer: Layer, inputs: tuple[Any, ...]) -> int:
        """The size of ``dim`` in input ``input``, or a ShapeError naming ``layer``."""
        if self.input >= len(inputs) or not isinstance(inputs[self.input], torch.Tensor):
            raise layer.shape_error(
                f"expects a tensor as positional input {self.input}, got {describe_inputs(inputs)}",
                fix=f"call it as {layer.layer_label()}(x) with x shaped {layer.input_layout}",
            )
        shape = inputs[self.input].shape  # a torch.Size: a tuple
        fits = -len(shape) <= self.dim < len(shape)
        if self.ranks is not None:
            fits = fits and len(shape) in self.ranks
        if not fits:
            raise layer.shape_error(
                f"expected input of shape {layer.input_layout} "
                f"({self._ranks_text()}), got {format_shape(tuple(shape))} ({len(shape)}-d)",
                fix=self._rank_fix(tuple(shape)),
            )
        return int(shape[self.dim])

    def _ranks_text(self) -> str:
        if self.ranks is None:
            return f"at least {self.dim + 1 if self.dim >= 0 else -self.dim}-d"
        return " or ".join(f"{rank}-d" for rank in self.ranks)

    def _rank_fix(self, shape: tuple[int, ...]) -> str:
        batched = bool(shape) and is_probe_size(shape[0])
        if self.ranks is not None and len(shape) + 1 == min(self.ranks) and not batched:
            return "add the batch dim: x.unsqueeze(0)"
        if self.ranks is not None and len(shape) < min(self.ranks):
            return f"give the input {min(self.ranks)} dims (the layout above); it lacks {min(self.ranks) - len(shape)}"
        return "reshape the input first (L.Flatten(), L.Reshape(...) or L.Unflatten(...))"


@by_class
def takes_factory_kwargs(native: type[nn.Module]) -> bool:
    """Whether ``native(...)`` accepts ``device=`` and ``dtype=`` (cached)."""
    parameters = signature_of(native)
    return "device" in parameters and "dtype" in parameters


@by_class
def _positional_count(cls: type[Layer]) -> float:
    """How many positional arguments ``cls(...)`` takes (infinite with ``*args``)."""
    kinds = [p.kind for p in signature_of(cls).values()]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return math.inf
    return sum(kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for kind in kinds)


_DATA: frozenset[type] = frozenset({bool, int, float, str, type(None), torch.dtype, torch.device})
"""The types of argument values a cache key may hold: data, never an object
(a tensor, a function) that the cache would keep alive."""
_DATA_TYPES: tuple[type, ...] = tuple(_DATA)


def _arguments_key(layer: Layer) -> tuple[Any, ...] | None:
    """``layer``'s class and arguments as a cache key (list arguments frozen
    into tuples); None where an argument is not data (see :data:`_DATA`)."""
    arguments = layer.arguments
    if _DATA.issuperset(map(type, arguments.values())):  # the common case, without a walk
        return (type(layer), *arguments.items())
    try:
        return (type(layer), *((name, _frozen(value)) for name, value in arguments.items()))
    except TypeError:
        return None


_TORCH_NESTING = tuple(
    getattr(nn, name)
    for name in "AdaptiveLogSoftmaxWithLoss LinearCrossEntropyLoss ModuleDict ModuleList MultiheadAttention "
    "Sequential Transformer TransformerDecoder TransformerDecoderLayer TransformerEncoder TransformerEncoderLayer".split()
    if hasattr(nn, name)
)
"""The modules of ``torch.nn`` that hold tensors in submodules (torchx-core's
test_nesting.py finds them all: a torch that adds one fails it)."""


def _torch_holds_tensors_itself(native: type[nn.Module], *, device_argument: bool = True) -> bool:
    """Whether ``native``, given data arguments, holds its tensors itself,
    none in submodules: a module of ``torch.nn`` made by torch's own
    constructor, other than :data:`_TORCH_NESTING`'s. ``device_argument=False``:
    and, without a ``device`` argument, holds none (all but the recurrent
    modules, whose ``device`` comes through ``**factory_kwargs``)."""
    return (
        native.__module__.startswith("torch.nn.modules.")
        and native.__init__.__module__.startswith("torch.nn.modules.")
        and not issubclass(native, _TORCH_NESTING)
        and (device_argument or not issubclass(native, nn.RNNBase))
    )


def _nesting_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """An arguments key (see :func:`_arguments_key`) without its sizes (ints,
    tuples of ints): what decides, short of a module counting its submodules
    by a size, whether the native module holds submodules (``gated=True``)."""
    return tuple(
        item
        for item in key
        if not (type(item) is tuple and len(item) == 2 and _is_size(item[1]))  # (name, value) pairs
    )


def _is_size(value: Any) -> bool:
    return type(value) is int or (type(value) is tuple and all(type(item) is int for item in value))


def _frozen(value: Any) -> Any:
    """``value`` as a key: lists and tuples as tuples of keys; TypeError for
    anything that is not data."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    if not isinstance(value, _DATA_TYPES):
        raise TypeError(type(value).__name__)
    return value


_Leaf = TypeVar("_Leaf", bound="LeafLayer")


class LeafLayer(Layer):
    """Base class of layers that build one native module: until its first
    input a leaf layer holds its constructor arguments and pending parameters;
    after it, it *is* its native module (``type(layer) is nn.Linear``), with
    the native forward, ``state_dict`` keys and weights."""

    native_class: ClassVar[type[nn.Module] | None] = None
    """The ``torch.nn`` module this layer builds (``None`` only on a family's base)."""

    inferred_arguments: ClassVar[Mapping[str, FromInput]] = {}
    """Native constructor arguments read off the input, by argument name."""

    native_arguments: ClassVar[Mapping[str, Any]] = {}
    """Native constructor arguments this class always passes: a family with one
    native module tells it which member it is (``L.Add``: ``{"op": "add"}``)."""

    newer_native_arguments: ClassVar[frozenset[str]] = frozenset()
    """Parameters of ``__init__`` that the native class takes only in newer torch
    releases (``L.BatchNorm2d``'s ``bias``). On an older torch, one given at its
    default is left out of the native call, and another value is refused
    (``ArgumentError``) when the layer is made."""

    _torchx_missing_newer: ClassVar[frozenset[str]] = frozenset()
    """Those of them the native class of the torch installed does not take (see ``check_layer_signature``)."""

    inferable_arguments: ClassVar[tuple[str, ...]] = ()
    """Every argument this layer can infer (default: the keys of
    ``inferred_arguments``); given, each is checked against the input."""

    torch_positional: ClassVar[tuple[str, ...]] = ()
    """The native class's positional parameters, in torch's order (default: read
    off its ``__init__``), to explain a torch-style call such as ``L.Linear(10, 20)``."""

    integer_input: ClassVar[bool] = False
    """True when the layer takes integer inputs (embeddings take token ids)."""

    same_shape: ClassVar[bool] = False
    """True when the output shape always equals the input shape (a fast path)."""

    output_dtype_of: ClassVar[str | None] = None
    """The parameter whose dtype the output takes (an embedding's ``"weight"``:
    its input is integer ids); None (the default): the first input's. Read
    where no meta run of the built layer says (see :func:`_checked_dtype`)."""

    _torchx_kind = "leaf"

    def __new__(cls: type[_Leaf], *args: Any, **kwargs: Any) -> _Leaf:
        # Typed to return the class called, so that pyright (and so VS Code) types
        # ``L.Linear(20)`` as a ``Linear`` and checks the call against ``__init__``:
        # a ``__new__`` typed ``-> Any`` makes pyright type every call ``Any`` and
        # skip ``__init__``. Only the type changes: the object is this class's until
        # its build.
        if args and len(args) > _positional_count(cls):
            raise positional_error(cls, args, kwargs)
        return super().__new__(cls)

    def __init__(self, **arguments: Any) -> None:
        device, dtype = arguments.pop("device", None), arguments.pop("dtype", None)
        if type(self)._torchx_missing_newer:
            refuse_missing_newer(type(self), arguments, _signature_defaults(type(self)))
        self._record_construction(arguments.pop("name", None), arguments)
        if device is not None or dtype is not None:
            self.__dict__["_torchx_request"] = PlacementRequest(
                None if device is None else torch.device(device), dtype
            )
        native = type(self).native_class
        if native is not None:
            key = self._torchx.key = _arguments_key(self)
            layout = None
            if key is None or (  # an object among the arguments (a module?), or
                not _torch_holds_tensors_itself(native)
                and _NESTS.get(_nesting_key(key)) is not False  # the first of its kind, or nested
            ):
                with suppress(ArgumentError):  # refused arguments are reported where torch's constructor runs
                    layout = self._layout()
            pending_stores(self, layout)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "inferable_arguments" not in cls.__dict__ and "inferred_arguments" in cls.__dict__:
            cls.inferable_arguments = tuple(cls.inferred_arguments)
        check_layer_signature(cls)

    @property
    def is_built(self) -> bool:
        """Always False: once built, a leaf layer is its native module, not a Layer."""
        return False

    def infer_arguments(self, *inputs: Any) -> dict[str, Any]:
        """The native constructor arguments read off ``inputs``.

        The default reads ``inferred_arguments``; override it for arguments that
        are inferred only sometimes (``LayerNorm``'s ``normalized_shape``).
        """
        return {name: rule.read(self, inputs) for name, rule in self.inferred_arguments.items()}

    def infer_arguments_from_state(self, state: Mapping[str, torch.Tensor]) -> dict[str, Any] | None:
        """The inferred arguments as a state dict (keys relative to the layer)
        shows them, or None when it does not (the keys are missing).

        The default reads each ``FromInput.state``; override it next to
        :meth:`infer_arguments`.
        """
        inferred = {}
        for name, rule in self.inferred_arguments.items():
            size = None if rule.state is None else rule.state.read(state, self.arguments)
            if size is None:
                return None
            inferred[name] = size
        return inferred

    @classmethod
    def tensor_elements(cls, arguments: Mapping[str, Any]) -> int | None:
        """How many elements the parameters and buffers of ``native_class(**arguments)``
        hold, or None (the default): the memory check then bounds them, loosely,
        from every integer argument. A test checks each count against torch's module."""
        return None

    def stand_in_arguments(self) -> dict[str, Any]:
        """Values for the inferable arguments not given, with which the native
        module shows its parameters before the build (their shapes do not
        matter, their names do). Override when a size of 1 does not fit."""
        size = stand_in_size(self.arguments)
        return {name: size for name in self.inferable_arguments if self.arguments.get(name) is None}

    @classmethod
    def shape_fix(cls, module: nn.Module, inputs: tuple[Any, ...]) -> str | None:
        """The fix line of the ShapeError for ``inputs`` (tensors, or lists of
        them) that the built ``module`` refuses on the meta device too, or None
        (the default) where no fix fits every such failure."""
        return None

    @classmethod
    def failure_hint(cls, module: nn.Module, inputs: tuple[Any, ...], error: Exception) -> str | None:
        """What went wrong, and the fix, when the built ``module``'s first call
        on ``inputs`` raised ``error`` for a reason other than their shapes or
        dtypes (an id out of range), added to the error's note; None (the
        default) where the layer cannot tell."""
        return None

    def infer_output_shape(self, *input_shapes: Shape) -> Shape | None:
        """A closed-form output shape, or None to run on meta (read the
        arguments off ``self.arguments``; it runs before the build).

        Only a fast path: a test checks every formula against the meta run.
        Like :meth:`infer_arguments`, it reads the class, the arguments and
        the inputs' shapes and dtypes, nothing else: a layer on placeholders
        takes what another layer of its class and arguments worked out on the
        same shapes.
        """
        return input_shapes[0] if self.same_shape and input_shapes else None

    # -- building -------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # nn.Module's own __call__. ``torch.compile(layer)`` compiles the frame of the
        # layer's __call__, chosen once: nn.Module's lies in a file dynamo skips (it
        # traces from torch's own forward, which this layer does not have yet); this
        # frame it compiles, also once the layer has become its native class.
        if len(args) == 1 and not kwargs and type(args[0]) is not torch.Tensor:
            symbolic_call = getattr(type(args[0]), "__torchx_call__", None)
            if symbolic_call is not None and not _runs_hooks(self):
                return symbolic_call(args[0], self, args, kwargs)  # one symbolic input: what forward would do
        return nn.Module.__call__(self, *args, **kwargs)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Build from the inputs, then run the native forward on them.

        Inside :func:`torchx.build`, meta inputs build the native module on the
        build's device and return meta outputs: no FLOPs, no activations.
        """
        if torch.compiler.is_compiling() or is_fx_tracing():
            raise cannot_build_while_compiling(self.layer_label())
        if kwargs or len(inputs) != 1 or type(inputs[0]) is not torch.Tensor:
            symbolic = find_symbolic(inputs, kwargs)
            if symbolic is not None:
                return symbolic.__torchx_call__(self, inputs, kwargs)
        layer_class = type(self)
        native = layer_class.native_class
        if native is None:
            raise NotImplementedError(
                f"{layer_class.__name__} has no native_class: it is a family's base, not a layer to call"
            )
        positional = _positional_inputs(native, inputs, kwargs) if kwargs else inputs
        tensors = _tensors_in(positional)
        target = current_build_target()
        abstract = target is not None and (
            tensors[0].is_meta if len(tensors) == 1 else all(t.is_meta for t in tensors)
        )
        found = None
        # Two threads calling one unbuilt layer: one builds it and makes the first
        # call; if that fails it unbuilds the layer before any other thread can use it.
        with BUILD_LOCK:
            built_here = type(self) is layer_class
            if built_here:
                if abstract and not kwargs:
                    found = _formula(self, positional)
                with outside_transforms():  # initialising is setup, not part of a vmap'd or grad'ed function
                    self._build(positional, tensors, target if abstract else None)
            try:
                if not abstract:
                    return self.forward(*inputs, **kwargs)
                output = None if found is None else _meta_output(found, self, positional, target.swap.meta)  # type: ignore[union-attr]
                if output is None:
                    output = run_on_meta(self, inputs, kwargs, call=self.forward)
                # A shared layer's next call in this build runs on meta stand-ins of its tensors.
                if self._modules:
                    target.swap.add(self)  # type: ignore[union-attr]
                else:
                    target.swap.add_built(self)  # type: ignore[union-attr]
                return output
            except Exception as error:
                classified = _classified(layer_class, self, (inputs, kwargs), positional, error)
                if built_here:
                    unbuild(self)
                if classified is error:
                    raise
                raise classified from error

    def _infer_parameters(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: Mapping[str, Any] | None = None
    ) -> None:
        """Build for a compiled call's inputs, as the first call would, without running it."""
        native = type(self).native_class
        if native is None:
            return
        positional = _positional_inputs(native, args, kwargs) if kwargs else args
        with BUILD_LOCK:
            if isinstance(self, LeafLayer):  # not built by another thread meanwhile
                with outside_transforms():
                    self._build(positional, _tensors_in(positional), None)

    def _build(
        self,
        inputs: tuple[Any, ...],
        tensors: list[torch.Tensor],
        target: Any,
        inferred: dict[str, Any] | None = None,
    ) -> None:
        """Become the native module, built for ``inputs`` (``inferred``: the
        arguments read off them and checked against the given ones, if done).

        Parameters go where a placement request (``.to()``, ``device=``) says,
        else on the input's device (or the abstract build's) in the first
        floating input's dtype (torch's default dtype under autocast). A device
        or dtype equal to torch's default is not passed (explicit factory
        kwargs cost the constructor a few microseconds) unless a function mode,
        such as a device scope's, is on.
        """
        native = type(self).native_class
        assert native is not None
        if inferred is None:
            inferred = self.infer_arguments(*inputs)
            if inferred:
                self._check_given(inferred, inputs)
        arguments = self._native_arguments(inferred)
        factory = takes_factory_kwargs(native)
        device = dtype = floating = integers = None
        if target is not None:
            device = None if target.device_is_default else target.device
            dtype = target.dtype
        elif tensors:
            device = tensors[0].device
        for tensor in tensors:
            if tensor.is_floating_point():
                floating = tensor.dtype
                break
        if floating is not None and _autocasting(tensors[0]):
            floating = None  # the input is in the autocast dtype; parameters stay in the true one
        if floating is None:  # integers into floating weights: refused before anything is built
            integers = _integers_in(type(self), inputs)
        request = self.__dict__.get("_torchx_request")
        if request is not None:
            device, dtype = request.device or device, request.dtype or dtype
        if factory:
            if device is not None:
                arguments["device"] = device
            dtype = dtype or floating
            # A function mode (a device scope's) may change what "default" means: then say it.
            if dtype is not None and (
                dtype != torch.get_default_dtype() or torch._C._len_torch_function_stack()
            ):
                arguments["dtype"] = dtype
        if integers is not None and any(slot.is_parameter and slot.floating for slot in self._layout().slots):
            raise DtypeError(
                self.layer_label(),
                f"its weights are floating-point, but its input is {integers.dtype} "
                f"(shape {format_shape(tuple(integers.shape))})",
                fix="convert the input, e.g. x.float(); token ids go into an L.Embedding first",
                source=self,
            )
        try:
            holds_none = self._torchx.key is not None and _torch_holds_tensors_itself(
                native, device_argument=False
            )
            if factory or (
                not holds_none and self._layout().slots
            ):  # a layer without tensors allocates nothing
                check_allocation(self, native, arguments, device, factory)
            self._become(native, arguments, inferred)
        except Exception as error:
            if isinstance(error, LayerError):
                raise
            self._layout()  # the arguments given refused whatever the input: an ArgumentError
            if not is_shape_problem(error) or not _refused_on_meta(native, arguments):
                add_note(error, f"raised in {self.layer_label()}, building {format_call(native, arguments)}")
                raise
            raise self.shape_error(
                f"cannot build {format_call(native, arguments)} for input "
                f"{describe_inputs(inputs)}: {torch_message(error)}",
                fix="change the layer's arguments or the input shape so that they agree",
            ) from error

    def _native_arguments(self, inferred: Mapping[str, Any]) -> dict[str, Any]:
        """The class's native arguments, the given ones (without inferable ones
        left unset) and ``inferred``."""
        cls = type(self)
        inferable = cls.inferable_arguments
        given = self._torchx.arguments
        if not inferable:  # nothing left unset to leave out
            arguments = {**cls.native_arguments, **given}
        else:
            arguments = {
                **cls.native_arguments,
                **{
                    name: value for name, value in given.items() if value is not None or name not in inferable
                },
            }
        if inferred:
            arguments.update(inferred)
        return arguments

    def _check_given(self, inferred: Mapping[str, Any], inputs: tuple[Any, ...]) -> None:
        """An inferred argument that was also given must agree with the input."""
        arguments = self._torchx.arguments
        inferable = type(self).inferable_arguments
        for name, size in inferred.items():
            given = arguments.get(name) if name in inferable else None
            if given is not None and given != size and _holds_probe_size(size):
                raise self.shape_error(
                    f"{name}={short_repr(given)} was given, but {_dynamic_source(self, [name], inputs)}",
                    fix=f"give the model input {short_repr(given)} there instead of None: a layer has one size",
                )
            if given is not None and given != size:
                raise self.shape_error(
                    f"{name}={short_repr(given)} was given, but the input {describe_inputs(inputs)} "
                    f"has {name}={short_repr(size)}",
                    fix=f"feed inputs with {name}={short_repr(given)}, or drop {name}= to infer it",
                )

    def _become(self, native: type[nn.Module], arguments: dict[str, Any], inferred: dict[str, Any]) -> None:
        """Become ``native(**arguments)``, in place; other threads calling this
        layer meanwhile wait for the build (``forward`` is looked up on the instance first)."""
        state = self.__dict__
        record = state["_torchx"]
        request = state.get("_torchx_request")
        state["forward"] = _wait_for_build(self)
        try:
            orphans = become_native(self, native, arguments)
        finally:
            state.pop("forward", None)
        record.inferred = inferred
        if request is not None and request.memory_format is not None:
            self.to(memory_format=request.memory_format)  # type: ignore[call-overload]
        if request is not None and request.shared:
            self.share_memory()
        missing = [key for key, tensor in orphans.items() if tensor() is not None] if orphans else None
        if missing:
            warnings.warn(
                f"{record.layer_class.__name__}: for this input its parameters are "
                f"{', '.join(name for name, _ in self.named_parameters())}, not the "
                f"{', '.join(missing)} it showed before the build, which something holds (an optimizer "
                f"made before the build?) and which stay untrained; pass {', '.join(f'{k}={v}' for k, v in inferred.items())} "
                "to the constructor, which fixes them before the build, or make the optimizer after it",
                BuildWarning,
                stacklevel=4,
            )

    def _layout(self) -> Layout:
        """The native module's parameters and buffers for these arguments,
        measured on meta the first time something needs them (the unbuilt
        layer's parameters read, a state dict loaded, a failed build explained).

        :raises ArgumentError: torch's constructor refuses the arguments given
            (``groups`` that do not divide ``out_channels``), whatever the input.
        """
        record = self._torchx
        if record.layout is not None:
            return record.layout
        native = type(self).native_class
        assert native is not None
        key = record.key  # None: measured each time
        layout = _LAYOUTS.get(key) if key is not None else None
        if layout is None:
            arguments = self._native_arguments(self.stand_in_arguments())
            try:
                layout = measure_layout(native, arguments, takes_factory_kwargs(native))
            except (ValueError, TypeError, RuntimeError, AssertionError) as error:
                raise ArgumentError(
                    f"{self.layer_label()}: torch's {native.__name__} refuses these arguments: "
                    f"{torch_message(error) or _failed_check(error)}",
                    fix="change the arguments as the message says",
                ) from None
            if key is not None:
                if len(_LAYOUTS) >= _LAYOUTS_LIMIT:
                    _LAYOUTS.clear()
                _LAYOUTS[key] = layout
        if key is not None:
            if len(_NESTS) >= _LAYOUTS_LIMIT:
                _NESTS.clear()
            _NESTS.setdefault(_nesting_key(key), layout.nested)
        record.layout = layout
        return layout

    def _check_arguments(self) -> None:
        if type(self).native_class is not None:
            self._layout()

    # -- loading a state dict builds the layer ----------------------------------

    def _local_state(self, state_dict: Mapping[str, Any], prefix: str) -> dict[str, Any] | None:
        """The entries of ``state_dict`` under ``prefix``, keyed relative to this
        layer, when they hold any of its keys; else None (nothing to build from)."""
        local = {key[len(prefix) :]: value for key, value in state_dict.items() if key.startswith(prefix)}
        shown = any(key in local for key in self._state_keys())
        return local if shown else None

    def _state_keys(self) -> list[str]:
        """The native module's state-dict keys, relative to the layer (none for a family's base)."""
        return self._layout().state_keys() if type(self).native_class is not None else []

    def _arguments_from_state(
        self, state: Mapping[str, torch.Tensor], prefix: str
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The native arguments a state dict (keys relative to this layer) asks
        for, checked against the given ones, and the inferred ones among them;
        raises a ShapeError naming the key that does not fit."""
        native = type(self).native_class
        assert native is not None
        inferred = self.infer_arguments_from_state(state)
        keys = self._state_keys()
        if inferred is None:
            raise self.shape_error(
                f"the state dict does not show its input size: it has "
                f"{', '.join(repr(prefix + key) for key in state) or 'no keys'} of "
                f"{', '.join(repr(prefix + key) for key in keys)}",
                fix="load a state dict with all of this layer's keys, or build it first: torchx.build(model, shape)",
            )
        arguments = self._native_arguments(inferred)
        # An inferable size that was given wins, so that a state that disagrees is named by its key.
        arguments.update(
            (name, self.arguments[name])
            for name in type(self).inferable_arguments
            if self.arguments.get(name) is not None
        )
        layout = measure_layout(native, arguments, takes_factory_kwargs(native))
        for key, shape in layout.shapes.items():
            tensor = state.get(key)
            if isinstance(tensor, torch.Tensor) and not is_pending(tensor) and tuple(tensor.shape) != shape:
                raise self.shape_error(
                    f"state key {prefix + key!r} has shape {format_shape(tuple(tensor.shape))}, but "
                    f"{format_call(native, arguments)} needs {format_shape(shape)}",
                    fix="load a state dict of this architecture, or change the layer's arguments to match it",
                )
        return arguments, inferred

    def _load_from_state_dict(
        self,
        state_dict: Mapping[str, Any],
        prefix: str,
        local_metadata: Any,
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        """An unbuilt layer builds from the state dict's shapes, then loads it."""
        native = type(self).native_class
        assert native is not None
        local = self._local_state(state_dict, prefix)
        if local is None or not _holds_data(self, local):
            # Nothing to build from: its keys are missing, or (as torch's lazy modules
            # take them) another unbuilt model's pending tensors, which leave it unbuilt.
            keys = self._state_keys()
            if local is None:
                missing_keys.extend(prefix + key for key in keys)
            if strict:
                unexpected_keys.extend(
                    key for key in state_dict if key.startswith(prefix) and key[len(prefix) :] not in keys
                )
            return None
        arguments, inferred = self._arguments_from_state(local, prefix)
        request = request_of(self)
        if request is not None and takes_factory_kwargs(native):
            arguments.update({k: v for k, v in (("device", request.device), ("dtype", request.dtype)) if v})
        self._become(native, arguments, inferred)
        type(self)._load_from_state_dict(  # the native's, now
            self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )
        return None

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> Any:
        """``nn.Module.load_state_dict``, building the layer from the state's shapes first."""
        return load_building(self, state_dict, strict=strict, assign=assign)

    def _save_to_state_dict(self, destination: dict[str, Any], prefix: str, keep_vars: bool) -> None:
        save_pending_state(self, destination, prefix)

    # -- what is asked before the build is kept ----------------------------------

    def _apply(self, fn: Any, recurse: bool = True) -> Any:
        """``.to()``, ``.cuda()``, ``.double()``, ``share_memory()``, a memory
        format... on an unbuilt layer are kept and applied when it builds (its
        pending tensors move already)."""
        request = (request_of(self) or PlacementRequest()).after(fn)
        self.__dict__["_torchx_request"] = request
        for _, tensor in pending_tensors(self):
            floating = tensor.is_floating_point()
            move_pending(
                tensor,
                request.device or tensor.device,
                (request.dtype or tensor.dtype) if floating else tensor.dtype,
            )
        return self

    def extra_repr(self) -> str:
        arguments = ", ".join(f"{name}={value!r}" for name, value in self._given_arguments().items())
        return f"{arguments}, not built" if arguments else "not built"

    def __prepare_scriptable__(self) -> nn.Module:
        """``torch.jit.script`` of an unbuilt layer says to build it first."""
        raise NotBuiltError(
            f"{self.layer_label()} is not built: build it (torchx.build) before torch.jit.script"
        )


def _wait_for_build(layer: nn.Module) -> Callable[..., Any]:
    def forward(*args: Any, **kwargs: Any) -> Any:
        with BUILD_LOCK:
            pass
        return type(layer).forward(layer, *args, **kwargs)

    return forward


def unbuild(module: nn.Module) -> None:
    """Return a built layer to its unbuilt state, keeping hooks, the training
    flag and the parameter objects (which become pending again)."""
    record = record_of(module)
    if record is None or isinstance(module, Layer):  # unbuilt, or a container
        return
    state = module.__dict__
    layout = record.layout if record.layout is not None else layout_of(module)
    tensors = revert_to_pending(module)
    kept = {key: state[key] for key in MODULE_STATE}
    request = state.get("_torchx_request")
    object.__setattr__(module, "__class__", record.layer_class)
    state.clear()
    init_module_state(module)
    state.update(kept)
    state["_torchx"] = record
    if request is not None:
        state["_torchx_request"] = request
    record.inferred = None
    add_pending(module, layout, reuse=tensors)


def _integers_in(layer_class: type[LeafLayer], inputs: tuple[Any, ...]) -> torch.Tensor | None:
    """The first of ``inputs`` where it is a tensor that is not floating-point
    (token ids) and ``layer_class`` does not take such input; else None."""
    first = inputs[0] if inputs else None
    if layer_class.integer_input or not isinstance(first, torch.Tensor):
        return None
    return None if first.is_floating_point() or first.is_complex() else first


def _classified(
    layer_class: type[LeafLayer],
    layer: nn.Module,
    call: tuple[tuple[Any, ...], Mapping[str, Any]],
    inputs: tuple[Any, ...],
    error: Exception,
) -> Exception:
    """The error to raise for ``error``, raised by the first call of ``layer``
    (``call``: its inputs and keyword inputs; ``inputs``: the positional ones):
    a DtypeError or ShapeError when the input's dtype is not the weights' and
    torch says a dtype is wrong, or when inputs of their shapes and dtypes
    make it fail on the meta device too (so they are the problem); else
    ``error`` itself, with a note naming the layer."""
    if isinstance(error, LayerError):
        return error
    label = layer_class.__name__
    if is_shape_problem(error):
        message = torch_message(error)
        weights = next((p.dtype for p in layer.parameters() if p.is_floating_point()), None)
        differs = _dtype_differs(layer_class, inputs, weights)
        about_dtype = _is_dtype_problem(message)
        # ids that are not integers are the problem where torch says a dtype is, whatever
        # the meta kernel says (torch 2.9's takes float ids into an embedding)
        if (about_dtype and (differs or _not_ids(layer_class, inputs))) or _fails_on_meta(layer, *call):
            if not about_dtype:
                return ShapeError(
                    label,
                    f"input {describe_inputs(inputs)} does not fit: {message}",
                    fix=layer_class.shape_fix(layer, inputs),
                    source=layer,
                )
            fix = None  # the dtype fails whatever the weights' (torch's message says which it takes)
            if layer_class.integer_input and any(
                isinstance(value, torch.Tensor) and value.is_floating_point() for value in inputs
            ):
                message = f"it takes integer ids (torch.long or torch.int); {message}"
                fix = "pass the ids as integers: x.long()"
            elif differs:
                fix = "convert the input to a dtype the layer takes (e.g. x.float())"
                if weights is not None:
                    fix = f"convert the input to its weights' dtype: x.to({weights})"
            return DtypeError(
                label,
                f"input {describe_inputs(inputs)} of dtype "
                f"{', '.join(str(v.dtype) for v in inputs if isinstance(v, torch.Tensor))}: {message}",
                fix=fix,
                source=layer,
            )
    hint = layer_class.failure_hint(layer, inputs, error)
    add_note(
        error,
        f"raised in {label}'s first call, on input {describe_inputs(inputs)}" + (f": {hint}" if hint else ""),
    )
    return error


def _not_ids(layer_class: type[LeafLayer], inputs: tuple[Any, ...]) -> bool:
    """Whether a layer that takes integer ids got a tensor of another dtype."""
    return layer_class.integer_input and any(
        isinstance(value, torch.Tensor)
        and (value.is_floating_point() or value.is_complex() or value.dtype == torch.bool)
        for value in inputs
    )


def _failed_check(error: BaseException) -> str:
    """What failed, for an error without a message (a bare ``assert`` of torch's,
    as ``nn.Hardtanh``'s ``max_val > min_val`` on torch 2.9): its source line."""
    frames = traceback.extract_tb(error.__traceback__)
    line = frames[-1].line if frames else None
    return f"{line} failed" if line else type(error).__name__


def _dtype_differs(
    layer_class: type[LeafLayer], inputs: tuple[Any, ...], weights: torch.dtype | None
) -> bool:
    """Whether an input tensor's dtype is not the floating ``weights``' (token
    ids into a layer that takes them aside), or, for a layer without floating
    weights, is not floating-point."""
    tensors = [value for value in inputs if isinstance(value, torch.Tensor)]
    if weights is None:
        return any(not tensor.is_floating_point() for tensor in tensors)
    return any(t.dtype != weights for t in tensors if t.is_floating_point() or not layer_class.integer_input)


def _fails_on_meta(layer: nn.Module, inputs: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
    """Whether the built ``layer`` fails for meta tensors of the shapes and
    dtypes of ``inputs`` (see :func:`_run_meta_copy`). An op with no meta
    kernel leaves it unknown: False."""
    try:
        _run_meta_copy(layer, inputs, kwargs)
    except Exception as error:  # noqa: BLE001 - any failure is the answer
        return not lacks_meta_kernel(error)
    return False


def _run_meta_copy(
    layer: nn.Module, inputs: tuple[Any, ...], kwargs: Mapping[str, Any], floating: torch.dtype | None = None
) -> Any:
    """The output of a meta copy of the built ``layer`` (no hooks) for meta
    tensors of the shapes and dtypes of ``inputs`` (floating ones in
    ``floating``, if given), outside autocast's devices and function transforms."""
    with outside_transforms():
        metas = tree_map(
            lambda value: (
                torch.empty(
                    value.shape,
                    dtype=floating if floating is not None and value.is_floating_point() else value.dtype,
                    device="meta",
                )
                if isinstance(value, torch.Tensor)
                else value
            ),
            (inputs, dict(kwargs)),
        )
        with warnings.catch_warnings(), meta_copy(layer, hooks=False) as copied, torch.no_grad():
            warnings.simplefilter("ignore")
            return copied.forward(*metas[0], **metas[1])


def _refused_on_meta(native: type[nn.Module], arguments: Mapping[str, Any]) -> bool:
    """Whether ``native(**arguments)`` fails on the meta device too (the
    arguments are the problem, not the device or the moment)."""
    try:
        measure_layout(native, arguments, takes_factory_kwargs(native))
    except Exception:  # noqa: BLE001 - any failure is the answer
        return True
    return False


_DTYPE_WORDS = ("dtype", "scalar type", "not implemented for '", "type (", "expected m1 and m2")


def _is_dtype_problem(message: str) -> bool:
    """Whether torch's ``message`` is about a dtype rather than a shape."""
    lowered = message.lower()
    return any(word in lowered for word in _DTYPE_WORDS) and "shape" not in lowered


def _autocasting(tensor: torch.Tensor) -> bool:
    """Whether autocast is on for ``tensor``'s device."""
    if not torch._C._is_any_autocast_enabled():  # one cheap call in the common case
        return False
    try:
        return bool(torch.is_autocast_enabled(tensor.device.type))
    except (TypeError, RuntimeError):  # a device type autocast does not know
        return False


def _new_meta(shape: Sequence[int], dtype: torch.dtype | None) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device=_META)


def closed_form_output(
    module: nn.Module,
    inputs: tuple[Any, ...],
    make_meta: Callable[[Sequence[int], torch.dtype], torch.Tensor] = _new_meta,
) -> Any:
    """The meta output of ``module``, a TorchX leaf layer built or not, for meta
    ``inputs``, from its layer's formula in the dtype of :func:`_checked_dtype`,
    which raises for a dtype the layer refuses (its input, for ``same_shape``
    layers keeping it; else ``make_meta(shape, dtype)``, a new meta tensor by
    default), or None when there is none."""
    with torch._C.DisableTorchFunction():  # bookkeeping on meta tensors: no mode's Python on every call
        found = _formula(module, inputs)
        return None if found is None else _meta_output(found, module, inputs, make_meta)


class _FormulaCall:
    """A built leaf's call inside :func:`formula_calls`: on meta tensors, its
    formula's output where it has one; else the call it stands in for."""

    __slots__ = ("module", "replaced")

    def __init__(self, module: nn.Module, replaced: Callable[..., Any] | None) -> None:
        self.module, self.replaced = module, replaced

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        output = None
        if not kwargs and all(isinstance(arg, torch.Tensor) and arg.is_meta for arg in args):
            output = closed_form_output(self.module, args)
        if output is not None:
            return output
        return (self.replaced or self.module._call_impl)(*args, **kwargs)


@contextmanager
def formula_calls(modules: Iterable[nn.Module]) -> Iterator[None]:
    """Inside the block, each built TorchX leaf among ``modules`` without call
    hooks answers a call on meta tensors from its formula (see
    :func:`closed_form_output`), as it did while building, and each graph
    from what it worked out (its ``answering_meta_calls()`` block), not by a
    meta run of their forward: torch works out many meta outputs in Python,
    and the first such run in a process imports its compiler (a second).
    Only for modules no other code can use meanwhile (a build's, a meta copy)."""
    modules = list(modules)
    leaves = [module for module in modules if _is_built_leaf(module) and not _runs_hooks(module)]
    replaced = [module.__dict__.get("_compiled_call_impl", _ABSENT) for module in leaves]
    for module, call in zip(leaves, replaced, strict=True):
        module.__dict__["_compiled_call_impl"] = _FormulaCall(module, None if call is _ABSENT else call)
    try:
        with ExitStack() as graphs:
            for module in modules:
                if hasattr(type(module), "answering_meta_calls"):
                    graphs.enter_context(module.answering_meta_calls())  # type: ignore[operator]
            yield
    finally:
        for module, call in reversed(list(zip(leaves, replaced, strict=True))):  # a module given twice too
            if call is _ABSENT:
                del module.__dict__["_compiled_call_impl"]
            else:
                module.__dict__["_compiled_call_impl"] = call


_ABSENT = object()


def _is_built_leaf(module: nn.Module) -> bool:
    record = record_of(module)
    return (
        record is not None and issubclass(record.layer_class, LeafLayer) and not isinstance(module, LeafLayer)
    )


def _meta_output(
    found: _Formula,
    module: nn.Module,
    inputs: tuple[Any, ...],
    make_meta: Callable[[Sequence[int], torch.dtype], torch.Tensor],
) -> Any:
    """The meta output of ``module`` for meta ``inputs``: the shape its
    formula ``found`` gives, the dtype of :func:`_checked_dtype` (None where
    that is still unknown)."""
    layer_class, shape = found
    dtype = _checked_dtype(layer_class, module, inputs)
    return None if dtype is None else _output_of(shape, dtype, inputs, make_meta)


def _output_of(
    shape: tuple[int, ...] | None,
    dtype: torch.dtype,
    inputs: tuple[torch.Tensor, ...],
    make_meta: Callable[[Sequence[int], torch.dtype], torch.Tensor],
) -> torch.Tensor:
    """A meta output of ``shape`` (None: the input's) and ``dtype`` for meta ``inputs``."""
    if shape is None and dtype == inputs[0].dtype:
        return inputs[0]  # a meta tensor: only its shape and dtype are read
    return make_meta(inputs[0].shape if shape is None else shape, dtype)


_Formula = tuple[type[LeafLayer], tuple[int, ...] | None]
"""A layer class and the output shape its formula gives (None: the input's)."""


def _formula(module: nn.Module, inputs: tuple[Any, ...]) -> _Formula | None:
    """The layer class of ``module`` (a TorchX leaf layer, built or not) and the
    output shape its formula gives for meta ``inputs`` (None: the input's, a
    ``same_shape`` layer), or None where it has no formula for them. Raises
    the ShapeError of inputs that a built layer does not fit."""
    if not _all_tensors(inputs):
        return None
    record = module.__dict__.get("_torchx")
    if not isinstance(record, LayerRecord):
        return None
    layer_class = record.layer_class
    if (
        not (isinstance(layer_class, type) and issubclass(layer_class, LeafLayer))
        or layer_class.native_class is None
    ):
        return None
    view: Layer | None = None
    if record.inferred and not isinstance(module, layer_class):  # built: the inputs must fit
        view = layer_view(module)
        assert isinstance(view, LeafLayer)
        misfit = _misfit(view, module, inputs, record.inferred)
        if misfit is not None:
            raise misfit
    if layer_class.same_shape:
        return layer_class, None
    if view is None:
        view = module if isinstance(module, layer_class) else layer_view(module)
    assert isinstance(view, LeafLayer)
    return _shape_formula(layer_class, view, inputs)


def _all_tensors(inputs: tuple[Any, ...]) -> bool:
    """Whether ``inputs`` are tensors, one at least: what a formula reads."""
    if len(inputs) == 1:  # the common case, without a generator
        return isinstance(inputs[0], torch.Tensor)
    return bool(inputs) and all(isinstance(value, torch.Tensor) for value in inputs)


def _shape_formula(
    layer_class: type[LeafLayer], view: LeafLayer, inputs: tuple[torch.Tensor, ...]
) -> _Formula | None:
    """:func:`_formula` past its checks, for a layer of ``layer_class`` with a
    native class and without ``same_shape``: ``view`` is the layer (unbuilt, or
    the view of a built one that ``inputs`` fit); ``inputs`` are meta tensors."""
    shapes = (tuple(inputs[0].shape),) if len(inputs) == 1 else tuple(tuple(value.shape) for value in inputs)
    shape = view.infer_output_shape(*shapes)
    if shape is None or None in shape:
        return None  # no formula: the meta run says
    sizes: tuple[int, ...] = shape  # type: ignore[assignment]  # no None in it
    if sizes and min(sizes) < 0:
        return None  # an input it does not fit: the meta run says why
    if math.prod(sizes) * inputs[0].element_size() >= _MAX_BYTES:
        return None  # more bytes than a tensor can address: the meta run says why
    return layer_class, sizes


def _output_dtype(
    layer_class: type[LeafLayer], module: nn.Module, inputs: tuple[Any, ...]
) -> torch.dtype | None:
    """The dtype of ``module``'s output for ``inputs`` (see ``output_dtype_of``);
    None where its parameter's dtype is the build's, still to come."""
    name = layer_class.output_dtype_of
    if name is None:
        dtype: torch.dtype = inputs[0].dtype
        return dtype
    tensor = None if isinstance(module, LeafLayer) else module._parameters.get(name)
    return None if tensor is None else tensor.dtype


def _checked_dtype(
    layer_class: type[LeafLayer], module: nn.Module, inputs: tuple[Any, ...]
) -> torch.dtype | None:
    """The dtype of the output of ``module``, built, for meta ``inputs``;
    raises the error of its first call for inputs of a kind of dtype torch
    refuses (ids into an embedding are integers; dropout does not take integers).

    Floating inputs in the dtype of the layer's floating parameters (or
    any one floating dtype, for a layer without them) are what every layer
    of floating inputs takes, as ids of one dtype, long or int, are what every
    layer of ids takes (into its weights' dtype): the dtype is the one the layer declares (see
    :func:`_output_dtype`). Other dtypes (integers into a layer of floats, a
    precision other than the weights') are what a formula cannot judge, so a
    meta run answers. Floating inputs run in the dtype of the layer's floating
    parameters: a shape or placeholder promises a kind of dtype, not its
    precision (a float64 model is built from shapes, a floating placeholder
    takes float64). Where the run cannot answer (an unbuilt layer, an op
    with no meta kernel): the declared dtype, unchecked. Kernels that refuse
    a dtype on one device only (``relu`` of bools on CPU) refuse it when the
    model runs."""
    if isinstance(module, LeafLayer):
        return _output_dtype(layer_class, module, inputs)
    weights = next(
        (p.dtype for p in module._parameters.values() if p is not None and p.is_floating_point()), None
    )
    dtypes = {value.dtype for value in inputs}
    if len(dtypes) == 1 and (  # ids of one dtype into a layer of ids; floating inputs in the weights' dtype
        dtypes <= {torch.long, torch.int} and layer_class.output_dtype_of is not None
        if layer_class.integer_input
        else not _dtype_differs(layer_class, inputs, weights)
    ):
        return _output_dtype(layer_class, module, inputs)
    try:
        output = _run_meta_copy(module, inputs, {}, floating=weights)
    except Exception as error:
        if not lacks_meta_kernel(error):
            classified = _classified(layer_class, module, (inputs, {}), inputs, error)
            if classified is error:
                raise
            raise classified from error
        output = None
    return output.dtype if isinstance(output, torch.Tensor) else _output_dtype(layer_class, module, inputs)


def _runs_hooks(module: nn.Module) -> bool:
    """Whether a call of ``module`` runs hooks (its own or global ones) around its forward."""
    return bool(
        module._forward_hooks
        or module._forward_pre_hooks
        or module._backward_hooks
        or module._backward_pre_hooks
        or has_any_global_hook()
    )


def build_for_meta(
    layer: nn.Module,
    probes: Probes,
    inputs: Sequence[tuple[Any, ...]],
    device: torch.device,
    dtype: torch.dtype | None,
) -> list[Any] | None:
    """Build ``layer``, an unbuilt leaf layer, for meta ``inputs`` (positional,
    one tuple per probe) on ``device`` (in ``dtype``, or the layers' default)
    and give its meta output under each probe from its formula (the dtype
    from :func:`_checked_dtype`): its first call inside :func:`build_target`,
    without the swap to stand-ins, the meta run of each call and the build
    transaction that a layer without a formula, or with hooks, needs. None, with nothing built, where those are needed. Every
    probe is checked against the formula before the first probe builds: one
    that needs other inferred arguments (a dynamic dim read as a size) raises
    the ShapeError, with nothing built."""
    if not isinstance(layer, LeafLayer) or _runs_hooks(layer):
        return None
    layer_class = type(layer)
    if layer_class.native_class is None or not all(map(_all_tensors, inputs)):  # _formula's checks, once
        return None
    built_for: list[dict[str, Any]] = []  # the arguments the first probe builds with

    def formula(probe: int) -> _Formula | None:  # _formula, its checks made above
        found = (
            (layer_class, None)
            if layer_class.same_shape
            else _shape_formula(layer_class, layer, inputs[probe])
        )
        if found is None:
            return None
        if not probe:  # a given argument is checked first, as the build checks it
            built_for.append(layer.infer_arguments(*inputs[0]))
            layer._check_given(built_for[0], inputs[0])
        else:  # what the first probe builds must fit this one too
            misfit = _misfit(layer, layer, inputs[probe], built_for[0])
            if misfit is not None:
                raise misfit
        return found

    with BUILD_LOCK:
        if type(layer) is not layer_class:
            return None  # another thread built it meanwhile
        formulas = probes.run(formula)
        if None in formulas:
            return None
        inferred = built_for[0]
        try:
            with probes.shown(0):
                _build_alone(layer, inputs[0], BuildTarget.on(device, dtype), dict(inferred))
                # the probes differ in sizes only: one dtype for all
                output_dtype = _checked_dtype(layer_class, layer, inputs[0])
                if output_dtype is None:
                    return [None] * len(formulas)
                return [
                    _output_of(cast("_Formula", found)[1], output_dtype, inputs[probe], _new_meta)
                    for probe, found in enumerate(formulas)
                ]
        except BaseException:
            unbuild(layer)
            raise


def _build_alone(
    layer: LeafLayer, inputs: tuple[Any, ...], target: BuildTarget, inferred: dict[str, Any] | None
) -> None:
    """``layer._build``, with the errors of its first call."""
    try:
        with outside_transforms():
            layer._build(inputs, list(inputs), target, inferred)
    except Exception as error:
        classified = _classified(type(layer), layer, (inputs, {}), inputs, error)
        if classified is error:
            raise
        raise classified from error


def explain_failure(module: nn.Module, inputs: tuple[Any, ...], error: BaseException) -> LayerError | None:
    """Why ``module``, a built TorchX layer, failed on ``inputs``, when the
    reason is that their sizes differ from those it was built for: a ShapeError
    naming both. None for anything else (torch's own error then stands)."""
    if isinstance(error, LayerError):
        return error
    record = record_of(module)
    if record is None or record.inferred is None or not is_shape_problem(error):
        return None
    view = layer_view(module)
    if not isinstance(view, LeafLayer):
        return None
    return _misfit(view, module, inputs, record.inferred)


def _misfit(
    view: LeafLayer, module: nn.Module, inputs: tuple[Any, ...], built: Mapping[str, Any]
) -> LayerError | None:
    """A ShapeError when ``inputs`` need other inferred arguments than ``built``,
    those ``module`` (whose layer is ``view``) was built with; None when they
    agree. Under a probe, an argument read off a dynamic dim is named as such:
    the first probe built the layer for its size, or it was built for a real
    size that a dynamic dim does not promise."""
    try:
        now = view.infer_arguments(*inputs)
    except ShapeError as mismatch:
        mismatch.source = mismatch.origin = module
        return mismatch
    changed = tuple(name for name in now if name in built and now[name] != built[name])
    if not changed:
        return None
    dynamic = [name for name in changed if _holds_probe_size(now[name])]
    if dynamic:
        source = _dynamic_source(view, dynamic, inputs)
        fixed = [name for name in dynamic if not _holds_probe_size(built[name], DYNAMIC_PROBES)]
        if fixed:  # built before, for a real size
            sizes = ", ".join(f"{name}={short_repr(built[name])}" for name in fixed)
            problem = f"{source}, but it was built with {sizes}"
            fix = "give the model input that size there instead of None: a built layer never rebuilds itself"
        else:  # built by the first probe, for its stand-in size
            problem = f"{source}, so the layer would be built for one size of it"
            fix = "make that dim static: give the model input a size there instead of None"
    else:
        sizes = ", ".join(
            f"{name}={short_repr(now[name])} (built with {short_repr(built[name])})" for name in changed
        )
        problem = (
            f"got input {describe_inputs(inputs)}, which needs {sizes}; a built layer never rebuilds itself"
        )
        fix = "feed inputs of the size it was built for, or use a new layer for the new size"
    explained = ShapeError(view.layer_label(), problem, fix=fix, source=module)
    explained.changed = changed
    return explained


def _holds_probe_size(value: Any, probes: Container[int] | None = None) -> bool:
    """Whether an inferred argument's ``value`` (a size, or a tuple of sizes)
    holds the stand-in size of a dynamic dim in the probe running now (or, given
    ``probes``, in any of them)."""
    sizes = value if isinstance(value, tuple) else (value,)
    return any(
        isinstance(size, int) and (is_probe_size(size) if probes is None else size in probes)
        for size in sizes
    )


def _dynamic_source(view: LeafLayer, names: Sequence[str], inputs: tuple[Any, ...]) -> str:
    """Where ``names``, inferred arguments read off dynamic dims, come from:
    ``in_features would come from the last dim of its input (None, None), a dynamic (None) dim``."""
    shown = describe_inputs(inputs)
    rule = view.inferred_arguments.get(names[0]) if len(names) == 1 else None
    if rule is None:
        inputs_are = "its inputs" if len(inputs) > 1 else "its input"
        return f"{', '.join(names)} would come from dynamic (None) dims of {inputs_are} {shown}"
    dim = "the last dim" if rule.dim == -1 else f"dim {rule.dim}"
    of = f"input {rule.input} of its inputs" if len(inputs) > 1 else "its input"
    return f"{names[0]} would come from {dim} of {of} {shown}, a dynamic (None) dim"


def is_shape_problem(error: BaseException) -> bool:
    """Whether ``error``, raised by torch for some input, may be about its shape.

    Memory exhaustion and interrupts never are.
    """
    if isinstance(error, torch.OutOfMemoryError):
        return False
    return isinstance(error, (RuntimeError, ValueError, AssertionError, IndexError, TypeError))


def _holds_data(layer: LeafLayer, state: Mapping[str, Any]) -> bool:
    """Whether ``state`` (``layer``'s entries of a state dict) has a tensor of one
    of its keys that is not pending (another unbuilt model's)."""
    keys = layer._state_keys()
    return any(isinstance(value := state.get(key), torch.Tensor) and not is_pending(value) for key in keys)


def unbuilt_layers(module: nn.Module) -> list[LeafLayer]:
    """Every leaf layer in ``module`` (itself included) that has yet to build."""
    if not module._modules:  # a leaf: no walk
        return [module] if isinstance(module, LeafLayer) else []
    return [sub for sub in submodules(module) if isinstance(sub, LeafLayer)]


def load_building(module: nn.Module, state_dict: Mapping[str, Any], *, strict: bool, assign: bool) -> Any:
    """``nn.Module.load_state_dict(module, ...)``; unbuilt layers inside build
    from the state's shapes first. Every unbuilt layer is checked before
    anything changes, and if loading fails, the layers it built are unbuilt again."""
    for path, sub in module.named_modules():
        if isinstance(sub, LeafLayer) and type(sub).native_class is not None:
            prefix = f"{path}." if path else ""
            local = sub._local_state(state_dict, prefix)
            if local is not None and _holds_data(sub, local):
                sub._arguments_from_state(local, prefix)
    with all_or_nothing(module):
        return nn.Module.load_state_dict(module, state_dict, strict=strict, assign=assign)


@contextmanager
def all_or_nothing(
    module: nn.Module, rehearsal: Rehearsal | None = None, unbuilt: list[LeafLayer] | None = None
) -> Iterator[list[LeafLayer]]:
    """A build transaction: layers of ``module`` may build inside the block,
    and if it raises, every layer built inside it returns to its unbuilt
    state, so nothing stays half-built. The block holds the build lock: one
    thread builds ``module`` while others wait, and a thread that fails never
    unbuilds what another one built. It gives the layers still unbuilt when
    it began (none: another thread built them meanwhile). What they allocate
    is checked against the memory as one sum (see
    :func:`~torchx.plugin.allocation_budget`); ``rehearsal`` measures the
    whole build first, for models too large to build blindly. ``unbuilt``: the
    model's unbuilt layers, found by the caller (no second walk of the model)."""
    with BUILD_LOCK, allocation_budget(rehearsal):
        if unbuilt is None:
            pending = unbuilt_layers(module)
        else:  # those another thread built meanwhile are their native modules now
            pending = [layer for layer in unbuilt if isinstance(layer, LeafLayer)]
        try:
            yield pending
        except BaseException:
            for layer in pending:
                if not isinstance(layer, LeafLayer):  # it built: it is its native module now
                    unbuild(layer)
            raise


def _tensors_in(inputs: tuple[Any, ...]) -> list[torch.Tensor]:
    """The tensors among ``inputs``, looking inside lists, tuples and dicts."""
    if len(inputs) == 1 and isinstance(inputs[0], torch.Tensor):  # the common case
        return [inputs[0]]
    if all(isinstance(value, torch.Tensor) for value in inputs):
        return list(inputs)
    return [leaf for leaf in tree_leaves(inputs) if isinstance(leaf, torch.Tensor)]


@by_class
def _forward_parameters(native: type[nn.Module]) -> list[str]:
    """The names of the native forward's parameters that an input may fill by position (cached)."""
    try:
        parameters = list(inspect.signature(native.forward).parameters.values())[1:]
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.POSITIONAL_ONLY)
    return [p.name for p in parameters if p.kind in kinds]


def _positional_inputs(
    native: type[nn.Module], inputs: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> tuple[Any, ...]:
    """``inputs`` with the keyword inputs of the native forward put in their
    positions (``layer(input=x)``, ``attention(q, key=k, value=v)``), for inference."""
    positional = list(inputs)
    for name in _forward_parameters(native)[len(inputs) :]:
        if name not in kwargs:
            break
        positional.append(kwargs[name])
    return tuple(positional)
