"""``torchx tune`` (run in this process) with several objectives, a study's own direction, and
time budgets."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState
from tune_cases import WIDTH_SPACE

import torchx
from torchx.cli import main


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


Tune = Callable[..., Ran]


@pytest.fixture
def run_tune(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Tune:
    """``run_tune(objective_source, *arguments)``: ``torchx tune`` of a one-Linear space in ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "space.yaml").write_text(WIDTH_SPACE)

    def run(objective: str, *more: str) -> Ran:
        (tmp_path / "train.py").write_text(objective)
        code = main(["tune", "space.yaml", "--objective", "train.py", "--input", "None,4", *more])
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return run


def load(folder: Path) -> optuna.Study:
    return optuna.load_study(study_name="space", storage=f"sqlite:///{folder / 'study.db'}")


WIDTH_BOTH_WAYS = """\
def objective(model, trial):
    width = float(model[0].out_features)
    return width, width * width % 37
"""


def test_several_directions_write_every_trial_of_the_pareto_set(tmp_path: Path, run_tune: Tune) -> None:
    done = run_tune(
        WIDTH_BOTH_WAYS, "--trials", "6", "--direction", "maximize", "minimize", "-o", "best.yaml"
    )
    assert done.returncode == 0, done.stderr
    study = load(tmp_path)
    front = sorted(
        (trial for trial in study.best_trials if "reused_from" not in trial.user_attrs),
        key=lambda trial: trial.number,
    )
    assert front and f"study 'space': 6 trials; the Pareto set, {len(front)} trials:" in done.stdout
    written = sorted(tmp_path.glob("best-trial*.yaml"))
    assert [path.name for path in written] == sorted(f"best-trial{trial.number}.yaml" for trial in front)
    for trial in front:
        spec = torchx.to_spec(torchx.load_spec(tmp_path / f"best-trial{trial.number}.yaml"))
        assert spec["layers"][0]["args"]["out_features"] == trial.params["width"] == trial.values[0]


def test_a_study_continued_in_another_direction_is_refused_in_one_line(
    tmp_path: Path, run_tune: Tune
) -> None:
    objective = "def objective(model, trial):\n    return 1.0\n"
    assert run_tune(objective, "--trials", "1").returncode == 0
    refused = run_tune(objective, "--trials", "1", "--direction", "maximize")
    assert refused.returncode == 1
    assert refused.stderr.count("\n") == 1
    assert "it optimises ['minimize'], not ['maximize']" in refused.stderr
    assert len(load(tmp_path).trials) == 1


SLEEPS = """\
import time


def objective(model, trial):
    time.sleep(float(__import__("os").environ["SLEEP_S"]))
    return 1.0
"""


@pytest.fixture
def sleep_s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLEEP_S", "120")


@pytest.mark.usefixtures("sleep_s")
def test_a_trial_past_its_timeout_fails_with_the_reason_and_the_search_goes_on(
    tmp_path: Path, run_tune: Tune
) -> None:
    done = run_tune(SLEEPS, "--trials", "2", "--trial-timeout", "1")
    assert done.returncode == 0, done.stderr
    trials = load(tmp_path).trials
    assert [trial.state for trial in trials] == [TrialState.FAIL, TrialState.FAIL]
    assert all(
        "timed out: the trial ran past trial_timeout=1 s" in trial.user_attrs["error"] for trial in trials
    )


def test_the_study_timeout_starts_no_trial_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_tune: Tune
) -> None:
    monkeypatch.setenv("SLEEP_S", "1.5")
    done = run_tune(SLEEPS, "--trials", "50", "--timeout", "1")
    assert done.returncode == 0, done.stderr
    assert "--timeout 1 s reached" in done.stderr
    assert len(load(tmp_path).trials) == 1  # the first trial outlasts the budget: no second starts
