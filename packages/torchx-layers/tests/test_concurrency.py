"""Threads: separate lazy builds do not cross-talk; a built model serves many threads."""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn

import torchx
import torchx.layers as L

THREADS = 8


def model() -> L.Sequential:
    return L.Sequential(L.Conv2d(4, 3), L.BatchNorm2d(), L.ReLU(), L.Flatten(), L.Linear(5))


def test_eight_threads_build_eight_lazy_models_with_different_shapes() -> None:
    def build(index: int) -> tuple[int, int, tuple[int, ...]]:
        net = model()
        channels, size = index + 1, 6 + index
        out = net(torch.zeros(2, channels, size, size))
        return net[0].in_channels, net[4].in_features, tuple(out.shape)

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(build, range(THREADS)))
    for index, (channels, features, shape) in enumerate(results):
        size = 6 + index - 2
        assert (channels, features, shape) == (index + 1, 4 * size * size, (2, 5))


def test_eight_threads_torchx_build_on_different_devices_and_dtypes() -> None:
    def build(index: int) -> tuple[torch.dtype, str]:
        dtype = torch.float64 if index % 2 else torch.float32
        device = "meta" if index % 4 == 3 else "cpu"
        net = torchx.build(model(), (2, 3, 8, 8), dtype=dtype, device=device)
        weight = net[4].weight
        return weight.dtype, weight.device.type

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(build, range(THREADS)))
    for index, (dtype, device) in enumerate(results):
        assert dtype == (torch.float64 if index % 2 else torch.float32)
        assert device == ("meta" if index % 4 == 3 else "cpu")


def test_eight_threads_call_one_built_model() -> None:
    net = torchx.build(model(), (2, 3, 8, 8)).eval()
    inputs = [torch.randn(3, 3, 8, 8, generator=torch.Generator().manual_seed(i)) for i in range(THREADS * 4)]
    with torch.no_grad():
        expected = [net(x) for x in inputs]
        with ThreadPoolExecutor(THREADS) as pool:
            results = list(pool.map(net, inputs))
    assert all(torch.equal(a, b) for a, b in zip(results, expected, strict=True))


def test_eight_threads_calling_one_unbuilt_layer_build_it_once() -> None:
    layer = L.Linear(3)
    barrier = threading.Barrier(THREADS)

    def call(index: int) -> torch.Tensor:
        barrier.wait()
        return layer(torch.full((2, 4), float(index)))

    with ThreadPoolExecutor(THREADS) as pool:
        outputs = list(pool.map(call, range(THREADS)))
    assert torchx.is_built(layer) and layer.in_features == 4
    for index, output in enumerate(outputs):
        assert torch.equal(output, layer(torch.full((2, 4), float(index))))


def test_reading_an_unbuilt_layers_parameters_while_another_thread_builds_it() -> None:
    """The read waits for the build or the build for the read: the built layer
    always holds its real parameters, never pending ones or none."""
    L.Linear(3)(torch.zeros(1, 2))  # the class's first layer, measured at construction: not the case here
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # threads interleave inside the build
    try:
        for _ in range(100):
            layer, barrier = L.Linear(8), threading.Barrier(2)

            def read(layer: nn.Module = layer, barrier: threading.Barrier = barrier) -> None:
                barrier.wait()
                list(layer.parameters())

            def build(layer: nn.Module = layer, barrier: threading.Barrier = barrier) -> None:
                barrier.wait()
                layer(torch.zeros(2, 8))

            threads = [threading.Thread(target=read), threading.Thread(target=build)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert [(name, type(p)) for name, p in layer.named_parameters()] == [  # not pending ones
                ("weight", nn.Parameter),
                ("bias", nn.Parameter),
            ]
    finally:
        sys.setswitchinterval(switch)
