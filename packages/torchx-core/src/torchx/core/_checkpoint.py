"""Checkpoints: a model's state dict and, for TorchX layers, its spec, in one file.

A checkpoint is a ``torch.save`` of plain data::

    {"torchx_checkpoint": 1, "state_dict": {...}, "spec": {...} or None}

read back with ``torch.load(weights_only=True)``, which refuses files that
carry code; or, for a path ending in ``.safetensors``, a safetensors file of
the state dict whose metadata holds the marker and the spec as JSON text (no
pickle at all). Reading tells the two apart by their contents.

Loading checks the whole checkpoint against the model (spec, state-dict keys,
shapes, dtypes, and that every tensor is a dense one holding values), then
rehearses the load on a meta copy of the model where its modules' own loading
code could refuse more, before it copies a single tensor: a checkpoint that
does not fit leaves the model untouched.
Saving writes a temporary file beside the target and renames it over the
target only once it is complete on disk, so a failed save keeps the old file.
"""

from __future__ import annotations

import errno
import json
import os
import pickle
import re
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
from torch import nn

from torchx.core._errors import CheckpointError, LayerError, SpecError, TorchXError
from torchx.core._files import write_atomically, write_path_atomically
from torchx.core._helpers import module_device, require_built
from torchx.core._layer import Layer
from torchx.core._leaf import LeafLayer
from torchx.core._memory import available_memory, format_bytes
from torchx.core._pending import is_pending
from torchx.core._record import record_of
from torchx.core._safetensors_file import (
    is_safetensors,
    read_safetensors,
    read_safetensors_metadata,
    write_safetensors,
)
from torchx.core._shapes import meta_copy
from torchx.core._specs import from_spec, parse_spec, to_spec

__all__ = [
    "CHECKPOINT_FORMAT",
    "Checkpoint",
    "load_checkpoint",
    "load_model",
    "read_checkpoint",
    "read_checkpoint_spec",
    "read_weights",
    "save_checkpoint",
]

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
    in_order: bool = True
    """Whether ``state_dict`` lists the tensors in the order the model registered them: a
    ``torch.save`` keeps that order, a safetensors file stores its names sorted."""


def _spec_of(module: nn.Module) -> dict[str, Any] | None:
    if record_of(module) is None:
        return None
    try:
        return to_spec(module)
    except SpecError:
        return None  # a layer with no spec form (L.Lambda inside): weights only


def save_checkpoint(module: nn.Module, path: str | os.PathLike[str]) -> None:
    """Write ``module``'s state dict (and spec, when it has one) to ``path``:
    a safetensors file if ``path`` ends in ``.safetensors``, else a ``torch.save`` archive.

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
    state, spec = module.state_dict(), _spec_of(module)
    try:
        if os.fspath(path).lower().endswith(".safetensors"):
            metadata = {"format": "pt", _MARKER: str(CHECKPOINT_FORMAT)}
            if spec is not None:
                metadata["spec"] = json.dumps(spec, separators=(",", ":"))
            write_path_atomically(path, lambda filename: write_safetensors(state, metadata, filename))
        else:
            data = {_MARKER: CHECKPOINT_FORMAT, "state_dict": state, "spec": spec}
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

    Before anything is unpacked, the file's directory (a ``torch.save``
    archive's entries, a safetensors header) is read: a file whose tensors
    would take more than ``expected_bytes`` (what the model that loads it
    holds, plus a margin; default: the memory available) is refused.

    :raises CheckpointError: the file is damaged, carries objects that
        weights-only loading refuses, is not a TorchX checkpoint, or would
        unpack to more than it can hold.
    """
    return _validated(*_read_data(path, map_location, expected_bytes), os.fspath(path))


def read_checkpoint_spec(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The spec a TorchX checkpoint holds, without reading its tensors' values.

    :raises CheckpointError: the file is not a TorchX checkpoint, or holds
        weights only (saved from a plain torch module).
    """
    where = os.fspath(path)
    if not zipfile.is_zipfile(path) and is_safetensors(path):
        try:
            metadata = read_safetensors_metadata(path)
        except ValueError as error:
            raise CheckpointError(f"{where}: not readable as a safetensors file: {error}") from error
        data = _checkpoint_data({}, metadata, where)
    else:
        data, _ = _read_data(path, "meta", None)
    spec = _validated(data, True, where).spec
    if spec is None:
        raise CheckpointError(
            f"{where}: holds weights only (it was saved from a plain torch module), so it describes no "
            "model; construct the model and call model.load(path)"
        )
    return spec


def read_weights(
    path: str | os.PathLike[str],
    map_location: torch.device | str | None = None,
    *,
    expected_bytes: int | None = None,
) -> Checkpoint:
    """Read the tensors of any weights file, as safely as :func:`read_checkpoint`.

    Besides TorchX checkpoints, this reads a plain state dict saved with
    ``torch.save`` (torchvision's ``.pth`` files), a ``torch.save`` of a dict
    whose ``"state_dict"`` entry is one (Lightning's checkpoints, many
    training scripts), and any safetensors file. The spec is None unless the
    file is a TorchX checkpoint.
    """
    where = os.fspath(path)
    data, in_order = _read_data(path, map_location, expected_bytes)
    if isinstance(data, Mapping) and _MARKER in data:
        return _validated(data, in_order, where)
    if isinstance(data, Mapping) and isinstance(data.get("state_dict"), Mapping):
        data = data["state_dict"]
    if not isinstance(data, Mapping) or not all(
        isinstance(key, str) and isinstance(value, torch.Tensor) for key, value in data.items()
    ):
        entries = ", ".join(repr(key) for key in list(data)[:5]) if isinstance(data, Mapping) else ""
        raise CheckpointError(
            f"{where}: holds no state dict (a mapping of names to tensors, or a dict with a "
            f"'state_dict' entry); found a {type(data).__name__}" + (f" of {entries}" if entries else "")
        )
    return Checkpoint(dict(data), None, in_order)


def _read_data(
    path: str | os.PathLike[str], map_location: torch.device | str | None, expected_bytes: int | None
) -> tuple[Any, bool]:
    """What the file at ``path`` holds: a ``torch.save`` archive's object, or
    a safetensors file's tensors (in the checkpoint's layout when its metadata
    marks it as a TorchX checkpoint); and whether its tensors are in the model's
    order (not in a safetensors file: it sorts them by name)."""
    where = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", where)
    limit, what = _limit(expected_bytes, map_location)
    if zipfile.is_zipfile(path):
        _check_archive(path, limit, what)
        return _torch_load(path, map_location), True
    if not is_safetensors(path):
        raise CheckpointError(
            f"{where}: not readable as a checkpoint (damaged, truncated, or neither a torch.save "
            "nor a safetensors file)"
        )
    tensors, metadata = read_safetensors(path, map_location or "cpu", limit, what)
    return _checkpoint_data(tensors, metadata, where), False


def _checkpoint_data(tensors: dict[str, torch.Tensor], metadata: Mapping[str, str], where: str) -> Any:
    """A safetensors file's contents in the layout of a ``torch.save`` checkpoint,
    when its metadata marks it as a TorchX checkpoint; else its tensors."""
    if _MARKER not in metadata:
        return tensors
    version = metadata[_MARKER]
    spec_text = metadata.get("spec")
    try:
        spec = None if spec_text is None else parse_spec(spec_text, "json", where="spec")
    except SpecError as error:
        raise CheckpointError(f"{where}: the spec in its metadata is not readable: {error}") from error
    return {
        _MARKER: int(version) if version.isdigit() and len(version) < 10 else version,
        "state_dict": tensors,
        "spec": spec,
    }


def _torch_load(path: str | os.PathLike[str], map_location: torch.device | str | None) -> Any:
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
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


ARCHIVE_MARGIN = 16 << 20
"""Bytes an archive may unpack to beyond its tensors: the pickled structure and the spec."""


def _limit(expected_bytes: int | None, map_location: torch.device | str | None) -> tuple[int | None, str]:
    """The most bytes a checkpoint may unpack to, and whose limit that is."""
    if expected_bytes is not None:
        return expected_bytes + expected_bytes // 16 + ARCHIVE_MARGIN, "the model it is loaded into holds"
    return available_memory(torch.device(map_location or "cpu")), "the memory available"


def _check_archive(path: str | os.PathLike[str], limit: int | None, what: str) -> None:
    """Refuse a ``torch.save`` archive whose entries declare more bytes than
    ``limit``: a small compressed file may claim gigabytes."""
    where = os.fspath(path)
    try:
        with zipfile.ZipFile(path) as archive:
            declared = sum(entry.file_size for entry in archive.infolist())
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as error:
        raise CheckpointError(
            f"{where}: not readable as a checkpoint (damaged, truncated, or not written by torch.save)"
        ) from error
    if limit is not None and declared > limit:
        raise CheckpointError(
            f"{where}: refused: its entries unpack to {format_bytes(declared)}, more than {what} "
            f"({format_bytes(limit)}), though the file has {format_bytes(os.path.getsize(path))}"
        )


def _validated(data: object, in_order: bool, where: str) -> Checkpoint:
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
    not_data = _not_plain_data(spec)
    if not_data is not None:
        raise CheckpointError(f"{where}: its spec holds {not_data}; a spec is plain data")
    return Checkpoint(dict(state), spec, in_order)


def _not_plain_data(value: Any) -> str | None:
    """Where ``value`` holds something other than JSON-like data (a ``$.path``), or None.

    Without recursion and each list or dict once, however deep a file nests its
    data or however often it shares one list (a pickle can do both cheaply).
    """
    seen: set[int] = set()
    # Each entry: the item, and its place as (key or index, the parent's place); paths are
    # spelt out only for the answer, so a deep document costs no quadratic strings.
    stack: list[tuple[Any, tuple[Any, ...] | None]] = [(value, None)]
    while stack:
        item, place = stack.pop()
        if item is None or type(item) in (str, int, float, bool) or id(item) in seen:
            continue
        if type(item) is list:
            children: list[tuple[Any, Any]] = list(enumerate(item))
        elif type(item) is dict and all(type(key) is str for key in item):
            children = list(item.items())
        else:
            return f"a {type(item).__name__} at {_path_of(place)}"
        seen.add(id(item))
        stack.extend((child, (key, place)) for key, child in reversed(children))
    return None


def _path_of(place: tuple[Any, ...] | None) -> str:
    """``$.a[0].b`` for the place ``("b", (0, ("a", None)))``."""
    parts: list[str] = []
    while place is not None:
        key, place = place
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    return "$" + "".join(reversed(parts))


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


def _fit_problems(module: nn.Module, state: Mapping[str, torch.Tensor], partial: bool) -> list[str]:
    expected = module.state_dict(keep_vars=True)
    problems = [] if partial else [f"missing {key!r}" for key in expected if key not in state]
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
    on_meta = _on_meta(module, where)
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
    return load_state(module, checkpoint.state_dict, where, assign=on_meta)


def load_model(path: str | os.PathLike[str], map_location: torch.device | str = "cpu") -> nn.Module:
    """The model a TorchX checkpoint describes, built from its spec, with its weights.

    No code of the user's is needed: the layers come from the spec (through
    the installed plugins' registry, as any spec), the weights from the file.

    :raises CheckpointError: the file is not a TorchX checkpoint, or holds
        weights only (a plain torch module's checkpoint has no spec).
    :raises SpecError: the checkpoint's spec names a layer type that no
        installed plugin provides.
    """
    where = os.fspath(path)
    # The spec first, without the tensors' values: a layer type no plugin
    # provides is refused before gigabytes are read.
    model: nn.Module = from_spec(read_checkpoint_spec(path))
    checkpoint = read_checkpoint(path, map_location=map_location)
    with torch.device(map_location):
        return load_state(model, checkpoint.state_dict, where)


def load_state(
    module: _M, state: Mapping[str, torch.Tensor], where: str, *, assign: bool = False, partial: bool = False
) -> _M:
    """Load ``state`` into ``module`` only once all of it is known to fit: its
    keys, shapes, dtypes and values are checked, then the load is rehearsed on
    a meta copy. Unbuilt layers build from ``state``'s shapes. With
    ``partial``, entries of ``module`` that ``state`` lacks keep their values.

    :raises CheckpointError: ``state`` does not fit; ``module`` is unchanged.
    """
    problems = _fit_problems(module, state, partial)
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise CheckpointError(f"{where}: the checkpoint does not fit {type(module).__name__}: {shown}")
    _rehearse(module, state, where, partial)
    try:
        module.load_state_dict(state, strict=not partial, assign=assign)
    except LayerError as error:  # an unbuilt layer whose arguments the checkpoint does not fit
        raise CheckpointError(
            f"{where}: the checkpoint does not fit {type(module).__name__}: {error}"
        ) from error
    return module


def _loads_as_torch_does(module: nn.Module) -> bool:
    """Whether ``module`` loads its own tensors with torch.nn's code and no hooks."""
    if isinstance(module, Layer):
        plain = not isinstance(module, LeafLayer)  # an unbuilt leaf builds as it loads; a container does not
    else:
        plain = type(module)._load_from_state_dict.__module__.startswith("torch.nn.modules.")
    hooks = module._load_state_dict_pre_hooks or module._load_state_dict_post_hooks
    tensors = [*module._parameters.values(), *module._buffers.values()]
    return plain and not hooks and not any(is_pending(tensor) for tensor in tensors)


def _on_meta(module: nn.Module, where: str) -> bool:
    """Whether ``module``'s tensors are all on meta (built with ``device="meta"``)."""
    tensors = [*module.parameters(), *module.buffers()]
    on_meta = bool(tensors) and all(tensor.is_meta for tensor in tensors)
    if not on_meta and any(tensor.is_meta for tensor in tensors):
        raise CheckpointError(
            f"{where}: {type(module).__name__} has tensors both on meta and on a real device; "
            "load a checkpoint into a model built on one device"
        )
    return on_meta


def _state_bytes(module: nn.Module) -> int | None:
    """The bytes of ``module``'s state dict, or None while layers are unbuilt (unknown yet)."""
    total = 0
    for tensor in module.state_dict(keep_vars=True).values():
        if is_pending(tensor):
            return None
        total += tensor.numel() * tensor.element_size()
    return total


def _rehearse(module: nn.Module, state: Mapping[str, torch.Tensor], where: str, partial: bool) -> None:
    """Load ``state`` into a meta copy of ``module`` first: whatever its modules'
    own loading code refuses, it refuses before a real tensor is overwritten.

    A model whose modules all load with torch's own code (no hooks, nothing
    unbuilt) refuses only what :func:`_fit_problems` already checked (keys,
    shapes, dtypes, dense values), so it needs no rehearsal.
    """
    if all(_loads_as_torch_does(each) for each in module.modules()):
        return
    try:
        with meta_copy(module) as copied, torch.device("meta"):
            copied.load_state_dict(state, strict=not partial, assign=True)
    except Exception as error:
        raise CheckpointError(
            f"{where}: the checkpoint does not fit {type(module).__name__}: {error}"
        ) from error
