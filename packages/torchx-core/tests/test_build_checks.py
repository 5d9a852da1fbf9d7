"""A build never ignores what was asked: sizes of built layers, the device and dtype, pending state."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn.parameter import is_lazy
from toy_layers import Attention, Chain, Dense, Norm

import torchx
from torchx.core import ShapeError
from torchx.core._leaf import formula_calls


def unbuilt() -> Chain:
    return Chain(Dense(6), Norm(), Dense(3))


def is_unbuilt(module: nn.Module) -> bool:
    return all(is_lazy(t) for t in [*module.parameters(), *module.buffers()])


# -- loading another unbuilt model's state ------------------------------------------


@pytest.mark.parametrize(
    "make", [lambda: Dense(5), unbuilt, lambda: Attention(2)], ids=["dense", "chain", "attention"]
)
def test_loading_pending_tensors_leaves_the_model_unbuilt(make: type[nn.Module]) -> None:
    model = make()
    result = model.load_state_dict(make().state_dict())
    assert (result.missing_keys, result.unexpected_keys) == ([], [])
    assert is_unbuilt(model)


def test_torchs_lazy_modules_load_the_same_way() -> None:
    lazy = nn.LazyLinear(5)
    result = lazy.load_state_dict(nn.LazyLinear(5).state_dict())
    assert (result.missing_keys, result.unexpected_keys) == ([], [])
    assert is_unbuilt(lazy)


def test_a_model_loaded_with_pending_tensors_builds_later_like_any_other() -> None:
    model = unbuilt()
    model.load_state_dict(unbuilt().state_dict())
    torch.manual_seed(0)
    torchx.build(model, (None, 4))
    torch.manual_seed(0)
    reference = torchx.build(unbuilt(), (None, 4))
    assert all(
        torch.equal(a, b)
        for a, b in zip(model.state_dict().values(), reference.state_dict().values(), strict=True)
    )


def test_built_entries_build_their_layers_and_pending_ones_leave_theirs_unbuilt() -> None:
    source = unbuilt()
    source.get_submodule("0")(torch.randn(2, 4))  # only the first layer is built
    model = unbuilt()
    model.load_state_dict(source.state_dict())
    assert type(model.get_submodule("0")) is nn.Linear and torch.equal(
        model.get_submodule("0").weight, source.get_submodule("0").weight
    )
    assert is_unbuilt(model.get_submodule("1")) and is_unbuilt(model.get_submodule("2"))


def test_unexpected_keys_are_still_reported_beside_pending_tensors() -> None:
    state = {**Dense(5).state_dict(), "extra": torch.zeros(1)}
    with pytest.raises(RuntimeError, match=r"Unexpected key.*extra"):
        Dense(5).load_state_dict(state)


# -- building a built model -----------------------------------------------------------


def test_building_a_built_layer_for_other_sizes_names_both() -> None:
    model = torchx.build(Dense(3), (None, 8))
    weight = model.weight.clone()
    with pytest.raises(ShapeError, match=r"\(None, 9\).*in_features=9 \(built with 8\)"):
        torchx.build(model, (None, 9))
    with pytest.raises(ShapeError, match=r"in_features=9 \(built with 8\)"):
        torchx.infer_shapes(model, (2, 9))
    assert torch.equal(model.weight, weight)


def test_a_model_that_does_not_explain_keeps_torchs_error_with_a_note() -> None:
    with pytest.raises(RuntimeError) as raised:
        torchx.build(nn.Sequential(nn.Linear(8, 4)), (None, 9))
    assert not isinstance(raised.value, ShapeError)
    assert "torchx.build: built" in raised.value.__notes__[-1] and "(None, 9)" in raised.value.__notes__[-1]


def test_a_built_layer_inside_a_model_names_the_size_it_was_built_with() -> None:
    model = torchx.build(unbuilt(), (None, 8))
    with pytest.raises(
        ShapeError, match=r"Dense: got input \(None, 9\).*in_features=9 \(built with 8\)"
    ) as raised:
        torchx.build(model, (None, 9))
    assert raised.value.source is model.get_submodule("0")  # the model's own layer, not the meta copy's


def test_building_a_built_model_for_its_own_sizes_returns_it() -> None:
    model = torchx.build(unbuilt(), (None, 8))
    assert torchx.build(model, (None, 8)) is model
    assert (
        torchx.build(model, torch.zeros(5, 8, dtype=torch.float64)) is model
    )  # shapes are checked, not dtypes
    assert torchx.infer_shapes(model, (None, 8)) == (None, 3)


def test_a_built_model_with_an_op_lacking_a_meta_kernel_is_not_checked() -> None:
    class NoMeta(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise NotImplementedError("no meta kernel")

    model = NoMeta()
    assert torchx.build(model, (2, 3)) is model


# -- the device and dtype asked for ----------------------------------------------------------


def test_a_built_model_goes_to_the_device_and_dtype_asked_for() -> None:
    model = torchx.build(unbuilt(), (None, 8))
    torchx.build(model, (None, 8), dtype=torch.float64)
    assert {t.dtype for t in model.parameters()} == {torch.float64}
    assert model.get_submodule("1").num_batches_tracked.dtype == torch.int64
    torchx.build(model, (None, 8), device="meta")
    assert {t.device.type for t in [*model.parameters(), *model.buffers()]} == {"meta"}


def test_a_partly_built_model_ends_wholly_on_the_device_asked_for() -> None:
    first = torchx.build(Dense(6), (None, 8))
    model = torchx.build(Chain(first, Dense(3)), (None, 8), device="meta", dtype=torch.float64)
    assert {(t.device.type, t.dtype) for t in model.parameters()} == {("meta", torch.float64)}


def test_nothing_asked_nothing_moved() -> None:
    model = torchx.build(unbuilt(), (None, 8))
    weight = model.get_submodule("0").weight
    torchx.build(model, torch.zeros(2, 8, device="meta"))  # the input's device only places new parameters
    assert model.get_submodule("0").weight is weight and weight.device.type == "cpu"


# -- built layers answer a build's meta runs from their formulas -------------------------------


def test_building_again_answers_built_layers_from_their_formulas(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch's meta kernels run in Python (the first imports its compiler):
    a built layer with a formula is not run on meta, the one without is."""
    model = torchx.build(unbuilt(), (None, 8))
    ran: list[str] = []
    for native in (nn.Linear, nn.BatchNorm1d):
        monkeypatch.setattr(
            native,
            "forward",
            lambda self, x, forward=native.forward: ran.append(type(self).__name__) or forward(self, x),
        )
    assert torchx.build(model, (None, 8)) is model
    assert "Linear" not in ran and "BatchNorm1d" in ran  # Dense has a formula, Norm none
    assert all("_compiled_call_impl" not in module.__dict__ for module in model.modules())
    assert model(torch.randn(2, 8)).shape == (2, 3)


def test_formula_calls_answer_meta_tensors_only_and_restore_what_they_replace() -> None:
    layer = torchx.build(Dense(3), (None, 4))
    earlier = layer.__dict__["_compiled_call_impl"] = layer._call_impl  # as torch.compile or a graph sets one
    with formula_calls([layer]):
        assert layer(torch.empty(5, 4, device="meta")).shape == (5, 3)
        x = torch.randn(2, 4)
        assert torch.equal(layer(x), nn.functional.linear(x, layer.weight, layer.bias))
        with pytest.raises(ShapeError, match=r"in_features=5 \(built with 4\)"):
            layer(torch.empty(2, 5, device="meta"))
    assert layer.__dict__["_compiled_call_impl"] is earlier
