"""torchx-tune: what a candidate's free check costs, and what a search adds to plain Optuna (issue 31).

- Sampling + free check of one candidate (an Optuna trial asked of a study with
  a random sampler, the space sampled through it, ``torchx.tune.check``: a meta
  build, a meta forward and its summary), of a digits-CNN space written below
  and of ResNet-50 (``examples/zoo/resnet50.yaml`` with its stem width and
  class count searched). The issue's bounds are absolute (20 ms and 0.5 s),
  so the median is printed against them; the ratio beside it compares the
  same sampled specs merely built on meta (``from_spec`` + ``torchx.build(...,
  device="meta")``), the least a check can do, so it shows what asking,
  sampling and measuring add; it has no bound.
- A search's overhead: ``torchx.tune.search`` over the digits space against
  Optuna's own ``study.optimize`` whose objective samples the same parameters
  by hand (same names, order and distributions, one seeded random sampler
  each: the same architectures, checked once) and builds the spec with
  ``torchx.build``; both train it for the same few steps on the same random
  batches. The dropout is continuous, so no architecture repeats and the
  search reuses nothing: both train every trial. The ratio of wall times is
  held to 1.05x; it is the larger the cheaper the training, and these
  objectives are far cheaper than the example's.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import yaml
from _timing import Result, interleaved_medians
from torch import nn
from torch.nn import functional as F

import torchx
from torchx.core import from_spec

ZOO = Path(__file__).resolve().parents[1] / "examples" / "zoo"

DIGITS = (None, 1, 8, 8)
IMAGES = (None, 3, 224, 224)
DIGITS_BOUND_S, RESNET_BOUND_S, OVERHEAD_BOUND = 0.020, 0.5, 1.05

CHANNELS = {"$choice": [16, 32, 48], "name": "channels"}
CONV = {"type": "Conv2d", "args": {"out_channels": CHANNELS, "kernel_size": 3, "padding": "same"}}
DIGITS_SPACE: dict[str, Any] = {
    "format_version": 1,
    "type": "Sequential",
    "layers": [
        {
            "type": "Conv2d",
            "args": {
                "out_channels": CHANNELS,
                "kernel_size": {"$choice": [3, 5], "name": "kernel"},
                "padding": "same",
            },
        },
        {"type": "BatchNorm2d"},
        {"type": "ReLU"},
        {
            "$repeat": {
                "times": {"$int": [0, 2], "name": "depth"},
                "layers": [CONV, {"type": "BatchNorm2d"}, {"type": "ReLU"}],
            }
        },
        {"type": "MaxPool2d", "args": {"kernel_size": 2}},
        {"type": "Flatten"},
        {"type": "Dropout", "args": {"p": {"$float": [0.0, 0.5], "name": "dropout"}}},
        {"type": "Linear", "args": {"out_features": {"$int": [32, 128], "step": 32, "name": "hidden"}}},
        {"type": "ReLU"},
        {"type": "Linear", "args": {"out_features": 10}},
    ],
}
"""The digits CNN of examples/digits_cnn.yaml with its width, first kernel, depth, dropout and
hidden width searched (one width for every conv: the name ``channels`` ties them)."""


def _digits_by_hand(trial: Any) -> dict[str, Any]:
    """The digits space as a user of plain Optuna writes it: the same parameters, suggested in
    the order the space suggests them."""
    channels = trial.suggest_categorical("channels", [16, 32, 48])
    kernel = trial.suggest_categorical("kernel", [3, 5])
    depth = trial.suggest_int("depth", 0, 2)

    def conv(size: int) -> list[dict[str, Any]]:
        args = {"out_channels": channels, "kernel_size": size, "padding": "same"}
        return [{"type": "Conv2d", "args": args}, {"type": "BatchNorm2d"}, {"type": "ReLU"}]

    head = [
        {"type": "MaxPool2d", "args": {"kernel_size": 2}},
        {"type": "Flatten"},
        {"type": "Dropout", "args": {"p": trial.suggest_float("dropout", 0.0, 0.5)}},
        {"type": "Linear", "args": {"out_features": trial.suggest_int("hidden", 32, 128, step=32)}},
        {"type": "ReLU"},
        {"type": "Linear", "args": {"out_features": 10}},
    ]
    layers = conv(kernel) + [layer for _ in range(depth) for layer in conv(3)] + head
    return {"format_version": 1, "type": "Sequential", "layers": layers}


def _resnet50_space() -> dict[str, Any]:
    """ResNet-50 of the zoo with two markers: the stem's width and the number of classes."""
    spec = yaml.safe_load((ZOO / "resnet50.yaml").read_text())
    spec["modules"]["conv1"]["args"]["out_channels"] = {"$choice": [48, 64, 80]}
    spec["modules"]["fc"]["args"]["out_features"] = {"$int": [10, 1000]}
    return spec


class _Candidates:
    """Candidates drawn as a search draws them, and the same specs merely built on meta."""

    def __init__(self, data: dict[str, Any], input: tuple[int | None, ...]) -> None:
        import optuna

        from torchx.tune import parse_space

        self.space, self.input = parse_space(data), input
        self.study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
        self.specs: list[dict[str, Any]] = []
        self.built = 0

    def check(self) -> None:
        from torchx.tune import check

        spec = self.space.sample(self.study.ask())
        self.specs.append(spec)
        assert check(spec, self.input).passed

    def meta_build(self) -> None:
        torchx.build(from_spec(self.specs[self.built % len(self.specs)]), self.input, device="meta")
        self.built += 1


def _candidate(
    label: str, data: dict[str, Any], input: tuple[int | None, ...], bound_s: float, rounds: int
) -> Result:
    candidates = _Candidates(data, input)
    checked, built = interleaved_medians(candidates.check, candidates.meta_build, rounds=rounds, per_round=1)
    verdict = "ok" if checked <= bound_s else "OVER BOUND"
    print(
        f"tune: {label} sample+check of one candidate: median {checked * 1e3:.1f} ms "
        f"(bound {bound_s * 1e3:.0f} ms)  {verdict}"
    )
    return Result(f"tune: {label} sample+check / meta build", checked, built, None)


def _train(steps: int) -> Callable[[nn.Module, Any], float]:
    """The objective both sides run: ``steps`` SGD steps on random batches drawn from the trial's number."""

    def train(model: nn.Module, trial: Any) -> float:
        generator = torch.Generator().manual_seed(trial.number)
        images = torch.randn(steps, 32, 1, 8, 8, generator=generator)
        labels = torch.randint(0, 10, (steps, 32), generator=generator)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        loss = torch.zeros(())
        for step in range(steps):
            loss = F.cross_entropy(model(images[step]), labels[step])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return loss.item()

    return train


def _overhead(trials: int, steps: int, rounds: int) -> Result:
    """Median wall seconds of a search of ``trials`` trials and of plain Optuna's, in turn."""
    import optuna

    from torchx.tune import parse_space, search

    space, train = parse_space(DIGITS_SPACE), _train(steps)
    fixed = optuna.trial.FixedTrial({"channels": 32, "kernel": 5, "depth": 2, "dropout": 0.1, "hidden": 64})
    assert space.sample(fixed) == _digits_by_hand(fixed)  # both sides train the same models

    def tuned() -> optuna.Study:
        sampler = optuna.samplers.RandomSampler(seed=0)
        return search(space, train, input=DIGITS, n_trials=trials, sampler=sampler).study

    def plain() -> optuna.Study:
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
        study.optimize(
            lambda trial: train(torchx.build(from_spec(_digits_by_hand(trial)), DIGITS), trial), trials
        )
        return study

    runs: list[list[float]] = [[], []]
    studies: list[optuna.Study] = []
    for index in range(rounds):
        for which in (index % 2, 1 - index % 2):
            start = time.perf_counter()
            studies.append((tuned, plain)[which]())
            runs[which].append(time.perf_counter() - start)
    first, second = ([trial.params for trial in study.trials] for study in studies[:2])
    assert first == second, "the two studies sampled different architectures"
    tuned_s, plain_s = (statistics.median(times) for times in runs)
    print(
        f"tune: {trials} trials of {steps} training steps: search {tuned_s:.2f} s, plain Optuna {plain_s:.2f} s "
        f"({(tuned_s - plain_s) / trials * 1e3:+.1f} ms a trial)"
    )
    return Result(f"tune: search / plain Optuna, {trials} trials", tuned_s, plain_s, OVERHEAD_BOUND)


def bench_tune(quick: bool) -> list[Result]:
    try:
        import optuna

        import torchx.tune  # noqa: F401
    except ImportError:
        print("tune: torchx-tune or optuna is not installed; skipped")
        return []
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return [
        _candidate("digits", DIGITS_SPACE, DIGITS, DIGITS_BOUND_S, 15 if quick else 60),
        _candidate("ResNet-50", _resnet50_space(), IMAGES, RESNET_BOUND_S, 3 if quick else 10),
        _overhead(trials=8 if quick else 20, steps=20, rounds=2 if quick else 4),
    ]
