"""Construction: torch-style calls cannot be misread, every argument is checked where it is given."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch.nn.parameter import is_lazy

import torchx
import torchx.layers as L
from torchx.core import ArgumentError, DtypeError, PluginManager, ShapeError, SpecError


@pytest.mark.parametrize(
    ("make", "message", "fix"),
    [
        (lambda: L.Linear(10, 20), "Linear infers in_features from its input; drop 10 (or pass in_features=10 to check it)", "Linear(20)"),
        (lambda: L.BatchNorm2d(64), "BatchNorm2d infers num_features from its input; drop 64 (or pass num_features=64 to check it)", "BatchNorm2d()"),
        (lambda: L.GroupNorm(8, 64), "GroupNorm infers num_channels from its input; drop 64", "GroupNorm(8)"),
        (lambda: L.Conv2d(3, 8, 3), "Conv2d infers in_channels from its input; drop 3", "Conv2d(8, 3)"),
        (lambda: L.Conv2d(3, 8, 3, 2), "Conv2d infers in_channels from its input; drop 3", "Conv2d(8, 3, stride=2)"),
        (lambda: L.MultiheadAttention(64, 4), "MultiheadAttention infers embed_dim from its input; drop 64", "MultiheadAttention(4)"),
        (lambda: L.LayerNorm(64), "LayerNorm infers normalized_shape from its input; drop 64", "LayerNorm()"),
    ],
)  # fmt: skip
def test_a_torch_style_call_that_passes_an_inferred_size_says_what_to_drop(
    make: object, message: str, fix: str
) -> None:
    with pytest.raises(ArgumentError) as info:
        make()  # type: ignore[operator]
    assert str(info.value).startswith(message)
    assert str(info.value).endswith(f"fix: write {fix}")


def test_other_extra_positional_arguments_are_refused_with_the_keyword_call() -> None:
    with pytest.raises(
        ArgumentError, match=r"Linear takes 1 positional argument \(out_features\), got 2"
    ) as info:
        L.Linear(20, False)  # type: ignore[misc]
    assert str(info.value).endswith("fix: pass them by keyword: Linear(20, bias=False)")
    with pytest.raises(ArgumentError, match=r"_weight \(torch's\) is not offered"):
        L.Embedding(10, 3, None, None, 2.0, False, False, None)  # type: ignore[call-arg]


def test_layers_that_infer_nothing_keep_torchs_positional_arguments() -> None:
    assert L.LeakyReLU(0.2).arguments["negative_slope"] == 0.2
    assert L.Dropout(0.3).arguments["p"] == 0.3
    assert L.MaxPool2d(3, 2, 1).arguments == {
        "kernel_size": 3, "stride": 2, "padding": 1, "dilation": 1, "return_indices": False, "ceil_mode": False,
    }  # fmt: skip
    assert L.Embedding(10, 4, 0).arguments["padding_idx"] == 0


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: L.Linear("10"), r"Linear: out_features must be a positive int, got '10'"),
        (lambda: L.Linear(10, bias=20), r"Linear: bias must be a bool \(true or false\), got 20"),
        (lambda: L.BatchNorm2d(eps=0), r"BatchNorm2d: eps must be a positive number, got 0"),
        (lambda: L.BatchNorm2d(momentum=2.0), r"BatchNorm2d: momentum must be a number in \[0\.0, 1\.0\] or null"),
        (lambda: L.Dropout(4), r"Dropout: p must be a number in \[0\.0, 1\.0\], got 4"),
        (lambda: L.MultiheadAttention(4, dropout=1.0), r"dropout must be a number in \[0\.0, 1\.0\), got 1\.0"),
        (lambda: L.TransformerEncoderLayer(4, dropout=-0.1), r"dropout must be a number in \[0\.0, 1\.0\)"),
        (lambda: L.Conv2d(8, 0), r"Conv2d: kernel_size must be a positive int or a list of positive ints, got 0"),
        (lambda: L.Conv2d(8, 3, padding=-1), r"padding must be 'same' or 'valid' or a non-negative int"),
        (lambda: L.Conv2d(8, 3, padding_mode="mirror"), r"padding_mode must be one of 'zeros', 'reflect'"),
        (lambda: L.Linear(4, in_features=0), r"Linear: in_features must be a positive int or null, got 0"),
    ],
)  # fmt: skip
def test_every_argument_is_checked_at_construction(make: object, match: str) -> None:
    with pytest.raises(ArgumentError, match=match):
        make()  # type: ignore[operator]


def test_what_torch_s_constructor_refuses_is_refused_at_the_build_and_in_a_spec(
    fresh_plugins: PluginManager,
) -> None:
    refused = r"Conv2d: torch's Conv2d refuses these arguments: out_channels must be divisible by groups"
    layer = L.Conv2d(10, 3, groups=3)
    with pytest.raises(ArgumentError, match=refused):
        layer(torch.zeros(1, 6, 8, 8))
    assert not layer.is_built
    with pytest.raises(SpecError, match=r"^\$\.args: " + refused):
        L.Layer.from_spec({"type": "Conv2d", "args": {"out_channels": 10, "kernel_size": 3, "groups": 3}})


def test_the_spec_reader_refuses_the_same_values_in_the_same_words(fresh_plugins: PluginManager) -> None:
    with pytest.raises(SpecError, match=r"^\$\.args\.eps: expected a positive number, got 0"):
        L.Layer.from_spec({"type": "BatchNorm2d", "args": {"eps": 0}})
    with pytest.raises(SpecError, match=r"^\$\.args\.dropout: expected a number in \[0\.0, 1\.0\), got 1\.5"):
        L.Layer.from_spec({"type": "MultiheadAttention", "args": {"num_heads": 2, "dropout": 1.5}})


def test_a_given_inferred_size_is_checked_against_the_input() -> None:
    with pytest.raises(
        ShapeError,
        match=r"BatchNorm2d: num_features=64 was given, but the input \(2, 32, 4, 4\) has num_features=32",
    ):
        L.BatchNorm2d(num_features=64)(torch.zeros(2, 32, 4, 4))
    layer = L.Linear(20, in_features=10)
    assert layer(torch.zeros(3, 10)).shape == (3, 20)
    model = L.Sequential(L.Conv2d(8, 3, in_channels=3), L.BatchNorm2d(num_features=8))
    assert torchx.build(model, (None, 3, 8, 8)) is model
    assert model.to_spec()["layers"][0]["args"]["in_channels"] == 3  # written, so the spec checks it too


def test_device_and_dtype_place_the_layer_like_torchs_factory_arguments() -> None:
    layer = L.Linear(3, dtype=torch.float64)
    assert layer.weight.dtype == torch.float64  # pending, already in that dtype
    with pytest.raises(
        DtypeError, match=r"fix: convert the input to its weights' dtype: x\.to\(torch\.float64\)"
    ):
        layer(torch.zeros(2, 4))
    layer(torch.zeros(2, 4, dtype=torch.float64))
    assert layer.weight.dtype == torch.float64
    meta = L.Conv2d(4, 3, device="meta")
    meta(torch.zeros(1, 2, 8, 8, device="meta"))
    assert meta.weight.is_meta
    assert "dtype" not in L.Linear(3, dtype=torch.float64).to_spec().get(
        "args", {}
    )  # placement, not architecture


def test_a_dynamic_dim_is_none_in_messages_and_no_batch_dim_is_suggested() -> None:
    with pytest.raises(ShapeError) as info:
        torchx.build(L.Sequential(L.Conv2d(8, 3)), (None, 32, 32))
    message = str(info.value)
    assert "got (None, 32, 32) (3-d)" in message
    assert "unsqueeze" not in message and "61" not in message


def test_a_changed_input_size_names_the_layer_in_every_container() -> None:
    model = L.Sequential(L.Linear(4), L.ReLU(), L.Sequential(L.Linear(3), L.Linear(2)))
    model(torch.zeros(2, 5))
    model[2][0] = L.Linear(3)  # a fresh layer: builds for what it gets
    with pytest.raises(
        ShapeError, match=r"^Sequential\[0\] Linear: got input \(2, 6\).*in_features=6 \(built with 5\)"
    ):
        model(torch.zeros(2, 6))
    inner = L.Sequential(L.Linear(4), L.Sequential(L.Linear(3)))
    inner(torch.zeros(2, 5))
    inner[1][0] = torchx.build(L.Linear(3), (2, 7))
    with pytest.raises(ShapeError, match=r"^Sequential\[1\] Sequential\[0\] Linear: got input \(2, 4\)"):
        inner(torch.zeros(2, 5))


def test_a_multihead_attention_whose_layout_changes_warns_only_when_its_pending_parameters_are_held() -> None:
    from torchx.core import BuildWarning

    q, kv = torch.zeros(5, 2, 8), torch.zeros(6, 2, 4)
    quiet = L.MultiheadAttention(2)
    quiet(q, kv, kv)  # nothing held the pending in_proj_weight: no warning (warnings are errors here)
    held = L.MultiheadAttention(2)
    optimizer = torch.optim.SGD(held.parameters(), lr=0.1)
    with pytest.warns(
        BuildWarning, match=r"in_proj_weight it showed before the build.*pass embed_dim=8, kdim=4, vdim=4"
    ):
        held(q, kv, kv)
    assert is_lazy(optimizer.param_groups[0]["params"][0])  # the orphan: the warning was right to speak
    fixed = L.MultiheadAttention(2, kdim=4, vdim=4)
    assert "k_proj_weight" in dict(fixed.named_parameters())


def test_every_error_the_readme_names_is_importable_from_torchx() -> None:
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    names = set(re.findall(r"`(?:torchx\.)?([A-Z][A-Za-z]+(?:Error|Warning))`", readme))
    assert {"ShapeError", "DtypeError", "ArgumentError", "NotBuiltError", "SpecError"} <= names
    for name in names:
        assert isinstance(getattr(torchx, name), type), name


@pytest.mark.parametrize(
    ("make", "argument"),
    [
        (lambda: L.Conv2d(4, kernel_size=[3]), "kernel_size"),
        (lambda: L.Conv3d(4, kernel_size=3, stride=(1, 2)), "stride"),
        (lambda: L.ConvTranspose2d(4, kernel_size=2, output_padding=(0, 0, 1)), "output_padding"),
    ],
    ids=["list-of-one-kernel", "stride-of-two-dims-for-3d", "output-padding-of-three-dims-for-2d"],
)
def test_a_size_list_of_another_length_than_the_spatial_dims_is_refused(
    make: Callable[[], object], argument: str
) -> None:
    with pytest.raises(ArgumentError, match=rf"{argument} must be one int or \d ints") as error:
        make()
    assert error.value.argument == argument
