"""examples/bert.py: BERT's encoder written with the functional API takes a
padding mask as an input, round-trips through JSON and YAML specs, scripts,
compiles and exports with a dynamic batch and sequence, and equals Hugging
Face's BertModel given its weights, in eval mode and in a training step (when
transformers is installed)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
import torch
from vision_helpers import EXAMPLES  # noqa: F401  (puts examples/ on the path)

import torchx

# isort: split
import bert

OUTPUTS = ("last_hidden_state", "pooler_output")


@pytest.fixture(scope="module")
def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return bert.bert(**bert.SMALL).eval()


def _inputs(batch: int, length: int) -> dict[str, torch.Tensor]:
    """Token ids, a mask whose rows keep 2 positions fewer each, and two segments."""
    generator = torch.Generator().manual_seed(length)
    kept = torch.tensor([max(1, length - 2 * row) for row in range(batch)])
    positions = torch.arange(length)
    mask = (positions < kept[:, None]).long()
    ids = torch.randint(1, bert.SMALL["vocab"], (batch, length), generator=generator)
    return {
        "input_ids": ids * mask,  # padded with id 0, Hugging Face's pad_token_id
        "attention_mask": mask,
        "token_type_ids": (positions >= length // 2).long().expand(batch, length),
    }


def _reference() -> torch.nn.Module:
    pytest.importorskip(
        "transformers", reason="the reference comparison needs transformers (pip install transformers)"
    )
    return bert.reference(**bert.SMALL)


def _close(ours: Mapping[str, torch.Tensor], theirs: Mapping[str, torch.Tensor]) -> None:
    """Both outputs agree within 1e-5 (Hugging Face's output is a mapping too)."""
    for name in OUTPUTS:
        torch.testing.assert_close(ours[name], theirs[name], rtol=0, atol=1e-5, msg=name)


def test_padded_positions_change_no_kept_output(model: torch.nn.Module) -> None:
    inputs = _inputs(3, 8)
    other = dict(inputs, input_ids=inputs["input_ids"].masked_fill(inputs["attention_mask"] == 0, 7))
    with torch.no_grad():
        ours, again = model(**inputs), model(**other)
        kept = inputs["attention_mask"].bool()
        assert not kept.all()
        torch.testing.assert_close(ours["last_hidden_state"][kept], again["last_hidden_state"][kept])
        torch.testing.assert_close(ours["pooler_output"], again["pooler_output"])
        short = {name: value[2:, :4] for name, value in inputs.items()}  # the last row keeps 4
        torch.testing.assert_close(
            model(**short)["pooler_output"], ours["pooler_output"][2:], atol=1e-5, rtol=0
        )


@pytest.mark.parametrize("suffix", [".json", ".yaml"], ids=["json", "yaml"])
def test_the_spec_round_trips_with_equal_outputs(model: torch.nn.Module, tmp_path: Path, suffix: str) -> None:
    torchx.save_spec(model, tmp_path / f"bert{suffix}")
    again = torchx.load_spec(tmp_path / f"bert{suffix}")
    again.load_state_dict(model.state_dict(), strict=True)
    again.eval()
    assert sum(p.numel() for p in again.parameters()) == sum(p.numel() for p in model.parameters())
    inputs = _inputs(2, 9)
    with torch.no_grad():
        ours, theirs = again(**inputs), model(**inputs)
    assert all(torch.equal(ours[name], theirs[name]) for name in OUTPUTS)


def test_it_scripts(model: torch.nn.Module) -> None:
    scripted = torch.jit.script(model)
    inputs = _inputs(2, 7)
    with torch.no_grad():
        ours, theirs = scripted(**inputs), model(**inputs)
    assert all(torch.equal(ours[name], theirs[name]) for name in OUTPUTS)


def test_it_compiles_with_fullgraph_and_exports_with_a_dynamic_batch_and_sequence(
    model: torch.nn.Module,
) -> None:
    inputs = _inputs(2, 6)
    with torch.no_grad():
        expected = model(**inputs)
        compiled = torch.compile(model, fullgraph=True, backend="eager", dynamic=True)
        torch.testing.assert_close(compiled(**inputs), expected, rtol=0, atol=1e-5)
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence", max=bert.SMALL["positions"])
    exported = torch.export.export(
        model, (), kwargs=inputs, dynamic_shapes={name: {0: batch, 1: sequence} for name in inputs}
    )
    other = _inputs(3, 11)
    with torch.no_grad():
        torch.testing.assert_close(exported.module()(**other), model(**other), rtol=0, atol=1e-5)


def test_it_equals_hugging_faces_bert_given_its_weights() -> None:
    reference = _reference()
    torch.manual_seed(1)
    model = bert.bert(**bert.SMALL).eval()
    report = torchx.load_weights(model, reference)  # strict, by name
    assert {entry.status for entry in report.entries} == {"loaded"}
    inputs = _inputs(3, 10)
    with torch.no_grad():
        _close(model(**inputs), reference(**inputs))


def _step(module: torch.nn.Module, inputs: dict[str, torch.Tensor], seed: int) -> dict[str, torch.Tensor]:
    """The outputs of a forward from ``seed``, after the backward of a loss on both (``module`` keeps the gradients)."""
    module.zero_grad()
    torch.manual_seed(seed)
    out = module(**inputs)
    (out["last_hidden_state"].square().mean() + out["pooler_output"].sum()).backward()
    return {name: out[name].detach() for name in OUTPUTS}


def _assert_same_gradients(model: torch.nn.Module, reference: torch.nn.Module) -> None:
    ours, theirs = dict(model.named_parameters()), dict(reference.named_parameters())
    assert ours.keys() == theirs.keys()
    for name, parameter in ours.items():
        assert parameter.grad is not None, name
        torch.testing.assert_close(parameter.grad, theirs[name].grad, rtol=1e-4, atol=1e-6, msg=name)
    assert ours["encoder.layer.0.attention.self.query.weight"].grad.abs().sum() > 0
    assert not ours["embeddings.word_embeddings.weight"].grad[0].any()  # the padding id's row


def test_its_gradients_equal_hugging_faces_in_eval_mode() -> None:
    reference = _reference()
    model = bert.bert(**bert.SMALL).eval()
    torchx.load_weights(model, reference)
    inputs = _inputs(3, 10)
    _close(_step(model, inputs, 0), _step(reference, inputs, 0))
    _assert_same_gradients(model, reference)


def test_a_training_step_with_dropout_equals_hugging_faces_with_eager_attention() -> None:
    reference = _reference().train()
    reference.set_attn_implementation("sdpa")  # as ours: the same attention dropout draws
    model = bert.bert(**bert.SMALL).train()
    torchx.load_weights(model, reference)
    inputs = _inputs(2, 8)
    ours = _step(model, inputs, 3)
    _close(ours, _step(reference, inputs, 3))  # the same positions dropped
    _assert_same_gradients(model, reference)
    with torch.no_grad():
        torch.manual_seed(4)
        assert not torch.allclose(model(**inputs)["pooler_output"], ours["pooler_output"])  # dropout is on
