"""Timing for the benchmarks: interleaved medians, and one result line per comparison."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn


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
