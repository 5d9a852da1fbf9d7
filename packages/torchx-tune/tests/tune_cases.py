"""Stand-in spaces and objectives that the search tests share."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import optuna
import torch

from torchx.tune._search import search


def mlp(width: int) -> dict[str, Any]:
    return {
        "type": "Sequential",
        "layers": [{"type": "Linear", "args": {"out_features": width}}, {"type": "ReLU"}],
    }


class Choices:
    """A stand-in space: one of ``specs``, chosen by the trial's parameter ``arch``."""

    def __init__(self, *specs: dict[str, Any]) -> None:
        self.specs = specs

    def sample(self, trial: Any) -> dict[str, Any]:
        return self.specs[trial.suggest_categorical("arch", list(range(len(self.specs))))]


class Objective:
    """Counts its calls; the value is the model's parameter count."""

    def __init__(self) -> None:
        self.models: list[torch.nn.Module] = []

    def __call__(self, model: torch.nn.Module, trial: optuna.Trial) -> float:
        self.models.append(model)
        return float(sum(parameter.numel() for parameter in model.parameters()))


WIDTH_SPACE = """\
type: Sequential
layers:
  - type: Linear
    args: {out_features: {"$int": [2, 64], name: width}}
"""
"""A space file of one Linear layer whose width is the parameter ``width``."""


def run_torchx(folder: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``torchx ARGUMENTS`` in a subprocess run in ``folder``."""
    return subprocess.run(
        [sys.executable, "-m", "torchx.cli", *arguments],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )


def search_in_thread(
    objective: Any, storage: optuna.storages.BaseStorage
) -> tuple[threading.Thread, list[Any]]:
    """A thread running one trial of ``mlp(3)`` in the study ``s`` of ``storage``, started, and
    the list that receives its search's result."""
    found: list[Any] = []
    thread = threading.Thread(
        target=lambda: found.append(
            search(Choices(mlp(3)), objective, input=(None, 4), n_trials=1, storage=storage, study="s")
        )
    )
    thread.start()
    return thread, found
