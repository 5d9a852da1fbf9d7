"""Storages for many machines: PostgreSQL (its driver, its creation lock) and the journal file,
through the API and ``torchx tune`` workers started together."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path

import optuna
import pytest
import sqlalchemy
from optuna.trial import TrialState
from tune_cases import WIDTH_SPACE

from torchx.cli import main
from torchx.core import MissingPackageError
from torchx.tune import _storage
from torchx.tune._search import search

OBJECTIVE = """\
from torchx.tune._weights import save_weights


def objective(model, trial):
    save_weights(trial, model)
    return float(sum(parameter.numel() for parameter in model.parameters()))
"""

# A worker that has imported everything, then waits for the others, so that they all open
# the storage at the same moment: ``python -c WORKER READY WORKERS torchx-arguments...``.
WORKER = """\
import os, sys, time
from pathlib import Path
import torchx.tune._cli
from torchx.cli import main
ready, workers = Path(sys.argv[1]), int(sys.argv[2])
(ready / str(os.getpid())).touch()
while len(list(ready.iterdir())) < workers:
    time.sleep(0.01)
sys.exit(main(sys.argv[3:]))
"""


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "space.yaml").write_text(WIDTH_SPACE)
    (tmp_path / "train.py").write_text(OBJECTIVE)
    return tmp_path


def tune_arguments(storage: str, trials: int) -> list[str]:
    files = ["space.yaml", "--objective", "train.py", "--input", "None,4"]
    return ["tune", *files, "--trials", str(trials), "--storage", storage]


class Widths:
    """An MLP of one Linear, ``width`` wide; its objective below is its width."""

    def sample(self, trial: optuna.Trial) -> dict[str, object]:
        width = trial.suggest_int("width", 2, 8)
        return {"type": "Sequential", "layers": [{"type": "Linear", "args": {"out_features": width}}]}


def width(model: object, trial: optuna.Trial) -> float:
    return float(trial.params["width"])


def run_workers(folder: Path, storage: str, workers: int, trials: int) -> None:
    """``workers`` ``torchx tune`` processes of ``trials`` each, started together; each exits 0."""
    ready = folder / "ready"
    ready.mkdir()
    command = [sys.executable, "-c", WORKER, str(ready), str(workers), *tune_arguments(storage, trials)]
    processes = [
        subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(workers)
    ]
    for process in processes:
        _, errors = process.communicate(timeout=300)
        assert process.returncode == 0, errors


def hide_drivers(monkeypatch: pytest.MonkeyPatch, *drivers: str) -> None:
    """Make ``drivers`` look uninstalled (``importlib.util.find_spec`` answers None)."""
    for driver in drivers:
        monkeypatch.setitem(sys.modules, driver, None)


def test_a_postgresql_url_without_a_driver_gets_the_installed_one(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    hide_drivers(monkeypatch, "psycopg")  # SQLAlchemy 2.1's default for postgresql://
    pytest.importorskip("psycopg2", reason="the fallback driver: pip install psycopg2-binary")
    storage = _storage.open_storage(postgres_url)
    optuna.create_study(storage=storage, study_name="s").optimize(lambda trial: 1.0, n_trials=2)
    again = optuna.load_study(study_name="s", storage=_storage.open_storage(postgres_url))
    assert [trial.value for trial in again.trials] == [1.0, 1.0]


def test_no_postgresql_driver_is_one_line_with_the_package_to_install(
    files: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hide_drivers(monkeypatch, "psycopg", "psycopg2")
    url = "postgresql://someone@db.example/study"
    said = "no PostgreSQL driver is installed for a postgresql:// storage; fix: pip install psycopg2-binary"
    assert _storage._with_driver("postgresql+psycopg2://someone@db/s").startswith("postgresql+psycopg2:")
    with pytest.raises(MissingPackageError, match=re.escape(said)):
        _storage.open_storage(url)
    with pytest.raises(MissingPackageError, match=re.escape(said)):
        search(Widths(), width, input=(None, 4), n_trials=0, storage=url)
    monkeypatch.chdir(files)
    for command in (tune_arguments(url, 1), ["tune-report", "--storage", url, "-o", "r.html"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"torchx {command[0]}: error: --storage {url}: cannot be opened: ")
        assert err.rstrip().endswith(said) and err.count("\n") == 1


def test_creation_on_postgresql_waits_for_the_worker_holding_the_lock(postgres_url: str) -> None:
    engine = sqlalchemy.create_engine(_storage._with_driver(postgres_url))
    probe = sqlalchemy.text("SELECT pg_try_advisory_lock(:key)")
    key = {"key": _storage._CREATION_LOCK_KEY}
    entered = threading.Event()
    with engine.connect() as other:
        with _storage.creation_lock(postgres_url):
            assert other.execute(probe, key).scalar() is False  # another worker would wait here
            waiting = threading.Thread(target=lambda: _enter(postgres_url, entered))
            waiting.start()
            assert not entered.wait(0.5)
        waiting.join(timeout=60)
        assert entered.is_set()  # it went on once the lock was released
        assert other.execute(probe, key).scalar() is True
    engine.dispose()


def _enter(storage: str, entered: threading.Event) -> None:
    with _storage.creation_lock(storage):
        entered.set()


def test_three_workers_started_together_on_a_new_postgresql_database(files: Path, postgres_url: str) -> None:
    run_workers(files, postgres_url, workers=3, trials=2)
    study = optuna.load_study(study_name="space", storage=_storage.open_storage(postgres_url))
    assert sorted(trial.number for trial in study.trials) == list(range(6))
    assert {trial.state for trial in study.trials} == {TrialState.COMPLETE}


def test_three_workers_share_one_study_in_a_journal_file(files: Path) -> None:
    run_workers(files, "journal:study.log", workers=3, trials=2)
    storage = _storage.open_storage(f"journal:{files / 'study.log'}")
    assert optuna.get_all_study_names(storage) == ["space"]
    study = optuna.load_study(study_name="space", storage=storage)
    assert sorted(trial.number for trial in study.trials) == list(range(6))
    assert {trial.state for trial in study.trials} == {TrialState.COMPLETE}
    trained = [
        trial for trial in study.trials if "reused_from" not in trial.user_attrs
    ]  # 63 widths: draws may repeat
    weights = {Path(trial.user_attrs["weights"]).name for trial in trained}
    saved = {path.name for path in (files / "study-weights").iterdir()}  # beside the journal
    assert weights <= saved and len(saved) >= 1

    pytest.importorskip(
        "matplotlib", reason="the report's plots need matplotlib: pip install 'torchx-tune[report]'"
    )
    journal = f"journal:{files / 'study.log'}"
    assert main(["tune-report", "--storage", journal, "-o", str(files / "report.html")]) == 0
    assert (files / "report.html").stat().st_size > 0


def test_search_on_a_journal_file_continues_its_study(tmp_path: Path) -> None:
    storage = f"journal:{tmp_path / 'runs.log'}"
    search(Widths(), width, input=(None, 4), n_trials=2, storage=storage, study="s")
    result = search(Widths(), width, input=(None, 4), n_trials=1, storage=storage, study="s")
    assert len(result.study.trials) == 3
    assert result.best_trial is not None and result.best_trial.value == min(
        trial.params["width"] for trial in result.study.trials
    )


@pytest.mark.parametrize(
    ("storage", "said"),
    [
        ("journal:", "journal:: names no file; fix: journal:study.log"),
        ("journal:no/such/folder/study.log", "FileNotFoundError"),
    ],
    ids=["no-file", "missing-folder"],
)
def test_a_journal_that_cannot_be_opened_is_one_line_and_exit_2(
    files: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], storage: str, said: str
) -> None:
    monkeypatch.chdir(files)
    assert main(tune_arguments(storage, 1)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"torchx tune: error: --storage {storage}: cannot be opened: ")
    assert said in err and err.count("\n") == 1


def test_report_of_a_missing_journal_is_refused_and_makes_no_file(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = files / "none.log"
    assert main(["tune-report", "--storage", f"journal:{journal}", "-o", str(files / "r.html")]) == 2
    assert f"no such journal file {journal}" in capsys.readouterr().err
    assert not journal.exists()
