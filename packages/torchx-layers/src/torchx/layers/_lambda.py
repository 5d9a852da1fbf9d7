"""``Lambda``: a Python callable as a layer (it cannot be written to a spec)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from torchx.core import LeafLayer, SpecError
from torchx.plugin import SpecWriter, add_note

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

    def __torchx_script_check__(self, container: str, path: str) -> None:
        """Raise torch's own ``torch.jit.script`` error for this module, noted with
        where it is in ``container`` (``Sequential[1][2]`` for the path ``1.2``) and a fix.

        TorchX containers call it from their ``__prepare_scriptable__``: torch's error
        names the class, not the place of the module in the model."""
        try:
            torch.jit.script(self)
        except Exception as error:
            place = container + "".join(
                f"[{part}]" if part.isdigit() else f".{part}" for part in path.split(".")
            )
            add_note(
                error,
                f"raised in {place} Lambda({self.extra_repr()}): a Lambda calls a Python callable, which "
                "TorchScript cannot compile; put a Layer subclass or an nn.Module with a typed forward in "
                "its place, or use torch.compile or torch.export, which run Python callables",
            )
            raise


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
