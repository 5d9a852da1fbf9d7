"""A slice of a dynamic dim by static bounds is dynamic: ``x[:, :10]`` has ``min(10, T)`` rows."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
import torch
import yaml

import torchx.layers as L
from torchx.core import PluginManager, ShapeError
from torchx.functional import Functional, Placeholder
from torchx.functional._slices import varies

LENGTHS = (1, 5, 12, 140)  # below, between and above the bounds and the probes (61, 127)

Cut = Callable[[Any], Any]

DYNAMIC: dict[str, tuple[Cut, tuple[int | None, ...]]] = {
    "head": (lambda x: x[:, :10], (None, None, 8)),
    "tail": (lambda x: x[:, -10:], (None, None, 8)),
    "middle": (lambda x: x[:, 3:10], (None, None, 8)),
    "past_the_probes": (lambda x: x[:, 70:], (None, None, 8)),
    "strided": (lambda x: x[:, :10:3], (None, None, 8)),
    "ellipsis": (lambda x: x[..., :10, 2:], (None, None, 6)),
    "new_axis": (lambda x: x[:, None, :10, 0], (None, 1, None)),
    "twice": (lambda x: x[:, :10][:, :5], (None, None, 8)),
    "split_method": (lambda x: x.split(10, dim=1)[0], (None, None, 8)),
    "split_function": (lambda x: torch.split(x, 10, 1)[1], (None, None, 8)),
    "chunk": (lambda x: x.chunk(100, dim=1)[0], (None, None, 8)),
    "tensor_split_at": (lambda x: x.tensor_split([10, 20], dim=1)[1], (None, None, 8)),
    "tensor_split_into": (lambda x: torch.tensor_split(x, 100, dim=1)[0], (None, None, 8)),
}
STATIC: dict[str, tuple[Cut, tuple[int | None, ...]]] = {
    "first": (lambda x: x[:, :1], (None, 1, 8)),
    "last": (lambda x: x[:, -1:], (None, 1, 8)),
    "empty": (lambda x: x[:, 5:3], (None, 0, 8)),
    "static_dim": (lambda x: x[:, :, :4], (None, None, 4)),
    "split_by_one": (lambda x: x.split(1, dim=1)[0], (None, 1, 8)),
}


@pytest.mark.parametrize(("cut", "shape"), [*DYNAMIC.values(), *STATIC.values()], ids=[*DYNAMIC, *STATIC])
def test_a_cut_of_a_dynamic_dim_is_dynamic_where_its_length_follows_the_dim(
    cut: Cut, shape: tuple[int | None, ...]
) -> None:
    """Today ``x[:, :10]`` was recorded (None, 10, 8): the probes (61 and 67 then) both held 10 rows."""
    x = Placeholder((None, None, 8), name="x")
    out = cut(x)
    assert out.shape == shape
    model = Functional(inputs=x, outputs=out)
    for length in LENGTHS:
        value = torch.randn(2, length, 8)
        try:
            expected = cut(value)
        except IndexError:  # fewer pieces than the one taken, in torch too
            with pytest.raises(IndexError):
                model(value)
            continue
        result = model(value)
        assert torch.equal(result, expected)
        assert all(dim is None or dim == got for dim, got in zip(shape, result.shape, strict=True))


def test_a_mean_over_a_head_divides_by_the_rows_it_has() -> None:
    """Today the graph divided by a static 10 at every length: at 5 rows, silently half the mean."""
    x = Placeholder((None, None, 8), name="x")
    head = x[:, :10]
    model = Functional(inputs=x, outputs=head.sum(1) / head.shape[1])
    for length in (5, 12):
        value = torch.randn(2, length, 8)
        torch.testing.assert_close(model(value), value[:, :10].mean(1))


def test_a_static_length_after_a_head_is_refused_at_definition() -> None:
    """Today ``x[:, :10] + table`` was accepted, then failed at run time for sequences under 10."""
    x = Placeholder((None, None, 8), name="x")
    with pytest.raises(ShapeError, match=r"broadcast.*\[None, None, 8\]"):
        x[:, :10] + torch.zeros(10, 8)


def test_narrow_keeps_its_length_or_fails_as_torch_does() -> None:
    """``narrow`` never gives a shorter piece: its length is static."""
    x = Placeholder((None, None, 8), name="x")
    out = x.narrow(1, 2, 10)
    assert out.shape == (None, 10, 8)
    model = Functional(inputs=x, outputs=out)
    value = torch.randn(2, 12, 8)
    assert torch.equal(model(value), value.narrow(1, 2, 10))
    with pytest.raises(RuntimeError, match="exceeds dimension size"):
        model(torch.randn(2, 5, 8))


def test_spec_round_trip_keeps_the_cut_dynamic(fresh_plugins: PluginManager) -> None:
    x = Placeholder((None, None, 8), name="x")
    head, pieces = x[:, -10:], x.split(10, dim=1)
    model = Functional(inputs=x, outputs=[head.sum(1) / head.shape[1], pieces[0], pieces[1]])
    spec = model.to_spec()
    for read in (json.loads(json.dumps(spec)), yaml.safe_load(yaml.safe_dump(spec, sort_keys=False))):
        rebuilt = L.Layer.from_spec(read)
        assert isinstance(rebuilt, Functional) and rebuilt.to_spec() == spec
        for length in (12, 25):
            value = torch.randn(2, length, 8)
            for got, expected in zip(rebuilt(value), model(value), strict=True):
                assert torch.equal(got, expected)


@pytest.mark.parametrize("step", [None, 1, 2, 7], ids=["no_step", "step_of_1", "step_of_2", "step_of_7"])
def test_varies_agrees_with_every_length_up_past_the_bounds(step: int | None) -> None:
    bounds = [None, *range(-12, 13)]
    for start, stop in itertools.product(bounds, bounds):
        piece = slice(start, stop, step)
        far = len(range(*piece.indices(100)))
        every = {len(range(*piece.indices(size))) for size in range(1, 100)}
        assert varies(piece, far) == (every != {far}), piece
