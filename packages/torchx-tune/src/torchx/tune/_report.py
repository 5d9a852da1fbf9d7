"""``write_report(study, path)``: a study's trials and two plots, as an HTML page or a PNG image.

The table lists every trial: its number, state, value, the parameters and
multiply-adds its free check counted, the sampled parameters, and why it
was pruned, failed or reused another trial's value (the user attributes
:func:`~torchx.tune.search` stores). The plots are the objective against
the parameter count with the Pareto front (fewer parameters, better value),
and the sampled parameters' importances (Optuna's
``get_param_importances``; where they cannot be computed, the report says
why). Plots need matplotlib (``pip install 'torchx-tune[report]'``).
"""

from __future__ import annotations

import base64
import html
import io
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import optuna
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from torchx.core import MissingPackageError
from torchx.tune._search import best_trials

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "HEADERS",
    "REPORT_SUFFIXES",
    "importances",
    "pareto_front",
    "trial_rows",
    "write_report",
]

REPORT_SUFFIXES = (".html", ".png")
HEADERS = ("trial", "state", "value", "parameters", "mult-adds", "sampled", "note")
"""The columns of the trials table (``parameters`` and ``mult-adds`` are the free check's counts)."""

PNG_ROWS = 15
"""How many of the best trials the PNG's table shows (the HTML page shows every trial)."""

_MIN_TRIALS_FOR_IMPORTANCE = 2


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
    figure = _figure(study, table=suffix == ".png")
    if suffix == ".png":
        figure.savefig(path, format="png")
    else:
        path.write_text(_html(study, figure), encoding="utf-8")


def trial_rows(trials: Sequence[FrozenTrial]) -> list[tuple[str, ...]]:
    """One row of :data:`HEADERS` per trial, as text (``-`` where a number is unknown)."""
    return [
        (
            str(trial.number),
            trial.state.name,
            _number(trial.value if trial.state == TrialState.COMPLETE else None),
            _count(trial.user_attrs.get("params")),
            _count(trial.user_attrs.get("mult_adds")),
            ", ".join(f"{name}={_value(value)}" for name, value in trial.params.items()),
            _note(trial),
        )
        for trial in trials
    ]


def _note(trial: FrozenTrial) -> str:
    attrs = trial.user_attrs
    if "pruned_reason" in attrs:
        return f"pruned: {attrs['pruned_reason']}"
    if "error" in attrs:
        return f"failed: {attrs['error']}"
    if "reused_from" in attrs:
        return f"same architecture as trial {attrs['reused_from']}: its value reused"
    return ""


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def _count(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else "-"


def _value(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def pareto_front(points: Sequence[tuple[int, float]], maximize: bool) -> list[tuple[int, float]]:
    """The points no other point beats with as few parameters and a value at least as good, by
    parameter count."""
    front: list[tuple[int, float]] = []
    for params, value in sorted(points, key=lambda point: (point[0], -point[1] if maximize else point[1])):
        if not front or (value > front[-1][1] if maximize else value < front[-1][1]):
            front.append((params, value))
    return front


def importances(study: optuna.Study) -> dict[str, float] | str:
    """The sampled parameters' importances, or why they cannot be computed (a sentence)."""
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len(complete) < _MIN_TRIALS_FOR_IMPORTANCE:
        return (
            f"Parameter importances need at least {_MIN_TRIALS_FOR_IMPORTANCE} complete trials; "
            f"this study has {len(complete)}."
        )
    if not any(trial.params for trial in complete):
        return "Parameter importances need sampled parameters; the complete trials have none."
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            found = optuna.importance.get_param_importances(study)
        except (ValueError, RuntimeError) as error:
            return f"Parameter importances cannot be computed: {error}"
    if caught:  # Optuna's "too few trials": the importances it gives are all equal
        return f"Parameter importances cannot be computed: {caught[0].message}"
    if not found:
        return "Parameter importances cannot be computed: no parameter is sampled in every complete trial."
    return found


def _figure(study: optuna.Study, *, table: bool) -> Figure:
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
        _plot_front(figure.add_subplot(grid[0, 0]), study)
        _plot_importances(figure.add_subplot(grid[0, 1]), study)
        if table:
            _draw_table(figure.add_subplot(grid[1, :]), study)
        counts = {state: len(study.get_trials(deepcopy=False, states=(state,))) for state in TrialState}
        figure.suptitle(
            f"study {study.study_name!r}: {len(study.trials)} trials, "
            + ", ".join(f"{count} {state.name.lower()}" for state, count in counts.items() if count)
        )
    return figure


def _plot_front(axes: Axes, study: optuna.Study) -> None:
    points = [
        (trial.user_attrs["params"], float(trial.value))
        for trial in best_trials(study)
        if isinstance(trial.user_attrs.get("params"), int) and trial.value is not None
    ]
    axes.set_title("objective vs parameters")
    axes.set_xlabel("parameters")
    axes.set_ylabel(f"objective ({'higher' if _maximize(study) else 'lower'} is better)")
    if not points:
        _say(axes, "No complete trial with a parameter count yet.")
        return
    axes.scatter([p for p, _ in points], [v for _, v in points], color="tab:blue", alpha=0.6, label="trial")
    front = pareto_front(points, _maximize(study))
    axes.step(
        [p for p, _ in front],
        [v for _, v in front],
        where="post",
        color="tab:red",
        marker="o",
        label="Pareto front",
    )
    axes.legend()


def _plot_importances(axes: Axes, study: optuna.Study) -> None:
    axes.set_title("parameter importances")
    found = importances(study)
    if isinstance(found, str):
        _say(axes, found)
        return
    names = list(found)[::-1]  # the most important on top
    axes.barh(names, [found[name] for name in names], color="tab:green")
    axes.set_xlabel("importance (sums to 1)")


def _draw_table(axes: Axes, study: optuna.Study) -> None:
    axes.axis("off")
    rows = [[_clip(cell) for cell in row] for row in trial_rows(best_trials(study)[:PNG_ROWS])]
    if not rows:
        _say(axes, "No complete trial yet.")
        return
    axes.set_title(f"best {len(rows)} complete trials")
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


def _maximize(study: optuna.Study) -> bool:
    return study.direction == StudyDirection.MAXIMIZE


def _html(study: optuna.Study, figure: Figure) -> str:
    picture = io.BytesIO()
    figure.savefig(picture, format="png")
    image = base64.b64encode(picture.getvalue()).decode("ascii")
    header = "".join(f"<th>{html.escape(name)}</th>" for name in HEADERS)
    body = "\n".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
        for row in trial_rows(study.trials)
    )
    best = best_trials(study)
    summary = (
        f"best: trial {best[0].number}, value {_number(best[0].value)}" if best else "no complete trial yet"
    )
    title = html.escape(f"torchx tune: study {study.study_name}")
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
<p>{len(study.trials)} trials, direction {html.escape(study.direction.name.lower())}; {html.escape(summary)}</p>
<img alt="objective vs parameters with the Pareto front, and parameter importances" src="data:image/png;base64,{image}">
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
