"""The two processes of the distributed test (spawned; imported by name)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import torch
import torch.distributed as dist

import torchx
import torchx.layers as L
from torchx.device import destroy_distributed


def lazy_model() -> L.Sequential:
    return L.Sequential(L.Linear(16), L.ReLU(), L.Linear(1))


def batch(rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(100 + rank)
    return torch.randn(6, 4, generator=generator), torch.randn(6, 1, generator=generator)


def averaged_gradients(reference: torch.nn.Module, world_size: int) -> list[torch.Tensor]:
    """What DDP must produce: each rank's gradients on its own batch, averaged."""
    total = [torch.zeros_like(p) for p in reference.parameters()]
    for rank in range(world_size):
        reference.zero_grad()
        x, y = batch(rank)
        (reference(x) - y).pow(2).mean().backward()
        for accumulated, parameter in zip(total, reference.parameters(), strict=True):
            accumulated += parameter.grad
    return [grad / world_size for grad in total]


def check_step(model: torch.nn.Module, call: torch.nn.Module, rank: int, world_size: int) -> float:
    """One training step through ``call``; returns the largest gradient error."""
    reference = copy.deepcopy(model)
    x, y = batch(rank)
    (call(x) - y).pow(2).mean().backward()
    expected = averaged_gradients(reference, world_size)
    error = max(float((p.grad - e).abs().max()) for p, e in zip(model.parameters(), expected, strict=True))
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(world_size)]
    dist.all_gather(gathered, flat)
    assert all(torch.equal(gathered[0], other) for other in gathered), "ranks diverged after the step"
    return error


def explicit_wrapper(rank: int, world_size: int) -> float:
    torch.manual_seed(rank)  # different on purpose: DDP must broadcast rank 0's weights
    model = lazy_model()
    wrapped = torchx.DistributedDataParallel(model, inputs=[(None, 4)])
    return check_step(model, wrapped, rank, world_size)


def ddp_scope(rank: int, world_size: int) -> float:
    torch.manual_seed(rank)
    model = lazy_model()  # built by the scope's DDP wrapper from the first batch
    with torchx.device_scope("ddp") as scope:
        assert scope.placement.kind == "distributed"
        return check_step_in_scope(model, rank, world_size)


def run(rank: int, world_size: int, store: str, out: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world_size)
    try:
        result = {
            "rank": rank,
            "explicit": explicit_wrapper(rank, world_size),
            "scoped": ddp_scope(rank, world_size),
        }
        Path(out, f"rank{rank}.json").write_text(json.dumps(result), encoding="utf-8")
    finally:
        destroy_distributed()


def check_step_in_scope(model: L.Sequential, rank: int, world_size: int) -> float:
    x, _ = batch(rank)
    model(x).sum().mul(0).backward()  # the first call builds and wraps; gradients of zero
    model.zero_grad()
    return check_step(model, model, rank, world_size)
