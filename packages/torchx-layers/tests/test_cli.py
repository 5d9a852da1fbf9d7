"""The torchx command line: every subcommand, and every kind of bad input as a one-line error."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import torchx.cli._plugin
import torchx.layers._plugin
from torchx.cli import main
from torchx.core import PluginManager, use_plugins

SEED_CNN = Path(__file__).resolve().parents[3] / "examples" / "seed_cnn.yaml"
SPEC_COMMANDS = {
    "summary": ["--input", "8,3,32,32"],
    "validate": ["--input", "8,3,32,32"],
    "plot": ["--input", "8,3,32,32", "-o", "{out}/model.dot"],
    "convert": ["-o", "{out}/model.json"],
    "export": ["--input", "8,3,32,32", "-o", "{out}/model.pt2"],
}


@pytest.fixture
def only_core_and_layers() -> Iterator[PluginManager]:
    """Exactly torchx-core's commands and torchx-layers' layers, whatever else is installed."""
    manager = PluginManager(load_entry_points=False)
    manager.register(torchx.cli._plugin, "torchx-core")
    manager.register(torchx.layers._plugin, "torchx-layers")
    with use_plugins(manager):
        yield manager


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def arguments(command: str, spec: str | Path, out: Path) -> list[str]:
    return [command, str(spec), *(part.format(out=out) for part in SPEC_COMMANDS[command])]


def test_summary_prints_the_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "summary", str(SEED_CNN), "--input", "None,3,32,32")
    assert status == 0
    assert "Flatten      (None, 1960)" in out and "total parameters: 199,620" in out
    status, out, _ = run(capsys, "summary", str(SEED_CNN), "--input", "8,3,32,32", "--format", "json")
    data = json.loads(out)
    assert data["total_parameters"] == 199_620 and data["activation_bytes"] == 855_680
    assert data["total_mult_adds"] == 8 * 3_405_700


def test_summary_takes_torchinfos_depth_and_columns(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(
        capsys,
        "summary",
        str(SEED_CNN),
        "--input",
        "None,3,32,32",
        "--depth",
        "0",
        "--columns",
        "num_params,mult_adds",
    )
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split() == ["layer", "type", "parameters", "mult-adds"]
    assert lines[2].split() == ["(model)", "Sequential", "199,620", "3,405,700"] and lines[3] == lines[1]
    status, _, err = run(capsys, "summary", str(SEED_CNN), "--input", "2,3,32,32", "--columns", "size")
    assert status == 2 and "--columns: unknown size" in err and err.count("\n") == 1


def test_validate_reports_every_unreadable_entry_with_its_place(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(
        "type: Sequential\nlayers:\n"
        "  - {type: Conv2d, args: {out_channels: 20, kernel_size: '3'}}\n"
        "  - {type: ReLUU}\n"
        "  - {type: Linear, args: {out_features: 10, banana: 1}}\n",
        encoding="utf-8",
    )
    status, out, _ = run(capsys, "validate", str(spec))
    assert status == 1
    lines = out.splitlines()
    assert lines[0].endswith(
        "$.layers[0].args.kernel_size: expected a positive int or a list of positive ints, got '3'"
    )
    assert "$.layers[1].type: unknown layer type 'ReLUU'; did you mean ReLU" in lines[1]
    assert "$.layers[2].args.banana: unknown argument" in lines[2]


def test_validate_places_a_shape_error_in_the_spec(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = tmp_path / "shape.json"
    spec.write_text(
        json.dumps({"type": "Sequential", "layers": [{"type": "Linear", "args": {"out_features": 20}},
                                                     {"type": "Conv2d", "args": {"out_channels": 4, "kernel_size": 3}}]}),
        encoding="utf-8",
    )  # fmt: skip
    status, out, _ = run(capsys, "validate", str(spec), "--input", "8,10")
    assert status == 1
    assert "$.layers[1]: Sequential[1] Conv2d: expected input of shape (N, C_in, H, W)" in out
    status, out, _ = run(capsys, "validate", str(SEED_CNN), "--input", "8,3,32,32")
    assert status == 0 and "ok (readable and builds for the given inputs)" in out


def test_plot_writes_dot_and_svg(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert (
        run(capsys, "plot", str(SEED_CNN), "--input", "None,3,32,32", "-o", str(tmp_path / "m.dot"))[0] == 0
    )
    dot = (tmp_path / "m.dot").read_text(encoding="utf-8")
    assert dot.startswith("digraph") and "Conv2d" in dot and "(None, 1960)" in dot
    if subprocess.run(["which", "dot"], capture_output=True).returncode != 0:
        pytest.skip("Graphviz's dot program is not installed: SVG is not drawn here")
    assert run(capsys, "plot", str(SEED_CNN), "--input", "8,3,32,32", "-o", str(tmp_path / "m.svg"))[0] == 0
    assert "<svg" in (tmp_path / "m.svg").read_text(encoding="utf-8")


def test_convert_round_trips_yaml_and_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert run(capsys, "convert", str(SEED_CNN), "-o", str(tmp_path / "m.json"))[0] == 0
    assert run(capsys, "convert", str(tmp_path / "m.json"), "-o", str(tmp_path / "m.yaml"))[0] == 0
    first = json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))
    assert run(capsys, "convert", str(tmp_path / "m.yaml"), "-o", str(tmp_path / "again.json"))[0] == 0
    assert json.loads((tmp_path / "again.json").read_text(encoding="utf-8")) == first
    assert first["layers"][0] == {
        "type": "Conv2d",
        "args": {"out_channels": 20, "kernel_size": 5, "stride": 2, "padding": 1},
    }


# torch 2.9's loader of .pt2 archives warns about its own read-only buffer
@pytest.mark.filterwarnings("ignore:The given buffer is not writable:UserWarning")
def test_export_writes_a_program_with_a_dynamic_batch(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert (
        run(capsys, "export", str(SEED_CNN), "--input", "None,3,32,32", "-o", str(tmp_path / "m.pt2"))[0] == 0
    )
    program = torch.export.load(tmp_path / "m.pt2")
    assert program.module()(torch.randn(5, 3, 32, 32)).shape == (5, 10)


def test_a_spec_on_standard_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr(
        sys,
        "stdin",
        io.StringIO('{"type": "Sequential", "layers": [{"type": "Linear", "args": {"out_features": 3}}]}'),
    )
    status, out, _ = run(capsys, "summary", "-", "--input", "2,4")
    assert status == 0 and "total parameters: 15" in out


def test_plugins_lists_what_each_registered(
    capsys: pytest.CaptureFixture[str], only_core_and_layers: PluginManager
) -> None:
    status, out, _ = run(capsys, "plugins", "--format", "json")
    assert status == 0
    data = {entry["plugin"]: entry for entry in json.loads(out)["plugins"]}
    assert "Conv2d" in data["torchx-layers"]["layers"]
    builtin = ["summary", "validate", "plot", "plugins", "convert", "export", "diff"]
    assert data["torchx-core"]["commands"] == builtin
    status, out, _ = run(capsys, "plugins")
    assert "torchx-layers" in out and "layers (" in out


@pytest.mark.parametrize("command", list(SPEC_COMMANDS))
def test_bad_files_are_one_line_errors_with_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    (tmp_path / "empty.yaml").write_text("", encoding="utf-8")
    (tmp_path / "broken.yaml").write_text("type: [unclosed\n", encoding="utf-8")
    (tmp_path / "model.txt").write_text("type: Linear\n", encoding="utf-8")
    (tmp_path / "latin1.yaml").write_bytes("type: Caf\N{LATIN SMALL LETTER E WITH ACUTE}\n".encode("latin-1"))
    cases = {
        tmp_path / "missing.yaml": "missing.yaml: no such file",
        tmp_path: "is a directory, not a file",
        tmp_path / "empty.yaml": "empty.yaml: is empty",
        tmp_path / "broken.yaml": "invalid or unsafe YAML",
        tmp_path / "model.txt": "spec files end in .json, .yaml or .yml",
        tmp_path / "latin1.yaml": "latin1.yaml: is not UTF-8 text (invalid continuation byte)",
    }
    for spec, message in cases.items():
        status, _, err = run(capsys, *arguments(command, spec, tmp_path))
        assert status == 2, (spec, err)
        assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("command", list(SPEC_COMMANDS))
def test_a_layer_of_an_uninstalled_plugin_names_the_distribution(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, only_core_and_layers: PluginManager
) -> None:
    spec = tmp_path / "rnn.yaml"
    spec.write_text("type: Sequential\nlayers:\n  - {type: LSTM, args: {hidden_size: 8}}\n", encoding="utf-8")
    status, _, err = run(capsys, *arguments(command, spec, tmp_path))
    assert status == 1
    assert (
        "'LSTM' is provided by torchx-rnn, which is not installed; run: pip install torchx-rnn"
        in (err + capsys.readouterr().out)
        or command == "validate"
    )


def test_validate_names_the_distribution_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, only_core_and_layers: PluginManager
) -> None:
    spec = tmp_path / "rnn.yaml"
    spec.write_text("type: LSTM\nargs: {hidden_size: 8}\n", encoding="utf-8")
    status, out, _ = run(capsys, "validate", str(spec))
    assert status == 1 and "$.type: layer type 'LSTM' is provided by torchx-rnn" in out


@pytest.mark.parametrize("command", ["summary", "validate", "plot", "export"])
@pytest.mark.parametrize("shape", ["8,x,32", "", "8;3", "-1,3"])
def test_a_bad_input_shape_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], command: str, shape: str
) -> None:
    with pytest.raises(SystemExit) as caught:
        output = ["-o", "x.svg"] if command in ("plot", "export") else []
        main([command, str(SEED_CNN), f"--input={shape}", *output])
    assert caught.value.code == 2
    assert "a shape is dims separated by commas" in capsys.readouterr().err


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    from torchx.cli._errors import UsageError

    with pytest.raises(UsageError):
        main(["--debug", "summary", str(tmp_path / "missing.yaml"), "--input", "1,2"])


def test_the_console_script_runs() -> None:
    done = subprocess.run([sys.executable, "-m", "torchx.cli", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("torchx ")


def test_plugins_reports_a_plugin_that_failed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.core.testing import install_fake_distribution

    monkeypatch.syspath_prepend(str(tmp_path))
    install_fake_distribution(
        tmp_path,
        "torchx-broken",
        plugins={"torchx-broken": "tx_broken"},
        modules={"tx_broken": "raise ImportError('no such dependency: fancylib')\n"},
    )
    with use_plugins(PluginManager()), pytest.warns(UserWarning, match="torchx-broken"):
        status, out, _ = run(capsys, "plugins")
    assert status == 0
    assert "FAILED torchx-broken (import): ImportError: no such dependency: fancylib" in out
    assert "torchx-layers (torchx-layers " in out  # everything else still works


# -- bounded input, failing output, closed pipes -------------------------------


def status_of(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``run``, also for errors argparse reports (it exits)."""
    try:
        status = main(list(argv))
    except SystemExit as exit:
        status = int(exit.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def one_line(err: str) -> bool:
    return len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ("99999999999999999999999,3", "a dim is at most 9223372036854775807"),
        pytest.param("9" * 5000 + ",3", "a dim is at most 9223372036854775807", id="5000-digits,3"),
        ("\N{SUPERSCRIPT TWO},3", "a shape is dims separated by commas"),
        ("4611686018427387904,4", "more elements than a tensor can hold"),
        ("None,2305843009213693952:float64", "more elements than a tensor can hold"),
        ("8,x,32", "a shape is dims separated by commas"),
    ],
)
def test_an_input_shape_no_tensor_can_have_is_a_one_line_usage_error(
    capsys: pytest.CaptureFixture[str], shape: str, message: str
) -> None:
    status, _, err = status_of(capsys, "summary", str(SEED_CNN), f"--input={shape}")
    assert status == 2 and message in err and one_line(err), err
    assert len(err) < 400  # the 5,000 digits are not echoed back


def test_a_layer_argument_torch_would_divide_by_is_refused_when_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = tmp_path / "lp.yaml"
    for value in ("0", "0.0", "-0.0", "-2.0", ".inf", ".nan"):
        spec.write_text(f"type: LPPool2d\nargs: {{norm_type: {value}, kernel_size: 2}}\n", encoding="utf-8")
        status, _, err = status_of(capsys, "summary", str(spec), "--input", "1,3,8,8")
        assert status == 1 and "$.args.norm_type: expected a" in err and one_line(err), err
        status, out, _ = status_of(capsys, "validate", str(spec), "--input", "1,3,8,8")
        assert status == 1 and "$.args.norm_type: expected a" in out


def _unwritable_outputs(tmp_path: Path, suffix: str) -> dict[Path, str]:
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    outputs = {
        tmp_path / ("x" * 300 + suffix): "cannot be written: File name too long",
        tmp_path / "a-file" / f"model{suffix}": "is a file, not a folder",
        tmp_path / "missing" / f"model{suffix}": "the folder",
    }
    if Path("/dev/full").exists():  # writes fail as on a full disk
        full = tmp_path / f"full{suffix}"
        full.symlink_to("/dev/full")
        outputs[full] = "cannot be written: No space left on device"
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        outputs[locked / f"model{suffix}"] = "cannot be written: Permission denied"
    return outputs


@pytest.mark.parametrize(
    ("command", "suffix"), [("convert", ".json"), ("convert", ".yaml"), ("plot", ".dot")]
)
def test_an_output_that_cannot_be_written_is_a_one_line_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, suffix: str
) -> None:
    extra = ["--input", "8,3,32,32"] if command == "plot" else []
    for output, message in _unwritable_outputs(tmp_path, suffix).items():
        status, _, err = status_of(capsys, command, str(SEED_CNN), *extra, "-o", str(output))
        assert status == 2 and message in err and one_line(err), (output, err)


def test_export_to_a_full_disk_is_a_one_line_usage_error_not_an_abort(tmp_path: Path) -> None:
    # torch's archive writer aborts the process when a write fails: run it apart
    for output, message in _unwritable_outputs(tmp_path, ".pt2").items():
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "torchx.cli",
                "export",
                str(SEED_CNN),
                "--input",
                "2,3,32,32",
                "-o",
                str(output),
            ],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 2 and message in done.stderr and one_line(done.stderr), (
            output,
            done.stderr,
        )


def test_a_closed_standard_output_ends_the_command_quietly() -> None:
    for argv in (["plugins"], ["summary", str(SEED_CNN), "--input", "8,3,32,32"], ["--help"]):
        read, write = os.pipe()
        os.close(read)  # as `torchx ... | head` once head has quit
        with os.fdopen(write, "wb") as stdout:
            done = subprocess.run(
                [sys.executable, "-m", "torchx.cli", *argv], stdout=stdout, stderr=subprocess.PIPE
            )
        assert done.stderr == b"", (argv, done.stderr)
        # argparse ignores a failed --help, unless the write fails only at the final flush
        assert done.returncode in ((0, 141) if argv == ["--help"] else (141,)), (argv, done.returncode)


def test_a_broken_pipe_inside_a_command_is_quiet_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class ClosedPipe(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["plugins"]) == 141
    monkeypatch.undo()
    assert capsys.readouterr().err == ""


def test_standard_input_that_is_not_text_or_too_long_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.core._specs import MAX_SPEC_BYTES

    cases = {
        io.TextIOWrapper(io.BytesIO(b"\xff\xfe type: ReLU"), encoding="utf-8"): "not UTF-8 text",
        io.TextIOWrapper(io.BytesIO(b"type: \xff"), encoding="utf-8", errors="surrogateescape"): "not UTF-8",
        io.StringIO("#" * (MAX_SPEC_BYTES + 10)): f"spec documents are at most {MAX_SPEC_BYTES:,}",
    }
    for stdin, message in cases.items():
        monkeypatch.setattr(sys, "stdin", stdin)
        status, _, err = status_of(capsys, "validate", "-")
        assert status == 2 and message in err and one_line(err), err


def test_huge_and_exploding_spec_files_are_refused_quickly_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from torchx.core._specs import MAX_SPEC_BYTES, MAX_SPEC_VALUES

    huge = tmp_path / "huge.yaml"
    with huge.open("wb") as file:
        file.truncate(MAX_SPEC_BYTES + 1)
    digits = "9" * 5000
    (tmp_path / "int.json").write_text(f'{{"type": "Linear", "args": {{"out_features": {digits}}}}}')
    (tmp_path / "int.yaml").write_text(f"type: Linear\nargs: {{out_features: {digits}}}\n")
    (tmp_path / "hex.yaml").write_text(f"type: Linear\nargs: {{out_features: 0x{'f' * 1000}}}\n")
    for name, message in {
        "huge.yaml": f"is {MAX_SPEC_BYTES + 1:,} bytes; spec files are at most {MAX_SPEC_BYTES:,}",
        "int.json": "an integer of 5,000 digits",
        "int.yaml": "line 2, column 22: an integer of 5,000 digits",
        "hex.yaml": "an integer of about 1,205 digits",
    }.items():
        for command in SPEC_COMMANDS:
            status, _, err = status_of(capsys, *arguments(command, tmp_path / name, tmp_path))
            assert status == 2 and message in err and one_line(err), (name, command, err)
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(alias_bomb(levels=12), encoding="utf-8")  # 10**12 values once expanded
    status, out, _ = status_of(capsys, "validate", str(bomb))
    assert status == 1 and f"expands to more than {MAX_SPEC_VALUES:,} values" in out
    status, _, err = status_of(capsys, "summary", str(bomb), "--input", "2,4")
    assert status == 1 and f"expands to more than {MAX_SPEC_VALUES:,} values" in err and one_line(err)


def alias_bomb(levels: int) -> str:
    """A Functional spec of about 1 KB whose node arguments expand to ``10**levels`` values."""
    lines = [
        "type: Functional",
        "inputs: {input: x, shape: [null, 4], dtype: float32}",
        "modules: {}",
        "nodes:",
        "  - name: y",
        "    op: torch.relu",
        "    args:",
        "      - {node: x}",
        "      - &a0 {list: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]}",
    ]
    lines += [f"      - &a{i} {{list: [{', '.join([f'*a{i - 1}'] * 10)}]}}" for i in range(1, levels)]
    lines.append("outputs: {node: y}")
    return "\n".join(lines) + "\n"


PADDED = "type: Sequential\nlayers:\n  - {type: Conv1d, args: {out_channels: 8, kernel_size: 3}}\n  - {type: ZeroPad1d, args: {padding: 1048576}}\n"


def test_a_forward_larger_than_memory_fails_validate_and_warns_in_summary_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.core import _memory as memory

    monkeypatch.setattr(memory, "available_memory", lambda device: 16 << 20)  # a 16 MiB machine
    spec = tmp_path / "padded.yaml"
    spec.write_text(PADDED, encoding="utf-8")
    too_large = "a forward allocates a tensor of 64.0 MiB per sample (aten.constant_pad_nd"
    status, out, _ = status_of(capsys, "validate", str(spec), "--input", "None,3,32")
    assert status == 1 and f"$: {too_large}" in out
    status, out, err = status_of(capsys, "summary", str(spec), "--input", "None,3,32")
    assert status == 0 and "largest tensor of a forward (MB): 67.11" in out
    assert err.startswith(f"torchx summary: MemoryWarning: {too_large}") and one_line(err), err


@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_summary_validate_and_plot_read_the_spec_a_checkpoint_holds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, only_core_and_layers: PluginManager, suffix: str
) -> None:
    import torchx
    from torchx.core._specs import load_spec

    model = torchx.build(load_spec(SEED_CNN), (None, 3, 32, 32))
    model.save(tmp_path / f"cnn{suffix}")
    status, from_checkpoint, _ = run(
        capsys, "summary", str(tmp_path / f"cnn{suffix}"), "--input", "8,3,32,32"
    )
    assert status == 0
    assert run(capsys, "summary", str(SEED_CNN), "--input", "8,3,32,32")[1] == from_checkpoint
    status, out, _ = run(capsys, "validate", str(tmp_path / f"cnn{suffix}"), "--input", "8,3,32,32")
    assert (status, out) == (
        0,
        f"{tmp_path / f'cnn{suffix}'}: ok (readable and builds for the given inputs)\n",
    )
    assert run(capsys, *arguments("plot", tmp_path / f"cnn{suffix}", tmp_path))[0] == 0


def test_a_checkpoint_without_a_spec_is_a_one_line_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, only_core_and_layers: PluginManager
) -> None:
    torch.save({"weight": torch.zeros(2)}, tmp_path / "plain.pth")
    status, out, err = run(capsys, "summary", str(tmp_path / "plain.pth"), "--input", "1,2")
    assert (status, out) == (2, "")
    assert (
        err
        == f"torchx summary: error: {tmp_path / 'plain.pth'}: not a TorchX checkpoint (write one with model.save(path))\n"
    )


INPUT_COMMANDS = {
    "summary": [],
    "validate": [],
    "plot": ["-o", "{out}/model.dot"],
    "export": ["-o", "{out}/model.pt2"],
    "diff": ["{spec}"],
}


@pytest.mark.parametrize("command", list(INPUT_COMMANDS))
def test_inputs_a_model_does_not_take_are_one_line_usage_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    def given(spec: Path, *inputs: str) -> tuple[int, str]:
        extra = [part.format(out=tmp_path, spec=spec) for part in INPUT_COMMANDS[command]]
        argv = [command, str(spec), *extra, *(part for shape in inputs for part in ("--input", shape))]
        status, _, err = status_of(capsys, *argv)
        assert "Traceback" not in err, err
        return status, err

    prefix = f"torchx {command}: error: " + (f"{SEED_CNN}: " if command == "diff" else "")
    once = f"{prefix}--input given 2 times, but Sequential takes 1 input: give one --input per input\n"
    assert given(SEED_CNN, "8,3,32,32", "8,3,32,32") == (2, once)


@pytest.mark.parametrize("command", list(INPUT_COMMANDS))
def test_a_dtype_the_models_parameters_cannot_take_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    relu = tmp_path / "relu.yaml"
    relu.write_text("type: Sequential\nlayers: [{type: ReLU}]\n", encoding="utf-8")
    for spec, dtype in ((SEED_CNN, "int8"), (SEED_CNN, "bool"), (relu, "int8")):
        extra = [part.format(out=tmp_path, spec=spec) for part in INPUT_COMMANDS[command]]
        argv = [command, str(spec), *extra, "--input", "8,3,32,32", "--dtype", dtype]
        status, _, err = status_of(capsys, *argv)
        if spec == relu:  # no parameters: a ReLU runs on int8
            assert (status, err) == (0, ""), err
            continue
        assert status == 2 and one_line(err), err
        assert f"--dtype {dtype}: Sequential has parameters, and parameters take a floating-point" in err
