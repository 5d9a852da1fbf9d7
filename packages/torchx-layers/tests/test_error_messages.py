"""Errors that fit: a dynamic dim shows as None, a fix line fits what failed
(or is left out), a built model's errors name the layer, shapes are ints."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import torch
from torch_features import META_CHECKS_KERNEL_SIZES

import torchx
import torchx.layers as L
from torchx.core import NotBuiltError, ShapeError, TypedShape


@pytest.mark.parametrize(
    ("model", "shape", "shown"),
    [
        (
            L.Sequential(L.Reshape((5, 5))),
            (None, 12),
            "shape '[None, 5, 5]' is invalid for input of size None*12",
        ),
        (
            L.Sequential(L.Lambda(lambda x: x.expand(3, 12))),
            (None, 12),
            "existing size (None) at non-singleton dimension 0.  Target sizes: [3, 12].  Tensor sizes: [None, 12]",
        ),
        (L.Sequential(L.Lambda(lambda x: x.view(3, 12))), (None, 12), "invalid for input of size None*12"),
        (L.Sequential(L.Reshape((5, 5))), (None, None, 3), "input of size None*None*3"),
    ],
    ids=["reshape", "expand", "view", "two-dynamic-dims"],
)
def test_a_dynamic_dim_shows_as_none_in_torchs_message(
    model: torch.nn.Module, shape: tuple[int | None, ...], shown: str
) -> None:
    with pytest.raises(ShapeError) as info:
        torchx.build(model, shape)
    assert shown in str(info.value)
    assert "61" not in str(info.value)


@pytest.mark.parametrize(
    ("shape", "shown"),
    [
        ((None, 8.7), "dim 1 is 8.7 (float)"),
        ((None, 8.0), "dim 1 is 8.0 (float)"),
        ((True, 8), "dim 0 is True (bool)"),
    ],
    ids=["float", "whole-float", "bool"],
)
def test_a_dim_that_is_not_an_int_is_refused_not_truncated(shape: tuple[object, ...], shown: str) -> None:
    model = L.Sequential(L.Linear(3))
    with pytest.raises(ShapeError, match=rf"^input: shape .*: {re.escape(shown)}, not an int") as info:
        torchx.build(model, shape)  # type: ignore[arg-type]
    assert "fix: give dim" in str(info.value)
    assert not model.is_built
    with pytest.raises(ShapeError, match=re.escape(shown)):
        TypedShape(shape, torch.int64)  # type: ignore[arg-type]


def test_an_embedding_id_out_of_range_says_so_and_keeps_torchs_error() -> None:
    model = L.Sequential(L.Embedding(5, 3))
    with pytest.raises(IndexError) as info:
        model(torch.tensor([[1, 7]]))
    assert not isinstance(info.value, ShapeError)
    note = "\n".join(info.value.__notes__)
    assert "its ids range over 1 to 7, and num_embeddings=5 takes ids 0 to 4" in note
    assert "fix: check the ids" in note and "num_embeddings >= 8" in note
    assert "input shaped" not in note and "Sequential[0]" in note


def test_an_embedding_fed_floats_asks_for_integer_ids() -> None:
    with pytest.raises(TypeError) as info:
        L.Embedding(5, 3)(torch.rand(2, 3))
    message = str(info.value)
    assert "it takes integer ids (torch.long or torch.int)" in message
    assert message.endswith("fix: pass the ids as integers: x.long()")
    assert "x.to(torch.float32)" not in message


@pytest.mark.parametrize(
    ("model", "inputs", "fix"),
    [
        (
            L.Conv2d(4, 5),
            ((None, 3, 3, 3),),
            "fix: give it spatial dims of at least (5, 5) (the kernel spans (5, 5) at dilation (1, 1), "
            "less padding (0, 0) on each side), or a smaller kernel_size or dilation, or more padding",
        ),
        pytest.param(
            L.Conv2d(4, 3, dilation=2, padding=1),
            ((None, 3, 8, 2),),
            "fix: give it spatial dims of at least (3, 3) (the kernel spans (5, 5) at dilation (2, 2), "
            "less padding (1, 1) on each side)",
            marks=pytest.mark.skipif(
                not META_CHECKS_KERNEL_SIZES,
                reason="this torch's meta convolution gives a size of 0: its first real call refuses it",
            ),
        ),
        (
            L.Reshape((5, 5)),
            ((None, 12),),
            "fix: give Reshape a shape of 12 elements, as many as each sample of the input holds",
        ),
        (
            L.Concat(),
            ((None, 3), (5, 3)),
            "fix: give the inputs the same number of dims and the same size in every dim but dim 1",
        ),
        (L.Add(), ((None, 3), (None, 4)), "fix: give the inputs the same shape (or shapes that broadcast"),
    ],
    ids=["kernel-larger-than-image", "dilated-kernel", "reshape", "concat", "add"],
)
def test_a_shape_error_has_the_fix_of_its_layer(
    model: torch.nn.Module, inputs: tuple[tuple[int | None, ...], ...], fix: str
) -> None:
    with pytest.raises(ShapeError) as info:
        torchx.build(L.Sequential(model) if len(inputs) == 1 else model, *inputs)
    assert fix in str(info.value)
    assert "give it input shaped" not in str(info.value)


@pytest.mark.parametrize(
    "init",
    [torch.nn.init.xavier_uniform_, torch.nn.init.xavier_normal_, torch.nn.init.kaiming_normal_],
    ids=["xavier-uniform", "xavier-normal", "kaiming-normal"],
)
def test_nn_init_on_an_unbuilt_layer_says_to_build_it(init: Callable[[torch.Tensor], object]) -> None:
    with pytest.raises(NotBuiltError, match=r"not built yet: call torchx\.build\(model, input_shape\) first"):
        init(L.Linear(5).weight)


def test_a_built_model_fed_a_too_small_image_names_the_layer_and_keeps_torchs_error() -> None:
    model = torchx.build(
        L.Sequential(L.Conv2d(4, 3), L.Sequential(L.ReLU(), L.Conv2d(4, 5))), (None, 3, 8, 8)
    )
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size") as info:
        model(torch.rand(1, 3, 3, 3))
    assert not isinstance(info.value, ShapeError)
    assert info.value.__notes__ == ["raised in Sequential[1] Sequential[1] Conv2d"]
    with pytest.raises(RuntimeError) as info:
        model(torch.rand(1, 3, 2, 2))
    assert info.value.__notes__ == ["raised in Sequential[0] Conv2d"]


def test_an_output_too_large_for_any_tensor_is_a_shape_error_naming_the_layer() -> None:
    model = L.Sequential(L.Conv2d(1, kernel_size=1, padding=2**29 - 1))
    with pytest.raises(ShapeError, match=r"Sequential\[0\] Conv2d: .*overflowed"):
        torchx.build(model, (2, 1, 4, 4), device="meta")
