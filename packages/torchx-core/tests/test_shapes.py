"""The shape engine: meta runs, swaps that restore, fallbacks for ops without meta kernels."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchx.core import PluginManager, TypedShape, hookimpl
from torchx.core._errors import ShapeError, format_shape
from torchx.core._shapes import (
    DYNAMIC_PROBES,
    Probes,
    lacks_meta_kernel,
    merge_probes,
    meta_state,
    run_on_meta,
    to_meta,
)


@torch.library.custom_op("torchx_test::cpu_only_double", mutates_args=())
def cpu_only_double(x: torch.Tensor) -> torch.Tensor:
    """A custom op with a CPU kernel and no meta/fake kernel."""
    return torch.cat([x, x], dim=-1)


class CpuOnly(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cpu_only_double(x)


def test_meta_state_swaps_and_restores_every_tensor() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    originals = [t for t in (*model.parameters(), *model.buffers())]
    with meta_state(model):
        assert all(t.is_meta for t in (*model.parameters(), *model.buffers()))
        out = model(torch.empty(2, 3, device="meta"))
        assert out.is_meta and out.shape == (2, 4)
    assert [t for t in (*model.parameters(), *model.buffers())] == originals
    assert int(model[1].num_batches_tracked) == 0


def test_meta_state_restores_after_an_error() -> None:
    model = nn.Linear(3, 4)
    weight = model.weight
    with pytest.raises(RuntimeError), meta_state(model):
        model(torch.empty(2, 5, device="meta"))
    assert model.weight is weight


def test_run_on_meta_costs_no_real_memory_for_huge_layers() -> None:
    model = nn.Linear(4, 4)
    out = run_on_meta(model, (torch.empty(100_000, 100_000, 4, device="meta"),))
    assert out.is_meta and out.shape == (100_000, 100_000, 4)


def test_ops_without_meta_kernels_fall_back_to_a_real_cpu_run() -> None:
    assert lacks_meta_kernel(RuntimeError("There was no fake impl registered for x"))
    out = run_on_meta(CpuOnly(), (torch.empty(2, 3, device="meta"),))
    assert out.is_meta and out.shape == (2, 6)


def test_the_infer_output_hook_comes_before_the_real_run(fresh_plugins: PluginManager) -> None:
    seen: list[type] = []

    class Rule:
        @hookimpl
        def torchx_infer_output(self, module: nn.Module, inputs: tuple[torch.Tensor, ...]) -> object:
            seen.append(type(module))
            return torch.empty(*inputs[0].shape[:-1], inputs[0].shape[-1] * 2, device="meta")

    fresh_plugins.register(Rule(), "rule")
    out = run_on_meta(CpuOnly(), (torch.empty(5, 7, device="meta"),))
    assert seen == [CpuOnly] and out.shape == (5, 14)


def test_to_meta_and_probe_merging() -> None:
    assert to_meta((None, 3), probe=2).shape == (2, 3)
    assert to_meta(torch.zeros(1, dtype=torch.int64), probe=2).dtype == torch.int64
    assert merge_probes((2, 10), (3, 10)) == (None, 10)
    assert merge_probes([(2, 4), {"a": (2,)}], [(3, 4), {"a": (3,)}]) == [(None, 4), {"a": (None,)}]
    assert format_shape((None, 3)) == "(None, 3)" and format_shape((4,)) == "(4,)"


def test_probes_run_twice_only_for_dynamic_inputs_and_show_the_probe_size_as_none() -> None:
    static, dynamic = Probes.for_inputs([(4, 3)]), Probes.for_inputs([(4, 3), (None, 3)])
    assert static.run(lambda probe: probe) == [0] and dynamic.run(lambda probe: probe) == [0, 1]
    assert dynamic.run(lambda probe: probe, second=lambda probe: -probe) == [0, -1]
    metas = dynamic.meta_inputs([(None, 3)])
    assert [meta.shape for (meta,) in metas] == [(size, 3) for size in DYNAMIC_PROBES]
    assert dynamic.run(lambda probe: format_shape(metas[probe][0].shape)) == ["(None, 3)"] * 2
    size = DYNAMIC_PROBES[0]
    assert static.run(lambda probe: format_shape((size, 3))) == [f"({size}, 3)"]  # a real dim, shown
    outputs = dynamic.run(lambda probe: torch.empty(metas[probe][0].shape[0], 4, device="meta"))
    assert dynamic.merged_shapes(outputs) == (None, 4) and static.merged_shapes(outputs[:1]) == (size, 4)
    with pytest.raises(ShapeError, match="has a negative dim"):
        static.meta_inputs([(-1, 3)])


def test_a_dynamic_size_of_a_graph_value_in_a_shape_reads_as_none() -> None:
    class DynamicSize:  # as torchx-functional's x.shape[1] of a (None, None) placeholder
        __torchx_dynamic_size__ = True

        def __index__(self) -> int:
            raise AssertionError("a dynamic size has no value")

    assert TypedShape((DynamicSize(), 4), torch.float32).shape == (None, 4)  # type: ignore[arg-type]
