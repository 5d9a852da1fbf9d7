"""Checkpoints in the safetensors format: tensors without any pickle, text metadata.

A safetensors file is an 8-byte little-endian header length, a JSON header
(each tensor's dtype, shape and byte range, and a ``__metadata__`` object of
strings) and the raw tensor bytes. Nothing in it can run code when read.
TorchX keeps a checkpoint's marker and spec in the metadata.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Mapping

import torch

from torchx.core._errors import CheckpointError
from torchx.core._memory import format_bytes

__all__ = [
    "MAX_HEADER_BYTES",
    "is_safetensors",
    "read_safetensors",
    "read_safetensors_metadata",
    "write_safetensors",
]

MAX_HEADER_BYTES = 100 << 20
"""Longest header read (the safetensors library's own limit)."""

_LENGTH = struct.Struct("<Q")


def is_safetensors(path: str | os.PathLike[str]) -> bool:
    """Whether the file at ``path`` starts like a safetensors file (its header
    length fits the file, and the header opens a JSON object)."""
    size = os.path.getsize(path)
    with open(path, "rb") as file:
        start = file.read(_LENGTH.size + 1)
    if len(start) <= _LENGTH.size:
        return False
    (length,) = _LENGTH.unpack(start[: _LENGTH.size])
    return length <= min(size - _LENGTH.size, MAX_HEADER_BYTES) and start[_LENGTH.size :] == b"{"


def write_safetensors(state: Mapping[str, torch.Tensor], metadata: Mapping[str, str], filename: str) -> None:
    """Write ``state`` and ``metadata`` to the safetensors file ``filename``.

    Tensors that share memory (tied weights) are written once each, as copies:
    the format stores every name's bytes separately.
    """
    from safetensors.torch import save_file

    seen: set[tuple[int, int]] = set()
    tensors: dict[str, torch.Tensor] = {}
    for name, tensor in state.items():
        tensor = tensor.detach()
        key = (tensor.untyped_storage().data_ptr(), tensor.untyped_storage().nbytes())
        shared = key in seen and tensor.numel() > 0
        seen.add(key)
        tensors[name] = tensor.clone() if shared else tensor.contiguous()
    try:
        save_file(tensors, filename, metadata=dict(metadata))
    except (ValueError, TypeError) as error:  # a dtype the format has no name for
        raise CheckpointError(f"safetensors cannot hold this state dict: {error}") from error


def read_safetensors(
    path: str | os.PathLike[str], map_location: torch.device | str, limit: int | None, what: str
) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """The tensors and metadata of the safetensors file at ``path``.

    :param limit: most bytes the tensors may hold (``what`` says whose limit it
        is); a larger file is refused before a tensor is read.
    :raises CheckpointError: a damaged file, or one over ``limit``.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    where = os.fspath(path)
    try:
        length, metadata = _header(path)
    except ValueError as error:
        raise CheckpointError(
            f"{where}: not readable as a safetensors file (damaged header): {error}"
        ) from error
    data_bytes = os.path.getsize(path) - length - _LENGTH.size
    if limit is not None and data_bytes > limit:
        raise CheckpointError(
            f"{where}: refused: its tensors hold {format_bytes(data_bytes)}, more than {what} "
            f"({format_bytes(limit)})"
        )
    try:
        tensors = load_file(where, device=str(torch.device(map_location)))
    except (SafetensorError, ValueError, OSError) as error:
        if isinstance(error, (FileNotFoundError, PermissionError)):
            raise
        raise CheckpointError(
            f"{where}: not readable as a safetensors file (damaged or truncated): {error}"
        ) from error
    return tensors, metadata


def read_safetensors_metadata(path: str | os.PathLike[str]) -> dict[str, str]:
    """The ``__metadata__`` of the safetensors file at ``path`` (no tensor is read).

    :raises ValueError: the header is not JSON, or its metadata not strings.
    """
    return _header(path)[1]


def _header(path: str | os.PathLike[str]) -> tuple[int, dict[str, str]]:
    """The header's length in bytes, and its ``__metadata__``.

    :raises ValueError: the header is not JSON (or nests deeper than Python's
        stack allows), or its metadata not strings.
    """
    with open(path, "rb") as file:
        (length,) = _LENGTH.unpack(file.read(_LENGTH.size))
        text = file.read(length)
    try:
        header = json.loads(text)
    except RecursionError:
        raise ValueError("its JSON header nests too deeply to read") from None
    metadata = header.get("__metadata__") or {} if isinstance(header, dict) else None
    if not isinstance(metadata, dict) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in metadata.items()
    ):
        raise ValueError("its __metadata__ is not an object of strings")
    return int(length), metadata
