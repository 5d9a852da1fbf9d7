"""BERT's encoder written with TorchX's functional API, with a padding mask.

The layers carry Hugging Face's names (``name="encoder.layer.0.attention.self.query"``),
so the state dict of ``transformers.BertModel`` loads by key. The inputs are
Hugging Face's: ``input_ids``, ``attention_mask`` (1 keeps a position, 0 is
padding) and ``token_type_ids``, each ``(batch, sequence)`` with both sizes
dynamic; the outputs are ``last_hidden_state`` and ``pooler_output``.
Attention is ``F.scaled_dot_product_attention`` with the padded keys masked
out and ``dropout_p=dropout``, which a graph applies in train mode only, as
Hugging Face's ``dropout if self.training else 0.0``.

    python examples/bert.py      # run on a padded batch; compare with transformers if installed
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import torchx
import torchx.layers as L
from torchx.functional import Functional, Placeholder

SMALL = {"vocab": 1000, "positions": 128, "width": 64, "layers": 2, "heads": 4}
"""A small configuration (bert-base is 30522, 512, 768, 12, 12)."""

EPS = 1e-12
"""BERT's LayerNorm epsilon."""


def _attention(x: Placeholder, attended: Placeholder, name: str, heads: int, dropout: float) -> Placeholder:
    """Multi-head self-attention over the ``attended`` keys (not padding), as BERT's ``attention.self``."""
    b, t, width = x.shape
    q, k, v = (
        L.Linear(width, name=f"{name}.{part}")(x).view(b, t, heads, width // heads).transpose(1, 2)
        for part in ("query", "key", "value")
    )
    # attention dropout in train mode only: a graph's dropout_p follows model.train()/eval()
    output = F.scaled_dot_product_attention(q, k, v, attn_mask=attended, dropout_p=dropout)
    return output.transpose(1, 2).reshape(b, t, width)


def _residual(x: Placeholder, branch: Placeholder, name: str, dropout: float) -> Placeholder:
    """``LayerNorm(x + dropout(dense(branch)))``, as BERT's ``output`` blocks."""
    out = L.Dropout(dropout)(L.Linear(x.shape[-1], name=f"{name}.dense")(branch))
    return L.LayerNorm(eps=EPS, name=f"{name}.LayerNorm")(x + out)


def _layer(x: Placeholder, attended: Placeholder, name: str, heads: int, dropout: float) -> Placeholder:
    """A post-norm encoder layer: attention, then a GELU feed-forward, each a residual."""
    attention = _attention(x, attended, f"{name}.attention.self", heads, dropout)
    x = _residual(x, attention, f"{name}.attention.output", dropout)
    hidden = L.GELU()(L.Linear(4 * x.shape[-1], name=f"{name}.intermediate.dense")(x))
    return _residual(x, hidden, f"{name}.output", dropout)


def bert(
    vocab: int = 1000,
    positions: int = 128,
    width: int = 64,
    layers: int = 2,
    heads: int = 4,
    types: int = 2,
    dropout: float = 0.1,
) -> Functional:
    """BERT's encoder with its pooler: ``input_ids``, ``attention_mask`` and
    ``token_type_ids`` ``(batch, sequence)`` to ``last_hidden_state``
    ``(batch, sequence, width)`` and ``pooler_output`` ``(batch, width)``."""
    ids = Placeholder((None, None), dtype=torch.long, name="input_ids")
    mask = Placeholder((None, None), dtype=torch.long, name="attention_mask")
    token_types = Placeholder((None, None), dtype=torch.long, name="token_type_ids")
    h = (
        L.Embedding(vocab, width, padding_idx=0, name="embeddings.word_embeddings")(ids)
        + L.Embedding(types, width, name="embeddings.token_type_embeddings")(token_types)
        + L.Embedding(positions, width, name="embeddings.position_embeddings")(torch.arange(ids.shape[1]))
    )
    h = L.Dropout(dropout)(L.LayerNorm(eps=EPS, name="embeddings.LayerNorm")(h))
    attended = mask[:, None, None, :] != 0  # (batch, 1, 1, sequence): the keys every query attends to
    for index in range(layers):
        h = _layer(h, attended, f"encoder.layer.{index}", heads, dropout)
    pooled = L.Tanh()(L.Linear(width, name="pooler.dense")(h[:, 0]))
    return Functional(
        inputs={"input_ids": ids, "attention_mask": mask, "token_type_ids": token_types},
        outputs={"last_hidden_state": h, "pooler_output": pooled},
    )


def reference(
    vocab: int = 1000,
    positions: int = 128,
    width: int = 64,
    layers: int = 2,
    heads: int = 4,
    types: int = 2,
    dropout: float = 0.1,
) -> torch.nn.Module:
    """Hugging Face's ``BertModel`` of the same configuration, randomly
    initialised (nothing downloaded), in eval mode; needs ``transformers``."""
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=vocab,
        max_position_embeddings=positions,
        hidden_size=width,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * width,
        type_vocab_size=types,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    return BertModel(config).eval()


if __name__ == "__main__":
    torch.manual_seed(0)
    model = bert(**SMALL).eval()
    inputs = {
        "input_ids": torch.randint(1, SMALL["vocab"], (2, 7)),
        "attention_mask": torch.tensor([[1] * 7, [1] * 4 + [0] * 3]),  # the second sequence has 4 tokens
        "token_type_ids": torch.tensor([[0] * 4 + [1] * 3, [0] * 7]),
    }
    print("parameters:", sum(p.numel() for p in model.parameters()))
    with torch.no_grad():
        outputs = model(**inputs)
    print({name: tuple(value.shape) for name, value in outputs.items()})
    try:
        hf = reference(**SMALL)
    except ImportError:
        print("transformers is not installed: no comparison")
    else:
        report = torchx.load_weights(model, hf)
        print(f"loaded {len(report.loaded)} tensors")
        with torch.no_grad():
            ours, theirs = model(**inputs), hf(**inputs)
        for name in ("last_hidden_state", "pooler_output"):
            difference = (ours[name] - theirs[name]).abs().max().item()
            print(f"transformers: max |{name} difference| {difference:.2e}")
