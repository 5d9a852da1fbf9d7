"""The study report: its table, its plots, studies too small for importances, and studies of several objectives."""

from __future__ import annotations

import base64
import re
import sys
from pathlib import Path
from typing import Any, Literal

import numpy
import optuna
import pytest
from optuna.distributions import BaseDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

from torchx.core import MissingPackageError
from torchx.tune._ranking import best_scored, pareto_front
from torchx.tune._report import _figure, importances, trial_rows, write_report

pytest.importorskip(
    "matplotlib", reason="the report's plots need matplotlib: pip install 'torchx-tune[report]'"
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _study(
    name: str = "digits", direction: Literal["minimize", "maximize"] = "minimize", complete: int = 4
) -> optuna.Study:
    """A study filled as ``search`` fills one: ``complete`` trials, then a pruned, a failed and a reused one."""
    study = optuna.create_study(study_name=name, direction=direction)

    def add(width: int, state: TrialState, value: float | None = None, **attrs: Any) -> None:
        trial = study.ask()
        trial.suggest_int("width", 4, 64)
        trial.suggest_float("dropout", 0.0, 0.5)
        attrs.setdefault("params", width * 10)
        attrs.setdefault("mult_adds", width * 100)
        for key, attr in attrs.items():
            trial.set_user_attr(key, attr)
        study.tell(trial, value, state=state)

    for number in range(complete):
        add(8 * (number + 1), TrialState.COMPLETE, 1.0 / (number + 1))
    add(64, TrialState.PRUNED, pruned_reason="640 parameters, more than max_params=100 <script>")
    add(8, TrialState.FAIL, error="ValueError: loss is nan & <b>bad</b>")
    add(8, TrialState.COMPLETE, 1.0, reused_from=0)
    return study


def test_html_lists_every_trial_with_its_reason_escaped(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    write_report(_study(name="<i>digits</i>"), path)
    page = path.read_text(encoding="utf-8")
    rows = re.findall(r"<tr><td>(\d+)</td><td>(\w+)</td>", page)
    assert rows == [
        ("0", "COMPLETE"),
        ("1", "COMPLETE"),
        ("2", "COMPLETE"),
        ("3", "COMPLETE"),
        ("4", "PRUNED"),
        ("5", "FAIL"),
        ("6", "COMPLETE"),
    ]
    assert "pruned: 640 parameters, more than max_params=100 &lt;script&gt;" in page
    assert "failed: ValueError: loss is nan &amp; &lt;b&gt;bad&lt;/b&gt;" in page
    assert "same architecture and parameters as trial 0: its value reused" in page
    assert "&lt;i&gt;digits&lt;/i&gt;" in page and "<i>" not in page and "<script>" not in page
    image = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert image is not None and base64.b64decode(image.group(1)).startswith(PNG_SIGNATURE)


def test_png_is_an_image(tmp_path: Path) -> None:
    path = tmp_path / "report.png"
    write_report(_study(direction="maximize"), path)
    assert path.read_bytes().startswith(PNG_SIGNATURE)


@pytest.mark.parametrize("complete", [0, 1], ids=["no-trial-complete", "one-trial-complete"])
def test_too_few_trials_for_importances_is_said_not_raised(tmp_path: Path, complete: int) -> None:
    study = optuna.create_study(study_name="small")
    study.optimize(lambda trial: trial.suggest_float("x", 0, 1), n_trials=complete)
    study.tell(study.ask(), state=TrialState.PRUNED)
    said = f"Parameter importances need at least 2 complete trials; this study has {complete}."
    assert importances(study) == said
    write_report(study, tmp_path / "report.html")
    write_report(study, tmp_path / "report.png")
    assert len(re.findall("<tr><td>", (tmp_path / "report.html").read_text(encoding="utf-8"))) == complete + 1
    assert (tmp_path / "report.png").read_bytes().startswith(PNG_SIGNATURE)


def test_importances_of_enough_trials_sum_to_one() -> None:
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(
        lambda trial: trial.suggest_float("x", 0, 1) + 0.01 * trial.suggest_float("y", 0, 1), n_trials=30
    )
    found = importances(study)
    assert isinstance(found, dict) and set(found) == {"x", "y"}
    assert sum(found.values()) == pytest.approx(1.0) and found["x"] > found["y"]


def test_empty_study_writes_both_forms(tmp_path: Path) -> None:
    study = optuna.create_study(study_name="empty")
    write_report(study, tmp_path / "empty.html")
    write_report(study, tmp_path / "empty.png")
    assert "no complete trial yet" in (tmp_path / "empty.html").read_text(encoding="utf-8")
    assert (tmp_path / "empty.png").read_bytes().startswith(PNG_SIGNATURE)


def test_user_text_with_dollar_signs_is_not_read_as_tex(tmp_path: Path) -> None:
    study = _study(name="cost in $ (lower is $better")  # an unbalanced $ would be a mathtext error
    write_report(study, tmp_path / "report.png")
    assert (tmp_path / "report.png").read_bytes().startswith(PNG_SIGNATURE)


@pytest.mark.parametrize(
    ("maximize", "front"),
    [((False, False), [0, 1, 4]), ((False, True), [2, 5])],
    ids=["minimize", "maximize"],
)
def test_pareto_front_keeps_points_nothing_smaller_beats(
    maximize: tuple[bool, bool], front: list[int]
) -> None:
    points = [(30, 0.2), (10, 0.5), (20, 0.9), (40, 0.3), (50, 0.1), (10, 0.6)]
    assert pareto_front(points, maximize) == front


def test_pareto_front_of_three_objectives_keeps_ties() -> None:
    points = [(1.0, 5.0, 0.0), (2.0, 2.0, 2.0), (2.0, 2.0, 2.0), (3.0, 3.0, 3.0), (1.0, 5.0, 1.0)]
    assert pareto_front(points, (False, False, False)) == [0, 1, 2]  # equal points dominate neither


def test_rows_show_counts_and_sampled_parameters() -> None:
    study = _study(complete=1)
    assert trial_rows(study.trials)[0][:5] == ("0", "COMPLETE", "1", "80", "800")
    width, dropout = study.trials[0].params["width"], study.trials[0].params["dropout"]
    assert trial_rows(study.trials)[0][5] == f"width={width}, dropout={dropout:.4g}"


def test_other_suffix_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"report\.pdf: a report is written as \.html or \.png, not \.pdf"):
        write_report(_study(), tmp_path / "report.pdf")


def test_without_matplotlib_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in sys.modules if name.split(".")[0] == "matplotlib"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    with pytest.raises(MissingPackageError, match=r"pip install 'torchx-tune\[report\]'"):
        write_report(_study(), tmp_path / "report.html")
    assert not (tmp_path / "report.html").exists()


def _two_objectives() -> optuna.Study:
    """Accuracy (maximized) and parameters (minimized): trials 0, 2 and 3 are the Pareto set."""
    study = optuna.create_study(study_name="pareto", directions=["maximize", "minimize"])
    width: dict[str, BaseDistribution] = {"width": IntDistribution(1, 100)}
    for accuracy, params in [(0.9, 1000), (0.8, 2000), (0.95, 5000), (0.5, 100)]:
        study.add_trial(
            create_trial(
                values=[accuracy, params],
                params={"width": params // 100},
                distributions=width,
                user_attrs={"params": params},
            )
        )
    study.add_trial(
        create_trial(
            state=TrialState.PRUNED,
            params={"width": 90},
            distributions=width,
            user_attrs={"pruned_reason": "big"},
        )
    )
    return study


def test_rows_of_two_objectives_show_both_values_and_mark_the_pareto_set() -> None:
    study = _two_objectives()
    assert {trial.number for trial in study.best_trials} == {0, 2, 3}  # Optuna agrees
    rows = trial_rows(study.trials, pareto={0, 2, 3})
    assert [(row[2], row[6]) for row in rows] == [
        ("0.9, 1000", "in the Pareto set"),
        ("0.8, 2000", ""),
        ("0.95, 5000", "in the Pareto set"),
        ("0.5, 100", "in the Pareto set"),
        ("-", "pruned: big"),
    ]


def test_html_of_two_objectives_names_the_pareto_set(tmp_path: Path) -> None:
    write_report(_two_objectives(), tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "5 trials, directions maximize, minimize; Pareto set: trials 0, 2, 3" in page
    marked = re.findall(r"<tr><td>(\d+)</td>.*<td>in the Pareto set</td></tr>", page)
    assert marked == ["0", "2", "3"]
    write_report(_two_objectives(), tmp_path / "report.png")
    assert (tmp_path / "report.png").read_bytes().startswith(PNG_SIGNATURE)


def test_plot_of_two_objectives_is_the_first_against_the_second_with_the_pareto_set() -> None:
    study = _two_objectives()
    axes = _figure(study, best_scored(study), table=True).axes[0]
    trials, pareto = (numpy.asarray(dots.get_offsets()).tolist() for dots in axes.collections)
    assert trials == [[0.9, 1000], [0.8, 2000], [0.95, 5000], [0.5, 100]]
    assert pareto == [[0.9, 1000], [0.95, 5000], [0.5, 100]]
    assert (axes.get_xlabel(), axes.get_ylabel()) == (
        "objective 1 (higher is better)",
        "objective 2 (lower is better)",
    )


def test_importances_of_two_objectives_are_those_of_the_first() -> None:
    study = optuna.create_study(directions=["maximize", "minimize"], sampler=optuna.samplers.RandomSampler(0))
    study.optimize(
        lambda trial: (trial.suggest_float("x", 0, 1), trial.suggest_float("y", 0, 1)), n_trials=30
    )
    alone = optuna.create_study(direction="maximize")  # the first objective alone, Optuna's own importances
    for trial in study.trials:
        alone.add_trial(
            create_trial(value=trial.values[0], params=trial.params, distributions=trial.distributions)
        )
    found = importances(study)
    assert isinstance(found, dict) and found["x"] > found["y"]
    expected = optuna.importance.get_param_importances(alone)
    deterministic = expected == optuna.importance.get_param_importances(alone)  # PED-ANOVA; fANOVA is not
    if deterministic:
        assert found == pytest.approx(expected)
