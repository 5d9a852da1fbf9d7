"""Free checks of a sampled spec: build it on the meta device, measure it, apply the constraints.

``check(spec, (None, 1, 8, 8), Constraints(max_params=1e6))`` reads the spec,
summarises the model for the input with :func:`torchx.summarize` (a meta
build and a meta forward: no weights allocated, no FLOPs) and returns a
:class:`Check` with the parameters, the multiply-adds and the largest tensor
of one forward, and the reason the candidate is refused (None when it passes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias, TypeGuard, cast

import torch

from torchx.core import Summary, TorchXError, TypedShape, build, from_spec, summarize

__all__ = ["Check", "Constraints", "Input", "Rule", "check", "model_inputs"]

Input: TypeAlias = "torch.Tensor | TypedShape | Sequence[int | None]"
"""One model input, as :func:`torchx.build` takes it: a tensor, or a shape (``None``: a dynamic dim)."""

Rule: TypeAlias = Callable[[Summary], "str | None"]
"""A constraint written in Python: the reason a candidate's summary is refused, or None when it passes."""

_MB = 1e6
"""A megabyte as the summaries count it."""

BUILD_ERRORS = (TorchXError, RuntimeError, ValueError)
"""What a spec that cannot be built for the input raises: TorchX's SpecError
and ShapeError, or torch's own error where TorchX does not diagnose the failure."""


@dataclass(frozen=True)
class Constraints:
    """Limits a candidate must keep to before it is trained (None: no limit)."""

    max_params: float | None = None
    """Most parameters (trainable or not)."""
    max_mult_adds: float | None = None
    """Most multiply-adds of one forward (per sample where the batch is dynamic)."""
    max_activation_mb: float | None = None
    """Most megabytes (10^6 bytes) of the largest tensor one forward allocates (per sample where
    the batch is dynamic)."""
    rules: tuple[Rule, ...] = ()
    """Python constraints, asked in order after the limits; the first reason refuses the candidate."""


@dataclass(frozen=True)
class Check:
    """What the free check found: the summary numbers (None where the spec did not build, or the
    summary could not count them) and the reason the candidate is refused, or None."""

    params: int | None
    mult_adds: int | None
    """Multiply-adds of one forward; ``None`` dims count as 1 (per sample, per position)."""
    activation_bytes: int | None
    """Bytes of the largest tensor one forward allocates; ``None`` dims count as 1."""
    reason: str | None

    @property
    def passed(self) -> bool:
        return self.reason is None


def model_inputs(input: Input | Sequence[Input]) -> tuple[Input, ...]:
    """The model's inputs: ``input`` is one input (a tensor or a shape) or a sequence of them."""
    return (input,) if _is_one_input(input) else tuple(cast("Sequence[Input]", input))


def _one_sample(input: Input) -> Input:
    """``input`` with each dynamic (None) dim of its shape 1 (a tensor as it is)."""
    if isinstance(input, torch.Tensor):
        return input
    if isinstance(input, TypedShape):
        return TypedShape(tuple(1 if dim is None else dim for dim in input.shape), input.dtype)
    return tuple(1 if dim is None else dim for dim in input)


def _is_one_input(input: object) -> TypeGuard[Input]:
    if isinstance(input, (torch.Tensor, TypedShape)):
        return True
    return isinstance(input, Sequence) and all(dim is None or isinstance(dim, int) for dim in input)


def check(
    spec: Mapping[str, Any], input: Input | Sequence[Input], constraints: Constraints | None = None
) -> Check:
    """Build ``spec`` on the meta device for ``input``, measure it and apply ``constraints``.

    The build takes ``input`` as declared (a layer that would read a size off
    a dynamic dim is refused there); the summary, of one sample with every
    dynamic dim 1, in eval mode, gives the numbers per sample and per position
    without a symbolic forward (half the cost).
    """
    inputs = model_inputs(input)
    try:
        model: torch.nn.Module = build(from_spec(spec), *inputs, device="meta")
        summary = summarize(model.eval(), *map(_one_sample, inputs))
    except BUILD_ERRORS as error:
        return Check(None, None, None, f"does not build: {one_line(error)}")
    mult_adds = summary.total_mult_adds
    largest = summary.largest_tensor
    measured = Check(
        params=summary.total_parameters,
        mult_adds=cast("int | None", mult_adds),  # a summary of static shapes counts in plain numbers
        activation_bytes=None if largest is None else cast("int", largest.bytes),
        reason=None,
    )
    return replace(measured, reason=_reason(measured, summary, constraints or Constraints()))


def _reason(measured: Check, summary: Summary, constraints: Constraints) -> str | None:
    """The first limit ``measured`` breaks (a number the summary lacks breaks none), else the
    first rule's reason, in one line; None when the candidate keeps to all of them."""
    activation_mb = None if measured.activation_bytes is None else measured.activation_bytes / _MB
    limits = (
        ("parameters", measured.params, "max_params", constraints.max_params),
        ("mult-adds", measured.mult_adds, "max_mult_adds", constraints.max_mult_adds),
        ("MB in its largest activation", activation_mb, "max_activation_mb", constraints.max_activation_mb),
    )
    for what, value, name, limit in limits:
        if value is not None and limit is not None and value > limit:
            return f"{_number(value)} {what}, more than {name}={_number(limit)}"
    for rule in constraints.rules:
        reason = rule(summary)
        if reason is not None:
            return " ".join(reason.split())
    return None


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.6g}"


def one_line(error: BaseException) -> str:
    """``error`` as one line: its type and its message's lines joined by ``; ``."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {'; '.join(lines)}" if lines else type(error).__name__
