"""A search worker for the multi-process tests (run as a script).

``python tune_worker.py STORAGE STUDY N_TRIALS CALLS READY WORKERS``: waits until
WORKERS workers have written their file in READY (so that they open the study at
the same moment), then runs N_TRIALS trials over three MLPs for inputs (None, 4);
each objective call writes a file named ``<spec key>-<trial number>`` in CALLS.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import optuna

from torchx.tune._search import search

SPECS = [
    {"type": "Sequential", "layers": [{"type": "Linear", "args": {"out_features": width}}, {"type": "ReLU"}]}
    for width in (3, 5, 7)
]


class Widths:
    """One of :data:`SPECS`, chosen by the trial's parameter ``arch``."""

    def sample(self, trial: Any) -> dict[str, Any]:
        return SPECS[trial.suggest_categorical("arch", [0, 1, 2])]


def main(storage: str, study: str, n_trials: str, calls: str, ready: str, workers: str) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    Path(ready, str(os.getpid())).touch()
    while len(list(Path(ready).iterdir())) < int(workers):
        time.sleep(0.01)

    def objective(model: Any, trial: optuna.Trial) -> float:
        Path(calls, f"{trial.user_attrs['spec_key']}-{trial.number}").touch()
        time.sleep(0.3)  # long enough for the other worker to sample the same architecture meanwhile
        return float(sum(parameter.numel() for parameter in model.parameters()))

    search(Widths(), objective, input=(None, 4), n_trials=int(n_trials), storage=storage, study=study)


if __name__ == "__main__":
    main(*sys.argv[1:])
