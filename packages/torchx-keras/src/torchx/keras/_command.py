"""``torchx from-keras model.keras -o model.yaml [--weights model.safetensors]``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from torchx.core import save_spec
from torchx.keras._convert import load
from torchx.plugin import input_path, output_path, write_together

__all__ = ["configure_from_keras", "from_keras"]


def configure_from_keras(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="the Keras 3 model file (.keras); read as data, nothing in it runs")
    parser.add_argument(
        "-o", "--output", required=True, help="the TorchX spec to write (.yaml, .yml or .json)"
    )
    parser.add_argument(
        "--weights",
        help="also write the converted weights: a TorchX checkpoint (.safetensors, or .pt) that "
        "torchx.load_model() reads back with its spec",
    )


def from_keras(options: argparse.Namespace) -> int:
    """Convert a Keras 3 model (.keras) into a TorchX spec, and its weights into a checkpoint."""
    output = output_path(options.output, (".yaml", ".yml", ".json"))
    weights = (
        None if options.weights is None else output_path(options.weights, (".safetensors", ".pt", ".pth"))
    )
    model = load(input_path(options.model))
    # Both files or neither: a new spec never sits beside old weights.
    writes: dict[Path, Callable[[Path], object]] = {output: lambda path: save_spec(model, path)}
    if weights is not None:
        writes[weights] = model.save
    write_together(writes)
    for path in writes:
        print(f"wrote {path}")
    return 0
