"""torchx-functional: generated forwards against hand-written modules, definition cost."""

from __future__ import annotations

import gc
import statistics
import time
from functools import partial

import torch
from _timing import Result, interleaved_medians
from torch import nn

import torchx.layers as L

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
