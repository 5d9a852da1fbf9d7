"""DistributedDataParallel on CPU: two processes, gloo, lazy TorchX models."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import torchx
import torchx.layers as L
from torchx.core import DeviceError, DeviceUnavailableError, TorchXError
from torchx.device import launched_by_torchrun, local_device

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="this torch has no torch.distributed")

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "ddp_train.py"
TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def test_two_processes_average_their_gradients(tmp_path: Path) -> None:
    import _ddp_worker

    mp.spawn(_ddp_worker.run, args=(2, str(tmp_path / "store"), str(tmp_path)), nprocs=2, join=True)
    results = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(2)]
    for result in results:
        assert result["explicit"] < 1e-6, result
        assert result["scoped"] < 1e-6, result


def test_ddp_needs_a_process_group() -> None:
    with pytest.raises(
        DeviceError, match=r"needs torch\.distributed: run this in a process launched by torchrun"
    ):
        torchx.DistributedDataParallel(L.Linear(2))


def test_the_ddp_id_needs_torchrun_or_a_process_group(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in TORCHRUN_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert not launched_by_torchrun()
    with pytest.raises(DeviceError, match=r"device id 'ddp' needs torch\.distributed"):
        torchx.device_scope("ddp")


def test_an_unbuilt_model_needs_input_shapes(tmp_path: Path) -> None:
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        with pytest.raises(TorchXError, match=r"pass inputs=\[input_shape, \.\.\.\]"):
            torchx.DistributedDataParallel(L.Sequential(L.Linear(2)))
    finally:
        dist.destroy_process_group()


def test_the_local_device_follows_local_rank(monkeypatch: pytest.MonkeyPatch, fake_gpus: object) -> None:
    fake_gpus(2)  # type: ignore[operator]
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert local_device() == torch.device("cuda", 1)
    monkeypatch.setenv("LOCAL_RANK", "3")
    with pytest.raises(DeviceUnavailableError, match="LOCAL_RANK=3, but this machine has 2 GPUs"):
        local_device()


def test_the_torchrun_example_trains_with_two_processes(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}  # two CPU processes
    done = subprocess.run(
        [*command, str(EXAMPLE), "--steps", "20", "--checkpoint", str(tmp_path / "model.pt")],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rank 0/2: loss" in done.stdout
    assert (tmp_path / "model.pt").exists()
