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
- A trial that trains nothing, in memory: ``torchx.tune.search`` over the digits
  space below against Optuna's ``study.optimize`` (one seeded random sampler
  each, the same architectures asserted), whose objective samples the space,
  builds the model with ``torchx.build`` and counts its parameters, as the
  search's objective counts those of the model it is given. Run in turn, so
  the difference is what a trial of the search adds (the free check, its
  bookkeeping in the study, the heartbeat thread); it is bounded at 20 ms.
- A search's overhead on the example: ``torchx.tune.search`` over
  examples/digits_space.yaml with examples/tune_digits.py's objective (three
  epochs of the digits) against Optuna's own ``study.optimize`` running the
  same objective on the same architectures (the space sampled through each
  side's trial, one seeded random sampler each), built with ``torchx.build``.
  The ratio of wall times is held to 1.05x; the milliseconds a trial the
  search adds (its free check above all) are printed beside.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from _timing import EXAMPLES, Result, interleaved_medians

import torchx
from torchx.core import from_spec

ZOO = EXAMPLES / "zoo"

DIGITS = (None, 1, 8, 8)
IMAGES = (None, 3, 224, 224)
DIGITS_BOUND_S, RESNET_BOUND_S, OVERHEAD_BOUND = 0.020, 0.5, 1.05
TRIAL_OVERHEAD_BOUND_S = 0.020
"""Most a trial of the search that trains nothing may cost over one of plain Optuna (issue 42)."""

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


def _parameters(model: Any) -> float:
    return float(sum(p.numel() for p in model.parameters()))


def _no_training(trials: int, rounds: int) -> Result:
    """Seconds a trial of ``torchx.tune.search`` takes in memory when its objective trains
    nothing, and a trial of Optuna's ``study.optimize`` sampling and building the same
    architectures: medians of studies of ``trials`` trials, run in turn."""
    import optuna

    from torchx.tune import parse_space, search

    space = parse_space(DIGITS_SPACE)
    studies: list[list[optuna.Study]] = [[], []]

    def tuned() -> None:
        sampler = optuna.samplers.RandomSampler(seed=0)
        result = search(
            space, lambda model, trial: _parameters(model), input=DIGITS, n_trials=trials, sampler=sampler
        )
        studies[0].append(result.study)

    def plain() -> None:
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
        study.optimize(
            lambda trial: _parameters(torchx.build(from_spec(space.sample(trial)), DIGITS)), trials
        )
        studies[1].append(study)

    tuned_s, plain_s = (
        seconds / trials for seconds in interleaved_medians(tuned, plain, rounds=rounds, per_round=1)
    )
    first, second = ([trial.params for trial in side[-1].trials] for side in studies)
    assert first == second, "the two studies sampled different architectures"
    added = tuned_s - plain_s
    verdict = "ok" if added <= TRIAL_OVERHEAD_BOUND_S else "OVER BOUND"
    print(
        f"tune: a trial training nothing, in memory: search {tuned_s * 1e3:.1f} ms, plain Optuna "
        f"{plain_s * 1e3:.1f} ms: {added * 1e3:+.1f} ms a trial (bound +{TRIAL_OVERHEAD_BOUND_S * 1e3:.0f} ms)  "
        f"{verdict}"
    )
    return Result("tune: search / plain Optuna, a trial training nothing", tuned_s, plain_s, None)


def _overhead(trials: int, rounds: int) -> Result | None:
    """Median wall seconds of ``torchx.tune.search`` over the example (examples/digits_space.yaml,
    examples/tune_digits.py's objective) and of Optuna's ``study.optimize`` running the same
    objective on the same architectures, in turn, each study in a new SQLite file (as ``torchx
    tune`` keeps it)."""
    import optuna

    from torchx.tune import load_space, search
    from torchx.tune._weights import weights_folder

    sys.path.insert(0, str(EXAMPLES))
    try:
        import tune_digits
    except ImportError as missing:  # scikit-learn, for the digits
        print(f"tune: the example's search needs {missing.name}; skipped")
        return None
    space = load_space(EXAMPLES / "digits_space.yaml")
    objective = tune_digits.objective

    def tuned(storage: str) -> optuna.Study:
        sampler = optuna.samplers.RandomSampler(seed=0)
        return search(
            space,
            objective,
            input=DIGITS,
            n_trials=trials,
            sampler=sampler,
            direction="maximize",
            storage=storage,
        ).study

    def plain(storage: str) -> optuna.Study:
        sampler = optuna.samplers.RandomSampler(seed=0)
        study = optuna.create_study(sampler=sampler, direction="maximize", storage=storage)
        study.optimize(
            lambda trial: objective(torchx.build(from_spec(space.sample(trial)), DIGITS), trial), trials
        )
        return study

    runs: list[list[float]] = [[], []]
    studies: list[optuna.Study] = []
    with tempfile.TemporaryDirectory() as folder, weights_folder(Path(folder)):
        tune_digits.splits()  # the data, loaded once before either side is timed
        for index in range(rounds):
            for which in (index % 2, 1 - index % 2):
                storage = f"sqlite:///{folder}/study-{index}-{which}.db"
                start = time.perf_counter()
                studies.append((tuned, plain)[which](storage))
                runs[which].append(time.perf_counter() - start)
    first, second = ([trial.params for trial in study.trials] for study in studies[:2])
    assert first == second, "the two studies sampled different architectures"
    tuned_s, plain_s = (statistics.median(times) for times in runs)
    print(
        f"tune: {trials} trials of the example on SQLite: search {tuned_s:.2f} s, plain Optuna {plain_s:.2f} s "
        f"({(tuned_s - plain_s) / trials * 1e3:+.1f} ms a trial)"
    )
    return Result(
        f"tune: search / plain Optuna, {trials} trials of the example on SQLite",
        tuned_s,
        plain_s,
        OVERHEAD_BOUND,
    )


def bench_tune(quick: bool) -> list[Result]:
    try:
        import optuna

        import torchx.tune  # noqa: F401
    except ImportError:
        print("tune: torchx-tune or optuna is not installed; skipped")
        return []
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    results = [
        _candidate("digits", DIGITS_SPACE, DIGITS, DIGITS_BOUND_S, 15 if quick else 60),
        _candidate("ResNet-50", _resnet50_space(), IMAGES, RESNET_BOUND_S, 3 if quick else 10),
        _no_training(trials=10 if quick else 20, rounds=5 if quick else 15),
    ]
    overhead = _overhead(trials=4 if quick else 10, rounds=2 if quick else 4)
    return results if overhead is None else [*results, overhead]
