"""TorchX against native PyTorch, side by side in one process, printed as ratios.

    python benchmarks/run.py            # everything (a few minutes on 2 cores)
    python benchmarks/run.py --quick    # fewer repetitions, for a smoke run
    python benchmarks/run.py --only forward,build

Every figure is a median over many interleaved repetitions (TorchX and native
alternate, so drift affects both), on one thread. Ratios are TorchX / native:
1.00 means "costs what native PyTorch costs".
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch
from torch import nn

import torchx
import torchx.layers as L


@dataclass
class Result:
    name: str
    torchx_s: float
    native_s: float
    bound: float | None

    @property
    def ratio(self) -> float:
        return self.torchx_s / self.native_s

    def line(self) -> str:
        verdict = "" if self.bound is None else ("  ok" if self.ratio <= self.bound else "  OVER BOUND")
        bound = "" if self.bound is None else f"(bound {self.bound:.2f}x)"
        return (
            f"{self.name:<52} torchx {self.torchx_s * 1e3:9.3f} ms   native {self.native_s * 1e3:9.3f} ms"
            f"   ratio {self.ratio:5.3f}x {bound}{verdict}"
        )


def interleaved_medians(
    first: Callable[[], object], second: Callable[[], object], *, rounds: int, per_round: int
) -> tuple[float, float]:
    """Median seconds per call of ``first`` and ``second``, alternating rounds."""
    for _ in range(3):
        first()
        second()
    times: tuple[list[float], list[float]] = ([], [])
    for index in range(rounds):
        order = (0, 1) if index % 2 == 0 else (1, 0)
        for which in order:
            function = (first, second)[which]
            gc.collect()
            start = time.perf_counter()
            for _ in range(per_round):
                function()
            times[which].append((time.perf_counter() - start) / per_round)
    return statistics.median(times[0]), statistics.median(times[1])


# -- models --------------------------------------------------------------------


def seed_cnn() -> L.Sequential:
    return L.Sequential(
        L.Conv2d(20, kernel_size=5, stride=2, padding=1), L.ReLU(),
        L.Conv2d(30, kernel_size=7), L.BatchNorm2d(), L.ReLU(),
        L.Conv2d(40, kernel_size=3), L.BatchNorm2d(), L.ReLU(),
        L.Flatten(), L.Linear(80), L.ReLU(), L.Linear(10),
    )  # fmt: skip


def native_seed_cnn() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(3, 20, kernel_size=5, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(20, 30, kernel_size=7), nn.BatchNorm2d(30), nn.ReLU(),
        nn.Conv2d(30, 40, kernel_size=3), nn.BatchNorm2d(40), nn.ReLU(),
        nn.Flatten(), nn.Linear(1960, 80), nn.ReLU(), nn.Linear(80, 10),
    )  # fmt: skip


def mlp(depth: int, width: int) -> L.Sequential:
    return L.Sequential(*(layer for _ in range(depth) for layer in (L.Linear(width), L.ReLU())))


def native_mlp(depth: int, width: int, in_features: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for index in range(depth):
        layers += [nn.Linear(in_features if index == 0 else width, width), nn.ReLU()]
    return nn.Sequential(*layers)


def lazy_torch_mlp(depth: int, width: int) -> nn.Sequential:
    return nn.Sequential(*(layer for _ in range(depth) for layer in (nn.LazyLinear(width), nn.ReLU())))


def train_step(module: nn.Module, x: torch.Tensor) -> None:
    module.zero_grad(set_to_none=True)
    module(x).sum().backward()


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


def torchx_build(depth: int) -> None:
    torchx.build(mlp(depth, 128), (2, 128))


def torch_lazy_build(depth: int) -> None:
    model = lazy_torch_mlp(depth, 128)
    with torch.no_grad():
        model(torch.zeros(2, 128))


def bench_build(quick: bool) -> list[Result]:
    rounds = 5 if quick else 21
    results = []
    times: dict[int, float] = {}
    natives: dict[int, float] = {}
    for depth in (500, 1000):
        native = partial(native_mlp, depth, 128, 128)
        timed = interleaved_medians(partial(torchx_build, depth), native, rounds=rounds, per_round=1)
        times[depth], natives[depth] = timed
        results.append(Result(f"build {depth} x (Linear(128)+ReLU) vs native construct", *timed, 1.5))
    native = partial(native_mlp, 500, 128, 128)
    lazy = interleaved_medians(partial(torch_lazy_build, 500), native, rounds=rounds, per_round=1)
    results.append(Result("  reference: torch Lazy* modules, 500 layers", *lazy, None))
    results.append(Result("build growth: 1000 layers / 500 layers (torchx)", times[1000], times[500], 2.1))
    results.append(Result("  reference: growth of native construction", natives[1000], natives[500], None))
    return results


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


def bench_import(quick: bool) -> list[Result]:
    runs = 5 if quick else 11

    def timed(statement: str) -> float:
        code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
        return float(
            subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        )

    torchx_times, torch_times = [], []
    for _ in range(runs):
        torch_times.append(timed("import torch"))
        torchx_times.append(timed("import torchx.layers"))
    return [
        Result(
            "import torchx.layers vs import torch (fresh process)",
            statistics.median(torchx_times),
            statistics.median(torch_times),
            1.10,
        )
    ]


# -- functional (when torchx-functional is installed) ---------------------------


class SeedDiamond(nn.Module):
    """The seed README's hand-written diamond CNN."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 10, kernel_size=5, stride=2)
        self.conv2_1 = nn.Conv2d(10, 30, kernel_size=7, padding=2)
        self.conv2_2 = nn.Conv2d(10, 30, kernel_size=5, padding=1)
        self.fc1 = nn.Linear(4320, 80)
        self.fc2 = nn.Linear(80, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv1(x)
        x = self.conv2_1(x) * self.conv2_2(x)
        x = x.view(x.size(0), -1)
        return self.fc2(self.fc1(x))


def seed_diamond_functional() -> nn.Module:
    from torchx.functional import Functional, Placeholder

    x = Placeholder((8, 3, 32, 32))
    stem = L.Conv2d(10, kernel_size=5, stride=2)(x)
    joined = L.Conv2d(30, kernel_size=7, padding=2)(stem) * L.Conv2d(30, kernel_size=5, padding=1)(stem)
    return Functional(inputs=x, outputs=L.Linear(10)(L.Linear(80)(joined.flatten())))


class GatedBlock(nn.Module):
    """One block of the DAG benchmark: two branches, a gate, a residual add."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc_a, self.act, self.fc_b, self.fc_out = (
            nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.Linear(width, width)
        )  # fmt: skip

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.fc_out(self.act(self.fc_a(h)) * torch.sigmoid(self.fc_b(h)))


class GatedDag(nn.Module):
    def __init__(self, blocks: int, width: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(GatedBlock(width) for _ in range(blocks))
        self.head = nn.Linear(width, 10)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            h = block(h)
        return self.head(h)


def gated_dag_functional(blocks: int, width: int) -> nn.Module:
    """7 nodes a block: Linear, ReLU, Linear, sigmoid, mul, Linear, add."""
    from torchx.functional import Functional, Placeholder

    x = Placeholder((32, width))
    h = x
    for _ in range(blocks):
        gate = torch.sigmoid(L.Linear(width)(h))
        h = h + L.Linear(width)(L.ReLU()(L.Linear(width)(h)) * gate)
    return Functional(inputs=x, outputs=L.Linear(10)(h))


def bench_functional(quick: bool) -> list[Result]:
    try:
        import torchx.functional  # noqa: F401
    except ImportError:
        print("functional: torchx-functional is not installed; skipped")
        return []
    rounds, per_round = (15, 20) if quick else (61, 50)
    results = []
    x = torch.randn(8, 3, 32, 32)
    diamond, native = seed_diamond_functional().eval(), SeedDiamond().eval()
    with torch.no_grad():
        diamond.load_state_dict(dict(zip(diamond.state_dict(), native.state_dict().values(), strict=True)))
        assert torch.allclose(diamond(x), native(x), atol=1e-5)
        timed = interleaved_medians(
            partial(diamond, x), partial(native, x), rounds=rounds, per_round=per_round
        )
    results.append(Result("functional: seed diamond vs hand-written, batch 8", *timed, 1.02))

    blocks = 28  # 28 x 7 + 2 = 198 nodes
    dag, hand = gated_dag_functional(blocks, 64).eval(), GatedDag(blocks, 64).eval()
    traced = torch.fx.symbolic_trace(hand)
    h = torch.randn(32, 64)
    with torch.no_grad():
        timed = interleaved_medians(partial(dag, h), partial(hand, h), rounds=rounds, per_round=per_round)
        results.append(
            Result(
                f"functional: {len(dag.code.splitlines())}-line DAG vs hand-written, batch 32", *timed, 1.05
            )
        )
        fx_timed = interleaved_medians(
            partial(traced, h), partial(hand, h), rounds=rounds, per_round=per_round
        )
        results.append(Result("  reference: torch.fx GraphModule of the hand-written one", *fx_timed, None))
        assert hand(h).shape == dag(h).shape

    def define(nodes: int) -> None:
        gated_dag_functional(nodes // 7, 64)

    define_rounds = 3 if quick else 7
    times = {}
    for nodes in (1000, 2000):
        runs = []
        for _ in range(define_rounds):
            gc.collect()
            start = time.perf_counter()
            define(nodes)
            runs.append(time.perf_counter() - start)
        times[nodes] = statistics.median(runs)
    print(f"functional: define + build a 1000-node graph: {times[1000]:.2f} s (bound 2 s)"
          f"{'  ok' if times[1000] < 2 else '  OVER BOUND'}")  # fmt: skip
    results.append(Result("functional: define+build growth 2000 / 1000 nodes", times[2000], times[1000], 2.2))
    return results


# -- rnn (when torchx-rnn is installed) -------------------------------------------


class HandFold(nn.Module):
    """TimeDistributed written by hand: fold time into batch, run, unfold."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, time = x.shape[:2]
        return self.inner(x.reshape(batch * time, *x.shape[2:])).reshape(batch, time, -1)


class StepLoop(nn.Module):
    """TimeDistributed as a Python loop over time steps (what Keras 3 does)."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([self.inner(x[:, step]) for step in range(x.shape[1])], dim=1)


def bench_rnn(quick: bool) -> list[Result]:
    try:
        from torchx.rnn import LSTM, TimeDistributed
    except ImportError:
        print("rnn: torchx-rnn is not installed; skipped")
        return []
    rounds, per_round = (15, 10) if quick else (41, 20)
    frames = torch.randn(4, 16, 3, 16, 16)
    layer = TimeDistributed(L.Conv2d(8, 3), L.ReLU(), L.Flatten(), L.Linear(32)).eval()
    inner = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 14 * 14, 32))
    with torch.no_grad():
        layer(frames)
        layer.layers.load_state_dict(inner.state_dict())
        fold, loop = HandFold(inner).eval(), StepLoop(inner).eval()
        assert torch.allclose(layer(frames), fold(frames), atol=1e-5)
        assert torch.allclose(loop(frames), fold(frames), atol=1e-5)
        timed = interleaved_medians(
            partial(layer, frames), partial(fold, frames), rounds=rounds, per_round=per_round
        )
        loop_timed = interleaved_medians(
            partial(loop, frames), partial(fold, frames), rounds=rounds, per_round=per_round
        )
    results = [
        Result("rnn: TimeDistributed vs hand-written fold, (4,16,3,16,16)", *timed, 1.05),
        Result("  reference: Python loop over time steps vs the fold", *loop_timed, None),
    ]
    sequence = torch.randn(16, 50, 32)
    lstm, native = LSTM(64, num_layers=2), nn.LSTM(32, 64, num_layers=2, batch_first=True)
    torchx.build(lstm, sequence)
    lstm.load_state_dict(native.state_dict())

    def step(module: nn.Module) -> None:
        module.zero_grad(set_to_none=True)
        output = module(sequence)
        (output[0] if isinstance(output, tuple) else output).sum().backward()

    timed = interleaved_medians(
        partial(step, lstm), partial(step, native), rounds=rounds, per_round=max(2, per_round // 4)
    )
    results.append(Result("rnn: LSTM(64, 2 layers) forward+backward vs nn.LSTM", *timed, 1.02))
    return results


BENCHMARKS = {
    "forward": bench_forward,
    "build": bench_build,
    "abstract": bench_abstract_build,
    "import": bench_import,
    "functional": bench_functional,
    "rnn": bench_rnn,
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--only", default=",".join(BENCHMARKS), help="comma-separated subset")
    parser.add_argument("--check", action="store_true", help="exit 1 when a ratio is over its bound")
    options = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(
        f"torch {torch.__version__}, torchx {torchx.__version__}, 1 thread, python {sys.version.split()[0]}"
    )
    over = 0
    for name in options.only.split(","):
        for result in BENCHMARKS[name](options.quick):
            print(result.line(), flush=True)
            over += result.bound is not None and result.ratio > result.bound
    return 1 if options.check and over else 0


if __name__ == "__main__":
    raise SystemExit(main())
