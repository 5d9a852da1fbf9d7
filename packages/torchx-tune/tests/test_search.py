from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import optuna
import pytest
import torch
from optuna.trial import TrialState
from tune_cases import Choices, Objective, mlp, search_in_thread

from torchx.core import SpecError, TypedShape, from_spec
from torchx.tune import _search, _storage, parse_space
from torchx.tune._checks import Constraints
from torchx.tune._search import search, spec_key

WORKER = Path(__file__).with_name("tune_worker.py")


@pytest.fixture(autouse=True)
def quiet_optuna() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def states(study: optuna.Study) -> list[str]:
    return [trial.state.name for trial in study.trials]


def test_the_objective_gets_the_built_model_and_the_best_spec_comes_back() -> None:
    objective = Objective()
    result = search(Choices(mlp(3), mlp(9)), objective, input=(None, 4), n_trials=6, study="s")
    assert objective.models and all(isinstance(model[0], torch.nn.Linear) for model in objective.models)
    first = objective.models[0]
    assert not any(parameter.is_meta for parameter in first.parameters())
    torch.optim.SGD(first.parameters(), lr=0.1)  # optimizer-ready
    assert result.best_trial is not None and result.best_trial.value == 4 * 3 + 3
    assert result.best_spec == mlp(3)
    assert from_spec(result.best_spec)(torch.zeros(2, 4)).shape == (2, 3)
    assert result.study.study_name == "s"


def test_candidates_that_fail_the_checks_are_pruned_with_the_reason() -> None:
    objective = Objective()
    too_big = {
        "type": "Sequential",
        "layers": [{"type": "Conv2d", "args": {"out_channels": 2, "kernel_size": 9}}],
    }
    space = Choices(mlp(3), mlp(50), too_big)
    storage = optuna.storages.InMemoryStorage()
    for arch in range(3):
        optuna.create_study(storage=storage, study_name="s", load_if_exists=True).enqueue_trial(
            {"arch": arch}
        )
    constraints = Constraints(max_params=100)
    result = search(
        space, objective, input=(None, 4), n_trials=3, storage=storage, study="s", constraints=constraints
    )
    trials = sorted(result.study.trials, key=lambda trial: trial.params["arch"])
    assert [trial.state for trial in trials] == [TrialState.COMPLETE, TrialState.PRUNED, TrialState.PRUNED]
    assert [trial.user_attrs["params"] for trial in trials] == [15, 250, None]
    assert "pruned_reason" not in trials[0].user_attrs
    assert trials[1].user_attrs["pruned_reason"] == "250 parameters, more than max_params=100"
    assert (
        trials[2].user_attrs["pruned_reason"].startswith("does not build: ShapeError: Sequential[0] Conv2d")
    )
    assert len(objective.models) == 1


def test_an_architecture_is_trained_once_and_its_value_reused() -> None:
    objective = Objective()
    result = search(Choices(mlp(3)), objective, input=(None, 4), n_trials=3)
    assert len(objective.models) == 1
    assert [trial.value for trial in result.study.trials] == [15.0, 15.0, 15.0]
    assert [trial.user_attrs.get("reused_from") for trial in result.study.trials] == [None, 0, 0]
    assert {trial.user_attrs["spec_key"] for trial in result.study.trials} == {spec_key(mlp(3), [(None, 4)])}


def test_a_study_of_another_input_is_refused_before_any_work() -> None:
    storage = optuna.storages.InMemoryStorage()
    search(Choices(mlp(3)), Objective(), input=(None, 4), n_trials=1, storage=storage, study="s")
    objective = Objective()
    with pytest.raises(SpecError, match=r"trial 0: .* or it was built for another input"):
        search(Choices(mlp(3)), objective, input=(None, 8), n_trials=1, storage=storage, study="s")
    assert objective.models == []  # not a Linear(8, 3) given the value of the Linear(4, 3) of trial 0
    assert len(optuna.load_study(study_name="s", storage=storage).trials) == 1


def test_spec_key_ignores_the_order_of_keys_not_the_input() -> None:
    assert spec_key({"type": "ReLU", "name": "a"}, [(None, 4)]) == spec_key(
        {"name": "a", "type": "ReLU"}, [(None, 4)]
    )
    assert spec_key(mlp(3), [(None, 4)]) != spec_key(mlp(4), [(None, 4)])
    assert (
        len(
            {
                spec_key(mlp(3), [shape])
                for shape in ((None, 4), (None, 8), TypedShape((None, 4), torch.int64))
            }
        )
        == 3
    )


def test_n_trials_counts_more_trials_on_the_same_study() -> None:
    storage = optuna.storages.InMemoryStorage()
    space = Choices(*(mlp(width) for width in range(1, 9)))
    search(space, Objective(), input=(None, 4), n_trials=4, storage=storage, study="s")
    result = search(space, Objective(), input=(None, 4), n_trials=4, storage=storage, study="s")
    assert len(result.study.trials) == 8
    assert search(
        space, Objective(), input=(None, 4), n_trials=0, storage=storage, study="s"
    ).study.trials == (result.study.trials)


def test_a_failing_objective_fails_its_trial_and_the_search_goes_on() -> None:
    def objective(model: torch.nn.Module, trial: optuna.Trial) -> float:
        raise ValueError("diverged\nat step 3")

    result = search(Choices(mlp(3)), objective, input=(None, 4), n_trials=2)
    assert states(result.study) == ["FAIL", "FAIL"]  # a failed architecture is tried again
    assert [trial.user_attrs["error"] for trial in result.study.trials] == [
        "ValueError: diverged; at step 3"
    ] * 2
    assert (result.best_trial, result.best_spec) == (None, None)


def test_a_nan_value_fails_its_trial_and_the_search_goes_on() -> None:
    def objective(model: torch.nn.Module, trial: optuna.Trial) -> float:
        return float("nan") if trial.number == 0 else 2.0

    result = search(Choices(mlp(3)), objective, input=(None, 4), n_trials=2)
    assert states(result.study) == ["FAIL", "COMPLETE"]  # a nan is not reused either
    assert result.study.trials[0].user_attrs["error"] == "the objective returned nan"
    assert result.best_trial is not None and result.best_trial.number == 1


@pytest.mark.parametrize(
    ("value", "told"),
    [(torch.tensor(3.0, requires_grad=True), 3.0), (3, 3.0), (float("inf"), float("inf"))],
    ids=["loss-tensor", "int", "inf"],
)
def test_an_objective_value_is_told_as_a_float(value: object, told: float) -> None:
    result = search(Choices(mlp(3)), lambda model, trial: value, input=(None, 4), n_trials=1)
    assert states(result.study) == ["COMPLETE"]
    assert result.study.trials[0].value == told


def test_a_spec_holding_an_infinite_float_is_keyed() -> None:
    clamp = {"type": "Sequential", "layers": [{"type": "Hardtanh", "args": {"min_val": -float("inf")}}]}
    result = search(Choices(clamp, clamp), Objective(), input=(None, 4), n_trials=2)
    assert states(result.study) == ["COMPLETE", "COMPLETE"]
    assert result.study.trials[1].user_attrs["reused_from"] == 0
    assert spec_key(clamp, [(None, 4)]) != spec_key(
        {**clamp, "layers": [{"type": "Hardtanh", "args": {"min_val": -1e308}}]}, [(None, 4)]
    )


@pytest.mark.parametrize("direction", ["minimize", "maximize"], ids=["minimize", "maximize"])
def test_the_best_of_equal_values_is_the_earliest_trial_on_any_storage(
    tmp_path: Path, direction: str
) -> None:
    widths = range(2, 8)
    storage = f"sqlite:///{tmp_path}/s.db"
    study = optuna.create_study(storage=storage, study_name="s", direction=direction)
    for arch in range(len(widths)):
        study.enqueue_trial({"arch": arch})
    worst = 9.0 if direction == "minimize" else -9.0
    result = search(
        Choices(*(mlp(width) for width in widths)),
        lambda model, trial: worst if trial.number == 0 else 1.0,
        input=(None, 4),
        n_trials=len(widths),
        storage=storage,
        study="s",
        direction=direction,  # type: ignore[arg-type]
    )
    assert result.best_trial is not None and result.best_trial.number == 1
    assert result.best_spec == mlp(3)


def test_the_best_spec_is_the_architecture_its_trial_trained() -> None:
    space = parse_space(
        {
            "type": "Sequential",
            "layers": [
                {
                    "$repeat": {
                        "times": {"$int": [0, 2]},
                        "layers": [{"type": "Linear", "args": {"out_features": {"$int": [2, 5]}}}],
                    }
                },
                {
                    "$choice": [
                        {"type": "ReLU"},
                        [{"type": "Linear", "args": {"out_features": {"$int": [2, 4]}}}, {"type": "Tanh"}],
                        [],
                    ]
                },
                {"type": "Dropout", "args": {"p": {"$float": [0.0, 0.5], "step": 0.1}}},
            ],
        }
    )
    trained: dict[int, str] = {}

    def objective(model: torch.nn.Module, trial: optuna.Trial) -> float:
        trained[trial.number] = trial.user_attrs["spec_key"]
        return float(trial.number)

    sampler = optuna.samplers.RandomSampler(seed=0)
    result = search(space, objective, input=(None, 4), n_trials=12, sampler=sampler, direction="maximize")
    for trial in result.study.get_trials(states=(TrialState.COMPLETE,)):
        again = space.sample(optuna.trial.FixedTrial(trial.params, trial.number))
        assert spec_key(again, [(None, 4)]) == trial.user_attrs["spec_key"]
    assert result.best_trial is not None and result.best_spec is not None
    assert spec_key(result.best_spec, [(None, 4)]) == trained[max(trained)]


def test_a_best_trial_the_space_does_not_give_is_refused() -> None:
    storage = optuna.storages.InMemoryStorage()
    search(Choices(mlp(3), mlp(5)), Objective(), input=(None, 4), n_trials=2, storage=storage, study="s")
    with pytest.raises(SpecError, match="the study did not run with this search space and input"):
        search(Choices(mlp(4), mlp(6)), Objective(), input=(None, 4), n_trials=0, storage=storage, study="s")
    edited = parse_space(
        {
            "type": "Sequential",
            "layers": [{"type": "Linear", "args": {"out_features": {"$int": [2, 9], "name": "arch"}}}],
        }
    )
    with pytest.raises(SpecError, match="the study did not run with this search space and input"):
        search(edited, Objective(), input=(None, 4), n_trials=0, storage=storage, study="s")


def test_a_sampler_that_runs_out_stops_the_search() -> None:
    sampler = optuna.samplers.GridSampler({"arch": [0, 1]})
    result = search(Choices(mlp(3), mlp(5)), Objective(), input=(None, 4), n_trials=5, sampler=sampler)
    assert sorted(trial.params["arch"] for trial in result.study.trials) == [0, 1]
    assert result.best_spec == mlp(3)


def test_an_objective_stopping_the_study_stops_the_search_after_its_trial() -> None:
    def objective(model: torch.nn.Module, trial: optuna.Trial) -> float:
        if trial.number == 0:
            trial.study.stop()
        return 1.0

    storage = optuna.storages.InMemoryStorage()
    space = Choices(mlp(3), mlp(5))
    result = search(space, objective, input=(None, 4), n_trials=5, storage=storage, study="s")
    assert states(result.study) == ["COMPLETE"]
    result = search(space, objective, input=(None, 4), n_trials=2, storage=storage, study="s")
    assert states(result.study) == ["COMPLETE"] * 3  # the next search runs its trials


@pytest.mark.parametrize("raised", [ValueError("diverged"), KeyboardInterrupt()], ids=["error", "interrupt"])
def test_a_trial_taken_for_lost_keeps_that_reason_when_its_objective_then_raises(
    raised: BaseException,
) -> None:
    storage = optuna.storages.InMemoryStorage()

    def objective(model: torch.nn.Module, trial: optuna.Trial) -> float:
        if trial.number == 0:  # a waiting worker fails it meanwhile
            trial_id = storage.get_trial_id_from_study_id_trial_number(storage.get_study_id_from_name("s"), 0)
            storage.set_trial_user_attr(trial_id, "error", "worker lost")
            storage.set_trial_state_values(trial_id, TrialState.FAIL)
            raise raised
        return 1.0

    with contextlib.suppress(KeyboardInterrupt):
        search(Choices(mlp(3)), objective, input=(None, 4), n_trials=2, storage=storage, study="s")
    study = optuna.load_study(study_name="s", storage=storage)
    assert study.trials[0].state == TrialState.FAIL and study.trials[0].user_attrs["error"] == "worker lost"
    assert states(study) == (["FAIL"] if isinstance(raised, KeyboardInterrupt) else ["FAIL", "COMPLETE"])


def test_trial_pruned_from_the_objective_prunes_the_trial() -> None:
    def objective(model: torch.nn.Module, trial: optuna.Trial) -> float:
        trial.report(0.5, step=1)
        raise optuna.TrialPruned

    result = search(Choices(mlp(3)), objective, input=(None, 4), n_trials=1)
    assert states(result.study) == ["PRUNED"]
    assert "pruned_reason" not in result.study.trials[0].user_attrs


def test_an_interrupt_fails_the_running_trial_and_is_raised_again() -> None:
    storage = optuna.storages.InMemoryStorage()
    space = Choices(mlp(3), mlp(5))
    for arch in range(2):  # two architectures: trial 1 is trained, not reused
        optuna.create_study(storage=storage, study_name="s", load_if_exists=True).enqueue_trial(
            {"arch": arch}
        )

    def objective(model: torch.nn.Module, trial: optuna.Trial) -> float:
        if trial.number == 1:
            raise KeyboardInterrupt
        return 1.0

    with pytest.raises(KeyboardInterrupt):
        search(space, objective, input=(None, 4), n_trials=5, storage=storage, study="s")
    study = optuna.load_study(study_name="s", storage=storage)
    assert states(study) == ["COMPLETE", "FAIL"]
    assert study.trials[1].user_attrs["error"] == "KeyboardInterrupt"
    assert (
        len(search(space, Objective(), input=(None, 4), n_trials=2, storage=storage, study="s").study.trials)
        == 4
    )


def test_a_trial_waits_for_another_worker_training_its_architecture(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_search, "HEARTBEAT_SECONDS", 0.02)  # the wait below spans many grace periods
    storage = optuna.storages.InMemoryStorage()
    started, finish = threading.Event(), threading.Event()
    calls: list[int] = []

    def slow(model: torch.nn.Module, trial: optuna.Trial) -> float:
        calls.append(trial.number)
        started.set()
        assert finish.wait(10)
        return 2.0

    search(Choices(mlp(3)), slow, input=(None, 4), n_trials=0, storage=storage, study="s")
    first = threading.Thread(
        target=search,
        args=(Choices(mlp(3)), slow),
        kwargs={"input": (None, 4), "n_trials": 1, "storage": storage, "study": "s"},
    )
    first.start()
    assert started.wait(10)
    waiting, second = search_in_thread(slow, storage)
    waiting.join(0.5)
    assert waiting.is_alive()  # waiting for the first trial
    finish.set()
    first.join(10)
    waiting.join(10)
    assert calls == [0]
    assert [(trial.value, trial.user_attrs.get("reused_from")) for trial in second[0].study.trials] == [
        (2.0, None),
        (2.0, 0),
    ]


def heartbeats() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("torchx-tune heartbeat")]


def lost_trial(storage: optuna.storages.BaseStorage, heartbeat: float | None) -> optuna.Trial:
    """A RUNNING trial of ``mlp(3)`` asked first, as a worker killed
    while training it leaves it: last beat at ``heartbeat`` (None: it never beat)."""
    trial = optuna.create_study(storage=storage, study_name="s").ask()
    Choices(mlp(3)).sample(trial)
    trial.set_user_attr("spec_key", spec_key(mlp(3), [(None, 4)]))
    if heartbeat is not None:
        trial.set_user_attr("heartbeat", heartbeat)
    return trial


@pytest.mark.parametrize(
    ("beat_age", "heartbeat_seconds"),
    [(100.0, 10.0), (None, 0.01)],
    ids=["last-beat-long-ago", "no-beat-since-its-start"],
)
def test_a_trial_whose_worker_is_lost_is_failed_and_its_architecture_trained(
    monkeypatch: pytest.MonkeyPatch, beat_age: float | None, heartbeat_seconds: float
) -> None:
    monkeypatch.setattr(_search, "HEARTBEAT_SECONDS", heartbeat_seconds)
    storage = optuna.storages.InMemoryStorage()
    lost_trial(storage, None if beat_age is None else time.time() - beat_age)
    objective = Objective()
    result = search(Choices(mlp(3)), objective, input=(None, 4), n_trials=1, storage=storage, study="s")
    assert len(objective.models) == 1
    lost, trained = result.study.trials
    assert (lost.state, trained.state, trained.value) == (TrialState.FAIL, TrialState.COMPLETE, 15.0)
    assert re.fullmatch(
        r"worker lost \(no heartbeat since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)", lost.user_attrs["error"]
    )
    assert result.best_trial is not None and result.best_trial.number == 1


def test_a_beating_trial_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_search, "HEARTBEAT_SECONDS", 0.02)
    storage = optuna.storages.InMemoryStorage()
    other = lost_trial(storage, time.time())
    finish = threading.Event()

    def beat() -> None:  # the other worker, alive: it beats until it tells its value
        while not finish.wait(0.01):
            other.set_user_attr("heartbeat", time.time())
        other.study.tell(other, 7.0)

    beating = threading.Thread(target=beat)
    beating.start()
    objective = Objective()
    waiting, found = search_in_thread(objective, storage)
    waiting.join(0.5)  # 25 heartbeats
    assert waiting.is_alive()
    finish.set()
    beating.join(10)
    waiting.join(10)
    assert objective.models == []
    assert [(trial.state.name, trial.value) for trial in found[0].study.trials] == [
        ("COMPLETE", 7.0),
        ("COMPLETE", 7.0),
    ]
    assert "error" not in found[0].study.trials[0].user_attrs


@pytest.mark.parametrize(
    "outcome", ["returns", "raises", "interrupted"], ids=["returns", "raises", "interrupted"]
)
def test_the_heartbeat_beats_while_the_trial_runs_and_stops_with_it(
    monkeypatch: pytest.MonkeyPatch, outcome: str
) -> None:
    monkeypatch.setattr(_search, "HEARTBEAT_SECONDS", 0.01)
    beats: list[object] = []

    def objective(model: torch.nn.Module, trial: optuna.Trial) -> float:
        assert len(heartbeats()) == 1
        while "heartbeat" not in trial.study.trials[trial.number].user_attrs:  # a beat after a period
            time.sleep(0.005)
        beats.append(trial.study.trials[trial.number].user_attrs["heartbeat"])
        if outcome == "raises":
            raise ValueError("diverged")
        if outcome == "interrupted":
            raise KeyboardInterrupt
        return 1.0

    storage = optuna.storages.InMemoryStorage()
    with contextlib.suppress(KeyboardInterrupt):
        search(Choices(mlp(3)), objective, input=(None, 4), n_trials=1, storage=storage, study="s")
    assert heartbeats() == []
    assert len(beats) == 1 and isinstance(beats[0], float)
    last = optuna.load_study(study_name="s", storage=storage).trials[0].user_attrs["heartbeat"]
    assert last >= beats[0]  # it beat on until the trial ended, and no more after
    time.sleep(0.05)
    assert optuna.load_study(study_name="s", storage=storage).trials[0].user_attrs["heartbeat"] == last


class FlakyBeats(optuna.storages.InMemoryStorage):
    """A storage whose first heartbeat write fails (a database locked a moment); sets ``beaten``
    at the next one."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False
        self.beaten = threading.Event()

    def set_trial_user_attr(self, trial_id: int, key: str, value: Any) -> None:
        if key == "heartbeat" and not self.failed:
            self.failed = True
            raise RuntimeError("database is locked")
        super().set_trial_user_attr(trial_id, key, value)
        if key == "heartbeat" and self.failed:
            self.beaten.set()


def test_the_heartbeat_beats_on_after_a_failed_write(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_search, "HEARTBEAT_SECONDS", 0.01)
    storage = FlakyBeats()

    def objective(model: torch.nn.Module, trial: optuna.Trial) -> float:
        assert storage.beaten.wait(timeout=60), "the heartbeat stopped at its failed write"
        return 1.0

    result = search(Choices(mlp(3)), objective, input=(None, 4), n_trials=1, storage=storage, study="s")
    assert states(result.study) == ["COMPLETE"] and storage.failed
    assert heartbeats() == []


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///study.db", "study.db"),
        ("sqlite:///my%20runs/study.db?timeout=5", "my runs/study.db"),
        ("sqlite+pysqlite:////abs/study.db", "/abs/study.db"),
        ("sqlite:///:memory:", None),
        ("sqlite://", None),
        ("postgresql://user@host/study", None),
        ("not a url", None),
    ],
    ids=["relative", "percent-escaped", "driver", "memory", "no-file", "postgresql", "not-a-url"],
)
def test_the_sqlite_file_of_a_url_is_read_as_sqlalchemy_reads_it(url: str, path: str | None) -> None:
    assert _storage.sqlite_path(url) == (None if path is None else Path(path))


def test_a_search_on_an_sqlite_file_in_a_folder_with_a_space(tmp_path: Path) -> None:
    (tmp_path / "my runs").mkdir()
    storage = f"sqlite:///{tmp_path}/my%20runs/study.db"
    result = search(Choices(mlp(3)), Objective(), input=(None, 4), n_trials=1, storage=storage, study="s")
    assert states(result.study) == ["COMPLETE"]
    assert sorted(path.name for path in (tmp_path / "my runs").iterdir()) == ["study.db", "study.db.lock"]


def run_workers(storage: str, study: str, n_trials: int, workers: int, tmp_path: Path) -> Path:
    """Start ``workers`` processes at once on one study; the folder of their objective calls."""
    calls, ready = tmp_path / "calls", tmp_path / "ready"
    calls.mkdir()
    ready.mkdir()
    command = [
        sys.executable,
        str(WORKER),
        storage,
        study,
        str(n_trials),
        str(calls),
        str(ready),
        str(workers),
    ]
    processes = [subprocess.Popen(command, stderr=subprocess.PIPE, text=True) for _ in range(workers)]
    for process in processes:
        _, errors = process.communicate(timeout=120)
        assert process.returncode == 0, errors
    return calls


def test_two_workers_create_one_study_at_once_and_train_each_architecture_once(tmp_path: Path) -> None:
    url = (
        f"sqlite:///{tmp_path / 'study.db'}"  # a new file: both workers create its tables at the same moment
    )
    calls = run_workers(url, "shared", 4, 2, tmp_path)
    study = optuna.load_study(study_name="shared", storage=url)
    assert len(study.trials) == 8
    assert all(trial.state == TrialState.COMPLETE for trial in study.trials)
    trained = [path.name.rsplit("-", 1)[0] for path in calls.iterdir()]
    assert len(trained) == len(set(trained))  # the workers sample 3 architectures 8 times
    assert len(trained) == len({trial.user_attrs["spec_key"] for trial in study.trials})
