""".keras files in every command that reads a model, and from-keras writing its spec and weights as one."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

keras = pytest.importorskip("keras", reason="needs Keras 3: pip install keras (in the test extra)")

from torchx.cli import main  # noqa: E402 - after the skip

layers = keras.layers


def small_model(hidden: int = 3) -> Any:
    inputs = keras.Input((4,), name="features")
    middle = layers.Dense(hidden, activation="relu", name="hidden")(inputs)
    return keras.Model(inputs, layers.Dense(2, name="head")(middle), name="small")


def saved(path: Path, hidden: int = 3) -> Path:
    small_model(hidden).save(path)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_validate_reads_a_keras_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = saved(tmp_path / "m.keras")
    assert run(capsys, "validate", str(model)) == (0, f"{model}: ok (readable)\n", "")
    status, out, _ = run(capsys, "validate", str(model), "--input", "None,4")
    assert (status, out) == (0, f"{model}: ok (readable and builds for the given inputs)\n")
    status, out, _ = run(capsys, "validate", str(model), "--input", "None,5")  # a problem it lists
    assert status == 1 and "expected shape (None, 4)" in out and "got (None, 5)" in out


def test_diff_reads_keras_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, same, wider = saved(tmp_path / "a.keras"), saved(tmp_path / "b.keras"), saved(tmp_path / "c.keras", 5)
    status, out, err = run(capsys, "diff", str(a), str(same), "--format", "json")
    assert (status, err) == (0, "") and json.loads(out)["equal"]
    status, out, _ = run(capsys, "diff", str(a), str(wider), "--input", "None,4", "--format", "json")
    data = json.loads(out)
    assert status == 1 and data["total_parameters"] == {"a": 15 + 8, "b": 25 + 12}
    assert [(change["a"], change["b"]) for change in data["spec"]] == [(3, 5)]


def test_every_command_reads_a_keras_file_the_same_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One path for every command: a file the plugin refuses is refused alike."""
    bad = tmp_path / "bad.keras"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    errors = {}
    for command in ("summary", "validate", "diff"):
        argv = [command, str(bad)] + ([str(bad)] if command == "diff" else [])
        status, _, err = run(capsys, *argv)
        assert status in (1, 2) and "no installed plugin reads" not in err, (command, err)
        errors[command] = err.split(": ", 1)[1]
    assert errors["summary"] == errors["validate"]
    assert errors["summary"].strip() in errors["diff"]


# -- from-keras: the spec and the weights replaced together, or neither -------------------------------------


@pytest.fixture
def old_files(tmp_path: Path) -> tuple[Path, Path, dict[Path, bytes]]:
    """A spec and weights from an earlier conversion, and their bytes."""
    spec, weights = tmp_path / "model.yaml", tmp_path / "model.safetensors"
    assert (
        main(["from-keras", str(saved(tmp_path / "old.keras")), "-o", str(spec), "--weights", str(weights)])
        == 0
    )
    return spec, weights, {spec: spec.read_bytes(), weights: weights.read_bytes()}


def test_a_failed_weights_write_keeps_the_old_spec_and_weights(
    tmp_path: Path,
    old_files: tuple[Path, Path, dict[Path, bytes]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import safetensors.torch

    spec, weights, before = old_files
    capsys.readouterr()
    new = saved(tmp_path / "new.keras", hidden=5)  # another architecture: another spec

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(safetensors.torch, "save_file", disk_full)
    status, out, err = run(capsys, "from-keras", str(new), "-o", str(spec), "--weights", str(weights))
    assert (status, out) == (2, "")
    assert err == f"torchx from-keras: error: {weights}: cannot be written: No space left on device\n"
    assert {path: path.read_bytes() for path in before} == before
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "model.safetensors",
        "model.yaml",
        "new.keras",
        "old.keras",
    ]


def test_from_keras_replaces_both_files_and_leaves_nothing_else(
    tmp_path: Path, old_files: tuple[Path, Path, dict[Path, bytes]], capsys: pytest.CaptureFixture[str]
) -> None:
    import torchx

    spec, weights, before = old_files
    spec.chmod(0o640)
    new = saved(tmp_path / "new.keras", hidden=5)
    status, out, _ = run(capsys, "from-keras", str(new), "-o", str(spec), "--weights", str(weights))
    assert (status, out) == (0, f"wrote {spec}\nwrote {weights}\n")
    assert all(path.read_bytes() != old for path, old in before.items())
    assert torchx.load_spec(spec).to_spec() == torchx.load_model(weights).to_spec()
    assert spec.stat().st_mode & 0o777 == 0o640  # the mode of the file it replaced
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "model.safetensors",
        "model.yaml",
        "new.keras",
        "old.keras",
    ]


@pytest.mark.parametrize("missing", ["missing.keras", "folder.keras"])
def test_a_missing_keras_file_is_a_usage_error_in_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], missing: str
) -> None:
    (tmp_path / "folder.keras").mkdir()
    source = str(tmp_path / missing)
    message = (
        f"{source}: no such file" if missing == "missing.keras" else f"{source}: is a directory, not a file"
    )
    for argv in (
        ["from-keras", source, "-o", str(tmp_path / "model.yaml")],
        ["summary", source],
        ["validate", source],
    ):
        assert run(capsys, *argv) == (2, "", f"torchx {argv[0]}: error: {message}\n")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["folder.keras"]


@pytest.mark.parametrize("umask", [0o022, 0o077], ids=["umask022", "umask077"])
def test_from_keras_writes_files_with_the_mode_the_umask_gives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], umask: int
) -> None:
    source = saved(tmp_path / "m.keras")
    old = os.umask(umask)
    try:
        with open(tmp_path / "plain", "w"):
            pass
        spec, weights = tmp_path / "model.yaml", tmp_path / "model.safetensors"
        assert run(capsys, "from-keras", str(source), "-o", str(spec), "--weights", str(weights))[0] == 0
    finally:
        os.umask(old)
    assert {path.stat().st_mode & 0o777 for path in (spec, weights)} == {0o666 & ~umask}
