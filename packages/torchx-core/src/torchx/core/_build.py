"""``torchx.build``: build a model's layers from input shapes, without a real forward."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any, TypeVar

import torch
from torch import nn
from torch.nn.parameter import is_lazy

from torchx.core._errors import ShapeError, format_shape, torch_message
from torchx.core._layer import Layer
from torchx.core._leaf import (
    LeafLayer,
    _runs_hooks,
    all_or_nothing,
    explain_failure,
    formula_calls,
    is_shape_problem,
    unbuilt_layers,
)
from torchx.core._memory import BuildNeed, Rehearsal, weight_bytes
from torchx.core._meta_formulas import MetaFormulas
from torchx.core._record import layer_name, record_of
from torchx.core._scope import current_scope, scope_device
from torchx.core._shapes import (
    InputLike,
    Probes,
    TypedShape,
    build_target,
    input_dtype,
    input_shape,
    lacks_meta_kernel,
    meta_copy,
    meta_state,
)
from torchx.core._tree import submodules

__all__ = ["build", "build_need", "infer_shapes"]

_M = TypeVar("_M", bound=nn.Module)


def _target_device(inputs: Sequence[InputLike], device: torch.device | str | int | None) -> torch.device:
    if device is not None:
        return torch.device(device)
    for value in inputs:
        if isinstance(value, torch.Tensor) and value.device.type != "meta":
            return value.device
    return scope_device()


def _meta_forward(
    model: nn.Module, metas: tuple[torch.Tensor, ...], *, owned: bool, shapes_only: bool = False
) -> Any:
    """``model``'s output for the meta inputs ``metas``; ``owned``: the model is
    in a build that no other code can use meanwhile, so it computes on
    stand-ins swapped in place, else on a private meta copy (see
    :func:`~torchx.core._shapes.meta_copy`, and for ``shapes_only``)."""
    with torch.no_grad(), MetaFormulas():
        if owned:
            with meta_state(model), formula_calls(submodules(model)):
                return model(*metas)
        with meta_copy(model, shapes_only=shapes_only) as copied, formula_calls(submodules(copied)):
            return copied(*metas)


def build(
    model: _M,
    *inputs: InputLike,
    device: torch.device | str | int | None = None,
    dtype: torch.dtype | None = None,
) -> _M:
    """Build every layer in ``model`` for ``inputs``; returns ``model``.

    Each input is a tensor (only its shape and dtype are used) or a shape, in
    which ``None`` marks a dynamic dim (such as the batch). The forward runs on
    meta tensors: no FLOPs and no activation memory. New parameters are created
    on ``device`` (default: the first input tensor's device, else the device
    scope's, else torch's default device) with ``dtype`` (default: the input's
    floating dtype, else the scope's), so an
    optimizer can be made before the first batch. ``device="meta"`` builds
    abstractly, allocating nothing. If the build fails, every layer it built
    returns to its unbuilt state.

    Layers built before are checked, not rebuilt: a model with nothing left to
    build runs on meta for ``inputs``, and a size it was built with that they
    do not have is a ``ShapeError`` naming both. A ``device`` or ``dtype``
    given moves the whole model there, as ``model.to(...)`` would (to
    ``"meta"`` too, which drops the values of its built weights).
    """
    modules = submodules(model)
    unbuilt = [module for module in modules if isinstance(module, LeafLayer)]
    if not unbuilt:
        typed = [TypedShape(input_shape(value), input_dtype(value)) for value in inputs]
        if not (isinstance(model, Layer) and model.check_inputs(*typed)):
            _check_built(model, inputs)
        return _placed(model, device, dtype)
    target = _target_device(inputs, device)
    scope = current_scope()
    floating_input = any(isinstance(value, torch.Tensor) and value.is_floating_point() for value in inputs)
    if dtype is None and scope is not None and not floating_input:
        dtype = scope.dtype
    probes = Probes.for_inputs(inputs)
    metas = probes.meta_inputs(inputs, dtype)
    rehearsal = Rehearsal(type(model).__name__, lambda: build_need(model, *inputs, dtype=dtype))
    with all_or_nothing(model, rehearsal, unbuilt) as pending:
        if not pending:
            return model  # another thread built it meanwhile
        # Built parts compute on meta stand-ins: the unbuilt layers hold only pending tensors.
        built = [module for module in modules if not isinstance(module, LeafLayer)]

        # Torch functions answer from their formulas where plain modules or call hooks run (constructors
        # under the mode would pay it on every torch call, so not for a model of TorchX layers alone).
        plain = any(record_of(module) is None or _runs_hooks(module) for module in modules)
        formulas = MetaFormulas() if plain else nullcontext()

        def build_on(probe: int) -> None:
            with build_target(target, dtype) as building, torch.no_grad(), formula_calls(built), formulas:
                if len(pending) == len(unbuilt):
                    building.swap.add_own(built)
                else:  # another thread built some meanwhile
                    building.swap.add(model)
                model(*metas[probe])

        # The first probe builds; the second checks that no built size follows a dynamic dim.
        probes.run(build_on, second=lambda probe: _second_probe(model, inputs, metas[probe], owned=True))
    return _placed(model, device, dtype)


def _check_built(model: nn.Module, inputs: Sequence[InputLike]) -> list[Any] | None:
    """The outputs of the built ``model`` run on meta for ``inputs`` in each
    probe (floating ones in its own dtype: the shapes are checked here, not
    the dtype); a size it was built with that they lack raises a ShapeError
    naming both. None for a model with an op that has no meta kernel, which
    this cannot check."""
    floating = next((t.dtype for t in _tensors(model) if t.is_floating_point()), torch.get_default_dtype())
    shapes = [
        TypedShape(
            input_shape(value), floating if input_dtype(value).is_floating_point else input_dtype(value)
        )
        for value in inputs
    ]
    probes = Probes.for_inputs(shapes)
    metas = probes.meta_inputs(shapes)

    def check(probe: int) -> Any:
        try:
            return _meta_forward(model, metas[probe], owned=False, shapes_only=True)
        except Exception as error:
            if lacks_meta_kernel(error):
                return _UNCHECKED
            explained = explain_failure(model, metas[probe], error)
            if explained is None:  # torch's error stands, with where it came from
                shown = ", ".join(format_shape(input_shape(value)) for value in inputs)
                ran = f" (None as {probes.sizes[probe]})" if probes.dynamic else ""
                error.add_note(f"torchx.build: built {type(model).__name__}, meta run for {shown}{ran}")
                raise
            if explained is error:
                raise
            raise explained from error

    outputs = probes.run(check)
    return None if any(output is _UNCHECKED for output in outputs) else outputs


_UNCHECKED = object()


def _tensors(model: nn.Module) -> list[torch.Tensor]:
    """``model``'s parameters and buffers (built ones: pending tensors are not placed yet)."""
    return [t for t in (*model.parameters(), *model.buffers()) if not is_lazy(t)]


def _placed(model: _M, device: torch.device | str | int | None, dtype: torch.dtype | None) -> _M:
    """``model``, moved to ``device`` and ``dtype`` (those given) where a tensor of it is elsewhere."""
    if device is None and dtype is None:
        return model
    target = None if device is None else torch.device(device)
    for tensor in _tensors(model):
        elsewhere = target is not None and (
            tensor.device.type != target.type or target.index not in (None, tensor.device.index)
        )
        if elsewhere or (dtype is not None and tensor.is_floating_point() and tensor.dtype != dtype):
            model.to(device=target, dtype=dtype)
            break
    return model


def build_need(model: nn.Module, *inputs: InputLike, dtype: torch.dtype | None = None) -> BuildNeed:
    """What building ``model`` for ``inputs`` would allocate (its built parts
    excluded), measured on a meta copy without its call hooks."""
    with meta_copy(model, hooks=False) as copied:
        before = {id(module): weight_bytes(module) for module in copied.modules()}
        build(copied, *inputs, device="meta", dtype=dtype)
        grown = [
            (weight_bytes(module) - before.get(id(module), 0), path, module)
            for path, module in copied.named_modules()
            if not any(True for _ in module.children())
        ]
    total = sum(bytes_ for bytes_, _, _ in grown)
    largest, path, module = max(grown, key=lambda entry: entry[0], default=(0, "", copied))
    return BuildNeed(total, path, layer_name(module), largest)


def _second_probe(
    model: nn.Module, inputs: Sequence[InputLike], metas: tuple[torch.Tensor, ...], *, owned: bool
) -> Any:
    """The meta forward for ``metas``, the second probe's inputs: a built size
    that changes with the dynamic dims is an error (it would bake one batch
    size in)."""
    try:
        return _meta_forward(model, metas, owned=owned)
    except Exception as error:
        explained = explain_failure(model, metas, error)
        if explained is None and not is_shape_problem(error):
            raise
        shown = ", ".join(format_shape(input_shape(value)) for value in inputs)
        if isinstance(explained, ShapeError) and explained.changed:
            problem = (
                f"{', '.join(explained.changed)} would come from a dynamic (None) dim of the model "
                f"input {shown}, so the layer would be built for one size of it"
            )
        else:
            detail = torch_message(error) if explained is None else explained.problem
            problem = f"a size it was built with comes from a dynamic (None) dim of the model input {shown}: {detail}"
        fix = "give that input dim a fixed size instead of None"
        if explained is None:
            raise ShapeError(type(model).__name__, problem, fix, source=model) from error
        explained.problem, explained.fix = problem, fix
        raise explained from (None if explained is error else error)


def infer_shapes(
    model: nn.Module,
    *inputs: InputLike,
    device: torch.device | str | int | None = None,
    dtype: torch.dtype | None = None,
) -> Any:
    """The output shape(s) of ``model`` for ``inputs``, building it first if needed.

    Dynamic (``None``) input dims are probed with two sizes; output dims that
    follow them are ``None``. The result mirrors the output's nesting: a tuple
    of ints/None for a tensor, lists/tuples/dicts of those otherwise.
    """
    if not unbuilt_layers(model):
        checked = _check_built(model, inputs)
        if checked is not None:
            _placed(model, device, dtype)
            return Probes.merged_shapes(checked)
    build(model, *inputs, device=device, dtype=dtype)
    probes = Probes.for_inputs(inputs)
    metas = probes.meta_inputs(inputs, dtype)
    outputs = probes.run(
        lambda probe: _meta_forward(model, metas[probe], owned=False),
        second=lambda probe: _second_probe(model, inputs, metas[probe], owned=False),
    )
    return probes.merged_shapes(outputs)
