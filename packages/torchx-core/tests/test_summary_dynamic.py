"""Summaries with a dynamic sequence: multiply-adds and the largest tensor in N and T (issue 27)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import sympy  # type: ignore[import-untyped]
import torch
import torch.nn.functional as F
from toy_layers import Chain, Dense

import torchx
from torchx.core._scaling import BATCH, POSITION, Scaling
from torchx.nn import Module


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
    assert largest.shape == (None, None, None) and largest.bytes == 4


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


def test_json_writes_the_polynomials_by_monomial() -> None:
    data = json.loads(torchx.summarize(SelfAttention(), (None, None, 16)).to_json())
    assert data["total_mult_adds"] == {"N*T": 1024, "N*T^2": 32}
    assert data["rows"][1]["mult_adds"] == {"N*T": 256}
    assert data["largest_tensor"]["bytes"] == {"N*T^2": 4}


def test_scaling_reads_polynomials_only() -> None:
    assert Scaling.of(3 * BATCH * POSITION**2 + BATCH + 2) == Scaling(((0, 0, 2), (1, 0, 1), (1, 2, 3)))
    assert str(Scaling.of(3 * BATCH * POSITION**2 + BATCH + 2)) == "2 + N + 3*N*T^2"
    assert Scaling.of(POSITION / 2) is None  # a fraction
    assert Scaling.of(sympy.floor(POSITION / 2) * BATCH) is None  # a strided dim
    assert str(Scaling(())) == "0" and Scaling(()).to_data() == {}
