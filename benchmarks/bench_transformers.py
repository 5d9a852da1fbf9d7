"""GPT-2 written with TorchX (examples/gpt2.py) against Hugging Face's
``GPT2LMHeadModel``, randomly initialised from its config (nothing downloaded).

For the tiny configuration the tests use and for the real 124M one: the time to
define and build the model with a dynamic batch and sequence against
``GPT2LMHeadModel(GPT2Config(...))``, then, with Hugging Face's weights loaded
into the TorchX model, the time and peak memory (tensor storage held at once)
of a no-grad forward in eval mode. Hugging Face's forward is called with
``use_cache=False``: the TorchX model keeps no key-value cache either.

ConvNeXt (examples/convnext.py) is not compared: no plain-PyTorch ConvNeXt
exists to import (its tests hold one hand-written block), and timm cannot be
installed beside this torch.
"""

from __future__ import annotations

import sys
from functools import partial

import torch
from _memory import peak_bytes
from _timing import Result, interleaved_medians
from bench_examples import EXAMPLES
from bench_layers import build_split, print_split
from bench_vision import GRAPH_STEPS, first_build

import torchx

BATCH, SEQUENCE = 2, 64

GPT2_124M = {"vocab": 50257, "positions": 1024, "width": 768, "layers": 12, "heads": 12}
"""GPT-2 small, the released 124M-parameter model."""


def bench_transformers(quick: bool) -> list[Result]:
    try:
        import transformers  # noqa: F401
    except ImportError:
        print("transformers: transformers is not installed (pip install transformers); skipped")
        return []
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    try:
        import gpt2
    except ImportError:
        print("transformers: torchx-functional is not installed; skipped")
        return []
    results = []
    for label, config, build_rounds, forward_rounds, per_forward in (
        ("tiny", gpt2.SMALL, 15 if quick else 41, 9 if quick else 31, 10),
        ("124M", GPT2_124M, 2 if quick else 5, 3 if quick else 9, 1),
    ):
        name = f"gpt2 {label}"
        make, reference = partial(gpt2.gpt2, **config), partial(gpt2.reference, **config)
        torchx_s, hf_s = interleaved_medians(make, reference, rounds=build_rounds, per_round=1)
        results.append(Result(f"transformers: {name} define+build vs constructor", torchx_s, hf_s, 1.5))
        torchx_s, hf_s = interleaved_medians(first_build(make), reference, rounds=build_rounds, per_round=1)
        results.append(
            Result(
                f"transformers: {name} first define+build in a process vs constructor", torchx_s, hf_s, None
            )
        )
        model, hf = make().eval(), reference()
        torchx.load_weights(model, hf)
        ids = torch.randint(0, config["vocab"], (BATCH, SEQUENCE))
        forward, hf_forward = partial(model, ids), partial(hf, ids, use_cache=False)
        with torch.no_grad():
            difference = (forward() - hf_forward().logits).abs().max().item()
            assert difference <= 1e-4, f"{name}: logits differ from Hugging Face's by {difference:.2e}"
            torchx_mib = peak_bytes(forward, model, ids) / 2**20
            hf_mib = peak_bytes(hf_forward, hf, ids) / 2**20
            results.append(
                Result(
                    f"transformers: {name} no-grad forward peak memory", torchx_mib, hf_mib, 1.05, unit="MiB"
                )
            )
            torchx_s, hf_s = interleaved_medians(
                forward, hf_forward, rounds=forward_rounds, per_round=per_forward
            )
            results.append(
                Result(f"transformers: {name} forward, batch {BATCH} x {SEQUENCE}", torchx_s, hf_s, 1.03)
            )
        del model, hf, forward, hf_forward
        if label == "tiny":
            natives = {type(module) for module in make().modules() if not any(module.children())}
            split = build_split(make, natives, build_rounds, timed=GRAPH_STEPS)
            print_split(f"{name} define+build", split, results[0].native_s)
    return results
