"""Weights and checkpoints on ResNet-50 (examples/vision_models.py), against what
a PyTorch user writes by hand.

- ``load_weights`` (pairing, the report, the checks and the rehearsal on meta)
  against ``load_state_dict(strict=True)``, from an in-memory module.
- A safetensors checkpoint written and read back through ``model.save``/``load``
  (every check before a copy) against safetensors' own ``save_file``/``load_file``
  with ``load_state_dict``, and against ``torch.save``/``torch.load(weights_only=True)``.
- ``torchx.load_model`` (the spec from the file, layers built from the file's
  shapes) against constructing the hand-written model and loading its checkpoint.
"""

from __future__ import annotations

import sys
import tempfile
from functools import partial
from pathlib import Path

import torch
from _timing import Result, interleaved_medians
from torch import nn

import torchx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))


def _save_and_load(model: nn.Module, path: Path) -> None:
    model.save(path)
    model.load(path)


def _safetensors_by_hand(model: nn.Module, path: Path) -> None:
    from safetensors.torch import load_file, save_file

    save_file(model.state_dict(), str(path))
    model.load_state_dict(load_file(str(path)))


def _torch_by_hand(model: nn.Module, path: Path) -> None:
    torch.save(model.state_dict(), path)
    model.load_state_dict(torch.load(path, weights_only=True))


def _native_model_from(native: type[nn.Module], path: Path) -> nn.Module:
    model = native()
    model.load_state_dict(torch.load(path, weights_only=True))
    return model


def bench_weights(quick: bool) -> list[Result]:
    try:
        import vision_models
    except ImportError:
        print("weights: torchx-functional is not installed; skipped")
        return []
    rounds = 3 if quick else 7
    make, native, _ = vision_models.MODELS["resnet50"]
    model, reference = make(), native()
    results = []
    timed = interleaved_medians(
        partial(torchx.load_weights, model, reference),
        partial(model.load_state_dict, reference.state_dict(), strict=True),
        rounds=rounds,
        per_round=1,
    )
    results.append(Result("weights: resnet50 load_weights vs load_state_dict", *timed, 1.5))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder)
        timed = interleaved_medians(
            partial(_save_and_load, model, path / "torchx.safetensors"),
            partial(_safetensors_by_hand, reference, path / "native.safetensors"),
            rounds=rounds,
            per_round=1,
        )
        results.append(Result("weights: resnet50 save+load .safetensors vs by hand", *timed, 1.5))
        timed = interleaved_medians(
            partial(_save_and_load, model, path / "torchx.safetensors"),
            partial(_torch_by_hand, reference, path / "native.pt"),
            rounds=rounds,
            per_round=1,
        )
        results.append(Result("weights: resnet50 save+load .safetensors vs torch.save", *timed, None))
        timed = interleaved_medians(
            partial(torchx.load_model, path / "torchx.safetensors"),
            partial(_native_model_from, native, path / "native.pt"),
            rounds=rounds,
            per_round=1,
        )
        results.append(Result("weights: resnet50 load_model vs constructor+load", *timed, 1.5))
    return results
