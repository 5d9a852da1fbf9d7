"""``Parameter``: a learned tensor as a layer (class tokens, position embeddings, learned queries)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import torch
from torch import nn

from torchx.core import ArgumentError, LeafLayer
from torchx.plugin import PositiveFloat

__all__ = ["Parameter"]

Init = Literal["zeros", "ones", "constant", "normal", "trunc_normal", "uniform"]

_INITS = {
    "zeros": lambda tensor, std, value: nn.init.zeros_(tensor),
    "ones": lambda tensor, std, value: nn.init.ones_(tensor),
    "constant": lambda tensor, std, value: nn.init.constant_(tensor, value),
    "normal": lambda tensor, std, value: nn.init.normal_(tensor, std=std),
    "trunc_normal": lambda tensor, std, value: nn.init.trunc_normal_(tensor, std=std, a=-2 * std, b=2 * std),
    "uniform": lambda tensor, std, value: nn.init.uniform_(tensor, -std, std),
}


class ParameterModule(nn.Module):
    """Holds one learned tensor, ``value``; called on an input, returns it with
    a leading size of 1 expanded to the input's batch (a view: no copy).

    In a ``Functional`` there is no such module: the model holds the tensor
    itself (see :class:`Parameter`)."""

    def __init__(
        self,
        shape: Sequence[int],
        init: Init = "zeros",
        std: float = 0.02,
        value: float | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.shape, self.init, self.std = tuple(shape), init, std
        self.fill_value = value
        self.value = nn.Parameter(torch.empty(self.shape, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        with torch.no_grad():
            _INITS[self.init](self.value, self.std, self.fill_value)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if self.value.dim() and self.value.shape[0] == 1:
            return self.value.expand(input.shape[0], *self.value.shape[1:])
        return self.value

    def extra_repr(self) -> str:
        value = "" if self.fill_value is None else f", value={self.fill_value}"
        return f"shape={self.shape}, init={self.init!r}{value}"


class Parameter(LeafLayer):
    """A learned tensor of ``shape``, as a layer: ``L.Parameter((1, 1, 768))(x)``
    is ``(N, 1, 768)`` for an input of batch ``N``.

    A leading size of 1 is expanded to the input's batch (a view: no copy);
    the input gives only its batch size and device (token ids anchor it as
    well as features: the tensor is in the default floating dtype unless the
    input is floating-point, or ``dtype=`` says). Other shapes come out as
    they are and broadcast in what follows (a position embedding added to its
    input).

    In a ``Functional`` the tensor is the model's own parameter, at the
    layer's name, as a hand-written model holds it: ``name="class_token"``
    gives ``model.class_token`` (an ``nn.Parameter``, state-dict key
    ``class_token``) and ``name="encoder.pos_embedding"`` gives
    ``model.encoder.pos_embedding``: torchvision's keys for its ViT, so its
    checkpoints load with ``strict=True``. The generated forward reads it as
    such a model does (``self.class_token.expand(x.shape[0], -1, -1)``).
    Alone, or in an ``L.Sequential``, the layer is a module holding the tensor
    as ``value`` (keys ``value``, ``0.value``).

    Args:
        shape: the tensor's shape.
        init: how it starts: ``"zeros"`` (default), ``"ones"``,
            ``"constant"`` (every entry ``value``: ConvNeXt's layer scale,
            ``L.Parameter((C, 1, 1), init="constant", value=1e-6)``),
            ``"normal"``, ``"trunc_normal"`` (cut at two ``std``) or
            ``"uniform"`` (in ``[-std, std]``).
        std: the spread of the random initialisations. Default: 0.02.
        value: the entries of a ``"constant"`` init (required there, and
            only there).

    Examples::

        >>> x = L.Placeholder((None, 196, 768))
        >>> token = L.Parameter((1, 1, 768), name="class_token")(x)
        >>> torch.cat([token, x], 1).shape
        (None, 197, 768)
        >>> model = L.Functional(x, torch.cat([token, x], 1))
        >>> list(model.state_dict()), model.class_token.shape
        (['class_token'], torch.Size([1, 1, 768]))
    """

    native_class = ParameterModule
    input_layout = "(N, *)"
    integer_input = True  # the anchor gives only its batch and device: token ids anchor as well

    def __init__(
        self,
        shape: Sequence[int],
        *,
        init: Init = "zeros",
        std: PositiveFloat = 0.02,
        value: float | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        if not all(type(size) is int and size > 0 for size in shape):
            raise ValueError(f"Parameter: shape must be positive ints, got {tuple(shape)!r}")
        if init == "constant" and value is None:
            raise ArgumentError(
                "Parameter: init='constant' needs the value to fill the tensor with",
                argument="value",
                fix="pass value=, e.g. L.Parameter(shape, init='constant', value=1e-6)",
            )
        if init != "constant" and value is not None:
            raise ArgumentError(
                f"Parameter: value={value!r} is used only by init='constant', not init={init!r}",
                argument="value",
                fix="pass init='constant' to fill the tensor with value, or drop value=",
            )
        super().__init__(
            shape=tuple(shape), init=init, std=std, value=value, device=device, dtype=dtype, name=name
        )

    def infer_arguments(self, *inputs: Any) -> dict[str, Any]:
        return {}
