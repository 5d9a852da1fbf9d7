"""Model files crafted by hand against torchx-keras and load_weights: each either converts to exactly
what the file describes, or is refused with a SpecError/CheckpointError after bounded work.

The archives are written here from JSON and h5py (no Keras needed): a Keras 3 config as Keras saves
it, and the weights file laid out as Keras lays it (``layers/<name>/vars/<i>``).
"""

from __future__ import annotations

import io
import json
import struct
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import torch
from report import Report
from safetensors.torch import save_file

import torchx
import torchx.keras
import torchx.layers as L
from torchx.core import CheckpointError, SpecError

# -- archives written by hand ---------------------------------------------------------------------


def dense(name: str, units: int, **config: Any) -> dict[str, Any]:
    return {"class_name": "Dense", "config": {"name": name, "units": units, **config}}


def sequential(
    input_shape: list[int | None], *body: dict[str, Any], dtype: str = "float32"
) -> dict[str, Any]:
    entry = {"class_name": "InputLayer", "config": {"name": "x", "batch_shape": input_shape, "dtype": dtype}}
    return {"class_name": "Sequential", "config": {"name": "model", "layers": [entry, *body]}}


def archive(
    path: Path, config: dict[str, Any], weights: dict[str, list[np.ndarray[Any, Any]]] | None = None
) -> Path:
    """A ``.keras`` file holding ``config`` and, per layer group name, its variables."""
    data = io.BytesIO()
    with h5py.File(data, "w") as file:
        for group, arrays in (weights or {}).items():
            for index, array in enumerate(arrays):
                file.create_dataset(f"layers/{group}/vars/{index}", data=array)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr("config.json", json.dumps(config))
        out.writestr("metadata.json", json.dumps({"keras_version": "3.15.1"}))
        out.writestr("model.weights.h5", data.getvalue())
    return path


def random(*shape: int) -> np.ndarray[Any, Any]:
    return np.random.default_rng(len(shape)).standard_normal(shape).astype("float32")


# -- silently wrong, once -------------------------------------------------------------------------


def test_flatten_channels_first_reads_its_features_in_keras_order(tmp_path: Path, report: Report) -> None:
    kernel, bias = random(3 * 4 * 4, 5), random(5)
    flatten = {"class_name": "Flatten", "config": {"name": "flatten", "data_format": "channels_first"}}
    config = sequential([None, 3, 4, 4], flatten, dense("dense", 5))
    model = torchx.keras.load(archive(tmp_path / "m.keras", config, {"dense": [kernel, bias]}))
    x = random(2, 3, 4, 4)
    expected = x.transpose(0, 2, 3, 1).reshape(2, -1) @ kernel + bias  # Keras moves the channels last
    with torch.no_grad():
        np.testing.assert_allclose(model(torch.from_numpy(x)).numpy(), expected, atol=1e-5)
    report.count("attack", "Flatten(data_format='channels_first') converted as Keras reads it")


def test_dtypes_and_frozen_layers_are_carried(tmp_path: Path, report: Report) -> None:
    frozen = dense("base", 4, trainable=False)
    config = sequential([None, 3], frozen, dense("head", 2), dtype="float16")
    weights = {
        "dense": [random(3, 4), random(4)],
        "dense_1": [random(4, 2), random(2)],
    }  # Keras's group names
    model = torchx.keras.load(archive(tmp_path / "m.keras", config, weights))
    assert {p.dtype for p in model.parameters()} == {torch.float32}  # a float16 Input is cast, not obeyed
    assert [name for name, p in model.named_parameters() if not p.requires_grad] == [
        "base.weight",
        "base.bias",
    ]
    assert model(torch.zeros(1, 3, dtype=torch.float16)).dtype == torch.float32
    report.count("attack", "float16 inputs into float32 layers, and frozen layers, carried")


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16", "int8_from_float32", "float8"])
def test_a_policy_that_cannot_be_honoured_is_refused(tmp_path: Path, report: Report, policy: str) -> None:
    dtype = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": policy}}
    config = sequential([None, 3], dense("d", 2, dtype=dtype))
    with pytest.raises(SpecError, match=f"dtype policy '{policy}'"):
        torchx.keras.load(archive(tmp_path / "m.keras", config, {"d": [random(3, 2), random(2)]}))
    report.count("attack", "dtype policies a converted layer cannot honour, refused")


def test_a_ddp_safetensors_file_loads_by_name(tmp_path: Path, report: Report) -> None:
    model = torchx.build(L.Sequential(L.Linear(4), L.LayerNorm()), (None, 3))
    source = {f"module.{key}": torch.randn_like(value) for key, value in model.state_dict().items()}
    save_file(source, tmp_path / "ddp.safetensors")
    torchx.load_weights(model, tmp_path / "ddp.safetensors")
    for key, value in model.state_dict().items():
        torch.testing.assert_close(value, source[f"module.{key}"], rtol=0, atol=0)
    report.count("attack", "a module.-prefixed safetensors file paired by name, never by sorted position")


# -- bounded reading ------------------------------------------------------------------------------


def test_an_hdf5_hard_link_dag_is_refused_quickly(tmp_path: Path, report: Report) -> None:
    data = io.BytesIO()
    with h5py.File(data, "w") as file:
        group = file.create_group("layers/d/chain")
        for level in range(40):  # each level links the next twice: 2**40 paths, 40 groups
            child = file.create_group(f"level{level}")
            group["a"], group["b"] = child, child
            group = child
    path = tmp_path / "dag.keras"
    with zipfile.ZipFile(path, "w") as out:
        out.writestr("config.json", json.dumps(sequential([None, 3], dense("d", 2))))
        out.writestr("model.weights.h5", data.getvalue())
    with pytest.raises(SpecError, match="hard link"):
        torchx.keras.read_archive(path)
    report.count("attack", "an HDF5 hard-link DAG of 2**40 paths, refused after one visit per group")


def test_a_zip_member_lying_about_its_compressed_size_is_refused_early(
    tmp_path: Path, report: Report
) -> None:
    bomb = tmp_path / "bomb.keras"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr("config.json", json.dumps(sequential([None, 3], dense("d", 2))))
        out.writestr("model.weights.h5", b"\0" * (64 * 2**20))
    data = bytearray(bomb.read_bytes())
    directory = data.rfind(b"PK\x01\x02", 0, data.rfind(b"model.weights.h5") + 1)  # its central entry
    (size,) = struct.unpack_from("<I", data, directory + 24)
    struct.pack_into("<I", data, directory + 20, size // 199 + 1)  # claims a ratio the check lets through
    bomb.write_bytes(bytes(data))
    tracemalloc.start()
    try:
        with pytest.raises(SpecError):
            torchx.keras.read_archive(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20  # it stopped inflating long before the 64 MiB it claims
    report.count("attack", "a zip member lying about its compressed size, refused before inflating it")


def test_an_attention_layer_far_larger_than_its_weights_is_refused_before_it_allocates(
    tmp_path: Path, report: Report
) -> None:
    attention = {
        "class_name": "MultiHeadAttention",
        "config": {"name": "mha", "num_heads": 1, "key_dim": 4096},
    }
    config = {
        "class_name": "Functional",
        "config": {
            "name": "model",
            "layers": [
                {"class_name": "InputLayer", "name": "x", "config": {"name": "x", "batch_shape": [None, 2, 4096]}},
                {**attention, "name": "mha", "inbound_nodes": [{"args": [_tensor("x")], "kwargs": {"value": _tensor("x")}}]},
            ],
            "input_layers": ["x", 0, 0],
            "output_layers": ["mha", 0, 0],
        },
    }  # fmt: skip
    with pytest.raises(SpecError, match=r"makes a torch layer of [\d,]+ bytes"):
        torchx.keras.load(archive(tmp_path / "m.keras", config))
    report.count("attack", "an attention layer of 200 MB in a 1 KB file, refused before allocating")


def _tensor(layer: str) -> dict[str, Any]:
    return {"class_name": "__keras_tensor__", "config": {"keras_history": [layer, 0, 0]}}


def test_a_config_listed_in_reverse_order_converts(tmp_path: Path, report: Report) -> None:
    count = 2000
    entries = [{"class_name": "InputLayer", "name": "x", "config": {"name": "x", "batch_shape": [None, 3]}}]
    for index in range(count):
        source = "x" if index == 0 else f"a{index - 1}"
        entries.append(
            {"class_name": "Activation", "name": f"a{index}",
             "config": {"name": f"a{index}", "activation": "relu"}, "inbound_nodes": [{"args": [_tensor(source)]}]}
        )  # fmt: skip
    config = {
        "class_name": "Functional",
        "config": {"name": "m", "layers": [entries[0], *reversed(entries[1:])],
                   "input_layers": ["x", 0, 0], "output_layers": [f"a{count - 1}", 0, 0]},
    }  # fmt: skip
    model = torchx.keras.load(archive(tmp_path / "m.keras", config))
    x = torch.randn(2, 3)
    torch.testing.assert_close(model(x), x.relu())
    report.count("attack", "a 2,000-layer functional config in reverse order, resolved in one pass")


@pytest.mark.parametrize(
    ("layer", "message"),
    [
        ({"class_name": "RepeatVector", "config": {"name": "r", "n": float("inf")}}, "n=inf"),
        (dense("d", float("inf")), "units=inf"),
        ({"class_name": "Conv1D", "config": {"name": "c", "filters": 2, "kernel_size": 1, "strides": 0,
                                             "padding": "same"}}, "strides=0"),
        ({"class_name": "Cropping1D", "config": {"name": "c", "cropping": [3, 3]}}, "nothing would be left"),
        ({"class_name": "ZeroPadding1D", "config": {"name": "z", "padding": -1}}, "sizes >= 0"),
        ({"class_name": "BatchNormalization", "config": {"name": "b", "axis": 7}}, "axis=7"),
    ],
    ids=["infinite-repeat", "infinite-units", "zero-strides", "crop-everything", "negative-pad", "axis-7"],
)  # fmt: skip
def test_a_number_that_is_not_a_size_is_refused(
    tmp_path: Path, report: Report, layer: dict[str, Any], message: str
) -> None:
    with pytest.raises(SpecError, match=message):
        torchx.keras.load(archive(tmp_path / "m.keras", sequential([None, 4, 3], layer)))
    report.count("attack", "infinite, zero, negative or out-of-range sizes in a config, refused")


def test_a_deeply_nested_safetensors_header_is_a_checkpoint_error(tmp_path: Path, report: Report) -> None:
    header = (
        json.dumps({"__metadata__": {"spec": "x"}}).encode().replace(b'"x"', b"[" * 100_000 + b"]" * 100_000)
    )
    path = tmp_path / "deep.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    model = torchx.build(L.Linear(2), (None, 2))
    for read in (lambda: torchx.load_weights(model, path), lambda: torchx.load_model(path)):
        with pytest.raises(CheckpointError):
            read()
    report.count("attack", "a safetensors header nested 100,000 deep, refused without recursion")
