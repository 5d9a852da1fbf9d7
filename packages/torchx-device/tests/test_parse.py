"""The standard device ids: normalised once, validated against the devices present."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from case_ids import case_id

import torchx
from torchx.core import DeviceError, DeviceUnavailableError, DeviceWarning, PluginManager
from torchx.core.testing import install_fake_distribution
from torchx.device import DataParallel, parse

FakeGpus = Callable[..., None]


@pytest.mark.parametrize(
    ("device_id", "device", "kind", "device_ids"),
    [
        (0, "cuda:0", "device", ()),
        (3, "cuda:3", "device", ()),
        (-1, "cpu", "device", ()),
        ("cpu", "cpu", "device", ()),
        (" CPU ", "cpu", "device", ()),
        ("cuda:2", "cuda:2", "device", ()),
        ("gpu:2", "cuda:2", "device", ()),
        ("GPU:1", "cuda:1", "device", ()),
        ("cuda", "cuda:1", "device", ()),  # the current GPU, with its index filled in
        ("gpu", "cuda:1", "device", ()),
        (torch.device("cuda", 2), "cuda:2", "device", ()),
        (torch.device("cuda"), "cuda:1", "device", ()),
        (torch.device("cpu"), "cpu", "device", ()),
        ("meta", "meta", "device", ()),
        ([0, 3, 2], "cuda:0", "data_parallel", (0, 3, 2)),
        ((1,), "cuda:1", "data_parallel", (1,)),
        ("cuda:all", "cuda:0", "data_parallel", (0, 1, 2, 3)),
        ("gpu:all", "cuda:0", "data_parallel", (0, 1, 2, 3)),
    ],
    ids=case_id,
)
def test_every_standard_id_normalises_to_one_placement(
    fake_gpus: FakeGpus, device_id: object, device: str, kind: str, device_ids: tuple[int, ...]
) -> None:
    fake_gpus(4, current=1)
    placement = parse(device_id)
    assert placement.device == torch.device(device)
    assert placement.kind == kind
    assert placement.device_ids == device_ids
    assert (placement.wrap is None) == (kind == "device")
    assert torchx.device_scope(device_id).placement == placement


def test_the_current_gpu_is_looked_up_each_time_a_scope_is_made(fake_gpus: FakeGpus) -> None:
    fake_gpus(4, current=1)
    assert torchx.device_scope("cuda").device == torch.device("cuda", 1)
    fake_gpus(4, current=3)  # torch.cuda.set_device(3), as init_distributed does
    assert torchx.device_scope("cuda").device == torch.device("cuda", 3)
    assert torchx.device_scope(torch.device("cuda")).device == torch.device("cuda", 3)
    assert parse("cuda:2").cache and not parse("gpu").cache


def test_a_data_parallel_placement_wraps_in_torchx_data_parallel(fake_gpus: FakeGpus) -> None:
    fake_gpus(4)
    placement = parse([2, 0])
    assert str(placement) == "data_parallel(cuda:2, cuda:0)"
    assert placement.wrap is not None
    assert placement.wrap.func.__module__ == DataParallel.__module__  # type: ignore[attr-defined]
    assert placement.wrap.keywords == {"device_ids": (2, 0)}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("device_id", "shown"),
    [(2, "2 names cuda:2"), ("cuda:5", "'cuda:5' names cuda:5"), ([0, 2], r"\[0, 2\] names cuda:2")],
    ids=case_id,
)
def test_an_absent_gpu_names_the_id_and_the_devices_present(
    fake_gpus: FakeGpus, device_id: object, shown: str
) -> None:
    fake_gpus(2)
    with pytest.raises(DeviceUnavailableError, match=rf"{shown}, but this machine has only 2 cuda devices "):
        parse(device_id)
    with pytest.raises(DeviceUnavailableError, match=r"available: cpu, cuda:0, cuda:1"):
        torchx.device_scope(device_id)


def test_on_a_machine_without_gpus(no_gpu: None) -> None:
    with pytest.raises(DeviceUnavailableError, match=r"names cuda:0, but this machine has no cuda device"):
        torchx.device_scope(0)
    with pytest.raises(
        DeviceUnavailableError, match=r"'cuda:all': this machine has no GPU \(available: cpu\)"
    ):
        torchx.device_scope("cuda:all")
    with pytest.raises(DeviceUnavailableError, match="no cuda device"):
        torchx.device_scope([0, 1])


@pytest.mark.parametrize(
    ("device_id", "message"),
    [
        (-2, "negative ids other than -1"),
        ("gpu:x", r"the GPU index must be an int >= 0 or 'all', got 'x'"),
        ("cuda:-1", "got '-1'"),
        ("cuda:1.5", "got '1.5'"),
        ([], "an empty list names no GPU"),
        ([0, 0], r"GPU \[0\] listed more than once"),
        ([0, "1"], r"holds GPU indices \(ints >= 0\), not \['1'\]"),
        ([True], r"not \[True\]"),
        ([-1, 0], r"not \[-1\]"),
        (True, "a bool is not a device id"),
    ],
    ids=case_id,
)
def test_malformed_ids_are_refused_with_the_reason(
    fake_gpus: FakeGpus, device_id: object, message: str
) -> None:
    fake_gpus(4)
    with pytest.raises(DeviceError, match=message) as caught:
        torchx.device_scope(device_id)
    assert not isinstance(caught.value, DeviceUnavailableError)
    with pytest.raises(DeviceError, match=message):
        torchx.device_scope(device_id, fallback="cpu")  # fallback only covers absent devices


@pytest.mark.parametrize("device_id", ["tpu:0", "banana", 2.5, None])
def test_ids_of_no_known_form_are_refused_listing_the_forms(device_id: object) -> None:
    with pytest.raises(DeviceError, match="is not one that any installed device backend accepts"):
        torchx.device_scope(device_id)
    with pytest.raises(DeviceError, match=r"is not a device id; use an int >= 0 \(GPU n\), -1 or 'cpu'"):
        parse(device_id)


def test_fallback_turns_an_absent_device_into_a_warning(no_gpu: None) -> None:
    with pytest.warns(DeviceWarning, match=r"device id 0 names cuda:0.* using 'cpu' instead"):
        scope = torchx.device_scope(0, fallback="cpu")
    assert scope.device == torch.device("cpu")
    with pytest.warns(DeviceWarning, match="'cuda:all'"):
        assert torchx.device_scope("cuda:all", fallback=-1).placement.kind == "device"


MYDEV_PLUGIN = """
import torch
from torchx.core import Placement, hookimpl

@hookimpl
def torchx_resolve_device(device_id):
    if device_id == "mydev":
        return Placement(torch.device("cpu"))
    if device_id == "mps":  # taken over: this backend is asked before torchx-device
        return Placement(torch.device("meta"))
    return None
"""


def test_a_third_party_backend_adds_ids_without_touching_torchx(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    install_fake_distribution(
        tmp_path, "torchx-mydev", plugins={"torchx-mydev": "tx_mydev"}, modules={"tx_mydev": MYDEV_PLUGIN}
    )
    manager = PluginManager()
    assert manager.device_backends()[:1] == ["torchx-mydev"]
    assert "torchx-device" in manager.device_backends()
    from torchx.core import use_plugins

    with use_plugins(manager):
        with torchx.device_scope("mydev") as scope:
            assert torchx.current_scope() is scope
            assert torch.zeros(1).device.type == "cpu"
        with torchx.device_scope("mps"):
            assert torch.zeros(1).is_meta
        assert torchx.device_scope("cpu").device == torch.device("cpu")  # the rest is torchx-device's
