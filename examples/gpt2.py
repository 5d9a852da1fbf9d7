"""GPT-2 written with TorchX's functional API, with greedy generation from a prompt.

The layers carry Hugging Face's names (``name="transformer.h.0.attn.c_attn"``),
so the state dict of ``transformers.GPT2LMHeadModel`` loads by key; its
``Conv1D`` projections are transposed into the linear layers by
``torchx.load_weights``. The sequence is dynamic (``ids.shape[1]`` is a size of
the graph) and the LM head reads the token embedding's weight, so the tie is
part of the graph and of its spec.

    python examples/gpt2.py      # generate from a prompt; compare with transformers if installed
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

import torchx
import torchx.layers as L
from torchx.functional import Functional, Placeholder

SMALL = {"vocab": 1000, "positions": 128, "width": 64, "layers": 2, "heads": 4}
"""A small configuration (GPT-2 small is 50257, 1024, 768, 12, 12)."""


def _attention(x: Placeholder, name: str, heads: int) -> Placeholder:
    """Causal multi-head self-attention, as GPT-2's ``attn``."""
    b, t, width = x.shape
    q, k, v = L.Linear(3 * width, name=f"{name}.c_attn")(x).split(width, dim=2)
    q, k, v = (part.view(b, t, heads, width // heads).transpose(1, 2) for part in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return L.Linear(width, name=f"{name}.c_proj")(y.transpose(1, 2).reshape(b, t, width))


def _block(x: Placeholder, name: str, heads: int) -> Placeholder:
    """A pre-norm transformer block: attention and an MLP, each a residual."""
    width = x.shape[-1]
    x = x + _attention(L.LayerNorm(name=f"{name}.ln_1")(x), f"{name}.attn", heads)
    hidden = L.Linear(4 * width, name=f"{name}.mlp.c_fc")(L.LayerNorm(name=f"{name}.ln_2")(x))
    return x + L.Linear(width, name=f"{name}.mlp.c_proj")(L.GELU(approximate="tanh")(hidden))


def gpt2(
    vocab: int = 1000, positions: int = 128, width: int = 64, layers: int = 2, heads: int = 4
) -> Functional:
    """GPT-2's language model: token ids ``(batch, sequence)`` to logits ``(batch, sequence, vocab)``."""
    ids = Placeholder((None, None), dtype=torch.long, name="ids")
    wte = L.Embedding(vocab, width, name="transformer.wte")
    h = wte(ids) + L.Embedding(positions, width, name="transformer.wpe")(torch.arange(ids.shape[1]))
    for index in range(layers):
        h = _block(h, f"transformer.h.{index}", heads)
    h = L.LayerNorm(name="transformer.ln_f")(h)
    return Functional(inputs=ids, outputs=F.linear(h, wte.weight))  # the head is tied to wte


@torch.no_grad()
def generate(
    model: Callable[[torch.Tensor], torch.Tensor], prompt: torch.Tensor, new_tokens: int
) -> torch.Tensor:
    """Greedy decoding: append the most likely next token ``new_tokens`` times
    (the whole, growing sequence runs each step: no key-value cache)."""
    ids = prompt
    for _ in range(new_tokens):
        next_id = model(ids)[:, -1].argmax(-1, keepdim=True)
        ids = torch.cat([ids, next_id], dim=1)
    return ids


def reference(
    vocab: int = 1000, positions: int = 128, width: int = 64, layers: int = 2, heads: int = 4
) -> torch.nn.Module:
    """Hugging Face's ``GPT2LMHeadModel`` of the same configuration, randomly
    initialised (nothing downloaded), in eval mode; needs ``transformers``."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=vocab,
        n_positions=positions,
        n_embd=width,
        n_layer=layers,
        n_head=heads,
        bos_token_id=vocab - 1,
        eos_token_id=vocab - 1,
    )
    return GPT2LMHeadModel(config).eval()


if __name__ == "__main__":
    torch.manual_seed(0)
    model = gpt2(**SMALL).eval()
    prompt = torch.tensor([[464, 2068, 7586]]) % SMALL["vocab"]
    print("parameters:", sum(p.numel() for p in model.parameters()))
    print("generated:", generate(model, prompt, 8).tolist())
    try:
        hf = reference(**SMALL)
    except ImportError:
        print("transformers is not installed: no comparison")
    else:
        # Conv1D weights are transposed; HF's tied lm_head.weight (the embedding's
        # tensor under a second key) is reported tied
        report = torchx.load_weights(model, hf)
        print(f"loaded {len(report.loaded) + len(report.adapted)} tensors")
        with torch.no_grad():
            difference = (model(prompt) - hf(prompt).logits).abs().max().item()
        same = torch.equal(generate(model, prompt, 8), generate(lambda x: hf(x).logits, prompt, 8))
        print(f"transformers: max |logits difference| {difference:.2e}, same tokens generated: {same}")
