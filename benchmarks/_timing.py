"""Timing for the benchmarks: interleaved medians, and one result line per comparison."""

from __future__ import annotations

import gc
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@dataclass
class Result:
    name: str
    torchx_s: float
    native_s: float
    bound: float | None
    unit: str = "ms"
    """How the two figures print: ``"ms"`` for seconds, ``"x"`` for ratios themselves."""

    @property
    def ratio(self) -> float:
        return self.torchx_s / self.native_s

    def line(self) -> str:
        verdict = "" if self.bound is None else ("  ok" if self.ratio <= self.bound else "  OVER BOUND")
        bound = "" if self.bound is None else f"(bound {self.bound:.2f}x)"
        scale = 1e3 if self.unit == "ms" else 1.0
        return (
            f"{self.name:<52} torchx {self.torchx_s * scale:9.3f} {self.unit:<2}   "
            f"native {self.native_s * scale:9.3f} {self.unit:<2}   ratio {self.ratio:5.3f}x {bound}{verdict}"
        )


def interleaved_medians(
    *functions: Callable[[], object], rounds: int, per_round: int, collect_each_round: bool = True
) -> tuple[float, ...]:
    """Median seconds per call of each of ``functions``, the order rotating every round.

    ``collect_each_round=False`` collects garbage once and not while timing (with
    Keras loaded a collection takes long enough to swamp what is timed).
    """
    for _ in range(3):
        for function in functions:
            function()
    times: list[list[float]] = [[] for _ in functions]
    count = len(functions)
    gc.collect()
    if not collect_each_round:
        gc.disable()
    try:
        for index in range(rounds):
            for which in [(index + offset) % count for offset in range(count)]:
                if collect_each_round:
                    gc.collect()
                start = time.perf_counter()
                for _ in range(per_round):
                    functions[which]()
                times[which].append((time.perf_counter() - start) / per_round)
    finally:
        gc.enable()
    return tuple(statistics.median(series) for series in times)


def train_step(module: nn.Module, x: torch.Tensor) -> None:
    module.zero_grad(set_to_none=True)
    module(x).sum().backward()


def fresh_process_seconds(statement: str, setup: str = "") -> float:
    """Seconds one-line ``statement`` takes in a new Python process, after
    ``setup`` (untimed); a ``SystemExit`` ends it as done."""
    code = (
        f"import sys, time\n{setup}\nt = time.perf_counter()\n"
        f"try:\n    {statement}\nexcept SystemExit:\n    pass\n"
        "print(f'seconds {time.perf_counter() - t}', file=sys.stderr)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(run.stderr.rsplit("seconds ", 1)[1])


def fresh_process_medians(*runs: tuple[str, str], rounds: int) -> tuple[float, ...]:
    """Median seconds of each ``(statement, setup)`` (see
    :func:`fresh_process_seconds`), a new process each time, in turn."""
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(rounds):
        for series, (statement, setup) in zip(times, runs, strict=True):
            series.append(fresh_process_seconds(statement, setup))
    return tuple(statistics.median(series) for series in times)


def first_call_setup(*imports: str) -> str:
    """The untimed start of a process timing a model's first construction: one
    torch thread (as the runner's), the examples importable, the ``imports``
    statements, then a collection of the garbage they left, so that each side
    pays for the collections its own construction causes, not for one its
    imports left due (which side meets that depends on how much each imported)."""
    return "\n".join(
        [
            "import gc, torch",
            "torch.set_num_threads(1)",
            f"sys.path.insert(0, {str(EXAMPLES)!r})",
            *imports,
            "gc.collect()",
        ]
    )
