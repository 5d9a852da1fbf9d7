"""``Lambda``: a Python callable as a layer (it cannot be written to a spec)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from torchx.core import LeafLayer, SpecError
from torchx.plugin import SpecWriter

__all__ = ["Lambda"]


class LambdaModule(nn.Module):
    """Calls ``function(*inputs)``."""

    def __init__(self, function: Callable[..., Any]) -> None:
        super().__init__()
        self.function = function

    def forward(self, *inputs: Any) -> Any:
        return self.function(*inputs)

    def extra_repr(self) -> str:
        return getattr(self.function, "__qualname__", repr(self.function))


class Lambda(LeafLayer):
    """Wraps ``function`` (for example ``lambda x: x * 2``) as a layer.

    Specs are data, so a ``Lambda`` has no spec: ``to_spec()`` raises
    ``SpecError``. Write a small Layer class and register it instead.
    """

    native_class = LambdaModule

    def __init__(self, function: Callable[..., Any], *, name: str | None = None) -> None:
        if not callable(function):
            raise TypeError(f"Lambda needs a callable, got {type(function).__name__}")
        super().__init__(function=function, name=name)

    def spec_fields(self, writer: SpecWriter) -> dict[str, Any]:
        raise SpecError(
            writer.where,
            "Lambda wraps a Python callable, which a spec cannot hold (specs are data); "
            "write a Layer subclass and register it through a torchx plugin instead",
        )
