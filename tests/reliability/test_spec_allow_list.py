"""Hostile graph specs that would write outside their outputs, read outside
their inputs or format a secret into a message: refused at load, one line,
before anything runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from report import Report

import torchx
from torchx.cli import main
from torchx.core import SpecError


def graph_file(path: Path, nodes: list[dict[str, Any]], shape: list[Any]) -> Path:
    spec = {
        "format_version": 1,
        "type": "Functional",
        "inputs": {"input": "x", "shape": shape, "dtype": "float32"},
        "modules": {},
        "nodes": nodes,
        "outputs": {"node": nodes[-1]["name"]},
    }
    path.write_text(json.dumps(spec))
    return path


def test_out_overwriting_the_caller_s_input_is_refused(tmp_path: Path, report: Report) -> None:
    overwrite = {
        "name": "y",
        "op": "torch.add",
        "args": [{"node": "x"}, 1000.0],
        "kwargs": {"out": {"node": "x"}},
    }
    with pytest.raises(SpecError, match=r"^\$\.nodes\[0\]: .*add was given out="):
        torchx.load_spec(graph_file(tmp_path / "out.json", [overwrite], [None, 4]))
    report.count("attack", "out= writing into the caller's input, refused at load")


def test_as_strided_reaching_rows_the_caller_never_passed_is_refused(tmp_path: Path, report: Report) -> None:
    buffer = torch.arange(40.0).reshape(10, 4)
    given = buffer[5:6]
    read = {"name": "y", "method": "as_strided", "args": [{"node": "x"}, {"tuple": [40]}, {"tuple": [1]}, 0]}
    with pytest.raises(SpecError, match=r"unknown tensor method 'as_strided'"):
        torchx.load_spec(graph_file(tmp_path / "strided.json", [read], [None, 4]))
    assert given.as_strided((40,), (1,), 0)[:5].tolist() == [
        0.0,
        1.0,
        2.0,
        3.0,
        4.0,
    ]  # what it would have read
    report.count("attack", "as_strided reading outside the view it is given, refused at load")


def test_a_format_string_does_not_leak_the_environment_through_validate(
    tmp_path: Path, report: Report, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TORCHX_RELIABILITY_TOKEN", "leaked-if-you-see-this")
    template = "{0.__class__.__init__.__globals__[torch].os.environ[TORCHX_RELIABILITY_TOKEN]}"
    bomb = "{0:>2000000000}"
    for name, message in (("secret", template), ("bomb", bomb)):
        node = {"name": "y", "op": "F.assert_int_or_pair", "args": [{"node": "x"}, "x", message]}
        assert main(["validate", str(graph_file(tmp_path / f"{name}.json", [node], [None, 4]))]) == 1
        printed = capsys.readouterr()
        assert "leaked-if-you-see-this" not in printed.out + printed.err
        said = (printed.out + printed.err).strip()
        assert len(said.splitlines()) == 1 and "unknown operation 'F.assert_int_or_pair'" in said
    report.count("attack", "a str.format template reading $TOKEN or building GBs, refused in one line", 2)


def test_size_arithmetic_doubling_per_node_is_refused_after_bounded_work(
    tmp_path: Path, report: Report
) -> None:
    nodes: list[dict[str, Any]] = [{"name": "s0", "method": "size", "args": [{"node": "x"}, 1]}]
    for step in range(1, 25):  # 2**24 terms unbounded: 1.75 GB
        op = "operator.add" if step % 2 else "operator.mul"
        nodes.append({"name": f"s{step}", "op": op, "args": [{"node": f"s{step - 1}"}] * 2})
    nodes.append({"name": "y", "method": "new_zeros", "args": [{"node": "x"}, {"tuple": [{"node": "s24"}]}]})
    with pytest.raises(SpecError, match=r"^\$\.nodes\[9\]: .*would hold 1,023 terms, more than 1,000"):
        torchx.load_spec(graph_file(tmp_path / "sizes.json", nodes, [None, None]))
    report.count("attack", "size arithmetic doubling per node, refused at 1,000 terms")
