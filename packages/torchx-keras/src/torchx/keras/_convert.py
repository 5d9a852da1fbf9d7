"""``load``: a ``.keras`` file to a built TorchX model with its weights."""

from __future__ import annotations

from pathlib import Path

from torchx.functional import Functional
from torchx.keras import (  # noqa: F401 - they register their converters
    _convert_conv,
    _convert_core,
    _convert_rnn,
)
from torchx.keras._archive import KerasArchive, read_archive
from torchx.keras._layer import DESCRIPTIONS
from torchx.keras._model import MODEL_CLASSES, GraphBuilder
from torchx.plugin import SpecError

__all__ = ["convert", "load", "supported_layers"]


def load(path: str | Path) -> Functional:
    """The Keras 3 model saved at ``path`` (a ``.keras`` file) as a built ``L.Functional`` with its weights.

    Nothing in the file is imported or run: its config is read as JSON and its
    weights as arrays; a layer outside the supported table (a ``Lambda``, a
    custom layer) is a :class:`~torchx.core.SpecError` naming its place in
    the config. The model takes and returns tensors as the Keras model did
    (channels last) and runs channels-first inside. Like any new torch
    module it starts in training mode: call ``.eval()`` for inference.
    """
    return convert(read_archive(path))


def convert(archive: KerasArchive) -> Functional:
    """The TorchX model for an archive read by :func:`~torchx.keras.read_archive`."""
    config = archive.config
    class_name = config.get("class_name")
    if class_name not in MODEL_CLASSES:
        raise SpecError(
            archive.source,
            f"holds a {class_name!r}, not a Sequential or functional model: a subclassed Keras model has no "
            "layer graph in its config (its call() is Python code, which converting never runs)",
        )
    try:
        model = GraphBuilder().model(config, archive.weights, "")
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
        raise SpecError(
            archive.source, f"its model config is malformed ({type(error).__name__}: {error})"
        ) from error
    except RecursionError:
        raise SpecError(archive.source, "its model config is nested too deeply") from None
    model.__doc__ = (
        f"Converted from the Keras model {config.get('config', {}).get('name')!r} in {Path(archive.source).name}: "
        "it takes and returns tensors in Keras's layout (channels last) and runs channels-first inside."
    )
    return model


def supported_layers() -> dict[str, str]:
    """Every Keras layer class that converts, and what it becomes."""
    return dict(sorted(DESCRIPTIONS.items()))
