"""Reading a ``.keras`` archive as data: its ``config.json`` and its weights.

A ``.keras`` file is a zip holding ``config.json`` (the architecture),
``metadata.json`` and ``model.weights.h5`` (the variables, one HDF5 group per
layer). Nothing here imports Keras or runs anything the file names: the
config is parsed as JSON, the weights are read as numeric arrays.

Refused, before anything is read from them: member paths that are absolute or
climb out with ``..``; members whose size exceeds the limits or whose
compression ratio only a zip bomb has; HDF5 external links, soft links that
leave the file, virtual datasets and datasets stored in external files.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from torchx.plugin import SpecError

__all__ = ["KerasArchive", "WeightGroup", "read_archive"]

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.weights.h5"
MAX_CONFIG_BYTES = 64 * 2**20
"""A config larger than this is not an architecture (ResNet-152's is 1.3 MB)."""
MAX_WEIGHTS_BYTES = 16 * 2**30
MAX_RATIO = 200
"""Deflate of real weights gains at most a few times; of zeros (fresh
BatchNorm statistics) about 1000x, but never on megabytes of a real model."""
RATIO_CHECKED_FROM = 2**20
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
MAX_GROUP_DEPTH = 64
"""Keras nests a weights group per model, wrapper and cell: a handful deep."""


@dataclass
class WeightGroup:
    """One HDF5 group of the weights file: its ``vars`` in order, and its subgroups."""

    path: str
    arrays: list[np.ndarray[Any, Any]] = field(default_factory=list)
    groups: dict[str, WeightGroup] = field(default_factory=dict)

    def nbytes(self) -> int:
        """The bytes of its arrays and of every subgroup's."""
        return sum(array.nbytes for array in self.arrays) + sum(
            group.nbytes() for group in self.groups.values()
        )

    def group(self, name: str) -> WeightGroup:
        """The subgroup ``name`` (an empty group where the file has none: a layer without variables)."""
        return self.groups.get(name) or WeightGroup(f"{self.path}/{name}")


@dataclass(frozen=True)
class KerasArchive:
    """What a ``.keras`` file holds: its model config (a JSON object) and its weights."""

    source: str
    config: dict[str, Any]
    weights: WeightGroup
    keras_version: str | None


def read_archive(path: str | Path) -> KerasArchive:
    """Read the ``.keras`` file at ``path``; :class:`SpecError` for anything that is not a safe Keras 3 archive."""
    source = str(path)
    try:
        archive = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise SpecError(source, "no such file") from None
    except (zipfile.BadZipFile, OSError) as error:
        if _is_hdf5(path):
            raise SpecError(
                source,
                "is an HDF5 file (Keras 2's .h5 model format), not a Keras 3 .keras archive: load it with "
                "Keras and save it again with model.save('model.keras')",
            ) from None
        raise SpecError(source, f"is not a .keras archive (a zip file): {error}") from None
    with archive:
        members = {_checked_member(source, info).filename: info for info in archive.infolist()}
        if CONFIG_NAME not in members:
            legacy = " (a Keras 2 SavedModel or .h5 file? save it again with Keras 3's model.save('m.keras'))"
            raise SpecError(source, f"has no {CONFIG_NAME}: not a Keras 3 .keras archive{legacy}")
        config_bytes = _read_member(source, archive, members[CONFIG_NAME], MAX_CONFIG_BYTES)
        metadata = _json(source, "metadata.json", _read_member(source, archive, members["metadata.json"], 2**20)) \
            if "metadata.json" in members else {}  # fmt: skip
        config = _json(source, CONFIG_NAME, config_bytes)
        if not isinstance(config, dict):
            raise SpecError(f"{source}:{CONFIG_NAME}", "is not a JSON object (a Keras model config)")
        if WEIGHTS_NAME in members:
            weights = read_weights(
                source, _read_member(source, archive, members[WEIGHTS_NAME], MAX_WEIGHTS_BYTES)
            )
        else:
            weights = WeightGroup("")
    version = metadata.get("keras_version") if isinstance(metadata, dict) else None
    return KerasArchive(source, config, weights, version if isinstance(version, str) else None)


def _is_hdf5(path: str | Path) -> bool:
    try:
        with open(path, "rb") as file:
            return file.read(len(HDF5_SIGNATURE)) == HDF5_SIGNATURE
    except OSError:
        return False


def _checked_member(source: str, info: zipfile.ZipInfo) -> zipfile.ZipInfo:
    name = info.filename
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or (parts and ":" in parts[0]) or ".." in parts:
        raise SpecError(
            source, f"the archive member {name!r} points outside the archive (absolute or '..' path)"
        )
    if info.file_size >= RATIO_CHECKED_FROM and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        raise SpecError(
            source,
            f"the archive member {name!r} expands {info.compress_size:,} bytes to {info.file_size:,} "
            f"(over {MAX_RATIO}x): refused as a zip bomb",
        )
    return info


def _read_member(source: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """The member's bytes, never more than ``limit`` whatever its header claims."""
    if info.file_size > limit:
        raise SpecError(
            source, f"the archive member {info.filename!r} is {info.file_size:,} bytes; at most {limit:,}"
        )
    try:
        with archive.open(info) as member:
            data = member.read(info.file_size + 1)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as error:
        raise SpecError(source, f"the archive member {info.filename!r} is corrupt: {error}") from None
    if len(data) != info.file_size:
        raise SpecError(
            source, f"the archive member {info.filename!r} does not have the size its header says"
        )
    return data


def _json(source: str, name: str, data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise SpecError(f"{source}:{name}", f"is not JSON: {error}") from None
    except RecursionError:
        raise SpecError(f"{source}:{name}", "is nested too deeply to be a model config") from None


def read_weights(source: str, data: bytes) -> WeightGroup:
    """The weights file's groups and arrays, checked before any dataset is read."""
    import h5py

    where = f"{source}:{WEIGHTS_NAME}"
    try:
        file = h5py.File(io.BytesIO(data), "r")
    except (OSError, ValueError) as error:
        raise SpecError(where, f"is not an HDF5 file: {error}") from None
    with file:
        _refuse_links(where, file, len(data))
        return _read_group(where, file, "")


def _refuse_links(where: str, file: Any, size: int) -> None:
    """Refuse every link that reaches outside the file, every dataset stored outside it or compressed,
    data the file cannot hold (HDF5 fills unwritten data: a tiny file can declare terabytes), and
    nesting deeper than Keras writes (a hard-link cycle is infinitely deep)."""
    import h5py

    declared = 0
    stack = [(file, 0)]
    while stack:
        group, depth = stack.pop()
        if depth > MAX_GROUP_DEPTH:
            raise SpecError(
                where, f"{group.name} is nested over {MAX_GROUP_DEPTH} groups deep (or in a cycle): refused"
            )
        for name in group:
            link = group.get(name, getlink=True)
            path = f"{group.name.rstrip('/')}/{name}"
            if isinstance(link, h5py.ExternalLink):
                raise SpecError(
                    where,
                    f"{path} is an external link to {link.filename!r}: refused (weights stay in the file)",
                )
            if isinstance(link, h5py.SoftLink):
                raise SpecError(where, f"{path} is a soft link to {link.path!r}: refused (Keras writes none)")
            item = group[name]
            if isinstance(item, h5py.Group):
                stack.append((item, depth + 1))
                continue
            if not isinstance(item, h5py.Dataset):
                raise SpecError(where, f"{path} is a {type(item).__name__}, not a group or dataset")
            if item.is_virtual:
                raise SpecError(where, f"{path} is a virtual dataset: refused (it reads other files)")
            if item.external:
                raise SpecError(where, f"{path} is stored in external files: refused")
            if item.compression is not None or item.scaleoffset is not None:
                raise SpecError(where, f"{path} is compressed: refused (Keras stores weights uncompressed)")
            declared += item.size * item.dtype.itemsize
            if declared > size:
                raise SpecError(
                    where,
                    f"its datasets declare over {declared:,} bytes, more than the file's {size:,}: refused "
                    "(data the file does not hold)",
                )


def _read_group(where: str, group: Any, path: str) -> WeightGroup:
    import h5py

    result = WeightGroup(path)
    for name in group:
        item = group[name]
        if name == "vars" and isinstance(item, h5py.Group):
            result.arrays = [_array(where, item, str(index)) for index in range(len(item))]
        elif isinstance(item, h5py.Group):
            result.groups[name] = _read_group(where, item, f"{path}/{name}")
    return result


def _array(where: str, vars_group: Any, index: str) -> np.ndarray[Any, Any]:
    import h5py

    dataset = vars_group.get(index)
    if not isinstance(dataset, h5py.Dataset):
        raise SpecError(
            where, f"{vars_group.name}: expected variables named 0..{len(vars_group) - 1}, {index} is missing"
        )
    if dataset.dtype.kind not in "fiub":
        raise SpecError(where, f"{dataset.name} holds {dataset.dtype}, not numbers")
    return np.asarray(dataset[()])
