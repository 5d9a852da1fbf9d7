"""Ctrl-C during ``torchx tune``: the first stops after the running trial, the second at once."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState
from tune_cases import WIDTH_SPACE

OBJECTIVE = """\
import time
from pathlib import Path


def objective(model, trial):
    Path(f"started-{trial.number}").touch()
    while not Path("release").exists():  # the test says when the trial may end
        time.sleep(0.02)
    return float(trial.number)
"""

# A terminal's Ctrl-C raises KeyboardInterrupt; a process started in the background ignores
# SIGINT, and its children inherit that: the command runs as from a terminal here.
AS_FROM_A_TERMINAL = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from torchx.cli import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "space.yaml").write_text(WIDTH_SPACE)
    (tmp_path / "train.py").write_text(OBJECTIVE)
    return tmp_path


def _start(folder: Path) -> subprocess.Popen[str]:
    arguments = ["tune", "space.yaml", "--objective", "train.py", "--input", "None,4", "--trials", "3"]
    storage = ["--storage", f"sqlite:///{folder / 'study.db'}"]
    return subprocess.Popen(
        [sys.executable, "-c", AS_FROM_A_TERMINAL, *arguments, *storage],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120  # a bound on a hang, not a timing
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


def _trials(folder: Path) -> list[TrialState]:
    study = optuna.load_study(study_name="space", storage=f"sqlite:///{folder / 'study.db'}")
    return [trial.state for trial in study.trials]


def test_a_first_ctrl_c_lets_the_running_trial_finish_and_stops_the_search(folder: Path) -> None:
    process = _start(folder)
    _wait_for(folder / "started-0", process)
    process.send_signal(signal.SIGINT)
    time.sleep(0.2)  # the handler has run; the trial goes on until released
    assert process.poll() is None
    (folder / "release").touch()
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "stopping after the running trial" in stderr and "stopped after the running trial" in stderr
    assert _trials(folder) == [TrialState.COMPLETE]  # of 3 asked for, the one running when stopped


def test_a_second_ctrl_c_stops_at_once_and_fails_the_running_trial(folder: Path) -> None:
    process = _start(folder)
    _wait_for(folder / "started-0", process)
    process.send_signal(signal.SIGINT)
    time.sleep(1)  # two signals close together would be handled as one
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "interrupted, the running trial failed" in stderr
    assert _trials(folder) == [TrialState.FAIL]
