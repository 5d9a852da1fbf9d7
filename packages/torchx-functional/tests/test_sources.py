"""Generated forwards: compiled once per source, their lines kept only while used."""

from __future__ import annotations

import gc
import linecache
import traceback

import pytest
import torch

import torchx.layers as L
from torchx.functional import Functional, Placeholder, _sources


def _chain(depth: int, width: int = 4) -> Functional:
    x = Placeholder((None, 3))
    y = x
    for _ in range(depth):
        y = L.Linear(width)(y)
    return Functional(inputs=x, outputs=y)


def _generated_files() -> set[str]:
    return {name for name in linecache.cache if name.startswith("<torchx-functional-")}


def test_graphs_of_one_architecture_share_their_compiled_forward() -> None:
    narrow, wide = _chain(2, width=4), _chain(2, width=64)
    assert narrow.code == wide.code
    assert narrow.forward.__code__ is wide.forward.__code__
    assert _chain(3).forward.__code__ is not narrow.forward.__code__
    assert narrow(torch.ones(2, 3)).shape == (2, 4) and wide(torch.ones(2, 3)).shape == (2, 64)


def test_sources_held_stay_bounded_and_live_models_keep_their_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_sources, "CACHED", 3)
    _sources.clear_compiled()
    gc.collect()
    before = _generated_files()
    kept = _chain(20)  # evicted below while it lives
    for depth in range(21, 31):
        _chain(depth)
    gc.collect()
    held = _generated_files() - before
    assert len(held) == 3 + 1, "the cached sources and the live model's"
    with pytest.raises(RuntimeError) as raised:
        kept(torch.ones(2, 3, dtype=torch.float64))  # fails inside the forward
    shown = "".join(traceback.format_exception(raised.value))
    assert "self.linear(x)" in shown, shown
    del kept, raised
    gc.collect()
    assert len(_generated_files() - before) == 3


def test_a_cleared_cache_compiles_again() -> None:
    first = _chain(2).forward.__code__
    _sources.clear_compiled()
    assert _chain(2).forward.__code__ is not first
