"""torchx-core and torchx-layers: built forward, build cost, abstract build, import time."""

from __future__ import annotations

import gc
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial, wraps
from pathlib import Path
from typing import Any

import torch
from _timing import Result, first_call_setup, fresh_process_medians, interleaved_medians, train_step
from torch import nn

import torchx
import torchx.core._leaf as leaf_internals
import torchx.core._memory as memory_internals
import torchx.core._shapes as shape_internals
import torchx.layers as L

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from seed_models import native_seed_cnn, seed_cnn

# -- models --------------------------------------------------------------------


def mlp(depth: int, width: int) -> L.Sequential:
    return L.Sequential(*(layer for _ in range(depth) for layer in (L.Linear(width), L.ReLU())))


def native_mlp(depth: int, width: int, in_features: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for index in range(depth):
        layers += [nn.Linear(in_features if index == 0 else width, width), nn.ReLU()]
    return nn.Sequential(*layers)


def lazy_torch_mlp(depth: int, width: int) -> nn.Sequential:
    return nn.Sequential(*(layer for _ in range(depth) for layer in (nn.LazyLinear(width), nn.ReLU())))


class PermutedLayerNorm(nn.LayerNorm):
    """ConvNeXt's channel norm as written by hand: two permutes around ``F.layer_norm``."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        output = nn.functional.layer_norm(
            input.permute(0, 2, 3, 1), self.normalized_shape, self.weight, self.bias, self.eps
        )
        return output.permute(0, 3, 1, 2)


# -- benchmarks ------------------------------------------------------------------


def bench_forward(quick: bool) -> list[Result]:
    rounds, per_round = (15, 20) if quick else (61, 50)
    cases = [
        ("seed CNN, batch 8x3x32x32", seed_cnn(), native_seed_cnn(), torch.randn(8, 3, 32, 32), 1.02),
        (
            "32-layer MLP width 256, batch 64",
            mlp(32, 256),
            native_mlp(32, 256, 256),
            torch.randn(64, 256),
            1.05,
        ),
    ]
    results = []
    for name, model, native, x, bound in cases:
        torchx.build(model, x)
        model.load_state_dict(native.state_dict())
        model.eval()
        native.eval()
        with torch.no_grad():
            assert torch.equal(model(x), native(x))
            timed = interleaved_medians(
                partial(model, x), partial(native, x), rounds=rounds, per_round=per_round
            )
        results.append(Result(f"forward: {name}", *timed, bound))
        model.train()
        native.train()
        steps = (partial(train_step, model, x), partial(train_step, native, x))
        timed = interleaved_medians(*steps, rounds=rounds, per_round=per_round // 2)
        results.append(Result(f"forward+backward: {name}", *timed, bound))
    return results


def bench_layer_norm_2d(quick: bool) -> list[Result]:
    """``L.LayerNorm2d`` against the permute formulation it must equal, on
    ConvNeXt-T's first and last stage, NCHW and channels-last inputs."""
    rounds, per_round = (7, 5) if quick else (21, 10)
    results = []
    for shape in ((8, 96, 56, 56), (8, 768, 7, 7)):
        for memory in (torch.contiguous_format, torch.channels_last):
            x = torch.randn(shape).contiguous(memory_format=memory)
            layer = torchx.build(L.LayerNorm2d(), x)
            reference = PermutedLayerNorm(shape[1], eps=1e-6)
            with torch.no_grad():
                layer.weight.normal_()
                reference.load_state_dict(layer.state_dict())
                assert torch.equal(layer(x), reference(x))
                timed = interleaved_medians(
                    partial(layer, x), partial(reference, x), rounds=rounds, per_round=per_round
                )
            layout = "NCHW" if memory is torch.contiguous_format else "channels-last"
            label = f"LayerNorm2d vs permutes: {'x'.join(map(str, shape))} {layout}"
            results.append(Result(label, *timed, 1.05))
            if memory is torch.contiguous_format:
                steps = (partial(train_step, layer, x), partial(train_step, reference, x))
                timed = interleaved_medians(*steps, rounds=rounds, per_round=per_round)
                results.append(Result(f"{label}, +backward", *timed, 1.05))
    return results


def torchx_build(depth: int) -> None:
    torchx.build(mlp(depth, 128), (2, 128))


def torch_lazy_build(depth: int) -> None:
    model = lazy_torch_mlp(depth, 128)
    with torch.no_grad():
        model(torch.zeros(2, 128))


def bench_build(quick: bool) -> list[Result]:
    """Building (with the garbage collector on, collected before each timing) against native construction."""
    rounds = 5 if quick else 21
    results = []
    times: dict[int, float] = {}
    natives: dict[int, float] = {}
    for depth in (500, 1000):
        native = partial(native_mlp, depth, 128, 128)
        timed = interleaved_medians(partial(torchx_build, depth), native, rounds=rounds, per_round=1)
        times[depth], natives[depth] = timed
        results.append(Result(f"build {depth} x (Linear(128)+ReLU) vs native construct", *timed, 1.5))
    split = build_split(partial(torchx_build, 500), {nn.Linear, nn.ReLU}, rounds)
    print_split("build 500", split, natives[500])
    native = partial(native_mlp, 500, 128, 128)
    lazy = interleaved_medians(partial(torch_lazy_build, 500), native, rounds=rounds, per_round=1)
    results.append(Result("  reference: torch Lazy* modules, 500 layers", *lazy, None))
    growth, native_growth = times[1000] / times[500], natives[1000] / natives[500]
    results.append(
        Result("build growth 1000/500 layers: torchx's vs native's", growth, native_growth, 1.05, unit="x")
    )
    return results


# -- where a build's time goes ------------------------------------------------------

TIMED: dict[str, list[tuple[object, str]]] = {
    "construct": [(leaf_internals.LeafLayer, "__init__")],
    "forward": [(leaf_internals.LeafLayer, "__call__")],
    "layouts": [(leaf_internals.LeafLayer, "_layout")],
    "build": [(leaf_internals.LeafLayer, "_build")],
    "memory": [(leaf_internals, "check_allocation")],
    "rehearsals": [(memory_internals, "_rehearse")],
    "switch": [(leaf_internals, "become_native")],
    "formulas": [(leaf_internals, "closed_form_output")],
    "stand-ins": [(shape_internals.MetaSwap, "add_built"), (shape_internals.MetaSwap, "restore")],
}
"""The TorchX functions :func:`build_split` times (inclusive), by what they do."""


@contextmanager
def _timed(owner: object, name: str, into: dict[str, float], part: str) -> Iterator[None]:
    """Inside the block, ``owner.name`` adds its time to ``into[part]`` (its outermost calls)."""
    original = getattr(owner, name)
    depth = [0]

    @wraps(original)
    def timed(*args: Any, **kwargs: Any) -> Any:
        depth[0] += 1
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            depth[0] -= 1
            if not depth[0]:
                into[part] = into.get(part, 0.0) + time.perf_counter() - start

    setattr(owner, name, timed)
    try:
        yield
    finally:
        setattr(owner, name, original)


def build_split(
    make: Callable[[], object],
    natives: set[type[nn.Module]],
    rounds: int,
    timed: dict[str, list[tuple[object, str]]] | None = None,
) -> dict[str, float]:
    """Where ``make()`` (define and build a model) spends its time: median ms
    of the native constructors (``natives``, apart from the class switch that
    runs them) and of each TorchX step of :data:`TIMED` (and ``timed``),
    exclusive of the steps inside it; "leaf calls" is the rest of an unbuilt
    layer's call, "the rest" what no step covers (containers, the model's own
    code, garbage collection). Timers add a few hundred nanoseconds a call."""
    runs: list[dict[str, float]] = []
    for _ in range(rounds + 1):  # the first run warms up
        times: dict[str, float] = {}
        with ExitStack() as stack:
            for part, places in {**TIMED, **(timed or {})}.items():
                for owner, name in places:
                    stack.enter_context(_timed(owner, name, times, part))
            for native in natives:
                stack.enter_context(_timed(native, "__init__", times, "natives"))
            gc.collect()
            start = time.perf_counter()
            make()
            times["total"] = time.perf_counter() - start
        runs.append(times)
    ms = {key: statistics.median(run.get(key, 0.0) for run in runs[1:]) * 1e3 for key in runs[-1]}
    get = ms.get
    split = {
        "native constructors": get("natives", 0.0),
        "layer construction": get("construct", 0.0) - get("layouts", 0.0),
        "pending layouts": get("layouts", 0.0),
        "arguments": get("build", 0.0) - get("switch", 0.0) - get("memory", 0.0),
        "memory check": get("memory", 0.0),
        "rehearsals (in it)": get("rehearsals", 0.0),
        "class switch": get("switch", 0.0) - get("natives", 0.0),
        "shape formulas": get("formulas", 0.0),
        "meta stand-ins": get("stand-ins", 0.0),
        "leaf calls": get("forward", 0.0) - get("build", 0.0) - get("formulas", 0.0) - get("stand-ins", 0.0),
        **{part: get(part, 0.0) for part in timed or {}},
    }
    covered = get("construct", 0.0) + get("forward", 0.0) + sum(get(part, 0.0) for part in timed or {})
    split["the rest"] = ms["total"] - covered
    split["total"] = ms["total"]
    return split


def print_split(label: str, split: dict[str, float], native: float) -> None:
    """One line: the split of a build (see :func:`build_split`) and native's time, in ms."""
    parts = ", ".join(f"{key} {value:.1f}" for key, value in split.items())
    print(f"  where {label} goes (ms, timed): {parts}; native {native * 1e3:.1f}")


def construct_unbuilt(count: int) -> list[nn.Module]:
    layers = [
        layer
        for _ in range(count // 4)
        for layer in (L.Linear(128), L.Conv2d(32, kernel_size=3), L.BatchNorm2d(), L.Linear(64, bias=False))
    ]
    for layer in layers:
        list(layer.parameters())  # TorchX makes the pending parameters when first asked: ask
    return layers


def construct_lazy(count: int) -> list[nn.Module]:
    layers = [
        layer
        for _ in range(count // 4)
        for layer in (
            nn.LazyLinear(128), nn.LazyConv2d(32, kernel_size=3), nn.LazyBatchNorm2d(), nn.LazyLinear(64, bias=False)
        )
    ]  # fmt: skip
    for layer in layers:
        list(layer.parameters())
    return layers


def bench_construct(quick: bool) -> list[Result]:
    """Constructing unbuilt layers (with their pending parameters) against torch's Lazy* modules."""
    rounds = 7 if quick else 31
    timed = interleaved_medians(
        partial(construct_unbuilt, 1000), partial(construct_lazy, 1000), rounds=rounds, per_round=1
    )
    return [Result("construct 1000 unbuilt layers vs 1000 torch Lazy* modules", *timed, 2.0)]


def bench_abstract_build(quick: bool) -> list[Result]:
    def huge() -> L.Sequential:
        return L.Sequential(L.Linear(50_000), L.Linear(50_000), L.Linear(50_000), L.Linear(50_000))

    torchx.build(huge(), (8, 50_000), device="meta")  # warm-up: torch's lazy meta imports
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    model = huge()
    start = time.perf_counter()
    torchx.build(model, (8, 50_000), device="meta")
    elapsed = time.perf_counter() - start
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    params = sum(p.numel() for p in model.parameters())
    print(f"abstract build of {params / 1e9:.1f}e9 parameters on meta: {elapsed * 1e3:.1f} ms "
          f"(bound 100 ms), peak RSS grew {grown_mb:.1f} MB (bound 50 MB)"
          f"{'  ok' if elapsed < 0.1 and grown_mb < 50 else '  OVER BOUND'}")  # fmt: skip
    for _ in range(2):  # the second run, after torch's own first-use imports
        start = time.perf_counter()
        with torch.device("meta"):
            native = nn.Sequential(*(nn.LazyLinear(50_000) for _ in range(4)))
            native(torch.empty(8, 50_000))
    print(
        f"  reference: torch Lazy* modules materialised on meta: {(time.perf_counter() - start) * 1e3:.1f} ms"
    )
    return []


def bench_first_build(quick: bool) -> list[Result]:
    """The seed's CNN built from shapes first in a fresh process, against its
    torch constructor first in one: the build's meta runs answer from formulas
    (torch's own meta kernels would import its compiler, a second). A
    reference row: the models of issue 40 have their bounded rows elsewhere."""
    setup = first_call_setup("import torchx, seed_models")
    first, by_hand = fresh_process_medians(
        ("torchx.build(seed_models.seed_cnn(), (None, 3, 32, 32))", setup),
        ("seed_models.native_seed_cnn()", setup),
        rounds=5 if quick else 11,
    )
    return [Result("seed CNN first torchx.build in a fresh process vs constructor", first, by_hand, None)]


def bench_import(quick: bool) -> list[Result]:
    """The time to start, in fresh processes (median of several, in turn with
    ``import torch``): ``import torchx.layers``, and ``torchx --help``, which
    loads every installed plugin and registers its commands."""
    runs = 5 if quick else 11
    torch_s, layers_s, help_s = fresh_process_medians(
        ("import torch", ""),
        ("import torchx.layers", ""),
        ("from torchx.cli import main; main(['--help'])", ""),
        rounds=runs,
    )
    return [
        Result("import torchx.layers vs import torch (fresh process)", layers_s, torch_s, 1.15),
        Result("torchx --help vs import torch (fresh process)", help_s, torch_s, 1.30),
    ]
