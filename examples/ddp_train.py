"""Train a TorchX model on every process of a ``torchrun`` job, on CPUs or GPUs.

    torchrun --standalone --nproc-per-node 2 examples/ddp_train.py --steps 200

Inside ``torchx.device_scope("ddp")`` each process joins the job on its own
device (``cuda:LOCAL_RANK``, or the CPU with the gloo backend), tensors are
created there, and the model runs through ``DistributedDataParallel``, which
averages the gradients of all processes. Each process sees its own data.
"""

from __future__ import annotations

import argparse

import torch
import torch.distributed as dist

import torchx
import torchx.layers as L
from torchx.device import destroy_distributed


def train(steps: int, checkpoint: str | None) -> None:
    with torchx.device_scope("ddp"):
        rank, world_size = dist.get_rank(), dist.get_world_size()
        torch.manual_seed(0)
        model = torchx.build(L.Sequential(L.Linear(64), L.ReLU(), L.Linear(1)), (None, 8))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        truth = torch.linspace(-1.0, 1.0, 8)
        torch.manual_seed(1000 + rank)  # each process its own shard of data
        for step in range(1, steps + 1):
            x = torch.randn(64, 8)
            y = (x @ truth).unsqueeze(1) + 0.01 * torch.randn(64, 1)
            loss = (model(x) - y).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()  # DDP averages the gradients across processes here
            optimizer.step()
            if step % 10 == 0 or step == steps:
                mean_loss = loss.detach().clone()
                dist.all_reduce(mean_loss)
                if rank == 0:
                    print(f"rank 0/{world_size}: loss {float(mean_loss) / world_size:.4f} at step {step}")
    if rank == 0 and checkpoint:
        model.save(checkpoint)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--checkpoint", help="where rank 0 saves the trained model")
    options = parser.parse_args()
    try:
        train(options.steps, options.checkpoint)
    finally:
        destroy_distributed()


if __name__ == "__main__":
    main()
