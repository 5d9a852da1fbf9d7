"""Bounded resources for any spec: YAML alias bombs anywhere in a document, text
past the size limit, integers no size or number needs, and the command line's
exit codes and one-line errors for bad input and output.

Each case must end in a SpecError (or a one-line CLI error) after work linear in
the document as stored; none may expand what an alias names, convert thousands
of digits, print a traceback or leave a broken pipe's error behind.
"""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from report import Report

from torchx.cli import main as torchx_main
from torchx.core import SpecError, from_spec
from torchx.core import _specs as specs
from torchx.core._specs import MAX_INT_DIGITS, MAX_SPEC_BYTES, MAX_SPEC_VALUES, parse_spec
from torchx.core._validate import check_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEED_CNN = EXAMPLES / "seed_cnn.yaml"
SMALL = 20_000
"""Expanded sizes up to this are read in full (cheap); between it and the limit, skipped."""

# -- alias bombs -----------------------------------------------------------------

PLACES = {
    "Functional node args": "nodes:\n  - name: y\n    op: torch.relu\n    args: [{{node: x}}, {bomb}]\n",
    "Functional node kwargs": "nodes:\n  - name: y\n    op: torch.relu\n    args: [{{node: x}}]\n"
    "    kwargs: {{inplace: {bomb}}}\n",
    "Functional outputs": "nodes: []\noutputs: {bomb}\n",
    "a module's layer args": "modules:\n  p: {{type: Permute, args: {{dims: {bomb}}}}}\n"
    "nodes:\n  - {{name: y, module: p, args: [{{node: x}}]}}\n",
    "an unknown key": "nodes: []\nnotes: {bomb}\n",
}


def _bomb(fan_out: int, depth: int) -> tuple[list[str], str, int]:
    """Anchor lines, the alias of the top, and how many values it expands to:
    ``depth`` levels of ``{list: [fan_out aliases of the level below]}``."""
    anchors = [f"  - &b0 {{list: [{', '.join(['1'] * fan_out)}]}}"]
    values = 3 + fan_out  # the object, its key, its list, the ones
    for level in range(1, depth):
        anchors.append(f"  - &b{level} {{list: [{', '.join([f'*b{level - 1}'] * fan_out)}]}}")
        values = 3 + fan_out * values
    return anchors, f"*b{depth - 1}", values


def _functional(place: str, fan_out: int, depth: int) -> tuple[str, int]:
    anchors, top, values = _bomb(fan_out, depth)
    body = PLACES[place].format(bomb=top)
    outputs = "outputs: {node: x}\n" if "nodes: []" in body else "outputs: {node: y}\n"
    if "outputs:" in body:
        outputs = ""
    text = (
        "type: Functional\nanchors:\n" + "\n".join(anchors) + "\n"
        "inputs: {input: x, shape: [null, 4, 3], dtype: float32}\n" + body + outputs
    )
    return text, values


@settings(max_examples=40)
@given(
    place=st.sampled_from(sorted(PLACES)),
    fan_out=st.integers(2, 12),
    depth=st.integers(1, 60),
)
def test_an_alias_bomb_anywhere_is_refused_before_it_is_expanded(
    place: str, fan_out: int, depth: int, report: Report
) -> None:
    text, values = _functional(place, fan_out, depth)
    assume(values <= SMALL or values > MAX_SPEC_VALUES)
    document = parse_spec(text)
    problems = check_spec(document)
    refused = [problem for problem in problems if "expands to more than" in problem.message]
    if values > MAX_SPEC_VALUES:
        assert len(problems) == 1 and refused, problems
        assert refused[0].where.startswith("$.") and f"{MAX_SPEC_VALUES:,}" in refused[0].message
        with pytest.raises(SpecError, match="expands to more than"):
            from_spec(document)
        report.count("fault", f"alias bombs (past {MAX_SPEC_VALUES:,} values) in {place}")
    else:
        assert not refused, problems
        report.count("fuzz", "aliases within the limit, read as if written out")


def test_the_bomb_of_the_report_through_torchx_validate(tmp_path: Path, report: Report) -> None:
    """The finding: a 1 KB Functional whose node arguments expand to 10**9 values
    grew `torchx validate` past 2.6 GiB; now it is refused in one linear walk."""
    text, values = _functional("Functional node args", 10, 9)
    assert len(text) < 1200 and values > 10**9
    path = tmp_path / "bomb.yaml"
    path.write_text(text, encoding="utf-8")
    status, out, err = _cli("validate", str(path), "--input", "2,4,3")
    assert status == 1 and "bomb.yaml: $." in out and f"more than {MAX_SPEC_VALUES:,} values" in out, err
    status, _, err = _cli("summary", str(path), "--input", "2,4,3")
    assert status == 1 and _one_line(err) and "expands to more than" in err
    report.count("fault", "the reported 1 KB alias bomb, through torchx validate and summary")


def test_documents_that_hold_themselves_are_refused(report: Report) -> None:
    for text in (
        "type: Functional\nnodes: &n [{name: y, op: torch.relu, args: *n}]\n",
        "type: Sequential\nlayers: &l [{type: Sequential, layers: *l}]\n",
        "type: ReLU\nargs: &a {inplace: *a}\n",
    ):
        (problem,) = check_spec(parse_spec(text))
        assert "holds itself" in problem.message
        report.count("fault", "self-referential YAML documents")


def test_a_real_large_model_is_far_below_the_limit(report: Report) -> None:
    """A ResNet-152-shaped Functional (bottlenecks 3-8-36-3): its spec's size, and
    reading it, stay ordinary; the limits have two orders of magnitude of headroom."""
    nodes, modules = [], {}
    previous = "image"
    for index in range(155):
        for kind, args in (
            ("Conv2d", {"out_channels": 64, "kernel_size": 3, "padding": 1}),
            ("BatchNorm2d", {}),
        ):
            name = f"{kind.lower()}_{index}"
            modules[name] = {"type": kind, "args": args} if args else {"type": kind}
            nodes.append({"name": name, "module": name, "args": [{"node": previous}]})
            previous = name
        nodes.append({"name": f"relu_{index}", "op": "F.relu", "args": [{"node": previous}]})
        previous = f"relu_{index}"
    document = {
        "type": "Functional",
        "inputs": {"input": "image", "shape": [None, 3, 8, 8], "dtype": "float32"},
        "modules": modules,
        "nodes": nodes,
        "outputs": {"node": previous},
    }
    text = json.dumps(document)
    assert parse_spec(text, "json") == parse_spec(yaml.safe_dump(document)) == document
    old = specs.MAX_SPEC_VALUES
    try:
        specs.MAX_SPEC_VALUES = MAX_SPEC_VALUES // 100
        specs._measure(document)  # fits in a hundredth of the limit
    finally:
        specs.MAX_SPEC_VALUES = old
    assert len(text) < MAX_SPEC_BYTES // 100
    report.count("fuzz", "a 465-node Functional measured against a hundredth of the limits")


# -- large documents ---------------------------------------------------------------


def test_text_past_the_size_limit_is_refused_before_parsing(tmp_path: Path, report: Report) -> None:
    text = "- [" * 8 + "1" + "]" * 8 + "\n"
    too_long = text * (MAX_SPEC_BYTES // len(text) + 1)
    for kind in ("yaml", "json"):
        with pytest.raises(SpecError, match=f"at most {MAX_SPEC_BYTES:,}"):
            parse_spec(too_long, kind)
    path = tmp_path / "huge.yaml"
    with path.open("wb") as file:
        file.truncate(MAX_SPEC_BYTES + 1)
    with pytest.raises(SpecError, match=f"is {MAX_SPEC_BYTES + 1:,} bytes"):
        specs.load_spec(path)
    for argv in (["validate", str(path)], ["convert", str(path), "-o", str(tmp_path / "m.json")]):
        status, _, err = _cli(*argv)
        assert status == 2 and _one_line(err) and f"is {MAX_SPEC_BYTES + 1:,} bytes" in err
    report.count("fault", "documents past MAX_SPEC_BYTES (string, file, CLI)", 5)


_DATA = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)  # a spec's integers are int64 (MAX_SPEC_INT)
    | st.floats(allow_nan=False)
    | st.text(st.characters(codec="utf-8"), max_size=12),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=60)
@given(data=_DATA)
def test_the_c_loader_reads_what_the_pure_loader_reads(data: Any, report: Report) -> None:
    text = yaml.safe_dump({"data": data})
    fast = yaml.load(text, Loader=specs._yaml_loader())
    assert fast == yaml.load(text, Loader=specs._pure_yaml_loader()) == {"data": data}
    report.count("fuzz", "random data read by the C and the pure-Python YAML loaders")


def test_the_c_loader_is_used_and_refuses_python_tags(tmp_path: Path, report: Report) -> None:
    if yaml.__with_libyaml__:
        assert issubclass(specs._yaml_loader(), yaml.CSafeLoader)
    canary = tmp_path / "canary"
    for tag in (
        "!!python/object/apply:os.system",
        "!!python/object/new:os.system",
        "!!python/name:os.system",
    ):
        with pytest.raises(SpecError, match="invalid or unsafe YAML"):
            parse_spec(f"type: Linear\nargs: {tag} ['touch {canary}']\n")
    assert not canary.exists()
    report.count("fault", "Python tags through the C loader", 3)


# -- huge integers -------------------------------------------------------------------

INTEGERS = {
    "5,000 decimal digits": ("9" * 5000, "an integer of 5,000 digits"),
    "negative, 5,000 digits": ("-" + "9" * 5000, "an integer of 5,000 digits"),
    "with underscores": ("1_" * 1000 + "1", "an integer of 1,001 digits"),
    "hex, 5,000 digits": ("0x" + "f" * 5000, "an integer of 5,002 characters"),
    "hex, 600 digits": ("0x" + "f" * 600, "an integer of about 723 digits"),
    "octal, 3,000 digits": ("0" + "7" * 3000, "an integer of 3,001 characters"),
    "binary, 3,000 digits": ("0b" + "1" * 3000, "an integer of 3,002 characters"),
    "sexagesimal, 3,000 parts": ("1" + ":59" * 3000, "an integer of 9,001 characters"),
}


@pytest.mark.parametrize("case", sorted(INTEGERS))
@pytest.mark.parametrize(
    "place", ["args: {{out_features: {n}}}", "args: {{out_features: 3, bias: [{n}]}}", "? {n}\n: 1"]
)
def test_integers_no_size_or_number_needs_are_one_line_spec_errors(
    case: str, place: str, report: Report, tmp_path: Path
) -> None:
    number, message = INTEGERS[case]
    text = "type: Linear\n" + place.format(n=number) + "\n"
    with pytest.raises(SpecError) as caught:
        parse_spec(text, where="m.yaml")
    assert message in str(caught.value) and "integers in a spec are int64" in str(caught.value)
    assert str(caught.value).startswith("m.yaml, line 2, column ") and "\n" not in str(caught.value)
    report.count("fault", f"YAML integers: {case}")


def test_huge_integers_in_json_and_in_given_data(tmp_path: Path, report: Report) -> None:
    digits = "9" * 5000
    with pytest.raises(SpecError, match="an integer of 5,000 digits"):
        parse_spec(f'{{"type": "Linear", "args": {{"out_features": -{digits}}}}}', "json")
    for document, where in (
        ({"type": "Linear", "args": {"out_features": 10**5000}}, "$.args.out_features"),
        ({"type": "Sequential", "layers": [{"type": "ReLU"}, 16**5000]}, "$.layers[1]"),
        ({"type": "Sequential", "layers": [], 10**700: 1}, "$[<an int of about 701 digits>]"),
    ):
        (problem,) = check_spec(document)
        assert problem.where.startswith(where) and "an integer of about" in problem.message
    path = tmp_path / "int.json"
    path.write_text(f'{{"type": "Linear", "args": {{"out_features": {digits}}}}}', encoding="utf-8")
    for command in ("summary", "validate", "convert", "export", "plot"):
        output = {"convert": "m.json", "export": "m.pt2", "plot": "m.dot"}.get(command)
        argv = [command, str(path), "--input", "2,3"] if command != "convert" else [command, str(path)]
        if output:
            argv += ["-o", str(tmp_path / output)]
        status, _, err = _cli(*argv)
        assert status == 2 and _one_line(err) and "an integer of 5,000 digits" in err, err
    report.count("fault", "huge integers in JSON, in given data, and on every command", 8)


# -- the command line -------------------------------------------------------------------


def _cli(*argv: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        try:
            status = torchx_main(list(argv))
        except SystemExit as exit:
            status = int(exit.code or 0)
    return status, stdout.getvalue(), stderr.getvalue()


def _one_line(err: str) -> bool:
    return len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_bad_input_and_output_exit_2_and_wrong_models_exit_1_in_one_line(
    tmp_path: Path, report: Report
) -> None:
    lp = tmp_path / "lp.yaml"
    lp.write_text("type: LPPool2d\nargs: {norm_type: 0, kernel_size: 2}\n", encoding="utf-8")
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    full = tmp_path / "full.json"
    cases: list[tuple[list[str], int, str]] = [
        (["summary", str(SEED_CNN), "--input", "99999999999999999999999,3"], 2, "a dim is at most"),
        (["summary", str(SEED_CNN), "--input", "9" * 5000], 2, "a dim is at most"),
        (["summary", str(SEED_CNN), "--input", "4611686018427387904,4"], 2, "more elements than a tensor"),
        (["export", str(SEED_CNN), "--input", "None,2305843009213693952", "-o", "m.pt2"], 2, "more elements"),
        (["summary", str(SEED_CNN)], 2, "give the input shape with --input SHAPE"),
        (["summary", str(lp), "--input", "1,3,8,8"], 1, "$.args.norm_type: expected a positive number"),
        (["convert", str(SEED_CNN), "-o", str(tmp_path / ("x" * 300 + ".json"))], 2, "File name too long"),
        (
            ["plot", str(SEED_CNN), "--input", "1,3,32,32", "-o", str(tmp_path / "a-file" / "m.dot")],
            2,
            "is a file",
        ),
        (["convert", str(SEED_CNN), "-o", str(tmp_path / "no" / "m.yaml")], 2, "does not exist"),
    ]
    if Path("/dev/full").exists():
        full.symlink_to("/dev/full")
        cases.append((["convert", str(SEED_CNN), "-o", str(full)], 2, "No space left on device"))
        dot = tmp_path / "full.dot"
        dot.symlink_to("/dev/full")
        cases.append((["plot", str(SEED_CNN), "--input", "1,3,32,32", "-o", str(dot)], 2, "No space left"))
    for argv, expected, message in cases:
        status, _, err = _cli(*argv)
        assert status == expected and message in err and _one_line(err), (argv, status, err)
        assert len(err) < 600, err  # nothing huge echoed back
        report.count("fault", f"CLI: {message} (exit {expected})")


def test_a_closed_pipe_ends_torchx_quietly(tmp_path: Path, report: Report) -> None:
    """`torchx ... | head`: once head has quit, torchx stops with 141 and says nothing."""
    text, _ = _functional("Functional node args", 10, 9)
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(text, encoding="utf-8")
    read, write = os.pipe()
    os.close(read)
    with os.fdopen(write, "wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "torchx.cli", "validate", str(bomb)], stdout=stdout, stderr=subprocess.PIPE
        )
    assert done.returncode == 141 and done.stderr == b"", done.stderr
    report.count("fault", "a closed stdout (torchx validate | head)")


def test_the_size_limits_are_coherent(report: Report) -> None:
    """The layer limit fits in the value limit (a layer is at least 3 values: its
    object, "type" and the name), and every integer kept can be printed."""
    assert specs.MAX_LAYERS * 3 < MAX_SPEC_VALUES
    assert sys.int_info.str_digits_check_threshold >= MAX_INT_DIGITS
    assert math.log10(sys.float_info.max) < MAX_INT_DIGITS
    report.count("fuzz", "limit constants checked")
