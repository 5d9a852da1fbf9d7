"""The shape engine: outputs of modules on the meta device, with no FLOPs and no memory.

A module's output for given input shapes is found by running it on meta
tensors: a built module runs as a private copy whose tensors are meta
stand-ins (:func:`meta_copy`), so a shape query never changes what other code
sees of the module; only a layer that is building, which nothing else can use
yet, swaps its own tensors for stand-ins in place (:class:`MetaSwap`). An op
without a meta kernel is first offered to the ``torchx_infer_output`` hook,
then run for real on CPU zeros (on a real copy) as a last resort.

A ``None`` dim is dynamic: it is probed with two sizes, and an output dim that
differs between the probes is reported as ``None`` (:class:`Probes`).
"""

from __future__ import annotations

import contextvars
import copy
import operator
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

import torch
from torch import nn
from torch.nn.parameter import is_lazy
from torch.utils._pytree import tree_map

from torchx.core._arguments import INT64_MAX
from torchx.core._errors import (
    LayerError,
    ShapeError,
    call_shown_as_none,
    dynamic_dims_shown_as_none,
    format_shape,
    short_repr,
)
from torchx.core._meta_formulas import MetaFormulas
from torchx.core._pending import unfilled
from torchx.core._plugins import current_plugins
from torchx.core._scope import current_scope, default_device
from torchx.core._symbolic import is_dynamic_size
from torchx.core._tree import submodules

__all__ = [
    "DYNAMIC_PROBES",
    "BuildTarget",
    "InputLike",
    "TypedShape",
    "MetaSwap",
    "Probes",
    "Shape",
    "build_target",
    "current_build_target",
    "input_dtype",
    "input_shape",
    "is_dynamic",
    "inferring_shapes",
    "meta_state",
    "lacks_meta_kernel",
    "merge_probes",
    "meta_copy",
    "run_on_meta",
    "shape_of",
    "shape_problem",
    "to_meta",
]

_M = TypeVar("_M", bound=nn.Module)
_T = TypeVar("_T")

Shape: TypeAlias = tuple[int | None, ...]
"""A tensor shape; ``None`` marks a dynamic dim."""


@dataclass(frozen=True)
class TypedShape:
    """An input described by its shape (``None``: a dynamic dim) and its dtype,
    for inputs that are not floating (``TypedShape((None, 32), torch.int64)``: token ids)."""

    shape: tuple[int | None, ...]
    dtype: torch.dtype

    def __post_init__(self) -> None:
        """Refuse a dim that is not an int or None (see :func:`input_shape`)."""
        object.__setattr__(self, "shape", input_shape(self.shape))


InputLike: TypeAlias = "torch.Tensor | TypedShape | Sequence[int | None] | torch.Size"
"""What build and inference accept for one input: a tensor (only its shape and
dtype count), a shape (with the default floating dtype), or a TypedShape."""


def input_shape(value: InputLike) -> Shape:
    """The shape of one input, ``None`` for its dynamic dims (given as ``None``
    or as the size of a graph value's dynamic dim: ``x.shape[1]``)."""
    if isinstance(value, torch.Tensor):
        return tuple(value.shape)
    if isinstance(value, TypedShape):
        return value.shape
    return tuple(
        None if dim is None or is_dynamic_size(dim) else _dim(value, index, dim)
        for index, dim in enumerate(value)
    )


def _dim(shape: Sequence[Any], index: int, dim: Any) -> int:
    """``dim``, dim ``index`` of ``shape``, as an int; a float (which ``int()``
    would truncate), a bool or any other non-integer is a ShapeError naming it."""
    if isinstance(dim, bool) or not hasattr(type(dim), "__index__"):
        raise ShapeError(
            "input",
            f"shape {short_repr(tuple(shape))}: dim {index} is {short_repr(dim)} ({type(dim).__name__}), not an int",
            fix=f"give dim {index} as an int (or None for a dynamic dim)",
        )
    return operator.index(dim)


def input_dtype(value: InputLike, default: torch.dtype | None = None) -> torch.dtype:
    """The dtype of one input: a tensor's or a TypedShape's own, else ``default`` or torch's default."""
    if isinstance(value, (torch.Tensor, TypedShape)):
        return value.dtype
    return default or torch.get_default_dtype()


def is_dynamic(value: InputLike) -> bool:
    """Whether one input has a dynamic (``None``) dim."""
    return None in input_shape(value)


_META = torch.device("meta")

DYNAMIC_PROBES = (61, 127)
"""Sizes a dynamic (``None``) dim takes in the two inference probes: large
enough for kernels and strided downsampling, free on the meta device, and
unusual, so that messages can print them as ``None`` (a real dim rarely has
one of these sizes). They lie 66 apart, so that a length divided by a stride
or pool of up to 66 (``(T - k) // s + 1``), or by strides multiplying to at most 66, differs
between them: an output dim that varies with ``T`` is never recorded static.
The larger stays within 128, a common length of position tables sliced by
``T`` (``table[:, :T]`` must have ``T`` rows at both probes). Both are prime,
so an element count with one as a factor reads back unambiguously in
messages."""


_SWAPPING = threading.RLock()
"""Held while a :class:`MetaSwap` swaps tensors or puts them back, and while
:func:`meta_copy` reads them: another thread's copy never sees half a swap
(its stand-ins taken, then the real tensors copied as they came back)."""


def _new_swapping_lock_in_child() -> None:
    """A forked child starts with a lock no thread of its own holds (swaps happen
    in builds, which a fork waits for: the child's modules are whole)."""
    global _SWAPPING
    _SWAPPING = threading.RLock()


os.register_at_fork(after_in_child=_new_swapping_lock_in_child)


class MetaSwap:
    """Swaps modules' parameters and buffers for meta stand-ins, and back.

    For modules that only the swapping code can reach (a build in progress);
    anything else is queried through :func:`meta_copy`. While swapped, a
    forward computes shapes only and mutates nothing real (BatchNorm's running
    statistics included). :meth:`restore` puts every real tensor back, in
    reverse order.
    """

    def __init__(self) -> None:
        self._swapped: list[tuple[dict[str, Any], str, torch.Tensor]] = []
        self._stand_ins: dict[tuple[torch.Size, torch.dtype], torch.Tensor] = {}

    def add(self, module: nn.Module) -> None:
        """Swap every non-meta parameter and buffer of ``module`` (recursively)."""
        if not (module._modules or dict.__len__(module._parameters) or dict.__len__(module._buffers)):
            return
        self.add_own(submodules(module) if module._modules else (module,))

    def add_own(self, modules: Iterable[nn.Module]) -> None:
        """Swap the non-meta parameters and buffers of each of ``modules``
        themselves (not their children's: the caller walked the tree)."""
        with _SWAPPING:
            for sub in modules:
                stores: tuple[dict[str, Any], ...] = (sub._parameters, sub._buffers)
                if type(stores[0]) is not dict and unfilled(sub):
                    continue  # an unbuilt layer: pending tensors are never swapped
                for store in stores:
                    for name, tensor in store.items():
                        if tensor is not None and not tensor.is_meta and not is_lazy(tensor):
                            self._swapped.append((store, name, tensor))
                            store[name] = self.meta(tensor.shape, tensor.dtype)

    def add_built(self, module: nn.Module) -> None:
        """:meth:`add` for a leaf module just built on a real device (its own
        tensors only, all real: nothing to check)."""
        swapped, stand_ins = self._swapped, self._stand_ins
        stores: tuple[dict[str, Any], ...] = (module._parameters, module._buffers)
        with _SWAPPING:
            for store in stores:
                for name, tensor in store.items():
                    if tensor is not None:
                        swapped.append((store, name, tensor))
                        stand_in = stand_ins.get((tensor.shape, tensor.dtype))
                        store[name] = self.meta(tensor.shape, tensor.dtype) if stand_in is None else stand_in

    def meta(self, shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
        """A meta tensor of ``shape`` and ``dtype``, one per shape and dtype: the
        stand-in of a tensor, or a layer's closed-form output (meta tensors hold
        no data, so one serves every use)."""
        key = (shape if type(shape) is torch.Size else torch.Size(shape), dtype)
        tensor = self._stand_ins.get(key)
        if tensor is None:
            tensor = self._stand_ins[key] = torch.empty(key[0], dtype=dtype, device=_META)
        return tensor

    def restore(self) -> None:
        """Put every swapped tensor back."""
        with _SWAPPING:
            while self._swapped:
                store, name, tensor = self._swapped.pop()
                store[name] = tensor


_inferring: contextvars.ContextVar[bool] = contextvars.ContextVar("torchx_inferring_shapes", default=False)


def inferring_shapes() -> bool:
    """Whether the code running is shape inference (a build or a meta run),
    whose tensors are stand-ins: nothing should be moved or wrapped for it."""
    return _inferring.get()


@contextmanager
def meta_state(module: nn.Module) -> Iterator[MetaSwap]:
    """Inside the block, ``module`` computes on meta stand-ins of its tensors,
    swapped in place: only for a module no other code can use meanwhile."""
    swap = MetaSwap()
    token = _inferring.set(True)
    try:
        swap.add(module)
        yield swap
    finally:
        _inferring.reset(token)
        swap.restore()


_CALL_HOOKS = (
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_backward_hooks",
    "_backward_pre_hooks",
)


_copying_for_shapes: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "torchx_copying_for_shapes", default=False
)


def copying_for_shapes() -> bool:
    """Whether a :func:`meta_copy` made with ``shapes_only=True`` is being made:
    the modules that work out their own meta outputs may make copies that
    answer from their original (see :func:`meta_copy`)."""
    return _copying_for_shapes.get()


@contextmanager
def meta_copy(module: _M, *, hooks: bool = True, shapes_only: bool = False) -> Iterator[_M]:
    """Inside the block, a private copy of ``module`` whose parameters and
    buffers are meta stand-ins: the module's structure, hooks and attributes,
    none of its data.

    Running the copy computes shapes and changes nothing of ``module`` (its
    tensors, running statistics, hooks and attributes stay as they are), so
    other threads may train, save or query ``module`` meanwhile. Unbuilt
    layers are copied too, and may build on the copy. Parameters shared
    between modules stay shared. A :class:`LayerError` raised in the block is
    attributed to the module's own layers, not to their copies. ``hooks=False``
    drops the modules' call hooks from the copy, for a run that no observer
    (a profiler, torchinfo) should see; a hook that is part of what its layer
    computes says so with a true ``torchx_part_of_layer`` attribute, and stays.
    ``shapes_only=True``: the run reads only the output's shapes, so a module
    that works out its own meta outputs (a graph, once per input signature)
    may answer from that instead of running what it holds, whose hooks then
    do not see the run (see :func:`copying_for_shapes`).
    """
    memo: dict[int, Any] = {}
    modules = submodules(module)
    copying = _copying_for_shapes.set(shapes_only)
    try:
        with _SWAPPING:  # the tensors memoised are the ones the copy meets
            for sub in modules:
                stores: tuple[dict[str, Any], ...] = (sub._parameters, sub._buffers)
                for store in stores:
                    for tensor in dict.values(store):
                        if tensor is not None and id(tensor) not in memo and not is_lazy(tensor):
                            memo[id(tensor)] = _meta_stand_in(tensor)
            copied = copy.deepcopy(module, memo)
    finally:
        _copying_for_shapes.reset(copying)
    if not hooks:
        for sub in modules:
            _drop_observers(memo[id(sub)].__dict__)
    token = _inferring.set(True)
    try:
        yield copied
    except LayerError as error:
        originals = {id(memo[id(sub)]): sub for sub in modules}
        error.source = originals.get(id(error.source), error.source)
        error.origin = originals.get(id(error.origin), error.origin)
        raise
    finally:
        _inferring.reset(token)


def _drop_observers(state: dict[str, Any]) -> None:
    """Empty a module's call hooks, but keep those that are part of what the layer computes (a hook
    whose ``torchx_part_of_layer`` is true: the recurrent layers' output selection)."""
    kept = {
        key
        for name in ("_forward_hooks", "_forward_pre_hooks")
        for key, hook in state.get(name, {}).items()
        if getattr(hook, "torchx_part_of_layer", False)
    }
    for name in _CALL_HOOKS:
        if name in state:
            state[name] = type(state[name])((key, value) for key, value in state[name].items() if key in kept)


def _meta_stand_in(tensor: torch.Tensor) -> torch.Tensor:
    meta = tensor.detach().to(_META)
    if isinstance(tensor, nn.Parameter):
        return nn.Parameter(meta, requires_grad=tensor.requires_grad)
    return meta


@dataclass(frozen=True)
class BuildTarget:
    """An abstract build in progress: where new parameters go, and the swap that
    keeps every built module on meta stand-ins until the build ends."""

    device: torch.device
    dtype: torch.dtype | None
    device_is_default: bool
    """Whether ``device`` is torch's default device (so need not be passed)."""
    swap: MetaSwap

    @classmethod
    def on(cls, device: torch.device, dtype: torch.dtype | None) -> BuildTarget:
        """A build on ``device`` (in ``dtype``, or the layers' default), with nothing swapped yet."""
        # Inside a device scope, "default" means the scope's device: say the device.
        return cls(device, dtype, current_scope() is None and device == default_device(), MetaSwap())


_target: contextvars.ContextVar[BuildTarget | None] = contextvars.ContextVar(
    "torchx_build_target", default=None
)


def current_build_target() -> BuildTarget | None:
    """The abstract build running in this context, if any."""
    return _target.get()


@contextmanager
def build_target(device: torch.device, dtype: torch.dtype | None) -> Iterator[BuildTarget]:
    """Inside the block, layers that see meta inputs build on ``device``.

    Every tensor swapped to meta during the block is restored when it exits.
    """
    target = BuildTarget.on(device, dtype)
    token, inferring = _target.set(target), _inferring.set(True)
    try:
        yield target
    finally:
        _inferring.reset(inferring)
        _target.reset(token)
        target.swap.restore()


def to_meta(value: InputLike, *, probe: int, dtype: torch.dtype | None = None) -> torch.Tensor:
    """A meta tensor standing for ``value``; ``None`` dims take the size ``probe``;
    ``dtype`` applies to inputs given as bare shapes.

    :raises ShapeError: no tensor can have that shape (see :func:`shape_problem`).
    """
    dims = tuple(probe if dim is None else dim for dim in input_shape(value))
    dtype = input_dtype(value, dtype)
    if not isinstance(value, torch.Tensor):
        problem = shape_problem(value, dtype)
        if problem is not None:
            fix = "give each dim a size >= 0 (or None), the whole a size that fits in memory"
            raise ShapeError("input", f"shape {_shape_shown(input_shape(value))} {problem}", fix=fix)
    return torch.empty(dims, dtype=dtype, device="meta")


def shape_problem(value: InputLike, dtype: torch.dtype | None = None) -> str | None:
    """Why no tensor can have the shape of ``value`` (in ``dtype``, for a bare
    shape): a negative dim, or more bytes than an int64 counts with its dynamic
    dims at the larger probe size; None when one can. Checked before torch
    raises a raw error for it."""
    dims = [max(DYNAMIC_PROBES) if dim is None else dim for dim in input_shape(value)]
    if any(dim < 0 for dim in dims):
        return "has a negative dim"
    itemsize = input_dtype(value, dtype).itemsize
    if _bytes_held(dims, itemsize) > INT64_MAX:
        return (
            f"has more elements than a tensor can hold: more than 2**63 bytes at {itemsize} bytes each "
            f"(at most {INT64_MAX // itemsize:,} elements)"
        )
    return None


def _shape_shown(shape: Shape, most: int = 16) -> str:
    """``shape`` as messages show it, its middle dims left out past ``most`` dims (a shape read
    from a file may have a million): ``(None, 2, 2, ..., 2) (100,001 dims)``."""
    if len(shape) <= most:
        return format_shape(shape)
    head, tail = format_shape(shape[: most // 2]), format_shape(shape[-2:])
    return f"{head[:-1]}, ..., {tail[1:]} ({len(shape):,} dims)"


def _bytes_held(dims: Sequence[int], itemsize: int) -> int:
    """The bytes of a tensor of ``dims`` (each >= 0), or some number past INT64_MAX when
    it is past that: the product stops there, so thousands of huge dims (a shape read from
    a file) cost one pass, not a product thousands of words long."""
    if 0 in dims:
        return 0
    held = itemsize
    for dim in dims:
        held *= dim
        if held > INT64_MAX:
            break
    return held


def _zeros_on_cpu(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.device.type == "meta":
        return torch.zeros(value.shape, dtype=value.dtype)
    return value


def _as_meta(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.device.type != "meta":
        return torch.empty_like(value, device="meta")
    return value


def lacks_meta_kernel(error: BaseException) -> bool:
    """Whether ``error`` says an op cannot run on meta tensors.

    Aten ops without a meta kernel raise ``NotImplementedError``; custom ops
    without a fake implementation, and data-dependent calls such as
    ``Tensor.item()``, raise a ``RuntimeError`` that says so.
    """
    if isinstance(error, NotImplementedError):
        return True
    text = str(error)
    markers = ("no fake impl", "'Meta' backend", "cannot be called on meta tensors")
    return isinstance(error, RuntimeError) and any(marker in text for marker in markers)


def run_on_meta(
    module: nn.Module,
    inputs: tuple[Any, ...],
    kwargs: dict[str, Any] | None = None,
    *,
    call: Callable[..., Any] | None = None,
) -> Any:
    """``module(*inputs, **kwargs)`` for meta ``inputs``, returning meta outputs.

    ``module`` runs as a :func:`meta_copy`, unless ``call`` is given: a layer
    that is building passes its bound ``forward`` (so that its hooks do not run
    twice) and, as nothing else can use it yet, computes on stand-ins swapped
    in place. Falls back to the ``torchx_infer_output`` hook, then to a real
    CPU run on zeros, only when an op has no meta kernel (see
    :func:`lacks_meta_kernel`).
    """
    kwargs = kwargs or {}
    try:
        if call is not None:
            with meta_state(module), MetaFormulas():
                return call(*inputs, **kwargs)
        with meta_copy(module) as copied, MetaFormulas():
            return copied(*inputs, **kwargs)
    except (NotImplementedError, RuntimeError) as error:
        if not lacks_meta_kernel(error):
            raise
    hooked = current_plugins().infer_output(module, tuple(inputs))
    if hooked is not None:
        return tree_map(_as_meta, hooked)
    # A real run updates running statistics: one of a module others see runs on a copy.
    function = call or copy.deepcopy(module)
    with torch.no_grad():
        real = function(*tree_map(_zeros_on_cpu, inputs), **tree_map(_zeros_on_cpu, kwargs))
    return tree_map(_as_meta, real)


def shape_of(output: Any) -> Any:
    """The shapes (tuples) of a possibly nested output of meta tensors."""
    if isinstance(output, torch.Tensor):
        return tuple(output.shape)  # the common case, without a tree walk
    return tree_map(
        lambda value: tuple(value.shape) if isinstance(value, torch.Tensor) else value,
        output,
    )


def merge_probes(first: Any, second: Any) -> Any:
    """Combine two probes' shapes: a dim that differs between them is ``None``."""
    is_shape = isinstance(first, tuple) and all(isinstance(dim, int) for dim in first)
    if is_shape and isinstance(second, tuple) and len(second) == len(first):
        return tuple(a if a == b else None for a, b in zip(first, second, strict=True))
    if isinstance(first, (list, tuple)) and isinstance(second, (list, tuple)):
        return type(first)(merge_probes(a, b) for a, b in zip(first, second, strict=True))
    if isinstance(first, dict) and isinstance(second, dict):
        return {key: merge_probes(first[key], second[key]) for key in first}
    return first


class Probes:
    """The runs of a shape inference: one, or two when an input has a dynamic
    (``None``) dim, which takes the size ``DYNAMIC_PROBES[i]`` in run ``i``.

    Every two-probe inference goes through here: making the meta inputs of each
    probe, running under each probe (with messages printing its size as
    ``None``) and merging the outputs, in which a dim that differs between the
    probes is dynamic.
    """

    __slots__ = ("dynamic", "sizes")

    def __init__(self, dynamic: bool) -> None:
        self.dynamic = dynamic
        """Whether an input has a dynamic dim (and so a second probe runs)."""
        self.sizes: tuple[int, ...] = DYNAMIC_PROBES if dynamic else DYNAMIC_PROBES[:1]
        """The size dynamic dims take in each probe."""

    @classmethod
    def for_inputs(cls, inputs: Iterable[InputLike]) -> Probes:
        """The probes for ``inputs``: two when one of them has a dynamic dim."""
        return cls(any(is_dynamic(value) for value in inputs))

    @property
    def indices(self) -> range:
        """Each probe's index, as :meth:`run` passes it."""
        return range(len(self.sizes))

    def __repr__(self) -> str:
        return f"Probes(dynamic={self.dynamic})"

    def meta_inputs(
        self, inputs: Sequence[InputLike], dtype: torch.dtype | None = None
    ) -> list[tuple[torch.Tensor, ...]]:
        """Meta tensors standing for ``inputs`` in each probe (see :func:`to_meta`).

        :raises ShapeError: no tensor can have the shape of an input.
        """
        return [tuple(to_meta(value, probe=size, dtype=dtype) for value in inputs) for size in self.sizes]

    def run(self, function: Callable[[int], _T], *, second: Callable[[int], _T] | None = None) -> list[_T]:
        """The results of ``function(probe)`` for each probe's index (0, then 1
        when dynamic), in order; ``second``, where given, runs the second probe
        instead (a first probe that builds passes what runs the built model).
        Messages raised inside print the probe's size of dynamic dims as ``None``."""
        shown = self.sizes if self.dynamic else (None,)
        return [
            call_shown_as_none(size, function if probe == 0 or second is None else second, probe)
            for probe, size in enumerate(shown)
        ]

    def shown(self, probe: int) -> dynamic_dims_shown_as_none:
        """The context of ``probe``'s run (see :meth:`run`): messages raised
        inside print its size of dynamic dims as ``None``."""
        return dynamic_dims_shown_as_none(self.sizes[probe] if self.dynamic else None)

    @staticmethod
    def merged_shapes(outputs: Sequence[Any]) -> Any:
        """The shapes of one output computed under each probe (see
        :func:`shape_of`), with ``None`` for each dim that differs between them."""
        first, last = outputs[0], outputs[-1]
        if type(first) is torch.Tensor and type(last) is torch.Tensor:  # the common case, without a tree walk
            shape, other = tuple(first.shape), last.shape
            if len(outputs) == 1 or shape == other:
                return shape
            if len(shape) == len(other):
                return tuple([a if a == b else None for a, b in zip(shape, other, strict=True)])
        first = shape_of(first)
        return first if len(outputs) == 1 else merge_probes(first, shape_of(last))
