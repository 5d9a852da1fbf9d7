"""Hostile spec files whose cost was out of all proportion to their size: integers read
into products before any check (4,000 YAML aliases of one 600-digit integer, 17 KB,
took 67 s), and parameter reads that each scanned every module (16,000 of each in a
1 MB file took 155 s). Each is now refused at its place, or read, after work linear
in the file; the work is counted here (products computed, lines run), never timed."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from report import Report

import torchx
import torchx.functional
from torchx.cli import main
from torchx.core import SpecError

HUGE = "9" * 600


@pytest.fixture
def products(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The bits of the operands of every math.prod called meanwhile (a huge product is not computed)."""
    seen: list[int] = []
    real_prod = math.prod

    def prod(values: Any, start: int = 1) -> Any:
        values = list(values)
        seen.append(sum(int(value).bit_length() for value in values))
        return 2**64 if seen[-1] > 128 else real_prod(values, start=start)

    monkeypatch.setattr(math, "prod", prod)
    return seen


def graph_yaml(path: Path, shape: str, nodes: str = "[]", output: str = "x") -> Path:
    path.write_text(
        "format_version: 1\ntype: Functional\n"
        f"inputs: {{input: x, shape: {shape}, dtype: float32}}\n"
        f"modules: {{}}\nnodes: {nodes}\noutputs: {{node: {output}}}\n",
        encoding="utf-8",
    )
    return path


def aliases(value: str, count: int) -> str:
    """``[&n value, *n, *n, ...]``: ``count`` more uses of one integer, a few bytes each."""
    return f"[&n {value}" + ", *n" * count + "]"


def constant_nodes(shape: str) -> str:
    return (
        "[{name: c, constant: {buffer: c, persistent: false, dtype: float32, "
        f"shape: {shape}, values: [1.0]}}}}]"
    )


def test_a_constant_shape_of_aliased_600_digit_integers_is_refused_at_the_integer(
    tmp_path: Path, report: Report, products: list[int]
) -> None:
    path = graph_yaml(tmp_path / "constant.yaml", "[null, 4]", constant_nodes(aliases(HUGE, 4000)), "c")
    assert path.stat().st_size < 20_000
    with pytest.raises(
        SpecError, match=r"line 5, column \d+: an integer of about 600 digits; integers in a spec"
    ):
        torchx.load_spec(path)
    assert products == []  # refused as it was read: before any product
    report.count(
        "attack", "a constant's shape of 4,000 aliases of a 600-digit integer (17 KB), refused at it"
    )


def test_an_input_shape_of_aliased_600_digit_integers_is_refused_at_the_integer(
    tmp_path: Path, report: Report, products: list[int]
) -> None:
    path = graph_yaml(tmp_path / "input.yaml", aliases(HUGE, 4000))
    with pytest.raises(
        SpecError, match=r"line 3, column \d+: an integer of about 600 digits; integers in a spec"
    ):
        torchx.load_spec(path)
    assert products == []
    report.count("attack", "an input's shape of 4,000 aliases of a 600-digit integer (17 KB), refused at it")


@pytest.mark.parametrize("where", ["constant", "input"], ids=["constant", "input"])
def test_a_shape_of_100000_aliased_int64_sizes_is_refused_without_their_product(
    where: str, tmp_path: Path, report: Report, products: list[int]
) -> None:
    """Every size is an int64, yet their product (6.3 million bits) is what was computed."""
    sizes = aliases(str(2**63 - 1), 100_000)
    if where == "constant":
        path = graph_yaml(tmp_path / "c.yaml", "[null, 4]", constant_nodes(sizes), "c")
        refusal = (
            r"^\$\.nodes\[0\]\.constant: a constant has a known dtype, a shape of sizes and as many values"
        )
    else:
        path = graph_yaml(tmp_path / "x.yaml", sizes.replace("[", "[null, ", 1))
        refusal = r"^\$\.inputs: .*has more elements than a tensor can hold"
    with pytest.raises(SpecError, match=refusal):
        torchx.load_spec(path)
    assert all(bits <= 128 for bits in products), products
    whose = "a constant's" if where == "constant" else "an input's"
    report.count("attack", f"{whose} shape of 100,000 aliases of 2**63 - 1, refused without their product")


@pytest.mark.parametrize("suffix", [".yaml", ".json"], ids=["yaml", "json"])
def test_a_layer_argument_of_600_digits_is_refused_in_one_line_by_the_command_line(
    suffix: str, tmp_path: Path, report: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / f"linear{suffix}"
    path.write_text(f'{{"type": "Linear", "args": {{"out_features": {HUGE}}}}}', encoding="utf-8")
    assert main(["validate", str(path)]) == 2  # refused as the file is read: unreadable
    err = capsys.readouterr().err
    assert "an integer of about 600 digits; integers in a spec are int64" in err and err.count("\n") == 1, err
    report.count("attack", "a Linear of 10**600 features, refused as the file is read")


# -- parameter reads ------------------------------------------------------------------------------


FUNCTIONAL = str(Path(torchx.functional.__file__).parent)


@contextmanager
def lines_run(folder: str) -> Iterator[list[int]]:
    """Counts the lines of Python run in ``folder`` meanwhile (loop iterations included)."""
    count = [0]

    def local(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        if event == "line":
            count[0] += 1
        return local

    def trace(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        return local if frame.f_code.co_filename.startswith(folder) else None

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        yield count
    finally:
        sys.settrace(previous)


def reads_file(path: Path, count: int) -> Path:
    """``count`` idle modules and ``count`` reads of one embedding's weight."""
    modules = ", ".join(f"idle{index}: {{type: ReLU}}" for index in range(count))
    nodes = ["{name: e, module: wte, args: [{node: x}]}"]
    nodes += [f"{{name: r{index}, attribute: wte.weight}}" for index in range(count)]
    nodes.append("{name: y, op: F.linear, args: [{node: e}, {node: r0}]}")
    path.write_text(
        "type: Functional\ninputs: {input: x, shape: [null, 4], dtype: int64}\n"
        f"modules: {{{modules}, wte: {{type: Embedding, args: {{num_embeddings: 5, embedding_dim: 3}}}}}}\n"
        f"nodes: [{', '.join(nodes)}]\noutputs: {{node: y}}\n",
        encoding="utf-8",
    )
    return path


def test_parameter_reads_cost_work_linear_in_the_file(tmp_path: Path, report: Report) -> None:
    """Before: each read scanned every module's name (and listed the module's parameters):
    twice the modules and reads, four times the work."""
    torchx.load_spec(reads_file(tmp_path / "warm.yaml", 2))  # what a first read sets up
    work = []
    for count in (300, 600):
        path = reads_file(tmp_path / f"reads{count}.yaml", count)
        with lines_run(FUNCTIONAL) as lines:
            torchx.load_spec(path)
        work.append(lines[0])
    assert work[1] / work[0] < 2.3, work  # before: 3.4 (434,985 lines run for 600, 128,385 for 300)
    report.count("attack", "600 modules and 600 parameter reads, read in work linear in them", 2)
