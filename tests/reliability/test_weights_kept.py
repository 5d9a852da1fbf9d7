"""A model's weights are never lost: not to a shape query running beside a
training thread, not to a checkpoint that fails half way, not to a save that
fails (full disk, size limit) after it began."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from report import Report
from torch import nn

import torchx
import torchx.layers as L
from torchx.core import CheckpointError

QUERIES = 300


def _model() -> L.Sequential:
    return torchx.build(
        L.Sequential(L.Conv2d(4, 3), L.BatchNorm2d(), L.ReLU(), L.Flatten(), L.Linear(5)), (2, 3, 8, 8)
    )


def _snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.clone() for name, value in model.state_dict().items()}


def _unchanged(model: nn.Module, before: dict[str, torch.Tensor]) -> bool:
    now = model.state_dict()
    return list(now) == list(before) and all(torch.equal(now[name], before[name]) for name in before)


QUERY_KINDS = {
    "infer_shapes": lambda model: torchx.infer_shapes(model, (None, 3, 8, 8)),
    "summarize": lambda model: torchx.summarize(model, (None, 3, 8, 8)),
}


@pytest.mark.parametrize("query", sorted(QUERY_KINDS))
def test_shape_queries_beside_forwards_and_saves_never_touch_the_weights(
    query: str, tmp_path: Path, report: Report
) -> None:
    model = _model().eval()
    before = _snapshot(model)
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        expected = model(x)
    stop = threading.Event()
    problems: list[str] = []

    def ask() -> None:
        while not stop.is_set():
            QUERY_KINDS[query](model)

    asker = threading.Thread(target=ask)
    asker.start()
    try:
        for call in range(QUERIES):
            with torch.no_grad():
                out = model(x)
            if not torch.equal(out, expected):
                problems.append(f"forward {call} differs")
            if any(value.is_meta for value in model.state_dict().values()):
                problems.append(f"state_dict {call} holds meta tensors")
            if call % 30 == 0:
                path = tmp_path / f"saved-{call}.pt"
                model.save(path)
                copy = _model()
                copy.load(path)
                if not _unchanged(copy, before):
                    problems.append(f"checkpoint {call} lost weights")
    finally:
        stop.set()
        asker.join()
    assert problems == []
    assert _unchanged(model, before)
    report.count("thread", f"forwards, state dicts and saves beside a looping {query}", QUERIES)


def test_a_summary_of_a_partly_built_model_copies_none_of_the_built_weights(report: Report) -> None:
    # A fresh process, so that its peak resident memory says what the summary allocated.
    script = """
import resource, torch, torchx, torchx.layers as L
from torch import nn
torchx.summarize(L.Sequential(nn.Linear(3, 4), L.ReLU(), L.Linear(2)), (None, 3))  # imports done
backbone = nn.Linear(4096, 8192)  # 128 MiB of float32 weights, touched
model = L.Sequential(backbone, L.ReLU(), L.Linear(10))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
summary = torchx.summarize(model, (None, 4096))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
assert summary.total_parameters == 4096 * 8192 + 8192 + 8192 * 10 + 10, summary.total_parameters
assert not torchx.is_built(model[2])  # the model itself stays unbuilt
print((after - before) // 1024)
"""
    run = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    grown_mib = int(run.stdout)
    assert grown_mib < 32, f"the summary grew the peak memory by {grown_mib} MiB (the backbone is 128 MiB)"
    report.count("fault", "summaries of a 128 MiB backbone with an unbuilt head (no copy)")
