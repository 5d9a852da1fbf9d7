"""Builds that would not fit in memory are refused before anything is allocated."""

from __future__ import annotations

import resource
import time

import pytest
import torch
from toy_layers import Attention, Chain, Dense, Norm

import torchx
from torchx.core import AllocationError, memory


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_a_layer_of_a_trillion_parameters_is_refused_before_allocating() -> None:
    model = Chain(Dense(10**6), Dense(10**6))
    before, started = _peak_rss_mib(), time.perf_counter()
    with pytest.raises(AllocationError) as caught:
        torchx.build(model, (None, 8))
    assert time.perf_counter() - started < 5
    assert _peak_rss_mib() - before < 100
    message = str(caught.value)
    assert message.startswith("Dense: building Linear(out_features=1000000, bias=True, in_features=1000000)")
    assert "3.6 TiB of parameters and buffers on cpu" in message
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
        (torch.nn.Linear, {"in_features": 3, "out_features": 5}),
        (torch.nn.Bilinear, {"in1_features": 3, "in2_features": 4, "out_features": 5}),
        (torch.nn.MultiheadAttention, {"embed_dim": 8, "num_heads": 1}),
        (torch.nn.LSTM, {"input_size": 1, "hidden_size": 7, "num_layers": 3, "bidirectional": True}),
        (torch.nn.TransformerEncoderLayer, {"d_model": 8, "nhead": 2}),
        (torch.nn.BatchNorm2d, {"num_features": 2}),
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
