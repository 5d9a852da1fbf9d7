"""The operations a graph spec may name: functions, operators and tensor methods.

A spec names an operation by a string ("torch.cat", "F.relu", "operator.mul",
or a tensor method such as "flatten"); it resolves only through the tables
below. Nothing is imported or evaluated by name. Graphs that use anything
else still run, but refuse to be written to a spec.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

__all__ = [
    "INFIX",
    "METHODS",
    "UNINITIALISED_METHODS",
    "ZERO_FILLED_FUNCTIONS",
    "ZERO_FILLED_METHODS",
    "function_named",
    "name_of_function",
]

_TORCH = (
    "abs acos add amax amin argmax argmin asin atan bmm cat chunk clamp concat cos cosh cumprod cumsum "
    "diag diagonal div einsum exp expm1 flatten flip floor gather log log1p log_softmax logsumexp masked_fill "
    "matmul max maximum mean min minimum mm movedim mul narrow neg norm outer permute pow prod relu reshape "
    "roll round rsqrt sigmoid sign sin sinh softmax sort split sqrt square squeeze stack std sub sum t tan "
    "tanh tensor_split tile topk transpose tril triu unbind unsqueeze var where zeros_like ones_like"
).split()
_FUNCTIONAL = (
    "adaptive_avg_pool1d adaptive_avg_pool2d adaptive_max_pool2d avg_pool1d avg_pool2d celu dropout elu gelu "
    "glu hardsigmoid hardswish hardtanh interpolate leaky_relu log_softmax logsigmoid max_pool1d max_pool2d "
    "mish normalize one_hot pad pixel_shuffle relu relu6 selu sigmoid silu softmax softmin softplus softsign "
    "tanh"
).split()
_OPERATORS = (
    "add sub mul truediv floordiv mod pow matmul and_ or_ xor neg pos abs invert lt le gt ge eq ne getitem"
).split()

_FUNCTIONS: dict[str, Callable[..., Any]] = {
    **{f"torch.{name}": getattr(torch, name) for name in _TORCH},
    **{f"F.{name}": getattr(F, name) for name in _FUNCTIONAL},
    **{f"operator.{name}": getattr(operator, name) for name in _OPERATORS},
}
_NAMES: dict[int, str] = {id(function): name for name, function in _FUNCTIONS.items()}

METHODS = frozenset(
    (
        "abs add amax amin argmax argmin bmm chunk clamp contiguous cos cumsum div exp expand expand_as "
        "flatten flip float double half bfloat16 long int bool gather log masked_fill matmul max mean min mul "
        "narrow neg norm permute pow prod relu repeat reshape reshape_as roll sigmoid sin softmax split sqrt "
        "squeeze std sub sum t tanh to topk transpose type_as unbind unflatten unsqueeze var view view_as "
        "new_zeros new_ones new_empty"
    ).split()
)
"""Tensor methods a graph spec may name. ``new_empty`` is among them so that a
spec naming it loads, but it runs (and is written back) as ``new_zeros``: see
ZERO_FILLED_METHODS."""

ZERO_FILLED_METHODS: dict[str, str] = {"new_empty": "new_zeros"}
"""Tensor methods that return uninitialised memory, and the zero-filled twin
with the same signature that a graph records in their place.

Uninitialised memory holds whatever a freed tensor left there (another model's
activations, another user's data); a graph, and above all a spec (data anyone
can load), must not hand it out. The contents of ``new_empty`` are unspecified,
so zeros are a correct value for them: the graph keeps its meaning, its code
shows what runs (``x.new_zeros(...)``) and one behaviour holds for graphs
defined in Python and graphs read from a spec."""

ZERO_FILLED_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    torch.empty_like: torch.zeros_like,
    torch.Tensor.new_empty: torch.Tensor.new_zeros,
}
"""Torch functions recorded as their zero-filled twins, as ZERO_FILLED_METHODS."""

UNINITIALISED_METHODS = frozenset(("new", "new_empty_strided", "resize", "resize_as"))
"""Tensor methods that may return uninitialised memory and have no zero-filled
twin with their signature: a graph refuses to record them."""

INFIX: dict[Callable[..., Any], str] = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
    operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
    operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.lt: "<", operator.le: "<=",
    operator.gt: ">", operator.ge: ">=", operator.eq: "==", operator.ne: "!=",
}  # fmt: skip
"""Binary operators written infix in generated code."""


def name_of_function(function: Callable[..., Any]) -> str | None:
    """The spec name of ``function`` ("torch.cat"), or None if specs cannot name it."""
    return _NAMES.get(id(function))


def function_named(name: str) -> Callable[..., Any] | None:
    """The function a spec names, or None."""
    return _FUNCTIONS.get(name)
