"""torchx.build and infer_shapes: building without a real forward."""

from __future__ import annotations

import resource

import pytest
import torch
from case_ids import case_id
from torch import nn
from toy_layers import Chain, Dense, Norm

import torchx
from torchx.core import ShapeError


def test_build_from_a_shape_creates_parameters_without_a_forward() -> None:
    model = Chain(Dense(8), nn.ReLU(), Norm(), Dense(3))
    assert torchx.build(model, (4, 5)) is model
    assert [p.shape for p in model.parameters()] == [(8, 5), (8,), (8,), (8,), (3, 8), (3,)]
    assert all(p.device.type == "cpu" for p in model.parameters())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    assert len(optimizer.param_groups[0]["params"]) == 6


def test_build_does_not_touch_batchnorm_statistics() -> None:
    norm = Norm()
    torchx.build(norm, (4, 6))
    assert int(norm.num_batches_tracked) == 0
    assert torch.equal(norm.running_mean, torch.zeros(6))


def test_build_matches_the_lazy_path_bit_for_bit() -> None:
    torch.manual_seed(0)
    lazy = Chain(Dense(8), Norm(), Dense(3))
    lazy(torch.zeros(4, 5))
    torch.manual_seed(0)
    built = torchx.build(Chain(Dense(8), Norm(), Dense(3)), (4, 5))
    parameters = zip(lazy.named_parameters(), built.named_parameters(), strict=True)
    for (name, a), (_, b) in parameters:
        assert torch.equal(a, b), name


def test_build_accepts_example_tensors_and_dtype() -> None:
    model = torchx.build(Dense(2), torch.zeros(3, 4, dtype=torch.float64))
    assert model.weight.dtype == torch.float64
    model = torchx.build(Dense(2), (3, 4), dtype=torch.bfloat16)
    assert model.weight.dtype == torch.bfloat16


def test_a_shared_layer_builds_once_in_one_pass() -> None:
    shared = Dense(4)
    model = Chain(Dense(4), shared, shared)
    torchx.build(model, (2, 3))
    assert shared.in_features == 4
    assert model(torch.zeros(2, 3)).shape == (2, 4)


def test_infer_shapes_with_dynamic_batch() -> None:
    model = Chain(Dense(8), Norm(), Dense(3))
    assert torchx.infer_shapes(model, (None, 5)) == (None, 3)
    assert torchx.infer_shapes(model, (7, 5)) == (7, 3)
    assert model(torch.zeros(30, 5)).shape == (30, 3)


def test_a_size_taken_from_a_dynamic_dim_is_an_error() -> None:
    with pytest.raises(ShapeError, match=r"dynamic \(None\) dim(.|\n)*fix: give that input dim a fixed size"):
        torchx.build(Dense(3), (4, None))


def test_abstract_build_on_meta_allocates_nothing() -> None:
    model = Chain(Dense(50_000), Dense(50_000), Dense(50_000), Dense(50_000))
    torchx.build(Chain(Dense(4)), (2, 3), device="meta")  # warm-up
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    torchx.build(model, (8, 50_000), device="meta")
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert sum(p.numel() for p in model.parameters()) > 10_000_000_000
    assert all(p.is_meta for p in model.parameters())
    assert grown_kib < 50 * 1024
    assert torchx.infer_shapes(model, (None, 50_000), device="meta") == (None, 50_000)


def test_real_forward_after_build_runs_on_real_tensors() -> None:
    model = torchx.build(Chain(Dense(3), Norm()), (None, 2))
    out = model(torch.ones(5, 2))
    assert out.device.type == "cpu" and out.shape == (5, 3)
    assert int(list(model.children())[1].num_batches_tracked) == 1


def test_a_failed_dynamic_build_unbuilds_so_the_fix_works() -> None:
    model = Chain(Dense(4))
    with pytest.raises(ShapeError):
        torchx.build(model, (8, None))
    assert not torchx.is_built(model)
    assert all(isinstance(p, torchx.core.PendingParameter) for p in model.parameters())
    torchx.build(model, (8, 3))
    assert next(iter(model.children())).in_features == 3


def test_dynamic_spatial_dims_fit_real_kernels() -> None:
    model = nn.Sequential(nn.Conv2d(3, 8, 5), nn.AdaptiveAvgPool2d(1), nn.Flatten(), Dense(3))
    assert torchx.infer_shapes(model, (None, 3, None, None)) == (None, 3)
    assert torchx.infer_shapes(nn.Conv2d(3, 8, 5), (None, 3, None, 17)) == (None, 8, None, 13)


def test_a_layer_shared_within_one_build_stays_on_meta() -> None:
    shared = Norm()
    model = Chain(Dense(4), shared, shared)
    torchx.build(model, (2, 3))
    assert int(shared.num_batches_tracked) == 0
    assert not any(t.is_meta for t in (*model.parameters(), *model.buffers()))


@pytest.mark.parametrize(
    ("shape", "problem"),
    [
        ((-1, 4), "has a negative dim"),
        ((2**62, 4), "more than 2\\*\\*63 bytes"),
        ((None, 2**62), "more than 2"),
    ],
    ids=case_id,
)
def test_an_input_shape_no_tensor_can_have_is_a_shape_error(
    shape: tuple[int | None, ...], problem: str
) -> None:
    with pytest.raises(ShapeError, match=f"^input: shape .* {problem}"):
        torchx.build(Dense(3), shape)


def test_an_int_too_long_to_print_is_described_by_its_size() -> None:
    from torchx.core._errors import short_repr

    assert short_repr(10**5000) == "<an int of about 5,001 digits>"
    assert short_repr(12345) == "12345"
