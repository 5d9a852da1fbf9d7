"""``torchx diff`` on real layers: spec differences by path, layers aligned,
parameter and shape differences for --input, JSON, and exit statuses 0, 1, 2."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from torchx.cli import main

SEED_CNN = Path(__file__).resolve().parents[3] / "examples" / "seed_cnn.yaml"
SEED = yaml.safe_load(SEED_CNN.read_text(encoding="utf-8"))


def edited(tmp_path: Path, name: str, edit: Any) -> str:
    """A copy of the seed CNN's spec, changed by ``edit(layers)``, written to ``name``."""
    document = copy.deepcopy(SEED)
    edit(document["layers"])
    path = tmp_path / name
    path.write_text(json.dumps(document) if name.endswith(".json") else yaml.safe_dump(document))
    return str(path)


def diff(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["diff", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def rows(out: str) -> list[list[str]]:
    """The table rows of a report, split on runs of two spaces or more."""
    return [
        re.split(r" {2,}", line.strip())
        for line in out.splitlines()
        if line.startswith(("changed ", "added ", "removed "))
    ]


def test_the_same_model_written_differently_is_no_difference(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def cosmetic(layers: list[dict[str, Any]]) -> None:
        layers[0]["type"] = "conv2d"  # names are case-insensitive
        layers[0]["args"]["dilation"] = 1  # a default
        layers[3]["args"] = {"eps": 1e-5}

    other = edited(tmp_path, "same.json", cosmetic)
    assert diff(capsys, str(SEED_CNN), other) == (0, f"{SEED_CNN} and {other}: no differences\n", "")
    status, out, _ = diff(capsys, str(SEED_CNN), other, "--input", "None,3,32,32", "--format", "json")
    assert status == 0 and json.loads(out)["equal"] is True


def test_a_changed_argument(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    other = edited(tmp_path, "b.yaml", lambda layers: layers[5]["args"].update(out_channels=48))
    status, out, _ = diff(capsys, str(SEED_CNN), other)
    assert status == 1
    assert rows(out) == [["changed", "$.layers[5].args.out_channels", "40", "48"]]


def test_an_added_and_a_removed_layer_are_aligned(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    def edit(layers: list[dict[str, Any]]) -> None:
        layers.insert(5, {"type": "Dropout", "args": {"p": 0.1}})
        layers[6]["args"]["out_channels"] = 48
        del layers[11]  # the ReLU between the two Linears

    status, out, _ = diff(capsys, str(SEED_CNN), edited(tmp_path, "b.yaml", edit))
    assert status == 1
    assert rows(out) == [
        ["added", "$.layers[5]", "-", '{"type": "Dropout", "args": {"p": 0.1}}'],
        ["changed", "$.layers[5→6].args.out_channels", "40", "48"],
        ["removed", "$.layers[10]", '{"type": "ReLU"}', "-"],
    ]


def test_a_changed_layer_type_is_one_change(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    other = edited(tmp_path, "b.yaml", lambda layers: layers[1].update(type="Tanh"))
    status, out, _ = diff(capsys, str(SEED_CNN), other, "--input", "None,3,32,32")
    assert status == 1
    assert rows(out) == [
        ["changed", "$.layers[1]", '{"type": "ReLU"}', '{"type": "Tanh"}'],
        ["changed", "1", "ReLU → Tanh", "(None, 20, 15, 15)", "(None, 20, 15, 15)", "0", "0"],
    ]


def test_input_reports_parameters_and_shapes_per_layer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def edit(layers: list[dict[str, Any]]) -> None:
        layers.insert(5, {"type": "Dropout", "args": {"p": 0.1}})
        layers[6]["args"]["out_channels"] = 48

    other = edited(tmp_path, "b.yaml", edit)
    status, out, _ = diff(capsys, str(SEED_CNN), other, "--input", "None,3,32,32")
    assert status == 1
    layers = rows(out)[2:]
    assert layers[:3] == [
        ["changed", "(model)", "Sequential", "(None, 10)", "(None, 10)", "199,620", "233,164"],
        ["added", "5", "Dropout", "-", "(None, 30, 9, 9)", "-", "0"],
        ["changed", "5→6", "Conv2d", "(None, 40, 7, 7)", "(None, 48, 7, 7)", "10,840", "13,008"],
    ]
    assert ["changed", "8→9", "Flatten", "(None, 1960)", "(None, 2352)", "0", "0"] in layers
    assert "total parameters: a 199,620, b 233,164 (+33,544)" in out

    status, out, _ = diff(capsys, str(SEED_CNN), other, "--input", "None,3,32,32", "--format", "json")
    data = json.loads(out)
    assert status == 1 and data["equal"] is False
    assert [(d["change"], d["a_path"], d["b_path"]) for d in data["spec"]] == [
        ("added", None, "$.layers[5]"),
        ("changed", "$.layers[5].args.out_channels", "$.layers[6].args.out_channels"),
    ]
    assert len(data["layers"]) == len(layers)
    conv = data["layers"][2]
    assert conv["a"]["parameters"] == 10_840 and conv["b"]["output_shape"] == [None, 48, 7, 7]
    assert data["total_parameters"] == {"a": 199_620, "b": 233_164}


def test_bad_input_is_a_one_line_error_with_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "broken.yaml").write_text("type: [unclosed\n", encoding="utf-8")
    unknown = edited(tmp_path, "unknown.yaml", lambda layers: layers[2].update(type="Conv2"))
    cases = [
        ([str(tmp_path / "missing.yaml"), str(SEED_CNN)], "missing.yaml: no such file"),
        ([str(SEED_CNN), str(tmp_path / "broken.yaml")], "invalid or unsafe YAML"),
        ([str(SEED_CNN), unknown], "unknown.yaml: SpecError: $.layers[2].type: unknown layer type 'Conv2'"),
        ([str(SEED_CNN), str(SEED_CNN), "--input", "8,3"], "seed_cnn.yaml: ShapeError: Sequential[0] Conv2d"),
        (["-", "-"], "only one of the two specs can be read from standard input"),
    ]
    for argv, message in cases:
        status, out, err = diff(capsys, *argv)
        assert (status, out) == (2, ""), argv
        assert err.startswith("torchx diff: error: ") and message in err and err.count("\n") == 1, err
