"""Random and corrupted spec documents: a model that builds and runs, or a TorchX
error that says where; never another exception, a RecursionError, a hang, or
an allocation beyond what the device has."""

from __future__ import annotations

import io
import json
import math
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import torch
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from report import Report
from strategies import corrupted, models
from torch import nn

import torchx
import torchx.layers as L
from torchx.cli import main as torchx_main
from torchx.core import AllocationError, LayerError, SpecError, from_spec, record_of
from torchx.core import _memory as memory
from torchx.core._specs import parse_spec
from torchx.core._validate import check_spec

RUN_LIMIT = 64 * 2**20
"""Models whose weights need more than this are checked abstractly only."""


def _outcome(document: Any, input_shape: tuple[int, ...]) -> str:
    """What TorchX makes of ``document``; fails the test on anything untoward."""
    try:
        model = from_spec(document)
    except SpecError as error:
        assert error.where.startswith("$") and error.problem, error
        return "refused with a SpecError naming its place"
    try:
        torchx.build(model, input_shape, device="meta")
    except LayerError as error:
        assert error.layer and error.problem, error
        return "refused with a ShapeError naming the layer"
    need = memory.weight_bytes(model)
    available = memory.available_memory(torch.device("cpu"))
    assert available is not None
    if need > available:
        with pytest.raises(AllocationError, match=r"would allocate .* available"):
            torchx.build(from_spec(document), input_shape)
        return "refused with an AllocationError before allocating"
    if need > RUN_LIMIT:
        return "built abstractly (too large to run here)"
    model = from_spec(document).eval()
    try:
        output = model(torch.randn(input_shape))
    except LayerError as error:
        # Meta kernels skip some value checks (an ELU alpha of 1e308 overflows float32
        # only in a real run): torch's refusal must still come as an error naming the layer.
        assert error.layer and error.problem, error
        return "refused at its first real run with an error naming the layer"
    assert isinstance(output, torch.Tensor) and output.shape[0] == input_shape[0]
    return "built and ran"


@settings(max_examples=2500)
@given(data=st.data())
def test_random_documents_build_and_run_or_fail_with_a_torchx_error(
    data: st.DataObject, report: Report
) -> None:
    model = data.draw(models())
    document = data.draw(corrupted(model)) if data.draw(st.integers(0, 4)) else model.spec
    outcome = _outcome(document, model.input_shape)
    report.count("fuzz", f"spec documents: {outcome}")


@settings(max_examples=300)
@given(data=st.data())
def test_check_spec_reports_exactly_what_building_refuses(data: st.DataObject, report: Report) -> None:
    model = data.draw(models())
    document = data.draw(corrupted(model))
    problems = check_spec(document, model.input_shape)
    assert all(problem.where.startswith("$") for problem in problems)
    too_large = [problem for problem in problems if " available on " in problem.message]
    if any("parameters and buffers take" in problem.message for problem in too_large):
        # a build on meta allocates nothing: the one on the CPU refuses before allocating
        with pytest.raises(AllocationError):
            torchx.build(from_spec(document), model.input_shape)
    # a forward's largest tensor too large to run (a padding of 10**12) is no reason to refuse the build
    problems = [problem for problem in problems if problem not in too_large]
    try:
        torchx.build(from_spec(document), model.input_shape, device="meta")
        refused = False
    except (SpecError, LayerError):
        refused = True
    assert bool(problems) == refused, problems
    report.count("fuzz", "check_spec against building")


def _as_text(document: Any, kind: str) -> str:
    if kind == "json":
        return json.dumps(document, default=str)
    return yaml.safe_dump(json.loads(json.dumps(document, default=str)))


@settings(max_examples=60)
@given(data=st.data(), kind=st.sampled_from(["json", "yaml"]))
def test_spec_files_on_the_command_line_never_show_a_traceback(
    data: st.DataObject, kind: str, report: Report, tmp_path_factory: pytest.TempPathFactory
) -> None:
    model = data.draw(models())
    document = data.draw(corrupted(model)) if data.draw(st.booleans()) else model.spec
    path = tmp_path_factory.mktemp("specs") / f"model.{kind}"
    path.write_text(_as_text(document, kind), encoding="utf-8")
    shape = ",".join(map(str, model.input_shape))
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        status = torchx_main(["validate", str(path), "--input", shape])
    assert status in (0, 1), stderr.getvalue()
    assert "Traceback" not in stderr.getvalue() + stdout.getvalue()
    report.count("fuzz", f"torchx validate on {kind} files")


@pytest.mark.parametrize("kind", ["json", "yaml"])
def test_ten_thousand_levels_of_nesting_are_refused_without_recursing(kind: str, report: Report) -> None:
    layer: dict[str, Any] = {"type": "Linear", "args": {"out_features": 2}}
    for _ in range(10_000):
        layer = {"type": "Sequential", "layers": [layer]}
    with pytest.raises(SpecError, match="nests deeper than 64 levels"):
        from_spec(layer)
    text = "[" * 10_000 + "]" * 10_000 if kind == "json" else "- " * 10_000 + "1"
    with pytest.raises(SpecError, match="nests too deeply"):
        parse_spec(text, kind)
    report.count("fuzz", "10,000-level documents", 2)


def test_the_deepest_allowed_nesting_builds_and_runs_in_linear_time(report: Report) -> None:
    layer: dict[str, Any] = {"type": "Linear", "args": {"out_features": 2}}
    for _ in range(63):
        layer = {"type": "Sequential", "layers": [layer, {"type": "ReLU"}]}
    model = from_spec(layer)
    linear_calls = []
    inner = model
    while isinstance(inner, L.Sequential):
        inner = inner[0]
    inner.register_forward_pre_hook(lambda module, args: linear_calls.append(1))
    assert model(torch.zeros(2, 3)).shape == (2, 2) and model.is_built
    assert len(linear_calls) <= 2  # once per call, never once per level (it was exponential once)
    report.count("fuzz", "64-level documents built and run")


def test_yaml_aliases_cannot_describe_exponentially_many_layers(report: Report) -> None:
    lines = ["a0: &a0 {type: ReLU}"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]" for i in range(1, 40)]
    lines.append("model: {type: Sequential, layers: *a39}")
    document = parse_spec("\n".join(lines))["model"]
    with pytest.raises(SpecError, match="more than 100000 layers"):
        from_spec(document)
    report.count("fuzz", "YAML alias bombs")


# -- memory ------------------------------------------------------------------

TRILLION = {
    "type": "Sequential",
    "layers": [{"type": "ReLU"}, {"type": "Linear", "args": {"out_features": 10**6}}],
}


def test_a_spec_asking_for_a_trillion_parameters_fails_before_allocating(
    report: Report, tmp_path: Path
) -> None:
    model = from_spec(TRILLION)
    with pytest.raises(AllocationError) as caught:
        torchx.build(model, (None, 10**6))
    assert str(caught.value).startswith("Sequential: building it would allocate 3.6 TiB of parameters")
    assert "the largest layer is the Linear at '1', with 3.6 TiB" in str(caught.value)
    assert not model.is_built
    torchx.build(model, (None, 10**6), device="meta")  # abstractly, when asked to
    assert model[1].weight.shape == (10**6, 10**6) and model[1].weight.is_meta
    path = tmp_path / "trillion.json"
    path.write_text(json.dumps(TRILLION), encoding="utf-8")
    stdout = io.StringIO()
    with redirect_stdout(stdout):
        assert torchx_main(["summary", str(path), "--input", "None,1000000"]) == 0
    assert "1,000,001,000,000" in stdout.getvalue()  # the summary builds on meta
    report.count("fault", "a spec asking for 10**12 parameters")


BUDGET = 16 * 2**20
"""A pretend device of 16 MiB for the allocation property."""


@settings(max_examples=200)
@given(data=st.data())
def test_no_build_allocates_more_than_its_device_has(data: st.DataObject, report: Report) -> None:
    model = data.draw(models())
    sized = [
        (index, name)
        for index, layer in enumerate(model.spec["layers"])
        for name, value in layer.get("args", {}).items()
        if type(value) is int and name in ("out_features", "out_channels", "hidden_size")
    ]
    if not sized:
        return
    index, name = data.draw(st.sampled_from(sized))
    size = data.draw(st.sampled_from([2**10, 2**14, 2**20, 10**12]))
    document = json.loads(json.dumps(model.spec))
    document["layers"][index]["args"][name] = size
    with (
        mock.patch.object(memory, "available_memory", lambda device: BUDGET),
        mock.patch.object(memory, "UNCHECKED_BYTES", 0),
    ):
        try:
            built = from_spec(document)
        except SpecError as error:  # a size whose byte count overflows int64: torch refuses it too
            assert "refuses these arguments" in str(error) and "overflow" in str(error)
            report.count("fuzz", "sizes torch cannot represent, refused at construction")
            return
        try:
            torchx.build(built, model.input_shape)
        except AllocationError as error:
            report.count("fuzz", "oversized builds refused before allocating")
            assert "16.0 MiB available" in error.problem
            assert not any(
                record_of(layer) is not None and not isinstance(layer, L.Layer) for layer in built.modules()
            ), "a layer stayed built"
            return
    for layer in built.modules():
        if not list(layer.children()):
            assert memory.weight_bytes(layer) <= BUDGET
    report.count("fuzz", "builds that fit their device")


NATIVES = [
    (nn.Linear, ["in_features", "out_features"], {}),
    (nn.Bilinear, ["in1_features", "in2_features", "out_features"], {}),
    (nn.Conv1d, ["in_channels", "out_channels", "kernel_size"], {}),
    (nn.Conv2d, ["in_channels", "out_channels", "kernel_size"], {}),
    (nn.Conv3d, ["in_channels", "out_channels", "kernel_size"], {}),
    (nn.ConvTranspose2d, ["in_channels", "out_channels", "kernel_size"], {}),
    (nn.Embedding, ["num_embeddings", "embedding_dim"], {}),
    (nn.EmbeddingBag, ["num_embeddings", "embedding_dim"], {}),
    (nn.RNN, ["input_size", "hidden_size", "num_layers"], {"bidirectional": True}),
    (nn.LSTM, ["input_size", "hidden_size", "num_layers"], {"bidirectional": True}),
    (nn.GRU, ["input_size", "hidden_size", "num_layers"], {"bidirectional": True}),
    (nn.LSTMCell, ["input_size", "hidden_size"], {}),
    (nn.MultiheadAttention, ["embed_dim"], {"num_heads": 1}),
    (nn.TransformerEncoderLayer, ["d_model", "dim_feedforward"], {"nhead": 1}),
    (nn.TransformerDecoderLayer, ["d_model", "dim_feedforward"], {"nhead": 1}),
    (nn.BatchNorm2d, ["num_features"], {}),
    (nn.LayerNorm, ["normalized_shape"], {}),
    (nn.GroupNorm, ["num_channels"], {"num_groups": 1}),
    (nn.PReLU, ["num_parameters"], {}),
]


@settings(max_examples=600)
@given(native=st.sampled_from(NATIVES), data=st.data())
def test_the_allocation_bound_holds_for_every_parameterised_family(
    native: tuple[type[nn.Module], list[str], dict[str, Any]], data: st.DataObject, report: Report
) -> None:
    cls, sizes, fixed = native
    arguments = {name: data.draw(st.integers(1, 300), label=name) for name in sizes} | fixed
    bound = memory.allocation_bound(cls, arguments, 4)
    need = memory.measured_need(cls, arguments, True)
    assert need <= bound, (cls.__name__, arguments, need, bound)
    report.count("fuzz", "allocation bound vs measured need")


# -- specs are data ------------------------------------------------------------------

CANARY = "torchx_reliability_canary"


@pytest.fixture
def canary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A module whose import writes a file: if anything imports it, the file appears."""
    marker = tmp_path / "imported"
    (tmp_path / f"{CANARY}.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('imported')\nsystem = print\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return marker


PAYLOADS = [
    ("yaml", f"!!python/object/apply:{CANARY}.system ['echo pwned']"),
    ("yaml", f"type: !!python/name:{CANARY}.system\n"),
    ("yaml", f"!!python/module:{CANARY}\n"),
    ("yaml", f"type: Sequential\nlayers:\n- !!python/object/new:{CANARY}.system []\n"),
    ("json", json.dumps({"type": "os.system", "args": {"command": "echo pwned"}})),
    ("json", json.dumps({"type": "subprocess.Popen", "args": {"args": ["true"]}})),
    ("json", json.dumps({"type": "__import__", "args": {"name": CANARY}})),
    ("json", json.dumps({"type": f"{CANARY}.system"})),
    ("json", json.dumps({"type": "Sequential", "layers": [{"type": f"{CANARY}:system"}]})),
    ("json", json.dumps({"type": "Linear", "args": {"out_features": {"__reduce__": CANARY}}})),
]


@pytest.mark.parametrize(("kind", "text"), PAYLOADS)
def test_a_spec_carrying_code_imports_and_runs_nothing(
    kind: str, text: str, canary: Path, tmp_path: Path, report: Report
) -> None:
    path = tmp_path / f"payload.{kind}"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError):
        torchx.load_spec(path)
    stderr = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(stderr):
        assert torchx_main(["validate", str(path)]) in (1, 2)
    assert "Traceback" not in stderr.getvalue()
    assert not canary.exists()
    assert CANARY not in sys.modules
    report.count("fault", "spec documents carrying code (canary untouched)")


def test_nan_and_infinite_numbers_are_refused_where_they_stand(report: Report) -> None:
    for value in (math.nan, math.inf, -math.inf):
        with pytest.raises(SpecError, match=r"^\$\.layers\[1\]\.args\.p: expected a finite number"):
            from_spec(
                {
                    "type": "Sequential",
                    "layers": [{"type": "ReLU"}, {"type": "Dropout", "args": {"p": value}}],
                }
            )
    report.count("fuzz", "non-finite numbers", 3)


def test_a_forward_too_large_to_run_is_reported_and_the_model_still_builds() -> None:
    # found by the fuzzing: tiny weights, and an output of 2 * 10**12 positions
    document = {
        "type": "Sequential",
        "layers": [
            {"type": "Conv1d", "args": {"out_channels": 1, "kernel_size": 1, "padding": 10**12}},
            {"type": "Flatten"},
        ],
    }
    (problem,) = check_spec(document, (2, 1, 1))
    assert problem.where == "$" and problem.message.startswith("a forward allocates a tensor of 14.6 TiB")
    assert memory.weight_bytes(torchx.build(from_spec(document), (2, 1, 1))) == 8
