"""Every layer's signature against its torch class's, in the installed torch.

A layer takes every keyword its torch class takes, with the same default; the
arguments it infers default to ``None`` (given, they are checked against the
input). Positionally it takes only what cannot be misread: the required
arguments it does not infer, or, for a layer that infers nothing, exactly
torch's positional arguments. The deliberate differences are listed here.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

import pytest
from torch import nn

import torchx.layers as L
from torchx.core import ArgumentError, Layer
from torchx.core._arguments import hint_of

DELIBERATE = {
    ("Embedding", "_weight"): "private: a pretrained table is loaded with load_state_dict",
    ("Embedding", "_freeze"): "private: freeze with requires_grad_(False)",
    ("EmbeddingBag", "_weight"): "private: a pretrained table is loaded with load_state_dict",
    ("FractionalMaxPool2d", "_random_samples"): "private to torch's tests",
    ("FractionalMaxPool3d", "_random_samples"): "private to torch's tests",
    ("Hardtanh", "min_value"): "deprecated in torch for min_val",
    ("Hardtanh", "max_value"): "deprecated in torch for max_val",
    ("TransformerEncoderLayer", "activation"): 'defaults to "relu" (a spec holds data, not functions)',
    ("TransformerDecoderLayer", "activation"): 'defaults to "relu" (a spec holds data, not functions)',
}
"""(layer, torch parameter): why the layer's parameter differs or is absent."""

ADDED = {"name": "every layer's optional name (a keyword): its path in a Functional, its key in a Sequential"}
"""What every layer takes that torch's classes do not, and why."""


def torch_layers() -> list[type[Layer]]:
    found = []
    for name in sorted(L.__all__):
        cls = getattr(L, name)
        native = (
            getattr(cls, "native_class", None) if isinstance(cls, type) and issubclass(cls, Layer) else None
        )
        if native is not None and native.__module__.startswith("torch.nn"):
            found.append(cls)
    return found


def parameters(function: object) -> dict[str, inspect.Parameter]:
    listed = list(inspect.signature(function).parameters.values())[1:]  # type: ignore[arg-type]
    return {p.name: p for p in listed if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


@pytest.mark.parametrize("cls", torch_layers(), ids=lambda cls: cls.__name__)
def test_the_signature_matches_torch_but_for_the_listed_differences(cls: type[Layer]) -> None:
    native = cls.native_class
    assert native is not None
    mine, theirs = parameters(cls.__init__), parameters(native.__init__)
    for name, parameter in theirs.items():
        if (cls.__name__, name) in DELIBERATE:
            continue
        assert name in mine, f"{cls.__name__} lacks torch's {name}"
        if name in cls.inferable_arguments:
            assert mine[name].default is None and mine[name].kind is mine[name].KEYWORD_ONLY, name
        else:
            assert mine[name].default == parameter.default, f"{cls.__name__}.{name}: {mine[name].default!r}"
    newer = set(getattr(cls, "newer_native_arguments", ()))  # taken by newer torch releases only
    extra = set(mine) - set(theirs) - set(ADDED) - newer
    assert not extra, f"{cls.__name__} takes {extra}, which torch's {native.__name__} does not"


def test_arguments_of_newer_torch_releases_are_refused_on_older_ones_unless_at_their_default() -> None:
    layer = L.BatchNorm2d(bias=True)  # the default, which every torch does
    assert "bias" not in layer.arguments
    if "bias" in parameters(nn.BatchNorm2d.__init__):  # torch 2.12 and later
        assert L.BatchNorm2d(bias=False).arguments["bias"] is False
        return
    with pytest.raises(
        ArgumentError, match=r"^BatchNorm2d: bias=False needs a newer torch: .*\n  fix: leave bias"
    ):
        L.BatchNorm2d(bias=False)


@pytest.mark.parametrize("cls", torch_layers(), ids=lambda cls: cls.__name__)
def test_positional_arguments_cannot_be_misread(cls: type[Layer]) -> None:
    assert cls.native_class is not None
    mine = [p for p in parameters(cls.__init__).values() if p.kind is p.POSITIONAL_OR_KEYWORD]
    theirs = [p for p in parameters(cls.native_class.__init__).values() if p.kind is p.POSITIONAL_OR_KEYWORD]
    if cls.inferable_arguments:
        assert all(p.default is p.empty and p.name not in cls.inferable_arguments for p in mine), mine
    else:
        assert [p.name for p in mine] == [p.name for p in theirs[: len(mine)]]


def test_the_list_of_differences_is_current() -> None:
    names = {cls.__name__: cls for cls in torch_layers()}
    for layer, parameter in DELIBERATE:
        native = names[layer].native_class
        assert parameter in parameters(native.__init__), f"torch's {layer} no longer has {parameter}"


@pytest.mark.parametrize(
    ("layer", "native"),
    [
        pytest.param(
            lambda: L.BatchNorm2d(bias=False), lambda: nn.BatchNorm2d(4, bias=False), id="BatchNorm2d"
        ),
        pytest.param(
            lambda: L.InstanceNorm2d(affine=True, bias=False),
            lambda: nn.InstanceNorm2d(4, affine=True, bias=False),
            id="InstanceNorm2d",
        ),
        pytest.param(
            lambda: L.GroupNorm(2, bias=False), lambda: nn.GroupNorm(2, 4, bias=False), id="GroupNorm"
        ),
    ],
)
def test_the_keyword_only_bias_of_torchs_norms_is_offered(layer: object, native: object) -> None:
    if "bias" not in parameters(nn.BatchNorm2d.__init__):
        pytest.skip("this torch has no bias argument on its norms")
    unbuilt, expected = layer(), native()  # type: ignore[operator]
    assert [name for name, _ in unbuilt.named_parameters()] == ["weight"]
    unbuilt.load_state_dict(expected.state_dict())
    assert type(unbuilt) is type(expected) and unbuilt.bias is None


def every_layer() -> list[object]:
    """Each layer class torchx.layers exports, by the name it is exported under
    (an alias such as View is a name of its own)."""
    return [
        pytest.param(getattr(L, name), id=name)
        for name in sorted(L.__all__)
        if isinstance(getattr(L, name), type) and issubclass(getattr(L, name), Layer) and name != "Layer"
    ]


@pytest.mark.parametrize("cls", every_layer())
def test_every_layer_takes_a_keyword_only_name(cls: type[Layer]) -> None:
    parameter = inspect.signature(cls.__init__).parameters["name"]
    assert parameter.kind is parameter.KEYWORD_ONLY and parameter.default is None


@pytest.mark.parametrize("cls", torch_layers(), ids=lambda cls: cls.__name__)
def test_the_checked_hints_are_the_annotations_as_typing_reads_them(cls: type[Layer]) -> None:
    """The hints arguments are checked against (each evaluated when first
    read) are ``typing.get_type_hints`` of the layer's ``__init__``."""
    expected = typing.get_type_hints(cls.__init__, include_extras=True)
    assert {name: hint_of(cls, name) for name in expected} == expected


def test_a_construction_evaluates_the_annotations_of_the_arguments_given_only() -> None:
    namespace: dict[str, object] = {}
    exec(  # a layer whose annotation of `scale` names nothing: evaluating it fails
        "from __future__ import annotations\n"
        "import torchx.core, torch.nn\n"
        "class Scaled(torchx.core.LeafLayer):\n"
        "    native_class = torch.nn.Identity\n"
        "    def __init__(self, width: int = 1, scale: Undefined = None, *, name: str | None = None):\n"
        "        super().__init__(width=width, scale=scale, name=name)\n",
        namespace,
    )
    layer_class: Any = namespace["Scaled"]
    layer_class(width=3)
    with pytest.raises(ArgumentError, match="width must be an int"):
        layer_class(width="3")
    with pytest.raises(NameError, match="Undefined"):
        layer_class(scale=2.0)
