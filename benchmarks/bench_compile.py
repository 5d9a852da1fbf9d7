"""torch.compile (inductor): a built TorchX model against the native one, and the
first compiled call of a model not built yet against that of the same model built."""

from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path

import torch
import torch._dynamo
from _timing import Result, interleaved_medians
from torch import nn
from torch._dynamo.utils import counters

import torchx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from seed_models import native_seed_cnn, seed_cnn


def _first_compiled_call(model: nn.Module, x: torch.Tensor) -> tuple[float, int]:
    """Seconds the first call of ``torch.compile(model)`` takes from a fresh dynamo, and
    how many frames dynamo compiled for it (inductor's caches stay warm: both models share them)."""
    torch._dynamo.reset()
    before = counters["stats"]["unique_graphs"]
    start = time.perf_counter()
    with torch.no_grad():
        torch.compile(model)(x)
    return time.perf_counter() - start, counters["stats"]["unique_graphs"] - before


def bench_compile(quick: bool) -> list[Result]:
    rounds, per_round = (15, 20) if quick else (41, 50)
    x = torch.randn(8, 3, 32, 32)
    native = native_seed_cnn().eval()
    model = torchx.build(seed_cnn(), x).eval()
    model.load_state_dict(native.state_dict())
    late = seed_cnn().eval()  # compiled before its build
    compiled, compiled_native, compiled_late = (torch.compile(m) for m in (model, native, late))
    with torch.no_grad():
        assert torch.allclose(compiled(x), native(x), atol=1e-5)
        assert torch.allclose(compiled_native(x), native(x), atol=1e-5)
        compiled_late(x)
        late.load_state_dict(native.state_dict())
        timed = interleaved_medians(
            partial(compiled, x), partial(compiled_native, x), rounds=rounds, per_round=per_round
        )
        late_timed = interleaved_medians(
            partial(compiled_late, x), partial(compiled, x), rounds=rounds, per_round=per_round
        )
    results = [
        Result("compile: built seed CNN vs native, forward (8,3,32,32)", *timed, 1.02),
        Result("  compiled before its build vs after, forward", *late_timed, 1.02),
    ]
    firsts: dict[bool, list[float]] = {True: [], False: []}
    frames: dict[bool, set[int]] = {True: set(), False: set()}
    _first_compiled_call(torchx.build(seed_cnn(), x).eval(), x)  # inductor's caches warm
    for index in range(6 if quick else 16):  # the fastest of each (this machine's load is noisy)
        for unbuilt in (index % 2 == 0, index % 2 == 1):
            candidate = seed_cnn().eval()
            if not unbuilt:
                torchx.build(candidate, x)
            seconds, compiled_frames = _first_compiled_call(candidate, x)
            firsts[unbuilt].append(seconds)
            frames[unbuilt].add(compiled_frames)
    torch._dynamo.reset()
    print(f"compile: graphs compiled by a first call: unbuilt {frames[True]}, built {frames[False]}")
    results.append(
        Result(
            "compile: first compiled call, unbuilt vs built seed CNN",
            min(firsts[True]),
            min(firsts[False]),
            1.2,
        )
    )
    return results
