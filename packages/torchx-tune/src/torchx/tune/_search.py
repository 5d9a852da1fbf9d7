"""``search``: an Optuna study over a search space, each candidate checked for free before training.

One trial (Optuna's ask and tell): sample a plain spec from the space, key it
(the SHA-256 of its canonical JSON), check it on the meta device (a candidate
that does not build or breaks a constraint is PRUNED with
``user_attrs["pruned_reason"]``), then train it once per study and
combination of what is sampled for it: the architecture and the parameters
the objective samples itself (``trial.suggest_float("lr", ...)``). Where a
trial of the same combination is COMPLETE its values are reused
(``user_attrs["reused_from"]``); where one is RUNNING (another worker) the
trial waits for it. Otherwise the model is built for real and
``objective(model, trial)`` gives the value (or values: several
objectives); an exception from it is a FAIL with ``user_attrs["error"]`` and
the search goes on.

The objective's own parameters are known once a trial of the architecture
has sampled them (``user_attrs["objective_params"]``, their names): a later
trial of that architecture samples the same parameters first (drawn by the
sampler, as the objective would), so that its combination is known before
anything is trained. A parameter never seen before cannot be foreseen: the
trial that first samples it trains, and so does every trial until one of the
same combination is COMPLETE.

Training once across workers is a per-combination lock written in the study
itself: Lamport's bakery, whose tickets are the trial numbers, handed out in
order by the storage at ``ask``. A trial keys itself (``user_attrs["spec_key"]``,
and ``user_attrs["train_key"]`` where the objective's parameters add to it),
then trains only when no RUNNING trial with a smaller number holds its key or
is still before its key (sampling, checking: it may be about to take the same
key). So it needs nothing from the storage but the reads and writes of trial
attributes: one write and one read a trial.

A worker that dies mid-trial (killed, its machine lost) would hold its lock
for ever, so every running trial beats: a daemon thread writes
``user_attrs["heartbeat"]`` (``time.time()``) every :data:`HEARTBEAT_SECONDS`
from ``ask`` to ``tell`` (before its first beat, its start stands for one).
Before a trial, at most once a beat, and while waiting, a worker takes a
RUNNING trial for lost when its last beat (before its first:
its start) is more than :data:`GRACE_BEATS` beats old, or as far in the future
(a forged or skewed clock): it marks that trial FAIL with
``user_attrs["error"]`` "worker lost (...)" and enqueues its parameters once
(``user_attrs["retry_of"]``), so that the next trial of any worker retries it.
The workers' clocks must agree to well within that grace period, and every
worker of a study must be a torchx-tune worker (a plain Optuna worker's
trials never beat).

This is the study's own heartbeat rather than Optuna's (``RDBStorage(heartbeat_interval=...)``
with ``fail_stale_trials``): Optuna's exists only in its RDB storage (not its
journal file, nor in memory), takes a RUNNING trial that never beat for alive
for ever, and offers no public read of a trial's last beat, which the wait
above needs. Optuna's ``RetryFailedTrialCallback`` is not used either: it
copies the failed trial's user attributes (its key, beat and error)
into the retry; ``enqueue_trial`` gives the parameters alone.

``trial_timeout`` bounds a trial from its start: past it, the heartbeat thread
fails the trial with the reason and beats no more (other workers see it at
once), and an objective running in the main thread is interrupted
(``TrialTimeoutError``, raised through SIGALRM where the process leaves that
signal to Python). ``timeout`` stops a search from starting trials after it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

import optuna
import torch
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.exceptions import UpdateFinishedTrialError
from optuna.storages import BaseStorage
from optuna.trial import FixedTrial, FrozenTrial, TrialState

from torchx.core import SpecError, TypedShape, build, from_spec
from torchx.tune._checks import Check, Constraints, Input, check, model_inputs, one_line
from torchx.tune._ranking import best_trials
from torchx.tune._storage import creation_lock, open_storage

__all__ = ["SearchResult", "SearchSpace", "TrialTimeoutError", "best_trials", "search", "spec_key"]

POLL_SECONDS = 0.2
"""How often a trial waiting for another worker's training of its combination reads the study again."""

HEARTBEAT_SECONDS = 10.0
"""How often a running trial writes its heartbeat (``user_attrs["heartbeat"]``)."""
GRACE_BEATS = 3
"""How many heartbeats a RUNNING trial may miss before another worker takes it for lost (30 s)."""

_NOT_ITS_SPACE = (
    "the study did not run with this search space and input (was one changed since?); "
    "fix: search with the space and input it ran with, or start a new study (--study NAME)"
)

Direction = Literal["minimize", "maximize"]


class SearchSpace(Protocol):
    """What ``search`` needs of a space: a plain spec drawn through an Optuna trial."""

    def sample(self, trial: Any) -> dict[str, Any]: ...


Objective = Callable[[Any, optuna.Trial], "float | torch.Tensor | Sequence[float]"]
"""``objective(model, trial)``: train the built model, return the value to optimise (a sequence
of values, one per direction, for several objectives)."""


class TrialTimeoutError(Exception):
    """A trial ran past ``trial_timeout``."""


@dataclass(frozen=True)
class SearchResult:
    """The study and its best trials with their plain specs.

    ``best_trials``/``best_specs``: the best trial for one objective, the Pareto set (by trial
    number) for several; empty while no trial is COMPLETE. ``best_trial``/``best_spec``: the best
    trial and its spec for one objective; None for several, or while none is COMPLETE.
    """

    study: optuna.Study
    best_trial: FrozenTrial | None
    best_spec: dict[str, Any] | None
    best_trials: tuple[FrozenTrial, ...] = ()
    best_specs: tuple[dict[str, Any], ...] = ()


def spec_key(spec: Mapping[str, Any], inputs: Sequence[Input]) -> str:
    """The architecture's key: the SHA-256 of ``spec`` and the ``inputs`` it is built for (a lazy
    layer's size comes from them), as JSON with sorted keys (equal specs and inputs, equal keys;
    an infinite float, which a spec may hold, is written ``Infinity``)."""
    described = [_described(input) for input in inputs]
    return _sha256({"spec": spec, "inputs": described})


def _sha256(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
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
    direction: Direction = "minimize",
    directions: Sequence[Direction] | None = None,
    timeout: float | None = None,
    trial_timeout: float | None = None,
) -> SearchResult:
    """Run ``n_trials`` more trials of the study ``study`` in ``storage`` over ``space``.

    ``input`` is the model's input shape (``None``: a dynamic dim), or a sequence of them.
    ``storage`` is an Optuna storage, an SQLAlchemy URL (``"sqlite:///study.db"``) or a journal
    file (see :func:`~torchx.tune._storage.open_storage`; default: in memory); the study is
    created there or, where it exists, continued (with the same directions, else refused), so
    several processes on one storage share the study. ``objective(model, trial)`` receives the
    model built on torch's default device (parameters allocated: an optimizer can be made at
    once) and the Optuna trial (for ``trial.report``, ``trial.should_prune`` and its own
    ``trial.suggest_*``); raising ``optuna.TrialPruned`` prunes it. ``directions`` (instead of
    ``direction``) makes several objectives: the objective returns one value per direction.
    ``timeout`` (seconds) starts no trial after it; ``trial_timeout`` fails a trial past it.
    A KeyboardInterrupt marks the running trial FAIL (``user_attrs["error"]``) and is raised again.
    """
    if isinstance(n_trials, bool) or not isinstance(n_trials, int) or n_trials < 0:
        raise ValueError(f"search: n_trials must be an int >= 0, got {n_trials!r}; fix: pass n_trials=20")
    for name, seconds in (("timeout", timeout), ("trial_timeout", trial_timeout)):
        if seconds is not None and not (isinstance(seconds, (int, float)) and 0 < seconds < math.inf):
            raise ValueError(f"search: {name} must be a number of seconds > 0, got {seconds!r}")
    wanted = _directions(direction, directions)
    with creation_lock(storage):  # an RDBStorage creates its tables when made
        store = open_storage(storage)
        opened = optuna.create_study(
            storage=store,
            sampler=sampler,
            pruner=pruner,
            study_name=study,
            directions=wanted,
            load_if_exists=True,
        )
    _check_directions(opened, wanted)
    inputs = model_inputs(input)
    _result(opened, space, inputs)  # a study of another space or input is refused before any work
    run = _Run(opened, store, space, objective, inputs, constraints, trial_timeout)
    stop_at = None if timeout is None else time.monotonic() + timeout
    swept_at = -math.inf
    with _optimize_loop(opened):
        for _ in range(n_trials):
            if stop_at is not None and time.monotonic() >= stop_at:
                break
            if time.monotonic() - swept_at >= HEARTBEAT_SECONDS:  # a lost worker is found within a beat
                _fail_lost(run, opened.get_trials(deepcopy=False, states=(TrialState.RUNNING,)))
                swept_at = time.monotonic()
            _run_trial(run)
            if opened._stop_flag:
                break
    return _result(opened, space, inputs)


def _directions(direction: Direction, directions: Sequence[Direction] | None) -> list[Direction]:
    if directions is None:
        return [direction]
    if isinstance(directions, str) or not directions:
        raise ValueError(
            f"search: directions must be a non-empty list, got {directions!r}; "
            'fix: directions=["maximize", "minimize"]'
        )
    if direction != "minimize":
        raise ValueError("search: give direction or directions, not both")
    return list(directions)


def _check_directions(study: optuna.Study, wanted: Sequence[Direction]) -> None:
    """Refuse to continue a study that optimises other directions (its best would be the worst)."""
    held = [direction.name.lower() for direction in study.directions]
    if held != list(wanted):
        raise SpecError(
            f"study {study.study_name!r}",
            f"it optimises {held}, not {list(wanted)}: continuing it would mix values optimised "
            "the other way; fix: search with its directions, or start a new study (--study NAME)",
        )


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


@dataclass(frozen=True)
class _Run:
    """What every trial of one ``search`` call shares."""

    study: optuna.Study
    storage: BaseStorage
    space: SearchSpace
    objective: Objective
    inputs: tuple[Input, ...]
    constraints: Constraints | None
    trial_timeout: float | None


def _run_trial(run: _Run) -> None:
    """Ask for a trial, evaluate it (beating) and tell its outcome; anything escaping marks it FAIL
    first. A trial that a waiting worker took for lost meanwhile, or that timed out, stays FAIL
    (Optuna logs the skip)."""
    study = run.study
    trial = study.ask()
    deadline = None if run.trial_timeout is None else time.monotonic() + run.trial_timeout
    try:
        with _heartbeat(run, trial, deadline):
            state, values = _evaluate(run, trial, deadline)
    except UpdateFinishedTrialError:  # failed meanwhile (timed out, or taken for lost): the reason is stored
        return
    except BaseException as error:
        _fail(trial, one_line(error))
        with contextlib.suppress(UpdateFinishedTrialError):  # failed by another worker meanwhile
            study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
        raise
    with contextlib.suppress(UpdateFinishedTrialError):  # failed by another worker since the check
        study.tell(trial, values, state=state, skip_if_finished=True)


def _evaluate(
    run: _Run, trial: optuna.Trial, deadline: float | None
) -> tuple[TrialState, list[float] | None]:
    spec = run.space.sample(trial)
    sampled_by_space = set(trial.params)
    checked = check(spec, run.inputs, run.constraints)
    _record(trial, checked)
    if checked.reason is not None:
        trial.set_user_attr("pruned_reason", checked.reason)
        return TrialState.PRUNED, None
    try:
        done = _trained_elsewhere(run, trial, spec_key(spec, run.inputs), sampled_by_space, deadline)
    except TrialTimeoutError as error:  # waiting for another worker's training
        _fail(trial, str(error))
        return TrialState.FAIL, None
    if done is not None:
        _note_objective_params(trial, sampled_by_space)
        trial.set_user_attr("reused_from", done.user_attrs.get("reused_from", done.number))
        return TrialState.COMPLETE, list(done.values)
    try:
        with _alarm(deadline, run.trial_timeout):
            returned = run.objective(build(from_spec(spec), *run.inputs), trial)
    except optuna.TrialPruned:
        return TrialState.PRUNED, None
    except Exception as error:  # noqa: BLE001 - any failure of the user's training fails this trial only
        _fail(trial, one_line(error))
        return TrialState.FAIL, None
    values = _as_values(returned, len(run.study.directions))
    if isinstance(values, str):
        _fail(trial, values)
        return TrialState.FAIL, None
    _note_objective_params(trial, sampled_by_space)
    return TrialState.COMPLETE, values


def _as_values(returned: object, count: int) -> list[float] | str:
    """The objective's value(s) as ``count`` floats (a loss tensor detached first, as torch asks),
    or why they are not: another count, something not a number, or nan (which Optuna refuses)."""
    many = isinstance(returned, Sequence) and not isinstance(returned, str)
    items: list[Any] = list(returned) if many else [returned]  # type: ignore[call-overload]
    if len(items) != count:
        return f"the objective returned {len(items)} value(s) for {count} direction(s): {_shown(returned)}"
    try:
        values = [float(item.detach() if isinstance(item, torch.Tensor) else item) for item in items]
    except (TypeError, ValueError, RuntimeError) as error:
        return f"the objective returned {_shown(returned)}, not a number: {one_line(error)}"
    if any(math.isnan(value) for value in values):
        return "the objective returned nan"
    return values


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _fail(trial: optuna.Trial, error: str) -> None:
    """Keep why ``trial`` fails in ``user_attrs["error"]``, unless another worker took it for lost,
    or it timed out, meanwhile (it is FAIL already, with that reason)."""
    with contextlib.suppress(UpdateFinishedTrialError):
        trial.set_user_attr("error", error)


def _record(trial: optuna.Trial, checked: Check) -> None:
    for name in ("params", "mult_adds", "activation_bytes"):
        trial.set_user_attr(name, getattr(checked, name))


def _note_objective_params(trial: optuna.Trial, sampled_by_space: set[str]) -> None:
    """Name the parameters the objective sampled itself, and key the trial by its combination."""
    own = sorted(set(trial.params) - sampled_by_space)
    if not own:  # none: the trial is keyed by its architecture alone
        return
    key = _combination_key(trial.user_attrs["spec_key"], {name: trial.params[name] for name in own})
    with contextlib.suppress(UpdateFinishedTrialError):  # timed out meanwhile
        trial.set_user_attr("objective_params", own)
        if trial.user_attrs.get("train_key") != key:  # keyed so while it waited: written already
            trial.set_user_attr("train_key", key)


def _combination_key(arch: str, own: Mapping[str, Any]) -> str:
    """The key of an architecture trained with the objective's own parameters ``own``."""
    return arch if not own else _sha256({"spec_key": arch, "objective_params": own})


def _train_key(trial: FrozenTrial) -> object:
    return trial.user_attrs.get("train_key", trial.user_attrs.get("spec_key"))


def _trained_elsewhere(
    run: _Run, trial: optuna.Trial, arch: str, sampled_by_space: set[str], deadline: float | None
) -> FrozenTrial | None:
    """A COMPLETE trial of ``trial``'s combination (after waiting for one that another worker is
    training), or None when ``trial`` is to train it: the bakery lock of the module's docstring,
    the objective's known parameters sampled first, lost trials failed and passed over."""
    trial.set_user_attr("spec_key", arch)
    written = arch  # the key other trials read off this one
    while True:
        trials = run.study.get_trials(deepcopy=False)
        others = [
            other
            for other in trials
            if other.number != trial.number and other.user_attrs.get("spec_key") == arch
        ]
        _sample_objective_params(trial, others, sampled_by_space)
        own = {name: value for name, value in trial.params.items() if name not in sampled_by_space}
        key = _combination_key(arch, own)
        if key != written:  # a parameter newly known: keyed by it, and the study read again after
            trial.set_user_attr("train_key", key)
            written = key
            continue
        same = [other for other in others if _train_key(other) == key]
        done = next((other for other in same if other.state == TrialState.COMPLETE), None)
        if done is not None:
            return done
        # a trial keyed by the architecture alone may be about to sample the objective's known
        # parameters (or sample them in its objective): it may take the same key
        bare = [other for other in others if key != arch and _train_key(other) == arch]
        keyless = [other for other in trials if "spec_key" not in other.user_attrs]
        now = time.time()
        if not any(
            _ahead(other, trial.number) and not _failed_if_lost(run, other, now)
            for other in same + bare + keyless
        ):
            return None
        if deadline is not None and time.monotonic() >= deadline:
            raise TrialTimeoutError(_timed_out(run.trial_timeout))
        time.sleep(POLL_SECONDS)


def _sample_objective_params(
    trial: optuna.Trial, others: Sequence[FrozenTrial], sampled_by_space: set[str]
) -> None:
    """Sample in ``trial`` the parameters that the objective sampled in the COMPLETE trials of its
    architecture, as the objective would (same names and distributions, drawn by the sampler)."""
    for other in reversed(others):  # the newest first: the objective may have changed its ranges
        if other.state != TrialState.COMPLETE:
            continue
        names = other.user_attrs.get("objective_params")
        for name in names if isinstance(names, list) else ():
            if name in other.distributions and name not in trial.params and name not in sampled_by_space:
                _suggest(trial, name, other.distributions[name])


def _suggest(trial: optuna.Trial, name: str, distribution: BaseDistribution) -> None:
    if isinstance(distribution, FloatDistribution):
        trial.suggest_float(
            name, distribution.low, distribution.high, step=distribution.step, log=distribution.log
        )
    elif isinstance(distribution, IntDistribution):
        trial.suggest_int(
            name, distribution.low, distribution.high, step=distribution.step, log=distribution.log
        )
    elif isinstance(distribution, CategoricalDistribution):
        trial.suggest_categorical(name, distribution.choices)


def _ahead(other: FrozenTrial, number: int) -> bool:
    """Whether the trial numbered ``number`` waits for ``other``: RUNNING, and asked before it."""
    return other.state == TrialState.RUNNING and other.number < number


def _timed_out(seconds: float | None) -> str:
    return f"timed out: the trial ran past trial_timeout={seconds:g} s"


@contextlib.contextmanager
def _heartbeat(run: _Run, trial: optuna.Trial, deadline: float | None) -> Iterator[None]:
    """Write ``trial``'s heartbeat now and every :data:`HEARTBEAT_SECONDS` (a daemon thread) until
    the block ends, which waits for the thread; a write that fails is tried again at the next beat,
    a trial taken for lost meanwhile beats no more, and at ``deadline`` (``time.monotonic()``) the
    thread fails the trial with the reason and stops. The beat is written through the storage, not
    the trial, whose attributes the main thread reads meanwhile."""
    stop = threading.Event()

    def write() -> bool:
        """Write a beat; False where the trial is finished (taken for lost meanwhile)."""
        try:
            run.storage.set_trial_user_attr(trial._trial_id, "heartbeat", time.time())
        except UpdateFinishedTrialError:
            return False
        except Exception:  # noqa: BLE001 - a storage's passing failure (a locked database): beat again
            pass
        return True

    def beat() -> None:
        while not stop.wait(min(HEARTBEAT_SECONDS, _seconds_left(deadline))):
            if _seconds_left(deadline) <= 0:
                _fail_in_storage(run, trial._trial_id, _timed_out(run.trial_timeout))
                return
            if not write():
                return

    # the first beat here, between the trial's own writes (on SQLite a write from the thread
    # meanwhile would wait for the database's lock)
    write()
    thread = threading.Thread(target=beat, name=f"torchx-tune heartbeat {trial.number}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _seconds_left(deadline: float | None) -> float:
    return math.inf if deadline is None else deadline - time.monotonic()


@contextlib.contextmanager
def _alarm(deadline: float | None, seconds: float | None) -> Iterator[None]:
    """Raise :class:`TrialTimeoutError` in the block at ``deadline``, through SIGALRM: only in the
    main thread of a process that leaves SIGALRM to its default (else the heartbeat thread alone
    fails the trial, and the objective's outcome is dropped when it returns)."""
    if (
        deadline is None
        or not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL
    ):
        yield
        return

    def expired(signum: int, frame: object) -> None:
        raise TrialTimeoutError(_timed_out(seconds))

    signal.signal(signal.SIGALRM, expired)
    try:
        signal.setitimer(signal.ITIMER_REAL, max(_seconds_left(deadline), 1e-6))
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)  # the alarm may still go off before this
        finally:
            signal.signal(signal.SIGALRM, signal.SIG_DFL)


def _last_beat(trial: FrozenTrial) -> float | None:
    """``trial``'s last heartbeat (before its first: its start), or None when it has neither; a beat
    that is not a finite number counts as none."""
    beat = trial.user_attrs.get("heartbeat")
    if isinstance(beat, (int, float)) and not isinstance(beat, bool):
        with contextlib.suppress(OverflowError):
            if math.isfinite(float(beat)):
                return float(beat)
    return None if trial.datetime_start is None else trial.datetime_start.timestamp()


def _lost_since(trial: FrozenTrial, now: float) -> str | None:
    """Why ``trial`` (RUNNING) is taken for lost: its last beat is more than the grace period old
    or ahead of ``now``; None while it is alive."""
    last = _last_beat(trial)
    grace = GRACE_BEATS * HEARTBEAT_SECONDS
    if last is None or abs(now - last) <= grace:
        return None
    if last > now:
        return "its heartbeat lies in the future"
    return f"no heartbeat since {datetime.fromtimestamp(last).isoformat(sep=' ', timespec='seconds')}"


def _failed_if_lost(run: _Run, other: FrozenTrial, now: float) -> bool:
    """Whether ``other`` (RUNNING) was lost and is now failed (not retried: the trial waiting for it
    trains its combination itself); False where it is alive or its worker told its outcome first."""
    reason = _lost_since(other, now)
    return reason is not None and _fail_in_storage(run, other._trial_id, f"worker lost ({reason})")


def _fail_lost(run: _Run, running: Sequence[FrozenTrial]) -> None:
    """Fail the lost trials of ``running`` (:func:`_failed_if_lost`) and enqueue the parameters of
    each once (``user_attrs["retry_of"]``; a retry is not retried). The retry's number is taken when
    it is enqueued, so it may start after trials with larger numbers: a retry waits for them."""
    now = time.time()
    for other in running:
        if _failed_if_lost(run, other, now) and "retry_of" not in other.user_attrs:
            run.study.enqueue_trial(dict(other.params), user_attrs={"retry_of": other.number})


def _fail_in_storage(run: _Run, trial_id: int, error: str) -> bool:
    """Mark the RUNNING trial ``trial_id`` FAIL with ``error``; False where it finished first (or the
    storage failed). Written through the storage (Optuna's ``Trial`` objects write only their own
    process's trials, and a timed-out trial is written from its heartbeat thread); ``_trial_id``,
    the storage's id of a trial, has no public accessor."""
    try:
        run.storage.set_trial_user_attr(trial_id, "error", error)
        return run.storage.set_trial_state_values(trial_id, TrialState.FAIL)
    except UpdateFinishedTrialError:  # told meanwhile, or failed by another worker
        return False
    except Exception:  # noqa: BLE001 - a storage's passing failure: a later sweep tries again
        return False


def _result(study: optuna.Study, space: SearchSpace, inputs: tuple[Input, ...]) -> SearchResult:
    """The best trials (:func:`best_trials`: the first alone for one objective) and their specs,
    drawn again from the space with each trial's parameters (and checked against the key of the
    spec it trained).

    :raises SpecError: ``space`` and ``inputs`` do not give a trial's architecture (not those it ran with).
    """
    best = best_trials(study)
    if len(study.directions) == 1:
        best = best[:1]
    specs = tuple(_spec_of(study, trial, space, inputs) for trial in best)
    if len(study.directions) > 1 or not best:
        return SearchResult(study, None, None, tuple(best), specs)
    return SearchResult(study, best[0], specs[0], tuple(best), specs)


def _spec_of(
    study: optuna.Study, trial: FrozenTrial, space: SearchSpace, inputs: tuple[Input, ...]
) -> dict[str, Any]:
    where = f"study {study.study_name!r}, trial {trial.number}"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # FixedTrial's "out of the range" warning
            spec = space.sample(FixedTrial(trial.params, trial.number))
    except (ValueError, UserWarning) as error:  # FixedTrial: a parameter missing, or out of range
        raise SpecError(where, f"{one_line(error)}: {_NOT_ITS_SPACE}") from None
    if spec_key(spec, inputs) != trial.user_attrs.get("spec_key"):
        raise SpecError(
            where,
            f"its parameters give another architecture, or it was built for another input: {_NOT_ITS_SPACE}",
        )
    return spec
