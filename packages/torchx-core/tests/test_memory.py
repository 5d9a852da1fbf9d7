"""Builds that would not fit in memory are refused before anything is allocated."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest
import torch
from toy_layers import Attention, Chain, Dense, Norm

import torchx
from torchx.core import AllocationError, Layer, LeafLayer
from torchx.core import _memory as memory
from torchx.core._leaf import all_or_nothing


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_a_layer_of_a_trillion_parameters_is_refused_before_allocating() -> None:
    model = Chain(Dense(10**6), Dense(10**6))
    before = _peak_rss_mib()
    with pytest.raises(AllocationError) as caught:
        torchx.build(model, (None, 8))
    assert _peak_rss_mib() - before < 100
    message = str(caught.value)
    assert message.startswith("Chain: building it would allocate 3.6 TiB of parameters and buffers on cpu")
    assert "(measured on a meta copy, before allocating); the largest layer is the Dense at '1'" in message
    assert "device='meta'" in caught.value.fix  # type: ignore[operator]
    assert not any(layer.is_built for layer in model.children())  # nothing stays half-built


def test_the_same_layer_builds_abstractly_on_meta() -> None:
    model = Dense(10**6)
    torchx.build(model, (None, 10**6), device="meta")
    assert model.weight.shape == (10**6, 10**6) and model.weight.is_meta


def test_a_first_call_is_guarded_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "available_memory", lambda device: 2**20)  # a 1 MiB device
    monkeypatch.setattr(memory, "UNCHECKED_BYTES", 0)
    small, large = Dense(8), Dense(1024)
    small(torch.zeros(2, 8))  # 288 bytes: fits
    with pytest.raises(AllocationError, match=r"would allocate 4\.0 MiB .* which has 1\.0 MiB available"):
        large(torch.zeros(2, 1024))
    assert torchx.is_built(small) and not torchx.is_built(large)


def test_buffers_count_and_ordinary_builds_never_read_the_free_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unexpected(device: torch.device) -> int:
        raise AssertionError("an ordinary layer read the free memory")

    monkeypatch.setattr(memory, "available_memory", unexpected)
    torchx.build(Chain(Dense(128), Norm()), (2, 64))
    torchx.build(Attention(num_heads=4), (2, 3, 64), (2, 3, 64), (2, 3, 64))
    assert memory.measured_need(torch.nn.BatchNorm1d, {"num_features": 10}, True) == 4 * 10 * 4 + 8


@pytest.mark.parametrize(
    ("native", "arguments"),
    [
        pytest.param(native, arguments, id=native.__name__)
        for native, arguments in [
            (torch.nn.Linear, {"in_features": 3, "out_features": 5}),
            (torch.nn.Bilinear, {"in1_features": 3, "in2_features": 4, "out_features": 5}),
            (torch.nn.MultiheadAttention, {"embed_dim": 8, "num_heads": 1}),
            (torch.nn.LSTM, {"input_size": 1, "hidden_size": 7, "num_layers": 3, "bidirectional": True}),
            (torch.nn.TransformerEncoderLayer, {"d_model": 8, "nhead": 2}),
            (torch.nn.BatchNorm2d, {"num_features": 2}),
        ]
    ],
)
def test_the_bound_holds_for_natives_whose_sizes_multiply(native: type, arguments: dict[str, object]) -> None:
    # TransformerEncoderLayer's dim_feedforward=2048 is a native default: the bound reads defaults too.
    assert memory.allocation_bound(native, arguments, 4) >= memory.measured_need(native, arguments, True)


def test_available_memory_of_each_device_kind() -> None:
    cpu = memory.available_memory(torch.device("cpu"))
    assert cpu is not None and cpu > 0
    assert memory.available_memory(torch.device("meta")) is None


@pytest.mark.parametrize(
    ("count", "text"),
    [(0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"), (4 * 10**12, "3.6 TiB"), (2**60, "1024.0 PiB")],
)
def test_byte_counts_read_in_binary_units(count: int, text: str) -> None:
    assert memory.format_bytes(count) == text


def test_a_build_of_many_small_layers_is_refused_by_its_sum_before_allocating(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(memory, "available_memory", lambda device: 16 << 20)  # a 16 MiB device
    monkeypatch.setattr(memory, "UNCHECKED_BYTES", 1 << 20)
    # Needs measured by earlier builds (other tests' Linear(256, 256)) let the first layers under
    # UNCHECKED_BYTES build unchecked: this test is about a process that has measured none.
    monkeypatch.setattr(memory, "_NEEDS", {})
    real_builds: list[str] = []
    become = LeafLayer._become

    def counted(self: Layer, native: type, arguments: dict[str, object], inferred: object) -> None:
        if arguments.get("device") != torch.device("meta"):
            real_builds.append(self.layer_label())
        become(self, native, arguments, inferred)  # type: ignore[arg-type]

    monkeypatch.setattr(LeafLayer, "_become", counted)
    model = Chain(*(Dense(256) for _ in range(80)))  # 80 layers of 257 KiB: 20 MiB, each far below 16
    with pytest.raises(
        AllocationError, match=r"Chain: building it would allocate 20\.1 MiB .* which has 16\.0 MiB"
    ):
        torchx.build(model, (2, 256))
    assert real_builds == []  # refused before the first real allocation
    assert not any(torchx.is_built(layer) for layer in model.children())
    fits = Chain(*(Dense(256) for _ in range(50)))  # 12.6 MiB
    torchx.build(fits, (2, 256))
    assert all(torchx.is_built(layer) for layer in fits.children())


def test_a_transaction_that_cannot_rehearse_adds_up_each_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "available_memory", lambda device: 16 << 20)
    monkeypatch.setattr(memory, "UNCHECKED_BYTES", 1 << 20)
    model = Chain(*(Dense(256) for _ in range(80)))
    refused = pytest.raises(
        AllocationError, match=r"on top of the 1[45]\.\d MiB this build allocated before it"
    )
    with refused, all_or_nothing(model):  # a transaction that does not know the inputs: no rehearsal
        model(torch.zeros(2, 256))
    assert not any(torchx.is_built(layer) for layer in model.children())  # and all of it is freed


def test_the_sum_is_of_what_layers_hold_not_of_their_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    # The bound of a Dense(512) is hundreds of times its 1 MiB: bounds alone would refuse this model.
    monkeypatch.setattr(memory, "available_memory", lambda device: 64 << 20)
    model = Chain(*(Dense(512) for _ in range(40)))  # 40 MiB in all
    torchx.build(model, (2, 512))
    assert all(torchx.is_built(layer) for layer in model.children())


def _cgroup(root: Path, folder: str, files: dict[str, str]) -> None:
    (root / folder).mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / folder / name).write_text(text + "\n", encoding="ascii")


def test_the_memory_cgroup_limit_is_read_in_v2_and_in_v1(tmp_path: Path) -> None:
    membership = tmp_path / "cgroup"
    membership.write_text("0::/jobs/a\n", encoding="ascii")
    _cgroup(tmp_path / "v2", "jobs/a", {"memory.max": str(3 << 30), "memory.current": str(1 << 30)})
    assert memory._cgroup_headroom(tmp_path / "v2", membership) == 2 << 30
    membership.write_text("4:memory:/jobs/b\n0::/\n", encoding="ascii")
    v1 = {"memory.limit_in_bytes": str(5 << 30), "memory.usage_in_bytes": str(4 << 30)}
    _cgroup(tmp_path / "v1", "memory/jobs/b", v1)
    assert memory._cgroup_headroom(tmp_path / "v1", membership) == 1 << 30
    # A container sees its own cgroup as the root of the mount.
    _cgroup(tmp_path / "v1-container", "memory", v1)
    assert memory._cgroup_headroom(tmp_path / "v1-container", membership) == 1 << 30
    # No limit: "max" in v2, a huge number in v1.
    _cgroup(tmp_path / "none", "memory", {**v1, "memory.limit_in_bytes": "9223372036854771712"})
    assert memory._cgroup_headroom(tmp_path / "none", membership) is None
    assert memory._cgroup_headroom(tmp_path / "missing", membership) is None
