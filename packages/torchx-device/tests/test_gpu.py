"""On real GPUs: the seed README's device examples, placement, DataParallel. Skipped without CUDA."""

from __future__ import annotations

import pytest
import torch
from case_ids import case_id
from torch import nn

import torchx
import torchx as tx
import torchx.layers as L
import torchx.nn as nnx

GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(GPUS == 0, reason="needs a CUDA GPU")]

LAST = max(GPUS - 1, 0)


def needs(count: int) -> pytest.MarkDecorator:
    return pytest.mark.skipif(count > GPUS, reason=f"needs {count} GPUs")


class MyModel(nnx.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(10, 20)
        self.fc2 = nn.Linear(20, 30)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.fc1(x))


@needs(3)
def test_the_seed_examples_exactly_as_written() -> None:
    with tx.device_scope(2):
        assert torch.zeros((3, 6)).device == torch.device("cuda", 2)
    with tx.device_scope("gpu:2"):
        assert torch.empty(0).new_ones((3, 6)).device == torch.device("cuda", 2)
    with tx.device_scope(-1):
        assert torch.ones((3, 6)).device == torch.device("cpu")


@needs(4)
def test_the_seed_nnx_example_exactly_as_written() -> None:
    model = MyModel()
    with tx.device_scope(3):
        x = torch.zeros((4, 10))
        y = model(x)
    assert y.shape == (4, 30)
    assert y.device == torch.device("cuda", 3)


@pytest.mark.parametrize(
    "device_id", [LAST, f"cuda:{LAST}", f"gpu:{LAST}", torch.device("cuda", LAST)], ids=case_id
)
def test_every_single_gpu_id_creates_there(device_id: object) -> None:
    with torchx.device_scope(device_id):
        made = [torch.zeros(2), torch.randn(2), torch.arange(3), torch.tensor([1.0]), nn.Linear(2, 2).weight]
        assert torch.empty(0).new_ones(3).device == torch.device("cuda", LAST)
    assert {tensor.device for tensor in made} == {torch.device("cuda", LAST)}


def test_a_cpu_model_moves_to_the_gpu_once() -> None:
    model = MyModel()
    with torchx.device_scope(LAST):
        for _ in range(3):
            y = model(torch.zeros(4, 10))
    assert y.device == torch.device("cuda", LAST)
    assert model.fc1.weight.device == torch.device("cuda", LAST)


def test_a_lazy_sequential_builds_on_the_scope_gpu() -> None:
    model = L.Sequential(L.Conv2d(20, 5, stride=2, padding=1), L.ReLU(), L.Flatten(), L.Linear(10))
    with torchx.device_scope(0):
        out = model(torch.randn(8, 3, 32, 32))
    assert out.device == torch.device("cuda", 0)
    assert all(p.device == torch.device("cuda", 0) for p in model.parameters())


def test_a_dtype_scope_on_the_gpu() -> None:
    model = MyModel()
    with torchx.device_scope(0, dtype=torch.float16):
        y = model(torch.zeros(4, 10))
        assert torch.randn(2).dtype == torch.float16
    assert y.dtype == torch.float16


def test_torch_compile_inside_a_gpu_scope() -> None:
    torch._dynamo.reset()
    model = MyModel()

    def run(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return model(x), torch.ones(2)

    with torchx.device_scope(0):
        model(torch.zeros(4, 10))  # placed before compiling: compiled code never moves modules
        out, made = torch.compile(run, fullgraph=True, backend="eager")(torch.zeros(4, 10))
    assert out.device == made.device == torch.device("cuda", 0)
    torch._dynamo.reset()


@needs(2)
@pytest.mark.parametrize("device_id", [[0, 1], "cuda:all"], ids=case_id)
def test_data_parallel_scopes_build_once_then_replicate(device_id: object) -> None:
    x = torch.randn(32, 8, device="cuda:0")
    model = L.Sequential(L.Linear(16), L.ReLU(), L.Linear(4))
    torch.manual_seed(0)
    with torchx.device_scope(device_id) as scope:
        out = model(x)
        assert scope.placement.kind == "data_parallel"
    assert out.device == torch.device("cuda", 0)
    assert out.shape == (32, 4)
    assert model[0].weight.device == torch.device("cuda", 0)
    torch.manual_seed(0)
    native = nn.Linear(8, 16, device="cuda:0")
    assert torch.equal(native.weight, model[0].weight)  # built once, on cuda:0, natively initialised


@needs(2)
def test_torchx_data_parallel_with_a_lazy_model() -> None:
    model = L.Sequential(L.Linear(16), L.ReLU(), L.Linear(4))
    wrapper = torchx.DataParallel(model, device_ids=[0, 1])
    out = wrapper(torch.randn(32, 8, device="cuda:0"))
    assert out.shape == (32, 4)
    assert model.is_built
