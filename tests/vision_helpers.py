"""What the example tests share: where the examples and the test data are (importing
this puts examples/ on ``sys.path``), and the check that a TorchX vision model
computes what its hand-written reference does."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DATA = Path(__file__).resolve().parent / "data"

if str(EXAMPLES) not in sys.path:  # examples/ is not a package: tests import its scripts as modules
    sys.path.insert(0, str(EXAMPLES))


def torchvision_keys(name: str) -> list[str]:
    """torchvision's state-dict keys for ``name`` (its module structure, written out in tests/data)."""
    return (DATA / f"torchvision_{name}_keys.txt").read_text().split()


def assert_same_outputs(
    model: nn.Module, reference: nn.Module, image: torch.Tensor, atol: float = 0.0
) -> torch.Tensor:
    """``model`` and ``reference``, holding the same weights, give the same
    logits for ``image`` in eval mode (``atol=0``: bit for bit); returns them."""
    model.eval()
    reference.eval()
    with torch.no_grad():
        logits = model(image)
        torch.testing.assert_close(logits, reference(image), rtol=0, atol=atol)
    return logits
