"""Random valid models survive spec round trips (as data, JSON and YAML text)
with the same spec, the same state_dict keys and, with the same weights, the
same outputs."""

from __future__ import annotations

import json

import torch
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from report import Report
from strategies import Model, models

import torchx
from torchx.core import from_spec
from torchx.core._specs import parse_spec


@settings(max_examples=600)
@given(model=models(), text=st.sampled_from(["data", "json", "yaml"]), other_batch=st.integers(1, 5))
def test_from_spec_of_to_spec_is_the_same_model(
    model: Model, text: str, other_batch: int, report: Report
) -> None:
    first = torchx.build(from_spec(model.spec), model.input_shape)
    spec = first.to_spec()
    if text == "json":
        spec = parse_spec(json.dumps(spec), "json")
    elif text == "yaml":
        spec = parse_spec(yaml.safe_dump(spec), "yaml")
    second = torchx.build(from_spec(spec), model.input_shape)
    assert second.to_spec() == first.to_spec()
    assert list(second.state_dict()) == list(first.state_dict())
    second.load_state_dict(first.state_dict())
    first.eval(), second.eval()
    for batch in {model.input_shape[0], max(other_batch, 2)}:
        x = torch.randn(batch, *model.input_shape[1:])
        with torch.no_grad():
            assert torch.equal(first(x), second(x))
    report.count("fuzz", f"spec round trips through {text}")
