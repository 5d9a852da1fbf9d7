"""Names that cannot change a program.

Random input, output, layer and spec node names (Unicode compatibility forms
that Python reads as another identifier, keywords, the names the generated
forward uses itself, names that normalise to each other, any string) give a
Functional whose every input reaches its own use, exactly, by position, by
name and as one dict, before and after a spec round trip; or a clean TorchX
error that names both clashing names. Never a raw exception, never a wrong
result.
"""

from __future__ import annotations

import json
import keyword
import unicodedata
from dataclasses import dataclass
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from report import Report
from torch import nn

import torchx.layers as L
from torchx.core import SpecError, TorchXError
from torchx.functional._codegen import CODE_GLOBALS, CODE_LOCALS

functional = pytest.importorskip("torchx.functional")


def wide(text: str) -> str:
    """``text`` in fullwidth letters, which Python reads (NFKC) as ``text``."""
    return "".join(chr(ord(char) + 0xFEE0) for char in text)


SPECIAL = [
    # what the generator names nodes, modules and inputs itself
    "x", "x_1", "relu", "mul", "view", "linear", "identity", "inputs_0", "value",
    # keywords and soft keywords
    *keyword.kwlist, "match", "case", "_",
    # what the generated code refers to, and the model's own attributes
    "self", "torch", "F", "operator", "builtins", "type", "dict", "float", "slice", "error", "forward",
    "_MISSING", "_Tensor", "_explain", "_keywords", "_prepared_inputs", "_recorded", "_constant_0",
    "_torchx_program",
    # every global and local the generated forward uses (torchx.functional._codegen), and Python's
    *CODE_GLOBALS, *CODE_LOCALS, "getattr", "Exception", "isinstance", "len", "print",
    # not identifiers at all
    "", " ", "a b", "a-b", "1x", "x.y", "'", '"', "\\", "\n", "{}",
    # compatibility forms that Python reads as another identifier (NFKC), and that identifier
    wide("x"), wide("relu"), wide("mul"), wide("self"), wide("torch"), wide("class"), wide("F"), wide("x_1"),
    "\ufb01", "fi",  # ligature
    "\u210c", "H",  # blackletter capital
    "x\u00b2", "x2",  # superscript
    "\u2167", "VIII",  # roman numeral
    "\u00b5", "\u03bc",  # micro sign, mu
    "e\u0301", "\u00e9",  # decomposed, composed
    "\u0301", "\u6570\u636e",  # a lone combining mark; CJK
]  # fmt: skip

names = st.one_of(st.sampled_from(SPECIAL), st.text(max_size=5))


@dataclass(frozen=True)
class Case:
    structure: str  # "dict", "list" or "single"
    keys: tuple[str, ...] | None  # the input dict's keys
    placeholder_names: tuple[str | None, ...]
    output_keys: tuple[str, ...]
    layer_class: str | None  # the class name of a layer every branch goes through
    node_names: tuple[str, ...]  # names that replace the spec's node names


@st.composite
def cases(draw: st.DrawFn) -> Case:
    count = draw(st.integers(1, 4))
    structure = draw(st.sampled_from(["dict", "list", "single"] if count == 1 else ["dict", "list"]))
    keys = draw(st.lists(names, min_size=count, max_size=count, unique=True)) if structure == "dict" else None
    return Case(
        structure,
        None if keys is None else tuple(keys),
        tuple(draw(st.lists(st.none() | names, min_size=count, max_size=count))),
        tuple(draw(st.lists(names, min_size=count, max_size=count, unique=True))),
        draw(st.none() | names.filter(lambda name: "\x00" not in name)),  # type() refuses NUL
        tuple(draw(st.lists(names, max_size=10))),
    )


def first_clash(given: list[str]) -> tuple[str, str] | None:
    """The first two names Python reads as one identifier (equal names included)."""
    forms: dict[str, str] = {}
    for name in given:
        form = unicodedata.normalize("NFKC", name)
        if form in forms:
            return forms[form], name
        forms[form] = name
    return None


def define(case: Case) -> tuple[Any, Any]:
    """Branch ``i`` computes ``relu(x_i) * (i + 2)``: fed ``i + 1``, it gives ``(i + 1) * (i + 2)``,
    a value no other input can produce."""
    placeholders = [functional.Placeholder((None, 3), name=name) for name in case.placeholder_names]
    layer = None
    if case.layer_class is not None:
        layer = functional.accept_placeholders(type(case.layer_class, (nn.Identity,), {})())
    branches = []
    for index, x in enumerate(placeholders):
        y = F.relu(x.view(x.shape[0], -1)) * float(index + 2)
        branches.append(y if layer is None else layer(y))
    if case.keys is not None:
        inputs: Any = dict(zip(case.keys, placeholders, strict=True))
    else:
        inputs = placeholders if case.structure == "list" else placeholders[0]
    return inputs, dict(zip(case.output_keys, branches, strict=True))


def check_outputs(model: Any, case: Case) -> None:
    """Every way of calling ``model`` gives each output its own input's value, exactly."""
    count = len(case.placeholder_names)
    data = [torch.full((2, 3), float(index + 1)) for index in range(count)]
    calls = [lambda: model(*data)]
    callers_names: list[str | None] = (
        list(case.keys) if case.keys is not None else list(case.placeholder_names)
    )
    if case.keys is not None:
        calls.append(lambda: model(dict(zip(case.keys, data, strict=True))))
    if None not in callers_names and "self" not in callers_names:  # nn.Module.__call__ takes self
        calls.append(lambda: model(**dict(zip(callers_names, data, strict=True))))
    for call in calls:
        result = call()
        assert list(result) == list(case.output_keys)
        for index, key in enumerate(case.output_keys):
            assert torch.equal(result[key], torch.full((2, 3), float((index + 1) * (index + 2))))


def spec_names(spec: Any) -> list[str]:
    """The names a Functional spec gives its inputs and nodes, in order."""
    found: list[str] = []

    def inputs(value: Any) -> None:
        if "input" in value:
            found.append(value["input"])
            return
        ((_, content),) = value.items()
        for item in content.values() if isinstance(content, dict) else content:
            inputs(item)

    inputs(spec["inputs"])
    return found + [node["name"] for node in spec["nodes"]]


def renamed(value: Any, names: dict[str, str]) -> Any:
    """A spec value with node references renamed."""
    if isinstance(value, dict):
        if set(value) in ({"node"}, {"batch_of"}):
            ((tag, name),) = value.items()
            return {tag: names.get(name, name)}
        return {key: renamed(item, names) for key, item in value.items()}
    if isinstance(value, list):
        return [renamed(item, names) for item in value]
    return value


@settings(max_examples=150)
@given(case=cases())
def test_names_never_change_what_a_functional_computes(case: Case, report: Report) -> None:
    report.count("fuzz", "functional names (NFKC, keywords, reserved)")
    inputs, outputs = define(case)
    given_names = (
        list(case.keys)
        if case.keys is not None
        else [name for name in case.placeholder_names if name is not None]
    )
    clash = first_clash(given_names)
    try:
        model = functional.Functional(inputs=inputs, outputs=outputs)
    except TorchXError as error:
        assert clash is not None, f"refused names that Python reads apart: {error}"
        assert all(repr(name) in str(error) for name in clash)
        report.count("fuzz", "functional names: refused, naming both clashing names")
        return
    assert clash is None, f"accepted {clash}, which Python reads as one identifier"
    check_outputs(model, case)
    report.count("fuzz", "functional names: every input reached its own use")

    if case.layer_class is not None:
        return  # a plain torch module in the graph: not a spec
    spec = model.to_spec()
    spec = json.loads(json.dumps(spec))
    rebuilt = L.Layer.from_spec(spec)
    assert rebuilt.to_spec() == spec
    check_outputs(rebuilt, case)

    nodes = {node["name"]: new for node, new in zip(spec["nodes"], case.node_names, strict=False)}
    spec = renamed(spec, nodes)
    for node in spec["nodes"]:
        node["name"] = nodes.get(node["name"], node["name"])
    clash = first_clash(spec_names(spec))
    try:
        again = L.Layer.from_spec(spec)
    except SpecError as error:
        assert clash is not None, f"refused a spec whose names Python reads apart: {error}"
        assert all(repr(name) in str(error) for name in clash)
        report.count("fuzz", "functional spec node names: refused, naming both clashing names")
        return
    assert clash is None, f"accepted {clash}, which Python reads as one identifier"
    check_outputs(again, case)
    report.count("fuzz", "functional spec node names: every input reached its own use")
