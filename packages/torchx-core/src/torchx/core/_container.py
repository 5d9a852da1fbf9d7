"""``Container``: a layer made of layers, with its own forward over them.

A container holds TorchX layers and plain modules as submodules and runs
its own ``forward`` over them; its children build as they are called, each
from what reaches it. The base class owns what every container shares:
whether it is built, loading a state dict into unbuilt children, TorchScript,
its spec (the constructor's ``args``, and the child layers given to the
constructor as a ``"layers"`` list) and its picture (its children in a chain).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from torchx.core._build import build
from torchx.core._errors import NotBuiltError, SpecError
from torchx.core._layer import Layer
from torchx.core._leaf import load_building, unbuilt_layers
from torchx.core._module import Module
from torchx.core._specs import SpecReader, SpecWriter

if TYPE_CHECKING:
    from torchx.core._graph import Graph

__all__ = ["Container"]


class Container(Layer, Module):
    r"""Base class of layers made of layers (``Sequential``, ``TimeDistributed``,
    ``Functional``...); also a :class:`torchx.nn.Module`.

    A subclass calls ``super().__init__(name=name, **arguments)`` with its
    own constructor arguments (those a spec writes as ``"args"``), adds its
    children as submodules, and writes ``forward``. Children given to the
    constructor positionally (``Block(*layers)``) are written to specs as
    ``"layers"``: return them from :meth:`spec_layers`. In ``forward``, hand
    placeholders to the graph before anything else::

        if type(x) is not torch.Tensor and is_symbolic(x):
            return x.__torchx_call__(self, (x,), {})
    """

    _torchx_kind = "container"

    @property
    def is_built(self) -> bool:
        """Whether every layer inside has built."""
        return not unbuilt_layers(self)

    def _infer_parameters(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: Mapping[str, Any] | None = None
    ) -> None:
        """Build for a compiled call's tensor inputs, on meta (:func:`torchx.build`).
        Other inputs leave it unbuilt: tracing the call then says to build it first."""
        if (
            not kwargs
            and args
            and all(isinstance(value, torch.Tensor) for value in args)
            and not self.is_built
        ):
            build(self, *args)

    def spec_layers(self) -> list[nn.Module]:
        """The child layers the constructor takes positionally, in order, as a
        spec writes them (``"layers"``); none by default."""
        return []

    def spec_fields(self, writer: SpecWriter) -> dict[str, Any]:
        """The given constructor arguments (``"args"``) and :meth:`spec_layers` (``"layers"``)."""
        fields = super().spec_fields(writer)
        layers = self.spec_layers()
        if layers:
            fields["layers"] = [
                writer.layer(child, f"{writer.where}.layers[{index}]") for index, child in enumerate(layers)
            ]
        return fields

    @classmethod
    def from_spec_fields(cls, fields: Mapping[str, Any], reader: SpecReader) -> Layer:
        """``cls(*layers, **args)`` from the ``"layers"`` and ``"args"`` entries."""
        reader.check_keys(
            fields, ("args", "layers"), f"a {cls.__name__} spec has only 'type', 'name', 'args' and 'layers'"
        )
        data = fields.get("layers", [])
        if not isinstance(data, list):
            raise SpecError(f"{reader.where}.layers", "expected a list of layers")
        layers = [reader.layer(entry, f"{reader.where}.layers[{index}]") for index, entry in enumerate(data)]
        arguments = reader.arguments(cls, {"args": fields["args"]} if "args" in fields else {})
        return reader.construct(cls, arguments, layers)

    def draw_graph(self, graph: Graph, inputs: list[str]) -> list[str]:
        """Its :meth:`spec_layers` in a chain, inside a box named after it."""
        return graph.chain(self.layer_label(), self, self.spec_layers(), inputs)

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> Any:
        """``nn.Module.load_state_dict``; unbuilt layers inside build from the
        state's shapes first. Every unbuilt layer is checked before anything
        changes, and if loading fails, the layers it built are unbuilt again."""
        return load_building(self, state_dict, strict=strict, assign=assign)

    def __prepare_scriptable__(self) -> nn.Module:
        """``torch.jit.script`` compiles a built container as it is (override
        this for one whose forward TorchScript cannot compile)."""
        if self.is_built:
            return self
        raise NotBuiltError(
            f"{self.layer_label()} is not built: build it (torchx.build) before torch.jit.script"
        )
