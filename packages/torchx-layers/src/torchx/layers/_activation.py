"""Every activation in ``torch.nn``; only ``PReLU`` can infer an argument."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import torch
from torch import nn

from torchx.core import FromInput, LeafLayer
from torchx.plugin import AnyFloat, ExtendedFloat, PositiveInt

__all__ = [
    "CELU",
    "ELU",
    "GELU",
    "GLU",
    "SELU",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "LeakyReLU",
    "LogSigmoid",
    "LogSoftmax",
    "Mish",
    "PReLU",
    "RReLU",
    "ReLU",
    "ReLU6",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Softmax2d",
    "Softmin",
    "Softplus",
    "Softshrink",
    "Softsign",
    "Tanh",
    "Tanhshrink",
    "Threshold",
]


class _Elementwise(LeafLayer):
    """An activation with no arguments; output shape equals input shape."""

    same_shape = True

    def __init__(self, *, name: str | None = None) -> None:
        super().__init__(name=name)


class _InplaceElementwise(LeafLayer):
    same_shape = True

    def __init__(self, inplace: bool = False, *, name: str | None = None) -> None:
        super().__init__(inplace=inplace, name=name)


class _Shrink(LeafLayer):
    same_shape = True

    def __init__(self, lambd: float = 0.5, *, name: str | None = None) -> None:
        super().__init__(lambd=lambd, name=name)


class _Exponential(LeafLayer):
    same_shape = True

    def __init__(self, alpha: float = 1.0, inplace: bool = False, *, name: str | None = None) -> None:
        super().__init__(alpha=alpha, inplace=inplace, name=name)


class _SoftmaxFamily(LeafLayer):
    """Softmax over ``dim`` (no shape fast path: the meta run checks ``dim``)."""

    def __init__(self, dim: int | None = None, *, name: str | None = None) -> None:
        super().__init__(dim=dim, name=name)


class Sigmoid(_Elementwise):
    """``nn.Sigmoid``."""

    native_class = nn.Sigmoid


class Tanh(_Elementwise):
    """``nn.Tanh``."""

    native_class = nn.Tanh


class LogSigmoid(_Elementwise):
    """``nn.LogSigmoid``."""

    native_class = nn.LogSigmoid


class Softsign(_Elementwise):
    """``nn.Softsign``."""

    native_class = nn.Softsign


class Tanhshrink(_Elementwise):
    """``nn.Tanhshrink``."""

    native_class = nn.Tanhshrink


class Softmax2d(_Elementwise):
    """``nn.Softmax2d``: softmax over channels of ``(N, C, H, W)``."""

    native_class = nn.Softmax2d
    same_shape = False  # the meta run checks the input rank


class ReLU(_InplaceElementwise):
    """``nn.ReLU``."""

    native_class = nn.ReLU


class ReLU6(_InplaceElementwise):
    """``nn.ReLU6``."""

    native_class = nn.ReLU6


class SELU(_InplaceElementwise):
    """``nn.SELU``."""

    native_class = nn.SELU


class SiLU(_InplaceElementwise):
    """``nn.SiLU``."""

    native_class = nn.SiLU


class Mish(_InplaceElementwise):
    """``nn.Mish``."""

    native_class = nn.Mish


class Hardsigmoid(_InplaceElementwise):
    """``nn.Hardsigmoid``."""

    native_class = nn.Hardsigmoid


class Hardswish(_InplaceElementwise):
    """``nn.Hardswish``."""

    native_class = nn.Hardswish


class Hardshrink(_Shrink):
    """``nn.Hardshrink``."""

    native_class = nn.Hardshrink


class Softshrink(_Shrink):
    """``nn.Softshrink``."""

    native_class = nn.Softshrink


class ELU(_Exponential):
    """``nn.ELU``."""

    native_class = nn.ELU


class CELU(_Exponential):
    """``nn.CELU``."""

    native_class = nn.CELU


class Softmax(_SoftmaxFamily):
    """``nn.Softmax`` over ``dim``."""

    native_class = nn.Softmax


class Softmin(_SoftmaxFamily):
    """``nn.Softmin`` over ``dim``."""

    native_class = nn.Softmin


class LogSoftmax(_SoftmaxFamily):
    """``nn.LogSoftmax`` over ``dim``."""

    native_class = nn.LogSoftmax


class LeakyReLU(LeafLayer):
    """``nn.LeakyReLU``."""

    native_class = nn.LeakyReLU
    same_shape = True

    def __init__(
        self, negative_slope: float = 0.01, inplace: bool = False, *, name: str | None = None
    ) -> None:
        super().__init__(negative_slope=negative_slope, inplace=inplace, name=name)


class RReLU(LeafLayer):
    """``nn.RReLU``."""

    native_class = nn.RReLU
    same_shape = True

    def __init__(
        self,
        lower: float = 1.0 / 8,
        upper: float = 1.0 / 3,
        inplace: bool = False,
        *,
        name: str | None = None,
    ) -> None:
        super().__init__(lower=lower, upper=upper, inplace=inplace, name=name)


class Hardtanh(LeafLayer):
    """``nn.Hardtanh``; a bound may be ``inf`` or ``-inf`` (a one-sided clamp)."""

    native_class = nn.Hardtanh
    same_shape = True

    def __init__(
        self,
        min_val: ExtendedFloat = -1.0,
        max_val: ExtendedFloat = 1.0,
        inplace: bool = False,
        *,
        name: str | None = None,
    ) -> None:
        super().__init__(min_val=min_val, max_val=max_val, inplace=inplace, name=name)


class Softplus(LeafLayer):
    """``nn.Softplus``; ``threshold=inf`` never reverts to the identity."""

    native_class = nn.Softplus
    same_shape = True

    def __init__(
        self, beta: float = 1.0, threshold: ExtendedFloat = 20.0, *, name: str | None = None
    ) -> None:
        super().__init__(beta=beta, threshold=threshold, name=name)


class Threshold(LeafLayer):
    """``nn.Threshold``; ``threshold`` may be ``inf`` or ``-inf``, ``value`` any float."""

    native_class = nn.Threshold
    same_shape = True

    def __init__(
        self, threshold: ExtendedFloat, value: AnyFloat, inplace: bool = False, *, name: str | None = None
    ) -> None:
        super().__init__(threshold=threshold, value=value, inplace=inplace, name=name)


class GELU(LeafLayer):
    """``nn.GELU``."""

    native_class = nn.GELU
    same_shape = True

    def __init__(self, approximate: Literal["none", "tanh"] = "none", *, name: str | None = None) -> None:
        super().__init__(approximate=approximate, name=name)


class GLU(LeafLayer):
    """``nn.GLU``: halves ``dim``."""

    native_class = nn.GLU

    def __init__(self, dim: int = -1, *, name: str | None = None) -> None:
        super().__init__(dim=dim, name=name)


class PReLU(LeafLayer):
    """``nn.PReLU``; ``num_parameters="channels"`` learns one slope per input channel.

    Args:
        num_parameters: ``1`` (the default) learns one slope; an int learns that
            many; ``"channels"`` reads the count off dim 1 of ``(N, C, *)``.
        init: the initial slope.
    """

    native_class = nn.PReLU
    input_layout = "(N, C, *)"
    same_shape = True

    def __init__(
        self,
        num_parameters: PositiveInt | Literal["channels"] = 1,
        init: float = 0.25,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(num_parameters=num_parameters, init=init, device=device, dtype=dtype, name=name)

    def _per_channel(self) -> bool:
        return bool(self.arguments["num_parameters"] == "channels")

    def infer_arguments(self, *inputs: Any) -> dict[str, Any]:
        if not self._per_channel():
            return {}
        return {"num_parameters": FromInput(dim=1, ranks=tuple(range(2, 9))).read(self, inputs)}

    def infer_arguments_from_state(self, state: Mapping[str, torch.Tensor]) -> dict[str, Any] | None:
        if not self._per_channel():
            return {}
        weight = state.get("weight")
        return None if weight is None else {"num_parameters": int(weight.numel())}

    def stand_in_arguments(self) -> dict[str, Any]:
        return {"num_parameters": 1} if self._per_channel() else {}
