"""Workers that die, hang or lie: their trials are failed with the reason and retried, whatever
architecture the next worker draws; a forged heartbeat keeps nothing alive."""

from __future__ import annotations

import os
import signal
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
from tune_cases import Choices, Objective, mlp

from torchx.tune import _search
from torchx.tune._search import search, spec_key


@pytest.fixture(autouse=True)
def quiet_optuna() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def running_trial(storage: optuna.storages.BaseStorage, arch: int, heartbeat: object) -> optuna.Trial:
    """A RUNNING trial of ``mlp(3)`` (arch 0) or ``mlp(5)`` (arch 1), as a worker left it, with the
    user attribute ``heartbeat`` (None: none)."""
    study = optuna.create_study(storage=storage, study_name="s", load_if_exists=True)
    study.enqueue_trial({"arch": arch})
    trial = study.ask()
    TWO.sample(trial)
    trial.set_user_attr("spec_key", spec_key([mlp(3), mlp(5)][arch], [(None, 4)]))
    if heartbeat is not None:
        trial.set_user_attr("heartbeat", heartbeat)
    return trial


TWO = Choices(mlp(3), mlp(5))


def test_a_lost_trial_of_another_architecture_is_failed_and_retried_by_the_next_trial() -> None:
    storage = optuna.storages.InMemoryStorage()
    running_trial(storage, 1, time.time() - 1000)  # its worker died long ago, while training mlp(5)
    objective = Objective()
    sampler = optuna.samplers.RandomSampler(seed=0)
    result = search(
        Choices(mlp(3), mlp(5)),
        objective,
        input=(None, 4),
        n_trials=1,
        storage=storage,
        study="s",
        sampler=sampler,
    )
    lost, retry = result.study.trials
    assert lost.state == TrialState.FAIL and lost.user_attrs["error"].startswith(
        "worker lost (no heartbeat since "
    )
    # the next trial of this worker is the retry: the lost trial's parameters, trained
    assert (retry.state, retry.params, retry.user_attrs["retry_of"]) == (TrialState.COMPLETE, {"arch": 1}, 0)
    assert [model[0].out_features for model in objective.models] == [5]


def test_a_lost_retry_is_not_retried_again() -> None:
    storage = optuna.storages.InMemoryStorage()
    trial = running_trial(storage, 1, time.time() - 1000)
    trial.set_user_attr("retry_of", 7)
    result = search(TWO, Objective(), input=(None, 4), n_trials=1, storage=storage, study="s")
    lost, trained = result.study.trials
    assert lost.state == TrialState.FAIL and lost.user_attrs["error"].startswith("worker lost")
    assert trained.state == TrialState.COMPLETE and "retry_of" not in trained.user_attrs


@pytest.mark.parametrize(
    ("heartbeat", "error"),
    [
        (time.time() + 1e6, "worker lost (its heartbeat lies in the future)"),
        (10**400, "worker lost (no heartbeat since "),
        ("now", "worker lost (no heartbeat since "),
    ],
    ids=["in-the-future", "too-large-for-a-float", "not-a-number"],
)
def test_a_forged_heartbeat_keeps_no_trial_alive(
    monkeypatch: pytest.MonkeyPatch, heartbeat: object, error: str
) -> None:
    monkeypatch.setattr(_search, "HEARTBEAT_SECONDS", 0.01)  # the forged trial started 0.03 s ago at most
    storage = optuna.storages.InMemoryStorage()
    running_trial(storage, 0, heartbeat)  # asked first: it holds mlp(3)
    time.sleep(0.05)
    objective = Objective()
    result = search(TWO, objective, input=(None, 4), n_trials=1, storage=storage, study="s")
    forged, retry = result.study.trials
    assert forged.state == TrialState.FAIL and forged.user_attrs["error"].startswith(error)
    assert retry.user_attrs["retry_of"] == 0
    assert [model[0].out_features for model in objective.models] == [3]  # trained, not waited for


def test_a_trial_timeout_in_a_thread_fails_the_trial_and_stops_its_heartbeat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_search, "HEARTBEAT_SECONDS", 0.05)
    storage = optuna.storages.InMemoryStorage()
    seen_failed = threading.Event()

    def hangs(model: torch.nn.Module, trial: optuna.Trial) -> float:
        # no SIGALRM outside the main thread: the heartbeat thread fails the trial, and other
        # workers see it FAIL while the objective still runs
        while trial.study.trials[trial.number].state != TrialState.FAIL:
            time.sleep(0.01)
        seen_failed.set()
        return 1.0

    found: list[Any] = []
    worker = threading.Thread(
        target=lambda: found.append(
            search(
                Choices(mlp(3)),
                hangs,
                input=(None, 4),
                n_trials=1,
                storage=storage,
                study="s",
                trial_timeout=0.2,
            )
        )
    )
    worker.start()
    worker.join(60)
    assert seen_failed.is_set() and found
    (trial,) = found[0].study.trials
    assert trial.state == TrialState.FAIL  # its late value is dropped
    assert trial.user_attrs["error"] == "timed out: the trial ran past trial_timeout=0.2 s"
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("torchx-tune heartbeat")]


def test_a_trial_timeout_interrupts_the_objective_in_the_main_thread() -> None:
    def hangs(model: torch.nn.Module, trial: optuna.Trial) -> float:
        time.sleep(600)
        return 1.0

    result = search(Choices(mlp(3)), hangs, input=(None, 4), n_trials=2, study="s", trial_timeout=0.5)
    assert [trial.state for trial in result.study.trials] == [TrialState.FAIL, TrialState.FAIL]
    for trial in result.study.trials:
        assert "timed out: the trial ran past trial_timeout=0.5 s" in trial.user_attrs["error"]
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL  # given back


def test_the_study_timeout_starts_no_trial_after_it() -> None:
    def slow(model: torch.nn.Module, trial: optuna.Trial) -> float:
        time.sleep(0.3)
        return 1.0

    result = search(Choices(mlp(3)), slow, input=(None, 4), n_trials=20, study="s", timeout=0.1)
    assert len(result.study.trials) == 1


@pytest.mark.parametrize(("name", "value"), [("timeout", 0), ("trial_timeout", -1.0), ("timeout", "10")])
def test_a_timeout_is_a_positive_number_of_seconds(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"search: {name} must be a number of seconds > 0"):
        search(Choices(mlp(3)), Objective(), input=(None, 4), n_trials=1, **{name: value})  # type: ignore[arg-type]


KILLED_WORKER = """\
import sys, time
from pathlib import Path
import optuna
from torchx.tune import _search
from tune_cases import Choices, mlp

_search.HEARTBEAT_SECONDS = 0.2
started = Path(sys.argv[2])


def objective(model, trial):
    started.touch()
    time.sleep(600)
    return 1.0


optuna.logging.set_verbosity(optuna.logging.WARNING)
space = Choices(mlp(3), mlp(5))
study = _search.search(space, objective, input=(None, 4), n_trials=0, storage=sys.argv[1], study="s").study
study.enqueue_trial({"arch": 1})
_search.search(space, objective, input=(None, 4), n_trials=1, storage=sys.argv[1], study="s")
"""


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_worker_killed_mid_trial_has_its_trial_failed_and_retried_by_another(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, database: str
) -> None:
    url = (
        f"sqlite:///{tmp_path / 'study.db'}"
        if database == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    started = tmp_path / "started"
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
    errors = tmp_path / "stderr"
    with errors.open("w") as stderr:
        worker = subprocess.Popen(
            [sys.executable, "-c", KILLED_WORKER, url, str(started)], env=environment, stderr=stderr
        )
    try:
        for _ in range(6000):  # until it trains
            if started.exists() or worker.poll() is not None:
                break
            time.sleep(0.01)
        assert started.exists(), errors.read_text()
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(60)
    monkeypatch.setattr(_search, "HEARTBEAT_SECONDS", 0.2)
    time.sleep(3 * 0.2 + 0.5)  # past the grace period of its last beat
    objective = Objective()
    result = search(TWO, objective, input=(None, 4), n_trials=1, storage=url, study="s")
    killed, retry = result.study.trials
    assert killed.state == TrialState.FAIL
    assert killed.user_attrs["error"].startswith("worker lost (no heartbeat since ")
    assert (retry.state, retry.params, retry.user_attrs["retry_of"]) == (TrialState.COMPLETE, {"arch": 1}, 0)
    assert [model[0].out_features for model in objective.models] == [5]  # the killed architecture, trained


def test_a_trial_timing_out_while_it_waits_fails_and_the_search_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_search, "HEARTBEAT_SECONDS", 0.05)
    storage = optuna.storages.InMemoryStorage()
    other = running_trial(storage, 0, time.time())  # another worker trains mlp(3), beating
    finish = threading.Event()

    def beat() -> None:
        while not finish.wait(0.01):
            other.set_user_attr("heartbeat", time.time())

    for _ in range(2):  # the next two trials draw mlp(3) too
        other.study.enqueue_trial({"arch": 0})
    beating = threading.Thread(target=beat)
    beating.start()
    try:
        result = search(
            TWO,
            Objective(),
            input=(None, 4),
            n_trials=2,
            storage=storage,
            study="s",
            trial_timeout=0.3,
        )
    finally:
        finish.set()
        beating.join(10)
    waited = result.study.trials[1:]
    assert [trial.state for trial in waited] == [TrialState.FAIL, TrialState.FAIL]  # both ran, neither raised
    assert all(
        trial.user_attrs["error"] == "timed out: the trial ran past trial_timeout=0.3 s" for trial in waited
    )
