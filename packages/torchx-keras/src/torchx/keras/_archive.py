"""Reading a ``.keras`` archive as data: its ``config.json`` and its weights.

A ``.keras`` file is a zip holding ``config.json`` (the architecture),
``metadata.json`` and ``model.weights.h5`` (the variables, one HDF5 group per
layer). Nothing here imports Keras or runs anything the file names: the
config is parsed as JSON, the weights are read as numeric arrays.

Refused, before anything is read from them: member paths that are absolute or
climb out with ``..``; members whose size exceeds the limits, whose compression
ratio only a zip bomb has (measured on the bytes the archive really holds for
the member, not on its header's claim) or whose header claims more compressed
bytes than the archive holds; HDF5 external and soft links, virtual datasets,
datasets stored in external files, and a second hard link to any group or
dataset (every object is visited once).
"""

from __future__ import annotations

import bisect
import io
import json
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

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
READ_CHUNK = 2**20
LOCAL_HEADER = struct.Struct("<4s22xHH")
"""A zip member's local header: its signature, then (after 22 bytes) the lengths of its name and extra field."""
LOCAL_SIGNATURE = b"PK\x03\x04"
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
        infos = archive.infolist()
        stored = _stored_sizes(source, archive, infos)
        members = {_checked_member(source, info, stored[info.header_offset]).filename: info for info in infos}
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


def _stored_sizes(source: str, archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo]) -> dict[int, int]:
    """For each member's header offset, the bytes its compressed data really spans in the file: from the
    end of its local header to the next member's header (or the end of the file), whatever its headers say."""
    file: IO[bytes] | None = archive.fp
    if file is None:
        raise SpecError(source, "the archive is closed")
    end = file.seek(0, io.SEEK_END)
    offsets = sorted({info.header_offset for info in infos} | {end})
    sizes = {}
    for info in infos:
        file.seek(info.header_offset)
        header = file.read(LOCAL_HEADER.size)
        if len(header) < LOCAL_HEADER.size or header[:4] != LOCAL_SIGNATURE:
            raise SpecError(
                source, f"the archive member {info.filename!r} is corrupt: no local header at its offset"
            )
        _, name_length, extra_length = LOCAL_HEADER.unpack(header)
        data_start = info.header_offset + LOCAL_HEADER.size + name_length + extra_length
        following = offsets[bisect.bisect_right(offsets, info.header_offset)]  # the header is before the end
        sizes[info.header_offset] = max(following - data_start, 0)
    return sizes


def _checked_member(source: str, info: zipfile.ZipInfo, stored: int) -> zipfile.ZipInfo:
    """``info`` if its path stays in the archive and its sizes are possible from the ``stored`` bytes it spans."""
    name = info.filename
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or (parts and ":" in parts[0]) or ".." in parts:
        raise SpecError(
            source, f"the archive member {name!r} points outside the archive (absolute or '..' path)"
        )
    compressed = min(info.compress_size, stored)  # zipfile reads at most compress_size bytes
    if info.file_size >= RATIO_CHECKED_FROM and info.file_size > MAX_RATIO * max(compressed, 1):
        raise SpecError(
            source,
            f"the archive member {name!r} expands {compressed:,} bytes to {info.file_size:,} "
            f"(over {MAX_RATIO}x): refused as a zip bomb",
        )
    if info.compress_size > stored:
        raise SpecError(
            source,
            f"the archive member {name!r} claims {info.compress_size:,} compressed bytes; the archive holds "
            f"{stored:,}: refused (its header lies)",
        )
    return info


def _read_member(source: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """The member's bytes, inflated a chunk at a time and never more than its declared size (at most
    ``limit``, and at most :data:`MAX_RATIO` times the bytes it really spans: :func:`_checked_member`)."""
    if info.file_size > limit:
        raise SpecError(
            source, f"the archive member {info.filename!r} is {info.file_size:,} bytes; at most {limit:,}"
        )
    chunks = []
    inflated = 0
    try:
        with archive.open(info) as member:
            while inflated <= info.file_size and (chunk := member.read(READ_CHUNK)):
                inflated += len(chunk)
                chunks.append(chunk)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as error:
        raise SpecError(source, f"the archive member {info.filename!r} is corrupt: {error}") from None
    if inflated != info.file_size:
        raise SpecError(
            source, f"the archive member {info.filename!r} does not have the size its header says"
        )
    return b"".join(chunks)


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
    data the file cannot hold (HDF5 fills unwritten data: a tiny file can declare terabytes), nesting
    deeper than Keras writes, and a second hard link to any object (a DAG of links has exponentially
    many paths, a cycle infinitely many): each object is visited once, so the file is a tree after this."""
    import h5py

    declared = 0
    first_paths = {_address(file): "/"}
    stack = [(file, "", 0)]
    while stack:
        group, group_path, depth = stack.pop()
        if depth > MAX_GROUP_DEPTH:
            raise SpecError(
                where,
                f"{group_path} is {depth} groups deep: refused (Keras nests a handful, at most {MAX_GROUP_DEPTH})",
            )
        for name in group:
            link = group.get(name, getlink=True)
            path = f"{group_path}/{name}"
            if isinstance(link, h5py.ExternalLink):
                raise SpecError(
                    where,
                    f"{path} is an external link to {link.filename!r}: refused (weights stay in the file)",
                )
            if isinstance(link, h5py.SoftLink):
                raise SpecError(where, f"{path} is a soft link to {link.path!r}: refused (Keras writes none)")
            item = group[name]
            _visit_once(where, item, path, first_paths)
            if isinstance(item, h5py.Group):
                stack.append((item, path, depth + 1))
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


def _address(item: Any) -> tuple[int, int]:
    """The HDF5 object's identity: its file and its address in it (the same through every hard link)."""
    import h5py

    info = h5py.h5o.get_info(item.id)
    return int(info.fileno), int(info.addr)


def _visit_once(where: str, item: Any, path: str, first_paths: dict[tuple[int, int], str]) -> None:
    """Note that ``path`` reaches ``item``; refuse it if an earlier path did (Keras links each object once)."""
    import h5py

    first = first_paths.setdefault(_address(item), path)
    if first == path:
        return
    if first == "/" or path.startswith(f"{first}/"):
        raise SpecError(where, f"{path} is a hard link back to {first}, which holds it: refused (a cycle)")
    kind = "group" if isinstance(item, h5py.Group) else "dataset"
    raise SpecError(
        where, f"{path} and {first} are hard links to one {kind}: refused (Keras links each once)"
    )


def _read_group(where: str, group: Any, path: str) -> WeightGroup:
    """The weights under ``group``, which :func:`_refuse_links` has checked is a tree: each object is read once."""
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
    if _is_bfloat16(dataset):
        bits = np.asarray(dataset[()]).view("<u2").astype(np.uint32)
        return (bits << 16).view(np.float32)  # every bfloat16 is exactly this float32
    if dataset.dtype.kind not in "fiub":
        raise SpecError(where, f"{dataset.name} holds {dataset.dtype}, not numbers")
    return np.asarray(dataset[()])


def _is_bfloat16(dataset: Any) -> bool:
    """Keras (through ml_dtypes) stores bfloat16 as 2-byte opaque data, little-endian, tagged in ``attrs``."""
    if dataset.dtype.kind != "V" or dataset.dtype.itemsize != 2 or dataset.dtype.names is not None:
        return False
    tag = dataset.attrs.get("dtype")
    return isinstance(tag, (str, bytes)) and tag in ("bfloat16", b"bfloat16")
