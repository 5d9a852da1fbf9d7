"""Keras 3 models (``.keras`` files) as native-speed TorchX models, read as data.

``torchx.keras.load("model.keras")`` reads the archive's config and weights
(never importing Keras, never running code from the file) and returns an
``L.Functional``: built, with the Keras weights, taking and returning tensors
in Keras's layout (channels last) while running channels-first inside.
"""

from torchx.keras._archive import KerasArchive, read_archive
from torchx.keras._convert import convert, load, supported_layers
from torchx.keras._version import __version__

__all__ = ["KerasArchive", "__version__", "convert", "load", "read_archive", "supported_layers"]
