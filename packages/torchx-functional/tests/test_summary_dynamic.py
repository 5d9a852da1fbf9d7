"""A graph over token ids with a dynamic sequence: its summary counts in N and T (issue 27, section 5);
a graph over images of any size: its memory figures too (issue 39)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
import yaml
from torch_features import SYMBOLIC_ATTENTION

import torchx
import torchx.layers as L
from torchx.cli import main
from torchx.core import TypedShape, to_spec


def attention_block() -> L.Functional:
    """Embedding, a query projection split in two heads, causal attention, an output projection."""
    ids = L.Placeholder((None, None), dtype=torch.long, name="ids")
    x = L.Embedding(100, 16)(ids)
    b, t, _ = x.shape
    q = L.Linear(16)(x).view(b, t, 2, 8).transpose(1, 2)
    a = F.scaled_dot_product_attention(q, q, q, is_causal=True).transpose(1, 2).reshape(b, t, 16)
    return L.Functional(ids, L.Linear(16)(a))


@pytest.mark.skipif(
    not SYMBOLIC_ATTENTION, reason="this torch fixes the sizes of attention on fake tensors: no polynomial"
)
def test_today_a_dynamic_sequence_showed_no_mult_adds_and_an_empty_largest_tensor() -> None:
    model = attention_block()
    summary = model.summary(columns=("output_size", "mult_adds"))
    text = str(summary)
    # two projections (16 x 16 per position) and two (T x T x 8) products per head: not linear in T
    assert "total mult-adds: 512*N*T + 32*N*T^2\n" in text  # was "total mult-adds per sample (M): -"
    assert (
        "largest tensor of a forward (bytes): 8*N*T^2 (aten.bmm, (None, None, None))" in text
    )  # was 0.00 MB
    assert "  linear     Linear      (None, None, 16)             256*N*T" in text
    assert "  ids        Input       (None, None)                       -" in text
    total = summary.total_mult_adds
    assert total is not None and not isinstance(total, int)  # a polynomial
    for batch, positions in ((1, 3), (4, 10)):
        static = torchx.summarize(model, TypedShape((batch, positions), torch.long))
        assert total.at(batch, positions) == static.total_mult_adds


@pytest.mark.skipif(
    not SYMBOLIC_ATTENTION, reason="this torch fixes the sizes of attention on fake tensors: no polynomial"
)
def test_the_cli_summarises_a_spec_file_over_token_ids(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = tmp_path / "block.yaml"
    spec.write_text(yaml.safe_dump(to_spec(attention_block())), encoding="utf-8")
    assert (
        main(["summary", str(spec), "--input", "None,None:int64", "--columns", "output_size,mult_adds"]) == 0
    )
    out = capsys.readouterr().out
    assert "total mult-adds: 512*N*T + 32*N*T^2\n" in out and "(None, None, 16)" in out
    assert main(["summary", str(spec), "--input", "None,None:int64", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total_mult_adds"] == {"N*T": 512, "N*T^2": 32}
    assert data["largest_tensor"]["bytes"] == {"N*T^2": 8}


def image_net() -> L.Functional:
    """A stride-2 stem at half the image's size, a strided conv, a pooled 256-channel head."""
    image = L.Placeholder((None, 3, None, None), name="image")
    x = L.ReLU()(L.Conv2d(16, 3, stride=2, padding=1)(image))
    x = L.Conv2d(32, 3, stride=2, padding=1)(x)
    x = L.Flatten()(L.Conv2d(256, 1)(L.AdaptiveAvgPool2d(1)(x)))
    return L.Functional(image, L.Linear(10)(x))


def test_a_graph_over_images_of_any_size_reports_memory_in_n_and_t() -> None:
    model = image_net()
    summary = model.summary()
    text = str(summary)
    # was "(MB): 0.00 (aten.convolution, (None, 256, 1, 1))", and a forward/backward size of 0.00 MB
    assert "largest tensor of a forward (bytes): 16*N*T^2 (aten.convolution, (None, 16, None, None))" in text
    assert "input size (bytes): 12*N*T^2\n" in text
    assert "forward/backward pass size (bytes): 2,128*N + 48*N*T^2\n" in text  # 2 x (16 + 8) bytes per T^2
    assert text.endswith("exact where T is a multiple of 4")
    static = torchx.summarize(model, (2, 3, 224, 224))
    for figure in ("input_bytes", "activation_bytes", "total_bytes"):
        assert getattr(summary, figure).at(2, 224) == getattr(static, figure), figure


def test_the_cli_summarises_images_of_any_size(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = tmp_path / "net.yaml"
    spec.write_text(yaml.safe_dump(to_spec(image_net())), encoding="utf-8")
    assert main(["summary", str(spec), "--input", "None,3,None,None", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["largest_tensor"]["bytes"] == {"N*T^2": 16} and data["input_bytes"] == {"N*T^2": 12}
    assert data["activation_bytes"] == {"N": 2128, "N*T^2": 48} and data["position_multiple"] == 4
