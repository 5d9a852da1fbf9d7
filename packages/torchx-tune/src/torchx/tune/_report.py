"""``write_report(study, path)``: a study's trials and two plots, as an HTML page or a PNG image.

The table lists every trial: its number, state, value (one per objective), the parameters and
multiply-adds its free check counted, the sampled parameters, and why it was pruned, failed or
reused another trial's value (the user attributes :func:`~torchx.tune.search` stores); in a
multi-objective study, the note marks the trials of the Pareto set. The plots are the objective
against the parameter count with the Pareto front (fewer parameters, better value) or, for several
objectives, the first objective against the second with the Pareto set (over every objective)
highlighted; and the sampled parameters' importances for the (first) objective (Optuna's
``get_param_importances``; where they cannot be computed, the report says why). Plots need
matplotlib (``pip install 'torchx-tune[report]'``).

What a study holds is input (:mod:`torchx.tune._untrusted`): text is shown with its control
characters escaped and each note or sampled value clipped to
:data:`~torchx.tune._untrusted.NOTE_LIMIT` characters; a number that does not fit (a huge count,
text where a number belongs, inf) is shown as text and left out of the plots and the best trials.
"""

from __future__ import annotations

import base64
import html
import io
import math
import warnings
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import optuna
from optuna.trial import FrozenTrial, TrialState

from torchx.core import MissingPackageError
from torchx.tune._ranking import Scored, best_scored, maximized, pareto_front, scored
from torchx.tune._untrusted import count, finite, shown

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "HEADERS",
    "REPORT_SUFFIXES",
    "importances",
    "trial_rows",
    "write_report",
]

REPORT_SUFFIXES = (".html", ".png")
HEADERS = ("trial", "state", "value", "parameters", "mult-adds", "sampled", "note")
"""The columns of the trials table (``value`` lists one per objective; ``parameters`` and
``mult-adds`` are the free check's counts)."""

PNG_ROWS = 15
"""How many of the best trials the PNG's table shows (the HTML page shows every trial)."""

_MIN_TRIALS_FOR_IMPORTANCE = 2
_TARGET_WARNING = r".*low `target` values"
"""Optuna's PED-ANOVA evaluator warns whenever it is given a target (it takes low targets as good):
:func:`importances` gives one, negated for a maximized objective."""


def write_report(study: optuna.Study, path: str | Path) -> None:
    """Write ``study``'s report to ``path``: an HTML page (``.html``) or a PNG image (``.png``).

    :raises ValueError: another suffix.
    :raises MissingPackageError: matplotlib is not installed.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in REPORT_SUFFIXES:
        raise ValueError(
            f"{path}: a report is written as .html or .png, not {suffix or 'a file without suffix'}"
        )
    best = best_scored(study)
    figure = _figure(study, best, table=suffix == ".png")
    if suffix == ".png":
        figure.savefig(path, format="png")
    else:
        path.write_text(_html(study, best, figure), encoding="utf-8")


def trial_rows(trials: Sequence[FrozenTrial], pareto: Collection[int] = ()) -> list[tuple[str, ...]]:
    """One row of :data:`HEADERS` per trial, as text a terminal shows as written (:func:`shown`):
    ``-`` where a number is unknown, a stored number that does not fit as text, each note, parameter
    name and value clipped to :data:`~torchx.tune._untrusted.NOTE_LIMIT` characters with an
    ellipsis; the trials numbered in ``pareto`` are noted as in the Pareto set."""
    return [
        (
            str(trial.number),
            trial.state.name,
            ", ".join(map(_number, trial.values))
            if trial.state == TrialState.COMPLETE and trial.values
            else "-",
            _count(trial.user_attrs.get("params")),
            _count(trial.user_attrs.get("mult_adds")),
            ", ".join(f"{shown(name)}={_number(value, '.4g')}" for name, value in trial.params.items()),
            _note(trial.user_attrs, in_pareto_set=trial.number in pareto),
        )
        for trial in trials
    ]


def _note(attrs: Mapping[str, object], *, in_pareto_set: bool) -> str:
    if "pruned_reason" in attrs:
        note = f"pruned: {shown(attrs['pruned_reason'])}"
    elif "error" in attrs:
        note = f"failed: {shown(attrs['error'])}"
    elif "reused_from" in attrs:
        note = f"same architecture and parameters as trial {shown(attrs['reused_from'])}: its value reused"
    else:
        note = ""
    return "; ".join(filter(None, ["in the Pareto set" if in_pareto_set else "", note]))


def _number(value: object, spec: str = ".6g") -> str:
    return format(value, spec) if isinstance(value, float) else shown(value)


def _count(value: object) -> str:
    fits = count(value)
    return "-" if value is None else shown(value) if fits is None else f"{fits:,}"


def importances(study: optuna.Study) -> dict[str, float] | str:
    """The sampled parameters' importances for the (first) objective, or why they cannot be
    computed (a sentence); trials whose value is not a finite number are left out."""
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len(complete) < _MIN_TRIALS_FOR_IMPORTANCE:
        return (
            f"Parameter importances need at least {_MIN_TRIALS_FOR_IMPORTANCE} complete trials; "
            f"this study has {len(complete)}."
        )
    if not any(trial.params for trial in complete):
        return "Parameter importances need sampled parameters; the complete trials have none."
    sign = -1.0 if maximized(study)[0] else 1.0

    def first_objective(trial: FrozenTrial) -> float:  # nan: Optuna leaves the trial out
        number = finite(trial.values[0]) if trial.values else None
        return math.nan if number is None else sign * number

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message=_TARGET_WARNING)
        try:
            found = optuna.importance.get_param_importances(study, target=first_objective)
        except (ValueError, RuntimeError) as error:
            return f"Parameter importances cannot be computed: {shown(str(error))}"
    if caught:  # Optuna's "too few trials": the importances it gives are all equal
        return f"Parameter importances cannot be computed: {shown(str(caught[0].message))}"
    if not found:
        return "Parameter importances cannot be computed: no parameter is sampled in every complete trial."
    return found


def _figure(study: optuna.Study, best: list[Scored], *, table: bool) -> Figure:
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ModuleNotFoundError as error:
        if error.name is None or error.name.split(".")[0] != "matplotlib":
            raise
        raise MissingPackageError(
            "the report's plots need matplotlib, which is not installed; run: pip install 'torchx-tune[report]'"
        ) from None
    with matplotlib.rc_context({"text.parse_math": False}):  # user text is shown as written, never as TeX
        figure = Figure(figsize=(12, 9 if table else 4.5), layout="constrained")
        FigureCanvasAgg(figure)
        grid = figure.add_gridspec(2 if table else 1, 2)
        if len(study.directions) > 1:
            _plot_pareto_set(figure.add_subplot(grid[0, 0]), study, best)
        else:
            _plot_front(figure.add_subplot(grid[0, 0]), study, best)
        _plot_importances(figure.add_subplot(grid[0, 1]), study)
        if table:
            _draw_table(figure.add_subplot(grid[1, :]), study, best)
        counts = {state: len(study.get_trials(deepcopy=False, states=(state,))) for state in TrialState}
        figure.suptitle(
            f"study {shown(study.study_name)}: {len(study.trials)} trials, "
            + ", ".join(f"{count} {state.name.lower()}" for state, count in counts.items() if count)
        )
    return figure


def _plot_front(axes: Axes, study: optuna.Study, best: list[Scored]) -> None:
    """One objective: the objective against the parameter count, with the Pareto front of the two."""
    maximize = maximized(study)[0]
    counted = [(count(trial.user_attrs.get("params")), values[0]) for trial, values in best]
    points = [(params, value) for params, value in counted if params is not None]
    axes.set_title("objective vs parameters")
    axes.set_xlabel("parameters")
    axes.set_ylabel(f"objective ({_better(maximize)})")
    if not points:
        _say(axes, "No complete trial with a parameter count yet.")
        return
    axes.scatter([p for p, _ in points], [v for _, v in points], color="tab:blue", alpha=0.6, label="trial")
    front = sorted(points[index] for index in pareto_front(points, (False, maximize)))
    axes.step(
        [p for p, _ in front],
        [v for _, v in front],
        where="post",
        color="tab:red",
        marker="o",
        label="Pareto front",
    )
    axes.legend()


def _plot_pareto_set(axes: Axes, study: optuna.Study, best: list[Scored]) -> None:
    """Several objectives: the first against the second, the Pareto set (over every objective) in red."""
    maximize = maximized(study)
    axes.set_title("objective 1 vs objective 2")
    axes.set_xlabel(f"objective 1 ({_better(maximize[0])})")
    axes.set_ylabel(f"objective 2 ({_better(maximize[1])})")
    points = [values for _, values in scored(study)]
    if not points:
        _say(axes, "No complete trial with finite values yet.")
        return
    axes.scatter([v[0] for v in points], [v[1] for v in points], color="tab:blue", alpha=0.6, label="trial")
    axes.scatter(
        [v[0] for _, v in best],
        [v[1] for _, v in best],
        color="tab:red",
        label="Pareto set" if len(maximize) == 2 else f"Pareto set (of all {len(maximize)} objectives)",
    )
    axes.legend()


def _better(maximize: bool) -> str:
    return "higher is better" if maximize else "lower is better"


def _plot_importances(axes: Axes, study: optuna.Study) -> None:
    axes.set_title("parameter importances" if len(study.directions) == 1 else "importances for objective 1")
    found = importances(study)
    if isinstance(found, str):
        _say(axes, found)
        return
    names = [shown(name) for name in found][::-1]  # the most important on top
    axes.barh(names, list(found.values())[::-1], color="tab:green")
    axes.set_xlabel("importance (sums to 1)")


def _draw_table(axes: Axes, study: optuna.Study, best: list[Scored]) -> None:
    axes.axis("off")
    rows = [[_clip(cell) for cell in row] for row in trial_rows([trial for trial, _ in best[:PNG_ROWS]])]
    if not rows:
        _say(axes, "No complete trial yet.")
        return
    several = len(study.directions) > 1
    axes.set_title(
        f"the Pareto set: {len(rows)} of {len(best)} trials"
        if several
        else f"best {len(rows)} complete trials"
    )
    drawn = axes.table(cellText=rows, colLabels=HEADERS, loc="upper center", cellLoc="left")
    drawn.auto_set_font_size(False)
    drawn.set_fontsize(8)
    drawn.auto_set_column_width(list(range(len(HEADERS))))


def _say(axes: Axes, text: str) -> None:
    axes.text(0.5, 0.5, text, ha="center", va="center", wrap=True, transform=axes.transAxes)
    axes.set_xticks([])
    axes.set_yticks([])


def _clip(text: str, most: int = 60) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _html(study: optuna.Study, best: list[Scored], figure: Figure) -> str:
    picture = io.BytesIO()
    figure.savefig(picture, format="png")
    image = base64.b64encode(picture.getvalue()).decode("ascii")
    several = len(study.directions) > 1
    pareto = {trial.number for trial, _ in best} if several else set()
    header = "".join(f"<th>{html.escape(name)}</th>" for name in HEADERS)
    body = "\n".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
        for row in trial_rows(study.trials, pareto)
    )
    if not best:
        summary = "no complete trial yet"
    elif several:
        summary = f"Pareto set: trials {', '.join(str(number) for number in sorted(pareto))}"
    else:
        summary = f"best: trial {best[0][0].number}, value {_number(best[0][1][0])}"
    directions = ", ".join(direction.name.lower() for direction in study.directions)
    title = html.escape(f"torchx tune: study {shown(study.study_name)}")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }}
img {{ max-width: 100%; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p>{len(study.trials)} trials, direction{"s" if several else ""} {directions}; {html.escape(summary)}</p>
<img alt="the objectives against parameters or each other with the Pareto set, and parameter importances" src="data:image/png;base64,{image}">
<h2>Trials</h2>
<table>
<thead><tr>{header}</tr></thead>
<tbody>
{body}
</tbody>
</table>
</body>
</html>
"""
