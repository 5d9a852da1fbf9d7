"""Summaries with a dynamic sequence: multiply-adds and the largest tensor in N and T (issue 27);
memory figures and strided feature maps of dynamic images (issue 39)."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest
import sympy  # type: ignore[import-untyped]
import torch
import torch.nn.functional as F
from torch import nn
from torch_features import SYMBOLIC_ATTENTION
from toy_layers import Chain, Dense

import torchx
from torchx.core._scaling import Scaling, symbols
from torchx.nn import Module

BATCH, POSITION, _ = symbols()


class SelfAttention(Module):
    """One head of attention over (N, T, 16) with toy projections: linear and quadratic in T."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v, self.out = Dense(16), Dense(16), Dense(16), Dense(16)

    def forward(self, x: torch.Tensor) -> Any:
        return self.out(F.scaled_dot_product_attention(self.q(x), self.k(x), self.v(x), is_causal=True))


class SquareOnly(Module):
    """Runs only when its first two dims are equal: the batch has to equal the positions."""

    def __init__(self) -> None:
        super().__init__()
        self.dense = Dense(16)

    def forward(self, x: torch.Tensor) -> Any:
        return self.dense(x + x.transpose(0, 1))


def test_today_a_dynamic_sequence_gave_no_mult_adds_and_an_empty_largest_tensor() -> None:
    summary = torchx.summarize(Chain(Dense(32), Dense(16)), (None, None, 16))
    text = str(summary)
    assert summary.total_mult_adds == Scaling(((1, 1, 16 * 32 + 32 * 16),))  # was None, shown "-"
    assert "total mult-adds: 1,024*N*T\n" in text
    largest = summary.largest_tensor
    assert largest is not None and largest.scaling == Scaling(((1, 1, 32 * 4),))  # was 0.00 MB
    assert "largest tensor of a forward (bytes): 128*N*T (aten.addmm, (None, 32))" in text
    assert "N: the batch size, T: the size of each other dynamic dim (None in the shapes)" in text
    assert summary.rows[1].output_shape == (None, None, 32)


@pytest.mark.skipif(
    not SYMBOLIC_ATTENTION, reason="this torch fixes the sizes of attention on fake tensors: no polynomial"
)
def test_attention_is_quadratic_in_the_positions_and_agrees_with_static_summaries() -> None:
    model = SelfAttention()
    summary = torchx.summarize(model, (None, None, 16))
    total = summary.total_mult_adds
    assert total == Scaling(((1, 1, 4 * 16 * 16), (1, 2, 2 * 16)))  # projections; scores and weighted sum
    assert str(total) == "1,024*N*T + 32*N*T^2" and total.position_degree == 2
    for batch, positions in ((1, 1), (2, 7), (3, 40)):
        static = torchx.summarize(model, (batch, positions, 16))
        assert total.at(batch, positions) == static.total_mult_adds
        for row, static_row in zip(summary.rows, static.rows, strict=True):
            assert (
                isinstance(row.mult_adds, Scaling)
                and row.mult_adds.at(batch, positions) == static_row.mult_adds
            )
    largest = summary.largest_tensor
    assert largest is not None and largest.scaling == Scaling(((1, 2, 4),))  # the (N, T, T) scores
    assert (
        largest.shape == (None, None, None) and largest.bytes == largest.scaling
    )  # was 4: the size at N=T=1


@pytest.mark.parametrize(
    ("shape", "expected"),
    [((1, None, 16), Scaling(((0, 1, 16 * 32),))), ((None, None, 4, 16), Scaling(((1, 1, 4 * 16 * 32),)))],
    ids=["positions-only", "positions-and-a-static-dim"],
)
def test_any_dynamic_dim_after_the_batch_counts_as_positions(
    shape: tuple[Any, ...], expected: Scaling
) -> None:
    assert torchx.summarize(Chain(Dense(32)), shape).total_mult_adds == expected


def test_a_dynamic_batch_alone_still_counts_per_sample() -> None:
    summary = torchx.summarize(Chain(Dense(32), Dense(16)), (None, 16))
    assert summary.total_mult_adds == 1024 and summary.per_sample
    assert "total mult-adds per sample (M): 0.00" in str(summary) and "N: the batch" not in str(summary)


def test_a_model_needing_the_batch_to_equal_the_positions_keeps_the_probes_figures() -> None:
    summary = torchx.summarize(SquareOnly(), (None, None, 16))
    assert summary.total_mult_adds is None  # the probes' counts are not per sample: "-"
    assert "total mult-adds per sample (M): -" in str(summary)


@pytest.mark.skipif(
    not SYMBOLIC_ATTENTION, reason="this torch fixes the sizes of attention on fake tensors: no polynomial"
)
def test_json_writes_the_polynomials_by_monomial() -> None:
    data = json.loads(torchx.summarize(SelfAttention(), (None, None, 16)).to_json())
    assert data["total_mult_adds"] == {"N*T": 1024, "N*T^2": 32}
    assert data["rows"][1]["mult_adds"] == {"N*T": 256}
    assert data["largest_tensor"]["bytes"] == {"N*T^2": 4}


@pytest.mark.skipif(SYMBOLIC_ATTENTION, reason="this torch keeps the sizes of attention symbols")
def test_where_torch_fixes_the_sizes_of_attention_the_summary_claims_no_polynomial() -> None:
    summary = torchx.summarize(SelfAttention(), (None, None, 16))
    assert summary.total_mult_adds is None and "total mult-adds per sample (M): -" in str(summary)


def test_scaling_reads_polynomials_only() -> None:
    assert Scaling.of(3 * BATCH * POSITION**2 + BATCH + 2) == Scaling(((0, 0, 2), (1, 0, 1), (1, 2, 3)))
    assert str(Scaling.of(3 * BATCH * POSITION**2 + BATCH + 2)) == "2 + N + 3*N*T^2"
    assert Scaling.of(POSITION / 2) is None  # a fraction
    assert Scaling.of(sympy.floor(BATCH / 2)) is None  # a rounding no multiple of T clears
    assert str(Scaling(())) == "0" and Scaling(()).to_data() == {}


def mobilenet_like() -> nn.Sequential:
    """MobileNetV3's outline: a 16-channel stem at half the input's size, depthwise
    blocks strided down to 1/32, then a 1024-channel head on a 1x1 map."""
    stages = [(16, 16, 1), (16, 24, 2), (24, 40, 2), (40, 96, 2), (96, 576, 2)]
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1),
        nn.Hardswish(),
        *(
            layer
            for inputs, outputs, stride in stages
            for layer in (
                nn.Conv2d(inputs, inputs, 3, stride, 1, groups=inputs),
                nn.Conv2d(inputs, outputs, 1),
            )
        ),
        nn.AdaptiveAvgPool2d(1),
        nn.Conv2d(576, 1024, 1),
        nn.Hardswish(),
        nn.Flatten(),
        nn.Linear(1024, 10),
    )


def test_a_dynamic_image_reports_memory_in_n_and_t_not_at_size_1() -> None:
    model = mobilenet_like()
    summary = torchx.summarize(model, (None, 3, None, None))
    largest = summary.largest_tensor
    # was the head's (None, 1024, 1, 1), 0.00 MB: every None counted as 1
    assert largest is not None and largest.shape == (None, 16, None, None)
    assert largest.bytes == Scaling(((1, 2, 16),), multiple=2)  # 16 channels of (T/2)^2 float32
    activation = summary.activation_bytes
    assert isinstance(activation, Scaling) and activation.position_degree == 2  # was a constant 0.02 MB
    assert summary.input_bytes == Scaling(((1, 2, 12),))
    text = str(summary)
    assert "largest tensor of a forward (bytes): 16*N*T^2 (aten.convolution, (None, 16, None, None))" in text
    assert "input size (bytes): 12*N*T^2\n" in text and "params size (MB): 2.66\n" in text
    assert "forward/backward pass size (bytes): " in text and "estimated total size (bytes): " in text
    assert text.endswith("(None in the shapes), exact where T is a multiple of 32")
    for batch, size in ((1, 224), (3, 64)):
        static = torchx.summarize(model, (batch, 3, size, size))
        assert static.largest_tensor is not None
        assert largest.bytes.at(batch, size) == static.largest_tensor.bytes
        for figure in ("input_bytes", "activation_bytes", "total_bytes", "total_mult_adds"):
            assert getattr(summary, figure).at(batch, size) == getattr(static, figure), figure


def test_json_writes_memory_polynomials_and_where_they_are_exact() -> None:
    data = json.loads(torchx.summarize(mobilenet_like(), (None, 3, None, None)).to_json())
    assert data["largest_tensor"]["bytes"] == {"N*T^2": 16}
    assert data["input_bytes"] == {"N*T^2": 12} and data["position_multiple"] == 32
    assert data["total_bytes"]["1"] == data["parameter_bytes"] and "N*T^2" in data["activation_bytes"]


def test_a_figure_with_no_polynomial_is_unknown_not_counted_at_size_1() -> None:
    summary = torchx.summarize(SquareOnly(), (None, None, 16))  # no fake run: N must equal T
    assert summary.input_bytes == Scaling(((1, 1, 64),))
    assert summary.activation_bytes is None and summary.total_bytes is None and summary.largest_tensor is None
    text = str(summary)
    assert "forward/backward pass size (MB): -\n" in text and "estimated total size (MB): -\n" in text


def test_a_strided_count_is_exact_where_t_is_a_multiple_of_the_strides() -> None:
    half = Scaling.of(sympy.floor((POSITION - 1) / 2) + 1)  # a stride-2 conv's length
    assert half == Scaling(((0, 1, Fraction(1, 2)),), multiple=2) and str(half) == "1/2*T"
    assert half.to_data() == {"T": 0.5} and half.at(1, 224) == 112
    with pytest.raises(ValueError, match="multiple of 2, not at T=225"):
        half.at(1, 225)
    nested = Scaling.of(sympy.floor((sympy.floor((POSITION - 1) / 2) + 1 - 1) / 3) + 1)  # then stride 3
    assert nested is not None and nested.multiple == 6 and nested.at(1, 60) == 10
    assert Scaling.of(sympy.floor(POSITION / 2) * BATCH) == Scaling(((1, 1, Fraction(1, 2)),), multiple=2)


def test_scalings_order_by_size_for_large_dims_and_add() -> None:
    map_112 = Scaling.of(64 * BATCH * (POSITION / 2) ** 2)  # (N, 16, T/2, T/2) float32
    map_1 = Scaling.of(4096 * BATCH)  # (N, 1024, 1, 1)
    assert map_112 is not None and map_1 is not None
    assert map_1 < map_112 and map_112 > map_1 and max([map_1, map_112]) is map_112
    assert Scaling(((0, 0, -3), (1, 2, 16))) < map_112  # the same leading term, less below
    assert not map_112 < map_112 and Scaling(((0, 0, 5),)) < Scaling(((0, 0, 6),))
    total = map_112 + Scaling(((1, 2, Fraction(1, 2)),), multiple=4) + 7
    assert total == Scaling(((0, 0, 7), (1, 2, Fraction(33, 2))), multiple=4)
    assert Scaling(((1, 1, Fraction(1, 2)),)) + Scaling(((1, 1, Fraction(1, 2)),)) == Scaling(((1, 1, 1),))
