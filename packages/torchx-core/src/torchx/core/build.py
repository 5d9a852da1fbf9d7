"""``torchx.build``: build a model's layers from input shapes, without a real forward."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import torch
from torch import nn

from torchx.core.errors import ShapeError
from torchx.core.layer import all_or_nothing, unbuilt_layers
from torchx.core.scope import current_scope
from torchx.core.shapes import (
    DYNAMIC_PROBES,
    InputLike,
    build_target,
    is_dynamic,
    merge_probes,
    meta_state,
    shape_of,
    to_meta,
)

__all__ = ["build", "infer_shapes"]

_M = TypeVar("_M", bound=nn.Module)


def _target_device(inputs: Sequence[InputLike], device: torch.device | str | int | None) -> torch.device:
    if device is not None:
        return torch.device(device)
    for value in inputs:
        if isinstance(value, torch.Tensor) and value.device.type != "meta":
            return value.device
    scope = current_scope()
    return torch.get_default_device() if scope is None else scope.device


def _meta_forward(
    model: nn.Module, inputs: Sequence[InputLike], probe: int, dtype: torch.dtype | None
) -> Any:
    metas = tuple(to_meta(value, probe=probe, dtype=dtype) for value in inputs)
    with meta_state(model), torch.no_grad():
        return model(*metas)


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
    metas = tuple(to_meta(value, probe=DYNAMIC_PROBES[0], dtype=dtype) for value in inputs)
    with all_or_nothing(model):
        with build_target(target, dtype) as building, torch.no_grad():
            building.swap.add(model)
            model(*metas)
        if any(is_dynamic(value) for value in inputs):
            _second_probe(model, inputs, dtype)
    return model


def _second_probe(model: nn.Module, inputs: Sequence[InputLike], dtype: torch.dtype | None) -> Any:
    try:
        return _meta_forward(model, inputs, DYNAMIC_PROBES[1], dtype)
    except ShapeError as error:
        error.problem += (
            " — a size the layer was built with comes from a dynamic (None) dim of the model input"
        )
        error.fix = "give that input dim a fixed size instead of None"
        raise


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
    first = shape_of(_meta_forward(model, inputs, DYNAMIC_PROBES[0], dtype))
    if not any(is_dynamic(value) for value in inputs):
        return first
    second = shape_of(_second_probe(model, inputs, dtype))
    return merge_probes(first, second)
