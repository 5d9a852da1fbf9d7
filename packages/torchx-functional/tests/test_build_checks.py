"""torchx.build of a Functional its placeholders built: the shapes are checked
against the placeholders without running anything, with the errors a call gives."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import torchx
import torchx.layers as L
from torchx.core import DtypeError, ShapeError, TypedShape
from torchx.core import _build as build_internals
from torchx.functional import Dim, Functional, Placeholder


@pytest.fixture
def no_meta_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("torchx.build ran the model on meta")

    monkeypatch.setattr(build_internals, "_meta_forward", refuse)


def image_model() -> Functional:
    x = Placeholder((None, 3, 8, None), name="image")
    features = L.Conv2d(4, kernel_size=3, padding=1)(x).mean((2, 3))
    return Functional(inputs=x, outputs=L.Linear(5)(features))


@pytest.mark.usefixtures("no_meta_run")
def test_a_built_functional_is_checked_without_running() -> None:
    model = image_model()
    assert torchx.build(model, (None, 3, 8, None)) is model
    assert torchx.build(model, torch.zeros(2, 3, 8, 7)) is model
    assert torchx.build(model, (4, 3, 8, 16), device="meta") is model  # and still placed as asked
    assert next(model.parameters()).device.type == "meta"


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        (
            (None, 3, 9, 7),
            r"Functional input 'image': expected shape \(None, 3, 8, None\).*got \(None, 3, 9, 7\)",
        ),
        (
            (None, 3, None, 7),
            r"Functional input 'image': dim 2 is dynamic \(None\) in the shape given, 8 in its",
        ),
        ((None, 3, 8), r"expected shape \(None, 3, 8, None\)"),
    ],
    ids=["static-dim-differs", "dynamic-where-static", "rank"],
)
def test_a_shape_that_does_not_fit_is_the_error_a_call_gives(shape: tuple[Any, ...], message: str) -> None:
    with pytest.raises(ShapeError, match=message):
        torchx.build(image_model(), shape)


def test_named_dim_bounds_and_dtype_kinds_are_checked() -> None:
    ids = Placeholder((None, Dim("T", max=64)), dtype=torch.int64, name="ids")
    model = Functional(inputs=ids, outputs=L.Embedding(100, 8)(ids))
    torchx.build(model, TypedShape((None, 64), torch.int64))
    with pytest.raises(ShapeError, match=r"dim 1 is T<=64, got 65"):
        torchx.build(model, TypedShape((None, 65), torch.int64))
    with pytest.raises(DtypeError, match="expected integer dtype"):
        torchx.build(model, (None, 16))


def test_a_forward_taking_a_dict_is_still_checked_on_meta() -> None:
    x = Placeholder((None, 4), name="x")
    model = Functional(inputs={"x": x}, outputs=L.Linear(2)(x))
    with pytest.raises(ShapeError):
        torchx.build(model, (None, 5))
