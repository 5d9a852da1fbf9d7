"""What the objective samples and returns: its own parameters are part of what is trained once,
several objectives make a Pareto set, and a study continues only in its own directions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
import pytest
import torch
from optuna.trial import TrialState
from tune_cases import Choices, mlp, search_in_thread

from torchx.core import SpecError
from torchx.tune import _search
from torchx.tune._search import search, spec_key


@pytest.fixture(autouse=True)
def quiet_optuna() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)


class LearningRates:
    """An objective that samples its own learning rate; records each (trial, lr) it trains."""

    def __init__(self, choices: list[float]) -> None:
        self.choices = choices
        self.trained: list[tuple[int, float]] = []

    def __call__(self, model: torch.nn.Module, trial: optuna.Trial) -> float:
        lr = trial.suggest_categorical("lr", self.choices)
        self.trained.append((trial.number, lr))
        return lr * 100


def test_an_architecture_is_trained_once_per_learning_rate_the_objective_samples() -> None:
    objective = LearningRates([0.1, 0.01])
    sampler = optuna.samplers.RandomSampler(seed=0)
    result = search(Choices(mlp(3)), objective, input=(None, 4), n_trials=10, study="s", sampler=sampler)
    trials = result.study.trials
    assert all(trial.state == TrialState.COMPLETE for trial in trials)
    # every trial holds the learning rate it stands for, reused or trained, and its value is that rate's
    assert all(trial.params["lr"] * 100 == trial.value for trial in trials)
    assert {trial.params["lr"] for trial in trials} == {0.1, 0.01}  # both drawn, none collapsed
    # trained once per combination: the first of each rate trains, the rest reuse it
    assert sorted(lr for _, lr in objective.trained) == [0.01, 0.1]
    for trial in trials:
        source = trial.user_attrs.get("reused_from", trial.number)
        assert trials[source].params == trial.params
        assert trial.user_attrs["objective_params"] == ["lr"]


def test_a_continuous_parameter_of_the_objective_trains_every_trial() -> None:
    calls: list[float] = []

    def objective(model: torch.nn.Module, trial: optuna.Trial) -> float:
        calls.append(trial.suggest_float("lr", 1e-4, 1e-1, log=True))
        return calls[-1]

    result = search(Choices(mlp(3)), objective, input=(None, 4), n_trials=4, study="s")
    assert len(calls) == 4  # four rates drawn, four trainings: no rate is collapsed onto another
    assert [trial.params["lr"] for trial in result.study.trials] == calls
    assert not any("reused_from" in trial.user_attrs for trial in result.study.trials)


def test_an_objective_that_samples_nothing_still_trains_each_architecture_once() -> None:
    calls: list[int] = []

    def objective(model: torch.nn.Module, trial: optuna.Trial) -> float:
        calls.append(trial.number)
        return 1.0

    result = search(Choices(mlp(3)), objective, input=(None, 4), n_trials=3, study="s")
    assert calls == [0]
    assert [trial.user_attrs.get("reused_from") for trial in result.study.trials] == [None, 0, 0]


def sizes(model: torch.nn.Module, trial: optuna.Trial) -> tuple[float, float]:
    """Two objectives pulling apart: the parameter count (maximize) and itself (minimize)."""
    count = float(sum(parameter.numel() for parameter in model.parameters()))
    return count, count


def test_several_objectives_give_the_pareto_set_and_reuse_every_value() -> None:
    def two(model: torch.nn.Module, trial: optuna.Trial) -> tuple[float, float]:
        width = model[0].out_features
        return float(width), float(width * width % 7)  # 3 -> (3, 2), 5 -> (5, 4), 9 -> (9, 4)

    space = Choices(mlp(3), mlp(5), mlp(9))
    sampler = optuna.samplers.RandomSampler(seed=0)
    result = search(
        space,
        two,
        input=(None, 4),
        n_trials=12,
        study="s",
        sampler=sampler,
        directions=["maximize", "minimize"],
    )
    assert {trial.params["arch"] for trial in result.study.trials} == {0, 1, 2}  # every width tried
    assert [direction.name for direction in result.study.directions] == ["MAXIMIZE", "MINIMIZE"]
    assert result.best_trial is None and result.best_spec is None  # no single best
    # (3, 2) and (9, 4) are on the front; (5, 4) is dominated by (9, 4)
    assert sorted(trial.values for trial in result.best_trials) == [[3.0, 2.0], [9.0, 4.0]]
    numbers = [trial.number for trial in result.best_trials]
    assert numbers == sorted(numbers)
    widths = [spec["layers"][0]["args"]["out_features"] for spec in result.best_specs]
    assert widths == [int(trial.values[0]) for trial in result.best_trials]


def test_several_objectives_reuse_both_values() -> None:
    calls: list[int] = []

    def two(model: torch.nn.Module, trial: optuna.Trial) -> list[float]:
        calls.append(trial.number)
        return [1.0, 2.0]

    result = search(
        Choices(mlp(3)), two, input=(None, 4), n_trials=2, study="s", directions=["maximize", "minimize"]
    )
    assert calls == [0]
    assert [trial.values for trial in result.study.trials] == [[1.0, 2.0], [1.0, 2.0]]
    assert result.study.trials[1].user_attrs["reused_from"] == 0


@pytest.mark.parametrize(
    ("returned", "error"),
    [
        (1.0, "the objective returned 1 value(s) for 2 direction(s): 1.0"),
        ((1.0, 2.0, 3.0), "the objective returned 3 value(s) for 2 direction(s): (1.0, 2.0, 3.0)"),
        ((1.0, float("nan")), "the objective returned nan"),
    ],
    ids=["one-for-two", "three-for-two", "nan"],
)
def test_an_objective_returning_the_wrong_count_fails_its_trial_with_the_reason(
    returned: object, error: str
) -> None:
    result = search(
        Choices(mlp(3)),
        lambda model, trial: returned,  # type: ignore[arg-type, return-value]
        input=(None, 4),
        n_trials=1,
        study="s",
        directions=["maximize", "minimize"],
    )
    (trial,) = result.study.trials
    assert (trial.state, trial.user_attrs["error"]) == (TrialState.FAIL, error)


@pytest.mark.parametrize(
    ("first", "then", "held", "asked"),
    [
        ({"direction": "minimize"}, {"direction": "maximize"}, "['minimize']", "['maximize']"),
        ({}, {"directions": ["minimize", "maximize"]}, "['minimize']", "['minimize', 'maximize']"),
        (
            {"directions": ["maximize", "minimize"]},
            {"directions": ["minimize", "maximize"]},
            "['maximize', 'minimize']",
            "['minimize', 'maximize']",
        ),
    ],
    ids=["direction", "objective-count", "order"],
)
def test_a_study_is_continued_only_in_its_own_directions(
    tmp_path: Path, first: dict[str, Any], then: dict[str, Any], held: str, asked: str
) -> None:
    run = {"input": (None, 4), "storage": f"sqlite:///{tmp_path / 'study.db'}", "study": "s"}
    search(Choices(mlp(3)), sizes, n_trials=0, **run, **first)  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="optimises") as raised:
        search(Choices(mlp(3)), sizes, n_trials=1, **run, **then)  # type: ignore[arg-type]
    assert str(raised.value).startswith(f"study 's': it optimises {held}, not {asked}")
    study = optuna.load_study(study_name="s", storage=run["storage"])
    assert study.trials == []  # refused before any trial


def test_direction_and_directions_together_are_refused() -> None:
    with pytest.raises(ValueError, match="give direction or directions, not both"):
        search(
            Choices(mlp(3)), sizes, input=(None, 4), n_trials=1, direction="maximize", directions=["maximize"]
        )


def test_a_trial_waits_for_an_earlier_trial_keyed_by_its_architecture_alone() -> None:
    """An earlier RUNNING trial keyed by the architecture alone may be about to take the same
    combination (sampling the objective's known parameters, or in its objective): a later trial
    of that combination waits for it, then reuses its value."""
    storage = optuna.storages.InMemoryStorage()
    study = optuna.create_study(storage=storage, study_name="s")
    arch = spec_key(mlp(3), [(None, 4)])

    def trained(value: float) -> optuna.trial.FrozenTrial:
        return optuna.trial.create_trial(
            params={"arch": 0, "opt": "sgd"},
            distributions={
                "arch": optuna.distributions.CategoricalDistribution([0]),
                "opt": optuna.distributions.CategoricalDistribution(["sgd"]),
            },
            value=value,
            user_attrs={"spec_key": arch, "objective_params": ["opt"]},
        )

    study.add_trial(trained(1.0))  # the objective samples "opt": the combination key holds it
    earlier = study.ask()  # keyed by the architecture alone so far
    Choices(mlp(3)).sample(earlier)
    earlier.set_user_attr("spec_key", arch)
    calls: list[int] = []

    def objective(model: torch.nn.Module, trial: optuna.Trial) -> float:
        calls.append(trial.number)
        return float(trial.suggest_categorical("opt", ["sgd"]) == "sgd")

    later, found = search_in_thread(objective, storage)
    later.join(0.5)
    assert later.is_alive()  # waiting for the earlier trial, which may take its combination
    earlier.suggest_categorical("opt", ["sgd"])
    earlier.set_user_attr("objective_params", ["opt"])
    earlier.set_user_attr("train_key", found_key := _search._combination_key(arch, {"opt": "sgd"}))
    study.tell(earlier, 5.0)
    later.join(30)
    assert calls == []  # reused, not trained again
    reused = found[0].study.trials[-1]
    assert (reused.value, reused.user_attrs["reused_from"]) == (5.0, earlier.number)
    assert reused.user_attrs["train_key"] == found_key
