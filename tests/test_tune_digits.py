"""examples/tune_digits.py: small searches of examples/digits_space.yaml, through the Python API
and through ``torchx tune`` in a subprocess on SQLite; the best spec and weights reload from their
files and score the validation accuracy the search reported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sklearn", reason="the digits ship with scikit-learn: pip install scikit-learn")
pytest.importorskip("tqdm", reason="examples/train_digits.py shows progress with tqdm: pip install tqdm")
pytest.importorskip("torchx.tune", reason="pip install ./packages/torchx-tune")

import optuna
from vision_helpers import EXAMPLES

import torchx

# isort: split
import tune_digits  # examples/ is on the path now (vision_helpers put it there)

BUDGET = 100_000


def assert_reloads_at(spec: Path, weights: Path, value: float | None) -> None:
    """The checkpoint alone, and the written spec with the checkpoint's weights, score ``value``."""
    assert value is not None
    _, _, x_validation, y_validation = tune_digits.splits()
    from_checkpoint = torchx.load_model(weights)
    from_spec = torchx.build(torchx.load_spec(spec), tune_digits.INPUT).load(weights)
    assert torchx.to_spec(from_spec) == torchx.to_spec(from_checkpoint)
    for model in (from_checkpoint, from_spec):
        assert tune_digits.accuracy(model, x_validation, y_validation) == pytest.approx(value, abs=1e-6)


def test_the_script_searches_under_the_budget_and_reloads_the_best(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # save_weights writes into ./torchx-tune-weights
    storage = f"sqlite:///{tmp_path / 'digits.db'}"
    arguments = ["--trials", "4", "--epochs", "1", "--storage", storage, "-o", "best.yaml"]
    assert tune_digits.main([*arguments, "--max-params", str(BUDGET)]) == 0
    assert "reloaded from best.yaml" in capsys.readouterr().out

    study = optuna.load_study(study_name="digits", storage=storage)
    assert len(study.trials) == 4
    assert any(trial.user_attrs["params"] > BUDGET for trial in study.trials)  # the seeded sampler draws 2
    for trial in study.trials:
        over = trial.user_attrs["params"] > BUDGET
        assert (trial.state == optuna.trial.TrialState.PRUNED) == over, trial.user_attrs
        assert ("more than max_params=100,000" in trial.user_attrs.get("pruned_reason", "")) == over
    assert_reloads_at(tmp_path / "best.yaml", tune_digits.best_weights(study), study.best_value)


def test_the_command_line_searches_with_the_objective_and_writes_the_best(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "torchx.cli", "tune", str(EXAMPLES / "digits_space.yaml")),
            *("--objective", f"{EXAMPLES / 'tune_digits.py'}:objective", "--input", "None,1,8,8"),
            *("--trials", "2", "--direction", "maximize", "--max-params", "1e6"),  # every candidate fits
            *("--storage", storage, "-o", "best.yaml", "--weights", "best.safetensors"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    study = optuna.load_study(study_name="digits_space", storage=storage)
    assert len(study.trials) == 2
    assert "study 'digits_space': 2 trials" in done.stdout
    assert_reloads_at(tmp_path / "best.yaml", tmp_path / "best.safetensors", study.best_value)
