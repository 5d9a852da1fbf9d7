"""Checkpoints: a model's state dict and, for TorchX layers, its spec, in one file.

A checkpoint is a ``torch.save`` of plain data::

    {"torchx_checkpoint": 1, "state_dict": {...}, "spec": {...} or None}

and is read back with ``torch.load(weights_only=True)``, which refuses files
that carry code. Loading checks the whole checkpoint against the model (spec,
state-dict keys, shapes, dtypes, and that every tensor is a dense one holding
values), then rehearses the load on a meta copy of the model, before it copies
a single tensor: a checkpoint that does not fit leaves the model untouched.
Saving writes a temporary file beside the target and renames it over the
target only once it is complete on disk, so a failed save keeps the old file.
"""

from __future__ import annotations

import errno
import os
import pickle
import re
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
from torch import nn

from torchx.core.errors import CheckpointError, LayerError, SpecError, TorchXError
from torchx.core.files import write_atomically
from torchx.core.helpers import module_device, require_built
from torchx.core.memory import available_memory, format_bytes
from torchx.core.pending import is_pending
from torchx.core.shapes import meta_copy

__all__ = ["CHECKPOINT_FORMAT", "Checkpoint", "load_checkpoint", "read_checkpoint", "save_checkpoint"]

CHECKPOINT_FORMAT = 1
"""The checkpoint format this TorchX writes; it reads this version and older."""

_MARKER = "torchx_checkpoint"
_UNSUPPORTED_GLOBAL = re.compile(r"Unsupported global: GLOBAL (\S+)")
"""How torch's weights-only unpickler names a callable the file asks for."""

_M = TypeVar("_M", bound=nn.Module)


@dataclass(frozen=True)
class Checkpoint:
    """What a checkpoint file holds."""

    state_dict: dict[str, torch.Tensor]
    spec: dict[str, Any] | None
    """The model's spec, when it is a TorchX layer whose spec can be written."""


def _spec_of(module: nn.Module) -> dict[str, Any] | None:
    from torchx.core.layer import record_of
    from torchx.core.specs import to_spec

    if record_of(module) is None:
        return None
    try:
        return to_spec(module)
    except SpecError:
        return None  # a layer with no spec form (L.Lambda inside): weights only


def save_checkpoint(module: nn.Module, path: str | os.PathLike[str]) -> None:
    """Write ``module``'s state dict (and spec, when it has one) to ``path``.

    The file at ``path`` is replaced only by a complete checkpoint: if writing
    fails (a full disk, a size limit, an interrupt), the old file stays.

    :raises CheckpointError: the checkpoint could not be written.
    """
    require_built(module, "save")
    if any(tensor.is_meta for tensor in module.state_dict().values()):
        raise CheckpointError(
            f"{os.fspath(path)}: {type(module).__name__} holds meta tensors (it was built with "
            "device='meta'), which have no values to save; build it on a real device, or load weights into it"
        )
    data = {_MARKER: CHECKPOINT_FORMAT, "state_dict": module.state_dict(), "spec": _spec_of(module)}
    try:
        write_atomically(path, lambda file: torch.save(data, file))
    except OSError as error:
        raise CheckpointError(
            f"{os.fspath(path)}: writing failed, so the old file is kept: {error.strerror or error}"
        ) from error


def read_checkpoint(
    path: str | os.PathLike[str],
    map_location: torch.device | str | None = None,
    *,
    expected_bytes: int | None = None,
) -> Checkpoint:
    """Read a checkpoint written by ``save`` without running any code from it.

    Before anything is unpacked, the archive's directory is read: a file whose
    entries would unpack to more than ``expected_bytes`` (what the model that
    loads it holds, plus a margin; default: the memory available) is refused.

    :raises CheckpointError: the file is damaged, carries objects that
        weights-only loading refuses, is not a TorchX checkpoint, or would
        unpack to more than it can hold.
    """
    _check_archive(path, expected_bytes, map_location)
    try:
        data = torch.load(path, map_location=map_location, weights_only=True)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except pickle.UnpicklingError as error:
        found = _UNSUPPORTED_GLOBAL.search(str(error))
        if found is None:
            raise CheckpointError(
                f"{os.fspath(path)}: not readable as a checkpoint (damaged, or not a torch.save file)"
            ) from error
        raise CheckpointError(
            f"{os.fspath(path)}: refused: it calls {found.group(1)}, which weights-only loading does not allow "
            "(a file that runs code when loaded), so it is not a TorchX checkpoint"
        ) from error
    except Exception as error:
        raise CheckpointError(
            f"{os.fspath(path)}: not readable as a checkpoint (truncated, or not written by torch.save): "
            f"{type(error).__name__}: {error}"
        ) from error
    return _validated(data, os.fspath(path))


ARCHIVE_MARGIN = 16 << 20
"""Bytes an archive may unpack to beyond its tensors: the pickled structure and the spec."""


def _check_archive(
    path: str | os.PathLike[str], expected_bytes: int | None, map_location: torch.device | str | None
) -> None:
    """Refuse a file that is not a ``torch.save`` zip archive, or whose entries
    declare more bytes than ``expected_bytes`` (plus a margin) or than the
    memory available: a small compressed file may claim gigabytes."""
    where = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", where)
    try:
        with zipfile.ZipFile(path) as archive:
            declared = sum(entry.file_size for entry in archive.infolist())
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as error:
        raise CheckpointError(
            f"{where}: not readable as a checkpoint (damaged, truncated, or not written by torch.save)"
        ) from error
    if expected_bytes is not None:
        limit, what = (
            expected_bytes + expected_bytes // 16 + ARCHIVE_MARGIN,
            "the model it is loaded into holds",
        )
    else:
        limit = available_memory(torch.device(map_location or "cpu"))  # type: ignore[assignment]
        what = "the memory available"
    if limit is not None and declared > limit:
        raise CheckpointError(
            f"{where}: refused: its entries unpack to {format_bytes(declared)}, more than {what} "
            f"({format_bytes(limit)}), though the file has {format_bytes(os.path.getsize(path))}"
        )


def _validated(data: object, where: str) -> Checkpoint:
    if not isinstance(data, Mapping) or _MARKER not in data:
        raise CheckpointError(f"{where}: not a TorchX checkpoint (write one with model.save(path))")
    version = data[_MARKER]
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= CHECKPOINT_FORMAT:
        raise CheckpointError(
            f"{where}: checkpoint format {version!r} is not one this TorchX reads (1 to {CHECKPOINT_FORMAT})"
        )
    state = data.get("state_dict")
    if not isinstance(state, Mapping) or not all(
        isinstance(key, str) and isinstance(value, torch.Tensor) for key, value in state.items()
    ):
        raise CheckpointError(f"{where}: its state_dict is not a mapping of names to tensors")
    spec = data.get("spec")
    if spec is not None and not isinstance(spec, dict):
        raise CheckpointError(f"{where}: its spec is {type(spec).__name__}, not a dict")
    not_data = _not_plain_data(spec, "$")
    if not_data is not None:
        raise CheckpointError(f"{where}: its spec holds {not_data}; a spec is plain data")
    return Checkpoint(dict(state), spec)


def _not_plain_data(value: Any, where: str) -> str | None:
    """Where ``value`` holds something other than JSON-like data, or None."""
    if value is None or type(value) in (str, int, float, bool):
        return None
    if type(value) is list:
        items: Any = ((f"{where}[{index}]", item) for index, item in enumerate(value))
    elif type(value) is dict and all(type(key) is str for key in value):
        items = ((f"{where}.{key}", item) for key, item in value.items())
    else:
        return f"a {type(value).__name__} at {where}"
    for place, item in items:
        found = _not_plain_data(item, place)
        if found is not None:
            return found
    return None


def _first_difference(mine: Any, theirs: Any, where: str = "$") -> str | None:
    """Where two spec documents first differ, as a ``$.path``, or None."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        for key in dict.fromkeys([*mine, *theirs]):
            if key not in mine or key not in theirs:
                return f"{where}.{key}"
            found = _first_difference(mine[key], theirs[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(mine, list) and isinstance(theirs, list):
        for index, (a, b) in enumerate(zip(mine, theirs, strict=False)):
            found = _first_difference(a, b, f"{where}[{index}]")
            if found:
                return found
        return None if len(mine) == len(theirs) else f"{where}[{min(len(mine), len(theirs))}]"
    return None if mine == theirs else where


def _unloadable(tensor: torch.Tensor) -> str | None:
    """Why ``tensor`` cannot be copied into a parameter or buffer, or None."""
    if type(tensor) not in (torch.Tensor, nn.Parameter):
        return f"a {type(tensor).__name__}, not a plain tensor"
    if tensor.layout is not torch.strided or tensor.is_nested:
        return f"a {tensor.layout} tensor, not a dense one"
    if tensor.is_meta:
        return "a meta tensor, which holds no values"
    if tensor.is_quantized:
        return "a quantized tensor"
    if tensor.numel() and any(stride < 0 for stride in tensor.stride()):
        return "a tensor with negative strides"
    extent = 1 + sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride(), strict=True))
    needed = (tensor.storage_offset() + extent) * tensor.element_size() if tensor.numel() else 0
    if needed > tensor.untyped_storage().nbytes():
        return "a tensor reaching past the end of its storage"
    return None


def _fit_problems(module: nn.Module, state: Mapping[str, torch.Tensor]) -> list[str]:
    expected = module.state_dict(keep_vars=True)
    problems = [f"missing {key!r}" for key in expected if key not in state]
    problems += [f"unexpected {key!r}" for key in state if key not in expected]
    problems += [
        f"{key!r} is {problem}" for key, given in state.items() if (problem := _unloadable(given)) is not None
    ]
    for key, tensor in expected.items():
        given = state.get(key)
        if is_pending(tensor):
            continue  # an unbuilt layer: it builds from the checkpoint's shapes, which it checks
        if given is not None and (given.shape != tensor.shape or given.dtype != tensor.dtype):
            problems.append(
                f"{key!r} is {tuple(given.shape)} {given.dtype} in the checkpoint, "
                f"{tuple(tensor.shape)} {tensor.dtype} in the model"
            )
    return problems


def load_checkpoint(module: _M, path: str | os.PathLike[str]) -> _M:
    """Load the checkpoint at ``path`` into ``module``; returns ``module``.

    Unbuilt layers in ``module`` build from the checkpoint's shapes first. A
    model built with ``device="meta"`` takes the checkpoint's tensors (on the
    CPU) in place of its meta ones.

    :raises CheckpointError: the file is not a TorchX checkpoint, or does not
        fit ``module`` (another spec, other keys, shapes or dtypes, tensors
        that hold no values). The module is unchanged then.
    """
    where = os.fspath(path)
    tensors = [*module.parameters(), *module.buffers()]
    on_meta = bool(tensors) and all(tensor.is_meta for tensor in tensors)
    if not on_meta and any(tensor.is_meta for tensor in tensors):
        raise CheckpointError(
            f"{where}: {type(module).__name__} has tensors both on meta and on a real device; "
            "load a checkpoint into a model built on one device"
        )
    try:
        location: torch.device | str = "cpu" if on_meta else module_device(module)
    except TorchXError:
        location = "cpu"
    checkpoint = read_checkpoint(path, map_location=location, expected_bytes=_state_bytes(module))
    mine = _spec_of(module)
    if mine is not None and checkpoint.spec is not None:
        difference = _first_difference(mine, checkpoint.spec)
        if difference is not None:
            raise CheckpointError(
                f"{where}: the checkpoint is of another model: its spec differs from this model's at "
                f"{difference}"
            )
    problems = _fit_problems(module, checkpoint.state_dict)
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise CheckpointError(f"{where}: the checkpoint does not fit {type(module).__name__}: {shown}")
    _rehearse(module, checkpoint.state_dict, where)
    try:
        module.load_state_dict(checkpoint.state_dict, assign=on_meta)
    except LayerError as error:  # an unbuilt layer whose arguments the checkpoint does not fit
        raise CheckpointError(
            f"{where}: the checkpoint does not fit {type(module).__name__}: {error}"
        ) from error
    return module


def _state_bytes(module: nn.Module) -> int | None:
    """The bytes of ``module``'s state dict, or None while layers are unbuilt (unknown yet)."""
    total = 0
    for tensor in module.state_dict(keep_vars=True).values():
        if is_pending(tensor):
            return None
        total += tensor.numel() * tensor.element_size()
    return total


def _rehearse(module: nn.Module, state: Mapping[str, torch.Tensor], where: str) -> None:
    """Load ``state`` into a meta copy of ``module`` first: whatever its modules'
    own loading code refuses, it refuses before a real tensor is overwritten."""
    try:
        with meta_copy(module) as copied, torch.device("meta"):
            copied.load_state_dict(state, assign=True)
    except Exception as error:
        raise CheckpointError(
            f"{where}: the checkpoint does not fit {type(module).__name__}: {error}"
        ) from error
