"""A layer never reads a constructor argument off a dynamic (None) dim, and the
two probes of a dynamic dim lie far enough apart that strided lengths differ."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest
import torch
from torch import nn
from toy_layers import Dense, Norm

import torchx
from torchx.core import ShapeError
from torchx.core._shapes import DYNAMIC_PROBES
from torchx.plugin import Probes, all_or_nothing, build_target, closed_form_output, unbuilt_layers


def _new_meta(shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device="meta")


def _record(layer: nn.Module, shape: tuple[int | None, ...]) -> list[torch.Tensor]:
    """What a graph plugin does for a layer called on a symbolic input: the first
    probe builds it, the second asks its formula (see ``torchx.plugin``)."""
    probes = Probes.for_inputs([shape])
    metas = probes.meta_inputs([shape])
    with all_or_nothing(layer), build_target(torch.device("cpu"), None), torch.no_grad():
        return probes.run(
            lambda probe: layer(*metas[probe]),
            second=lambda probe: closed_form_output(layer, metas[probe], _new_meta),
        )


@pytest.mark.parametrize(
    ("layer", "shape", "message"),
    [
        (Dense(4), (None, None), "Dense: in_features would come from the last dim of its input (None, None)"),
        (Norm(), (None, None, 7), "Norm: num_features would come from dim 1 of its input (None, None, 7)"),
    ],
    ids=["formula", "same-shape"],
)
def test_a_graph_plugin_cannot_build_a_layer_for_a_probe_size(
    layer: nn.Module, shape: tuple[int | None, ...], message: str
) -> None:
    """Today the first probe built ``nn.Linear(61, 4)`` and the second probe's
    formula answered without looking at the input: a silent wrong build."""
    with pytest.raises(ShapeError, match=re.escape(message)) as info:
        _record(layer, shape)
    assert "fix: make that dim static: give the model input a size there instead of None" in str(info.value)
    assert unbuilt_layers(layer) == [layer]


def test_a_built_layer_refuses_an_input_its_formula_would_answer_for() -> None:
    layer = Dense(4)
    layer(torch.zeros(2, 8))
    with pytest.raises(
        ShapeError, match=re.escape("got input (2, 9), which needs in_features=9 (built with 8)")
    ):
        closed_form_output(layer, (_new_meta((2, 9), torch.float32),), _new_meta)
    assert closed_form_output(layer, (_new_meta((2, 8), torch.float32),), _new_meta).shape == (2, 4)


def test_a_static_dim_equal_to_a_probe_size_builds() -> None:
    for size in DYNAMIC_PROBES:
        layer = Dense(4)
        assert [tuple(out.shape) for out in _record(layer, (None, size))] == [
            (probe, 4) for probe in DYNAMIC_PROBES
        ]
        assert layer.in_features == size


@pytest.mark.parametrize(
    ("module", "shape", "expected"),
    [
        (nn.Conv1d(4, 4, kernel_size=10, stride=10), (None, 4, None), (None, 4, None)),
        (nn.AvgPool1d(12), (None, 2, None), (None, 2, None)),
        (nn.Sequential(nn.MaxPool1d(4), nn.MaxPool1d(4)), (None, 2, None), (None, 2, None)),
        (nn.MaxPool2d(20), (None, 1, None, 40), (None, 1, None, 2)),
    ],
    ids=["conv-stride-10", "avgpool-12", "two-pools-of-4", "maxpool-20"],
)
def test_a_strided_length_of_a_dynamic_dim_is_dynamic(
    module: nn.Module, shape: tuple[int | None, ...], expected: tuple[int | None, ...]
) -> None:
    """Today the probes were 61 and 67: ten windows of stride 10 gave 6 at both,
    so the length was recorded as a static 6."""
    assert torchx.infer_shapes(module, shape) == expected
