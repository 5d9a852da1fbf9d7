"""Reading .keras files as data: bad and hostile files are refused with their place, nothing runs."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import torch
from keras_files import config_of, rewritten
from keras_parity import keras, layers

import torchx.keras
from torchx.cli import main
from torchx.core import SpecError


def small_model() -> Any:
    inputs = keras.Input((4,), name="features")
    hidden = layers.Dense(3, activation="relu", name="hidden")(inputs)
    return keras.Model(inputs, layers.Dense(2, name="head")(hidden), name="small")


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "small.keras"
    small_model().save(path)
    return path


def weights_with(path: Path, change: Any) -> bytes:
    """The archive's weights file after ``change(h5file)``."""
    with zipfile.ZipFile(path) as archive:
        data = io.BytesIO(archive.read("model.weights.h5"))
    with h5py.File(data, "r+") as file:
        change(file)
    return data.getvalue()


def test_converting_never_imports_keras(saved: Path) -> None:
    code = (
        "import sys, torch, torchx.keras\n"
        f"model = torchx.keras.load({str(saved)!r})\n"
        "print(model(torch.zeros(2, 4)).shape, 'keras' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["torch.Size([2,", "2])", "False"]


def test_a_lambda_layer_is_refused_with_its_place(tmp_path: Path) -> None:
    inputs = keras.Input((4,))
    hidden = layers.Dense(3)(inputs)
    model = keras.Model(inputs, layers.Lambda(lambda x: x * 2, name="my_fn")(hidden))
    model.save(tmp_path / "lambda.keras")
    with pytest.raises(
        SpecError, match=r'layers\[2\] \(Lambda "my_fn"\): Lambda layers are refused: it holds Python code'
    ):
        torchx.keras.load(tmp_path / "lambda.keras")


def test_a_custom_layer_is_refused(tmp_path: Path) -> None:
    @keras.saving.register_keras_serializable(package="mine")
    class Doubling(layers.Layer):  # type: ignore[misc]
        def call(self, x: Any) -> Any:
            return x * 2

    inputs = keras.Input((4,))
    keras.Model(inputs, Doubling(name="twice")(inputs)).save(tmp_path / "custom.keras")
    with pytest.raises(
        SpecError, match=r"layers\[1\] \(Doubling \"twice\"\): is a custom layer .*'mine>Doubling'"
    ):
        torchx.keras.load(tmp_path / "custom.keras")


def test_a_custom_activation_function_is_refused(saved: Path) -> None:
    config = config_of(saved)
    config["config"]["layers"][1]["config"]["activation"] = {
        "module": "builtins", "class_name": "function", "config": "evil", "registered_name": "function",
    }  # fmt: skip
    path = rewritten(saved, {"config.json": json.dumps(config).encode()})
    with pytest.raises(SpecError, match=r'layers\[1\] \(Dense "hidden"\): activation is a custom object'):
        torchx.keras.load(path)


def test_an_unsupported_layer_lists_close_supported_names(tmp_path: Path) -> None:
    inputs = keras.Input((4,))
    keras.Model(inputs, layers.UnitNormalization(name="unit")(inputs)).save(tmp_path / "unit.keras")
    with pytest.raises(SpecError) as error:
        torchx.keras.load(tmp_path / "unit.keras")
    message = str(error.value)
    assert 'layers[1] (UnitNormalization "unit")' in message
    assert "close supported layers: " in message and "LayerNormalization" in message


def test_a_corrupted_archive_is_refused(saved: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.keras"
    broken.write_bytes(saved.read_bytes()[: saved.stat().st_size // 2])
    with pytest.raises(SpecError, match=r"is not a \.keras archive"):
        torchx.keras.load(broken)


def test_a_keras_2_hdf5_model_is_refused_with_how_to_resave_it(tmp_path: Path) -> None:
    legacy = tmp_path / "legacy.keras"
    with h5py.File(legacy, "w") as file:
        file.attrs["keras_version"] = "2.15.0"
    with pytest.raises(SpecError, match=r"is an HDF5 file \(Keras 2's \.h5 model format\).*model\.save"):
        torchx.keras.load(legacy)


def test_weights_that_disagree_with_the_config_are_refused(saved: Path) -> None:
    config = config_of(saved)
    config["config"]["layers"][1]["config"]["units"] = 5
    path = rewritten(saved, {"config.json": json.dumps(config).encode()})
    with pytest.raises(
        SpecError, match=r'layers\[1\] \(Dense "hidden"\): the weights file gives weight the shape'
    ):
        torchx.keras.load(path)


def test_missing_weight_variables_are_refused(saved: Path) -> None:
    def drop_bias(file: h5py.File) -> None:
        del file["layers/dense/vars/1"]

    path = rewritten(saved, {"model.weights.h5": weights_with(saved, drop_bias)})
    with pytest.raises(SpecError, match=r'\(Dense "hidden"\): the weights file has 1 variable\(s\)'):
        torchx.keras.load(path)


@pytest.mark.parametrize(
    "member", [pytest.param("../escape.txt", id="parent"), pytest.param("/etc/escape.txt", id="absolute")]
)
def test_members_outside_the_archive_are_refused(saved: Path, member: str) -> None:
    path = rewritten(saved, {}, extra={member: b"x"})
    with pytest.raises(SpecError, match="points outside the archive"):
        torchx.keras.load(path)


def test_a_zip_bomb_is_refused_before_it_is_expanded(saved: Path) -> None:
    path = rewritten(saved, {}, extra={"padding.bin": bytes(8 * 2**20)})
    with pytest.raises(SpecError, match=r"'padding.bin' expands .* refused as a zip bomb"):
        torchx.keras.load(path)


def test_hdf5_external_links_are_refused(saved: Path) -> None:
    def link(file: h5py.File) -> None:
        del file["layers/dense/vars/0"]
        file["layers/dense/vars/0"] = h5py.ExternalLink("/etc/passwd.h5", "/data")

    path = rewritten(saved, {"model.weights.h5": weights_with(saved, link)})
    with pytest.raises(SpecError, match=r"/layers/dense/vars/0 is an external link to '/etc/passwd.h5'"):
        torchx.keras.load(path)


def test_hdf5_virtual_datasets_are_refused(saved: Path) -> None:
    def virtual(file: h5py.File) -> None:
        del file["layers/dense/vars/1"]
        layout = h5py.VirtualLayout(shape=(3,), dtype="f4")
        layout[:] = h5py.VirtualSource("other.h5", "data", shape=(3,))
        file["layers/dense/vars"].create_virtual_dataset("1", layout, fillvalue=0)

    path = rewritten(saved, {"model.weights.h5": weights_with(saved, virtual)})
    with pytest.raises(SpecError, match=r"/layers/dense/vars/1 is a virtual dataset"):
        torchx.keras.load(path)


def test_a_subclassed_model_is_refused(saved: Path) -> None:
    config = config_of(saved)
    config["class_name"], config["module"] = "MyModel", "keras.src.models.model"
    path = rewritten(saved, {"config.json": json.dumps(config).encode()})
    with pytest.raises(SpecError, match="a subclassed Keras model has no layer graph"):
        torchx.keras.load(path)


def test_from_keras_writes_a_spec_and_a_checkpoint_that_load_back(
    saved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, weights = tmp_path / "small.yaml", tmp_path / "small.safetensors"
    assert main(["from-keras", str(saved), "-o", str(spec), "--weights", str(weights)]) == 0
    assert f"wrote {spec}" in capsys.readouterr().out
    import torchx

    restored = torchx.load_model(weights).eval()
    inputs = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")
    expected = keras.saving.load_model(saved)(inputs, training=False).detach().cpu().numpy()
    with torch.no_grad():
        np.testing.assert_allclose(restored(torch.from_numpy(inputs)).numpy(), expected, atol=1e-6, rtol=0)
    assert torchx.load_spec(spec).to_spec() == restored.to_spec()


def test_summary_reads_a_keras_file(saved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(saved)]) == 0
    table = capsys.readouterr().out
    assert "hidden" in table and "Linear" in table and "(None, 2)" in table


@pytest.mark.parametrize(
    "change",
    [
        pytest.param("lambda", id="lambda"),
        pytest.param("corrupt", id="corrupt"),
        pytest.param("shapes", id="shapes"),
    ],
)
def test_the_cli_exits_1_on_a_bad_file(
    saved: Path, tmp_path: Path, change: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = config_of(saved)
    if change == "lambda":
        config["config"]["layers"][1]["class_name"] = "Lambda"
        bad = rewritten(saved, {"config.json": json.dumps(config).encode()})
    elif change == "shapes":
        config["config"]["layers"][1]["config"]["units"] = 7
        bad = rewritten(saved, {"config.json": json.dumps(config).encode()})
    else:
        bad = tmp_path / "corrupt.keras"
        bad.write_bytes(b"PK\x03\x04 not really a zip")
    assert main(["from-keras", str(bad), "-o", str(tmp_path / "out.yaml")]) == 1
    assert "SpecError" in capsys.readouterr().err
    assert not (tmp_path / "out.yaml").exists()


# -- found in review: shared layers, weights checked before use, malformed configs -------------------------------


def test_a_shared_conv_after_a_zero_padding_on_one_branch_converts(converted) -> None:
    first, second = keras.Input((8, 8, 3)), keras.Input((8, 8, 3))
    conv = layers.Conv2D(4, 3)
    converted(keras.Model([first, second], [conv(second), conv(layers.ZeroPadding2D(1)(first))]))


def test_a_shared_layer_needing_other_torch_arguments_per_call_is_refused(tmp_path: Path) -> None:
    first, second = keras.Input((8, 8, 3)), keras.Input((9, 9, 3))
    conv = layers.Conv2D(4, 3, strides=2, padding="same", name="strided")
    keras.Model([first, second], [conv(first), conv(second)]).save(tmp_path / "shared.keras")
    with pytest.raises(
        SpecError, match=r'\(Conv2D "strided"\): is shared by calls that need different torch layers'
    ):
        torchx.keras.load(tmp_path / "shared.keras")


def test_a_shared_time_distributed_on_other_frame_shapes_is_refused(tmp_path: Path) -> None:
    wrapped = layers.TimeDistributed(layers.Conv2D(2, 3), name="frames")
    first, second = keras.Input((2, 8, 8, 3)), keras.Input((2, 9, 9, 3))
    keras.Model([first, second], [wrapped(first), wrapped(second)]).save(tmp_path / "td.keras")
    with pytest.raises(SpecError, match=r'\(TimeDistributed "frames"\): is shared by inputs with frames'):
        torchx.keras.load(tmp_path / "td.keras")


def test_float_indices_into_an_embedding_are_cast_as_keras_does(converted) -> None:
    inputs = keras.Input((5,))
    model = keras.Model(inputs, layers.Embedding(10, 4)(inputs))
    converted(model, np.array([[0.0, 1.9, 2.2, 9.0, 3.5]] * 2, dtype="float32"))


def test_a_dense_after_flatten_checks_the_kernel_before_reordering_it(tmp_path: Path) -> None:
    inputs = keras.Input((4, 4, 3))
    outputs = layers.Dense(2, name="head")(layers.Flatten()(layers.Conv2D(3, 1)(inputs)))
    keras.Model(inputs, outputs).save(tmp_path / "flat.keras")
    config = config_of(tmp_path / "flat.keras")
    config["config"]["layers"][0]["config"]["batch_shape"] = [None, 2, 2, 3]
    path = rewritten(tmp_path / "flat.keras", {"config.json": json.dumps(config).encode()})
    with pytest.raises(
        SpecError, match=r'\(Dense "head"\): the weights file\'s kernel has shape \(48, 2\), but 12'
    ):
        torchx.keras.load(path)


def test_prelu_slopes_are_checked_not_cut(tmp_path: Path) -> None:
    inputs = keras.Input((4, 4, 3))
    keras.Model(inputs, layers.PReLU(shared_axes=[1, 2], name="slopes")(inputs)).save(
        tmp_path / "prelu.keras"
    )
    config = config_of(tmp_path / "prelu.keras")
    config["config"]["layers"][1]["config"]["shared_axes"] = [1, 2, 3]
    path = rewritten(tmp_path / "prelu.keras", {"config.json": json.dumps(config).encode()})
    with pytest.raises(
        SpecError, match=r'\(PReLU "slopes"\): the weights file gives weight the shape \(3,\)'
    ):
        torchx.keras.load(path)


def test_hdf5_data_the_file_does_not_hold_is_refused(saved: Path) -> None:
    def fill_value_bomb(file: h5py.File) -> None:
        file.create_dataset("layers/zzz/vars/0", shape=(2**40,), dtype="f4", chunks=(2**20,))

    path = rewritten(saved, {"model.weights.h5": weights_with(saved, fill_value_bomb)})
    with pytest.raises(SpecError, match=r"declare over .* bytes, more than the file's"):
        torchx.keras.load(path)


def test_compressed_hdf5_datasets_are_refused(saved: Path) -> None:
    def compressed(file: h5py.File) -> None:
        file.create_dataset("layers/zzz/vars/0", data=np.zeros(16, "f4"), compression="gzip")

    path = rewritten(saved, {"model.weights.h5": weights_with(saved, compressed)})
    with pytest.raises(SpecError, match="/layers/zzz/vars/0 is compressed"):
        torchx.keras.load(path)


def test_an_hdf5_group_cycle_is_refused(saved: Path) -> None:
    def cycle(file: h5py.File) -> None:
        file["layers/dense/loop"] = file["layers"]

    path = rewritten(saved, {"model.weights.h5": weights_with(saved, cycle)})
    with pytest.raises(
        SpecError, match="is a hard link back to /layers, which holds it: refused \\(a cycle\\)"
    ):
        torchx.keras.load(path)


def test_deeply_nested_json_is_refused(saved: Path) -> None:
    path = rewritten(saved, {"config.json": b"[" * 100_000 + b"]" * 100_000})
    with pytest.raises(SpecError, match=r"config\.json: is nested too deeply"):
        torchx.keras.load(path)


def _malformed(config: dict[str, Any], change: str) -> None:
    dense = config["config"]["layers"][1]
    if change == "units-text":
        dense["config"]["units"] = "three"
    elif change == "inbound-nodes":
        dense["inbound_nodes"] = ["x"]
    elif change == "node-kwargs":
        dense["inbound_nodes"][0]["kwargs"] = [1]
    elif change == "negative-history":
        dense["inbound_nodes"][0]["args"][0]["config"]["keras_history"] = ["features", 0, -1]
    elif change == "tensor-config":
        dense["inbound_nodes"][0]["args"][0]["config"] = None
    elif change == "output-index":
        config["config"]["output_layers"] = [["head", "x", 0]]


@pytest.mark.parametrize(
    ("change", "place"),
    [
        pytest.param("units-text", r'layers\[1\] \(Dense "hidden"\)', id="units-text"),
        pytest.param("inbound-nodes", r"layers\[1\]\.inbound_nodes", id="inbound-nodes"),
        pytest.param("node-kwargs", r"layers\[1\]\.inbound_nodes\[0\]: its args", id="node-kwargs"),
        pytest.param("negative-history", r"keras_history: \['features', 0, -1\]", id="negative-history"),
        pytest.param("tensor-config", r"keras_history: None", id="tensor-config"),
        pytest.param("output-index", r"output_layers: \['head', 'x', 0\]", id="output-index"),
    ],
)
def test_a_malformed_config_is_a_spec_error(saved: Path, change: str, place: str) -> None:
    config = config_of(saved)
    _malformed(config, change)
    path = rewritten(saved, {"config.json": json.dumps(config).encode()})
    with pytest.raises(SpecError, match=place):
        torchx.keras.load(path)


def test_a_layer_much_larger_than_its_weights_is_refused_before_it_is_allocated(saved: Path) -> None:
    config = config_of(saved)
    config["config"]["layers"][1]["config"]["units"] = 10**9  # 4 GB of kernel, for 15 numbers in the file
    path = rewritten(saved, {"config.json": json.dumps(config).encode()})
    with pytest.raises(
        SpecError, match=r'\(Dense "hidden"\): its config makes a torch layer of 20,000,000,000 bytes'
    ):
        torchx.keras.load(path)


def test_from_keras_checks_its_outputs_before_converting(
    saved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-folder" / "model.yaml"
    assert main(["from-keras", str(saved), "-o", str(missing)]) == 2
    assert "the folder" in capsys.readouterr().err
    assert main(["from-keras", str(saved), "-o", str(tmp_path / "m.yaml"), "--weights", str(tmp_path)]) == 2
    assert "must end in .safetensors or .pt or .pth" in capsys.readouterr().err
    assert not (tmp_path / "m.yaml").exists()
