"""Eight threads at once: one built model serves them all with the single-threaded
results; separate lazy builds and separate device scopes never cross-talk."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import torch
from report import Report
from torch import nn

import torchx
import torchx.layers as L
import torchx.nn as nnx
from torchx.core import LeafLayer
from torchx.core.testing import in_forked_child

THREADS = 8
CALLS = 25  # per thread


def sequential() -> tuple[nn.Module, tuple[int, ...]]:
    model = L.Sequential(L.Conv2d(6, 3), L.BatchNorm2d(), L.ReLU(), L.MaxPool2d(2), L.Flatten(), L.Linear(5))
    return model, (3, 10, 10)


def functional() -> tuple[nn.Module, tuple[int, ...]]:
    pytest.importorskip("torchx.functional")
    x = L.Placeholder((None, 6))
    shared = L.Linear(6)
    left, right = shared(L.Linear(6)(x)).tanh(), shared(x) * 2.0
    return L.Functional(inputs=x, outputs=L.Linear(3)(torch.cat([left + right, left * right], dim=1))), (6,)


def time_distributed() -> tuple[nn.Module, tuple[int, ...]]:
    pytest.importorskip("torchx.rnn")
    model = L.Sequential(
        L.TimeDistributed(L.Conv2d(4, 3), L.ReLU(), L.Flatten(), L.Linear(8)),
        L.LSTM(6, return_sequences=False),
        L.Linear(2),
    )
    return model, (4, 2, 6, 6)


MODELS: dict[str, Callable[[], tuple[nn.Module, tuple[int, ...]]]] = {
    "Sequential": sequential,
    "Functional": functional,
    "TimeDistributed": time_distributed,
}


def _together(work: Callable[[int], Any]) -> list[Any]:
    """``work(index)`` in THREADS threads released at the same moment."""
    barrier = threading.Barrier(THREADS)

    def start(index: int) -> Any:
        barrier.wait()
        return work(index)

    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(start, range(THREADS)))


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_eight_threads_calling_one_built_model_get_the_single_threaded_results(
    kind: str, report: Report
) -> None:
    model, sample = MODELS[kind]()
    torchx.build(model, (None, *sample))
    model.eval()
    inputs = [
        torch.randn(1 + (index % 4), *sample, generator=torch.Generator().manual_seed(index))
        for index in range(THREADS * CALLS)
    ]
    with torch.no_grad():
        expected = [model(x) for x in inputs]

        def serve(thread: int) -> list[torch.Tensor]:
            return [model(inputs[thread * CALLS + call]) for call in range(CALLS)]

        results = [output for outputs in _together(serve) for output in outputs]
    # torch's own CPU LSTM kernel is not bitwise reproducible across threads (nn.LSTM alone
    # differs by ~1e-7 from thread to thread): the model with an LSTM is held to float32
    # rounding, the others to bit equality.
    tolerance = {"rtol": 1e-5, "atol": 1e-6} if kind == "TimeDistributed" else {"rtol": 0, "atol": 0}
    for got, want in zip(results, expected, strict=True):
        torch.testing.assert_close(got, want, **tolerance)
    report.count("thread", f"calls of one built {kind} from 8 threads", THREADS * CALLS)


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_eight_threads_building_eight_lazy_models_do_not_cross_talk(kind: str, report: Report) -> None:
    def shapes(model: nn.Module) -> dict[str, tuple[int, ...]]:
        return {name: tuple(value.shape) for name, value in model.state_dict().items()}

    def sized(sample: tuple[int, ...], thread: int) -> tuple[int, ...]:
        """Each thread's own channel count (a Functional's shapes are fixed by its placeholders)."""
        channel = {"Sequential": 0, "TimeDistributed": 1}.get(kind)
        if channel is None:
            return sample
        return (*sample[:channel], sample[channel] + thread, *sample[channel + 1 :])

    def build(thread: int) -> tuple[dict[str, tuple[int, ...]], tuple[int, ...]]:
        model, sample = MODELS[kind]()  # a Functional's layers build here, as its graph is recorded
        output = model(torch.randn(thread + 1, *sized(sample, thread)))
        return shapes(model), tuple(output.shape)

    results = _together(build)
    for thread, (state, output) in enumerate(results):
        model, sample = MODELS[kind]()
        torchx.build(model, (1, *sized(sample, thread)))
        assert state == shapes(model), thread  # built for its own input, not another thread's
        assert output[0] == thread + 1
    report.count("thread", f"lazy {kind} builds in 8 threads at once", THREADS)


SCOPES = [
    ("cpu", torch.float32),
    ("cpu", torch.float64),
    ("meta", torch.float32),
    ("cpu", torch.bfloat16),
    (-1, torch.float64),
    ("meta", torch.float16),
    ("cpu", None),
    ("meta", torch.float64),
]


class _Net(nnx.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def test_eight_threads_in_eight_device_scopes_see_only_their_own(report: Report) -> None:
    def work(thread: int) -> int:
        device_id, dtype = SCOPES[thread]
        want_device = torch.device("cpu" if device_id == -1 else device_id)
        want_dtype = dtype or torch.get_default_dtype()
        checks = 0
        net = _Net()
        with torchx.device_scope(device_id, dtype=dtype):
            for _ in range(CALLS):
                made = torch.zeros(2, 3)
                layer = torchx.build(L.Linear(5), (2, 4))
                out = net(torch.ones(2, 4))
                assert (made.device, made.dtype) == (want_device, want_dtype)
                assert (layer.weight.device, layer.weight.dtype) == (want_device, want_dtype)
                assert (out.device, out.dtype) == (want_device, want_dtype)
                checks += 1
        outside = torch.zeros(1)
        assert (outside.device.type, outside.dtype) == ("cpu", torch.get_default_dtype())
        return checks

    assert _together(work) == [CALLS] * THREADS
    report.count("thread", "device-scope checks in 8 threads, 8 different scopes", THREADS * CALLS)


def _inputs_for_a_race(thread: int) -> torch.Tensor:
    """Inputs of two channel counts and two dtypes: only one build can win."""
    channels = 3 if thread % 2 == 0 else 5
    dtype = torch.float32 if thread % 4 < 2 else torch.float64
    return torch.randn(2, channels, 10, 10, dtype=dtype, generator=torch.Generator().manual_seed(thread))


@pytest.mark.parametrize("round_", range(4))
def test_eight_threads_first_calling_one_shared_model_build_it_once_and_cleanly(
    round_: int, report: Report
) -> None:
    model, _ = sequential()
    model.eval()

    def call(thread: int) -> torch.Tensor | Exception:
        with torch.no_grad():
            try:
                return model(_inputs_for_a_race(thread))  # type: ignore[no-any-return]
            except Exception as error:  # noqa: BLE001 - what each thread got is checked below
                return error

    results = _together(call)
    assert model.is_built  # never half built
    dtypes = {tensor.dtype for tensor in model.state_dict().values() if tensor.is_floating_point()}
    assert len(dtypes) == 1, dtypes  # never a mix of the racers' dtypes
    built_for = model[0].in_channels
    succeeded = 0
    for thread, result in enumerate(results):
        x = _inputs_for_a_race(thread)
        if x.shape[1] == built_for and x.dtype in dtypes:
            assert isinstance(result, torch.Tensor), (thread, result)
            with torch.no_grad():
                torch.testing.assert_close(result, model(x), rtol=0, atol=0)  # reproducible
            succeeded += 1
        else:  # a clean error naming the mismatch, never a raw AttributeError or KeyError
            assert isinstance(result, (torchx.ShapeError, torchx.DtypeError, RuntimeError)), (thread, result)
            assert not isinstance(result, (AttributeError, KeyError)), (thread, result)
    assert succeeded >= 1
    report.count("thread", "first calls of one shared unbuilt model racing in 8 threads", THREADS)


def test_a_fork_while_another_thread_builds_gives_a_child_that_can_build(report: Report) -> None:
    if not hasattr(os, "fork"):
        pytest.skip("no os.fork here")
    started, release = threading.Event(), threading.Event()

    class _Slow(LeafLayer):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            started.set()
            release.wait(5)
            return x

    building = L.Sequential(L.Linear(4), _Slow(), L.Linear(2))
    builder = threading.Thread(target=lambda: building(torch.randn(2, 3)))
    builder.start()
    started.wait(5)
    # The fork waits for the build in progress (the builder is released meanwhile).
    threading.Timer(0.2, release.set).start()

    def child() -> None:  # it must be able to build, and see the other model whole
        assert L.Sequential(L.Linear(3))(torch.randn(2, 4)).shape == (2, 3)
        assert torchx.is_built(building[0]) and torchx.is_built(building[2])

    problem = in_forked_child(child, guard_seconds=60)
    builder.join()
    assert problem == ""
    report.count("thread", "forks while another thread builds")
