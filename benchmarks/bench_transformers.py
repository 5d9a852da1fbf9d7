"""GPT-2, BERT and Llama written with TorchX (examples/gpt2.py, examples/bert.py,
examples/llama.py) against Hugging Face's ``GPT2LMHeadModel``, ``BertModel`` and
``LlamaForCausalLM``, randomly initialised from their configs (nothing downloaded).

For the small configuration the tests use and for the released one (GPT-2's
124M, bert-base; Llama's tiny configuration only, a released Llama being
billions of parameters): the time to define and build the model with a dynamic
batch and sequence against the constructor (``GPT2LMHeadModel(GPT2Config(...))``),
repeated, and first in a fresh process against the constructor's first call in
one, then, with Hugging Face's weights loaded into
the TorchX model and the outputs checked once, the time and peak memory (tensor
storage held at once) of a no-grad forward in eval mode. Hugging Face's GPT-2
and Llama are called with ``use_cache=False``: the TorchX models keep no
key-value cache either. BERT's batch is padded: its second row keeps half the
positions.

ConvNeXt (examples/convnext.py) is not compared: no plain-PyTorch ConvNeXt
exists to import (its tests hold one hand-written block), and timm cannot be
installed beside this torch.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import torch
from _memory import peak_bytes
from _timing import EXAMPLES, Result, first_call_setup, fresh_process_medians, interleaved_medians
from bench_layers import build_split, print_split
from bench_vision import FIRST_BOUND, GRAPH_STEPS

import torchx

BATCH, SEQUENCE = 2, 64

GPT2_124M = {"vocab": 50257, "positions": 1024, "width": 768, "layers": 12, "heads": 12}
"""GPT-2 small, the released 124M-parameter model."""

BERT_BASE = {"vocab": 30522, "positions": 512, "width": 768, "layers": 12, "heads": 12}
"""bert-base (uncased), the released 110M-parameter model."""


Inputs = dict[str, Any]
Outputs = Callable[[Any, Any], list[tuple[torch.Tensor, torch.Tensor]]]
"""The pairs of tensors to compare, from TorchX's and Hugging Face's outputs."""


def _causal_inputs(config: Mapping[str, int]) -> tuple[Inputs, Inputs]:
    """Keyword arguments of the TorchX model and of Hugging Face's (GPT-2, Llama)."""
    ids = torch.randint(0, config["vocab"], (BATCH, SEQUENCE))
    return {"ids": ids}, {"input_ids": ids, "use_cache": False}


def _bert_inputs(config: Mapping[str, int]) -> tuple[Inputs, Inputs]:
    mask = torch.ones(BATCH, SEQUENCE, dtype=torch.long)
    mask[1, SEQUENCE // 2 :] = 0
    inputs = {
        "input_ids": torch.randint(1, config["vocab"], (BATCH, SEQUENCE)) * mask,
        "attention_mask": mask,
        "token_type_ids": torch.zeros(BATCH, SEQUENCE, dtype=torch.long),
    }
    return inputs, inputs


def _logits(ours: torch.Tensor, theirs: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(ours, theirs.logits)]


def _bert_outputs(ours: Inputs, theirs: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(ours[name], theirs[name]) for name in ("last_hidden_state", "pooler_output")]


def _first_in_fresh_processes(
    define: Callable[..., torch.nn.Module],
    reference: Callable[..., torch.nn.Module],
    classes: str,
    config: Mapping[str, int],
    rounds: int,
) -> tuple[float, ...]:
    """Median seconds of the first define+build in a fresh process, and of the
    first call of Hugging Face's constructor in one (``classes`` imported
    before, as TorchX is: the first access of a name of ``transformers``
    imports its model's module)."""
    arguments = f"(**{dict(config)!r})"
    module = define.__module__
    return fresh_process_medians(
        (f"{module}.{define.__name__}{arguments}", first_call_setup(f"import {module}")),
        (
            f"{module}.{reference.__name__}{arguments}",
            first_call_setup(f"import {module}", f"from transformers import {classes}"),
        ),
        rounds=rounds,
    )


def _bench_model(
    name: str,
    define: Callable[..., torch.nn.Module],
    reference: Callable[..., torch.nn.Module],
    classes: str,
    config: Mapping[str, int],
    inputs: Callable[[Mapping[str, int]], tuple[Inputs, Inputs]],
    outputs: Outputs,
    rounds: tuple[int, int, int, int],
    split: bool,
) -> list[Result]:
    """Define+build (repeated, and first in a fresh process), then peak memory and time of a forward."""
    build_rounds, forward_rounds, per_forward, first_rounds = rounds
    first = _first_in_fresh_processes(define, reference, classes, config, first_rounds)
    make, reference = partial(define, **config), partial(reference, **config)
    torchx_s, hf_s = interleaved_medians(make, reference, rounds=build_rounds, per_round=1)
    results = [Result(f"transformers: {name} define+build vs constructor", torchx_s, hf_s, FIRST_BOUND)]
    torchx_s, hf_s = first
    results.append(
        Result(
            f"transformers: {name} first define+build in a fresh process vs constructor",
            torchx_s,
            hf_s,
            FIRST_BOUND,
        )
    )
    model, hf = make().eval(), reference()
    torchx.load_weights(model, hf)
    ours, theirs = inputs(config)
    forward, hf_forward = partial(model, **ours), partial(hf, **theirs)
    tensors = list(ours.values())
    with torch.no_grad():
        difference = max((a - b).abs().max().item() for a, b in outputs(forward(), hf_forward()))
        assert difference <= 1e-4, f"{name}: outputs differ from Hugging Face's by {difference:.2e}"
        torchx_mib = peak_bytes(forward, model, *tensors) / 2**20
        hf_mib = peak_bytes(hf_forward, hf, *tensors) / 2**20
        results.append(
            Result(f"transformers: {name} no-grad forward peak memory", torchx_mib, hf_mib, 1.05, unit="MiB")
        )
        torchx_s, hf_s = interleaved_medians(
            forward, hf_forward, rounds=forward_rounds, per_round=per_forward
        )
        results.append(
            Result(f"transformers: {name} forward, batch {BATCH} x {SEQUENCE}", torchx_s, hf_s, 1.03)
        )
    del model, hf, forward, hf_forward
    if split:
        natives = {type(module) for module in make().modules() if not any(module.children())}
        parts = build_split(make, natives, build_rounds, timed=GRAPH_STEPS)
        print_split(f"{name} define+build", parts, results[0].native_s)
    return results


def bench_transformers(quick: bool) -> list[Result]:
    try:
        import transformers  # noqa: F401
    except ImportError:
        print("transformers: transformers is not installed (pip install transformers); skipped")
        return []
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    try:
        import bert
        import gpt2
        import llama
    except ImportError:
        print("transformers: torchx-functional is not installed; skipped")
        return []
    # A small model's first define takes about 10 ms in a new process: medians of 7 processes a side
    # ranged from 1.23x to 1.76x between runs on a shared 2-core machine, hence 15.
    small = (15 if quick else 41, 9 if quick else 31, 10, 3 if quick else 15)
    released = (2 if quick else 5, 3 if quick else 9, 1, 2 if quick else 3)
    results = []
    for model, define, reference, classes, inputs, outputs, configs in (
        (
            "gpt2",
            gpt2.gpt2,
            gpt2.reference,
            "GPT2Config, GPT2LMHeadModel",
            _causal_inputs,
            _logits,
            {"tiny": (gpt2.SMALL, small), "124M": (GPT2_124M, released)},
        ),
        (
            "bert",
            bert.bert,
            bert.reference,
            "BertConfig, BertModel",
            _bert_inputs,
            _bert_outputs,
            {"small": (bert.SMALL, small), "base": (BERT_BASE, released)},
        ),
        (
            "llama",
            llama.llama,
            llama.reference,
            "LlamaConfig, LlamaForCausalLM",
            _causal_inputs,
            _logits,
            {"tiny": (llama.TINY, small)},
        ),
    ):
        for label, (config, rounds) in configs.items():
            results += _bench_model(
                f"{model} {label}",
                define,
                reference,
                classes,
                config,
                inputs,
                outputs,
                rounds,
                split=rounds is small,
            )
    return results
