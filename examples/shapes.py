"""Build a model from a TorchX spec and print every layer's output shape.

    python examples/shapes.py examples/seed_cnn.yaml --input 8,3,32,32

The build runs on the meta device (no FLOPs, no activations); then one real
forward on random data checks the result.
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

import torch
from torch import nn

import torchx
from torchx.core.shapes import merge_probes


def parse_shape(text: str) -> tuple[int | None, ...]:
    return tuple(None if part in ("None", "?", "N") else int(part) for part in text.split(","))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("spec", help="a .json or .yaml TorchX spec")
    parser.add_argument(
        "--input", type=parse_shape, required=True, help="input shape, e.g. 8,3,32,32 (None: dynamic)"
    )
    options = parser.parse_args()

    model = torchx.load_spec(options.spec)
    torchx.build(model, options.input)
    seen: dict[str, list[tuple[int, ...]]] = {}

    def record(name: str) -> Any:
        def hook(module: nn.Module, args: Any, output: Any) -> None:
            seen.setdefault(name, []).append(tuple(output.shape))

        return hook

    handles = [child.register_forward_hook(record(name)) for name, child in model.named_children()]
    output_shape = torchx.infer_shapes(model, options.input)  # one meta run per probe of a None dim
    for handle in handles:
        handle.remove()

    print(f"{'layer':<8}{'type':<14}{'output shape':<22}{'parameters':>12}")
    for name, child in model.named_children():
        shape = functools.reduce(merge_probes, seen[name])
        params = sum(p.numel() for p in child.parameters())
        print(f"{name:<8}{type(child).__name__:<14}{shape!s:<22}{params:>12,}")
    total = sum(p.numel() for p in model.parameters())
    print(f"total parameters: {total:,}; output shape for input {options.input}: {output_shape}")

    example = torch.randn(*(dim or 2 for dim in options.input))
    print(f"real forward on {tuple(example.shape)} -> {tuple(model(example).shape)}")


if __name__ == "__main__":
    main()
