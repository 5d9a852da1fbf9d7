"""Search-space files crafted against torchx-tune: each is read and counted in steps linear
in the file, or counted up to a bound that ``repr`` states, or refused with one SpecError
naming its place (one line and exit 1 from ``torchx tune``). Work is counted in steps,
never timed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest
from report import Report

from torchx.cli import main as torchx_main
from torchx.core import SpecError
from torchx.tune import MAX_COUNT_STEPS, MAX_SPACE_SIZE, load_space


def write(folder: Path, name: str, lines: list[str]) -> Path:
    path = folder / name
    path.write_text("\n".join(["type: Sequential", "layers:", *lines, ""]))
    return path


# -- sizes ----------------------------------------------------------------------------------------


def named_choices(n: int, *, in_turn: bool) -> list[str]:
    """n named two-option choices each used twice: side by side, or all once and then all again."""
    uses = [i for _ in range(2) for i in range(n)] if in_turn else [i for i in range(n) for _ in range(2)]
    return [f"  - {{type: Linear, args: {{out_features: {{$choice: [8, 16], name: c{i}}}}}}}" for i in uses]


@pytest.mark.parametrize("in_turn", [False, True], ids=["side-by-side", "in-turn"])
def test_named_choices_each_used_twice_are_one_decision_each(
    tmp_path: Path, report: Report, in_turn: bool
) -> None:
    space = load_space(write(tmp_path, "twice.yaml", named_choices(60, in_turn=in_turn)))
    assert space.size() == 2**60
    assert repr(space) == f"Space(60 parameters, {2**60:,} architectures)"
    half = load_space(write(tmp_path, "half.yaml", named_choices(30, in_turn=in_turn)))
    assert space._counted().steps == 2 * half._counted().steps  # 2**30 times as many, counted one by one
    report.count("attack", "60 named choices each used twice (2**60 combinations), counted in linear steps")


def ring(n: int) -> list[str]:
    """Names x0..x(n-1) tied under n independent choices (choice j holds x_j and x_(j+1)),
    then each used once more: counting it exactly needs about 3**n combinations."""

    def x(i: int) -> str:
        return f"{{$choice: [{{type: ReLU}}, {{type: Linear, args: {{out_features: {{$int: [1, 2]}}}}}}], name: x{i % n}}}"

    return [f"  - {{$choice: [[], [{x(j)}, {x(j + 1)}]]}}" for j in range(n)] + [
        f"  - {x(i)}" for i in range(n)
    ]


def test_names_tied_under_independent_choices_stop_at_the_budget_with_a_lower_bound(
    tmp_path: Path, report: Report
) -> None:
    space = load_space(write(tmp_path, "ring.yaml", ring(60)))
    assert space.size() is None
    assert space._counted().steps > MAX_COUNT_STEPS  # the exact count stopped there
    assert repr(space) == f"Space(300 parameters, at least {2**60:,} architectures)"
    report.count("attack", f"60 names tied under independent choices: stopped at {MAX_COUNT_STEPS:,} steps")


def test_a_size_past_the_largest_counted_is_shown_as_a_bound(tmp_path: Path, report: Report) -> None:
    repeat = "  - {$repeat: {times: {$int: [0, 1000]}, layers: [{type: Linear, args: {out_features: {$int: [1, 1000000000]}}}]}}"
    space = load_space(write(tmp_path, "huge.yaml", [repeat]))  # 10**9000 architectures
    assert space.size() is None
    assert repr(space) == "Space(1001 parameters, at least 10**4000 architectures)"
    assert MAX_SPACE_SIZE == 10**4000
    report.count("attack", "a space of 10**9000 architectures: counted up to 10**4000, shown as a bound")


# -- numbers --------------------------------------------------------------------------------------

AT = "$.layers[0].args.p"
HOSTILE_NUMBERS = {
    "float-step-5e-324-yaml": ("{$float: [0, 1], step: 5.0e-324}", AT + ".step"),
    "float-step-1e-300-over-1e300": ("{$float: [0, 1.0e+300], step: 1.0e-300}", AT + ".step"),
    "float-span-past-float64": ("{$float: [-1.7e+308, 1.7e+308]}", AT + ".$float"),
    "float-nan-bound": ("{$float: [.nan, 1]}", AT + ".$float"),
    "float-infinite-step": ("{$float: [0, 1], step: .inf}", AT + ".step"),
    "int-past-2**53": ("{$int: [0, 9007199254740993]}", AT + ".$int"),
    "int-step-past-2**53": ("{$int: [0, 0], step: 9007199254740993}", AT + ".step"),
}


def dropout(marker: str) -> list[str]:
    return [f"  - {{type: Dropout, args: {{p: {marker}}}}}"]


@pytest.mark.parametrize(("marker", "where"), list(HOSTILE_NUMBERS.values()), ids=list(HOSTILE_NUMBERS))
def test_a_number_optuna_cannot_sample_is_refused_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    report: Report,
    marker: str,
    where: str,
) -> None:
    path = write(tmp_path, "space.yaml", dropout(marker))
    with pytest.raises(SpecError) as info:
        load_space(path)
    assert info.value.where == where and "\n" not in str(info.value)
    (tmp_path / "train.py").write_text("def objective(model, trial):\n    return 0.0\n")
    monkeypatch.chdir(tmp_path)
    arguments = ["tune", "space.yaml", "--objective", "train.py", "--input", "None,4", "--trials", "1"]
    assert torchx_main(arguments) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"torchx tune: SpecError: {where}: ") and err.count("\n") == 1
    assert not (tmp_path / "study.db").exists()
    report.count("attack", "$int/$float numbers Optuna cannot sample: one line naming the place, exit 1")


def test_a_json_step_of_5e_324_is_refused_in_one_line(tmp_path: Path, report: Report) -> None:
    path = tmp_path / "space.json"
    layer: dict[str, Any] = {"type": "Dropout", "args": {"p": {"$float": [0, 1], "step": 5e-324}}}
    path.write_text(json.dumps({"type": "Sequential", "layers": [layer]}))
    with pytest.raises(SpecError, match=r"is more than 2\*\*53 .* steps of 5e-324") as info:
        load_space(path)
    assert info.value.where == AT + ".step"
    report.count("attack", "$int/$float numbers Optuna cannot sample: one line naming the place, exit 1")


@pytest.mark.filterwarnings(
    "ignore::RuntimeWarning:optuna.samplers._tpe"
)  # TPE at these extremes; samples checked below
def test_numbers_at_the_bounds_are_sampled_by_optunas_samplers(tmp_path: Path, report: Report) -> None:
    largest = sys.float_info.max
    markers = [
        "{$int: [-9007199254740992, 9007199254740992]}",
        "{$int: [1, 9007199254740992], log: true}",
        f"{{$float: [{-largest / 2!r}, {largest / 2!r}]}}",
        f"{{$float: [5.0e-324, {largest!r}], log: true}}",
        "{$float: [0, 1], step: 1.0e-15}",
    ]
    # a marker's values are the trials' to judge (LeakyReLU's slope takes any number; none is built here)
    lines = [f"  - {{type: LeakyReLU, args: {{negative_slope: {marker}}}}}" for marker in markers]
    space = load_space(write(tmp_path, "edges.yaml", lines))
    for sampler in (
        optuna.samplers.RandomSampler(seed=0),
        optuna.samplers.TPESampler(seed=0, n_startup_trials=3),
    ):
        study = optuna.create_study(sampler=sampler)
        for trial_number in range(8):
            trial = study.ask()
            notes = [layer["args"]["negative_slope"] for layer in space.sample(trial)["layers"]]
            for note, parameter in zip(notes, space.parameters, strict=True):
                assert parameter.low is not None and parameter.high is not None
                assert parameter.low <= note <= parameter.high
            study.tell(trial, float(trial_number % 3))
        report.count("attack", "markers at the numeric bounds sampled by Optuna's random and TPE samplers", 8)
