"""Train a CNN defined by a YAML spec on scikit-learn's handwritten digits.

    python examples/train_digits.py                      # examples/digits_cnn.yaml, about 10 s on 2 cores
    python examples/train_digits.py my_cnn.yaml --epochs 20 --device cuda:0

The digits (1,797 images of 8x8 pixels) ship with scikit-learn: nothing is
downloaded. The script builds the model from the spec, trains it with a
progress bar, checks the held-out accuracy, saves a checkpoint (weights and
spec) with the torchx.nn helpers, rebuilds the model from that checkpoint
alone and checks that it scores the same.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tqdm import tqdm

import torchx
import torchx.layers as L
import torchx.nn as nnx

HERE = Path(__file__).resolve().parent


def load_data() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Train and held-out splits (80/20, stratified, fixed seed), pixels scaled to [0, 1]."""
    digits = load_digits()
    images = digits.images.astype("float32") / 16.0
    x_train, x_test, y_train, y_test = train_test_split(
        images, digits.target, test_size=0.2, random_state=0, stratify=digits.target
    )
    as_images = lambda array: torch.tensor(array).unsqueeze(1)  # noqa: E731 - (N, 1, 8, 8)
    return as_images(x_train), torch.tensor(y_train), as_images(x_test), torch.tensor(y_test)


@torch.no_grad()
def accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    return float((model(x).argmax(dim=1) == y).float().mean())


def train(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, epochs: int, batch_size: int) -> None:
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=3e-3, total_steps=epochs * -(-len(x) // batch_size)
    )
    loss_function = torch.nn.CrossEntropyLoss()
    for epoch in range(1, epochs + 1):
        model.train()
        order = torch.randperm(len(x))
        correct, seen = 0, 0
        batches = order.split(batch_size)
        bar = tqdm(batches, desc=f"epoch {epoch:2d}/{epochs}", unit="batch", leave=False, disable=None)
        for batch in bar:
            logits = model(x[batch])
            loss = loss_function(logits, y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            correct += int((logits.argmax(dim=1) == y[batch]).sum())
            seen += len(batch)
            bar.set_postfix(loss=f"{loss.item():.3f}", acc=f"{correct / seen:.3f}")
        bar.close()
        print(f"epoch {epoch:2d}/{epochs}: loss {loss.item():.3f}, train accuracy {correct / seen:.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("spec", nargs="?", default=str(HERE / "digits_cnn.yaml"), help="the model's spec")
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="cpu", help="a TorchX device id: cpu, 0, cuda:1, ...")
    parser.add_argument("--checkpoint", default="digits_cnn.pt", help="where to save the trained model")
    parser.add_argument(
        "--min-accuracy", type=float, default=0.95, help="exit 1 below this held-out accuracy"
    )
    options = parser.parse_args()

    torch.manual_seed(0)
    start = time.perf_counter()
    with torchx.device_scope(options.device, fallback="cpu"):
        x_train, y_train, x_test, y_test = (t.to(torchx.current_scope().device) for t in load_data())
        model = torchx.build(torchx.load_spec(options.spec), (None, 1, 8, 8))
        print(torchx.summarize(model, (None, 1, 8, 8)))
        train(model, x_train, y_train, options.epochs, options.batch_size)
        held_out = accuracy(model, x_test, y_test)
        print(
            f"held-out accuracy {held_out:.4f} ({len(x_test)} images) after {time.perf_counter() - start:.1f} s"
        )

        model.save(options.checkpoint)
        checkpoint = nnx.read_checkpoint(options.checkpoint)
        assert checkpoint.spec is not None
        reloaded = torchx.build(L.Layer.from_spec(checkpoint.spec), (None, 1, 8, 8)).load(options.checkpoint)
        again = accuracy(reloaded, x_test, y_test)
        print(f"reloaded from {options.checkpoint}: held-out accuracy {again:.4f}")
    if again != held_out:
        print("the reloaded model scores differently", file=sys.stderr)
        return 1
    if held_out < options.min_accuracy:
        print(f"below the required accuracy {options.min_accuracy}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
