"""Pending parameters report the rank they will have, and survive other libraries' tensor machinery."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn.parameter import is_lazy
from torch.overrides import TorchFunctionMode
from toy_layers import Attention, Chain, Dense, Norm

import torchx
from torchx.core import NotBuiltError


def model() -> Chain:
    return Chain(Dense(6), Norm(), Dense(3))


def ranks(module: nn.Module) -> dict[str, tuple[int, int]]:
    tensors = [*module.named_parameters(), *module.named_buffers()]
    return {name: (tensor.ndim, tensor.dim()) for name, tensor in tensors}


def decay_split(module: nn.Module) -> tuple[list[str], list[str]]:
    """The usual AdamW grouping: weight decay for matrices and kernels only."""
    named = list(module.named_parameters())
    return [n for n, p in named if p.ndim >= 2], [n for n, p in named if p.ndim < 2]


@pytest.mark.parametrize(
    ("make", "inputs"),
    [(model, [(None, 4)]), (lambda: Attention(2), [(5, None, 4)] * 3)],
    ids=["dense-norm-dense", "attention"],
)
def test_pending_tensors_report_the_rank_they_will_have(make: Callable[[], nn.Module], inputs: Any) -> None:
    unbuilt = make()
    before = ranks(unbuilt)
    assert all(is_lazy(t) for t in [*unbuilt.parameters(), *unbuilt.buffers()])
    assert before == ranks(torchx.build(unbuilt, *inputs))


def test_the_weight_decay_split_made_before_the_first_batch_is_the_one_after_it() -> None:
    unbuilt = model()
    before = decay_split(unbuilt)
    assert before == (["0.weight", "2.weight"], ["0.bias", "1.weight", "1.bias", "2.bias"])
    assert before == decay_split(torchx.build(unbuilt, (None, 4)))


def test_a_scalar_buffer_is_pending_with_rank_zero() -> None:
    tracked = dict(Norm().named_buffers())["num_batches_tracked"]
    assert (tracked.ndim, tracked.dim(), tracked.dtype) == (0, 0, torch.int64)


def test_the_shape_itself_still_needs_the_build() -> None:
    with pytest.raises(NotBuiltError, match=r"torchx\.build"):
        _ = Dense(3).weight.shape


@pytest.mark.parametrize(
    "change",
    [
        lambda m: copy.deepcopy(m),
        lambda m: pickle.loads(pickle.dumps(m)),
        lambda m: m.to(torch.float64),
        lambda m: m.to("meta"),
        lambda m: m.requires_grad_(False),
    ],
    ids=["deepcopy", "pickle", "to-float64", "to-meta", "requires-grad"],
)
def test_the_rank_survives_copies_and_moves_before_the_build(
    change: Callable[[nn.Module], nn.Module],
) -> None:
    unbuilt = model()
    expected = ranks(unbuilt)
    assert ranks(change(unbuilt)) == expected


def test_a_failed_build_leaves_the_ranks_as_they_were() -> None:
    unbuilt = model()
    expected = ranks(unbuilt)
    with pytest.raises(torchx.ShapeError):
        torchx.build(unbuilt, (None, 4, 5, 6))  # Norm takes (N, C) or (N, C, L)
    assert all(is_lazy(t) for t in unbuilt.parameters())
    assert ranks(unbuilt) == expected


class Recorded(torch.Tensor):
    """A tensor subclass with its own ``__torch_function__``, as torchview's RecorderTensor."""

    @classmethod
    def __torch_function__(
        cls, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        return super().__torch_function__(func, types, args, kwargs or {})


class Recording(TorchFunctionMode):
    """A function mode that hands out every new tensor as a ``Recorded`` one."""

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        result = func(*args, **(kwargs or {}))
        if func in (torch.empty, torch.zeros, torch.ones):
            return result.as_subclass(Recorded)
        return result


def _recording_empty(*args: Any, **kwargs: Any) -> torch.Tensor:
    return torch.zeros(0).new_empty(*args, **kwargs).as_subclass(Recorded)


@pytest.fixture(params=["mode", "patched-torch-empty"])
def recording(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Tensor creation as a graph recorder makes it: through a function mode, or
    with ``torch.empty`` replaced, as torchview does while it draws."""
    if request.param == "mode":
        with Recording():
            yield
    else:
        with monkeypatch.context() as patched:
            patched.setattr(torch, "empty", _recording_empty)
            yield


def test_an_unbuilt_model_moves_copies_and_builds_among_other_tensor_subclasses(recording: None) -> None:
    unbuilt = model()
    expected = ranks(unbuilt)
    unbuilt.to(torch.float64)
    assert ranks(copy.deepcopy(unbuilt)) == expected
    output = unbuilt(torch.randn(2, 4, dtype=torch.float64))
    assert output.shape == (2, 3)
    assert {p.dtype for p in unbuilt.parameters()} == {torch.float64}
    assert ranks(unbuilt) == expected
