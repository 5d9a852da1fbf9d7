"""Search spaces: the syntax, sampling, names, sizes, and every bad marker."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import optuna
import pytest
import torch
import yaml

import torchx
from torchx.core import Layer, SpecError, from_spec
from torchx.plugin import MAX_LAYERS, MAX_SPEC_VALUES
from torchx.tune import MAX_REPEAT, Parameter, Space, load_space, parse_space

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def linear(out: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "Linear", "args": {"out_features": out}, **extra}


def sequential(*layers: Any) -> dict[str, Any]:
    return {"type": "Sequential", "layers": list(layers)}


class Scripted:
    """A trial that takes the ``script``-th value of each new parameter (then the first),
    remembering how many values each had: the tool that enumerates a space."""

    def __init__(self, script: Sequence[int]) -> None:
        self.script = list(script)
        self.params: dict[str, Any] = {}
        self.picks: list[int] = []
        self.widths: list[int] = []

    def pick(self, name: str, values: Sequence[Any]) -> Any:
        if name not in self.params:
            index = self.script[len(self.picks)] if len(self.picks) < len(self.script) else 0
            self.picks.append(index)
            self.widths.append(len(values))
            self.params[name] = values[index]
        return self.params[name]

    def suggest_int(self, name: str, low: int, high: int, *, step: int = 1, log: bool = False) -> int:
        return int(self.pick(name, range(low, high + 1, step)))

    def suggest_float(
        self, name: str, low: float, high: float, *, step: float | None = None, log: bool = False
    ) -> float:
        assert step is not None, "a continuous parameter has no end of values"
        return float(self.pick(name, [low + i * step for i in range(round((high - low) / step) + 1)]))

    def suggest_categorical(self, name: str, choices: Sequence[Any]) -> Any:
        return self.pick(name, choices)


def every_sample(space: Space) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each (parameters, spec) the space can give, once: a walk over the tree of decisions."""
    found = []
    scripts: list[list[int]] = [[]]
    while scripts:
        script = scripts.pop()
        trial = Scripted(script)
        found.append((trial.params, space.sample(trial)))
        for position in range(len(script), len(trial.picks)):
            scripts += [[*trial.picks[:position], index] for index in range(1, trial.widths[position])]
    return found


def markers_left(value: Any) -> bool:
    if isinstance(value, dict):
        return any(str(key).startswith("$") or markers_left(item) for key, item in value.items())
    return isinstance(value, list) and any(markers_left(item) for item in value)


# -- the syntax ---------------------------------------------------------------


def test_every_number_marker_samples_what_optuna_suggests() -> None:
    space = parse_space(
        sequential(
            linear({"$int": [4, 16], "step": 4}),
            linear({"$int": [1, 64], "log": True}),
            {"type": "Dropout", "args": {"p": {"$float": [0.0, 0.5], "step": 0.25}}},
            {"type": "LeakyReLU", "args": {"negative_slope": {"$float": [0.001, 0.1], "log": True}}},
            {"type": "Dropout", "args": {"p": {"$float": [0, 0.5]}}},
            linear({"$choice": [2, 3, 5]}),
        )
    )
    assert [p.name for p in space.parameters] == [
        "layers[0].args.out_features",
        "layers[1].args.out_features",
        "layers[2].args.p",
        "layers[3].args.negative_slope",
        "layers[4].args.p",
        "layers[5].args.out_features",
    ]
    assert space.parameters[0] == Parameter("layers[0].args.out_features", "int", 4, 16, 4)
    assert space.parameters[1] == Parameter("layers[1].args.out_features", "int", 1, 64, 1, log=True)
    assert space.parameters[2] == Parameter("layers[2].args.p", "float", 0.0, 0.5, 0.25)
    assert space.parameters[3] == Parameter("layers[3].args.negative_slope", "float", 0.001, 0.1, log=True)
    assert space.parameters[5] == Parameter(
        "layers[5].args.out_features", "choice", choices=(2, 3, 5), options=(2, 3, 5)
    )
    values = [12, 7, 0.25, 0.01, 0.3, 5]
    spec = space.sample(
        optuna.trial.FixedTrial(dict(zip([p.name for p in space.parameters], values, strict=True)))
    )
    assert [layer.get("args") for layer in spec["layers"]] == [
        {"out_features": 12},
        {"out_features": 7},
        {"p": 0.25},
        {"negative_slope": 0.01},
        {"p": 0.3},
        {"out_features": 5},
    ]
    assert space.size() is None  # the $float without a step


def test_a_choice_of_layers_samples_the_index_and_its_markers_only_when_chosen() -> None:
    space = parse_space(
        sequential(
            {"$choice": [{"type": "ReLU"}, {"type": "Dropout", "args": {"p": {"$choice": [0.1, 0.2]}}}]},
            linear(3),
        )
    )
    assert [(p.name, p.choices) for p in space.parameters] == [
        ("layers[0]", (0, 1)),
        ("layers[0].$choice[1].args.p", (0.1, 0.2)),
    ]
    assert space.parameters[0].options == (
        {"type": "ReLU"},
        {"type": "Dropout", "args": {"p": {"$choice": [0.1, 0.2]}}},
    )
    relu = Scripted([0])
    assert space.sample(relu)["layers"][0] == {"type": "ReLU"}
    assert relu.params == {"layers[0]": 0}
    dropout = space.sample(optuna.trial.FixedTrial({"layers[0]": 1, "layers[0].$choice[1].args.p": 0.2}))
    assert dropout["layers"][0] == {"type": "Dropout", "args": {"p": 0.2}}
    assert space.size() == 3


def test_a_list_of_layers_in_a_choice_is_spliced_into_its_layers_list() -> None:
    block = [{"type": "Conv2d", "args": {"out_channels": 4, "kernel_size": 3}}, {"type": "ReLU"}]
    space = parse_space(sequential(linear(2), {"$choice": [[], block, [block[1]]]}, linear(3)))
    kinds = [[layer["type"] for layer in space.sample(Scripted([i]))["layers"]] for i in range(3)]
    assert kinds == [
        ["Linear", "Linear"],
        ["Linear", "Conv2d", "ReLU", "Linear"],
        ["Linear", "ReLU", "Linear"],
    ]
    whole = parse_space({"type": "Sequential", "layers": {"$choice": [[linear(2)], [linear(2), linear(3)]]}})
    assert whole.sample(Scripted([1]))["layers"] == [linear(2), linear(3)]
    assert whole.size() == 2


def test_a_choice_of_lists_outside_layers_gives_the_list() -> None:
    space = parse_space(
        {"type": "Conv2d", "args": {"out_channels": 4, "kernel_size": {"$choice": [[3, 3], [1, 5]]}}}
    )
    assert space.sample(Scripted([1]))["args"]["kernel_size"] == [1, 5]


def test_a_root_choice_chooses_the_architecture() -> None:
    space = parse_space({"$choice": [linear(2), sequential(linear({"$int": [1, 3]}))]})
    assert [p.name for p in space.parameters] == ["$", "$choice[1].layers[0].args.out_features"]
    assert space.sample(Scripted([1, 2]))["layers"][0]["args"]["out_features"] == 3
    assert space.size() == 4


def test_repeats_repeat_their_block_with_its_own_or_shared_values() -> None:
    block = [linear({"$int": [1, 3]}), {"type": "ReLU"}]
    own = parse_space(sequential({"$repeat": {"times": {"$int": [1, 3]}, "layers": block}}, linear(1)))
    assert [p.name for p in own.parameters] == [
        "layers[0].$repeat.times",
        "layers[0].$repeat[0].layers[0].args.out_features",
        "layers[0].$repeat[1].layers[0].args.out_features",
        "layers[0].$repeat[2].layers[0].args.out_features",
    ]
    params = {
        "layers[0].$repeat.times": 3,
        "layers[0].$repeat[0].layers[0].args.out_features": 1,
        "layers[0].$repeat[1].layers[0].args.out_features": 2,
        "layers[0].$repeat[2].layers[0].args.out_features": 3,
    }
    spec = own.sample(optuna.trial.FixedTrial(params))
    assert spec == sequential(
        linear(1), {"type": "ReLU"}, linear(2), {"type": "ReLU"}, linear(3), {"type": "ReLU"}, linear(1)
    )
    assert own.size() == 3 + 9 + 27
    shared = parse_space(sequential({"$repeat": {"times": 2, "layers": block, "shared": True}}))
    assert [p.name for p in shared.parameters] == ["layers[0].$repeat.layers[0].args.out_features"]
    assert shared.sample(Scripted([1])) == sequential(
        linear(2), {"type": "ReLU"}, linear(2), {"type": "ReLU"}
    )
    assert shared.size() == 3
    chosen = parse_space(sequential({"$repeat": {"times": {"$choice": [0, 2]}, "layers": [linear(4)]}}))
    assert [len(chosen.sample(Scripted([i]))["layers"]) for i in (0, 1)] == [0, 2]


def test_nested_repeats_number_each_level() -> None:
    inner = {"$repeat": {"times": 2, "layers": [linear({"$choice": [1, 2]})]}}
    space = parse_space(
        sequential({"$repeat": {"times": 2, "layers": [{"type": "Sequential", "layers": [inner]}]}})
    )
    assert [p.name for p in space.parameters][:2] == [
        "layers[0].$repeat[0].layers[0].layers[0].$repeat[0].layers[0].args.out_features",
        "layers[0].$repeat[0].layers[0].layers[0].$repeat[1].layers[0].args.out_features",
    ]
    assert space.size() == 2**4


def test_a_name_ties_markers_into_one_parameter() -> None:
    width = {"$int": [8, 64], "step": 8, "name": "width"}
    space = parse_space(
        sequential(
            linear(width), {"type": "ReLU"}, {"$repeat": {"times": 2, "layers": [linear(dict(width))]}}
        )
    )
    assert [p.name for p in space.parameters] == ["width"]
    spec = space.sample(optuna.trial.FixedTrial({"width": 24}))
    assert [layer["args"]["out_features"] for layer in spec["layers"] if layer["type"] == "Linear"] == [
        24,
        24,
        24,
    ]
    assert space.size() == 8


def test_names_are_the_same_in_every_run_and_every_study() -> None:
    data = sequential(linear({"$int": [1, 4]}), {"$choice": [[], [linear({"$int": [1, 4]})]]})
    names = [p.name for p in parse_space(data).parameters]
    assert names == [p.name for p in parse_space(copy.deepcopy(data)).parameters]
    assert names == ["layers[0].args.out_features", "layers[1]", "layers[1].$choice[1][0].args.out_features"]


# -- sampling -------------------------------------------------------------------


def test_samples_from_a_real_study_are_plain_specs_under_the_parameters_names(digits_space: Path) -> None:
    space = load_space(digits_space)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    names = {p.name for p in space.parameters}
    depths = set()
    for _ in range(12):
        trial = study.ask()
        spec = space.sample(trial)
        assert not markers_left(spec)
        assert set(trial.params) <= names
        depths.add(len(spec["layers"]))
        study.tell(trial, 0.0)
    assert len(depths) > 1


def test_a_sample_shares_nothing_with_the_space_or_other_samples() -> None:
    space = parse_space(sequential(linear(2, name="head"), {"type": "Reshape", "args": {"shape": [-1, 2]}}))
    first, second = space.sample(Scripted([])), space.sample(Scripted([]))
    first["layers"][1]["args"]["shape"].append(7)
    first["layers"].clear()
    assert second == space.sample(Scripted([])) == space.spec
    space.spec["layers"].clear()
    assert space.spec["layers"]
    relu = {"type": "ReLU"}
    aliased = parse_space(sequential(relu, relu)).sample(Scripted([]))
    assert aliased["layers"][0] == aliased["layers"][1] and aliased["layers"][0] is not aliased["layers"][1]


def test_a_sampled_digits_space_builds_into_a_model_that_runs(digits_space: Path) -> None:
    space = load_space(digits_space)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    for _ in range(3):
        spec = space.sample(study.ask())
        model = from_spec(spec)
        assert isinstance(model, Layer)
        assert model(torch.randn(5, 1, 8, 8)).shape == (5, 10)


@pytest.fixture
def digits_space(tmp_path: Path) -> Path:
    """examples/digits_cnn.yaml with its widths, kernel sizes, depth and dropout searched, as a file."""
    spec = yaml.safe_load((EXAMPLES / "digits_cnn.yaml").read_text())
    layers = spec["layers"]
    layers[0]["args"]["out_channels"] = {"$choice": [16, 32], "name": "channels"}
    conv = {
        "out_channels": {"$int": [16, 64], "step": 16},
        "kernel_size": {"$choice": [1, 3]},
        "padding": "same",
    }
    block = [{"type": "Conv2d", "args": conv}, {"type": "BatchNorm2d"}, {"type": "ReLU"}]
    layers[3:6] = [{"$repeat": {"times": {"$int": [0, 2]}, "layers": block}}]
    assert [layer.get("type") for layer in layers[-4:-2]] == ["Dropout", "Linear"]
    layers[-4]["args"]["p"] = {"$float": [0.0, 0.5], "step": 0.25}
    layers[-3]["args"]["out_features"] = {"$int": [32, 128], "log": True}
    path = tmp_path / "digits_space.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


# -- sizes ----------------------------------------------------------------------

WIDTH = {"$int": [1, 3], "name": "w"}
SIZES = {
    "numbers": (
        sequential(
            linear({"$int": [2, 8], "step": 2}),
            {"type": "Dropout", "args": {"p": {"$float": [0, 0.5], "step": 0.125}}},
        ),
        4 * 5,
    ),
    "conditional": (
        sequential({"$choice": [{"type": "ReLU"}, linear({"$choice": [1, 2, {"$int": [3, 5]}]}), []]}),
        1 + (2 + 3) + 1,
    ),
    "unshared-repeat": (
        sequential({"$repeat": {"times": {"$int": [0, 2]}, "layers": [linear({"$choice": [1, 2, 3]})]}}),
        1 + 3 + 9,
    ),
    "shared-repeat": (
        sequential(
            {
                "$repeat": {
                    "times": {"$int": [0, 2]},
                    "layers": [linear({"$choice": [1, 2, 3]})],
                    "shared": True,
                }
            }
        ),
        1 + 3 + 3,
    ),
    "name-in-a-repeat": (
        sequential(
            {"$repeat": {"times": {"$int": [1, 3]}, "layers": [linear(WIDTH), linear({"$int": [1, 2]})]}}
        ),
        3 * (2 + 4 + 8),
    ),
    "name-in-options": (
        sequential(
            linear(WIDTH),
            {"$choice": [[linear(WIDTH)], [{"type": "Dropout", "args": {"p": {"$choice": [0.1, 0.2]}}}], []]},
        ),
        3 * (1 + 2 + 1),
    ),
    "name-only-in-options": (
        sequential({"$choice": [[linear(WIDTH)], [linear(WIDTH), linear(WIDTH)], [{"type": "ReLU"}]]}),
        3 + 3 + 1,
    ),
    "tied-choices": (
        sequential(
            *[linear({"$choice": [1, 2], "name": "c"})] * 2,
            {"$choice": [[], [linear(4)]], "name": "d"},
            {"$choice": [[], [linear(4)]], "name": "d"},
        ),
        2 * 2,
    ),
    "tied-depth": (
        sequential(
            *[{"$repeat": {"times": {"$int": [0, 2], "name": "depth"}, "layers": [linear({"$int": [1, 2]})]}}]
            * 2
        ),
        1 + 2 * 2 + 4 * 4,
    ),
    "depth-tied-to-a-width": (
        sequential(
            {"$repeat": {"times": {"$int": [1, 3], "name": "n"}, "layers": [linear({"$int": [1, 2]})]}},
            linear({"$int": [1, 3], "name": "n"}),
        ),
        2 + 4 + 8,
    ),
    "tied-layer-choices-in-turn": (
        sequential(*[{"$choice": [linear({"$int": [1, 2]}), {"type": "ReLU"}], "name": n} for n in "abab"]),
        (2 * 2 + 1) ** 2,
    ),
    "tied-in-an-option-and-after": (
        sequential(
            {"$choice": [[], [{"$choice": [linear({"$int": [1, 2]}), {"type": "ReLU"}], "name": "a"}]]},
            {"$choice": [linear({"$int": [1, 2]}), {"type": "ReLU"}], "name": "a"},
        ),
        (2 + 1) + (2 * 2 + 1),
    ),
    "tied-times-of-plain-blocks": (
        sequential(
            *[{"$repeat": {"times": {"$int": [1, 3], "name": "n"}, "layers": [{"type": "ReLU"}]}}] * 2,
            linear({"$int": [1, 3], "name": "n"}),
        ),
        3,
    ),
    "choice-of-times-tied-to-a-width": (
        sequential(
            {"$repeat": {"times": {"$choice": [1, 2], "name": "k"}, "layers": [linear({"$int": [1, 2]})]}},
            linear({"$choice": [1, 2], "name": "k"}),
        ),
        2 + 4,
    ),
    "layers-choice": (
        {
            "type": "Sequential",
            "layers": {
                "$choice": [
                    [linear(WIDTH)],
                    [linear(WIDTH), {"$repeat": {"times": {"$choice": [1, 2]}, "layers": [linear(WIDTH)]}}],
                ]
            },
        },
        3 + 3 * 2,
    ),
}


@pytest.mark.parametrize(("data", "size"), list(SIZES.values()), ids=list(SIZES))
def test_the_size_is_the_number_of_samples_found_by_enumerating_them(data: dict[str, Any], size: int) -> None:
    space = parse_space(data)
    samples = every_sample(space)
    assert space.size() == size
    assert len({json.dumps(params, sort_keys=True) for params, _ in samples}) == size == len(samples)
    assert (
        len({json.dumps(spec, sort_keys=True) for _, spec in samples}) == size
    )  # no two options overlap here
    assert all(set(params) <= {p.name for p in space.parameters} for params, _ in samples)
    assert not any(markers_left(spec) for _, spec in samples)


def test_large_spaces_are_counted_without_enumerating_them() -> None:
    block = [linear({"$int": [1, 10]}), linear({"$int": [1, 64], "name": "w"})]
    space = parse_space(sequential({"$repeat": {"times": {"$int": [0, MAX_REPEAT]}, "layers": block}}))
    assert space.size() == 1 + 64 * sum(10**t for t in range(1, MAX_REPEAT + 1))
    assert len(space.parameters) == 1 + MAX_REPEAT + 1
    assert repr(parse_space(sequential(linear({"$float": [0, 1]})))) == "Space(1 parameters, continuous)"


# -- files ----------------------------------------------------------------------


def test_spaces_are_read_from_json_and_yaml(tmp_path: Path) -> None:
    data = sequential(linear({"$int": [1, 4], "name": "w"}))
    (tmp_path / "space.json").write_text(json.dumps(data))
    (tmp_path / "space.yaml").write_text(
        "type: Sequential\nlayers:\n  - {type: Linear, args: {out_features: {$int: [1, 4], name: w}}}\n"
    )
    assert load_space(tmp_path / "space.json").spec == load_space(str(tmp_path / "space.yaml")).spec == data
    with pytest.raises(
        SpecError,
        match=r"^\$\.layers\[0\]\.args\.out_features: '\$int' is a search-space marker.*torchx\.tune\.load_space",
    ):
        torchx.load_spec(tmp_path / "space.yaml")


def test_a_yaml_alias_bomb_is_refused_as_a_spec_would_be(tmp_path: Path) -> None:
    lines = [
        "type: Sequential",
        "layers:",
        "  - {type: Linear, args: {out_features: {$choice: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}}}",
    ]
    lines += ["notes:"] + [f"  - &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 12)]
    (tmp_path / "bomb.yaml").write_text("\n".join(lines))
    with pytest.raises(
        SpecError, match=rf"^\$\.notes\[\d+\].*: the spec expands to more than {MAX_SPEC_VALUES:,} values"
    ):
        load_space(tmp_path / "bomb.yaml")


def test_shared_parts_of_data_are_bounded_too() -> None:
    part: Any = [1]
    for _ in range(30):  # 2**30 values in 30 lists
        part = [part, part]
    with pytest.raises(
        SpecError,
        match=rf"^\$\.args\.notes(\[0\])*: the space expands to more than {MAX_SPEC_VALUES:,} values",
    ):
        parse_space({"type": "Linear", "args": {"notes": part}})
    deep: Any = 1
    for _ in range(1000):
        deep = [deep]
    with pytest.raises(SpecError, match=r"nests deeper than 256 levels"):
        parse_space({"type": "Linear", "args": {"out_features": deep}})


def test_nested_choices_in_a_file_are_refused_by_depth_not_by_the_stack(tmp_path: Path) -> None:
    choice: Any = {"type": "ReLU"}
    for _ in range(200):  # 400 levels of JSON, well within a spec file's bounds
        choice = {"$choice": [choice, {"type": "Tanh"}]}
    path = tmp_path / "deep.json"
    path.write_text(json.dumps({"type": "Sequential", "layers": [choice]}))
    with pytest.raises(SpecError, match=r"nests deeper than 256 levels"):
        load_space(path)


# -- bad markers -----------------------------------------------------------------

AT = "$.layers[0].args.out_features"
BAD = {
    "unknown-marker": (
        {"$itn": [1, 2]},
        AT,
        r"unknown marker '\$itn' \(did you mean '\$int'\?\); the markers are",
    ),
    "two-markers": ({"$int": [1, 2], "$choice": [1]}, AT, r"an object holds one marker, got \$choice, \$int"),
    "unknown-key": (
        {"$int": [1, 8], "stpe": 2},
        AT + ".stpe",
        r"unknown key of a \$int marker \(did you mean 'step'\?\)",
    ),
    "empty-choice": ({"$choice": []}, AT + ".$choice", r"an empty choice: list at least one option"),
    "choice-not-a-list": ({"$choice": 3}, AT + ".$choice", r"expected a list of options, got int 3"),
    "equal-options": (
        {"$choice": [1, 2, 1.0]},
        AT + ".$choice[2]",
        r"float 1\.0 equals option \[0\] \(int 1\)",
    ),
    "low-above-high": ({"$int": [8, 4]}, AT + ".$int", r"low 8 is greater than high 4: write \[4, 8\]"),
    "not-a-pair": ({"$int": [8]}, AT + ".$int", r"expected \[low, high\] \(integers\), got list \[8\]"),
    "text-bound": ({"$int": ["a", 4]}, AT + ".$int", r"low must be an integer, got str 'a'"),
    "bool-bound": ({"$int": [1, True]}, AT + ".$int", r"high must be an integer, got bool True"),
    "float-for-int": ({"$int": [1.5, 4]}, AT + ".$int", r"low must be an integer, got float 1\.5"),
    "infinite-float": (
        {"$float": [0, float("inf")]},
        AT + ".$float",
        r"high must be a finite number, got float inf",
    ),
    "zero-step": ({"$int": [1, 4], "step": 0}, AT + ".step", r"expected a positive integer, got int 0"),
    "negative-float-step": (
        {"$float": [0, 1], "step": -0.5},
        AT + ".step",
        r"expected a positive number, got float -0\.5",
    ),
    "bool-step": (
        {"$int": [1, 4], "step": True},
        AT + ".step",
        r"expected a positive integer, got bool True",
    ),
    "ragged-step": (
        {"$int": [1, 10], "step": 4},
        AT + ".step",
        r"\[1, 10\] is not a whole number of steps of 4: end it at 9 or 13",
    ),
    "ragged-float-step": (
        {"$float": [0, 1], "step": 0.3},
        AT + ".step",
        r"not a whole number of steps of 0\.3: end it at 0\.9 or 1\.2",
    ),
    "log-from-zero": ({"$float": [0, 1], "log": True}, AT + ".log", r"a log scale needs low > 0, got low 0"),
    "log-and-step": (
        {"$int": [1, 8], "log": True, "step": 1},
        AT + ".step",
        r"a step and a log scale cannot go together",
    ),
    "log-not-bool": ({"$int": [1, 8], "log": "yes"}, AT + ".log", r"expected true or false, got str 'yes'"),
    "empty-name": (
        {"$int": [1, 8], "name": ""},
        AT + ".name",
        r"expected the name of the parameter \(a non-empty string\), got str ''",
    ),
    "repeat-as-a-value": (
        {"$repeat": {"times": 2, "layers": [linear(2)]}},
        AT,
        r"a \$repeat repeats layers, so it stands as an item of a 'layers' list",
    ),
}


@pytest.mark.parametrize(("marker", "where", "message"), list(BAD.values()), ids=list(BAD))
def test_every_bad_marker_is_a_spec_error_naming_its_place(marker: Any, where: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as info:
        parse_space(sequential(linear(marker)))
    assert info.value.where == where


REPEAT = "$.layers[0].$repeat"
BAD_REPEATS = {
    "billion-times": (
        {"times": 10**9, "layers": [linear(2)]},
        REPEAT + ".times",
        r"a \$repeat of up to 1,000,000,000 times; it repeats at most 1,000",
    ),
    "billion-times-marker": (
        {"times": {"$int": [1, 10**9]}, "layers": [linear(2)]},
        REPEAT + ".times",
        r"up to 1,000,000,000 times",
    ),
    "negative-times": (
        {"times": {"$choice": [-1, 2]}, "layers": [linear(2)]},
        REPEAT + ".times",
        r"a block repeats 0 times or more, got -1",
    ),
    "float-times": (
        {"times": {"$float": [1, 2]}, "layers": [linear(2)]},
        REPEAT + ".times",
        r"expected a number of repetitions \(0 to 1,000\) or an \$int or \$choice of them",
    ),
    "text-times-choice": (
        {"times": {"$choice": [1, "2"]}, "layers": [linear(2)]},
        REPEAT + ".times.$choice",
        r"or an \$int or \$choice of them, got \[1, '2'\]",
    ),
    "no-layers": (
        {"times": 2},
        REPEAT + ".layers",
        r"missing: a \$repeat takes 'times' \(how many\) and 'layers'",
    ),
    "empty-layers": (
        {"times": 2, "layers": []},
        REPEAT + ".layers",
        r"expected a non-empty list of layers, got list \[\]",
    ),
    "misspelt-times": (
        {"time": 2, "layers": [linear(2)]},
        REPEAT + ".time",
        r"unknown key \(did you mean 'times'\?\)",
    ),
    "shared-not-bool": (
        {"times": 2, "layers": [linear(2)], "shared": 1},
        REPEAT + ".shared",
        r"expected true or false, got int 1",
    ),
    "too-many-layers": (
        {"times": MAX_REPEAT, "layers": [linear(2)] * 101},
        "$.layers[0]",
        rf"a sample can hold 101,000 layers here; a spec holds at most {MAX_LAYERS:,}",
    ),
    "not-an-object": ([linear(2)], REPEAT, r"expected an object with 'times' and 'layers'"),
}


@pytest.mark.parametrize(("body", "where", "message"), list(BAD_REPEATS.values()), ids=list(BAD_REPEATS))
def test_every_bad_repeat_is_a_spec_error_naming_its_place(body: Any, where: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as info:
        parse_space(sequential({"$repeat": body}))
    assert info.value.where == where


BAD_PLACES = {
    "name-with-two-ranges": (
        sequential(linear({"$int": [1, 4], "name": "w"}), linear({"$int": [1, 8], "name": "w"})),
        "$.layers[1].args.out_features",
        r"the parameter 'w' is a \$int \[1, 8\] here but a \$int \[1, 4\] at \$\.layers\[0\]\.args\.out_features; "
        "markers of one name are one parameter",
    ),
    "name-with-two-kinds": (
        sequential(
            linear({"$int": [1, 4], "name": "w"}),
            {"type": "Dropout", "args": {"p": {"$choice": [0.1], "name": "w"}}},
        ),
        "$.layers[1].args.p",
        r"the parameter 'w' is a \$choice of 1 options \[0\.1\] here but a \$int \[1, 4\]",
    ),
    "number-for-a-layer": (
        sequential({"$int": [1, 2]}),
        "$.layers[0]",
        r"a \$int marker gives a number, but a layer \(or a list of layers\) stands here",
    ),
    "number-for-the-spec": (
        {"$float": [1, 2]},
        "$",
        r"a \$float marker gives a number, but the spec stands here",
    ),
    "repeat-for-the-spec": (
        {"$repeat": {"times": 1, "layers": [linear(1)]}},
        "$",
        r"a \$repeat repeats layers",
    ),
    "a-list-for-the-spec": (
        {"$choice": [linear(1), [linear(2)]]},
        "$.$choice[1]",
        r"a space is a spec object with a 'type' \(or a \$choice of them\), got list",
    ),
    "name-on-a-repeat": (
        sequential({"$repeat": {"times": 1, "layers": [linear(1)]}, "name": "r"}),
        "$.layers[0].name",
        r"unknown key of a \$repeat marker; its options go inside it",
    ),
}


@pytest.mark.parametrize(("data", "where", "message"), list(BAD_PLACES.values()), ids=list(BAD_PLACES))
def test_markers_in_the_wrong_place_or_of_one_name_are_refused(data: Any, where: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as info:
        parse_space(data)
    assert info.value.where == where
