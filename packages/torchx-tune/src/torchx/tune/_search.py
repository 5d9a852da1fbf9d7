"""``search``: an Optuna study over a search space, each candidate checked for free before training.

One trial (Optuna's ask and tell): sample a plain spec from the space, key it
(the SHA-256 of its canonical JSON), check it on the meta device (a candidate
that does not build or breaks a constraint is PRUNED with
``user_attrs["pruned_reason"]``), then train it once per study: where a trial
of the same architecture is COMPLETE its value is reused
(``user_attrs["reused_from"]``), where one is RUNNING (another worker) the
trial waits for it. Otherwise the model is built for real and
``objective(model, trial)`` gives the value; an exception from it is a FAIL
with ``user_attrs["error"]`` and the search goes on.

Training once across workers is a per-architecture lock written in the study
itself (Lamport's bakery: a trial keys itself, takes a ticket one above those
of its architecture's trials, and trains only when no trial of the
architecture is taking a ticket or holds a smaller one), so it needs nothing
from the storage but the reads and writes of trial attributes.

A worker that dies mid-trial (killed, its machine lost) would hold its
architecture's lock for ever, so every running trial beats: a daemon thread
writes ``user_attrs["heartbeat"]`` (``time.time()``) every :data:`HEARTBEAT_SECONDS`
from ``ask`` to ``tell``. A waiting trial takes a RUNNING trial whose last beat
(before its first: its start) is more than :data:`GRACE_BEATS` beats old for lost:
it marks that trial FAIL with ``user_attrs["error"]`` "worker lost (...)" and goes on
without it. The workers' clocks must agree to well within that grace period.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

import optuna
import torch
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import BaseStorage
from optuna.study import StudyDirection
from optuna.trial import FixedTrial, FrozenTrial, TrialState

from torchx.core import SpecError, TypedShape, build, from_spec
from torchx.tune._checks import Check, Constraints, Input, check, model_inputs, one_line
from torchx.tune._storage import creation_lock, open_storage

__all__ = ["SearchResult", "SearchSpace", "best_trials", "search", "spec_key"]

POLL_SECONDS = 0.2
"""How often a trial waiting for another worker's training of its architecture reads the study again."""

HEARTBEAT_SECONDS = 10.0
"""How often a running trial writes its heartbeat (``user_attrs["heartbeat"]``)."""
GRACE_BEATS = 3
"""How many heartbeats a RUNNING trial may miss before a trial waiting for it takes its worker for lost."""

_NOT_ITS_SPACE = (
    "the study did not run with this search space and input (was one changed since?); "
    "fix: search with the space and input it ran with, or start a new study (--study NAME)"
)


class SearchSpace(Protocol):
    """What ``search`` needs of a space: a plain spec drawn through an Optuna trial."""

    def sample(self, trial: Any) -> dict[str, Any]: ...


Objective = Callable[[Any, optuna.Trial], float]
"""``objective(model, trial) -> float``: train the built model, return the value to optimise."""


@dataclass(frozen=True)
class SearchResult:
    """The study, its best trial and that trial's plain spec (None while no trial is COMPLETE)."""

    study: optuna.Study
    best_trial: FrozenTrial | None
    best_spec: dict[str, Any] | None


def spec_key(spec: Mapping[str, Any], inputs: Sequence[Input]) -> str:
    """The architecture's key: the SHA-256 of ``spec`` and the ``inputs`` it is built for (a lazy
    layer's size comes from them), as JSON with sorted keys (equal specs and inputs, equal keys;
    an infinite float, which a spec may hold, is written ``Infinity``)."""
    described = [_described(input) for input in inputs]
    text = json.dumps({"spec": spec, "inputs": described}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _described(input: Input) -> dict[str, Any]:
    """What of one input shapes the model built for it: its shape (None: dynamic) and dtype."""
    if isinstance(input, (torch.Tensor, TypedShape)):
        return {"shape": list(input.shape), "dtype": str(input.dtype)}
    return {"shape": list(input), "dtype": None}


def search(
    space: SearchSpace,
    objective: Objective,
    *,
    input: Input | Sequence[Input],
    n_trials: int,
    storage: str | BaseStorage | None = None,
    study: str | None = None,
    constraints: Constraints | None = None,
    sampler: optuna.samplers.BaseSampler | None = None,
    pruner: optuna.pruners.BasePruner | None = None,
    direction: Literal["minimize", "maximize"] = "minimize",
) -> SearchResult:
    """Run ``n_trials`` more trials of the study ``study`` in ``storage`` over ``space``.

    ``input`` is the model's input shape (``None``: a dynamic dim), or a sequence of them.
    ``storage`` is an Optuna storage or an SQLAlchemy URL (``"sqlite:///study.db"``; default: in
    memory); the study is created there or, where it exists, continued, so several processes on
    one storage share the study. ``objective(model, trial)`` receives the model built on torch's
    default device (parameters allocated: an optimizer can be made at once) and the Optuna trial
    (for ``trial.report`` and ``trial.should_prune``); raising ``optuna.TrialPruned`` prunes it.
    A KeyboardInterrupt marks the running trial FAIL (``user_attrs["error"]``) and is raised again.
    """
    if isinstance(n_trials, bool) or not isinstance(n_trials, int) or n_trials < 0:
        raise ValueError(f"search: n_trials must be an int >= 0, got {n_trials!r}; fix: pass n_trials=20")
    with creation_lock(storage):  # an RDBStorage creates its tables when made
        store = open_storage(storage)
        opened = optuna.create_study(
            storage=store,
            sampler=sampler,
            pruner=pruner,
            study_name=study,
            direction=direction,
            load_if_exists=True,
        )
    inputs = model_inputs(input)
    _result(opened, space, inputs)  # a study of another space or input is refused before any work
    with _optimize_loop(opened):
        for _ in range(n_trials):
            _run_trial(opened, store, space, objective, inputs, constraints)
            if opened._stop_flag:
                break
    return _result(opened, space, inputs)


@contextlib.contextmanager
def _optimize_loop(study: optuna.Study) -> Iterator[None]:
    """Within the block, ``study.stop()`` (a GridSampler or BruteForceSampler that has run out of
    candidates, or an objective calling ``trial.study.stop()``) asks the loop to stop, as it asks
    ``study.optimize``'s; outside one, Optuna raises RuntimeError. These are the two attributes
    ``optimize`` sets (Optuna offers no public door for an ask-and-tell loop)."""
    study._stop_flag = False
    study._thread_local.in_optimize_loop = True
    try:
        yield
    finally:
        study._thread_local.in_optimize_loop = False


def _run_trial(
    study: optuna.Study,
    storage: BaseStorage,
    space: SearchSpace,
    objective: Objective,
    inputs: tuple[Input, ...],
    constraints: Constraints | None,
) -> None:
    """Ask for a trial, evaluate it (beating) and tell its outcome; anything escaping marks it FAIL
    first. A trial that a waiting worker took for lost meanwhile stays FAIL (Optuna logs the skip)."""
    trial = study.ask()
    try:
        with _heartbeat(trial):
            state, value = _evaluate(study, storage, trial, space, objective, inputs, constraints)
    except BaseException as error:
        _fail(trial, one_line(error))
        study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
        raise
    study.tell(trial, value, state=state, skip_if_finished=True)


def _evaluate(
    study: optuna.Study,
    storage: BaseStorage,
    trial: optuna.Trial,
    space: SearchSpace,
    objective: Objective,
    inputs: tuple[Input, ...],
    constraints: Constraints | None,
) -> tuple[TrialState, float | None]:
    spec = space.sample(trial)
    checked = check(spec, inputs, constraints)
    _record(trial, checked)
    if checked.reason is not None:
        trial.set_user_attr("pruned_reason", checked.reason)
        return TrialState.PRUNED, None
    done = _trained_elsewhere(study, storage, trial, spec_key(spec, inputs))  # it built: it has a key
    if done is not None:
        trial.set_user_attr("reused_from", done.user_attrs.get("reused_from", done.number))
        return TrialState.COMPLETE, done.value
    try:
        value = _as_float(objective(build(from_spec(spec), *inputs), trial))
    except optuna.TrialPruned:
        return TrialState.PRUNED, None
    except Exception as error:  # noqa: BLE001 - any failure of the user's training fails this trial only
        _fail(trial, one_line(error))
        return TrialState.FAIL, None
    if math.isnan(value):  # Optuna refuses to tell it
        _fail(trial, "the objective returned nan")
        return TrialState.FAIL, None
    return TrialState.COMPLETE, value


def _fail(trial: optuna.Trial, error: str) -> None:
    """Keep why ``trial`` fails in ``user_attrs["error"]``, unless a waiting worker took it for lost
    meanwhile (it is FAIL already, with that reason)."""
    with contextlib.suppress(UpdateFinishedTrialError):
        trial.set_user_attr("error", error)


def _as_float(value: float | torch.Tensor) -> float:
    """The objective's value as a float (a loss tensor detached first, as torch asks)."""
    return float(value.detach() if isinstance(value, torch.Tensor) else value)


def _record(trial: optuna.Trial, checked: Check) -> None:
    for name in ("params", "mult_adds", "activation_bytes"):
        trial.set_user_attr(name, getattr(checked, name))


def _trained_elsewhere(
    study: optuna.Study, storage: BaseStorage, trial: optuna.Trial, key: str
) -> FrozenTrial | None:
    """A COMPLETE trial of the architecture ``key`` (after waiting for one that another worker is
    training), or None when ``trial`` is to train it: the bakery lock of the module's docstring,
    trials whose worker is lost failed and passed over."""
    trial.set_user_attr("spec_key", key)
    ticket = 1 + max((_ticket(other) or 0 for other in _same(study, trial, key)), default=0)
    trial.set_user_attr("ticket", ticket)
    while True:
        others = _same(study, trial, key)
        done = next((other for other in others if other.state == TrialState.COMPLETE), None)
        if done is not None:
            return done
        if not any(
            _ahead(other, ticket, trial.number) and not _failed_if_lost(study, storage, other)
            for other in others
        ):
            return None
        time.sleep(POLL_SECONDS)


def _same(study: optuna.Study, trial: optuna.Trial, key: str) -> list[FrozenTrial]:
    """The study's other trials of the architecture ``key``."""
    return [
        other
        for other in study.get_trials(deepcopy=False)
        if other.number != trial.number and other.user_attrs.get("spec_key") == key
    ]


def _ticket(trial: FrozenTrial) -> int | None:
    ticket = trial.user_attrs.get("ticket")
    return ticket if isinstance(ticket, int) else None


def _ahead(other: FrozenTrial, ticket: int, number: int) -> bool:
    """Whether the trial with ``ticket`` and ``number`` waits for ``other``: a RUNNING trial still
    taking its ticket, or holding a smaller one (trial numbers break ties)."""
    if other.state != TrialState.RUNNING:
        return False
    theirs = _ticket(other)
    return theirs is None or (theirs, other.number) < (ticket, number)


@contextlib.contextmanager
def _heartbeat(trial: optuna.Trial) -> Iterator[None]:
    """Write ``trial``'s heartbeat now and every :data:`HEARTBEAT_SECONDS` (a daemon thread) until
    the block ends, which waits for the thread; a write that fails is tried again at the next beat,
    and a trial taken for lost meanwhile beats no more."""
    stop = threading.Event()

    def beat() -> None:
        while True:
            try:
                trial.set_user_attr("heartbeat", time.time())
            except UpdateFinishedTrialError:
                return
            except Exception:  # noqa: BLE001 - a storage's passing failure (a locked database): beat again
                pass
            if stop.wait(HEARTBEAT_SECONDS):
                return

    thread = threading.Thread(target=beat, name=f"torchx-tune heartbeat {trial.number}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _failed_if_lost(study: optuna.Study, storage: BaseStorage, other: FrozenTrial) -> bool:
    """Whether ``other``'s worker is lost (its last beat, or its start before any, is more than
    :data:`GRACE_BEATS` beats old); if so ``other`` is marked FAIL with ``user_attrs["error"]``,
    unless its worker told its outcome first. Written through the storage's public methods (Optuna's
    ``Trial`` objects write only their own process's trials)."""
    beat = other.user_attrs.get("heartbeat")
    start = other.datetime_start
    if isinstance(beat, (int, float)):
        last = float(beat)
    elif start is not None:
        last = start.timestamp()
    else:
        return False
    if time.time() - last <= GRACE_BEATS * HEARTBEAT_SECONDS:
        return False
    since = datetime.fromtimestamp(last).isoformat(sep=" ", timespec="seconds")
    trial_id = storage.get_trial_id_from_study_id_trial_number(
        storage.get_study_id_from_name(study.study_name), other.number
    )
    with contextlib.suppress(UpdateFinishedTrialError):  # told meanwhile, or failed by another waiter
        storage.set_trial_user_attr(trial_id, "error", f"worker lost (no heartbeat since {since})")
        storage.set_trial_state_values(trial_id, TrialState.FAIL)
    return True


def best_trials(study: optuna.Study) -> list[FrozenTrial]:
    """The study's COMPLETE trials, best value first (ties: the earlier trial)."""
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    sign = -1.0 if study.direction == StudyDirection.MAXIMIZE else 1.0
    return sorted(complete, key=lambda trial: (sign * float(trial.value or 0.0), trial.number))


def _result(study: optuna.Study, space: SearchSpace, inputs: tuple[Input, ...]) -> SearchResult:
    """The first of :func:`best_trials` and its spec, drawn again from the space with the trial's
    parameters (and checked against the key of the spec it trained).

    :raises SpecError: ``space`` and ``inputs`` do not give that trial's architecture (not those it ran with).
    """
    best = next(iter(best_trials(study)), None)
    if best is None:
        return SearchResult(study, None, None)
    where = f"study {study.study_name!r}, trial {best.number}"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # FixedTrial's "out of the range" warning
            spec = space.sample(FixedTrial(best.params, best.number))
    except (ValueError, UserWarning) as error:  # FixedTrial: a parameter missing, or out of range
        raise SpecError(where, f"{one_line(error)}: {_NOT_ITS_SPACE}") from None
    if spec_key(spec, inputs) != best.user_attrs.get("spec_key"):
        raise SpecError(
            where,
            f"its parameters give another architecture, or it was built for another input: {_NOT_ITS_SPACE}",
        )
    return SearchResult(study, best, spec)
