"""Hostile .keras archives that cost work or memory (HDF5 link DAGs, zip headers that lie) and bfloat16 weights."""

from __future__ import annotations

import io
import json
import struct
import tracemalloc
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

import torchx.keras
from torchx.keras import _archive
from torchx.plugin import SpecError

CONFIG = json.dumps({"class_name": "Sequential", "config": {"name": "tiny", "layers": []}}).encode()


def archive_with(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def hdf5(build: Callable[[h5py.File], None]) -> bytes:
    data = io.BytesIO()
    with h5py.File(data, "w") as file:
        build(file)
    return data.getvalue()


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often each HDF5 group's members are listed; more than 10,000 listings in all fail the test."""
    counts: Counter[str] = Counter()
    iterate = h5py.Group.__iter__

    def counting(group: h5py.Group) -> Iterator[str]:
        counts[group.name] += 1
        assert counts.total() <= 10_000, "the weights file is walked path by path"
        names: Iterator[str] = iterate(group)
        return names

    monkeypatch.setattr(h5py.Group, "__iter__", counting)
    return counts


def chain(file: h5py.File, levels: int, twice: bool) -> None:
    """Groups ``levels`` deep under ``layers``, each reached through ``a`` (and ``b`` too when ``twice``)."""
    group = file.create_group("layers")
    for _ in range(levels):
        child = group.create_group("a")
        if twice:
            group["b"] = child
        group = child
    group.create_dataset("vars/0", data=np.arange(3, dtype="f4"))


def test_a_hard_link_dag_is_refused_after_visiting_each_group_once(
    tmp_path: Path, listed: Counter[str]
) -> None:
    weights = hdf5(lambda file: chain(file, 40, twice=True))  # 2**40 paths to the last group
    path = archive_with(tmp_path / "dag.keras", {"config.json": CONFIG, "model.weights.h5": weights})
    refusal = r"dag.keras:model.weights.h5: /layers/b and /layers/a are hard links to one group: refused"
    with pytest.raises(SpecError, match=refusal):
        torchx.keras.read_archive(path)
    assert max(listed.values()) == 1


def test_each_group_of_a_deep_chain_is_listed_once_per_pass(tmp_path: Path, listed: Counter[str]) -> None:
    weights = hdf5(lambda file: chain(file, 40, twice=False))
    path = archive_with(tmp_path / "chain.keras", {"config.json": CONFIG, "model.weights.h5": weights})
    group = torchx.keras.read_archive(path).weights.group("layers")
    for _ in range(40):
        group = group.group("a")
    np.testing.assert_array_equal(group.arrays[0], np.arange(3, dtype="f4"))
    assert len(listed) == 43 and max(listed.values()) == 2  # checked, then read (root, layers, 40, vars)


def test_two_hard_links_to_one_dataset_are_refused(tmp_path: Path) -> None:
    def shared(file: h5py.File) -> None:
        file["layers/dense/vars/0"] = np.zeros((1000,), "f4")
        file["layers/dense/vars/1"] = file["layers/dense/vars/0"]

    path = archive_with(tmp_path / "twice.keras", {"config.json": CONFIG, "model.weights.h5": hdf5(shared)})
    refusal = r"/layers/dense/vars/\d and /layers/dense/vars/\d are hard links to one dataset"
    with pytest.raises(SpecError, match=refusal):
        torchx.keras.read_archive(path)


def test_a_hard_link_back_to_an_enclosing_group_is_a_cycle(tmp_path: Path) -> None:
    def cycle(file: h5py.File) -> None:
        file.create_group("layers/dense/vars")
        file["layers/dense/loop"] = file["layers"]

    path = archive_with(tmp_path / "cycle.keras", {"config.json": CONFIG, "model.weights.h5": hdf5(cycle)})
    with pytest.raises(SpecError, match=r"/layers/dense/loop is a hard link back to /layers, which holds it"):
        torchx.keras.read_archive(path)


# -- zip headers that lie ---------------------------------------------------------------------------------------

ZEROS = 16 * 2**20
"""Deflates to about 16 KB: a 1000x ratio, refused when the header tells the truth."""


def with_directory_entry(data: bytes, name: str, **fields: int) -> bytes:
    """The zip ``data`` with ``compress_size``/``file_size`` of ``name``'s central directory entry replaced."""
    offsets = {"compress_size": 20, "file_size": 24}
    patched = bytearray(data)
    end = data.rindex(b"PK\x05\x06")
    (count,) = struct.unpack_from("<H", data, end + 10)
    (position,) = struct.unpack_from("<I", data, end + 16)
    for _ in range(count):
        name_length, extra_length, comment_length = struct.unpack_from("<HHH", data, position + 28)
        if data[position + 46 : position + 46 + name_length].decode() == name:
            for field_name, value in fields.items():
                struct.pack_into("<I", patched, position + offsets[field_name], value)
            return bytes(patched)
        position += 46 + name_length + extra_length + comment_length
    raise AssertionError(f"{name} is not in the archive")


def bomb(tmp_path: Path, member: str, **fields: int) -> Path:
    """A .keras archive with ``member`` holding ZEROS zero bytes, its directory entry changed by ``fields``."""
    path = archive_with(tmp_path / "bomb.keras", {"config.json": CONFIG, member: bytes(ZEROS)})
    path.write_bytes(with_directory_entry(path.read_bytes(), member, **fields))
    return path


def refused(path: Path) -> tuple[str, int]:
    """The SpecError reading ``path`` raises, and the most memory Python held at once while reading it."""
    tracemalloc.start()
    try:
        with pytest.raises(SpecError) as error:
            torchx.keras.read_archive(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return str(error.value), peak


@pytest.mark.parametrize("member", ["model.weights.h5", "config.json"])
def test_a_compressed_size_that_lies_is_refused_before_inflating(tmp_path: Path, member: str) -> None:
    path = bomb(tmp_path, member, compress_size=ZEROS // (_archive.MAX_RATIO - 1))
    assert zipfile.ZipFile(path).getinfo(member).compress_size > path.stat().st_size  # the lie
    message, peak = refused(path)
    assert f"the archive member {member!r} expands" in message and "refused as a zip bomb" in message
    assert peak < 2**20


def test_a_file_size_that_lies_stops_inflating_at_the_declared_size(tmp_path: Path) -> None:
    real = zipfile.ZipFile(archive_with(tmp_path / "real.keras", {"model.weights.h5": bytes(ZEROS)}))
    compressed = real.getinfo("model.weights.h5").compress_size
    path = bomb(tmp_path, "model.weights.h5", file_size=100 * compressed)  # under the ratio
    message, peak = refused(path)
    assert "the archive member 'model.weights.h5' is corrupt" in message
    assert peak < 4 * 100 * compressed


def test_a_compressed_size_larger_than_the_member_is_refused(tmp_path: Path) -> None:
    weights = np.random.default_rng(0).bytes(4096)  # does not compress: no ratio to catch
    path = archive_with(tmp_path / "lie.keras", {"model.weights.h5": weights, "config.json": CONFIG})
    real = zipfile.ZipFile(path).getinfo("model.weights.h5").compress_size
    path.write_bytes(with_directory_entry(path.read_bytes(), "model.weights.h5", compress_size=real + 200))
    with pytest.raises(
        SpecError, match=rf"'model.weights.h5' claims {real + 200:,} compressed bytes; the archive holds \d"
    ):
        torchx.keras.read_archive(path)


def test_a_member_without_its_local_header_is_refused(tmp_path: Path) -> None:
    path = archive_with(tmp_path / "moved.keras", {"config.json": CONFIG})
    data = bytearray(path.read_bytes())
    data[0:4] = b"XXXX"
    path.write_bytes(bytes(data))
    with pytest.raises(SpecError, match=r"the archive member 'config.json' is corrupt"):
        torchx.keras.read_archive(path)


# -- bfloat16 ---------------------------------------------------------------------------------------------------


def test_bfloat16_weights_are_read_exactly(tmp_path: Path) -> None:
    keras = pytest.importorskip("keras", reason="needs Keras 3: pip install keras (in the test extra)")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, dtype="bfloat16", name="half")])
    model.save(tmp_path / "bf16.keras")
    dense = model.get_layer("half")
    arrays = torchx.keras.read_archive(tmp_path / "bf16.keras").weights.group("layers").group("dense").arrays
    expected = [np.asarray(variable.numpy()).astype("float32") for variable in (dense.kernel, dense.bias)]
    assert [array.dtype for array in arrays] == [np.dtype("float32")] * 2
    for array, value in zip(arrays, expected, strict=True):
        np.testing.assert_array_equal(array, value)
    assert np.any(expected[0] != 0)


def bfloat16_bits(file: h5py.File, tag: str | None) -> None:
    """Four bfloat16 values as Keras stores them: 2-byte opaque data (tagged ``tag``)."""
    bits = np.array([0x3F80, 0xC000, 0x0001, 0x7F80], "<u2")  # 1.0, -2.0, the smallest subnormal, inf
    dataset = file.create_dataset("layers/dense/vars/0", data=bits.view("V2"))
    if tag is not None:
        dataset.attrs["dtype"] = tag


def test_bfloat16_bits_become_their_float32_values(tmp_path: Path) -> None:
    weights = hdf5(lambda file: bfloat16_bits(file, "bfloat16"))
    path = archive_with(tmp_path / "bits.keras", {"config.json": CONFIG, "model.weights.h5": weights})
    (array,) = torchx.keras.read_archive(path).weights.group("layers").group("dense").arrays
    np.testing.assert_array_equal(array, np.array([1.0, -2.0, 2.0**-133, np.inf], "f4"))


@pytest.mark.parametrize(
    ("build", "shown"),
    [
        pytest.param(lambda file: bfloat16_bits(file, None), r"\|V2", id="untagged-void"),
        pytest.param(lambda file: bfloat16_bits(file, "float8"), r"\|V2", id="other-tag"),
        pytest.param(
            lambda file: file.create_dataset("layers/dense/vars/0", data=np.zeros(2, "V4")).attrs.create(
                "dtype", "bfloat16"
            ),
            r"\|V4",
            id="wrong-size",
        ),
    ],
)
def test_other_void_data_stays_refused(tmp_path: Path, build: Callable[[h5py.File], Any], shown: str) -> None:
    path = archive_with(tmp_path / "void.keras", {"config.json": CONFIG, "model.weights.h5": hdf5(build)})
    with pytest.raises(SpecError, match=rf"/layers/dense/vars/0 holds {shown}, not numbers"):
        torchx.keras.read_archive(path)
