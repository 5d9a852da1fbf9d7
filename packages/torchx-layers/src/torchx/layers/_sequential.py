"""``Sequential``: ``nn.Sequential`` that infers every shape along the chain."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from contextlib import nullcontext
from typing import Any

import torch
from torch import nn

from torchx.core import ArgumentError, Container, Layer, LayerError, SpecError
from torchx.plugin import (
    Rehearsal,
    SpecReader,
    SpecWriter,
    TypedShape,
    add_note,
    all_or_nothing,
    build_need,
    cannot_build_while_compiling,
    current_build_target,
    explain_failure,
    given_name,
    is_symbolic,
)

__all__ = ["Sequential"]


class Sequential(Container, nn.Sequential):
    """A chain of modules, like ``nn.Sequential``, whose TorchX layers build in order.

    Accepts modules as arguments or one ``OrderedDict`` of named modules; plain
    ``nn.Module``s mix in anywhere, nested ``Sequential``s too. The first call
    (or :func:`torchx.build`) builds the layers one after another, each from its
    predecessor's output. If any layer fails, the layers built in that pass are
    returned to their unbuilt state and the error names the failing layer's
    position (``Sequential[3] Conv2d``). Once built, ``forward`` is
    ``nn.Sequential``'s loop and ``state_dict`` keys are those of the equivalent
    ``nn.Sequential``. A child layer given a ``name=`` is held under that name
    (``L.Linear(10, name="head")`` gives ``head.weight``), as in an
    ``OrderedDict``; the others under their position.

    Examples::

        >>> model = L.Sequential(L.Conv2d(20, 5), L.ReLU(), L.Flatten(), L.Linear(10))
        >>> model(torch.zeros(8, 3, 32, 32)).shape
        torch.Size([8, 10])
    """

    def __init__(self, *layers: nn.Module | OrderedDict[str, nn.Module], name: str | None = None) -> None:
        Container.__init__(self, name=name)
        object.__setattr__(self, "_torchx_ready", False)
        # A fresh container has nothing ready or placed to forget: its children go straight to
        # nn.Module's add_module, unless a subclass has its own.
        add_module = type(self).add_module
        if add_module is Sequential.add_module:
            add_module = nn.Module.add_module
        if len(layers) == 1 and isinstance(layers[0], OrderedDict):
            for key, module in layers[0].items():
                add_module(self, key, module)
            return
        places: dict[str, int] = {}
        for index, layer in enumerate(layers):
            if not isinstance(layer, nn.Module):
                raise TypeError(f"Sequential[{index}] is a {type(layer).__name__}, not an nn.Module")
            key = given_name(layer) or str(index)
            if "." in key or key in places or (key != str(index) and hasattr(self, key)):
                raise ArgumentError(
                    f"Sequential[{index}] is named {key!r}, which "
                    + (
                        f"Sequential[{places[key]}] is named too"
                        if key in places
                        else "is not a key of a Sequential (one part, no dots, not an attribute)"
                    ),
                    argument="name",
                    fix="give each layer of a Sequential its own name without dots, like 'stem' or 'head'",
                )
            places[key] = index
            add_module(self, key, layer)

    # -- keep "ready" honest under every way of adding a module ----------------

    def add_module(self, name: str, module: nn.Module | None) -> None:
        object.__setattr__(self, "_torchx_ready", False)
        super().add_module(name, module)

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, nn.Module):
            object.__setattr__(self, "_torchx_ready", False)
        super().__setattr__(name, value)

    def insert(self, index: int, module: nn.Module) -> Sequential:
        object.__setattr__(self, "_torchx_ready", False)
        super().insert(index, module)
        return self

    def add(self, module: nn.Module) -> Sequential:
        """Append ``module`` (an alias of :meth:`append`)."""
        self.append(module)
        return self

    def __add__(self, other: nn.Sequential) -> Sequential:
        return Sequential(*self, *other)

    def __mul__(self, other: int) -> Sequential:
        if not isinstance(other, int) or other <= 0:
            raise ValueError(f"a Sequential can be repeated a positive whole number of times, not {other!r}")
        return Sequential(*(module for _ in range(other) for module in self))

    def __rmul__(self, other: int) -> Sequential:
        return self.__mul__(other)

    # -- running ----------------------------------------------------------------

    def forward(self, input: Any) -> Any:
        if type(input) is not torch.Tensor and is_symbolic(input):
            return input.__torchx_call__(self, (input,), {})
        if not self._torchx_ready:
            if torch.compiler.is_compiling():
                raise cannot_build_while_compiling("Sequential")
            return self._build_forward(input)
        module = None
        try:  # free on Python 3.11 unless something raises
            for module in self._modules.values():
                input = module(input)
        except Exception as error:  # noqa: BLE001 - re-raised, located or as it was
            raise self._explained(error, module, input) from (
                None if isinstance(error, LayerError) else error
            )
        return input

    def _build_forward(self, input: Any) -> Any:
        # Inside torchx.build, the build itself is all-or-nothing already.
        with nullcontext() if current_build_target() else all_or_nothing(self, self._rehearsal(input)):
            module = None
            try:
                for module in self._modules.values():
                    input = module(input)
            except Exception as error:  # noqa: BLE001 - re-raised, located or as it was
                raise self._explained(error, module, input) from (
                    None if isinstance(error, LayerError) else error
                )
        object.__setattr__(self, "_torchx_ready", self.is_built)
        return input

    def _rehearsal(self, input: Any) -> Rehearsal | None:
        """How a first call on ``input`` measures the whole build before allocating."""
        if type(input) is not torch.Tensor:
            return None
        sample = TypedShape(tuple(input.shape), input.dtype)
        return Rehearsal("Sequential", lambda: build_need(self, sample))

    def _explained(self, error: Exception, module: nn.Module | None, input: Any) -> Exception:
        """``error``, raised by child ``module`` on ``input``, with this container's part of
        its path when it is TorchX's (a LayerError, or a built layer whose input size
        changed); else ``error`` itself, with a note naming the child."""
        explained = explain_failure(module, (input,), error) if module is not None else None
        if explained is None:
            _locate(error, self._place(module), module)
            return error
        return explained.within(self._place(module), self)

    def _place(self, child: object) -> str:
        """How errors name the position of ``child``: ``Sequential[3]`` (or ``Sequential.head``)."""
        for index, (name, module) in enumerate(self._modules.items()):
            if module is child:
                return f"Sequential[{index}]" if name == str(index) else f"Sequential.{name}"
        return "Sequential"

    # -- specs and interoperability ---------------------------------------------

    def spec_layers(self) -> list[nn.Module]:
        return list(self)

    def spec_fields(self, writer: SpecWriter) -> dict[str, Any]:
        """Children as a list (its order is the model's, whatever a JSON or YAML
        writer does with object keys); a child held under a name carries it."""
        layers = []
        for index, (key, module) in enumerate(self._modules.items()):
            entry = writer.layer(module, f"{writer.where}.layers[{index}]")
            if key != str(index):
                entry = {"type": entry["type"], "name": key, **entry}
            layers.append(entry)
        return {"layers": layers}

    @classmethod
    def from_spec_fields(cls, fields: Mapping[str, Any], reader: SpecReader) -> Layer:
        reader.check_keys(fields, ("layers",), "a Sequential spec has only 'type' and 'layers'")
        layers = fields.get("layers")
        if isinstance(layers, list):
            return cls(*(reader.layer(data, f"{reader.where}.layers[{i}]") for i, data in enumerate(layers)))
        if isinstance(layers, Mapping):  # the object form of older specs: its order is the document's
            taken = cls()
            for name in layers:
                if not isinstance(name, str) or not name or "." in name or hasattr(taken, name):
                    raise SpecError(
                        f"{reader.where}.layers",
                        f"layer name {name!r} is not usable: a name is a non-empty string "
                        "without '.' that is not a Sequential attribute (like 'stem' or 'head')",
                    )
            named: OrderedDict[str, nn.Module] = OrderedDict(
                (str(name), reader.layer(data, f"{reader.where}.layers.{name}"))
                for name, data in layers.items()
            )
            return cls(named)
        raise SpecError(f"{reader.where}.layers", "expected a list of layers (or an object of named layers)")

    def __prepare_scriptable__(self) -> nn.Module:
        """``torch.jit.script`` compiles a plain ``nn.Sequential`` of the same modules; a
        module inside that a TorchX layer knows cannot be scripted (a ``Lambda``) raises
        torch's error first, noted with its place in this Sequential."""
        for path, module in self.named_modules():
            check = getattr(module, "__torchx_script_check__", None)
            if check is not None:
                check("Sequential", path)
        return nn.Sequential(OrderedDict(self._modules))


def _locate(error: Exception, place: str, child: nn.Module | None) -> None:
    """Name where ``error`` was raised in one note that each Sequential it
    passes through prefixes: ``raised in Sequential[1] Sequential[2] Conv2d``."""
    notes = getattr(error, "__notes__", None)
    index = vars(error).get("_torchx_note")
    if notes is not None and index is not None and index < len(notes):
        notes[index] = notes[index].replace("raised in ", f"raised in {place} ", 1)
        return
    inner = "" if child is None or isinstance(child, Sequential) else f" {type(child).__name__}"
    add_note(error, f"raised in {place}{inner}")
    vars(error)["_torchx_note"] = len(getattr(error, "__notes__", ())) - 1
