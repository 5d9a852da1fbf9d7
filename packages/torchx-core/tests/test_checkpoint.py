"""Checkpoints: save/load with nnx helpers; refusals leave the model untouched."""

from __future__ import annotations

import json
import pathlib
import re
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch
from torch import nn
from toy_layers import Chain, Dense, Norm

import torchx
import torchx.nn as nnx
from torchx.core import CheckpointError, SpecError, TorchXError


class Net(nnx.Module):
    def __init__(self, hidden: int = 8) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, hidden)
        self.fc2 = nn.Linear(hidden, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.fc1(x))


def snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: tensor.clone() for name, tensor in model.state_dict().items()}


def unchanged(model: nn.Module, before: dict[str, torch.Tensor]) -> bool:
    return all(torch.equal(model.state_dict()[name], tensor) for name, tensor in before.items())


def test_a_module_saves_and_loads_its_weights(tmp_path: Path) -> None:
    model = Net()
    model.save(tmp_path / "net.pt")
    other = Net()
    assert other.load(tmp_path / "net.pt") is other
    assert unchanged(other, snapshot(model))
    assert nnx.read_checkpoint(tmp_path / "net.pt").spec is None  # a plain module has no spec


def test_a_layer_checkpoint_holds_its_spec(tmp_path: Path, toy_layers: None) -> None:
    model = torchx.build(Chain(Dense(8), Norm(), Dense(2)), (None, 4))
    model.save(tmp_path / "chain.pt")
    checkpoint = nnx.read_checkpoint(tmp_path / "chain.pt")
    assert checkpoint.spec == model.to_spec()
    rebuilt = torchx.build(Chain.from_spec(checkpoint.spec), (None, 4))
    rebuilt.load(tmp_path / "chain.pt")
    x = torch.randn(3, 4)
    model.eval(), rebuilt.eval()
    assert torch.equal(model(x), rebuilt(x))


def test_a_checkpoint_of_another_architecture_is_refused_by_its_spec(
    tmp_path: Path, toy_layers: None
) -> None:
    torchx.build(Chain(Dense(8), Dense(2)), (None, 4)).save(tmp_path / "a.pt")
    other = torchx.build(Chain(Dense(6), Dense(2)), (None, 4))
    before = snapshot(other)
    with pytest.raises(CheckpointError, match=r"another model: .* at \$\.children\[0\]\.args\.out_features"):
        other.load(tmp_path / "a.pt")
    assert unchanged(other, before)


def test_weights_that_do_not_fit_are_refused_before_anything_is_copied(tmp_path: Path) -> None:
    Net(8).save(tmp_path / "net.pt")
    other = Net(6)
    before = snapshot(other)
    with pytest.raises(CheckpointError, match=r"does not fit Net: 'fc1.weight' is \(8, 4\)"):
        other.load(tmp_path / "net.pt")
    assert unchanged(other, before)
    other.fc3 = nn.Linear(2, 2)
    before = snapshot(other)
    with pytest.raises(CheckpointError, match=r"missing 'fc3\.weight'"):
        other.load(tmp_path / "net.pt")
    assert unchanged(other, before)


def test_a_file_that_is_not_a_torchx_checkpoint_is_refused(tmp_path: Path) -> None:
    torch.save({"weights": torch.ones(2)}, tmp_path / "plain.pt")
    with pytest.raises(CheckpointError, match="not a TorchX checkpoint"):
        Net().load(tmp_path / "plain.pt")
    (tmp_path / "notes.txt").write_text("hello", encoding="utf-8")
    with pytest.raises(CheckpointError, match="not readable as a checkpoint"):
        Net().load(tmp_path / "notes.txt")
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(CheckpointError, match="not readable"):
        Net().load(tmp_path / "empty.pt")
    (tmp_path / "noise.pt").write_bytes(bytes(range(256)) * 4)
    with pytest.raises(CheckpointError, match=r"not readable as a checkpoint \(damaged") as caught:
        Net().load(tmp_path / "noise.pt")
    assert "weights_only" not in str(caught.value)  # never repeat torch's advice to load unsafely
    with pytest.raises(FileNotFoundError):
        Net().load(tmp_path / "missing.pt")


def test_a_truncated_checkpoint_is_refused_and_the_model_kept(tmp_path: Path) -> None:
    Net().save(tmp_path / "net.pt")
    data = (tmp_path / "net.pt").read_bytes()
    (tmp_path / "net.pt").write_bytes(data[: len(data) // 2])
    model = Net()
    before = snapshot(model)
    with pytest.raises(CheckpointError, match="truncated"):
        model.load(tmp_path / "net.pt")
    assert unchanged(model, before)


class _Payload:
    """Pickles as a call that would write ``canary``: a file carrying code."""

    def __init__(self, canary: Path) -> None:
        self.canary = canary

    def __reduce__(self) -> object:
        return (pathlib.Path.write_text, (self.canary, "the payload ran"))


def test_a_checkpoint_carrying_code_is_refused_without_running_it(tmp_path: Path) -> None:
    canary = tmp_path / "canary.txt"
    torch.save({"torchx_checkpoint": 1, "state_dict": {}, "spec": _Payload(canary)}, tmp_path / "evil.pt")
    model = Net()
    before = snapshot(model)
    with pytest.raises(
        CheckpointError, match=r"refused: it calls \S+, which weights-only loading does not allow"
    ):
        model.load(tmp_path / "evil.pt")
    assert not canary.exists()
    assert unchanged(model, before)


def test_a_checkpoint_from_a_newer_format_is_refused(tmp_path: Path) -> None:
    torch.save({"torchx_checkpoint": 99, "state_dict": {}, "spec": None}, tmp_path / "future.pt")
    with pytest.raises(CheckpointError, match="format 99 is not one this TorchX reads"):
        nnx.read_checkpoint(tmp_path / "future.pt")


def test_unbuilt_models_cannot_be_saved_but_load_builds_them(tmp_path: Path) -> None:
    with pytest.raises(TorchXError, match="save: Chain has 1 unbuilt"):
        Chain(Dense(2)).save(tmp_path / "x.pt")
    built = torchx.build(Chain(Dense(2), Norm()), (4, 3))
    built.save(tmp_path / "built.pt")
    loaded = Chain(Dense(2), Norm()).load(tmp_path / "built.pt")
    assert torchx.is_built(loaded)
    for mine, theirs in zip(loaded.state_dict().values(), built.state_dict().values(), strict=True):
        assert torch.equal(mine, theirs)
    other = Chain(Dense(5), Norm())
    with pytest.raises(CheckpointError, match=r"another model.*children\[0\]\.args\.out_features"):
        other.load(tmp_path / "built.pt")
    assert not torchx.is_built(other)


# -- safetensors checkpoints, and models rebuilt from a checkpoint alone -------------------


def test_a_safetensors_checkpoint_holds_tensors_and_the_spec_and_no_pickle(
    tmp_path: Path, toy_layers: None
) -> None:
    from safetensors import safe_open

    model = torchx.build(Chain(Dense(8), Norm(), Dense(2)), (None, 4))
    model.save(tmp_path / "chain.safetensors")
    data = (tmp_path / "chain.safetensors").read_bytes()
    assert not zipfile.is_zipfile(tmp_path / "chain.safetensors") and b"pickle" not in data
    with safe_open(str(tmp_path / "chain.safetensors"), framework="pt") as file:
        assert sorted(file.keys()) == sorted(model.state_dict())
        assert json.loads(file.metadata()["spec"]) == model.to_spec()
    checkpoint = nnx.read_checkpoint(tmp_path / "chain.safetensors")
    assert checkpoint.spec == model.to_spec()
    rebuilt = Chain(Dense(8), Norm(), Dense(2)).load(tmp_path / "chain.safetensors")
    x = torch.randn(3, 4)
    assert torch.equal(rebuilt.eval()(x), model.eval()(x))


@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_load_model_rebuilds_the_model_from_a_checkpoint_alone(
    tmp_path: Path, toy_layers: None, suffix: str
) -> None:
    model = torchx.build(Chain(Dense(8), Norm(), Dense(2)), (None, 4)).eval()
    model.save(tmp_path / f"chain{suffix}")
    loaded = torchx.load_model(tmp_path / f"chain{suffix}")
    assert isinstance(loaded, Chain) and torchx.is_built(loaded)
    x = torch.randn(3, 4)
    assert torch.equal(loaded.eval()(x), model(x))


def test_load_model_needs_a_spec_in_the_checkpoint(tmp_path: Path) -> None:
    Net().save(tmp_path / "net.safetensors")
    assert nnx.read_checkpoint(tmp_path / "net.safetensors").spec is None
    with pytest.raises(CheckpointError, match="holds weights only"):
        torchx.load_model(tmp_path / "net.safetensors")


def test_tied_weights_are_saved_to_safetensors(tmp_path: Path) -> None:
    model = Net(hidden=4)
    model.fc2.weight = nn.Parameter(model.fc1.weight[:2].clone())
    model.register_buffer("tied", model.fc1.weight)  # the same tensor under a second name
    model.save(tmp_path / "tied.safetensors")
    other = Net(hidden=4)
    other.register_buffer("tied", torch.zeros(4, 4))
    other.load(tmp_path / "tied.safetensors")
    assert unchanged(other, snapshot(model))


def test_damaged_and_oversized_safetensors_files_are_refused(tmp_path: Path, toy_layers: None) -> None:
    model = torchx.build(Chain(Dense(8), Dense(2)), (None, 4))
    model.save(tmp_path / "chain.safetensors")
    data = (tmp_path / "chain.safetensors").read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(data[: len(data) - 7])
    before = snapshot(model)
    with pytest.raises(CheckpointError, match="not readable as a safetensors file"):
        model.load(tmp_path / "cut.safetensors")
    (tmp_path / "noise.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(CheckpointError, match=r"neither a torch\.save nor a safetensors file"):
        model.load(tmp_path / "noise.safetensors")
    small = torchx.build(Chain(Dense(8), Dense(2)), (None, 1))
    from safetensors.torch import save_file

    save_file({"big": torch.zeros(6 << 20)}, str(tmp_path / "big.safetensors"))
    with pytest.raises(CheckpointError, match=r"refused: its tensors hold 24\.0 MiB, more than the model"):
        small.load(tmp_path / "big.safetensors")
    assert unchanged(model, before)


# -- files that nest or share their data past what a recursive reader survives -------------


def deep_safetensors(path: Path, depth: int = 100_000) -> Path:
    """A safetensors file of no tensors whose header nests ``depth`` JSON arrays in its metadata."""
    header = b'{"__metadata__": {"deep": ' + b"[" * depth + b"]" * depth + b"}}"
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    return path


def test_a_safetensors_header_nested_too_deeply_is_a_checkpoint_error(tmp_path: Path) -> None:
    path = deep_safetensors(tmp_path / "deep.safetensors")
    message = rf"{re.escape(str(path))}: not readable as a safetensors file.*nests too deeply"
    with pytest.raises(CheckpointError, match=message):
        torchx.load_model(path)
    model = nn.Linear(2, 2)
    before = snapshot(model)
    with pytest.raises(CheckpointError, match=message):
        torchx.load_weights(model, path)
    assert unchanged(model, before)


@pytest.mark.parametrize("command", ["summary", "validate"])
def test_the_command_line_reports_a_too_deep_safetensors_header_in_one_line(
    tmp_path: Path, command: str
) -> None:
    path = deep_safetensors(tmp_path / "deep.safetensors")
    done = subprocess.run(
        [sys.executable, "-m", "torchx.cli", command, str(path)], capture_output=True, text=True
    )
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr, done.stderr
    # The last line (an installed plugin that fails to load would warn on a line of its own).
    assert done.stderr.splitlines()[-1] == (
        f"torchx {command}: error: {path}: not readable as a safetensors file: "
        "its JSON header nests too deeply to read"
    )


def save_deeply(data: object, path: Path) -> None:
    """``torch.save`` of data nested deeper than reading it recursively allows."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20 * limit)
    try:
        torch.save(data, path)
    finally:
        sys.setrecursionlimit(limit)


def test_a_spec_nested_or_shared_past_a_recursive_check_is_refused_as_data(
    tmp_path: Path, toy_layers: None
) -> None:
    deep: list[object] = []
    for _ in range(5 * sys.getrecursionlimit()):
        deep = [deep]
    shared: list[object] = []
    for _ in range(64):  # 2**64 lists once expanded, 65 as stored
        shared = [shared, shared]
    for name, value, message in [
        ("deep.pt", deep, r"\$\.args\.out_features: expected"),
        ("shared.pt", shared, "expands to more than"),
    ]:
        spec = {"type": "Dense", "args": {"out_features": value}}
        save_deeply({"torchx_checkpoint": 1, "state_dict": {}, "spec": spec}, tmp_path / name)
        with pytest.raises(SpecError, match=message):
            torchx.load_model(tmp_path / name)
    odd = {"type": "Dense", "args": {"out_features": [[[{"a": [1, torch.Size([2])]}]]]}}
    torch.save({"torchx_checkpoint": 1, "state_dict": {}, "spec": odd}, tmp_path / "odd.pt")
    with pytest.raises(
        CheckpointError, match=r"its spec holds a Size at \$\.args\.out_features\[0\]\[0\]\[0\]\.a\[1\]"
    ):
        torchx.load_model(tmp_path / "odd.pt")
