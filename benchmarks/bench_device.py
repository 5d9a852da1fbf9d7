"""torchx-core's device scopes and nnx helpers: scope and call overheads, soft_update."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

import torch
from _timing import Result, interleaved_medians
from bench_layers import native_seed_cnn, seed_cnn
from torch import nn

import torchx
import torchx.nn as nnx

CALLS = 100
"""Calls per timed repetition in the scope benchmarks (the seed's loop inside one scope)."""


class SeedModel(nn.Module):
    """The seed README's two-layer model, as a plain nn.Module."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(10, 20)
        self.fc2 = nn.Linear(20, 30)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.fc1(x))


class SeedNnxModel(SeedModel, nnx.Module):
    """The same model as a torchx.nn.Module."""


def calls(module: nn.Module, x: torch.Tensor, scope: Callable[[], object] | None = None) -> None:
    """``CALLS`` calls of ``module``, inside one fresh scope when ``scope`` makes one."""
    if scope is None:
        for _ in range(CALLS):
            module(x)
        return
    with scope():  # type: ignore[attr-defined]
        for _ in range(CALLS):
            module(x)


def enter_and_leave(make: Callable[[], object], times: int = 1000) -> None:
    for _ in range(times):
        with make():  # type: ignore[attr-defined]
            pass


def ops(count: int, x: torch.Tensor) -> None:
    for _ in range(count):
        torch.add(x, x)


def bench_scopes(quick: bool) -> list[Result]:
    rounds = 41 if quick else 201
    x = torch.zeros(4, 10)
    native, model = SeedModel(), SeedNnxModel()
    model.load_state_dict(native.state_dict())
    cpu_scope = partial(torchx.device_scope, "cpu")
    results = [
        Result(
            f"device: seed nnx model x{CALLS} in device_scope('cpu') vs nn.Module outside",
            *interleaved_medians(
                partial(calls, model, x, cpu_scope), partial(calls, native, x), rounds=rounds, per_round=1
            ),
            1.05,
        ),
        Result(
            f"  reference: nn.Module x{CALLS} in torch.device('cpu') vs outside",
            *interleaved_medians(
                partial(calls, native, x, partial(torch.device, "cpu")),
                partial(calls, native, x),
                rounds=rounds,
                per_round=1,
            ),
            None,
        ),
        Result(
            f"  reference: noise floor, nn.Module x{CALLS} vs the same again",
            *interleaved_medians(
                partial(calls, native, x), partial(calls, native, x), rounds=rounds, per_round=1
            ),
            None,
        ),
        Result(
            f"device: seed nnx model x{CALLS} outside any scope vs nn.Module",
            *interleaved_medians(
                partial(calls, model, x), partial(calls, native, x), rounds=rounds, per_round=1
            ),
            1.03,
        ),
    ]
    cnn, native_cnn = seed_cnn(), native_seed_cnn()
    image = torch.randn(8, 3, 32, 32)
    torchx.build(cnn, image)
    cnn.load_state_dict(native_cnn.state_dict())
    cnn.eval()
    with torch.no_grad():
        results.append(
            Result(
                "device: seed CNN (L.Sequential) in device_scope('cpu') vs outside",
                *interleaved_medians(
                    lambda: _in_scope(cnn, image), partial(cnn, image), rounds=rounds // 2, per_round=5
                ),
                1.03,
            )
        )
    return results


def _in_scope(module: nn.Module, x: torch.Tensor) -> None:
    with torchx.device_scope("cpu"):
        module(x)


def bench_enter_leave(quick: bool) -> list[Result]:
    rounds = 11 if quick else 41
    ours, torch_own = interleaved_medians(
        partial(enter_and_leave, partial(torchx.device_scope, "cpu")),
        partial(enter_and_leave, partial(torch.device, "cpu")),
        rounds=rounds,
        per_round=1,
    )
    per_pair_us = ours / 1000 * 1e6
    verdict = "  ok" if per_pair_us <= 2.0 else "  OVER BOUND"
    print(
        f"device: with torchx.device_scope('cpu'): pass  {per_pair_us:.2f} us a scope (bound 2.00 us){verdict}"
    )
    return [
        Result("  reference: enter+leave, device_scope('cpu') vs torch.device('cpu')", ours, torch_own, None)
    ]


def bench_mode(quick: bool) -> list[Result]:
    """Per-op cost of the constructor mode, on CPU via a dtype scope (and on GPU when present)."""
    rounds, count = (11, 500) if quick else (41, 2000)
    x = torch.zeros(4, 10, dtype=torch.float64)
    results = []
    plain = partial(ops, count, x)

    def in_scope(make: Callable[[], object], device_x: torch.Tensor) -> Callable[[], None]:
        def run() -> None:
            with make():  # type: ignore[attr-defined]
                ops(count, device_x)

        return run

    targets: list[tuple[str, Callable[[], object], Callable[[], object], torch.Tensor]] = [
        (
            "cpu, dtype=float64",
            partial(torchx.device_scope, "cpu", torch.float64),
            partial(torch.device, "cpu"),
            x,
        )
    ]
    if torch.cuda.is_available():
        on_gpu = x.cuda(0)
        targets.append(("cuda:0", partial(torchx.device_scope, 0), partial(torch.device, "cuda:0"), on_gpu))
    for name, ours, theirs, device_x in targets:
        base = partial(ops, count, device_x)
        scoped, reference = interleaved_medians(
            in_scope(ours, device_x), in_scope(theirs, device_x), rounds=rounds, per_round=1
        )
        unscoped = interleaved_medians(base, plain, rounds=rounds, per_round=1)[0]
        print(
            f"device: per-op cost of a {name} scope's mode: {(scoped - unscoped) / count * 1e9:.0f} ns "
            f"(torch.device's own mode: {(reference - unscoped) / count * 1e9:.0f} ns)"
        )
        results.append(
            Result(
                f"  reference: torch.add x{count} in a {name} scope vs torch.device", scoped, reference, None
            )
        )
    return results


def _per_parameter_loop(target: nn.Module, source: nn.Module, tau: float) -> None:
    with torch.no_grad():
        for p, s in zip(target.parameters(), source.parameters(), strict=True):
            p.data.mul_(1 - tau).add_(tau * s)


def bench_soft_update(quick: bool) -> list[Result]:
    rounds = 7 if quick else 21
    results = []
    shapes = {"10 x Linear(1000, 1000)": (10, 1000), "1000 x Linear(100, 100)": (1000, 100)}
    for name, (count, width) in shapes.items():
        target = nn.Sequential(*(nn.Linear(width, width) for _ in range(count)))
        source = nn.Sequential(*(nn.Linear(width, width) for _ in range(count)))
        millions = sum(p.numel() for p in target.parameters()) / 1e6
        timed = interleaved_medians(
            partial(nnx.soft_update, target, source, 0.005),
            partial(_per_parameter_loop, target, source, 0.005),
            rounds=rounds,
            per_round=2,
        )
        results.append(
            Result(f"soft_update {millions:.1f}M params ({name}) vs per-param loop", *timed, 1 / 1.2)
        )
    return results


def bench_device(quick: bool) -> list[Result]:
    start = time.perf_counter()
    results = [*bench_scopes(quick), *bench_enter_leave(quick), *bench_mode(quick), *bench_soft_update(quick)]
    print(f"device: benchmarks took {time.perf_counter() - start:.0f} s")
    return results
