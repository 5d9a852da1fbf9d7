"""What tools see of a model before its build: parameter ranks, and graph drawers."""

from __future__ import annotations

from typing import ClassVar

import pytest
import torch
from layer_cases import CASES, Case
from layers_seed_cnn import native_seed_cnn, seed_cnn
from torch import nn

import torchx
import torchx.layers as L
from torchx.plugin import FromInput, LeafLayer


def decay_split(module: nn.Module) -> tuple[list[str], list[str]]:
    named = list(module.named_parameters())
    return [n for n, p in named if p.ndim >= 2], [n for n, p in named if p.ndim < 2]


def test_the_seed_cnns_adamw_split_before_the_first_batch_is_the_native_one() -> None:
    unbuilt = seed_cnn()
    decay, no_decay = decay_split(unbuilt)
    assert (len(decay), len(no_decay)) == (5, 9)
    assert (decay, no_decay) == decay_split(native_seed_cnn())
    groups = [{"params": [dict(unbuilt.named_parameters())[n] for n in decay], "weight_decay": 0.05}]
    optimizer = torch.optim.AdamW(groups)
    torchx.build(unbuilt, (None, 3, 32, 32))
    assert [p.ndim for p in optimizer.param_groups[0]["params"]] == [4, 4, 4, 2, 2]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_every_layers_pending_tensors_have_the_native_ranks(case: Case) -> None:
    unbuilt = case.layer()
    named = [*unbuilt.named_parameters(), *unbuilt.named_buffers()]
    native = case.native()
    expected = {**dict(native.named_parameters()), **dict(native.named_buffers())}
    assert {name: (t.ndim, t.dim()) for name, t in named} == {
        name: (t.ndim, t.dim()) for name, t in expected.items() if name in dict(named)
    }


def test_torchview_draws_an_unbuilt_model_as_it_draws_the_native_one() -> None:
    torchview = pytest.importorskip(
        "torchview", reason="needs torchview: pip install torchview (in the test extra)"
    )

    def drawn(model: nn.Module) -> str:
        source: str = torchview.draw_graph(model, input_size=(2, 3, 8, 8)).visual_graph.source
        return source

    unbuilt = L.Sequential(L.Conv2d(4, 3), L.BatchNorm2d())
    built = torchx.build(L.Sequential(L.Conv2d(4, 3), L.BatchNorm2d()), (2, 3, 8, 8))
    assert drawn(unbuilt) == drawn(built)
    assert isinstance(unbuilt[0], nn.Conv2d) and isinstance(unbuilt[1], nn.BatchNorm2d)
    assert "BatchNorm2d" in drawn(unbuilt) and "(2, 4, 6, 6)" in drawn(unbuilt)


def test_a_layer_built_at_its_first_call_never_measures_its_layout_on_meta(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The layout (the pending parameters' names and ranks) is measured on meta
    when something needs it; a layer called right after its construction (a
    Functional, a Sequential's first forward) builds once, for real. A layer
    whose native module may hold tensors in submodules (a MultiheadAttention's
    out_proj; a class outside torch.nn's, once per arguments other than sizes)
    is measured at construction, to hold their stand-ins from the start; and a
    layer whose constructor takes no device (an activation), other than
    torch's own, is measured once per set of arguments, to know whether it
    allocates anything."""
    from torchx.core import _leaf

    x = torch.zeros(2, 3, 16, 16)
    L.Sequential(L.Conv2d(4, 3), L.BatchNorm2d(), L.ReLU(), L.Flatten(), L.Linear(5))(x)  # each class once
    measured: list[type[nn.Module]] = []
    measure = _leaf.measure_layout
    monkeypatch.setattr(
        _leaf, "measure_layout", lambda native, *rest: measured.append(native) or measure(native, *rest)
    )
    for width in (7, 9, 11):  # arguments not seen before
        model = L.Sequential(L.Conv2d(width, 3, stride=2), L.BatchNorm2d(momentum=0.2), L.ReLU())
        model(x)
        head = L.Linear(width + 1)
        head(torch.zeros(2, width))
    assert measured == []
    for _ in range(2):
        L.ReLU(inplace=True)(x.clone())  # torch's own activation: known to hold nothing
    assert measured == []
    for _ in range(2):
        _Halved()(x)  # a native of another package, without a device argument: measured once
    assert measured == [_Half]
    unbuilt = L.Linear(13)
    assert [name for name, _ in unbuilt.named_parameters()] == ["weight", "bias"]  # measured now
    assert measured == [_Half, nn.Linear]
    for _ in range(2):  # a class whose tensors sit in a submodule holds its stand-in from the start
        attention = L.MultiheadAttention(2, name="attention")
        assert [name for name, _ in attention.named_children()] == ["out_proj"]


class _Half(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / 2


class _Halved(LeafLayer):
    native_class = _Half
    same_shape = True

    def __init__(self) -> None:
        super().__init__()


class _GatedLinear(nn.Linear):
    """A linear layer with, for ``gated=True``, a gate in a submodule."""

    def __init__(
        self, in_features: int, out_features: int, gated: bool = False, device: object = None
    ) -> None:
        super().__init__(in_features, out_features, device=device)  # type: ignore[arg-type]
        self.gate = nn.Linear(out_features, out_features, device=device) if gated else None  # type: ignore[arg-type]


class _Gated(LeafLayer):
    native_class = _GatedLinear
    inferred_arguments: ClassVar = {"in_features": FromInput(dim=-1)}

    def __init__(self, out_features: int, *, gated: bool = False, in_features: int | None = None) -> None:
        super().__init__(out_features=out_features, gated=gated, in_features=in_features)


def test_a_layer_whose_arguments_give_it_a_submodule_shows_it_before_its_build() -> None:
    """Whether a native module holds tensors in submodules may depend on an
    argument other than a size: a gated layer after an ungated one of its class
    shows its gate to a walk of its modules before anything reads its
    parameters, so an optimizer made from that walk trains the gate."""
    _Gated(2)  # the class's first layer: no gate
    gated = _Gated(4, gated=True)
    modules = list(gated.named_modules())
    assert [name for name, _ in modules] == ["", "gate"]
    optimizer = torch.optim.SGD(
        [p for _, module in modules for p in module.parameters(recurse=False)], lr=0.1
    )
    gated(torch.randn(2, 3))
    trained = {id(p) for p in optimizer.param_groups[0]["params"]}
    assert [name for name, p in gated.named_parameters() if id(p) in trained] == [
        "weight",
        "bias",
        "gate.weight",
        "gate.bias",
    ]
