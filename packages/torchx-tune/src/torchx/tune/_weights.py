"""How an objective hands its trained weights back: ``save_weights(trial, model)``.

The objective calls it once it has trained the model; the checkpoint (the
weights and the spec, as ``model.save`` writes it) goes to
``<folder>/<study>-trial-<number>.safetensors`` and its path into the
trial's user attribute ``"weights"``, where ``torchx tune --weights`` and
:func:`checked_weights` find it. The folder is ``torchx-tune-weights`` in the
working directory, or what :func:`weights_folder` sets (``torchx tune``
sets the folder beside its SQLite file: ``study.db`` keeps its weights in
``study-weights/``). Workers on several machines need a folder they share.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from optuna.trial import FrozenTrial

from torchx.core import CheckpointError, TorchXError, from_spec, load_model, to_spec
from torchx.tune._untrusted import shown

__all__ = [
    "DEFAULT_FOLDER",
    "MAX_PATH_CHARS",
    "WEIGHTS_ATTR",
    "checked_weights",
    "save_weights",
    "trial_weights",
    "weights_folder",
]

DEFAULT_FOLDER = Path("torchx-tune-weights")
WEIGHTS_ATTR = "weights"
"""The user attribute holding the path of a trial's saved checkpoint."""

MAX_PATH_CHARS = 4096
"""The longest weights path :func:`checked_weights` reads (Linux's PATH_MAX)."""

_folder: ContextVar[Path | None] = ContextVar("torchx_tune_weights_folder", default=None)


@contextmanager
def weights_folder(path: str | Path) -> Iterator[Path]:
    """Within the block, :func:`save_weights` writes into ``path`` (made where missing)."""
    token = _folder.set(Path(path))
    try:
        yield Path(path)
    finally:
        _folder.reset(token)


def save_weights(trial: Any, model: Any) -> Path:
    """Save the trained ``model`` (a TorchX container: a Sequential, a Functional) as the weights of
    ``trial`` (an Optuna trial), and return the checkpoint's path.

    :raises TypeError: ``model`` cannot write a TorchX checkpoint (a single built layer: make the
        space's top layer a Sequential).
    """
    save = getattr(model, "save", None)
    if not callable(save):
        raise TypeError(
            f"save_weights: a {type(model).__name__} cannot write a TorchX checkpoint; "
            "fix: make the search space's top layer a Sequential (or a Functional)"
        )
    folder = _folder.get() or DEFAULT_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    study = re.sub(r"[^\w.-]", "_", str(getattr(getattr(trial, "study", None), "study_name", "study")))
    path = (folder / f"{study}-trial-{trial.number}.safetensors").resolve()
    save(path)
    trial.set_user_attr(WEIGHTS_ATTR, str(path))
    return path


def trial_weights(trial: FrozenTrial, trials: list[FrozenTrial]) -> Path | None:
    """The checkpoint ``trial`` saved, or (a trial that reused another's value) the one the trained
    trial saved, from the study's ``trials``; None when there is none."""
    stored = _stored_weights(trial, trials)
    return Path(stored) if isinstance(stored, str) else None


def _stored_weights(trial: FrozenTrial, trials: list[FrozenTrial]) -> object:
    """The user attribute :func:`trial_weights` reads, as the study holds it (any JSON value)."""
    source = trial.user_attrs.get("reused_from")
    if isinstance(source, int) and WEIGHTS_ATTR not in trial.user_attrs:
        trial = next((other for other in trials if other.number == source), trial)
    return trial.user_attrs.get(WEIGHTS_ATTR)


def checked_weights(
    trial: FrozenTrial, trials: list[FrozenTrial], folder: str | Path, spec: Mapping[str, Any]
) -> Path:
    """:func:`trial_weights`, once it is known to be a TorchX checkpoint of ``spec`` inside ``folder``.

    The study names the file, and a study database may be shared or written by anyone: only a path
    (text without NUL, at most :data:`MAX_PATH_CHARS` characters) to a file in the search's own
    weights folder (symbolic links resolved) is read, and only with TorchX's safe loader (no code
    runs); the messages show the stored path with its control characters escaped.

    :raises CheckpointError: none saved, not a path, unreadable, gone, outside ``folder``, not a
        TorchX checkpoint, or of another architecture.
    """
    stored = _stored_weights(trial, trials)
    if stored is None:
        raise CheckpointError(
            f"the trial {trial.number} has no saved weights: the objective saves them with "
            "torchx.tune.save_weights(trial, model)"
        )
    weights = f"the trial {trial.number}'s weights {shown(stored)}"
    if not isinstance(stored, str) or "\0" in stored or not 0 < len(stored) <= MAX_PATH_CHARS:
        raise CheckpointError(
            f"{weights} are not a file path (text without NUL, 1 to {MAX_PATH_CHARS} characters): "
            "not read (the study database names them)"
        )
    try:
        real, home = Path(stored).resolve(), Path(folder).resolve()
        inside = real.is_relative_to(home)
        found = inside and real.is_file()
    except OSError as error:  # a name too long for the file system, a loop of links
        raise CheckpointError(f"{weights} cannot be read: {error.strerror or error}") from None
    if not inside:
        raise CheckpointError(
            f"{weights} are outside this search's weights folder {home}: "
            "not read (the study database names them)"
        )
    if not found:
        raise CheckpointError(f"{weights} are gone")
    try:
        held = to_spec(load_model(real))
    except TorchXError as error:
        raise CheckpointError(f"{weights}: {shown(str(error), MAX_PATH_CHARS)}") from error
    if held != to_spec(from_spec(spec)):
        raise CheckpointError(f"{weights} hold another architecture than its spec")
    return real
