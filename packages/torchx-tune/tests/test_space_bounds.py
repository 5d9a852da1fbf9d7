"""What a space's numbers and size may cost: a hostile marker is one SpecError naming its
place, and ``size()`` takes steps linear in the space, or stops at a bound and says so."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from torchx.cli import main
from torchx.core import SpecError
from torchx.tune import MAX_COUNT_STEPS, MAX_SPACE_SIZE, Space, parse_space


def linear(out: Any) -> dict[str, Any]:
    return {"type": "Linear", "args": {"out_features": out}}


def sequential(*layers: Any) -> dict[str, Any]:
    return {"type": "Sequential", "layers": list(layers)}


def counted(space: Space) -> Any:
    """What counting ``space`` found: its ``number``, whether ``exact``, the ``steps`` it took."""
    return space._counted()


# -- sizes ------------------------------------------------------------------------------

N = 40
"""Names: 2**40 combinations, which counting them one by one could not hold in memory."""


def number(i: int) -> dict[str, Any]:
    return linear({"$choice": [8, 16], "name": f"width{i}"})


def layer(i: int) -> dict[str, Any]:
    """A choice of a Linear of 3 widths or a ReLU: 3 * 3 + 1 samples for two markers of it."""
    return {"$choice": [linear({"$int": [1, 3]}), {"type": "ReLU"}], "name": f"block{i}"}


def depth(i: int) -> dict[str, Any]:
    """0 to 2 repetitions of a Linear of 2 widths: 1 + 2 * 2 + 4 * 4 samples for two markers of it."""
    return {"$repeat": {"times": {"$int": [0, 2], "name": f"depth{i}"}, "layers": [linear({"$int": [1, 2]})]}}


def side_by_side(marker: Callable[[int], Any]) -> Callable[[int], list[Any]]:
    return lambda n: [marker(i) for i in range(n) for _ in range(2)]


def in_turn(marker: Callable[[int], Any]) -> Callable[[int], list[Any]]:
    return lambda n: [marker(i) for _ in range(2) for i in range(n)]


TWICE = {
    "numbers-side-by-side": (side_by_side(number), 2),
    "numbers-in-turn": (in_turn(number), 2),
    "layers-side-by-side": (side_by_side(layer), 10),
    "layers-in-turn": (in_turn(layer), 10),
    "depths-in-turn": (in_turn(depth), 21),
}
"""How to write n names each used twice, and the samples of one name."""


@pytest.mark.parametrize(("layers", "each"), list(TWICE.values()), ids=list(TWICE))
def test_a_name_used_twice_is_one_decision_counted_in_steps_linear_in_the_names(
    layers: Callable[[int], list[Any]], each: int
) -> None:
    space = parse_space(sequential(*layers(N)))
    assert space.size() == each**N
    assert f"{each**N:,} architectures" in repr(space)
    steps = counted(space).steps
    assert counted(parse_space(sequential(*layers(2 * N)))).steps == 2 * steps  # not 2**N times as many


def ring(n: int) -> dict[str, Any]:
    """Names x0..x(n-1), each a ReLU or a Linear of 2 widths: choice j holds nothing or
    x_j and x_(j+1), and every name is used once more at the end: names tied under
    independent choices, whose count (the trace of RING**n) no product of parts gives."""

    def x(i: int) -> dict[str, Any]:
        return {"$choice": [{"type": "ReLU"}, linear({"$int": [1, 2]})], "name": f"x{i % n}"}

    conditions = [{"$choice": [[], [x(j), x(j + 1)]]} for j in range(n)]
    return sequential(*conditions, *[x(i) for i in range(n)])


RING = ((2, 3), (6, 10))
"""RING[a][b], for x_j = a and x_(j+1) = b (0: a ReLU, 1 sample; 1: a Linear, 2 samples):
the samples of x_j's last marker times those of choice j, w(a) * (1 + w(a) * w(b))."""


def ring_size(n: int) -> int:
    """The size of ``ring(n)``: the trace of RING**n."""
    power = ((1, 0), (0, 1))
    for _ in range(n):
        power = tuple(
            tuple(sum(power[i][k] * RING[k][j] for k in range(2)) for j in range(2)) for i in range(2)
        )
    return power[0][0] + power[1][1]


def test_names_tied_under_independent_choices_are_counted_exactly_within_the_budget() -> None:
    assert ring_size(4) == 19592
    space = parse_space(ring(8))
    assert space.size() == ring_size(8) == 383_846_432
    assert counted(space).steps <= MAX_COUNT_STEPS


def test_past_the_budget_the_count_stops_and_gives_a_lower_bound() -> None:
    space = parse_space(ring(40))
    assert space.size() is None
    assert counted(space).steps > MAX_COUNT_STEPS  # the exact count stopped there
    assert repr(space) == f"Space(200 parameters, at least {2**40:,} architectures)"  # every x a ReLU
    assert ring_size(40) > 2**40


def test_counts_stop_at_the_largest_size_counted() -> None:
    block = [linear({"$int": [1, 10**6]})]  # 10**6000 samples at 1,000 repetitions
    space = parse_space(sequential({"$repeat": {"times": {"$int": [0, 1000]}, "layers": block}}))
    assert space.size() is None
    assert repr(space) == "Space(1001 parameters, at least 10**4000 architectures)"
    under = parse_space(sequential({"$repeat": {"times": 666, "layers": block}}))
    assert under.size() == 10 ** (6 * 666) < MAX_SPACE_SIZE


# -- numbers ----------------------------------------------------------------------------

AT = "$.layers[0].args.out_features"
BAD_NUMBERS = {
    "tiniest-float-step": (
        {"$float": [0, 1], "step": 5e-324},
        AT + ".step",
        r"\[0, 1\] is more than 2\*\*53 \(9,007,199,254,740,992\) steps of 5e-324",
    ),
    "float-step-of-1e-300-over-1e300": (
        {"$float": [0, 1e300], "step": 1e-300},
        AT + ".step",
        r"is more than 2\*\*53 .* steps of 1e-300, which Optuna counts in float64",
    ),
    "float-span-past-float64": (
        {"$float": [-1.7e308, 1.7e308]},
        AT + ".$float",
        r"\[-1\.7e\+308, 1\.7e\+308\] is wider than the largest float64",
    ),
    "float-bound-an-int-past-float64": (
        {"$float": [0, 10**400]},
        AT + ".$float",
        r"high must be a finite number, got int <an int of about 401 digits>",
    ),
    "float-step-an-int-past-float64": (
        {"$float": [0, 1], "step": 10**400},
        AT + ".step",
        r"expected a positive number, got int <an int of about 401 digits>",
    ),
    "ragged-float-step-ending-past-float64": (
        {"$float": [0, 1.7e308], "step": 1e308},
        AT + ".step",
        r"is not a whole number of steps of 1e\+308: end it at 1e\+308$",
    ),
    "int-past-2**53": (
        {"$int": [0, 2**53 + 1]},
        AT + ".$int",
        r"high int 9007199254740993 is past 2\*\*53 \(9,007,199,254,740,992\)",
    ),
    "int-of-31-digits-with-a-step": (
        {"$int": [0, 10**30], "step": 7},
        AT + ".$int",
        r"high int 1000000000000000000000000000000 is past 2\*\*53",
    ),
    "int-step-past-2**53": ({"$int": [0, 0], "step": 2**60}, AT + ".step", r"step int \d+ is past 2\*\*53"),
}


@pytest.mark.parametrize(("marker", "where", "message"), list(BAD_NUMBERS.values()), ids=list(BAD_NUMBERS))
def test_a_number_optuna_cannot_sample_is_a_spec_error_naming_its_place(
    marker: Any, where: str, message: str
) -> None:
    with pytest.raises(SpecError, match=message) as info:
        parse_space(sequential(linear(marker)))
    assert info.value.where == where


def test_numbers_at_the_bounds_are_taken() -> None:
    largest = sys.float_info.max
    markers = [
        {"$int": [-(2**53), 2**53], "step": 2**53},
        {"$float": [0, largest]},
        {"$float": [0, 2**53 * 1e-300], "step": 1e-300},
    ]
    space = parse_space(sequential(*[linear(marker) for marker in markers]))
    assert [p.size for p in space.parameters] == [3, None, 2**53 + 1]


def test_the_command_line_refuses_a_tiny_step_in_one_line_and_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "space.yaml").write_text(
        "type: Sequential\nlayers:\n  - {type: Dropout, args: {p: {$float: [0, 1], step: 5.0e-324}}}\n"
    )
    (tmp_path / "train.py").write_text("def objective(model, trial):\n    return 0.0\n")
    monkeypatch.chdir(tmp_path)
    arguments = ["tune", "space.yaml", "--objective", "train.py", "--input", "None,4", "--trials", "1"]
    assert main(arguments) == 1
    err = capsys.readouterr().err
    assert err.startswith("torchx tune: SpecError: $.layers[0].args.p.step: [0, 1] is more than 2**53")
    assert err.count("\n") == 1
