"""The command line's files: a plugin's model files read alike by every command, outputs written together."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from toy_layers import Chain, Dense

import torchx
import torchx.cli._plugin
from torchx.cli import UsageError, main, write_together
from torchx.core import SpecError, current_plugins, hookimpl
from torchx.core._files import replacing


class ToyReader:
    """Reads ``.toy`` files: the text is the hidden width, ``bad`` a broken file."""

    def __init__(self) -> None:
        self.read: list[str] = []

    @hookimpl
    def torchx_read_model(self, path: str) -> Chain | None:
        if not path.endswith(".toy"):
            return None
        self.read.append(path)
        text = Path(path).read_text(encoding="utf-8")
        if text == "bad":
            raise SpecError(path, "not a toy model")
        return Chain(Dense(int(text)), Dense(2))


@pytest.fixture
def reader(toy_layers: None) -> ToyReader:
    """The toy layers, the built-in commands, and the reader of ``.toy`` files."""
    plugin = ToyReader()
    current_plugins().register(torchx.cli._plugin, "torchx-core")
    current_plugins().register(plugin, "toy-reader")
    return plugin


def toy(path: Path, width: int | str) -> Path:
    path.write_text(str(width), encoding="utf-8")
    return path


def test_every_command_that_reads_a_model_reads_a_plugins_file(
    reader: ToyReader, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = toy(tmp_path / "a.toy", 8), toy(tmp_path / "b.toy", 6)
    assert main(["summary", str(a), "--input", "None,4"]) == 0
    assert main(["validate", str(a), "--input", "None,4"]) == 0
    assert main(["convert", str(a), "-o", str(tmp_path / "a.json")]) == 0
    assert main(["diff", str(a), str(a)]) == 0
    out = capsys.readouterr().out
    assert "total parameters: 58" in out and f"{a}: ok (readable and builds for the given inputs)" in out
    assert json.loads((tmp_path / "a.json").read_text())["children"][0]["args"] == {"out_features": 8}
    assert main(["diff", str(a), str(b), "--format", "json"]) == 1
    assert [(change["a"], change["b"]) for change in json.loads(capsys.readouterr().out)["spec"]] == [(8, 6)]
    assert reader.read == [str(a)] * 5 + [str(a), str(b)]  # once per command and file


def test_a_file_the_plugin_refuses_is_refused_alike_by_every_command(
    reader: ToyReader, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = toy(tmp_path / "bad.toy", "bad")
    for argv, status in [
        (["summary", str(bad), "--input", "None,4"], 1),
        (["validate", str(bad)], 1),
        (["diff", str(bad), str(bad)], 2),  # 1 means "they differ" there
    ]:
        assert main(argv) == status, argv
        err = capsys.readouterr().err
        assert f"{bad}: not a toy model" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("missing", ["missing.toy", "folder.toy"])
def test_a_missing_model_file_is_a_usage_error_in_every_command(
    reader: ToyReader, tmp_path: Path, capsys: pytest.CaptureFixture[str], missing: str
) -> None:
    (tmp_path / "folder.toy").mkdir()
    source = str(tmp_path / missing)
    message = (
        f"{source}: no such file" if missing == "missing.toy" else f"{source}: is a directory, not a file"
    )
    for argv in (
        ["summary", source, "--input", "None,4"],
        ["validate", source],
        ["plot", source, "--input", "None,4", "-o", str(tmp_path / "model.dot")],
        ["convert", source, "-o", str(tmp_path / "model.yaml")],
        ["export", source, "--input", "None,4", "-o", str(tmp_path / "model.pt2")],
        ["diff", source, source],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err == f"torchx {argv[0]}: error: {message}\n", err
    assert reader.read == []


def test_replacing_renames_every_file_or_none(tmp_path: Path) -> None:
    spec, weights = tmp_path / "m.yaml", tmp_path / "m.safetensors"
    spec.write_text("old spec")
    weights.write_text("old weights")
    with pytest.raises(OSError, match="disk full"), replacing([spec, weights]) as (new_spec, new_weights):
        assert new_spec.suffix == ".yaml" and new_weights.suffix == ".safetensors"
        new_spec.write_text("new spec")
        raise OSError(errno.ENOSPC, "disk full")
    assert (spec.read_text(), weights.read_text()) == ("old spec", "old weights")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["m.safetensors", "m.yaml"]
    with replacing([spec, weights]) as (new_spec, new_weights):
        new_spec.write_text("new spec")
        new_weights.write_text("new weights")
    assert (spec.read_text(), weights.read_text()) == ("new spec", "new weights")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["m.safetensors", "m.yaml"]


def test_write_together_names_the_output_that_failed(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.pt"
    first.write_text("old")

    def fails(path: Path) -> None:
        raise OSError(errno.EACCES, "Permission denied", str(path))

    with pytest.raises(UsageError, match=f"^{second}: cannot be written: Permission denied$"):
        write_together({first: lambda path: path.write_text("new"), second: fails})
    assert first.read_text() == "old" and sorted(path.name for path in tmp_path.iterdir()) == ["a.yaml"]


@pytest.fixture(params=[0o022, 0o077], ids=["umask022", "umask077"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """The process's umask set to the parameter for the test (and restored)."""
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_every_file_torchx_writes_gets_the_mode_the_umask_gives(
    reader: ToyReader, umask: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open(tmp_path / "plain", "w"):
        pass
    model = torchx.build(Chain(Dense(3)), (None, 4))
    torchx.save_spec(model, tmp_path / "spec.yaml")
    torchx.save_spec(model, tmp_path / "spec.json")
    model.save(tmp_path / "weights.pt")
    model.save(tmp_path / "weights.safetensors")
    write_together(
        {
            tmp_path / "pair.yaml": lambda path: torchx.save_spec(model, path),
            tmp_path / "pair.safetensors": model.save,
        }
    )
    source = toy(tmp_path / "a.toy", 3)
    for command, output in (("export", "model.pt2"), ("plot", "model.dot"), ("convert", "converted.yaml")):
        inputs = [] if command == "convert" else ["--input", "None,4"]
        assert main([command, str(source), *inputs, "-o", str(tmp_path / output)]) == 0, (
            capsys.readouterr().err
        )
    written = {path.name: mode(path) for path in tmp_path.iterdir() if path.suffix != ".toy"}
    assert written["plain"] == 0o666 & ~umask
    assert written == dict.fromkeys(written, written["plain"])
