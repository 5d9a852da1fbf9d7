"""Study data are input (issue 42): what a forged or careless study holds is shown as text, clipped,
left out of plots and the best trials, and never reaches a terminal raw or raises a traceback."""

from __future__ import annotations

import sqlite3
import unicodedata
from pathlib import Path

import numpy
import optuna
import pytest
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution
from optuna.trial import TrialState, create_trial

from torchx.cli import main
from torchx.core import CheckpointError
from torchx.tune._ranking import best_scored
from torchx.tune._report import _figure, trial_rows, write_report
from torchx.tune._untrusted import MAX_COUNT, NOTE_LIMIT, count, finite, shown
from torchx.tune._weights import MAX_PATH_CHARS, checked_weights

pytest.importorskip(
    "matplotlib", reason="the report's plots need matplotlib: pip install 'torchx-tune[report]'"
)

ESCAPES = "\x1b]0;owned\x07\x1b[2J\x00\x9b\u202e"
"""A window title, a screen clear, NUL, a C1 CSI and a right-to-left override."""
SHOWN = "\\x1b]0;owned\\x07\\x1b[2J\\x00\\x9b\\u202e"
LONG = ESCAPES + "x" * 5_000_000


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain text, ünïcode, 数", "plain text, ünïcode, 数"),
        (ESCAPES, SHOWN),
        ("line\nbreak\ttab\u2028", "line\\nbreak\\ttab\\u2028"),
        ("\ud800 lone surrogate", "\\ud800 lone surrogate"),
        (["a", "\x1b"], "['a', '\\x1b']"),
        (None, "None"),
    ],
    ids=["plain", "escapes", "whitespace", "surrogate", "list", "none"],
)
def test_shown_escapes_what_a_terminal_would_act_on(value: object, expected: str) -> None:
    assert shown(value) == expected


def test_shown_clips_before_escaping() -> None:
    assert shown("x" * NOTE_LIMIT) == "x" * NOTE_LIMIT
    assert shown(LONG) == SHOWN + "x" * (NOTE_LIMIT - 1 - len(ESCAPES)) + "…"
    assert shown("abcdef", most=4) == "abc…"
    huge = shown(10**400)
    assert len(huge) < 50 and huge.startswith("1000") and "..." in huge


@pytest.mark.parametrize(
    ("value", "as_finite", "as_count"),
    [
        (12, 12.0, 12),
        (0.5, 0.5, None),
        (MAX_COUNT, float(MAX_COUNT), MAX_COUNT),
        (MAX_COUNT + 1, float(MAX_COUNT + 1), None),
        (-3, -3.0, None),
        (10**400, None, None),
        (float("inf"), None, None),
        (float("nan"), None, None),
        (True, None, None),
        ("12", None, None),
        (None, None, None),
    ],
    ids=["int", "float", "max", "past-max", "negative", "huge", "inf", "nan", "bool", "text", "none"],
)
def test_numbers_are_taken_only_where_they_fit(
    value: object, as_finite: float | None, as_count: int | None
) -> None:
    assert finite(value) == as_finite
    assert count(value) == as_count


def _forged(path: Path) -> optuna.Study:
    """A study written to SQLite as a forger would: good trials 0 and 1 among bad counts, notes,
    parameter names and values, and (through SQL) a value that is text."""
    storage = f"sqlite:///{path}"
    study = optuna.create_study(study_name="forged" + ESCAPES, storage=storage)
    choice: dict[str, BaseDistribution] = {
        ESCAPES: CategoricalDistribution([ESCAPES, "ok"]),
        "rate": FloatDistribution(0.0, 1.0),
    }

    def add(value: float | None, state: TrialState = TrialState.COMPLETE, **attrs: object) -> None:
        study.add_trial(
            create_trial(
                state=state,
                value=value,
                params={ESCAPES: ESCAPES, "rate": 0.25},
                distributions=choice,
                user_attrs=attrs,
            )
        )

    add(0.5, params=100, mult_adds=1000)
    add(0.25, params=200, mult_adds=2000, reused_from=ESCAPES)
    add(0.125, params=10**400, mult_adds="many")
    add(0.0625, params=True, mult_adds=-1)
    add(1.0, params=float("inf"))  # to be made text below
    add(float("inf"), params=50)
    add(None, TrialState.FAIL, error=LONG)
    add(None, TrialState.PRUNED, pruned_reason=[ESCAPES, 10**400])
    with sqlite3.connect(path) as database:
        database.execute("UPDATE trial_values SET value = 'abc' WHERE trial_id = 5")
    return optuna.load_study(study_name=study.study_name, storage=storage)


def _unsafe(text: str) -> list[str]:
    return [char for char in text if unicodedata.category(char) in {"Cc", "Cf", "Cs", "Zl", "Zp"}]


def test_rows_of_a_forged_study_are_safe_text(tmp_path: Path) -> None:
    rows = trial_rows(_forged(tmp_path / "study.db").trials)
    assert not _unsafe("".join("".join(row) for row in rows))
    assert [row[2:5] for row in rows] == [
        ("0.5", "100", "1,000"),
        ("0.25", "200", "2,000"),
        ("0.125", shown(10**400), "many"),
        ("0.0625", "True", "-1"),
        ("abc", "inf", "-"),
        ("inf", "50", "-"),
        ("-", "-", "-"),
        ("-", "-", "-"),
    ]
    assert rows[0][5] == f"{SHOWN}={SHOWN}, rate=0.25"
    assert rows[1][6] == f"same architecture and parameters as trial {SHOWN}: its value reused"
    assert rows[6][6] == "failed: " + shown(LONG) and len(rows[6][6]) < 2 * NOTE_LIMIT
    assert rows[7][6] == "pruned: " + shown([ESCAPES, 10**400])


def test_report_of_a_forged_study_is_written_and_bounded(tmp_path: Path) -> None:
    study = _forged(tmp_path / "study.db")
    write_report(study, tmp_path / "report.html")
    write_report(study, tmp_path / "report.png")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert not _unsafe(page.replace("\n", "")) and len(page) < 500_000  # its note alone is 5 MB
    assert f"study forged{SHOWN}</h1>" in page and "best: trial 3, value 0.0625" in page


def test_bad_numbers_are_left_out_of_the_best_trials_and_the_plot(tmp_path: Path) -> None:
    study = _forged(tmp_path / "study.db")
    best = best_scored(study)
    assert [trial.number for trial, _ in best] == [3, 2, 1, 0]  # not 4 (text) nor 5 (inf)
    axes = _figure(study, best, table=False).axes[0]
    assert numpy.asarray(axes.collections[0].get_offsets()).tolist() == [
        [200, 0.25],
        [100, 0.5],
    ]  # counts that fit only
    assert numpy.asarray(axes.lines[0].get_xydata()).tolist() == [
        [100, 0.5],
        [200, 0.25],
    ]  # the front, by parameters


def test_tune_report_command_reads_a_forged_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _forged(tmp_path / "study.db")
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    assert main(["tune-report", "--storage", storage, "-o", str(tmp_path / "report.html")]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 'report.html'}\n"


def test_two_objectives_with_forged_values_keep_the_rest(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(study_name="two", storage=storage, directions=["maximize", "minimize"])
    for accuracy, params in [(0.9, 1000.0), (0.95, 5000.0), (0.99, 10.0), (0.99, 1.0)]:
        study.add_trial(create_trial(values=[accuracy, params]))
    with sqlite3.connect(tmp_path / "study.db") as database:
        database.execute("DELETE FROM trial_values WHERE trial_id = 3 AND objective = 1")
        database.execute("UPDATE trial_values SET value = 'abc' WHERE trial_id = 4 AND objective = 0")
    study = optuna.load_study(study_name="two", storage=storage)
    with pytest.raises(ValueError, match="number of the values"):
        study.best_trials  # noqa: B018 (Optuna's own Pareto set refuses the study)
    assert [trial.number for trial, _ in best_scored(study)] == [0, 1]
    write_report(study, tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Pareto set: trials 0, 1" in page and "<td>0.99</td>" in page and "<td>abc, 1</td>" in page


@pytest.mark.parametrize(
    ("stored", "said"),
    [
        ("study-weights/a\x00b.safetensors", "are not a file path"),
        ("a" * (MAX_PATH_CHARS + 1), "are not a file path"),
        ("", "are not a file path"),
        (42, "42 are not a file path"),
        (["a.safetensors"], r"\['a.safetensors'\] are not a file path"),
        ("study-weights/" + "a" * 300 + "/b.safetensors", "(cannot be read: File name too long|are gone)"),
        ("study-weights/\x1b[2Jx.safetensors", r"study-weights/\\x1b\[2Jx.safetensors are gone"),
        ("/etc/\x1b[2Jpasswd", r"/etc/\\x1b\[2Jpasswd are outside this search's weights folder"),
    ],
    ids=["nul", "too-long", "empty", "int", "list", "name-too-long", "escape-gone", "escape-outside"],
)
def test_weights_paths_that_are_not_sane_are_one_line_refusals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stored: object, said: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "study-weights").mkdir()
    study = optuna.create_study()
    study.add_trial(create_trial(value=1.0, user_attrs={"weights": stored}))
    trial = study.trials[0]
    with pytest.raises(CheckpointError, match=f"the trial 0's weights .*{said}") as raised:
        checked_weights(trial, [trial], tmp_path / "study-weights", {"type": "Sequential", "layers": []})
    message = str(raised.value)
    assert "\n" not in message and not _unsafe(message) and len(message) < 2 * NOTE_LIMIT + 200
