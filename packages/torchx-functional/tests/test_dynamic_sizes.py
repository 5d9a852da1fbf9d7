"""Dynamic sizes are values in the graph: ``x.shape[1]`` of a ``None`` dim (issue 27, section 1)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
import yaml
from torch import nn

import torchx.layers as L
from torchx.core import PluginManager, ShapeError, TorchXError
from torchx.functional import Functional, Placeholder
from torchx.functional._placeholder import Size

VOCAB, POSITIONS, WIDTH, HEADS = 50, 128, 16, 4  # more positions than the probes (61, 127)
LENGTHS = (5, 11)


def gpt_block(attention: str) -> tuple[Functional, dict[str, nn.Module]]:
    """Token and position embeddings, a causal self-attention and a head, written
    the natural way over a dynamic batch and sequence; and its layers by name."""
    ids = Placeholder((None, None), dtype=torch.long, name="ids")
    b, t = ids.shape
    wte, wpe = L.Embedding(VOCAB, WIDTH, name="wte"), L.Embedding(POSITIONS, WIDTH, name="wpe")
    h = wte(ids) + wpe(torch.arange(t))
    q, k, v = L.Linear(3 * WIDTH, name="qkv")(h).split(WIDTH, dim=2)
    q, k, v = (part.view(b, t, HEADS, WIDTH // HEADS).transpose(1, 2) for part in (q, k, v))
    if attention == "sdpa":
        mask = torch.tril(torch.ones((t, t), dtype=torch.bool))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    else:
        scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(WIDTH // HEADS))
        mask = torch.ones((t, t)).tril()
        y = scores.masked_fill(mask == 0, -1e9).softmax(-1) @ v
    y = y.transpose(1, 2).contiguous().view(b, t, WIDTH)
    out = L.Linear(WIDTH, name="proj")(y)
    model = Functional(inputs=ids, outputs=out).eval()
    return model, {name: getattr(model, name) for name in ("wte", "wpe", "qkv", "proj")}


def eager_block(layers: dict[str, nn.Module], ids: torch.Tensor) -> torch.Tensor:
    """The same computation written by hand in eager PyTorch."""
    b, t = ids.shape
    h = layers["wte"](ids) + layers["wpe"](torch.arange(t))
    q, k, v = layers["qkv"](h).split(WIDTH, dim=2)
    q, k, v = (part.view(b, t, HEADS, WIDTH // HEADS).transpose(1, 2) for part in (q, k, v))
    mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return layers["proj"](y.transpose(1, 2).contiguous().view(b, t, WIDTH))


def test_a_dynamic_dim_is_a_symbolic_size_and_a_static_one_an_int() -> None:
    x = Placeholder((None, None, 8), name="x")
    b, t, c = x.shape
    assert isinstance(b, Size) and isinstance(t, Size) and type(c) is int and c == 8
    assert x.size(1) is t and x.shape[1] is t and x.size(-1) == 8 and x.size(-2) is t
    assert x.shape == (None, None, 8) and repr(x.shape) == "(None, None, 8)"
    assert repr(t) == "x.shape[1]" and repr(t * 2 - 1) == "((x.shape[1] * 2) - 1)"
    with pytest.raises(IndexError, match=r"size\(3\) of a placeholder of shape \(None, None, 8\)"):
        x.size(3)


@pytest.mark.parametrize("length", LENGTHS, ids=[f"T{length}" for length in LENGTHS])
def test_a_slice_by_a_dynamic_size_takes_that_many_rows(length: int) -> None:
    """Today ``pos_table[:ids.shape[1]]`` was ``pos_table[:None]``: the whole table, silently."""
    ids = Placeholder((None, None), dtype=torch.long, name="ids")
    h = L.Embedding(VOCAB, WIDTH)(ids)
    table = L.Parameter((1, POSITIONS, WIDTH), name="pos_table")(h)  # GPT-2's wpe, as a parameter
    t = ids.shape[1]
    model = Functional(inputs=ids, outputs=[h + table[:, :t], table[0][:t]])
    tokens = torch.randint(0, VOCAB, (3, length))
    summed, rows = model(tokens)
    weight = model.pos_table
    assert rows.shape == (length, WIDTH) and torch.equal(rows, weight[0, :length])
    assert torch.equal(summed, model.embedding(tokens) + weight[:, :length])


@pytest.mark.parametrize("attention", ["sdpa", "by_hand"], ids=["sdpa", "matmul_softmax"])
def test_an_attention_block_matches_eager_pytorch_at_two_lengths(attention: str) -> None:
    """``x.view(b, t, h, d)`` failed today with a message leaking ``BatchSize(node=<...>)``,
    ``torch.arange(t)`` was refused as a mix of placeholders and a real tensor."""
    torch.manual_seed(0)
    model, layers = gpt_block(attention)
    assert "arange = torch.arange(size_1, device=ids.device)" in model.code
    for length in LENGTHS:
        ids = torch.randint(0, VOCAB, (2, length))
        with torch.no_grad():
            torch.testing.assert_close(model(ids), eager_block(layers, ids))


def test_size_arithmetic_is_right_under_both_probes_and_at_run_time() -> None:
    x = Placeholder((None, None, 12), name="x")
    t = x.shape[1]
    pieces = [x[:, : t - 1], x[:, 1 : t + 1], x.new_zeros(t * 2, t // 2), x.new_full((-t * -1,), 3.0)]
    assert [piece.shape for piece in pieces] == [(None, None, 12), (None, None, 12), (None, None), (None,)]
    model = Functional(inputs=x, outputs=pieces)
    for length in LENGTHS:
        value = torch.randn(2, length, 12)
        head, tail, zeros, full = model(value)
        assert torch.equal(head, value[:, : length - 1]) and torch.equal(tail, value[:, 1:])
        assert zeros.shape == (length * 2, length // 2) and torch.equal(full, torch.full((length,), 3.0))


def test_factories_of_dynamic_sizes_take_the_inputs_device_or_the_one_named() -> None:
    x = Placeholder((None, None), name="x")
    t = x.shape[1]
    outputs = [torch.arange(t), torch.zeros((t, 2), dtype=torch.float64), torch.full((t,), 2.0, device="cpu")]
    model = Functional(inputs=x, outputs=[*outputs, torch.eye(t)])
    assert "torch.zeros((size, 2), dtype=torch.float64, device=x.device)" in model.code
    assert "device='cpu'" in model.code
    arange, zeros, full, eye = model(torch.randn(2, 7))
    assert torch.equal(arange, torch.arange(7)) and zeros.dtype == torch.float64 and zeros.shape == (7, 2)
    assert torch.equal(full, torch.full((7,), 2.0)) and torch.equal(eye, torch.eye(7))


def test_messages_show_a_dynamic_size_by_name_never_an_object() -> None:
    ids = Placeholder((None, None), dtype=torch.long, name="ids")
    b, t = ids.shape
    h = L.Embedding(VOCAB, WIDTH)(ids)
    with pytest.raises(ShapeError) as caught:
        h.view(b, t, 3, 7)
    message = str(caught.value)
    assert "ids.shape[0], ids.shape[1], 3, 7" in message and "object at 0x" not in message
    with pytest.raises(ShapeError) as caught:
        h.view(h.shape[0], 5, -1)  # the batch read through the old path keeps its name too
    assert "object at 0x" not in str(caught.value)
    with pytest.raises(TorchXError, match=r"ids\.shape\[1\] is a dynamic size: it has no value"):
        range(t)
    with pytest.raises(TorchXError, match=r"ids\.shape\[1\] is a dynamic size"):
        torch.zeros(4, 3)[:t]


def test_spec_round_trip_keeps_the_sizes_in_json_and_yaml(fresh_plugins: PluginManager) -> None:
    torch.manual_seed(0)
    model, _ = gpt_block("by_hand")
    spec = model.to_spec()
    text = json.dumps(spec)
    assert '{"method": "size"' not in text and '"method": "size"' in text and '{"device_of": "ids"}' in text
    for read in (json.loads(text), yaml.safe_load(yaml.safe_dump(spec, sort_keys=False))):
        rebuilt = L.Layer.from_spec(read)
        assert isinstance(rebuilt, Functional)
        assert rebuilt.to_spec() == spec
        rebuilt.load_state_dict(model.state_dict())
        rebuilt.eval()
        for length in LENGTHS:
            ids = torch.randint(0, VOCAB, (2, length))
            assert torch.equal(rebuilt(ids), model(ids))


def test_export_keeps_batch_and_sequence_dynamic() -> None:
    torch.manual_seed(0)
    model, layers = gpt_block("sdpa")
    batch, sequence = (
        torch.export.Dim("batch", min=1, max=64),
        torch.export.Dim("sequence", min=2, max=POSITIONS),
    )
    exported = torch.export.export(
        model, (torch.randint(0, VOCAB, (2, 7)),), dynamic_shapes={"ids": {0: batch, 1: sequence}}
    )
    for shape in ((3, 5), (1, 13)):
        ids = torch.randint(0, VOCAB, shape)
        with torch.no_grad():
            torch.testing.assert_close(exported.module()(ids), eager_block(layers, ids))


def test_compile_fullgraph_runs_at_two_lengths() -> None:
    torch.manual_seed(0)
    model, layers = gpt_block("sdpa")
    compiled = torch.compile(model, fullgraph=True, dynamic=True, backend="eager")
    for length in LENGTHS:
        ids = torch.randint(0, VOCAB, (2, length))
        with torch.no_grad():
            torch.testing.assert_close(compiled(ids), eager_block(layers, ids))


FACTORY_FORMS: dict[str, Callable[[Any], torch.Tensor]] = {
    "ones_tuple_tril": lambda t: torch.ones((t, t), dtype=torch.bool).tril(),
    "ones_list": lambda t: torch.ones([t, 3]),
    "ones_size_keyword": lambda t: torch.ones(size=(t, t)),
    "zeros_varargs_int_first": lambda t: torch.zeros(3, t),
    "zeros_one_size": lambda t: torch.zeros(t, dtype=torch.long),
    "zeros_arithmetic": lambda t: torch.zeros((t - 1, t // 2 + 1)),
    "full_inf_triu": lambda t: torch.full((t, t), float("-inf")).triu(1),
    "full_keywords": lambda t: torch.full(size=(t, 2), fill_value=2.5),
    "full_int_first": lambda t: torch.full((2, t), 7, dtype=torch.long),
    "eye_n": lambda t: torch.eye(t),
    "eye_n_m": lambda t: torch.eye(t, t),
    "eye_int_first": lambda t: torch.eye(3, t),
    "eye_keywords": lambda t: torch.eye(n=t, m=2),
    "arange_end": lambda t: torch.arange(t),
    "arange_end_keyword": lambda t: torch.arange(end=t),
    "arange_start_end_step": lambda t: torch.arange(1, t, 2),
    "arange_keywords": lambda t: torch.arange(start=0, end=t * 2, step=3),
}


def test_every_factory_takes_sizes_as_torch_does_and_round_trips(fresh_plugins: PluginManager) -> None:
    """Each factory of FACTORIES with dynamic sizes as a tuple, a list, ``size=``, after an
    int, or one at a time where torch takes them so: equal to eager torch at several
    lengths, before and after JSON and YAML specs."""
    ids = Placeholder((None, None), dtype=torch.long, name="ids")
    t = ids.shape[1]
    model = Functional(inputs=ids, outputs={name: form(t) for name, form in FACTORY_FORMS.items()})
    spec = model.to_spec()
    read = [json.loads(json.dumps(spec)), yaml.safe_load(yaml.safe_dump(spec, sort_keys=False))]
    for graph in (model, *(L.Layer.from_spec(text) for text in read)):
        for length in (1, 3, 8):
            outputs = graph(torch.zeros(2, length, dtype=torch.long))
            for name, form in FACTORY_FORMS.items():
                expected = form(length)
                assert outputs[name].dtype == expected.dtype and torch.equal(outputs[name], expected), name


def test_a_factory_given_a_dynamic_size_first_among_several_is_refused_by_torch() -> None:
    """``torch.ones(t, t)``: torch's C argument parser takes an object that has
    ``__torch_function__`` as the whole size list when it comes first and refuses the
    second size, before any Python code sees the call (torch 2.9 says so in other
    words); the tuple form is the way."""
    t = Placeholder((None, None), name="x").shape[1]
    refused = r"ones\(\) (takes 1 positional argument but 2 were given|received an invalid combination of arguments)"
    with pytest.raises(TypeError, match=refused):
        torch.ones(t, t)
    assert torch.ones((t, t)).shape == (None, None)


@pytest.mark.parametrize("mask", ["ones_bool_tril", "full_inf_triu"], ids=["ones_bool_tril", "full_inf_triu"])
def test_a_causal_mask_of_the_dynamic_length_exports(mask: str) -> None:
    x = Placeholder((None, None, 8), name="x")
    t = x.shape[1]
    scores = x @ x.transpose(1, 2)
    if mask == "ones_bool_tril":
        scores = scores.masked_fill(~torch.ones((t, t), dtype=torch.bool).tril(), float("-inf"))
    else:
        scores = scores + torch.full((t, t), float("-inf")).triu(1)
    model = Functional(inputs=x, outputs=scores.softmax(-1) @ x)
    exported = torch.export.export(
        model,
        (torch.randn(2, 7, 8),),
        dynamic_shapes={"x": {0: torch.export.Dim("batch", max=64), 1: torch.export.Dim("sequence", max=64)}},
    )
    for length in (2, 5, 30):
        value = torch.randn(3, length, 8)
        causal = torch.ones(length, length, dtype=torch.bool).tril()
        expected = (value @ value.transpose(1, 2)).masked_fill(~causal, float("-inf")).softmax(-1) @ value
        torch.testing.assert_close(exported.module()(value), expected)
        torch.testing.assert_close(model(value), expected)
