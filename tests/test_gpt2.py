"""examples/gpt2.py: GPT-2 written with the functional API generates, round-trips
through its spec, compiles and exports with a dynamic batch and sequence, and
equals Hugging Face's GPT2LMHeadModel given its weights (when transformers is installed)."""

from __future__ import annotations

import json

import pytest
import torch
from vision_helpers import EXAMPLES  # noqa: F401  (puts examples/ on the path)

import torchx
import torchx.layers as L

# isort: split
import gpt2


@pytest.fixture(scope="module")
def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return gpt2.gpt2(**gpt2.SMALL).eval()


def _ids(batch: int, length: int) -> torch.Tensor:
    return torch.randint(
        0, gpt2.SMALL["vocab"], (batch, length), generator=torch.Generator().manual_seed(length)
    )


def test_the_head_is_tied_to_the_token_embedding(model: torch.nn.Module) -> None:
    assert "lm_head" not in str(list(model.state_dict()))
    assert model.code.count("self.transformer.wte.weight") == 1
    width, vocab, positions = gpt2.SMALL["width"], gpt2.SMALL["vocab"], gpt2.SMALL["positions"]
    per_block = 12 * width * width + 13 * width  # two norms, c_attn, attn.c_proj, c_fc, mlp.c_proj
    assert (
        sum(p.numel() for p in model.parameters()) == (vocab + positions) * width + 2 * per_block + 2 * width
    )  # no head


def test_generation_grows_the_sequence_one_greedy_token_at_a_time(model: torch.nn.Module) -> None:
    prompt = _ids(2, 3)
    out = gpt2.generate(model, prompt, 5)
    assert out.shape == (2, 8) and torch.equal(out[:, :3], prompt)
    with torch.no_grad():
        assert torch.equal(out[:, 7], model(out[:, :7])[:, -1].argmax(-1))
    assert torch.equal(gpt2.generate(model, prompt[1:], 5), out[1:])  # rows are independent


def test_the_sequence_is_causal_and_dynamic(model: torch.nn.Module) -> None:
    ids = _ids(3, 12)
    with torch.no_grad():
        assert torch.allclose(model(ids)[:, :5], model(ids[:, :5]), atol=1e-5)


def test_the_spec_round_trips_through_json_with_equal_logits(model: torch.nn.Module) -> None:
    again = L.Layer.from_spec(json.loads(json.dumps(torchx.to_spec(model))))
    again.load_state_dict(model.state_dict(), strict=True)
    again.eval()
    assert sum(p.numel() for p in again.parameters()) == sum(p.numel() for p in model.parameters())
    ids = _ids(2, 9)
    with torch.no_grad():
        assert torch.equal(again(ids), model(ids))


def test_it_compiles_with_fullgraph_and_exports_with_a_dynamic_batch_and_sequence(
    model: torch.nn.Module,
) -> None:
    ids = _ids(2, 6)
    with torch.no_grad():
        expected = model(ids)
        compiled = torch.compile(model, fullgraph=True, backend="eager", dynamic=True)
        assert torch.allclose(compiled(ids), expected, atol=1e-5)
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence", max=gpt2.SMALL["positions"])
    exported = torch.export.export(model, (ids,), dynamic_shapes=({0: batch, 1: sequence},))
    other = _ids(3, 11)
    with torch.no_grad():
        assert torch.allclose(exported.module()(other), model(other), atol=1e-5)


def test_it_equals_hugging_faces_gpt2_given_its_weights() -> None:
    pytest.importorskip(
        "transformers", reason="the reference comparison needs transformers (pip install transformers)"
    )
    torch.manual_seed(1)
    model = gpt2.gpt2(**gpt2.SMALL).eval()
    reference = gpt2.reference(**gpt2.SMALL)
    report = torchx.load_weights(model, reference)  # strict
    # HF's tied lm_head.weight is the embedding's tensor under a second key
    assert [(e.status, e.source) for e in report.entries if e.status not in ("loaded", "adapted")] == [
        ("tied", "lm_head.weight")
    ]
    assert (
        sum(e.status == "adapted" for e in report.entries) == 4 * gpt2.SMALL["layers"]
    )  # the Conv1D weights
    ids = _ids(2, 10)
    with torch.no_grad():
        assert (model(ids) - reference(ids).logits).abs().max().item() <= 1e-5
        assert torch.equal(gpt2.generate(model, ids, 6), gpt2.generate(lambda x: reference(x).logits, ids, 6))
