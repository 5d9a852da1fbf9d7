"""A TorchX model is an ordinary PyTorch model to the tools PyTorch users use,
before its build (they refuse it clearly, or build it) and after (they see torch's own classes)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from layers_seed_cnn import native_seed_cnn, seed_cnn
from torch import nn

import torchx
import torchx.layers as L
from torchx.core import NotBuiltError, record_of

X = torch.randn(4, 3, 32, 32)


def built_cnn() -> L.Sequential:
    return torchx.build(seed_cnn(), (None, 3, 32, 32)).eval()


def test_built_layers_are_exactly_torchs_classes() -> None:
    model, native = built_cnn(), native_seed_cnn()
    assert [type(m) for m in model] == [type(m) for m in native]


def test_an_optimizer_made_before_the_first_batch_trains_every_parameter() -> None:
    model = seed_cnn()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    assert sum(len(group["params"]) for group in optimizer.param_groups) == 14
    model(X).square().mean().backward()
    before = [p.detach().clone() for p in model.parameters()]
    optimizer.step()
    changed = sum(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert changed == 14
    assert sum(p.numel() for p in model.parameters()) == sum(
        p.numel() for p in native_seed_cnn().parameters()
    )


def test_load_state_dict_into_the_unbuilt_model_is_one_step() -> None:
    native = native_seed_cnn().eval()
    model = seed_cnn()
    model.load_state_dict(native.state_dict())
    model.eval()
    assert torch.equal(model(X), native(X))


def test_torch_fx_traces_to_the_same_graph_as_the_native_model() -> None:
    model, native = built_cnn(), native_seed_cnn().eval()
    native.load_state_dict(model.state_dict())
    traced = torch.fx.symbolic_trace(model)
    reference = torch.fx.symbolic_trace(native)
    assert [n.op for n in traced.graph.nodes] == [n.op for n in reference.graph.nodes]
    assert torch.equal(traced(X), native(X))


def test_torch_fx_on_an_unbuilt_model_asks_for_a_build() -> None:
    with pytest.raises(NotBuiltError, match=r"torch\.fx traces it: call torchx\.build"):
        torch.fx.symbolic_trace(seed_cnn())


MERGES = ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concat"]


@pytest.mark.parametrize("merge", MERGES, ids=MERGES)
def test_torch_fx_traces_a_merge_inside_a_sequential(merge: str) -> None:
    model = L.Sequential(L.Lambda(lambda x: [x, x.sin()]), getattr(L, merge)(), L.Linear(3))
    torchx.build(model, (None, 4))
    traced = torch.fx.symbolic_trace(model)  # was "merge layers combine tensors only, got Proxy, Proxy"
    x = torch.randn(5, 4)
    assert torch.equal(traced(x), model(x))


def test_dynamic_quantization_quantizes_the_linear_layers() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation notice for eager-mode quantization
        quantized = torch.ao.quantization.quantize_dynamic(built_cnn(), {nn.Linear})
    kinds = [type(m) for m in quantized]
    assert kinds.count(torch.ao.nn.quantized.dynamic.Linear) == 2
    assert quantized(X).shape == (4, 10)


def test_torch_jit_script_and_trace_of_the_built_model() -> None:
    model = built_cnn()
    assert torch.equal(torch.jit.script(model)(X), model(X))
    assert torch.equal(torch.jit.trace(model, X)(X), model(X))


def test_torchinfo_counts_the_parameters_of_an_unbuilt_model_by_building_it() -> None:
    torchinfo = pytest.importorskip(
        "torchinfo", reason="needs torchinfo: pip install torchinfo (in the test extra)"
    )
    summary = torchinfo.summary(seed_cnn(), input_size=(4, 3, 32, 32), verbose=0)
    native = torchinfo.summary(native_seed_cnn(), input_size=(4, 3, 32, 32), verbose=0)
    assert summary.total_params == native.total_params == 199_620


def test_a_parametrization_keeps_the_spec() -> None:
    model = built_cnn()
    torch.nn.utils.parametrizations.weight_norm(model[9])
    assert type(model[9]).__name__ == "ParametrizedLinear"
    assert torchx.to_spec(model) == seed_cnn().to_spec()


def test_torch_compile_fullgraph_of_a_built_model_and_of_an_unbuilt_one() -> None:
    model = built_cnn()
    compiled = torch.compile(model, fullgraph=True)
    assert torch.allclose(compiled(X), model(X), atol=1e-5)
    unbuilt = seed_cnn().eval()
    out = torch.compile(unbuilt, fullgraph=True)(X)  # the first compiled call builds it first
    assert [type(m) for m in unbuilt] == [type(m) for m in native_seed_cnn()]
    assert torch.allclose(out, unbuilt(X), atol=1e-5)


def test_torch_export_of_a_built_model_and_of_an_unbuilt_one(tmp_path: Path) -> None:
    exported = torch.export.export(built_cnn(), (X,))
    assert exported.module()(X).shape == (4, 10)
    with pytest.raises(NotBuiltError, match=r"call torchx\.build"):
        torch.export.export(seed_cnn(), (X,))


def test_autocast_builds_float32_parameters() -> None:
    model = seed_cnn()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert model(X).dtype == torch.bfloat16
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert model.eval()(X).dtype == torch.float32


def test_channels_last_and_shared_memory_asked_before_the_build() -> None:
    model = seed_cnn().to(memory_format=torch.channels_last).share_memory()
    model(X)
    assert model[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert all(p.is_shared() for p in model.parameters())


@pytest.fixture
def process_group(tmp_path: Path) -> Iterator[None]:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_ddp_and_fsdp2_refuse_an_unbuilt_model_and_take_a_built_one(process_group: None) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    with pytest.raises(RuntimeError, match="uninitialized parameters"):
        nn.parallel.DistributedDataParallel(seed_cnn())
    mesh = init_device_mesh("cpu", (1,))
    with pytest.raises(NotBuiltError, match=r"call torchx\.build"):
        fully_shard(seed_cnn(), mesh=mesh)
    model = built_cnn()
    fully_shard(model, mesh=mesh)
    assert type(model).__name__ == "FSDPSequential"
    assert torchx.to_spec(model) == seed_cnn().to_spec()  # specs read the record, not the class
    assert record_of(model) is not None and model(X).shape == (4, 10)
