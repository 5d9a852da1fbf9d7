"""Layers of today's architectures (issue 27, section 4): ``DropPath``,
``LayerNorm2d``, ``Parameter``'s constant init and its integer anchors.

In graphs (on placeholders), and through JSON and YAML spec files:
torchx-functional's ``test_modern_layer_graphs.py``. Specs and state of each
layer alone: the cases in ``layer_cases.py``."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torchx
import torchx.layers as L
from torchx.core import ArgumentError, ShapeError, SpecError, from_spec


def timm_drop_path(x: torch.Tensor, p: float, training: bool, scale_by_keep: bool = True) -> torch.Tensor:
    """timm's ``drop_path``, written from its documented semantics."""
    if p == 0.0 or not training:
        return x
    keep = 1 - p
    mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)
    if keep > 0.0 and scale_by_keep:
        mask.div_(keep)
    return x * mask


def layer_norm_2d(
    x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, eps: float
) -> torch.Tensor:
    """ConvNeXt's norm as written with two permutes."""
    return F.layer_norm(x.permute(0, 2, 3, 1), (x.shape[1],), weight, bias, eps).permute(0, 3, 1, 2)


# -- DropPath -----------------------------------------------------------------


@pytest.mark.parametrize("scale_by_keep", [True, False], ids=["scale_by_keep", "no_scale"])
@pytest.mark.parametrize("shape", [(16, 5), (16, 3, 4, 4)], ids=["2d", "4d"])
def test_drop_path_draws_as_timm_does(scale_by_keep: bool, shape: tuple[int, ...]) -> None:
    x = torch.randn(shape)
    layer = L.DropPath(0.4, scale_by_keep=scale_by_keep)
    torch.manual_seed(0)
    got = layer(x)
    torch.manual_seed(0)
    assert torch.equal(got, timm_drop_path(x, 0.4, True, scale_by_keep))
    kept = got.flatten(1).ne(0).all(1)
    assert 0 < int(kept.sum()) < shape[0]  # whole samples dropped, others kept
    assert got.flatten(1)[~kept].eq(0).all()
    scale = 1 / 0.6 if scale_by_keep else 1.0
    assert torch.allclose(got[kept], x[kept] * scale)


def test_drop_path_equals_timm_module_when_installed() -> None:
    timm_layers = pytest.importorskip("timm.layers")
    x = torch.randn(32, 4, 3, 3)
    ours, theirs = L.DropPath(0.3), timm_layers.DropPath(0.3)
    for mode in ("train", "eval"):
        getattr(theirs, mode)()
        getattr(ours, mode)()
        torch.manual_seed(1)
        expected = theirs(x)
        torch.manual_seed(1)
        assert torch.equal(ours(x), expected), mode


def test_drop_path_passes_the_input_through_in_eval_and_at_zero() -> None:
    x = torch.randn(8, 3)
    layer = L.DropPath(0.5)
    layer(x)
    assert layer.eval()(x) is x
    assert L.DropPath()(x) is x


@pytest.mark.parametrize("p", [1.0, -0.1, 1.5], ids=["one", "negative", "over_one"])
def test_drop_path_refuses_p_outside_zero_one(p: float) -> None:
    with pytest.raises(ArgumentError, match=r"DropPath: p must be a number in \[0.0, 1.0\)"):
        L.DropPath(p)
    with pytest.raises(SpecError, match=r"\$\.args\.p: expected a number in \[0.0, 1.0\)"):
        from_spec({"type": "DropPath", "args": {"p": p}})


def test_drop_path_in_a_sequential_trains_as_the_reference_and_scripts() -> None:
    x = torch.randn(12, 4, 5, 5)
    model = torchx.build(L.Sequential(L.Conv2d(4, 3, padding=1), L.DropPath(0.5)), x)
    torch.manual_seed(2)
    got = model(x)
    torch.manual_seed(2)
    assert torch.equal(got, timm_drop_path(model[0](x), 0.5, True))
    scripted = torch.jit.script(model)
    torch.manual_seed(3)
    expected = model(x)
    torch.manual_seed(3)
    assert torch.equal(scripted(x), expected)


# -- LayerNorm2d --------------------------------------------------------------


def test_layer_norm_2d_normalises_channels_with_timm_state() -> None:
    x = torch.randn(2, 5, 4, 3)
    layer = L.LayerNorm2d()
    with torch.no_grad():
        out = layer(x)
        layer.weight.normal_()
        layer.bias.normal_()
    assert {key: tuple(value.shape) for key, value in layer.state_dict().items()} == {
        "weight": (5,),
        "bias": (5,),
    }
    assert isinstance(layer, torch.nn.LayerNorm) and layer.eps == 1e-6
    assert torch.equal(out, layer_norm_2d(x, torch.ones(5), torch.zeros(5), 1e-6))
    assert torch.equal(layer(x), layer_norm_2d(x, layer.weight, layer.bias, 1e-6))
    assert torch.allclose(out.mean(1), torch.zeros(2, 4, 3), atol=1e-6)


def test_layer_norm_is_torch_s_and_its_docs_point_to_layer_norm_2d() -> None:
    # today: L.LayerNorm() on NCHW normalises over W (weight (56,)), as torch's does
    x = torch.randn(2, 3, 4, 7)
    assert L.LayerNorm()(x).shape == x.shape
    norm = L.LayerNorm()
    norm(x)
    assert norm.weight.shape == (7,)
    assert ":class:`LayerNorm2d`" in (L.LayerNorm.__doc__ or "")


@pytest.mark.parametrize(
    "arguments",
    [{"eps": 1e-5}, {"elementwise_affine": False}, {"bias": False}],
    ids=["eps", "no_affine", "no_bias"],
)
def test_layer_norm_2d_arguments_are_layer_norm_s(arguments: dict[str, object]) -> None:
    x = torch.randn(2, 4, 3, 3)
    layer = L.LayerNorm2d(**arguments)  # type: ignore[arg-type]
    out = layer(x)
    assert torch.equal(out, layer_norm_2d(x, layer.weight, layer.bias, layer.eps))
    assert layer.eps == arguments.get("eps", 1e-6)
    assert layer.elementwise_affine is arguments.get("elementwise_affine", True)


def test_layer_norm_2d_loads_a_timm_state_dict_before_its_input() -> None:
    layer = L.LayerNorm2d()
    state = {"weight": torch.randn(6), "bias": torch.randn(6)}
    layer.load_state_dict(state)
    assert layer.normalized_shape == (6,)
    x = torch.randn(1, 6, 2, 2)
    assert torch.equal(layer(x), layer_norm_2d(x, state["weight"], state["bias"], 1e-6))


def test_layer_norm_2d_refuses_inputs_that_are_not_feature_maps() -> None:
    with pytest.raises(ShapeError, match=r"LayerNorm2d: expected input of shape \(N, C, H, W\)"):
        L.LayerNorm2d()(torch.randn(2, 3, 4))
    with pytest.raises(ShapeError, match="num_channels=5 was given, but the input"):
        L.LayerNorm2d(num_channels=5)(torch.randn(2, 3, 4, 4))


def test_layer_norm_2d_scripts() -> None:
    x = torch.randn(2, 4, 3, 3)
    layer = torchx.build(L.Sequential(L.LayerNorm2d()), x)
    assert torch.equal(torch.jit.script(layer)(x), layer(x))


# -- Parameter ----------------------------------------------------------------


def test_parameter_constant_init_fills_the_value() -> None:
    # today: TypeError, Parameter.__init__() got an unexpected keyword argument 'value'
    layer = L.Parameter((4, 1, 1), init="constant", value=1e-6)
    out = layer(torch.randn(2, 4, 3, 3))
    assert torch.equal(out, torch.full((4, 1, 1), 1e-6))
    assert "value=1e-06" in repr(layer)
    assert (
        L.Layer.from_spec(L.Parameter((2,), init="constant", value=0.5).to_spec()).arguments["value"] == 0.5
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"init": "constant"}, "init='constant' needs the value"),
        ({"value": 2.0}, "value=2.0 is used only by init='constant', not init='zeros'"),
        ({"init": "normal", "value": 2.0}, "not init='normal'"),
    ],
    ids=["constant_without_value", "value_without_init", "value_with_normal"],
)
def test_parameter_value_goes_with_constant_init_only(arguments: dict[str, object], message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        L.Parameter((2,), **arguments)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match=r"\$\.args\.value: .*" + message):
        from_spec({"type": "Parameter", "args": {"shape": [2], **arguments}})


@pytest.mark.parametrize("where", ["alone", "sequential"], ids=["alone", "sequential"])
def test_parameter_anchored_on_token_ids(where: str) -> None:
    # today: DtypeError "its weights are floating-point, but its input is torch.int64"
    ids = torch.zeros(3, 7, dtype=torch.long)
    layer = L.Parameter((1, 1, 4), init="ones")
    model = layer if where == "alone" else L.Sequential(layer)
    out = model(ids)
    assert out.shape == (3, 1, 4) and out.dtype == torch.get_default_dtype()


def test_parameter_anchored_on_ids_takes_the_default_dtype() -> None:
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        layer = L.Parameter((1, 2))
        assert layer(torch.zeros(3, dtype=torch.int32)).dtype == torch.float64
    finally:
        torch.set_default_dtype(previous)
