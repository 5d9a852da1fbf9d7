"""``torchx tune`` and ``torchx tune-report``.

``torchx tune space.yaml --objective train.py:objective --input None,1,8,8 --trials 20``
runs 20 more trials of the study (default: named after the space file, in
``sqlite:///study.db``), shows its progress, prints the best trials, and with
``-o best.yaml --weights best.safetensors`` writes the best spec and the
checkpoint its objective saved (:func:`~torchx.tune.save_weights`), which
``torchx.load_model`` reads back. The objective file is the user's own code,
loaded from the path given: the one place the command line runs user code.
``torchx tune-report --storage URL --study NAME -o report.html`` (or ``.png``)
writes :func:`~torchx.tune._report.write_report`'s report.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna
import sqlalchemy.exc
from optuna.trial import FrozenTrial, TrialState

from torchx.core import CheckpointError, MissingPackageError, from_spec, save_spec
from torchx.plugin import (
    UsageError,
    format_table,
    input_path,
    inputs_of,
    output_path,
    write_together,
)
from torchx.tune._checks import Constraints, one_line
from torchx.tune._report import HEADERS, REPORT_SUFFIXES, trial_rows, write_report
from torchx.tune._search import Objective, SearchResult, best_trials, search
from torchx.tune._space import load_space
from torchx.tune._storage import creation_lock, journal_path, open_storage, storage_file
from torchx.tune._untrusted import shown
from torchx.tune._weights import DEFAULT_FOLDER, checked_weights, weights_folder

__all__ = ["load_objective", "tune", "tune_report"]

TOP_TRIALS = 10
"""How many of the best trials ``torchx tune`` prints at the end."""

INTERRUPTED = 130
"""The exit status of a search stopped by Ctrl-C (128 + SIGINT), as a shell reports it."""

_STORAGE_ERRORS = (sqlalchemy.exc.SQLAlchemyError, ImportError, MissingPackageError, OSError, ValueError)
"""What opening a storage raises: a bad URL, database or journal, a missing driver, an unwritable folder."""


def tune(options: argparse.Namespace) -> int:
    """``torchx tune``: see :data:`~torchx.tune._arguments.TUNE_HELP`."""
    if options.dtype is not None:
        raise UsageError(
            "--dtype: a search builds in float32; give an input's dtype with its shape: --input None,20:int64"
        )
    output = None if options.output is None else output_path(options.output, (".yaml", ".yml", ".json"))
    weights = None if options.weights is None else output_path(options.weights, (".safetensors",))
    space = load_space(input_path(options.space))
    objective = load_objective(options.objective)
    study = options.study or Path(options.space).stem
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # the progress line says what Optuna would log
    constraints = Constraints(options.max_params, options.max_mult_adds, options.max_activation_mb)

    def run(n_trials: int) -> SearchResult:
        return search(
            space,
            objective,
            input=inputs_of(options),
            n_trials=n_trials,
            storage=options.storage,
            study=study,
            constraints=constraints,
            directions=options.direction,
            trial_timeout=options.trial_timeout,
        )

    try:
        result = run(0)  # opens (or creates) the study, so that a bad storage fails before any work
    except _STORAGE_ERRORS as error:
        raise UsageError(f"--storage {options.storage}: cannot be opened: {one_line(error)}") from error
    progress = _Progress(options.trials)
    kept = f"the study {study!r} is kept in {options.storage}: the same command continues it"
    folder = _weights_folder(options.storage)
    stop_at = None if options.timeout is None else time.monotonic() + options.timeout
    with weights_folder(folder), _StopAfterTrial() as stop:
        try:
            for done in range(1, options.trials + 1):
                if stop_at is not None and time.monotonic() >= stop_at:
                    print(f"torchx tune: --timeout {options.timeout:g} s reached", file=sys.stderr)
                    break
                result = run(1)
                progress.update(done, result.study)
                if stop.requested:
                    break
        except KeyboardInterrupt:
            progress.close()
            print(f"torchx tune: interrupted, the running trial failed; {kept}", file=sys.stderr)
            return INTERRUPTED
    progress.close()
    _print_best(result.study)
    written = _write_best(result, output, weights, folder)
    if stop.requested:
        print(f"torchx tune: stopped after the running trial; {kept}", file=sys.stderr)
        return INTERRUPTED
    return written


class _StopAfterTrial:
    """Ctrl-C during a search: the first lets the running trial finish and stops
    the search after it, the second stops it at once (KeyboardInterrupt: the
    running trial fails). Only where Ctrl-C would raise KeyboardInterrupt (the
    main thread, Python's own handler): a process that ignores it keeps doing so."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: Any = None

    def __enter__(self) -> _StopAfterTrial:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.getsignal(signal.SIGINT)
            if self._previous is signal.default_int_handler:
                signal.signal(signal.SIGINT, self._interrupted)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._previous is signal.default_int_handler:
            signal.signal(signal.SIGINT, self._previous)

    def _interrupted(self, signum: int, frame: object) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("torchx tune: stopping after the running trial (Ctrl-C again: stop now)", file=sys.stderr)


def tune_report(options: argparse.Namespace) -> int:
    """``torchx tune-report``: see :data:`~torchx.tune._arguments.TUNE_REPORT_HELP`."""
    output = output_path(options.output, REPORT_SUFFIXES)
    file = storage_file(options.storage)
    if file is not None and not file.is_file():  # opening it would make an empty one
        kind = "database" if journal_path(options.storage) is None else "journal"
        raise UsageError(f"--storage {options.storage}: no such {kind} file {file}")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        with creation_lock(options.storage):
            storage = open_storage(options.storage)
        names = optuna.get_all_study_names(storage=storage)
    except _STORAGE_ERRORS as error:
        raise UsageError(f"--storage {options.storage}: cannot be opened: {one_line(error)}") from error
    name = options.study
    if name is None and len(names) == 1:
        name = names[0]
    if name not in names:
        held = f"it holds {', '.join(repr(held) for held in names)}" if names else "it holds no study"
        what = "no study given, and" if name is None else f"no study {name!r}:"
        raise UsageError(f"--storage {options.storage}: {what} {held}; fix: --study NAME")
    write_report(optuna.load_study(study_name=name, storage=storage), output)
    print(f"wrote {output}")
    return 0


def load_objective(text: str) -> Objective:
    """The function ``FILE:FUNCTION`` names (``FILE`` alone: its ``objective``), its file run as a module."""
    file, _, name = text.rpartition(":") if ":" in text else (text, "", "objective")
    if not name.isidentifier():
        raise UsageError(
            f"--objective {text}: {name!r} is not a function name; give FILE:FUNCTION, e.g. train.py:objective"
        )
    path = input_path(file)
    spec = importlib.util.spec_from_file_location(f"torchx_tune_objective_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise UsageError(f"--objective {text}: {file} is not a Python file (.py)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.path.insert(0, str(path.parent.resolve()))  # its own imports work as when python runs it
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise UsageError(f"--objective {text}: running {file} raised {one_line(error)}") from error
    function = getattr(module, name, None)
    if not callable(function):
        defined = sorted(key for key, value in vars(module).items() if _defined_in(value, module.__name__))
        listed = f" (it defines {', '.join(defined)})" if defined else ""
        raise UsageError(f"--objective {text}: {file} defines no function {name!r}{listed}")
    objective: Objective = function
    return objective


def _defined_in(value: object, module: str) -> bool:
    return callable(value) and getattr(value, "__module__", None) == module


def _weights_folder(storage: str) -> Path:
    """Where the objective's :func:`~torchx.tune.save_weights` writes: beside an SQLite file or a
    journal (``study.db``, ``journal:study.log``: ``study-weights/``), else ``torchx-tune-weights`` here."""
    file = storage_file(storage)
    return DEFAULT_FOLDER if file is None else file.with_name(f"{file.stem}-weights")


class _Progress:
    """Trials done, pruned, failed and the best value: a tqdm bar where tqdm is installed, else a line per trial."""

    def __init__(self, total: int) -> None:
        self._total = total
        self._bar: Any = None
        try:
            tqdm = importlib.import_module("tqdm")  # optional, and untyped
        except ModuleNotFoundError:
            return
        self._bar = tqdm.tqdm(total=total, unit="trial", file=sys.stderr, disable=total == 0)

    def update(self, done: int, study: optuna.Study) -> None:
        states = [trial.state for trial in study.get_trials(deepcopy=False)]
        text = f"{states.count(TrialState.PRUNED)} pruned, {states.count(TrialState.FAIL)} failed, {_best(study)}"
        if self._bar is None:
            print(f"trial {done}/{self._total}: {text}", file=sys.stderr, flush=True)
        else:
            self._bar.set_postfix_str(text, refresh=False)
            self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _best(study: optuna.Study) -> str:
    best = best_trials(study)
    if not best:
        return "no best yet"
    if len(study.directions) > 1:
        return f"{len(best)} on the Pareto front"
    return f"best {best[0].value:.6g} (trial {best[0].number})"


def _print_best(study: optuna.Study) -> None:
    best = best_trials(study)[:TOP_TRIALS]
    total = len(study.trials)
    if not best:
        print(f"study {_name(study)}: {total} trials, none complete")
        return
    which = f"the Pareto set, {len(best)} trials" if len(study.directions) > 1 else f"the best {len(best)}"
    print(f"study {_name(study)}: {total} trials; {which}:")
    print("\n".join(format_table(HEADERS, trial_rows(best), numeric=0)))


def _write_best(result: SearchResult, output: Path | None, weights: Path | None, folder: Path) -> int:
    """Write the best spec to ``output`` and the checkpoint its objective saved (in ``folder``) to
    ``weights`` (both or neither; several objectives: those of every trial of the Pareto set, named
    ``best-trial7.yaml``...); 1 when the study has no such trial or checkpoint."""
    if output is None and weights is None:
        return 0
    if not result.best_trials:
        print(
            f"torchx tune: no trial of study {_name(result.study)} is complete: nothing written",
            file=sys.stderr,
        )
        return 1
    several = len(result.study.directions) > 1
    writes: dict[Path, Callable[[Path], object]] = {}
    for best, spec in zip(result.best_trials, result.best_specs, strict=True):
        if output is not None:
            writes[_numbered(output, best, several)] = functools.partial(_save_spec, spec)
        if weights is not None:
            try:
                source = checked_weights(best, result.study.trials, folder, spec)
            except CheckpointError as error:
                print(f"torchx tune: {error}; nothing written", file=sys.stderr)
                return 1
            writes[_numbered(weights, best, several)] = functools.partial(shutil.copyfile, source)
    write_together(writes)
    for path in writes:
        print(f"wrote {path}")
    return 0


def _numbered(path: Path, trial: FrozenTrial, several: bool) -> Path:
    """``path``, or for one of several best trials ``path`` with its number (``best-trial7.yaml``)."""
    return path.with_name(f"{path.stem}-trial{trial.number}{path.suffix}") if several else path


def _save_spec(spec: dict[str, Any], path: Path) -> None:
    save_spec(from_spec(spec), path)


def _name(study: optuna.Study) -> str:
    """The study's name as shown (a storage may hold any text in it)."""
    return repr(shown(study.study_name))
