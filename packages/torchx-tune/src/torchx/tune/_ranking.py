"""Ranking a study's trials: the best for one objective, the Pareto set for several.

A study's values are input (:mod:`torchx.tune._untrusted`): only COMPLETE trials with one finite
number per objective are ranked; the others cannot be compared, and are left out.
"""

from __future__ import annotations

from collections.abc import Sequence

import optuna
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from torchx.tune._untrusted import finite

__all__ = ["Scored", "best_scored", "best_trials", "maximized", "pareto_front", "scored"]

Scored = tuple[FrozenTrial, tuple[float, ...]]
"""A trial and its values, each a finite float."""


def best_trials(study: optuna.Study) -> list[FrozenTrial]:
    """The trials of :func:`best_scored`."""
    return [trial for trial, _ in best_scored(study)]


def pareto_front(points: Sequence[Sequence[float]], maximize: Sequence[bool]) -> list[int]:
    """The indices, in order, of the points no other point dominates (as good in every coordinate
    and better in one; coordinate ``i`` is better higher where ``maximize[i]``, else lower)."""
    signed = [tuple(-x if up else x for x, up in zip(point, maximize, strict=True)) for point in points]
    front: list[int] = []
    for index in sorted(range(len(signed)), key=signed.__getitem__):  # dominators sort first
        if not any(_dominates(signed[other], signed[index]) for other in front):
            front.append(index)
    return sorted(front)


def _dominates(better: tuple[float, ...], worse: tuple[float, ...]) -> bool:
    return better != worse and all(b <= w for b, w in zip(better, worse, strict=True))


def maximized(study: optuna.Study) -> list[bool]:
    return [direction == StudyDirection.MAXIMIZE for direction in study.directions]


def scored(study: optuna.Study) -> list[Scored]:
    """The complete trials whose values are finite numbers, one per objective (the others cannot be
    ranked or plotted)."""
    objectives = len(study.directions)
    scored = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        stored = trial.values or []
        values = [number for number in map(finite, stored) if number is not None]
        if len(values) == objectives == len(stored):
            scored.append((trial, tuple(values)))
    return scored


def best_scored(study: optuna.Study) -> list[Scored]:
    """:func:`scored`'s trials: for one objective the best value first (ties: the earlier trial),
    for several the Pareto set by trial number, each combination once (the trial that trained it,
    not those that reused its values)."""
    ranked, maximize = scored(study), maximized(study)
    if len(maximize) > 1:
        trained = [pair for pair in ranked if "reused_from" not in pair[0].user_attrs]
        return [trained[index] for index in pareto_front([values for _, values in trained], maximize)]
    return sorted(ranked, key=lambda pair: -pair[1][0] if maximize[0] else pair[1][0])  # stable
