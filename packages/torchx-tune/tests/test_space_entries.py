"""The layer entries of a space are read when it is, as a spec reader reads them: every
option of every choice and every block of every repeat, sampled or not."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from torchx.core import SpecError, from_spec
from torchx.tune import load_space, parse_space

RELU = {"type": "ReLU"}


def linear(out: Any, **args: Any) -> dict[str, Any]:
    return {"type": "Linear", "args": {"out_features": out, **args}}


def sequential(*layers: Any) -> dict[str, Any]:
    return {"type": "Sequential", "layers": list(layers)}


def refusal(data: Any) -> SpecError:
    with pytest.raises(SpecError) as info:
        parse_space(data)
    return info.value


# -- what a spec reader says --------------------------------------------------------

PLAIN = {
    "unknown-type": ({"type": "Lineaar"}, ".type", r"unknown layer type 'Lineaar'; did you mean Linear"),
    "unknown-type-no-close-name": ({"type": "NoSuchLayer"}, ".type", r"unknown layer type 'NoSuchLayer'"),
    "no-type": ({"args": {"out_features": 2}}, ".type", r"missing: a layer entry names its class in 'type'"),
    "misspelt-type-key": ({"typ": "ReLU"}, ".typ", r"unknown key \(did you mean 'type'\?\)"),
    "type-not-a-name": ({"type": 3}, ".type", r"expected a layer type name, got int 3"),
    "not-an-object": (3, "", r"expected a layer object with a 'type', got int 3"),
    "misspelt-args-key": (
        {"type": "Linear", "arg": {"out_features": 2}},
        ".arg",
        r"unknown key \(did you mean 'args'\?\); a Linear spec has only",
    ),
    "unknown-argument": (linear(2, bais=False), ".args.bais", r"unknown argument; Linear takes out_features"),
    "placement-argument": (linear(2, device="cpu"), ".args.device", r"device is where a model runs"),
    "missing-argument": ({"type": "Linear"}, ".args", r"missing required argument 'out_features' of Linear"),
    "value-out-of-range": (
        {"type": "Dropout", "args": {"p": 2}},
        ".args.p",
        r"expected a number in \[0\.0, 1\.0\], got 2",
    ),
    "arguments-torch-refuses": (
        {"type": "Conv2d", "args": {"out_channels": 2, "kernel_size": 3, "padding": "same", "stride": 2}},
        ".args",
        r"padding='same' is not supported for strided convolutions",
    ),
    "container-arguments": (
        {"type": "Sequential", "layers": [RELU], "args": {"depth": 2}},
        ".args",
        r"unknown key; a Sequential spec has only 'type' and 'layers'",
    ),
    "unknown-type-in-a-container": (
        sequential(RELU, {"type": "Tnah"}),
        ".layers[1].type",
        r"unknown layer type 'Tnah'; did you mean Tanh",
    ),
}


@pytest.mark.parametrize(("entry", "place", "message"), list(PLAIN.values()), ids=list(PLAIN))
def test_an_entry_in_an_option_never_sampled_is_refused_as_a_spec_reader_refuses_it(
    entry: Any, place: str, message: str
) -> None:
    with pytest.raises(SpecError, match=message) as spec:
        from_spec(sequential(linear(2), entry))
    assert spec.value.where == "$.layers[1]" + place
    error = refusal(sequential(linear(2), {"$choice": [RELU, entry]}))
    assert (error.where, error.problem) == ("$.layers[1].$choice[1]" + place, spec.value.problem)


# -- everywhere an entry stands -------------------------------------------------------

NO_SUCH = {"type": "NoSuchLayer"}
UNKNOWN = r"^unknown layer type 'NoSuchLayer'"
PLACES = {
    "the-document": (NO_SUCH, "$.type"),
    "a-layers-list": (sequential(linear(2), RELU, NO_SUCH), "$.layers[2].type"),
    "an-option-of-a-choice-of-layers": (
        sequential({"$choice": [RELU, NO_SUCH]}),
        "$.layers[0].$choice[1].type",
    ),
    "a-list-option-spliced": (
        sequential({"$choice": [[], [RELU, NO_SUCH]]}),
        "$.layers[0].$choice[1][1].type",
    ),
    "an-option-of-the-document": (
        {"$choice": [linear(2), sequential(NO_SUCH)]},
        "$.$choice[1].layers[0].type",
    ),
    "a-repeated-block": (
        sequential({"$repeat": {"times": {"$int": [0, 2]}, "layers": [linear(2), NO_SUCH]}}),
        "$.layers[0].$repeat.layers[1].type",
    ),
    "a-shared-block-repeated-0-times": (
        sequential({"$repeat": {"times": 0, "shared": True, "layers": [NO_SUCH]}}),
        "$.layers[0].$repeat.layers[0].type",
    ),
    "a-choice-of-a-containers-layers": (
        sequential({"type": "Sequential", "layers": {"$choice": [[RELU], [RELU, NO_SUCH]]}}),
        "$.layers[0].layers.$choice[1][1].type",
    ),
    "a-choice-in-a-repeat-in-an-option": (
        sequential({"$choice": [[], [{"$repeat": {"times": 2, "layers": [{"$choice": [RELU, NO_SUCH]}]}}]]}),
        "$.layers[0].$choice[1][0].$repeat.layers[0].$choice[1].type",
    ),
    "a-choice-of-types": (
        sequential({"type": {"$choice": ["ReLU", "NoSuchLayer"]}}),
        "$.layers[0].type.$choice[1]",
    ),
}


@pytest.mark.parametrize(("data", "where"), list(PLACES.values()), ids=list(PLACES))
def test_an_unknown_type_is_refused_wherever_it_stands(data: Any, where: str) -> None:
    error = refusal(data)
    assert error.where == where
    assert error.problem.startswith("unknown layer type 'NoSuchLayer'")


def test_a_file_naming_an_unknown_type_is_refused_when_read(tmp_path: Path) -> None:
    path = tmp_path / "space.json"
    path.write_text(
        json.dumps(sequential(linear({"$int": [1, 4]}), {"$choice": [[], [{"type": "Lineaar"}]]}))
    )
    with pytest.raises(
        SpecError, match=r"^\$\.layers\[1\]\.\$choice\[1\]\[0\]\.type: unknown layer type 'Lineaar'"
    ):
        load_space(path)


# -- entries holding markers ----------------------------------------------------------

MARKED = {
    "unknown-argument-given-a-marker": (
        linear({"$int": [1, 4]}, bais={"$choice": [True, False]}),
        "$.layers[0].args.bais",
        r"^unknown argument; Linear takes out_features, bias",
    ),
    "unknown-plain-argument-beside-a-marker": (
        linear({"$int": [1, 4]}, bais=False),
        "$.layers[0].args.bais",
        r"^unknown argument; Linear takes",
    ),
    "placement-argument-given-a-marker": (
        linear(2, device={"$choice": ["cpu", "meta"]}),
        "$.layers[0].args.device",
        r"^device is where a model runs, not part of its architecture",
    ),
    "plain-value-beside-a-marker": (
        {"type": "Dropout", "args": {"p": {"$float": [0, 0.5]}, "inplace": "yes"}},
        "$.layers[0].args.inplace",
        r"^expected a bool \(true or false\), got 'yes'",
    ),
    "missing-argument-beside-a-marker": (
        {"type": "Conv2d", "args": {"out_channels": {"$int": [1, 4]}}},
        "$.layers[0].args",
        r"^missing required argument 'kernel_size' of Conv2d$",
    ),
    "misspelt-args-key-holding-a-marker": (
        {"type": "Linear", "arg": {"out_features": {"$int": [1, 4]}}},
        "$.layers[0].arg",
        r"^unknown key \(did you mean 'args'\?\)",
    ),
    "a-type-that-is-a-number": (
        {"type": {"$int": [1, 2]}},
        "$.layers[0].type",
        r"^a layer's type is a name or a \$choice of names",
    ),
    "container-arguments-beside-a-choice-of-layers": (
        {"type": "Sequential", "layers": [{"$choice": [[], [RELU]]}], "args": {"depth": 2}},
        "$.layers[0].args",
        r"^unknown key; a Sequential spec has only 'type' and 'layers'",
    ),
}


@pytest.mark.parametrize(("entry", "where", "message"), list(MARKED.values()), ids=list(MARKED))
def test_an_entry_holding_markers_is_read_but_for_their_values(entry: Any, where: str, message: str) -> None:
    error = refusal(sequential(entry))
    assert error.where == where
    assert re.search(message, error.problem), error.problem


def test_a_markers_values_are_left_to_the_trials_that_sample_them() -> None:
    """A value the layer refuses fails the trial that samples it, not the whole space."""
    space = parse_space(
        sequential(linear({"$int": [0, 4]}), {"type": "Dropout", "args": {"p": {"$choice": [0.5, 2]}}})
    )
    assert [p.name for p in space.parameters] == ["layers[0].args.out_features", "layers[1].args.p"]


def test_a_graph_is_read_with_its_modules_and_a_marker_among_them_leaves_its_keys_read() -> None:
    functional = pytest.importorskip("torchx.functional")
    import torchx
    import torchx.layers as L

    x = functional.Placeholder((None, 5))
    hidden = L.Linear(8)(x)
    spec = torchx.to_spec(functional.Functional(x, L.Linear(3)(hidden) + hidden[:, :3]))
    del spec["format_version"]
    assert parse_space(sequential(spec, RELU)).size() == 1
    spec["modules"]["linear"]["args"]["out_features"] = {"$choice": [8, 16]}
    assert parse_space(sequential(spec)).size() == 2
    spec["module"] = spec.pop("modules")
    error = refusal(sequential(spec))
    assert error.where == "$.layers[0].module"
    assert error.problem.startswith("unknown key (did you mean 'modules'?)")
