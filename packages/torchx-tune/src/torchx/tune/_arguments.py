"""The arguments of ``torchx tune`` and ``torchx tune-report``, apart from what
runs them (:mod:`torchx.tune._cli`): ``torchx --help`` and every other command
build every command's parser, and that imports neither Optuna nor SQLAlchemy."""

from __future__ import annotations

import argparse

from torchx.plugin import add_input_arguments

__all__ = ["DEFAULT_STORAGE", "TUNE_HELP", "TUNE_REPORT_HELP", "configure_tune", "configure_tune_report"]

DEFAULT_STORAGE = "sqlite:///study.db"

TUNE_HELP = (
    "Search a space of architectures: each candidate checked for free, then trained by your objective."
)
TUNE_REPORT_HELP = "Write a study's trials table and plots (objective vs parameters, parameter importances)."


def configure_tune(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "space", help="the search space: a .json or .yaml spec with $int/$float/$choice/$repeat markers"
    )
    parser.add_argument(
        "--objective",
        required=True,
        metavar="FILE[:FUNCTION]",
        help="the Python file and function (default: objective) that trains a built model and returns its "
        "value: objective(model, trial) -> float; this file is run, as python would run it",
    )
    add_input_arguments(parser, required=True)
    parser.add_argument("--trials", type=_count, required=True, help="how many more trials to run (0: none)")
    _add_study_arguments(parser, storage_default=DEFAULT_STORAGE)
    parser.add_argument(
        "--direction",
        nargs="+",
        choices=("minimize", "maximize"),
        default=["minimize"],
        help="minimize or maximize the objective's value; several (--direction maximize minimize): "
        "the objective returns one value per direction, and the best trials are the Pareto set",
    )
    parser.add_argument(
        "--timeout", type=_limit, metavar="SECONDS", help="start no trial after this many seconds"
    )
    parser.add_argument(
        "--trial-timeout",
        type=_limit,
        metavar="SECONDS",
        help="fail a trial that runs longer, with the reason (its architecture may be tried again)",
    )
    for name, unit in (("params", "parameters"), ("mult-adds", "multiply-adds of one forward")):
        parser.add_argument(
            f"--max-{name}", type=_limit, metavar="N", help=f"prune candidates with more {unit}"
        )
    parser.add_argument(
        "--max-activation-mb",
        type=_limit,
        metavar="MB",
        help="prune candidates whose largest activation is larger",
    )
    parser.add_argument("-o", "--output", help="write the best trial's spec (.yaml, .yml or .json)")
    parser.add_argument(
        "--weights", help="write the checkpoint the best trial's objective saved (.safetensors)"
    )


def configure_tune_report(parser: argparse.ArgumentParser) -> None:
    _add_study_arguments(parser, storage_default=None)
    parser.add_argument(
        "-o", "--output", default="report.html", help="the report to write: .html (a page) or .png (an image)"
    )


def _add_study_arguments(parser: argparse.ArgumentParser, *, storage_default: str | None) -> None:
    parser.add_argument(
        "--storage",
        default=storage_default,
        required=storage_default is None,
        metavar="URL",
        help="the study's Optuna storage: an SQLAlchemy URL, sqlite:///study.db on one machine, "
        "postgresql://... for workers on several, or journal:PATH, a journal file on a shared file system"
        f"{'' if storage_default is None else f' (default: {storage_default})'}",
    )
    parser.add_argument(
        "--study",
        help="the study's name in the storage (torchx tune: default the space file's name; "
        "tune-report: default the storage's only study)",
    )


def _count(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of trials >= 0")
    return int(text)


def _limit(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give a number > 0, such as 1e6")
    return value
