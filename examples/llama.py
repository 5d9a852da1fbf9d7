"""Llama written with TorchX's functional API: RMSNorm, rotary position
embeddings, grouped-query attention and a SwiGLU MLP.

The layers carry Hugging Face's names (``name="model.layers.0.self_attn.q_proj"``),
so the state dict of ``transformers.LlamaForCausalLM`` loads by key with
``torchx.load_weights``. The batch and the sequence are dynamic; the rotary
angles are computed in the graph from the sequence length (their inverse
frequencies are a constant of the model, not in its state dict, as Hugging
Face's non-persistent ``inv_freq``). Attention is
``F.scaled_dot_product_attention`` with ``is_causal=True`` and
``enable_gqa=True``: each key and value head serves ``heads // kv_heads``
query heads. The head is a linear layer of its own or, with ``tied=True``,
reads the token embedding's weight (Hugging Face's ``tie_word_embeddings``).

    python examples/llama.py      # run on a batch; compare with transformers if installed
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

import torchx
import torchx.layers as L
from torchx.functional import Functional, Placeholder

TINY = {
    "vocab": 1000,
    "positions": 128,
    "width": 64,
    "layers": 2,
    "heads": 4,
    "kv_heads": 2,
    "intermediate": 176,
    "tied": False,
}
"""A tiny configuration (Llama-2 7B is 32000, 4096, 4096, 32, 32, 32, 11008, untied)."""

THETA = 10000.0
"""The rotary embedding's base (Hugging Face's ``rope_theta``)."""

EPS = 1e-6
"""RMSNorm's epsilon (Hugging Face's ``rms_norm_eps``)."""


def _rotary(sequence: int, head: int, theta: float) -> tuple[Placeholder, Placeholder]:
    """The cosines and signed sines ``(sequence, head)`` of the rotation of each
    position: position ``p`` turns the pair of dims ``(i, i + head / 2)`` by
    ``p / theta ** (2i / head)``. The first half of the sines is negated, as the
    rotation takes it (see :func:`_rotate`)."""
    inverse_frequencies = 1.0 / theta ** (torch.arange(0, head, 2, dtype=torch.float) / head)  # a constant
    angles = torch.arange(sequence)[:, None].float() * inverse_frequencies
    sin = angles.sin()
    return torch.cat([angles, angles], dim=-1).cos(), torch.cat([-sin, sin], dim=-1)


def _rotate(x: Placeholder, cos: Placeholder, signed_sin: Placeholder) -> Placeholder:
    """``x`` ``(batch, heads, sequence, head)`` with each position's pairs of
    dims ``(a, b)`` turned to ``(a cos - b sin, b cos + a sin)``: the halves
    swapped by ``roll`` meet the signed sines (Hugging Face's ``rotate_half``
    negates the half instead; the values are the same to the bit)."""
    return x * cos + x.roll(x.shape[-1] // 2, -1) * signed_sin


def _attention(
    x: Placeholder, cos: Placeholder, sin: Placeholder, name: str, heads: int, kv_heads: int
) -> Placeholder:
    """Causal grouped-query self-attention with rotary positions, as Llama's ``self_attn``."""
    b, t, width = x.shape
    head = width // heads
    q, k, v = (
        L.Linear(count * head, bias=False, name=f"{name}.{part}_proj")(x)
        .view(b, t, count, head)
        .transpose(1, 2)
        for part, count in (("q", heads), ("k", kv_heads), ("v", kv_heads))
    )
    q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return L.Linear(width, bias=False, name=f"{name}.o_proj")(y.transpose(1, 2).reshape(b, t, width))


def _mlp(x: Placeholder, name: str, intermediate: int) -> Placeholder:
    """SwiGLU: ``down(silu(gate(x)) * up(x))``."""
    gate = L.SiLU()(L.Linear(intermediate, bias=False, name=f"{name}.gate_proj")(x))
    up = L.Linear(intermediate, bias=False, name=f"{name}.up_proj")(x)
    return L.Linear(x.shape[-1], bias=False, name=f"{name}.down_proj")(gate * up)


def llama(
    vocab: int = 1000,
    positions: int = 128,
    width: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    intermediate: int = 176,
    tied: bool = False,
    theta: float = THETA,
    eps: float = EPS,
) -> Functional:
    """Llama's causal language model: token ids ``(batch, sequence)`` to logits
    ``(batch, sequence, vocab)``. ``positions`` is the longest sequence it is
    meant for (the rotary angles are computed for any length)."""
    ids = Placeholder((None, None), dtype=torch.long, name="ids")
    embed = L.Embedding(vocab, width, name="model.embed_tokens")
    h = embed(ids)
    cos, sin = _rotary(ids.shape[1], width // heads, theta)
    for index in range(layers):
        name = f"model.layers.{index}"
        normed = L.RMSNorm(eps=eps, name=f"{name}.input_layernorm")(h)
        h = h + _attention(normed, cos, sin, f"{name}.self_attn", heads, kv_heads)
        normed = L.RMSNorm(eps=eps, name=f"{name}.post_attention_layernorm")(h)
        h = h + _mlp(normed, f"{name}.mlp", intermediate)
    h = L.RMSNorm(eps=eps, name="model.norm")(h)
    logits = F.linear(h, embed.weight) if tied else L.Linear(vocab, bias=False, name="lm_head")(h)
    return Functional(inputs=ids, outputs=logits)


def reference(
    vocab: int = 1000,
    positions: int = 128,
    width: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    intermediate: int = 176,
    tied: bool = False,
    theta: float = THETA,
    eps: float = EPS,
) -> torch.nn.Module:
    """Hugging Face's ``LlamaForCausalLM`` of the same configuration, randomly
    initialised (nothing downloaded), in eval mode; needs ``transformers``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab,
        max_position_embeddings=positions,
        hidden_size=width,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        intermediate_size=intermediate,
        tie_word_embeddings=tied,
        rope_theta=theta,
        rms_norm_eps=eps,
        bos_token_id=vocab - 2,
        eos_token_id=vocab - 1,
    )
    return LlamaForCausalLM(config).eval()


if __name__ == "__main__":
    torch.manual_seed(0)
    model = llama(**TINY).eval()
    ids = torch.randint(0, TINY["vocab"], (2, 9))
    print("parameters:", sum(p.numel() for p in model.parameters()))
    with torch.no_grad():
        print("logits:", tuple(model(ids).shape))
    try:
        hf = reference(**TINY)
    except ImportError:
        print("transformers is not installed: no comparison")
    else:
        report = torchx.load_weights(model, hf)
        print(f"loaded {len(report.loaded)} tensors")
        with torch.no_grad():
            difference = (model(ids) - hf(ids).logits).abs().max().item()
        print(f"transformers: max |logits difference| {difference:.2e}")
