"""What an unbuilt layer holds, and how it becomes its native module in place.

Before its first input a layer already shows the parameters and buffers its
native module will have, as :class:`PendingParameter` / :class:`PendingBuffer`
(torch's ``UninitializedParameter`` / ``UninitializedBuffer``, so every torch
tool recognises them): an optimizer made before the build holds them, DDP and
FSDP refuse them with torch's own message, ``load_state_dict`` sees their keys.
Their names come from a :class:`Layout`: the native module constructed once on
the meta device (no memory, no random numbers drawn), cached per arguments.

The build runs the native constructor on the layer itself (so hooks it
registers are bound to the layer, not to a discarded object), then moves each
fresh tensor's data into the pending object of the same name, which becomes
an ordinary ``Parameter`` or buffer: the same objects, with the native
constructor's values. What was asked of the unbuilt layer (``.to()``,
``share_memory()``, a memory format) is kept in a :class:`PlacementRequest`
and applied then.
"""

from __future__ import annotations

import math
import threading
import warnings
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, ClassVar

import torch
from torch import nn
from torch.nn.parameter import UninitializedBuffer, UninitializedParameter
from torch.overrides import TorchFunctionMode

from torchx.core._errors import NotBuiltError
from torchx.core._tree import by_class

__all__ = [
    "Layout",
    "PendingBuffer",
    "PendingChild",
    "PendingParameter",
    "PendingStore",
    "PlacementRequest",
    "TensorSlot",
    "add_pending",
    "become_native",
    "construct_on_meta",
    "empty_of_rank",
    "is_pending",
    "measure_layout",
    "move_pending",
    "pending_stores",
    "pending_tensors",
    "request_of",
    "revert_to_pending",
    "save_pending_state",
    "stand_in_size",
    "unfilled",
]

_ALSO_ALLOWED = [torch.Tensor.requires_grad_, torch.Tensor.dim, torch.Tensor.is_shared]


def _allowed(torch_allowed: list[Any]) -> list[Any]:
    """What torch's uninitialized tensors allow, less ``size()`` (whose empty
    answer makes ``nn.init.xavier_uniform_`` divide by zero), plus ``_ALSO_ALLOWED``."""
    return [method for method in torch_allowed if method is not torch.Tensor.size] + _ALSO_ALLOWED


class _Pending:
    """What pending parameters and buffers share: the rank the built tensor will
    have (``ndim``, ``dim()``: their empty data has it), and an error that says
    how to build for anything else."""

    _allowed_methods: ClassVar[list[Any]]

    @classmethod
    def __torch_function__(
        cls, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        if func in cls._allowed_methods or func.__class__.__name__ == "method-wrapper":
            return super().__torch_function__(func, types, args, kwargs)  # type: ignore[misc]
        name = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
        raise NotBuiltError(f"{name} was called on {_UNBUILT}")

    @property
    def shape(self) -> torch.Size:
        raise NotBuiltError(f"the shape was asked of {_UNBUILT}")

    def __deepcopy__(self, memo: dict[int, Any]) -> torch.Tensor:
        copied = memo.get(id(self))
        if copied is None:
            tensor: Any = self
            copied = memo[id(self)] = make_pending(
                type(tensor), tensor.requires_grad, tensor.device, tensor.dtype, tensor.dim()
            )
        return copied

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        tensor: Any = self
        return (make_pending, (type(tensor), tensor.requires_grad, None, tensor.dtype, tensor.dim()))


_UNBUILT = (
    "a parameter or buffer of a TorchX layer that is not built yet: call "
    "torchx.build(model, input_shape) first, run the model on one batch, or load a state dict into it"
)


class PendingParameter(_Pending, UninitializedParameter):  # type: ignore[override]  # shape raises
    """A parameter of an unbuilt layer: torch's ``UninitializedParameter`` that
    also takes ``requires_grad_`` (so ``model.requires_grad_(False)`` before the
    build is kept) and knows its rank. It becomes an ``nn.Parameter``, the same
    object, at the build."""

    cls_to_become = nn.Parameter
    _allowed_methods: ClassVar[list[Any]] = _allowed(UninitializedParameter._allowed_methods)  # type: ignore[attr-defined]


class PendingBuffer(_Pending, UninitializedBuffer):  # type: ignore[override]  # shape raises
    """A buffer of an unbuilt layer; it becomes a plain tensor at the build."""

    cls_to_become = torch.Tensor
    _allowed_methods: ClassVar[list[Any]] = _allowed(UninitializedBuffer._allowed_methods)  # type: ignore[attr-defined]


def make_pending(
    kind: type[torch.Tensor],
    requires_grad: bool,
    device: torch.device | None,
    dtype: torch.dtype | None,
    ndim: int = 1,
) -> torch.Tensor:
    """A new pending parameter or buffer (``kind``) of rank ``ndim``, empty, on ``device`` in ``dtype``."""
    with torch._C.DisableTorchFunction():
        return torch.Tensor._make_subclass(kind, empty_of_rank(ndim, device, dtype), requires_grad)


_empty = torch.empty
"""``torch.empty`` as torch defines it. Tools that record a model's run
(torchview) replace torch's creation functions meanwhile, and neither the
scaffolding of pending tensors nor the probes of a placement request are part
of the model they draw."""


def empty_of_rank(ndim: int, device: torch.device | None, dtype: torch.dtype | None) -> torch.Tensor:
    """An empty tensor of rank ``ndim``: the data of a pending tensor of that
    rank; a normal tensor even inside ``torch.inference_mode()`` (parameters
    read there), where an inference tensor could not take the build's data."""
    with torch.inference_mode(False):
        return _empty((0,) * ndim, device=device, dtype=dtype)


def move_pending(tensor: torch.Tensor, device: torch.device, dtype: torch.dtype) -> None:
    """Put pending ``tensor`` on ``device`` in ``dtype`` (where its kind of
    tensor allows), whatever tensor subclasses and function modes of other
    libraries are about: this is bookkeeping, not a computation for them to see."""
    with torch._C.DisableTorchFunction():
        moved = empty_of_rank(tensor.dim(), device, dtype)
        if torch._has_compatible_shallow_copy_type(tensor, moved):
            tensor.data = moved


def is_pending(tensor: object) -> bool:
    """Whether ``tensor`` is a parameter or buffer still waiting for its layer's build."""
    return isinstance(tensor, (UninitializedParameter, UninitializedBuffer))


@dataclass(frozen=True)
class TensorSlot:
    """One parameter or buffer of a native module, as its layout shows it."""

    path: str
    """The submodule holding it (``""``: the module itself; ``"out_proj"``)."""
    name: str
    is_parameter: bool
    floating: bool
    dtype: torch.dtype
    """Its dtype when not floating (``num_batches_tracked`` is int64)."""
    requires_grad: bool
    persistent: bool
    ndim: int
    """Its rank (no inferred size changes it), which its pending tensor reports before the build."""

    @property
    def key(self) -> str:
        """Its state-dict key, relative to the module."""
        return f"{self.path}.{self.name}" if self.path else self.name


@dataclass(frozen=True)
class Layout:
    """The parameters and buffers of a native module, and their shapes for the
    arguments it was measured with (stand-ins for what the input decides)."""

    slots: tuple[TensorSlot, ...]
    shapes: Mapping[str, tuple[int, ...]]
    """Each slot's shape, by key, for the arguments the layout was made with."""

    def state_keys(self) -> list[str]:
        """Every slot's state-dict key, relative to the module."""
        return [slot.key for slot in self.slots]

    @cached_property
    def nested(self) -> bool:
        """Whether a slot sits in a submodule (a MultiheadAttention's ``out_proj``)."""
        return any(slot.path for slot in self.slots)


_META = torch.device("meta")

BUILD_LOCK = threading.RLock()
"""Held by every build: a layer's build and first call, a container's whole
first forward, ``torchx.build``, a load into unbuilt layers, the making of
pending tensors. One caller builds; the others wait, then find the model built."""

_FILLS = frozenset(
    [
        *(getattr(torch.nn.init, name) for name in dir(torch.nn.init) if name[0] != "_" and name[-1] == "_"),
        *(
            getattr(torch.Tensor, name)
            for name in (
                *("normal_", "uniform_", "exponential_", "log_normal_", "cauchy_", "geometric_"),
                *("erfinv_", "mul_", "add_", "sub_", "div_", "clamp_", "fill_", "zero_", "copy_"),
            )
        ),
    ]
)
"""What fills a tensor in place: ``torch.nn.init``'s initializers (which torch's
modules call in their ``reset_parameters``), the random fills of tensors and
the arithmetic in place that initializers finish with (``trunc_normal_``:
``erfinv_``, ``mul_``, ``add_``, ``clamp_`` of a uniform fill, which torch 2.9
runs without dispatching the initializer itself)."""


class _MetaFillsSkipped(TorchFunctionMode):
    """Inside the block, a fill of a meta tensor (see :data:`_FILLS`) returns
    the tensor, as the fill does, without checking its arguments: a meta tensor
    holds no values to draw, and torch runs ``normal_``, ``erfinv_``... on meta
    through Python decompositions that import its compiler (``torch._dynamo``:
    a second of a fresh process's first ``L.Embedding``)."""

    def __torch_function__(
        self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if func in _FILLS:
            tensor = args[0] if args else kwargs.get("tensor")  # torch.nn.init passes it by name
            if isinstance(tensor, torch.Tensor) and tensor.is_meta:
                return tensor
        return func(*args, **kwargs)


def _constructing(arguments: Mapping[str, Any]) -> AbstractContextManager[object]:
    """The block a native constructor given ``arguments`` runs in: fills skipped
    where they put it on the meta device (see :class:`_MetaFillsSkipped`)."""
    device = arguments.get("device")
    return (
        _MetaFillsSkipped() if device is not None and torch.device(device).type == "meta" else nullcontext()
    )


def construct_on_meta(
    native: type[nn.Module], arguments: Mapping[str, Any], takes_factory_kwargs: bool
) -> nn.Module:
    """``native(**arguments)`` on the meta device, its fills skipped (see
    :class:`_MetaFillsSkipped`): nothing allocated, no random number drawn."""
    if takes_factory_kwargs:
        with _MetaFillsSkipped():
            return native(**{**arguments, "device": _META})
    with _META, _MetaFillsSkipped():
        return native(**arguments)


def measure_layout(
    native: type[nn.Module], arguments: Mapping[str, Any], takes_factory_kwargs: bool
) -> Layout:
    """The layout of ``native(**arguments)``, measured on the meta device.

    Raises whatever the native constructor raises for these arguments; warnings
    it gives are left for the real build to give.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return layout_of(construct_on_meta(native, arguments, takes_factory_kwargs))


def layout_of(module: nn.Module) -> Layout:
    """The parameters and buffers ``module`` (a native module) holds, its children's included."""
    slots, shapes = [], {}
    for path, owner in module.named_modules(remove_duplicate=False):
        for store, is_parameter in ((owner._parameters, True), (owner._buffers, False)):
            for name, tensor in store.items():
                if tensor is None:
                    continue
                slot = TensorSlot(
                    path,
                    name,
                    is_parameter,
                    tensor.is_floating_point() or tensor.is_complex(),
                    tensor.dtype,
                    tensor.requires_grad,
                    is_parameter or name not in owner._non_persistent_buffers_set,
                    tensor.dim(),
                )
                slots.append(slot)
                shapes[slot.key] = tuple(tensor.shape)
    return Layout(tuple(slots), shapes)


def stand_in_size(arguments: Mapping[str, Any]) -> int:
    """A size for the inferred arguments of a layout measurement that fits the
    given ones: the least common multiple of every positive int given (so that
    ``in_channels`` is divisible by ``groups``, ``embed_dim`` by ``num_heads``)."""
    sizes = [
        item
        for value in arguments.values()
        for item in (value if isinstance(value, (list, tuple)) else (value,))
        if type(item) is int and 0 < item < 2**20
    ]
    size = math.lcm(*sizes) if sizes else 1
    return size if size < 2**31 else 1


class PendingChild(nn.Module):
    """Stands for a submodule of an unbuilt layer's native module (a
    MultiheadAttention's ``out_proj``), holding its pending parameters."""

    def _save_to_state_dict(self, destination: dict[str, Any], prefix: str, keep_vars: bool) -> None:
        save_pending_state(self, destination, prefix)

    def _load_from_state_dict(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to do: the layer above builds (and loads) itself or reports the keys."""

    def extra_repr(self) -> str:
        return "not built"


def _pending(slot: TensorSlot, device: torch.device | None, dtype: torch.dtype | None) -> torch.Tensor:
    chosen = (dtype or torch.get_default_dtype()) if slot.floating else slot.dtype
    if slot.is_parameter:
        return make_pending(PendingParameter, slot.requires_grad, device, chosen, slot.ndim)
    return make_pending(PendingBuffer, False, device, chosen, slot.ndim)


class PendingStore(dict):  # type: ignore[type-arg]
    """The ``_parameters`` or ``_buffers`` of an unbuilt layer: empty until
    something reads it, when both fill with the layer's pending tensors (its
    layout measured then, where nothing measured it before).

    So a model built before anything looks at its parameters (``torchx.build``
    right after construction) never makes them; anything that does look
    (``parameters()``, ``state_dict()``, an attribute, a copy) sees them, and
    they are the objects the build turns into the parameters.
    """

    __slots__ = ("_key", "_owner", "filled")

    def __init__(self, owner: weakref.ref[nn.Module], key: str) -> None:  # empty already: no dict.__init__
        self._owner, self._key = owner, key
        self.filled = False

    def fill(self) -> None:
        """Make the owner's pending tensors (both of its stores), once; not while
        another thread builds it. Where torch refuses the layer's arguments, each
        read raises the ArgumentError."""
        if self.filled:
            return
        with BUILD_LOCK:
            owner = self._owner()
            state = {} if owner is None else owner.__dict__
            stores = [
                state[key] for key in ("_parameters", "_buffers") if isinstance(state.get(key), PendingStore)
            ]
            for store in (self, *stores):
                store.filled = True  # reads while the layout is measured see them empty
            if owner is None or not any(store is self for store in stores):
                return
            try:
                layout = owner._layout()  # type: ignore[operator]
            except BaseException:
                for store in stores:
                    store.filled = False
                raise
            add_requested_pending(owner, layout)

    def _filled(self) -> dict[Any, Any]:
        """This store, filled; or what replaced it, where a build did (a read
        that waited for another thread's build sees the built module's)."""
        self.fill()
        owner = self._owner()
        current = None if owner is None else owner.__dict__.get(self._key)
        return self if current is None else current

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self._filled(), key)

    def __getitem__(self, key: Any) -> Any:
        return dict.__getitem__(self._filled(), key)

    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self._filled(), key, value)

    def __delitem__(self, key: Any) -> None:
        dict.__delitem__(self._filled(), key)

    def __iter__(self) -> Iterator[Any]:
        return dict.__iter__(self._filled())

    def __len__(self) -> int:
        return dict.__len__(self._filled())

    def __eq__(self, other: object) -> bool:
        return dict.__eq__(self._filled(), other)

    __hash__ = None

    def __repr__(self) -> str:
        return dict.__repr__(self._filled())

    def get(self, key: Any, default: Any = None) -> Any:
        return dict.get(self._filled(), key, default)

    def keys(self) -> Any:
        return dict.keys(self._filled())

    def values(self) -> Any:
        return dict.values(self._filled())

    def items(self) -> Any:
        return dict.items(self._filled())

    def pop(self, key: Any, *default: Any) -> Any:
        return dict.pop(self._filled(), key, *default)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        return dict.setdefault(self._filled(), key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        dict.update(self._filled(), *args, **kwargs)

    def copy(self) -> dict[Any, Any]:
        return dict(self._filled())

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        import copy

        return copy.deepcopy(dict(self._filled()), memo)

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return (dict, (dict(self._filled()),))


def pending_stores(module: nn.Module, layout: Layout | None) -> None:
    """Give ``module`` (an unbuilt layer) stores that make its pending tensors
    when first read (see :class:`PendingStore`), its layout measured then if
    it is None now; a layout whose tensors sit in submodules gets them at once
    (their stand-in children are modules)."""
    if layout is not None and layout.nested:
        add_requested_pending(module, layout)
    elif layout is None or layout.slots:
        state, owner = module.__dict__, weakref.ref(module)
        state["_parameters"], state["_buffers"] = (
            PendingStore(owner, "_parameters"),
            PendingStore(owner, "_buffers"),
        )


def add_requested_pending(module: nn.Module, layout: Layout) -> None:
    """:func:`add_pending`, on the device and in the dtype the module was asked for."""
    request = request_of(module)
    add_pending(module, layout, *(() if request is None else (request.device, request.dtype)))


def unfilled(module: nn.Module) -> bool:
    """Whether ``module``'s pending tensors were never made (nothing read them)."""
    store = module.__dict__.get("_parameters")
    return isinstance(store, PendingStore) and not store.filled


def add_pending(
    module: nn.Module,
    layout: Layout,
    device: torch.device | None = None,
    dtype: torch.dtype | None = None,
    reuse: Mapping[str, torch.Tensor] | None = None,
) -> None:
    """Give ``module`` (an unbuilt layer) pending tensors for every slot of
    ``layout``: the ones in ``reuse`` where it has one of that key, else new ones."""
    for slot in layout.slots:
        owner = module
        if slot.path:
            for part in slot.path.split("."):
                child = owner._modules.get(part)
                if child is None:
                    child = owner._modules[part] = PendingChild()
                owner = child
        tensor = reuse.get(slot.key) if reuse else None
        if tensor is None:
            tensor = _pending(slot, device, dtype)
        store: dict[str, Any] = owner._parameters if slot.is_parameter else owner._buffers
        store[slot.name] = tensor
        if not slot.is_parameter and not slot.persistent:
            owner._non_persistent_buffers_set.add(slot.name)


def pending_tensors(module: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """Every (key, tensor) of ``module`` and the pending children it holds
    (none, without making them, when nothing has read them yet)."""
    if unfilled(module):
        return
    if not module._modules:  # the common case, without the walk
        yield from ((name, t) for name, t in module._parameters.items() if t is not None)
        yield from ((name, t) for name, t in module._buffers.items() if t is not None)
        return
    for path, owner in module.named_modules(remove_duplicate=False):
        if owner is not module and not isinstance(owner, PendingChild):
            continue
        for store in (owner._parameters, owner._buffers):
            for name, tensor in store.items():
                if tensor is not None:
                    yield (f"{path}.{name}" if path else name), tensor


def save_pending_state(module: nn.Module, destination: dict[str, Any], prefix: str) -> None:
    """``state_dict()`` of an unbuilt module: its pending tensors themselves (as
    torch's lazy modules do), since they have no data to detach."""
    for name, tensor in module._parameters.items():
        if tensor is not None:
            destination[prefix + name] = tensor
    for name, buffer in module._buffers.items():
        if buffer is not None and name not in module._non_persistent_buffers_set:
            destination[prefix + name] = buffer


@dataclass(frozen=True)
class PlacementRequest:
    """What ``.to()``, ``.cuda()``, ``share_memory()`` and the like asked of an
    unbuilt layer; the build creates its tensors that way."""

    device: torch.device | None = None
    dtype: torch.dtype | None = None
    memory_format: torch.memory_format | None = None
    shared: bool = False

    def after(self, apply: Any) -> PlacementRequest:
        """This request with what ``apply`` (a function ``_apply`` got) does to a tensor."""
        request = self
        for probe in (_empty(2, 3, 4, 5), _empty(2, 3, 4, 5, 6)):
            try:
                result = apply(probe)
            except (RuntimeError, ValueError):
                continue  # a memory format for the other rank
            if result.device != probe.device:
                request = replace(request, device=result.device)
            if result.dtype != probe.dtype:
                request = replace(request, dtype=result.dtype)
            for layout in (torch.channels_last, torch.channels_last_3d):
                if result.dim() == (4 if layout is torch.channels_last else 5) and (
                    result.is_contiguous(memory_format=layout) and not result.is_contiguous()
                ):
                    request = replace(request, memory_format=layout)
            if result.is_shared() and result.device.type == "cpu":
                request = replace(request, shared=True)
        return request


def request_of(module: nn.Module) -> PlacementRequest | None:
    """The placement an unbuilt layer was asked for, if any."""
    return module.__dict__.get("_torchx_request")


_HOOK_STORES = tuple(
    key for key, value in nn.Module().__dict__.items() if isinstance(value, dict) and "hook" in key
)
"""The hook dicts of an ``nn.Module`` (forward, backward, state-dict hooks...)."""


class _FreshState(nn.Module):
    """``nn.Module.__init__`` for a native constructor running on a layer: the
    layer keeps the module state it was made with (hook dicts, which
    :func:`become_native` empties of the user's hooks meanwhile), with fresh
    stores for the native's tensors and submodules and the training flag
    set, instead of the seventeen ``super().__setattr__`` calls that every
    layer of a model would pay at its build."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs or self.call_super_init:  # nn.Module's own errors and cooperative calls
            nn.Module.__init__(self, *args, **kwargs)
            return
        torch._C._log_api_usage_once("python.nn_module")
        state = self.__dict__
        state["training"] = True
        state["_parameters"], state["_buffers"], state["_modules"] = {}, {}, {}
        state["_non_persistent_buffers_set"] = set()


@by_class
def _constructing_class(native: type[nn.Module]) -> type[nn.Module]:
    """The class a layer takes while ``native``'s constructor runs on it: a
    subclass of ``native`` whose ``nn.Module.__init__`` is :class:`_FreshState`'s
    (``native`` itself where that cannot be arranged); the layer takes
    ``native`` itself right after (cached)."""
    try:
        made = type(native.__name__, (native, _FreshState), {"__module__": native.__module__})
    except Exception:  # noqa: BLE001 - a metaclass or __init_subclass__ that refuses: run it as it is
        return native
    if made.__mro__.index(_FreshState) + 1 != made.__mro__.index(nn.Module):
        return native
    made.__qualname__ = native.__qualname__
    return made


def become_native(
    module: nn.Module, native: type[nn.Module], arguments: Mapping[str, Any]
) -> dict[str, weakref.ref[torch.Tensor]]:
    """Run ``native(**arguments)``'s constructor on ``module`` itself.

    Hooks registered on ``module`` before (their handles stay valid), its
    training flag and its pending tensors survive: each pending tensor takes
    the data of the fresh one of its name and takes its place. Returns the
    pending tensors the native module turned out not to have (a layout the
    input changed), weakly, by key: one still alive after the build is held
    by someone (an optimizer). If the constructor raises, ``module`` is left
    as it was.
    """
    state = module.__dict__
    before = dict(state)
    holds = dict.__len__(state["_parameters"]) or dict.__len__(state["_buffers"]) or state["_modules"]
    pending = dict(pending_tensors(module)) if holds and not unfilled(module) else None
    # A constructor may read the stores before nn.Module's __init__ (nn.PReLU's): they fill nothing.
    for key in ("_parameters", "_buffers"):
        if isinstance(state[key], PendingStore):
            state[key] = dict(dict.items(state[key]))
    hooks = list(filter(state.__getitem__, _HOOK_STORES))  # the stores holding hooks
    for key in hooks:  # empty ones, for the native's own hooks
        state[key] = type(state[key])()
    training = state["training"]
    layer_class, constructing = type(module), _constructing_class(native)
    object.__setattr__(module, "__class__", constructing)
    try:
        with _constructing(arguments):
            native.__init__(module, **arguments)
        if type(module) is constructing:  # (a constructor may choose its class itself)
            object.__setattr__(module, "__class__", native)
    except BaseException:
        object.__setattr__(module, "__class__", layer_class)
        state.clear()
        state.update(before)
        raise
    for key in hooks:  # the native's own hooks first, then the user's, in the user's dicts
        kept = before[key]
        merged = {**state[key], **kept}
        kept.clear()
        kept.update(merged)
        state[key] = kept
    orphans: dict[str, weakref.ref[torch.Tensor]] = {}
    if pending:
        with torch._C.DisableTorchFunctionSubclass():  # plain tensor calls: no pending-tensor checks
            for key, tensor in pending.items():
                _transplant(module, key, tensor, orphans)
    if not training:
        module.train(False)
    return orphans


def _transplant(
    module: nn.Module, key: str, tensor: torch.Tensor, orphans: dict[str, weakref.ref[torch.Tensor]]
) -> None:
    """Give pending ``tensor`` the data of the fresh tensor of its key, in its place."""
    path, _, name = key.rpartition(".")
    try:
        owner = module.get_submodule(path) if path else module
    except AttributeError:
        owner = None
    fresh = None
    if owner is not None:
        fresh = owner._parameters.get(name) if name in owner._parameters else owner._buffers.get(name)
    if fresh is None:
        orphans[key] = weakref.ref(tensor)
        return
    if not torch._has_compatible_shallow_copy_type(tensor, fresh):
        return  # a meta build: the fresh tensor stays
    tensor.data = fresh.data
    tensor.__class__ = type(tensor).cls_to_become  # type: ignore[attr-defined]
    assert owner is not None
    if type(owner).__setattr__ is nn.Module.__setattr__:
        store: dict[str, Any] = owner._parameters if name in owner._parameters else owner._buffers
        store[name] = tensor
    else:
        setattr(owner, name, tensor)  # a module that tracks its tensors (RNNs' flat weights)


def revert_to_pending(module: nn.Module) -> dict[str, torch.Tensor]:
    """``module``'s parameters and buffers (its children's too) turned back into
    pending tensors, in place where the device allows; by state-dict key."""
    reverted: dict[str, torch.Tensor] = {}
    for path, owner in module.named_modules(remove_duplicate=False):
        stores: tuple[tuple[dict[str, Any], type[torch.Tensor]], ...] = (
            (owner._parameters, PendingParameter),
            (owner._buffers, PendingBuffer),
        )
        for store, kind in stores:
            for name, tensor in store.items():
                if tensor is None:
                    continue
                if not is_pending(tensor):
                    empty = empty_of_rank(tensor.dim(), tensor.device, tensor.dtype)
                    if not tensor.is_meta and torch._has_compatible_shallow_copy_type(tensor, empty):
                        tensor.data = empty
                        tensor.__class__ = kind
                    else:
                        tensor = make_pending(kind, tensor.requires_grad, None, tensor.dtype, tensor.dim())
                reverted[f"{path}.{name}" if path else name] = tensor
    return reverted
