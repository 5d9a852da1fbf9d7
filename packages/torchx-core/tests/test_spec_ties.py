"""A spec records layers, not ties: a model holding one tensor under two names is refused, never silently untied."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from toy_layers import Chain, Dense

import torchx
from torchx.core import SpecError, from_spec


def test_tied_weights_are_refused_naming_both_places(toy_layers: None) -> None:
    model = torchx.build(Chain(Dense(4, bias=False), Dense(4, bias=False)), (None, 4))
    model.get_submodule("1").weight = model.get_submodule("0").weight
    with pytest.raises(SpecError, match=r"0\.weight and 1\.weight are one tensor") as error:
        torchx.to_spec(model)
    assert "tie again after reading it (set 1.weight to 0.weight)" in str(error.value)


def test_one_layer_held_in_two_places_is_refused(toy_layers: None) -> None:
    shared = Dense(4)
    with pytest.raises(SpecError, match="one layer held in two places"):
        torchx.to_spec(Chain(shared, shared))


def test_a_save_of_a_tied_model_is_refused_before_writing(toy_layers: None, tmp_path: Path) -> None:
    model = torchx.build(Chain(Dense(4, bias=False), Dense(4, bias=False)), (None, 4))
    model.get_submodule("1").weight = model.get_submodule("0").weight
    path = f"{tmp_path}/tied.yaml"
    with pytest.raises(SpecError):
        torchx.save_spec(model, path)
    assert not os.path.exists(path)


def test_untied_models_are_written_as_before(toy_layers: None) -> None:
    model = torchx.build(Chain(Dense(4), Dense(4)), (None, 4))
    assert from_spec(torchx.to_spec(model)).get_submodule("1").arguments["out_features"] == 4
