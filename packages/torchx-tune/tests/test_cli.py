"""``torchx tune`` and ``torchx tune-report``: end to end in a subprocess on SQLite, and their refusals."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from pathlib import Path

import optuna
import pytest
from tune_cases import run_torchx

import torchx
import torchx.core
from torchx.cli import main

SPACE = """\
type: Sequential
layers:
  - type: Linear
    args: {out_features: {"$int": [2, 64], name: width}}
  - type: ReLU
  - type: Linear
    args: {out_features: 1}
"""

OBJECTIVE = """\
from torchx.tune._weights import save_weights


def objective(model, trial):
    save_weights(trial, model)
    return float(sum(parameter.numel() for parameter in model.parameters()))
"""


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "space.yaml").write_text(SPACE)
    (tmp_path / "train.py").write_text(OBJECTIVE)
    return tmp_path


def tune_arguments(*more: str) -> list[str]:
    return ["tune", "space.yaml", "--objective", "train.py:objective", "--input", "None,4", *more]


def test_search_resume_best_files_and_report(files: Path) -> None:
    storage = f"sqlite:///{files / 'study.db'}"
    first = run_torchx(files, *tune_arguments("--trials", "3", "--storage", storage))
    assert first.returncode == 0, first.stderr
    second = run_torchx(
        files,
        *tune_arguments(
            "--trials", "2", "--storage", storage, "-o", "best.yaml", "--weights", "best.safetensors"
        ),
    )
    assert second.returncode == 0, second.stderr
    study = optuna.load_study(study_name="space", storage=storage)
    assert len(study.trials) == 5  # 3, then 2 more
    best = min(
        (trial for trial in study.trials if trial.value is not None), key=lambda trial: trial.value or 0
    )
    assert "study 'space': 5 trials; the best 5:" in second.stdout
    assert re.search(rf"^{best.number}\s+COMPLETE\s+{best.value:g}\s", second.stdout, re.MULTILINE)

    width = best.params["width"]
    assert torchx.to_spec(torchx.load_spec(files / "best.yaml"))["layers"][0]["args"]["out_features"] == width
    model = torchx.load_model(files / "best.safetensors")
    assert (
        sum(parameter.numel() for parameter in model.parameters())
        == best.value
        == 4 * width + width + width + 1
    )

    # The reports in this process (the search was end to end; a third subprocess would only add time).
    pytest.importorskip(
        "matplotlib", reason="the report's plots need matplotlib: pip install 'torchx-tune[report]'"
    )
    assert (
        main(["tune-report", "--storage", storage, "--study", "space", "-o", str(files / "report.html")]) == 0
    )
    assert main(["tune-report", "--storage", storage, "-o", str(files / "report.png")]) == 0  # its only study
    assert (files / "report.png").read_bytes().startswith(b"\x89PNG")
    page = (files / "report.html").read_text(encoding="utf-8")
    assert [int(number) for number in re.findall(r"<tr><td>(\d+)</td>", page)] == [0, 1, 2, 3, 4]


def test_progress_is_plain_lines_without_tqdm(
    files: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(files)
    monkeypatch.setitem(sys.modules, "tqdm", None)
    assert main(tune_arguments("--trials", "2", "--storage", "sqlite:///study.db", "--max-params", "1")) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["trial 1/2: 1 pruned, 0 failed, no best yet", "trial 2/2: 2 pruned, 0 failed, no best yet"]
    pruned = optuna.load_study(study_name="space", storage="sqlite:///study.db").trials[0]
    assert pruned.user_attrs["pruned_reason"].endswith("parameters, more than max_params=1")


@pytest.mark.parametrize(
    ("storage", "said"),
    [
        ("nosuchdialect://x", "Can't load plugin"),
        ("sqlite:///no/such/folder/study.db", "FileNotFoundError"),
        ("not a url", "Could not parse SQLAlchemy URL"),
    ],
    ids=["unknown-dialect", "missing-folder", "not-a-url"],
)
def test_a_storage_that_cannot_be_opened_is_one_line_and_exit_2(
    files: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], storage: str, said: str
) -> None:
    monkeypatch.chdir(files)
    assert main(tune_arguments("--trials", "1", "--storage", storage)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"torchx tune: error: --storage {storage}: cannot be opened: ")
    assert said in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("objective", "said"),
    [
        ("missing.py:objective", "missing.py: no such file"),
        (
            "train.py:train",
            "--objective train.py:train: train.py defines no function 'train' (it defines objective)",
        ),
        ("train.py:not-a-name", "'not-a-name' is not a function name"),
    ],
    ids=["missing-file", "missing-function", "bad-name"],
)
def test_a_missing_objective_is_named_and_exit_2(
    files: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    objective: str,
    said: str,
) -> None:
    monkeypatch.chdir(files)
    arguments = ["tune", "space.yaml", "--objective", objective, "--input", "None,4", "--trials", "1"]
    assert main(arguments) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1
    assert not (files / "study.db").exists()  # refused before the study was opened


def test_report_of_a_missing_database_or_study_exit_2(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = f"sqlite:///{files / 'none.db'}"
    assert main(["tune-report", "--storage", missing, "-o", str(files / "r.html")]) == 2
    assert "no such database file" in capsys.readouterr().err
    assert not (files / "none.db").exists()
    storage = f"sqlite:///{files / 'study.db'}"
    optuna.create_study(study_name="one", storage=storage)
    assert main(["tune-report", "--storage", storage, "--study", "two", "-o", str(files / "r.html")]) == 2
    assert "no study 'two': it holds 'one'; fix: --study NAME" in capsys.readouterr().err


def _hostile_weights(folder: Path) -> dict[str, Path]:
    """Files a study database could name as the best trial's weights, each not to be copied."""
    secret = folder / "secret.txt"
    secret.write_text("not yours")
    weights = folder / "study-weights"
    (weights / "link.safetensors").symlink_to(secret)
    (weights / "text.safetensors").write_text("not a checkpoint")
    other = torchx.build(
        torchx.core.from_spec(
            {"type": "Sequential", "layers": [{"type": "Linear", "args": {"out_features": 5}}]}
        ),
        (None, 4),
    )
    other.save(weights / "other.safetensors")
    return {
        "outside": secret,
        "climbing-out": weights / ".." / "secret.txt",
        "link-out": weights / "link.safetensors",
        "not-a-checkpoint": weights / "text.safetensors",
        "another-architecture": weights / "other.safetensors",
    }


@pytest.mark.parametrize(
    ("named", "said"),
    [
        ("outside", "outside this search's weights folder"),
        ("climbing-out", "outside this search's weights folder"),
        ("link-out", "outside this search's weights folder"),
        ("not-a-checkpoint", "study-weights/text.safetensors: "),
        ("another-architecture", "hold another architecture than its spec"),
    ],
    ids=["outside", "climbing-out", "link-out", "not-a-checkpoint", "another-architecture"],
)
def test_weights_the_database_names_are_copied_only_from_the_weights_folder_as_a_checkpoint(
    files: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], named: str, said: str
) -> None:
    monkeypatch.chdir(files)
    assert main(tune_arguments("--trials", "1")) == 0  # sqlite:///study.db, weights in study-weights/
    path = _hostile_weights(files)[named]
    with sqlite3.connect(files / "study.db") as database:
        database.execute(
            "UPDATE trial_user_attributes SET value_json = ? WHERE key = 'weights'", (json.dumps(str(path)),)
        )
    capsys.readouterr()
    assert main(tune_arguments("--trials", "0", "--weights", "best.safetensors")) == 1
    err = capsys.readouterr().err
    assert said in err and err.rstrip().endswith("nothing written")
    assert not (files / "best.safetensors").exists()
