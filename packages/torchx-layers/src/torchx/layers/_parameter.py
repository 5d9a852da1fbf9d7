"""``Parameter``: a learned tensor as a layer (class tokens, position embeddings, learned queries)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import torch
from torch import nn

from torchx.core import LeafLayer
from torchx.plugin import PositiveFloat, Shape

__all__ = ["Parameter"]

Init = Literal["zeros", "ones", "normal", "trunc_normal", "uniform"]

_INITS = {
    "zeros": lambda value, std: nn.init.zeros_(value),
    "ones": lambda value, std: nn.init.ones_(value),
    "normal": lambda value, std: nn.init.normal_(value, std=std),
    "trunc_normal": lambda value, std: nn.init.trunc_normal_(value, std=std, a=-2 * std, b=2 * std),
    "uniform": lambda value, std: nn.init.uniform_(value, -std, std),
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
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.shape, self.init, self.std = tuple(shape), init, std
        self.value = nn.Parameter(torch.empty(self.shape, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        with torch.no_grad():
            _INITS[self.init](self.value, self.std)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if self.value.dim() and self.value.shape[0] == 1:
            return self.value.expand(input.shape[0], *self.value.shape[1:])
        return self.value

    def extra_repr(self) -> str:
        return f"shape={self.shape}, init={self.init!r}"


class Parameter(LeafLayer):
    """A learned tensor of ``shape``, as a layer: ``L.Parameter((1, 1, 768))(x)``
    is ``(N, 1, 768)`` for an input of batch ``N``.

    A leading size of 1 is expanded to the input's batch (a view: no copy);
    the input gives only its batch size and device. Other shapes come out as
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
        init: how it starts: ``"zeros"`` (default), ``"ones"``, ``"normal"``,
            ``"trunc_normal"`` (cut at two ``std``) or ``"uniform"`` (in
            ``[-std, std]``).
        std: the spread of the random initialisations. Default: 0.02.

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

    def __init__(
        self,
        shape: Sequence[int],
        *,
        init: Init = "zeros",
        std: PositiveFloat = 0.02,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        name: str | None = None,
    ) -> None:
        if not all(type(size) is int and size > 0 for size in shape):
            raise ValueError(f"Parameter: shape must be positive ints, got {tuple(shape)!r}")
        super().__init__(shape=tuple(shape), init=init, std=std, device=device, dtype=dtype, name=name)

    def infer_arguments(self, *inputs: Any) -> dict[str, Any]:
        return {}

    def infer_output_shape(self, *input_shapes: Shape) -> Shape | None:
        shape = tuple(self.arguments["shape"])
        if shape and shape[0] == 1 and input_shapes and input_shapes[0]:
            return (input_shapes[0][0], *shape[1:])
        return shape
