"""``torchx diff a.yaml b.yaml``: what differs between two architectures.

Exit status as ``diff``'s: 0 the same model, 1 they differ, 2 trouble (a file
that cannot be read, a spec that is not valid, a model that does not build
for ``--input``): 1 always means a difference here.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass
from typing import Any

import torch

from torchx.cli._errors import UsageError, described
from torchx.cli._inputs import add_input_arguments, inputs_of, load_model
from torchx.core._diff import LayerDifference, SpecDifference, diff_specs, diff_summaries
from torchx.core._layer import Layer
from torchx.core._shapes import InputLike, input_shape
from torchx.core._specs import to_spec
from torchx.core._summary import Summary, format_table, shape_text, summarize

__all__ = ["configure_diff", "diff"]

_WIDTH = 60
"""The most characters of a value the table shows."""


def configure_diff(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "a", metavar="A", help="the first spec file (as for summary), or - for standard input"
    )
    parser.add_argument("b", metavar="B", help="the second spec file, or -")
    add_input_arguments(parser, required=False)
    parser.add_argument("--format", choices=("table", "json"), default="table")


@dataclass(frozen=True)
class _Side:
    """One spec file: its name, canonical document and (unbuilt) model."""

    source: str
    spec: dict[str, Any]
    model: Layer

    @classmethod
    def read(cls, source: str) -> _Side:
        try:
            model = load_model(source)  # as every command reads a model
            return cls(source, to_spec(model), model)
        except UsageError:
            raise
        except Exception as error:  # a refusal, or a model that fails: trouble either way
            raise _trouble(source, error) from error

    def summary(self, inputs: tuple[InputLike, ...], dtype: torch.dtype | None) -> Summary:
        try:
            return summarize(self.model, *inputs, dtype=dtype)
        except Exception as error:  # see read
            raise _trouble(self.source, error) from error


def _trouble(source: str, error: Exception) -> UsageError:
    """``error`` of the spec in ``source`` as one line, and exit status 2: status 1
    already means "they differ" (an error TorchX did not raise keeps its type's name)."""
    return UsageError(" ".join(f"{source}: {described(error)}".split()))


def diff(options: argparse.Namespace) -> int:
    """Compare two specs (and with --input their layers' parameters and shapes); exit 1 if they differ."""
    if options.a == options.b == "-":
        raise UsageError("only one of the two specs can be read from standard input (-)")
    inputs = inputs_of(options)
    a, b = _Side.read(options.a), _Side.read(options.b)
    for side in (a, b):
        try:
            inputs_of(options, side.model)
        except UsageError as error:
            raise UsageError(f"{side.source}: {error}") from None
    spec = diff_specs(a.spec, b.spec, normalize=False)  # both canonical already
    summaries = (a.summary(inputs, options.dtype), b.summary(inputs, options.dtype)) if inputs else None
    layers = diff_summaries(*summaries) if summaries else []
    if options.format == "json":
        print(json.dumps(_data(a.source, b.source, spec, layers, summaries), indent=2))
    else:
        print("\n".join(_report(a.source, b.source, spec, layers, summaries, inputs)))
    return 1 if spec or layers else 0


def _data(
    a: str,
    b: str,
    spec: list[SpecDifference],
    layers: list[LayerDifference],
    summaries: tuple[Summary, Summary] | None,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "a": a,
        "b": b,
        "equal": not spec and not layers,
        "spec": [asdict(difference) for difference in spec],
    }
    if summaries is not None:
        data["layers"] = [asdict(difference) for difference in layers]
        data["total_parameters"] = {"a": summaries[0].total_parameters, "b": summaries[1].total_parameters}
    return data


def _report(
    a: str,
    b: str,
    spec: list[SpecDifference],
    layers: list[LayerDifference],
    summaries: tuple[Summary, Summary] | None,
    inputs: tuple[InputLike, ...],
) -> list[str]:
    if not spec and not layers:
        return [f"{a} and {b}: no differences"]
    lines = [f"a: {a}", f"b: {b}", ""]
    if spec:
        lines.append(f"spec: {_count(len(spec))}")
        rows = [
            (difference.change, difference.path, _cell(difference, "a"), _cell(difference, "b"))
            for difference in spec
        ]
        lines += format_table(("change", "path", "a", "b"), rows, numeric=0)
    else:
        lines.append("spec: no differences")
    if summaries is not None:
        shapes = ", ".join(shape_text(input_shape(value)) for value in inputs)
        lines += ["", f"layers for input {shapes}: {_count(len(layers))}"]
        if layers:
            headers = ("change", "layer", "type", "output shape a", "output shape b", "params a", "params b")
            lines += format_table(headers, [_layer_row(difference) for difference in layers], numeric=2)
        total_a, total_b = (summary.total_parameters for summary in summaries)
        lines.append(f"total parameters: a {total_a:,}, b {total_b:,} ({total_b - total_a:+,})")
    return lines


def _count(differences: int) -> str:
    return f"{differences} difference{'' if differences == 1 else 's'}" if differences else "no differences"


def _cell(difference: SpecDifference, side: str) -> str:
    """One side's value, as JSON of at most _WIDTH characters (``-``: none)."""
    if difference.change == ("removed" if side == "b" else "added"):
        return "-"
    text = json.dumps(difference.a if side == "a" else difference.b, ensure_ascii=False)
    return text if len(text) <= _WIDTH else text[: _WIDTH - 1] + "…"


def _layer_row(difference: LayerDifference) -> tuple[str, ...]:
    a, b = difference.a, difference.b
    types = dict.fromkeys(row.type for row in (a, b) if row is not None)
    return (
        difference.change,
        difference.path or "(model)",
        " → ".join(types),
        "-" if a is None else shape_text(a.output_shape),
        "-" if b is None else shape_text(b.output_shape),
        "-" if a is None else f"{a.parameters:,}",
        "-" if b is None else f"{b.parameters:,}",
    )
