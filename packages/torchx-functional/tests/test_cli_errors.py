"""Every refusal on the command line is one line and an exit status, never a traceback:
1 for a spec or model that is wrong (a refusal, or an error TorchX did not expect,
named by its type), 2 for bad arguments and files the system would not let it use."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import torchx.cli._commands
from torchx.cli import main

NARROW = """\
type: Functional
inputs: {input: x, shape: [null, null, 8], dtype: float32}
modules: {}
nodes:
  - {name: first_ten, method: narrow, args: [{node: x}, 1, 0, 10]}
outputs: {node: first_ten}
"""

FIXED = """\
type: Functional
inputs: {input: x, shape: [null, 4], dtype: float32}
modules: {head: {type: Linear, args: {out_features: 3}}}
nodes:
  - {name: y, module: head, args: [{node: x}]}
outputs: {node: y}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        status = main(list(argv))
    except SystemExit as exit:
        status = int(exit.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def spec(tmp_path: Path, text: str, name: str = "model.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def one_line(text: str) -> bool:
    return len(text.strip().splitlines()) == 1 and "Traceback" not in text


def test_export_of_a_step_torch_export_cannot_trace_is_one_line_with_its_fix(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Before: torch.export's RuntimeError as a 150-line traceback (x.narrow(1, 0, 10) on a
    dynamic dim, which export traces at size 4)."""
    model = spec(tmp_path, NARROW)
    status, _, err = run(capsys, "export", model, "--input", "None,None,8", "-o", str(tmp_path / "m.pt2"))
    assert status == 1 and one_line(err), err
    assert err.startswith(
        "torchx export: ExportError: torch.export cannot export Functional for --input None,None,8: "
        "RuntimeError: start (0) + length (10) exceeds dimension size (s"
    ), err
    assert "raised in Functional step 'narrow'" in err
    assert "; fix: torch.export traces the model with 4 in each dynamic (None) dim" in err
    assert not (tmp_path / "m.pt2").exists()
    # the fix: that dim given its size
    status, _, err = run(capsys, "export", model, "--input", "None,16,8", "-o", str(tmp_path / "m.pt2"))
    assert (status, err) == (0, "") and (tmp_path / "m.pt2").exists(), err


def test_a_failure_of_export_that_names_no_dynamic_size_has_no_fix(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def export(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(torch.export, "export", export)
    status, _, err = run(
        capsys, "export", spec(tmp_path, FIXED), "--input", "None,4", "-o", str(tmp_path / "m.pt2")
    )
    assert (status, err) == (
        1,
        "torchx export: ExportError: torch.export cannot export Functional for --input None,4: "
        "ZeroDivisionError: division by zero\n",
    )


@pytest.mark.parametrize("command", ["summary", "validate"], ids=["summary", "validate"])
def test_a_refusal_with_a_fix_is_one_line(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Before: the fix on a second line."""
    status, out, err = run(capsys, command, spec(tmp_path, FIXED), "--input", "2,5")
    said = err if command == "summary" else out
    assert status == 1 and one_line(said), said
    assert "expected shape (None, 4)" in said and "got (2, 5); fix: " in said


def test_an_error_torchx_did_not_expect_is_one_line_with_its_type(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a traceback. Not silent either: its type and message, and where to see more."""

    def broken(*args: object, **kwargs: object) -> None:
        error = KeyError("weight")
        error.add_note("raised in a plugin's summary")
        raise error

    monkeypatch.setattr(torchx.cli._commands, "summarize", broken)
    argv = ["summary", spec(tmp_path, FIXED), "--input", "2,4"]
    status, out, err = run(capsys, *argv)
    assert (status, out) == (1, "")
    assert err == (
        "torchx summary: KeyError: 'weight'; raised in a plugin's summary "
        "(an error TorchX did not expect: torchx --debug shows its traceback)\n"
    )
    with pytest.raises(KeyError, match="weight"):
        main(["--debug", *argv])


def test_an_error_without_a_message_shows_its_type(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise AssertionError

    monkeypatch.setattr(torchx.cli._commands, "summarize", broken)
    status, _, err = run(capsys, "summary", spec(tmp_path, FIXED), "--input", "2,4")
    assert status == 1 and err.startswith("torchx summary: AssertionError (an error"), err


def test_a_file_the_system_refuses_on_the_way_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", "/data/cache.bin")

    monkeypatch.setattr(torchx.cli._commands, "summarize", broken)
    status, _, err = run(capsys, "summary", spec(tmp_path, FIXED), "--input", "2,4")
    assert (status, err) == (2, "torchx summary: error: /data/cache.bin: Permission denied\n")


def test_diff_reports_an_unexpected_failure_as_trouble_not_as_a_difference(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the meta build failed")

    monkeypatch.setattr(torchx.cli._diff, "summarize", broken)
    model = spec(tmp_path, FIXED)
    status, _, err = run(capsys, "diff", model, model, "--input", "2,4")
    assert (status, err) == (2, f"torchx diff: error: {model}: RuntimeError: the meta build failed\n")
