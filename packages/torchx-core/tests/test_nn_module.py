"""torchx.nn.Module: placement in device scopes, parallel wrappers, interop."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
import torch
from case_ids import case_id
from fake_backend import FakeBackend, RecordingWrapper
from torch import nn

import torchx
import torchx.nn as nnx


class MyModel(nnx.Module):
    """The seed README's model."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(10, 20)
        self.fc2 = nn.Linear(20, 30)
        self.moves = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.fc1(x))

    def _apply(self, fn: Any, recurse: bool = True) -> Any:
        self.__dict__["moves"] += 1
        return super()._apply(fn, recurse)


def test_the_seed_example_moves_the_model_to_the_scope_on_call(backend: FakeBackend) -> None:
    model = MyModel()  # outside the scope: on the CPU
    with torchx.device_scope("void"):
        x = torch.zeros((4, 10))
        assert x.is_meta
        y = model(x)
    assert y.shape == (4, 30)
    assert y.is_meta
    assert all(p.is_meta for p in model.parameters())


def test_a_model_made_inside_a_scope_is_already_there(backend: FakeBackend) -> None:
    with torchx.device_scope("void"):
        model = MyModel()
        assert all(p.is_meta for p in model.parameters())
        model(torch.zeros(4, 10))
    assert model.moves == 1  # the one check-and-record; nothing to copy


def test_the_move_happens_once_per_placement(backend: FakeBackend) -> None:
    model = MyModel()
    with torchx.device_scope("void"):
        for _ in range(10):
            model(torch.zeros(4, 10))
    assert model.moves == 1
    with torchx.device_scope("void"):  # another scope object, same placement: no move
        model(torch.zeros(4, 10))
    assert model.moves == 1


def test_outside_every_scope_a_module_is_never_moved(backend: FakeBackend) -> None:
    model = MyModel()
    with torchx.device_scope("void"):
        torch.zeros(1)
    model(torch.zeros(4, 10))
    assert model.moves == 0
    assert model.fc1.weight.device.type == "cpu"


def test_moving_by_hand_makes_the_next_scoped_call_move_again(backend: FakeBackend) -> None:
    model = MyModel()
    with torchx.device_scope("void"):
        model(torch.zeros(4, 10))
    model.to_empty(device="cpu")
    assert model.fc1.weight.device.type == "cpu"
    with torchx.device_scope("void"):
        assert model(torch.zeros(4, 10)).is_meta
    assert model.fc1.weight.is_meta


def test_a_submodule_added_after_placement_is_moved_too(backend: FakeBackend) -> None:
    model = MyModel()
    with torchx.device_scope("void"):
        model(torch.zeros(4, 10))
    model.fc2 = nn.Linear(20, 5)  # made outside the scope: on the CPU
    with torchx.device_scope("void"):
        assert model(torch.zeros(4, 10)).shape == (4, 5)
    assert model.fc2.weight.is_meta


def test_a_dtype_scope_converts_the_floating_parameters(backend: FakeBackend) -> None:
    model = MyModel()
    with torchx.device_scope("here", dtype=torch.float64):
        y = model(torch.zeros(4, 10))
    assert y.dtype == torch.float64
    assert model.fc1.weight.dtype == torch.float64


def test_a_parallel_placement_runs_the_module_through_its_wrapper(backend: FakeBackend) -> None:
    model = MyModel()
    with torchx.device_scope("mirror"):
        for _ in range(3):
            assert model(torch.zeros(4, 10)).is_meta
    [wrapper] = RecordingWrapper.made  # made once, on the first call
    assert wrapper.calls == 3
    assert wrapper.module is model
    assert wrapper.first_inputs[0].shape == (4, 10)


def test_a_data_parallel_replica_is_never_moved(backend: FakeBackend) -> None:
    model = MyModel()
    replica = model._replicate_for_data_parallel()
    with torchx.device_scope("void"):
        replica(torch.zeros(4, 10, device="cpu"))
    assert replica.fc1.weight.device.type == "cpu"


def test_copies_and_pickles_forget_the_placement(backend: FakeBackend) -> None:
    model = MyModel()
    with torchx.device_scope("mirror"):
        model(torch.zeros(4, 10))
    assert any(key.startswith("_torchx_") for key in model.__dict__)
    for copied in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert not any(key.startswith("_torchx_") for key in copied.__dict__)


def test_torch_compile_of_an_nnx_module_inside_and_outside_scopes(backend: FakeBackend) -> None:
    torch._dynamo.reset()
    model = MyModel()
    compiled = torch.compile(model, fullgraph=True, backend="eager")
    assert compiled(torch.zeros(4, 10)).shape == (4, 30)
    with torchx.device_scope("void"):
        model(torch.zeros(4, 10))  # placed on meta first: compiled code never moves modules
        out = compiled(torch.zeros(4, 10))
    assert out.is_meta and out.shape == (4, 30)
    torch._dynamo.reset()


def test_torch_export_of_an_nnx_module_inside_a_scope(backend: FakeBackend) -> None:
    model = MyModel()
    with torchx.device_scope("here", dtype=torch.float64):
        model(torch.zeros(4, 10))  # placed: float64
        exported = torch.export.export(model, (torch.zeros(4, 10),))
    out = exported.module()(torch.zeros(4, 10, dtype=torch.float64))
    assert out.dtype == torch.float64 and out.shape == (4, 30)


def test_module_compile_goes_through_the_compiled_call(backend: FakeBackend) -> None:
    torch._dynamo.reset()
    model = MyModel()
    model.compile(fullgraph=True, backend="eager")
    assert model._compiled_call_impl is not None
    assert model(torch.zeros(4, 10)).shape == (4, 30)
    assert pickle.loads(pickle.dumps(model))._compiled_call_impl is None  # nn.Module's own rule
    torch._dynamo.reset()


def test_an_nnx_module_is_an_nn_module_with_the_same_state_dict() -> None:
    class Plain(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(10, 20)
            self.fc2 = nn.Linear(20, 30)

    model = MyModel()
    assert isinstance(model, nn.Module)
    assert list(model.state_dict()) == list(Plain().state_dict())
    Plain().load_state_dict(model.state_dict())
    assert model(torch.zeros(2, 10)).shape == (2, 30)


@pytest.mark.parametrize(("device_id", "dtype"), [("void", None), ("here", torch.float64)], ids=case_id)
def test_nested_nnx_modules_are_placed_with_their_parent(
    backend: FakeBackend, device_id: str, dtype: torch.dtype | None
) -> None:
    class Outer(nnx.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = MyModel()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(x)

    model = Outer()
    with torchx.device_scope(device_id, dtype=dtype):
        out = model(torch.zeros(2, 10))
    assert out.device == torchx.device_scope(device_id).device
    assert model.inner.fc1.weight.device == out.device
    assert model.inner.fc1.weight.dtype == out.dtype == (dtype or torch.float32)


class Remembers(MyModel):
    """Keeps a plain tensor attribute from each forward (hidden state, say)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.last = x.detach()
        return super().forward(x)


def test_a_tensor_kept_by_forward_does_not_move_or_rewrap_the_module(backend: FakeBackend) -> None:
    model = Remembers()
    with torchx.device_scope("void"):
        for _ in range(4):
            model(torch.zeros(4, 10))
    assert model.moves == 1
    with torchx.device_scope("mirror"):
        for _ in range(4):
            model(torch.zeros(4, 10))
    assert len(RecordingWrapper.made) == 1


def test_a_buffer_registered_after_placement_is_moved_too(backend: FakeBackend) -> None:
    model = MyModel()
    with torchx.device_scope("void"):
        model(torch.zeros(4, 10))
    model.register_buffer("scale", torch.ones(1))
    with torchx.device_scope("void"):
        model(torch.zeros(4, 10))
    assert model.scale.is_meta


def test_a_subclass_may_set_its_own_device_attribute(backend: FakeBackend) -> None:
    class Keeps(MyModel):
        def __init__(self) -> None:
            super().__init__()
            self.device = torch.device("meta")  # common in torch code; must not clash with the helper
            self.dtype = "mine"

    model = Keeps()
    assert model.device == torch.device("meta") and model.dtype == "mine"
    assert MyModel().device == torch.device("cpu")
