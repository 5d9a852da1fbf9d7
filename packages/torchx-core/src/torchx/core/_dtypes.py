"""Torch dtypes by name, as specs and the command line write them."""

from __future__ import annotations

from collections.abc import Mapping

import torch

__all__ = ["DTYPES", "dtype_name", "dtype_named"]

DTYPES: Mapping[str, torch.dtype] = {
    name: value
    for name, value in vars(torch).items()
    if isinstance(value, torch.dtype) and not name.startswith("_")
}
"""Every public torch dtype by each of its names (``float32``, ``float``...)."""


def dtype_named(text: object) -> torch.dtype | None:
    """The dtype ``text`` names (``"float32"``, ``"torch.bfloat16"``, ``"long"``),
    or None (for any other text, or a value that is not a string)."""
    return DTYPES.get(text.removeprefix("torch.")) if isinstance(text, str) else None


def dtype_name(dtype: torch.dtype) -> str:
    """The name specs write for ``dtype``: ``"float32"``, not ``"float"``."""
    return str(dtype).removeprefix("torch.")
