"""Damaged checkpoints and interrupted builds: a clear error, and the model as it was."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import torch
from report import Report
from torch import nn
from weights import small_model, snapshot, unchanged

import torchx
import torchx.layers as L
from torchx.core import CheckpointError, LeafLayer, ShapeError

MARKER = Path(os.environ.get("TMPDIR", "/tmp")) / "torchx-reliability-payload-ran"


class _Payload:
    """Unpickling this runs code: it writes MARKER."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.write_text, (MARKER, "ran"))


def _truncated(path: Path, source: Path, fraction: float) -> None:
    data = source.read_bytes()
    path.write_bytes(data[: int(len(data) * fraction)])


def _write_damage(kind: str, path: Path, good: Path) -> None:
    if kind.startswith("truncated"):
        _truncated(
            path, good, {"truncated to 0%": 0.0, "truncated to 50%": 0.5, "truncated to 99%": 0.99}[kind]
        )
    elif kind == "garbage bytes":
        path.write_bytes(os.urandom(4096))
    elif kind == "a pickle with a code payload":
        path.write_bytes(pickle.dumps({"format": "torchx-checkpoint", "state_dict": _Payload()}))
    elif kind == "torch.save of a code payload":
        torch.save({"state_dict": _Payload()}, path)
    elif kind == "another model's checkpoint":
        torchx.build(L.Sequential(L.Linear(7)), (2, 3)).save(path)
    elif kind == "the same layers with other sizes":
        torchx.build(
            L.Sequential(L.Conv2d(4, 3), L.BatchNorm2d(), L.ReLU(), L.Flatten(), L.Linear(6)), (2, 3, 8, 8)
        ).save(path)
    elif kind == "a plain state_dict":
        torch.save(small_model().state_dict(), path)
    elif kind == "safetensors tensors reaching past the end":
        _with_header(path, good, lambda header: _stretched(header))
    elif kind == "safetensors metadata whose spec is not JSON":
        _with_header(
            path, good, lambda header: {**header, "__metadata__": {**header["__metadata__"], "spec": "{"}}
        )
    elif kind == "a directory":
        path.mkdir()
    elif kind == "a missing file":
        pass


def _with_header(path: Path, good: Path, change: Any) -> None:
    """A copy of the safetensors file ``good`` whose JSON header ``change`` rewrote."""
    data = good.read_bytes()
    length = int.from_bytes(data[:8], "little")
    header = json.dumps(change(json.loads(data[8 : 8 + length]))).encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header + data[8 + length :])


def _stretched(header: dict[str, Any]) -> dict[str, Any]:
    """Every tensor's byte range shifted far past the end of the file."""
    return {
        name: entry
        if name == "__metadata__"
        else {**entry, "data_offsets": [o + (1 << 40) for o in entry["data_offsets"]]}
        for name, entry in header.items()
    }


DAMAGE = [
    "truncated to 0%",
    "truncated to 50%",
    "truncated to 99%",
    "garbage bytes",
    "a pickle with a code payload",
    "torch.save of a code payload",
    "another model's checkpoint",
    "the same layers with other sizes",
    "a plain state_dict",
    "a directory",
    "a missing file",
]
SAFETENSORS_DAMAGE = [
    "safetensors tensors reaching past the end",
    "safetensors metadata whose spec is not JSON",
]


@pytest.mark.parametrize(
    ("suffix", "damage"),
    [(".pt", damage) for damage in DAMAGE]
    + [(".safetensors", damage) for damage in DAMAGE + SAFETENSORS_DAMAGE],
)
def test_a_damaged_checkpoint_is_refused_and_the_model_untouched(
    suffix: str, damage: str, tmp_path: Path, report: Report
) -> None:
    good = tmp_path / f"good{suffix}"
    small_model().save(good)
    path = tmp_path / f"damaged{suffix}"
    _write_damage(damage, path, good)
    model = small_model()
    before = snapshot(model)
    MARKER.unlink(missing_ok=True)
    # A file that is not there is an OSError, as for open(); anything else read is a CheckpointError.
    expected = OSError if damage in ("a directory", "a missing file") else CheckpointError
    with pytest.raises(expected, match=str(path).replace(".", r"\.")):
        model.load(path)
    assert not MARKER.exists(), "loading ran the payload"
    assert unchanged(model, before)
    model.load(good)  # and a good checkpoint still loads afterwards
    report.count("fault", f"damaged {suffix} checkpoint: {damage}")


class _Fails(LeafLayer):
    """A layer whose build fails: an error raised in the middle of a Sequential's build."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise self.error


@pytest.mark.parametrize(
    "error",
    [ShapeError("Fails", "does not fit"), RuntimeError("boom"), MemoryError(), KeyboardInterrupt()],
    ids=["ShapeError", "RuntimeError", "MemoryError", "KeyboardInterrupt"],
)
@pytest.mark.parametrize("how", ["first call", "torchx.build", "torchx.build on meta"])
def test_an_interrupted_build_leaves_the_model_unbuilt_and_buildable(
    error: BaseException, how: str, report: Report
) -> None:
    failing = _Fails(error)
    model = L.Sequential(L.Conv2d(4, 3), L.ReLU(), L.Flatten(), failing, L.Linear(5))
    with pytest.raises(type(error)):
        if how == "first call":
            model(torch.randn(2, 3, 8, 8))
        else:
            torchx.build(model, (2, 3, 8, 8), device="meta" if how.endswith("meta") else None)
    assert not model.is_built
    assert all(isinstance(layer, L.Layer) for layer in model)  # a built leaf would be its native class
    assert not any(isinstance(layer, nn.Conv2d) for layer in model.modules())  # no half-built layer
    model[3] = L.Identity()
    assert model(torch.randn(2, 3, 8, 8)).shape == (2, 5)
    report.count("fault", f"builds interrupted ({how})")


def test_a_real_interrupt_signal_mid_build_leaves_nothing_half_built(report: Report) -> None:
    class _Signals(LeafLayer):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            os.kill(os.getpid(), signal.SIGINT)  # Python raises KeyboardInterrupt at the next bytecode
            return x

    model = L.Sequential(L.Linear(8), _Signals(), L.Linear(4))
    # A process started in the background (`&`, nohup, some CI runners) inherits SIGINT as ignored:
    # the test installs the handler it relies on, Python's own, and puts the inherited one back.
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            model(torch.randn(2, 3))
    finally:
        signal.signal(signal.SIGINT, inherited)
    assert not torchx.is_built(model[0]) and not torchx.is_built(model[2])
    model[1] = L.ReLU()
    assert model(torch.randn(2, 3)).shape == (2, 4)
    report.count("fault", "builds interrupted (SIGINT)")


def _zip_bomb(path: Path, unpacked: int) -> None:
    """A torch.save-shaped archive whose one data entry deflates to ``unpacked`` zero bytes."""
    chunk = bytes(1 << 20)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("checkpoint/data.pkl", pickle.dumps({"torchx_checkpoint": 1}))
        with archive.open("checkpoint/data/0", "w", force_zip64=True) as entry:
            for _ in range(unpacked // len(chunk)):
                entry.write(chunk)


def test_a_zip_bomb_is_refused_from_its_directory_before_anything_unpacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: Report
) -> None:
    path = tmp_path / "bomb.pt"
    _zip_bomb(path, 64 << 20)
    assert path.stat().st_size < 1 << 20
    model = small_model()
    before = snapshot(model)

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("torch.load ran: the archive was unpacked")

    monkeypatch.setattr(torch, "load", never)
    with pytest.raises(
        CheckpointError, match=r"refused: its entries unpack to 64\.0 MiB, more than the model"
    ):
        model.load(path)
    assert unchanged(model, before)
    report.count("fault", "zip bombs (64 MiB from a 64 KiB file) refused before unpacking")


def test_the_interrupt_test_passes_in_a_process_that_ignores_sigint() -> None:
    """Started detached, as a background job is: SIGINT ignored from the start."""
    test = f"{__file__}::test_a_real_interrupt_signal_mid_build_leaves_nothing_half_built"
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
