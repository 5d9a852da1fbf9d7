"""The shortcuts that keep a build cheap give the answers of the long way."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn.parameter import is_lazy
from toy_layers import Chain, Dense, Norm

import torchx
from torchx.core import _memory as memory
from torchx.core._leaf import all_or_nothing, unbuilt_layers


def _limit(folder: Path, limit: int, usage: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "memory.max").write_text(f"{limit}\n", encoding="ascii")
    (folder / "memory.current").write_text(f"{usage}\n", encoding="ascii")


def test_the_cgroup_files_are_found_once_and_searched_again_when_the_process_moves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory, "_CGROUP_FILES", {})
    membership = tmp_path / "cgroup"
    membership.write_text("0::/jobs/a\n", encoding="ascii")
    _limit(tmp_path / "jobs/a", 3 << 30, 1 << 30)
    assert memory._cgroup_headroom(tmp_path, membership) == 2 << 30
    (tmp_path / "jobs/a/memory.current").write_text(f"{2 << 30}\n", encoding="ascii")
    assert memory._cgroup_headroom(tmp_path, membership) == 1 << 30  # the usage is read each time
    membership.write_text("0::/jobs/b\n", encoding="ascii")  # moved to another cgroup, the old one gone
    for name in ("memory.max", "memory.current"):
        (tmp_path / "jobs/a" / name).unlink()
    _limit(tmp_path / "jobs/b", 5 << 30, 1 << 30)
    assert memory._cgroup_headroom(tmp_path, membership) == 4 << 30


def test_host_memory_is_read_from_meminfo() -> None:
    available = memory._available_host_memory()
    assert available is not None and available > 0
    text = Path("/proc/meminfo").read_text(encoding="ascii")
    kib = next(int(line.split()[1]) for line in text.splitlines() if line.startswith("MemAvailable:"))
    assert abs(available - kib * 1024) < 1 << 30 or memory._cgroup_headroom() is not None


def test_a_layer_built_again_with_the_same_arguments_is_counted_exactly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(memory, "_NEEDS", {})
    reads: list[torch.device] = []

    def available(device: torch.device) -> int:
        reads.append(device)
        return 1 << 40

    monkeypatch.setattr(memory, "available_memory", available)
    # 512 -> 512 features: a bound of 128 GiB (sizes multiplied, times the largest), 1 MiB in fact.
    first = torchx.build(Chain(Dense(512), Dense(512)), (2, 512))
    assert len(reads) == 1  # the bound alone needs a look at the free memory
    key = memory._need_key(nn.Linear, {"out_features": 512, "bias": True, "in_features": 512})
    assert memory._NEEDS[key] == memory.weight_bytes(first.get_submodule("1"))
    reads.clear()
    torchx.build(Chain(Dense(512), Dense(512)), (2, 512))
    assert reads == []  # counted exactly: far below the threshold


def test_a_layer_whose_build_failed_is_never_taken_for_an_empty_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "_NEEDS", {})
    model = Chain(Dense(6), Norm())
    with pytest.raises(torchx.ShapeError):
        torchx.build(model, (2, 4, 5, 6))  # Norm refuses 4-d input after Dense built
    assert all(need > 0 for need in memory._NEEDS.values())
    assert all(is_lazy(p) for p in model.parameters())


def test_a_build_skips_the_layers_another_thread_built_meanwhile() -> None:
    model = Chain(Dense(6), Dense(3))
    unbuilt = unbuilt_layers(model)
    torchx.build(model.get_submodule("0"), (2, 4))  # built after the walk
    with all_or_nothing(model, None, unbuilt) as pending:
        assert pending == [model.get_submodule("1")]


class _Tagged:
    """A cooperative mixin after nn.Module: ``call_super_init`` passes the call on to it."""

    def __init__(self) -> None:
        self.tagged = True


class _CooperativeLinear(nn.Linear, _Tagged):
    call_super_init = True


class _PicksItsClass(nn.Linear):
    """A native whose constructor leaves an instance of another class (as the recurrent builders do)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        object.__setattr__(self, "__class__", nn.Linear)


@pytest.mark.parametrize(
    ("native", "built"), [(_CooperativeLinear, _CooperativeLinear), (_PicksItsClass, nn.Linear)]
)
def test_the_native_constructor_runs_as_torch_runs_it(
    native: type[nn.Module], built: type[nn.Module]
) -> None:
    class Layer(Dense):
        native_class = native

    layer = Layer(3)
    handle = layer.register_forward_hook(lambda module, args, output: output * 0)
    torchx.build(layer, (2, 4))
    assert type(layer) is built
    assert getattr(layer, "tagged", None) is (True if native is _CooperativeLinear else None)
    assert layer._parameters.keys() == {"weight", "bias"}
    assert torch.equal(layer(torch.ones(2, 4)), torch.zeros(2, 3))  # the hook kept
    handle.remove()
    assert not torch.equal(layer(torch.ones(2, 4)), torch.zeros(2, 3))
