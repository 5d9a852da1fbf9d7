"""The built-in subcommands: summary, validate, plugins, convert, export."""

from __future__ import annotations

import argparse
import io
import json
import re
from dataclasses import asdict, dataclass, replace

import torch
from torch import nn

from torchx.cli._errors import ExportError, UsageError, described, one_line
from torchx.cli._inputs import add_input_arguments, add_spec_argument, inputs_of, load_model, read_document
from torchx.cli._outputs import output_path, writing
from torchx.core._build import build
from torchx.core._commands import CommandRegistry
from torchx.core._errors import TorchXError
from torchx.core._files import write_bytes_atomically
from torchx.core._graph import model_graph
from torchx.core._module import Module as TorchxModule
from torchx.core._plugins import current_plugins
from torchx.core._shapes import InputLike, input_dtype, input_shape
from torchx.core._specs import save_spec
from torchx.core._summary import COLUMNS, Summary, summarize
from torchx.core._validate import check_spec

__all__ = ["convert", "export", "plot", "plugins", "summary", "validate"]


def configure_summary(parser: argparse.ArgumentParser) -> None:
    add_spec_argument(parser)
    add_input_arguments(parser, required=False)
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument(
        "--depth",
        type=int,
        default=None,
        help="the deepest level of layers in the table (1: the model's children)",
    )
    parser.add_argument(
        "--columns",
        type=lambda text: tuple(name.strip() for name in text.split(",")),
        default=None,
        help=f"the table's columns, comma-separated, from: {', '.join(COLUMNS)} (torchinfo's names)",
    )


def summary(options: argparse.Namespace) -> int:
    """Build on meta (no memory for weights) and print every layer's shape, parameters and mult-adds."""
    unknown = [name for name in options.columns or () if name not in COLUMNS]
    if unknown:
        raise UsageError(f"--columns: unknown {', '.join(unknown)}; choose from {', '.join(COLUMNS)}")
    model = load_model(options.spec)
    inputs = inputs_of(options, model)
    result = summarize(model, *inputs, dtype=options.dtype) if inputs else _own_summary(model, options)
    result = replace(result, depth=options.depth, columns=options.columns or result.columns)
    print(result.to_json() if options.format == "json" else result)
    return 0


def _own_summary(model: nn.Module, options: argparse.Namespace) -> Summary:
    """The summary for the input shapes a model declares (a Functional, a converted Keras model)."""
    declared = getattr(model, "inputs", None)
    if not isinstance(model, TorchxModule) or not isinstance(declared, list) or not declared:
        raise UsageError(
            f"{options.spec}: give the input shape with --input SHAPE (this model does not declare it)"
        )
    try:
        return model.summary(dtype=options.dtype)
    except TypeError as error:  # inputs in a list or dict
        raise UsageError(f"{options.spec}: {error} (with --input SHAPE, one per input)") from None


def configure_plot(parser: argparse.ArgumentParser) -> None:
    add_spec_argument(parser)
    add_input_arguments(parser, required=True)
    parser.add_argument(
        "-o", "--output", required=True, help="model.svg, .png, .pdf or .dot (.dot needs no Graphviz)"
    )


def plot(options: argparse.Namespace) -> int:
    """Draw the model's graph: every layer with its output shape, branches, merges and nested models."""
    output = output_path(options.output, (".svg", ".png", ".pdf", ".dot", ".gv"))
    model = load_model(options.spec)
    graph = model_graph(model, *inputs_of(options, model), dtype=options.dtype)
    with writing(output):
        graph.render(output)
    print(f"wrote {output}")
    return 0


def configure_validate(parser: argparse.ArgumentParser) -> None:
    add_spec_argument(parser)
    add_input_arguments(parser, required=False)


def validate(options: argparse.Namespace) -> int:
    """Check a spec without building weights: every problem, with its place in the spec."""
    problems = check_spec(
        read_document(options.spec),
        *inputs_of(options),
        dtype=options.dtype,
        before_build=lambda model: inputs_of(options, model),
    )
    for problem in problems:  # one line each
        print(f"{options.spec}: {one_line(str(problem))}")
    if problems:
        return 1
    checked = "readable and builds for the given inputs" if options.input else "readable"
    print(f"{options.spec}: ok ({checked})")
    return 0


def configure_plugins(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text")


@dataclass(frozen=True)
class PluginReport:
    """What ``torchx plugins`` says about one plugin."""

    plugin: str
    distribution: str
    version: str
    layers: list[str]
    device_backend: bool
    model_reader: bool
    commands: list[str]


def plugins(options: argparse.Namespace) -> int:
    """Every plugin: its distribution, what it registered, and the ones that failed."""
    manager = current_plugins()
    registry = manager.registry
    commands = CommandRegistry()
    manager.register_commands(commands)
    backends, readers = set(manager.device_backends()), set(manager.model_readers())
    report = [
        PluginReport(
            name,
            *manager.distributions.get(name, (name, "?")),
            layers=registry.registered_by(name),
            device_backend=name in backends,
            model_reader=name in readers,
            commands=[command.name for command in commands if command.plugin == name],
        )
        for name in manager.plugin_names()
    ]
    if options.format == "json":
        failures = [asdict(failure) for failure in manager.failures]
        print(json.dumps({"plugins": [asdict(entry) for entry in report], "failures": failures}, indent=2))
        return 0
    for entry in report:
        print(f"{entry.plugin} ({entry.distribution} {entry.version})")
        if entry.layers:
            print(f"  layers ({len(entry.layers)}): {', '.join(entry.layers)}")
        if entry.device_backend:
            print("  device backend")
        if entry.model_reader:
            print("  reads model files (torchx summary FILE ...)")
        if entry.commands:
            print(f"  commands: {', '.join(entry.commands)}")
    for failure in manager.failures:
        print(
            f"{'FAILED' if failure.failed else 'WARNING'} {failure.plugin} ({failure.stage}): {failure.error}"
        )
    return 0


def configure_convert(parser: argparse.ArgumentParser) -> None:
    add_spec_argument(parser)
    parser.add_argument("-o", "--output", required=True, help="the .json or .yaml file to write")


def convert(options: argparse.Namespace) -> int:
    """Rewrite a spec as JSON or YAML (names canonical, defaults dropped)."""
    output = output_path(options.output, (".json", ".yaml", ".yml"))
    model = load_model(options.spec)
    with writing(output):
        save_spec(model, output)
    print(f"wrote {output}")
    return 0


def configure_export(parser: argparse.ArgumentParser) -> None:
    add_spec_argument(parser)
    add_input_arguments(parser, required=True)
    parser.add_argument("-o", "--output", required=True, help="the .pt2 file to write")


_EXAMPLE_SIZE = 4
"""The size each dynamic (None) dim of an ``--input`` takes in the example inputs torch.export traces."""

_SYMBOLIC_SIZE = re.compile(r"\b[su]\d+\b")
"""How torch names a dynamic size in its messages while it exports (``s27``, ``u0``)."""


def export(options: argparse.Namespace) -> int:
    """Build with fresh weights and save a torch.export program (.pt2)."""
    output = output_path(options.output, (".pt2",))
    model = load_model(options.spec)
    inputs = inputs_of(options, model)
    model = build(model, *inputs, dtype=options.dtype).eval()
    examples = tuple(
        torch.zeros(
            [_EXAMPLE_SIZE if dim is None else dim for dim in input_shape(value)],
            dtype=input_dtype(value, options.dtype),
        )
        for value in inputs
    )
    dynamic = tuple(
        {dim: torch.export.Dim.AUTO for dim, size in enumerate(input_shape(value)) if size is None}
        for value in inputs
    )
    # In memory first: torch's archive writer aborts the process when a file write fails.
    archive = io.BytesIO()
    try:
        program = torch.export.export(model, examples, dynamic_shapes=dynamic)
        torch.export.save(program, archive)
    except TorchXError:
        raise
    except Exception as error:
        raise _export_error(model, inputs, any(dynamic), error) from error
    with writing(output):
        write_bytes_atomically(output, archive.getvalue())
    print(f"wrote {output}")
    return 0


def _export_error(
    model: nn.Module, inputs: tuple[InputLike, ...], dynamic: bool, error: Exception
) -> ExportError:
    """What torch.export said when it could not export ``model``, in one line: the model,
    the inputs, torch's error with the step that raised it, and a fix where one follows
    from it (a dynamic size that the example size does not fit)."""
    shapes = " ".join(
        "--input " + ",".join("None" if dim is None else str(dim) for dim in input_shape(value))
        for value in inputs
    )
    message = described(error)  # its type, message and notes (the step that raised it)
    fix = ""
    if dynamic and _SYMBOLIC_SIZE.search(message):
        fix = (
            f"\n  fix: torch.export traces the model with {_EXAMPLE_SIZE} in each dynamic (None) dim, and a "
            "step here does not take that size; give such a dim the size it needs in --input (it is then "
            "static in the program)"
        )
    return ExportError(f"torch.export cannot export {type(model).__name__} for {shapes}: {message}{fix}")
