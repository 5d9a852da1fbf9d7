"""torchx-keras as a TorchX plugin: ``.keras`` files wherever the command line takes a model,
``from-keras``, and the layers a converted model may hold that torch has no module for."""

from __future__ import annotations

from pathlib import Path

from torch import nn

from torchx.keras._command import configure_from_keras, from_keras
from torchx.keras._convert import load
from torchx.keras._frozen_batch_norm import FrozenBatchNorm
from torchx.keras._gru_reset_before import GRUResetBefore
from torchx.plugin import CommandRegistry, LayerRegistry, hookimpl


@hookimpl
def torchx_register_layers(registry: LayerRegistry) -> None:
    """Register :class:`GRUResetBefore` and :class:`FrozenBatchNorm`, so that converted models holding
    them write and read specs."""
    registry.register(GRUResetBefore)
    registry.register(FrozenBatchNorm)


@hookimpl
def torchx_read_model(path: str) -> nn.Module | None:
    """A ``.keras`` file, converted (``torchx summary model.keras``)."""
    return load(path) if Path(path).suffix.lower() == ".keras" else None


@hookimpl
def torchx_register_commands(commands: CommandRegistry) -> None:
    commands.add(
        "from-keras",
        (from_keras.__doc__ or "").splitlines()[0],
        configure=configure_from_keras,
        run=from_keras,
    )
