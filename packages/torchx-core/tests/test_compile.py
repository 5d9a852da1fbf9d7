"""torch.compile of models not built yet: the first compiled call builds them before
dynamo traces anything, and nothing TorchX does changes dynamo's state."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
import torch._dynamo
from torch import nn
from torch._dynamo.testing import CompileCounter
from toy_layers import Chain, Dense, Norm

import torchx
from torchx.core import ShapeError

X = torch.randn(8, 16)


@pytest.fixture(autouse=True)
def fresh_dynamo() -> Iterator[None]:
    """Each test starts from dynamo's initial state (what one test does shows in its own checks)."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def mlp() -> Chain:
    return Chain(Dense(16), nn.ReLU(), Dense(4))


class Wrapper(nn.Module):
    """A plain torch module that calls a TorchX model."""

    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.body = body

    def forward(self, x: torch.Tensor) -> Any:
        return self.body(x) * 2


def frames_compiling(model: nn.Module, *, fullgraph: bool = False) -> int:
    """How many frames dynamo compiles for two calls of ``torch.compile(model)``."""
    counter = CompileCounter()
    compiled = torch.compile(model, backend=counter, fullgraph=fullgraph)
    compiled(X)
    compiled(X)
    return counter.frame_count


@pytest.mark.parametrize("fullgraph", [False, True])
def test_the_first_compiled_call_builds_the_model_once_and_equals_eager(fullgraph: bool) -> None:
    torch.manual_seed(0)
    model = mlp()
    counter = CompileCounter()
    compiled = torch.compile(model, backend=counter, fullgraph=fullgraph)
    out = compiled(X)
    torch.manual_seed(0)
    eager = mlp()
    torch.testing.assert_close(out, eager(X), rtol=0, atol=0)  # same weights as an eager first call
    assert model.is_built and type(model.get_submodule("0")) is nn.Linear
    torch.testing.assert_close(compiled(X), model(X))
    assert counter.frame_count == 1  # the build added no recompile


def test_an_unbuilt_model_shows_torch_compile_a_lazy_initializer_until_it_is_built() -> None:
    """torch.compile builds a module first where its ``_initialize_hook`` is set: torch
    2.13 asks ``hasattr``, 2.15 whether ``object.__getattribute__`` gives something
    other than None (a lazy module's hook handle)."""
    model = mlp()
    for module in (model, model.get_submodule("0")):
        assert object.__getattribute__(module, "_initialize_hook") is not None
        assert hasattr(module, "_initialize_hook")
    torchx.build(model, X)
    for module in (model, model.get_submodule("0")):
        assert not hasattr(module, "_initialize_hook")


def test_an_unbuilt_leaf_layer_compiles_as_the_module_it_becomes() -> None:
    layer = Dense(4)
    assert frames_compiling(layer, fullgraph=True) == 1
    assert type(layer) is nn.Linear


def test_compile_in_place_builds_on_the_first_call() -> None:
    model = mlp()
    counter = CompileCounter()
    model.compile(backend=counter, fullgraph=True)
    out = model(X)
    assert model.is_built and counter.frame_count == 1
    torch.testing.assert_close(model(X), out)
    assert counter.frame_count == 1


def test_a_layer_added_unbuilt_after_the_first_compiled_call_is_refused_cleanly() -> None:
    model = mlp()
    compiled = torch.compile(model, backend=CompileCounter())
    compiled(X)  # builds it
    compiled(X)  # finds it built: from then on, it is taken to stay built (a cheap check per call)
    model.add_module("3", Dense(2))
    with pytest.raises(Exception, match=r"Dense is not built.*call torchx\.build"):
        compiled(X)
    torchx.build(model, X)
    assert compiled(X).shape == (8, 2)


def test_a_built_model_compiles_after_unbuilt_ones_compiled_or_refused() -> None:
    built = torchx.build(mlp(), X)
    torch.compile(mlp(), backend=CompileCounter())(X)
    assert frames_compiling(built) == 1
    with pytest.raises(ShapeError, match=r"Norm: expected input"):  # the build fails before dynamo runs
        torch.compile(Chain(Dense(4), Norm()), backend=CompileCounter())(X.view(2, 2, 2, 16))
    assert frames_compiling(built) == 1
    wrapped = Wrapper(mlp())  # a plain module: dynamo meets the unbuilt layers
    with pytest.raises(
        Exception, match=r"Dense is not built.*call torchx\.build\(model, input_shape\) first"
    ):
        torch.compile(wrapped, backend=CompileCounter())(X)
    with pytest.raises(Exception, match=r"Dense is not built"):
        torch.compile(wrapped, backend=CompileCounter(), fullgraph=True)(X)
    assert frames_compiling(built) == 1
    assert frames_compiling(built, fullgraph=True) == 1
    torchx.build(wrapped, X)
    assert frames_compiling(wrapped, fullgraph=True) == 1  # its own frames were not marked skipped


def test_compiling_unbuilt_models_leaves_dynamos_config_and_skip_lists_as_they_were() -> None:
    from torch._dynamo import trace_rules

    def dynamo_state() -> tuple[Any, ...]:
        lists = ("MOD_SKIPLIST", "MOD_INLINELIST", "LEGACY_MOD_INLINELIST")
        return torch._dynamo.config.get_config_copy(), [set(getattr(trace_rules, name)) for name in lists]

    before = dynamo_state()
    torch.compile(mlp(), backend=CompileCounter(), fullgraph=True)(X)
    with pytest.raises(Exception, match="not built"):
        torch.compile(Wrapper(mlp()), backend=CompileCounter())(X)
    assert dynamo_state() == before
