"""torchx.summarize: per-module shapes and parameters, totals that agree with torchinfo."""

from __future__ import annotations

import json
import sys

import pytest
import torch
from layers_seed_cnn import seed_cnn
from torch import nn

import torchx
import torchx.layers as L

torchinfo = pytest.importorskip(
    "torchinfo", reason="needs torchinfo: pip install torchinfo (in the test extra)"
)


_STORAGE = torch.empty(1).untyped_storage()
PYTHON_OBJECT_BYTES = sys.getsizeof(_STORAGE) - _STORAGE.nbytes()
"""torchinfo's input size is sys.getsizeof(storage): the data plus this much per
input tensor (64 bytes on torch 2.13, 80 on 2.9)."""


def agree(summary: torchx.Summary, report: object, inputs: int = 1) -> None:
    assert summary.total_parameters == report.total_params  # type: ignore[attr-defined]
    assert summary.trainable_parameters == report.trainable_params  # type: ignore[attr-defined]
    assert summary.parameter_bytes == report.total_param_bytes  # type: ignore[attr-defined]
    assert summary.activation_bytes == report.total_output_bytes  # type: ignore[attr-defined]
    assert summary.input_bytes == report.total_input - PYTHON_OBJECT_BYTES * inputs  # type: ignore[attr-defined]


def test_the_seed_cnn_agrees_with_torchinfo_without_touching_the_model() -> None:
    model = seed_cnn()
    summary = torchx.summarize(model, (8, 3, 32, 32))
    assert not model.is_built  # summarised on a meta copy
    agree(
        summary,
        torchinfo.summary(torchx.build(seed_cnn(), (8, 3, 32, 32)), input_size=(8, 3, 32, 32), verbose=0),
    )
    rows = {row.path: row for row in summary.rows}
    assert rows["8"].output_shape == (8, 1960)
    assert rows["9"].parameters == 1960 * 80 + 80
    assert rows[""].type == "Sequential" and rows[""].output_shape == (8, 10)
    text = str(summary)
    assert "total parameters: 199,620 (trainable 199,620, frozen 0)" in text
    assert "forward/backward pass size (MB): 0.86" in text


def test_frozen_shared_and_nested_modules() -> None:
    shared = nn.Linear(6, 6)
    model = torchx.build(
        L.Sequential(L.Linear(6), shared, nn.ReLU(), shared, L.Sequential(L.Linear(2))), (4, 3)
    )
    model[0].requires_grad_(False)
    summary = torchx.summarize(model, (4, 3))
    agree(summary, torchinfo.summary(model, input_size=(4, 3), verbose=0))
    assert summary.frozen_parameters == 3 * 6 + 6
    rows = {row.path: row for row in summary.rows}
    assert rows["1"].calls == 2 and "Linear x2" in str(summary)
    assert rows["4.0"].depth == 2 and rows["4"].parameters == 14


def test_dynamic_dims_are_none_and_count_as_one_in_memory() -> None:
    summary = torchx.summarize(seed_cnn(), (None, 3, 32, 32))
    assert {row.path: row for row in summary.rows}[""].output_shape == (None, 10)
    per_sample = torchx.summarize(seed_cnn(), (1, 3, 32, 32))
    assert summary.activation_bytes == per_sample.activation_bytes
    assert summary.input_bytes == 3 * 32 * 32 * 4


def test_json_and_dtype() -> None:
    summary = torchx.summarize(L.Sequential(L.Linear(4)), (2, 3), dtype=torch.float64)
    data = json.loads(summary.to_json())
    assert data["total_parameters"] == 16 and data["parameter_bytes"] == 16 * 8
    assert data["rows"][1]["output_shape"] == [2, 4]
    assert data["input_bytes"] == 2 * 3 * 8


def test_a_built_model_keeps_its_weights() -> None:
    model = torchx.build(L.Sequential(L.Linear(4), L.BatchNorm1d()), (8, 3))
    weight = model[0].weight.clone()
    torchx.summarize(model, (8, 3))
    assert torch.equal(model[0].weight, weight) and not model[0].weight.is_meta
    assert int(model[1].num_batches_tracked) == 0


def test_the_largest_tensor_of_a_forward_is_reported_even_outside_layers_with_parameters() -> None:
    model = L.Sequential(L.Conv1d(8, 3), L.ZeroPad1d(padding=2**20), L.ReLU())
    summary = torchx.summarize(model, (None, 3, 32))
    largest = summary.largest_tensor
    assert largest is not None and largest.op == "aten.constant_pad_nd"
    assert largest.shape == (None, 8, 30 + 2**21)
    assert largest.bytes == 8 * (30 + 2**21) * 4  # per sample
    assert "largest tensor of a forward (MB): 67.11 (aten.constant_pad_nd, (None, 8, 2097182))" in str(
        summary
    )
    assert summary.activation_bytes < largest.bytes  # torchinfo's figure counts layers with parameters only


def test_a_forward_larger_than_memory_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchx.core import _memory as memory

    monkeypatch.setattr(memory, "available_memory", lambda device: 16 << 20)
    model = L.Sequential(L.Conv1d(8, 3), L.ZeroPad1d(padding=2**20), L.ReLU())
    with pytest.warns(
        torchx.MemoryWarning, match=r"a tensor of 64\.0 MiB per sample \(aten\.constant_pad_nd"
    ):
        torchx.summarize(model, (None, 3, 32))


def test_every_container_summarises_with_depth_columns_and_mult_adds() -> None:
    model = L.Sequential(L.Conv2d(4, 3), L.Sequential(L.ReLU(), L.Flatten(), L.Linear(5)))
    summary = model.summary((None, 3, 8, 8), depth=1, columns=("output_size", "num_params", "mult_adds"))
    text = str(summary)
    assert "mult-adds" in text and "frozen" not in text.splitlines()[0]
    lines = text.splitlines()
    table = lines[2 : lines.index(lines[1], 2)]  # the rows shown, between the two rules
    assert [line.split()[0] for line in table] == ["(model)", "0", "1"]  # depth 1: not 1.0, 1.1, 1.2
    conv = next(row for row in summary.rows if row.path == "0")
    linear = next(row for row in summary.rows if row.path == "1.2")
    assert conv.mult_adds == 4 * 3 * 3 * 3 * 6 * 6  # per sample: out channels x kernel x output positions
    assert linear.mult_adds == 144 * 5
    assert summary.total_mult_adds == conv.mult_adds + linear.mult_adds and summary.per_sample
    assert torchx.summarize(model, (2, 3, 8, 8)).total_mult_adds == 2 * summary.total_mult_adds  # type: ignore[operator]
    with pytest.raises(ValueError, match="unknown summary columns"):
        model.summary((2, 3, 8, 8), columns=("size",))


def test_mult_adds_match_torchinfo_for_convolutions_and_products_without_biases() -> None:
    torchinfo = pytest.importorskip(
        "torchinfo", reason="needs torchinfo: pip install torchinfo (in the test extra)"
    )
    model = L.Sequential(  # no biases: torchinfo counts their additions, torch's FLOP formulas do not
        L.Conv2d(8, 3, bias=False), L.ReLU(), L.Conv2d(4, 3, stride=2, bias=False),
        L.Flatten(), L.Linear(10, bias=False),
    )  # fmt: skip
    torchx.build(model, (1, 3, 32, 32))
    theirs = torchinfo.summary(model, (1, 3, 32, 32), verbose=0).total_mult_adds
    assert torchx.summarize(model, (1, 3, 32, 32)).total_mult_adds == theirs
