"""torchx-functional on real architectures: ResNet-50, DenseNet-121, MobileNetV2 and
MobileNetV3-Small (examples/vision_models.py) against the same models written by
hand, at batch 8.

Peak memory of a no-grad forward (tensor storage held at once), forward time,
training-step time (forward, backward, SGD), and the time to define and build
each model with a dynamic batch against the hand-written constructor (which
runs torchvision's weight initialisation) and against a fixed batch. Builds
repeat in one process, as the constructor's do, so a build finds what earlier
builds of the architecture kept (its generated forward, the meta results of
its operations); the first build in a fresh process, against the
constructor's first call in one (imports made before either is timed), is
printed beside, with the same bound: what a script that builds its model once
pays, torch's first meta kernels and imports on use among it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial

import torch
from _memory import peak_bytes
from _timing import EXAMPLES, Result, first_call_setup, fresh_process_medians, interleaved_medians
from bench_layers import build_split, print_split
from torch import nn

import torchx

sys.path.insert(0, str(EXAMPLES))

MODELS = ("resnet50", "densenet121", "mobilenet_v2", "mobilenet_v3_small")
BATCH = 8

FIRST_BOUND = 1.5
"""The bound of a model's define+build against its constructor, repeated in one
process and first in a fresh one (issue 40)."""

try:
    from torchx.functional import _functional as functional_internals
    from torchx.functional import _placeholder as placeholder_internals
except ImportError:  # torchx-functional is not installed: bench_vision says so and skips
    GRAPH_STEPS: dict[str, list[tuple[object, str]]] = {}
else:
    GRAPH_STEPS = {
        "graph compile": [(functional_internals.Functional, "__init__")],
        "op recording": [(placeholder_internals, "record")],
    }
    """The functional API's own steps in a model's definition, for :func:`build_split`."""


def _sgd_step(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor) -> None:
    optimizer.zero_grad(set_to_none=True)
    model(x).sum().backward()
    optimizer.step()


def _define_then_build(make: Callable[[], nn.Module]) -> nn.Module:
    return torchx.build(make(), (None, 3, 224, 224))


def bench_vision(quick: bool) -> list[Result]:
    try:
        import vision_models
    except ImportError:
        print("vision: torchx-functional is not installed; skipped")
        return []
    rounds = 3 if quick else 9
    results = []
    for name in MODELS:
        make, native, _ = vision_models.MODELS[name]
        model, reference = make(), native()
        model.load_state_dict(reference.state_dict(), strict=True)
        x = torch.randn(BATCH, 3, 224, 224)
        model.eval()
        reference.eval()
        with torch.no_grad():
            assert torch.equal(model(x), reference(x))
            memory = (
                peak_bytes(partial(model, x), model, x) / 2**20,
                peak_bytes(partial(reference, x), reference, x) / 2**20,
            )
            results.append(Result(f"vision: {name} no-grad forward peak memory", *memory, 1.05, unit="MiB"))
            timed = interleaved_medians(partial(model, x), partial(reference, x), rounds=rounds, per_round=1)
            results.append(Result(f"vision: {name} forward, batch {BATCH}", *timed, 1.03))
        model.train()
        reference.train()
        optimizers = (
            torch.optim.SGD(model.parameters(), lr=1e-3),
            torch.optim.SGD(reference.parameters(), lr=1e-3),
        )
        timed = interleaved_medians(
            partial(_sgd_step, model, optimizers[0], x),
            partial(_sgd_step, reference, optimizers[1], x),
            rounds=rounds,
            per_round=1,
        )
        results.append(Result(f"vision: {name} training step (SGD), batch {BATCH}", *timed, 1.03))
        del model, reference, optimizers
        # interleaved, as the forwards are: on a shared machine, one after another drifts apart
        dynamic, fixed, by_hand, checked = interleaved_medians(
            make,
            partial(make, batch=BATCH),
            native,
            partial(_define_then_build, make),
            rounds=rounds,
            per_round=1,
        )
        setup = first_call_setup("import vision_models")
        first, first_by_hand = fresh_process_medians(
            (f"vision_models.MODELS[{name!r}][0]()", setup),
            (f"vision_models.MODELS[{name!r}][1]()", setup),
            rounds=rounds,
        )
        results.append(
            Result(f"vision: {name} define+build (None batch) vs constructor", dynamic, by_hand, FIRST_BOUND)
        )
        results.append(
            Result(
                f"vision: {name} first define+build in a fresh process vs constructor",
                first,
                first_by_hand,
                FIRST_BOUND,
            )
        )
        results.append(
            Result(f"vision: {name} define+build, None batch vs batch {BATCH}", dynamic, fixed, 1.2)
        )
        results.append(Result(f"vision: {name} define, then torchx.build vs define", checked, dynamic, 1.05))
        natives = {type(module) for module in native().modules() if not any(module.children())}
        split = build_split(make, natives, rounds, timed=GRAPH_STEPS)
        print_split(f"{name} define+build", split, by_hand)
    return results
