"""examples/llama.py: Llama written with the functional API (RMSNorm, rotary
positions, grouped-query attention, SwiGLU) is causal with a dynamic batch and
sequence, round-trips through its spec, exports, and equals Hugging Face's
LlamaForCausalLM given its weights, with an untied and a tied head (when
transformers is installed)."""

from __future__ import annotations

import json

import pytest
import torch
from vision_helpers import EXAMPLES  # noqa: F401  (puts examples/ on the path)

import torchx
import torchx.layers as L

# isort: split
import llama

TIED = {**llama.TINY, "tied": True}


@pytest.fixture(scope="module")
def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return llama.llama(**llama.TINY).eval()


def _ids(batch: int, length: int) -> torch.Tensor:
    return torch.randint(
        0, llama.TINY["vocab"], (batch, length), generator=torch.Generator().manual_seed(length)
    )


def test_keys_and_values_have_fewer_heads_than_queries(model: torch.nn.Module) -> None:
    width, heads, kv_heads = llama.TINY["width"], llama.TINY["heads"], llama.TINY["kv_heads"]
    attention = model.get_submodule("model.layers.0.self_attn")
    assert attention.q_proj.weight.shape == (width, width)
    assert (
        attention.k_proj.weight.shape == attention.v_proj.weight.shape == (width // heads * kv_heads, width)
    )
    vocab, intermediate = llama.TINY["vocab"], llama.TINY["intermediate"]
    per_layer = (
        2 * width * width + 2 * width * width * kv_heads // heads + 3 * width * intermediate + 2 * width
    )
    expected = 2 * vocab * width + llama.TINY["layers"] * per_layer + width  # embedding, layers, norm, head
    assert sum(p.numel() for p in model.parameters()) == expected
    # the rotary inverse frequencies are a constant of the graph, not saved (HF's inv_freq is not either)
    assert [name for name, _ in model.named_buffers()] == [
        "constant"
    ] and "constant" not in model.state_dict()


def test_a_tied_head_reads_the_token_embedding(model: torch.nn.Module) -> None:
    assert "lm_head.weight" in model.state_dict()
    tied = llama.llama(**TIED)
    assert not any(key.startswith("lm_head") for key in tied.state_dict())
    assert tied.code.count("self.model.embed_tokens.weight") == 1
    untied_count = sum(p.numel() for p in model.parameters())
    assert (
        sum(p.numel() for p in tied.parameters()) == untied_count - llama.TINY["vocab"] * llama.TINY["width"]
    )


def test_the_sequence_is_causal_and_dynamic(model: torch.nn.Module) -> None:
    ids = _ids(3, 12)
    with torch.no_grad():
        assert model(ids).shape == (3, 12, llama.TINY["vocab"])
        assert torch.allclose(model(ids)[:, :5], model(ids[:, :5]), atol=1e-5)


def test_the_spec_round_trips_through_json_with_equal_logits(model: torch.nn.Module) -> None:
    again = L.Layer.from_spec(json.loads(json.dumps(torchx.to_spec(model))))
    again.load_state_dict(model.state_dict(), strict=True)
    again.eval()
    ids = _ids(2, 9)
    with torch.no_grad():
        assert torch.equal(again(ids), model(ids))


def test_it_exports_with_a_dynamic_batch_and_sequence(model: torch.nn.Module) -> None:
    ids = _ids(2, 6)
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence", max=llama.TINY["positions"])
    exported = torch.export.export(model, (ids,), dynamic_shapes=({0: batch, 1: sequence},))
    other = _ids(3, 11)
    with torch.no_grad():
        assert torch.allclose(exported.module()(other), model(other), atol=1e-5)


@pytest.mark.parametrize(
    "config", [pytest.param(llama.TINY, id="untied-head"), pytest.param(TIED, id="tied-head")]
)
def test_it_equals_hugging_faces_llama_given_its_weights(config: dict[str, int | bool]) -> None:
    pytest.importorskip(
        "transformers", reason="the reference comparison needs transformers (pip install transformers)"
    )
    torch.manual_seed(1)
    model = llama.llama(**config).eval()
    reference = llama.reference(**config)
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in reference.parameters())
    report = torchx.load_weights(model, reference)  # strict
    others = [(e.status, e.source) for e in report.entries if e.status != "loaded"]
    assert others == ([("tied", "lm_head.weight")] if config["tied"] else [])
    ids = _ids(2, 10)
    with torch.no_grad():
        assert (model(ids) - reference(ids).logits).abs().max().item() <= 1e-4
