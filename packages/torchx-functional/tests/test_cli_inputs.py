"""The CLI gives a graph one --input per placeholder, and refuses another count as a one-line usage error."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchx.cli import main

TWO_INPUTS = """\
type: Functional
inputs: {list: [{input: a, shape: [null, 4], dtype: float32}, {input: b, shape: [null, 4], dtype: float32}]}
modules: {head: {type: Linear, args: {out_features: 3}}}
nodes:
  - {name: total, op: operator.add, args: [{node: a}, {node: b}]}
  - {name: y, module: head, args: [{node: total}]}
outputs: {node: y}
"""

INPUT_COMMANDS = {
    "summary": [],
    "validate": [],
    "plot": ["-o", "{out}/model.dot"],
    "export": ["-o", "{out}/model.pt2"],
    "diff": ["{spec}"],
}


@pytest.mark.parametrize("command", list(INPUT_COMMANDS), ids=list(INPUT_COMMANDS))
def test_a_graph_takes_one_input_per_placeholder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    two = tmp_path / "two.yaml"
    two.write_text(TWO_INPUTS, encoding="utf-8")

    def given(*inputs: str) -> tuple[int, str]:
        extra = [part.format(out=tmp_path, spec=two) for part in INPUT_COMMANDS[command]]
        argv = [command, str(two), *extra, *(part for shape in inputs for part in ("--input", shape))]
        try:
            status = main(argv)
        except SystemExit as exit:
            status = int(exit.code or 0)
        err = capsys.readouterr().err
        assert "Traceback" not in err, err
        return status, err

    assert given("None,4", "None,4") == (0, "")
    prefix = f"torchx {command}: error: " + (f"{two}: " if command == "diff" else "")
    for inputs in (["None,4"], ["None,4"] * 3):
        counted = "once" if len(inputs) == 1 else "3 times"
        message = f"--input given {counted}, but Functional takes 2 inputs (a, b): give one --input per input"
        assert given(*inputs) == (2, f"{prefix}{message}\n")
