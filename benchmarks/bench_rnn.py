"""torchx-rnn: TimeDistributed against a hand fold and a step loop; LSTM against nn.LSTM."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import torch
from _timing import Result, interleaved_medians
from torch import nn

import torchx
import torchx.layers as L

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

    def step(module: nn.Module, pick: Callable[[Any], torch.Tensor]) -> None:
        module.zero_grad(set_to_none=True)
        pick(module(sequence)).sum().backward()

    native = nn.LSTM(32, 64, num_layers=2, batch_first=True)
    cases = [
        ("rnn: LSTM(64, 2 layers) forward+backward vs nn.LSTM", LSTM(64, num_layers=2), _output),
        ("rnn: LSTM, return_sequences=False, fwd+bwd vs nn.LSTM", LSTM(64, num_layers=2,
         return_sequences=False), _last_step),
    ]  # fmt: skip
    for name, lstm, native_pick in cases:
        torchx.build(lstm, sequence)
        assert type(lstm) is nn.LSTM  # built, the layer is torch's class: what is timed is the call
        lstm.load_state_dict(native.state_dict())
        assert torch.equal(lstm(sequence), native_pick(native(sequence)))
        timed = interleaved_medians(
            partial(step, lstm, _itself),
            partial(step, native, native_pick),
            rounds=rounds,
            per_round=max(2, per_round // 4),
        )
        results.append(Result(name, *timed, 1.02))
    return results


def _itself(output: torch.Tensor) -> torch.Tensor:
    return output


def _output(pair: tuple[torch.Tensor, Any]) -> torch.Tensor:
    """What an ``L.LSTM`` returns by default, from ``nn.LSTM``'s ``(output, state)``."""
    return pair[0]


def _last_step(pair: tuple[torch.Tensor, Any]) -> torch.Tensor:
    """What ``return_sequences=False`` returns for one direction: the last layer's final hidden state."""
    return pair[1][0][-1]
