"""The entry point of torchx-plugin-example: its layers and its command, registered with TorchX."""

from __future__ import annotations

import argparse

from torch.utils.flop_counter import FlopCounterMode

from torchx.plugin import (
    CommandRegistry,
    LayerRegistry,
    add_input_arguments,
    add_spec_argument,
    build,
    hookimpl,
    inputs_of,
    load_model,
    to_meta,
)
from torchx_plugin_example import ResidualBlock, SqueezeExcite, Swish


@hookimpl
def torchx_register_layers(registry: LayerRegistry) -> None:
    registry.register(Swish, aliases=("LearnedSwish",))
    registry.register(SqueezeExcite, aliases=("SE",))
    registry.register(ResidualBlock, aliases=("Residual",))


@hookimpl
def torchx_register_commands(commands: CommandRegistry) -> None:
    commands.add(
        "flops", "count a forward's floating-point operations, on meta", configure=_configure, run=_flops
    )


def _configure(parser: argparse.ArgumentParser) -> None:
    add_spec_argument(parser)
    add_input_arguments(parser, required=True)


def _flops(options: argparse.Namespace) -> int:
    inputs = inputs_of(options)
    model = build(load_model(options.spec), *inputs, device="meta", dtype=options.dtype)
    counter = FlopCounterMode(display=False)
    with counter:
        model(*(to_meta(value, probe=1, dtype=options.dtype) for value in inputs))
    print(f"{counter.get_total_flops():,} FLOPs in one forward (None dims counted as 1)")
    return 0
