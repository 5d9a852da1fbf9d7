"""``torchx.build``: build a model's layers from input shapes, without a real forward."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import torch
from torch import nn

from torchx.core._errors import ShapeError, format_shape, torch_message
from torchx.core._leaf import all_or_nothing, explain_failure, is_shape_problem, unbuilt_layers
from torchx.core._memory import BuildNeed, Rehearsal, weight_bytes
from torchx.core._record import layer_name
from torchx.core._scope import current_scope, scope_device
from torchx.core._shapes import InputLike, Probes, build_target, input_shape, meta_copy, meta_state

__all__ = ["build", "build_need", "infer_shapes"]

_M = TypeVar("_M", bound=nn.Module)


def _target_device(inputs: Sequence[InputLike], device: torch.device | str | int | None) -> torch.device:
    if device is not None:
        return torch.device(device)
    for value in inputs:
        if isinstance(value, torch.Tensor) and value.device.type != "meta":
            return value.device
    return scope_device()


def _meta_forward(model: nn.Module, metas: tuple[torch.Tensor, ...], *, owned: bool) -> Any:
    """``model``'s output for the meta inputs ``metas``; ``owned``: the model is
    in a build that no other code can use meanwhile, so it computes on
    stand-ins swapped in place, else on a private meta copy (see
    :func:`~torchx.core._shapes.meta_copy`)."""
    with torch.no_grad():
        if owned:
            with meta_state(model):
                return model(*metas)
        with meta_copy(model) as copied:
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
    abstractly, allocating nothing. A model with nothing left to build is
    returned as it is. If the build fails, every layer it built returns to its
    unbuilt state.
    """
    if not unbuilt_layers(model):
        return model
    target = _target_device(inputs, device)
    scope = current_scope()
    floating_input = any(isinstance(value, torch.Tensor) and value.is_floating_point() for value in inputs)
    if dtype is None and scope is not None and not floating_input:
        dtype = scope.dtype
    probes = Probes.for_inputs(inputs)
    metas = probes.meta_inputs(inputs, dtype)
    rehearsal = Rehearsal(type(model).__name__, lambda: build_need(model, *inputs, dtype=dtype))
    with all_or_nothing(model, rehearsal) as pending:
        if not pending:
            return model  # another thread built it meanwhile

        def build_on(probe: int) -> None:
            with build_target(target, dtype) as building, torch.no_grad():
                building.swap.add(model)
                model(*metas[probe])

        # The first probe builds; the second checks that no built size follows a dynamic dim.
        probes.run(build_on, second=lambda probe: _second_probe(model, inputs, metas[probe], owned=True))
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
    build(model, *inputs, device=device, dtype=dtype)
    probes = Probes.for_inputs(inputs)
    metas = probes.meta_inputs(inputs, dtype)
    outputs = probes.run(
        lambda probe: _meta_forward(model, metas[probe], owned=False),
        second=lambda probe: _second_probe(model, inputs, metas[probe], owned=False),
    )
    return probes.merged_shapes(outputs)
