"""No value of a probe reaches a graph silently: what holds only at the probe's
length (a count of pieces, a comparison of sizes, a stride) is refused at definition.

Each test failed on the main of issue 39: the graph kept the probe's answer
(61 steps, ``False``, ``(488, 8, 1)``) and computed something else than the
same code run eagerly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import torchx.layers as L
from torchx.core import TorchXError
from torchx.functional import Functional, Placeholder

LENGTHS = (1, 3, 80, 200)  # one, a few, between the probes (61, 127) and past them


def _loop(x: Any) -> Any:
    h = x[:, 0] * 0
    for step in x.unbind(1):
        h = torch.tanh(step + 0.5 * h)
    return h


REFUSED_CUTS: dict[str, Callable[[Any], Any]] = {
    "loop_over_unbind": _loop,
    "sum_over_split": lambda x: sum(piece.sum(1) for piece in x.split(10, 1)),
    "split_longer_than_the_probes": lambda x: torch.cat(list(x.split(200, 1)), 1),
    "len_of_unbind": lambda x: x * len(x.unbind(1)),
    "unpacked_chunks": lambda x: (lambda a, b: a + b)(*x.chunk(2, 1)),
    "last_piece": lambda x: x.split(10, 1)[-1],
    "pieces_to_the_end": lambda x: x.unbind(1)[1:],
    "first_pieces": lambda x: x.split(10, 1)[:2],
    "in": lambda x: x[:, 0] in x.unbind(1),
}


@pytest.mark.parametrize("program", REFUSED_CUTS.values(), ids=REFUSED_CUTS)
def test_what_needs_the_number_of_pieces_of_a_dynamic_dim_is_refused(program: Callable[[Any], Any]) -> None:
    x = Placeholder((None, None, 8), name="x")
    with pytest.raises(
        TorchXError, match=r"number of pieces Tensor\.(unbind|split|chunk) cuts x\.shape\[1\] into"
    ):
        program(x)


TAKEN_CUTS: dict[str, Callable[[Any], Any]] = {
    "first_step": lambda x: x.unbind(1)[0],
    "second_piece": lambda x: x.split(10, 1)[1],
    "a_chunk": lambda x: torch.chunk(x, 3, 1)[0],
}


@pytest.mark.parametrize("program", TAKEN_CUTS.values(), ids=TAKEN_CUTS)
def test_pieces_taken_from_the_front_follow_the_length(program: Callable[[Any], Any]) -> None:
    x = Placeholder((None, None, 8), name="x")
    model = Functional(inputs=x, outputs=program(x))
    for length in LENGTHS:
        value = torch.randn(2, length, 8)
        try:
            expected = program(value)
        except IndexError:  # fewer pieces than taken: an error in torch, and in the graph
            with pytest.raises(IndexError):
                model(value)
            continue
        assert torch.equal(model(value), expected)


def test_a_cut_of_a_static_dim_is_a_tuple_to_loop_over() -> None:
    x = Placeholder((None, 4, 8), name="x")
    total = sum(piece for piece in x.unbind(1))
    assert isinstance(x.chunk(2, -1), tuple)
    model = Functional(inputs=x, outputs=total)
    value = torch.randn(3, 4, 8)
    torch.testing.assert_close(model(value), value.sum(1), rtol=0, atol=1e-6)


COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "two_dims": lambda t, b: t == b,
    "not_one": lambda t, b: t != 1,
    "in_a_tuple": lambda t, b: t in (1, 2),
    "an_int": lambda t, b: t == 5,
    "greater": lambda t, b: t > 1,
    "at_most": lambda t, b: b <= t,
    "arithmetic": lambda t, b: t * 2 == b + b,
}


@pytest.mark.parametrize("compare", COMPARISONS.values(), ids=COMPARISONS)
def test_a_comparison_of_a_dynamic_size_without_one_answer_is_refused(
    compare: Callable[[Any, Any], Any],
) -> None:
    x = Placeholder((None, None, 8), name="x")
    b, t, _ = x.shape
    with pytest.raises(TorchXError, match=r"x\.shape\[\d\].*compares a dynamic size.*Fix: decide it"):
        compare(t, b)


def test_a_size_equals_itself_at_every_length() -> None:
    x = Placeholder((None, None, 8), name="x")
    _, t, _ = x.shape
    assert t == x.size(1) and t * 2 == t * 2 and (t != x.shape[1]) is False and t >= t and not t < t


def test_causal_attention_cannot_be_decided_by_comparing_lengths() -> None:
    """Today ``is_causal=q.size(1) == k.size(1)`` was recorded False: attention that is never causal."""
    x = Placeholder((None, None, 8), name="x")
    q, k = L.Linear(8)(x), L.Linear(8)(x)
    with pytest.raises(TorchXError, match=r"compares a dynamic size.*is_causal=True"):
        torch.nn.functional.scaled_dot_product_attention(q, k, k, is_causal=q.size(1) == k.size(1))


def test_normalising_unless_one_step_is_refused() -> None:
    """Today ``if x.shape[1] != 1`` took the probe's branch: NaN for one step, where eager returns x."""
    x = Placeholder((None, None, 8), name="x")
    with pytest.raises(TorchXError, match=r"x\.shape\[1\] != 1"):
        if x.shape[1] != 1:
            x = x / x.std(1, keepdim=True)


@pytest.mark.parametrize(
    "read",
    [lambda x: x.stride(), lambda x: x.stride(1), lambda x: x.is_contiguous()],
    ids=["strides", "one_stride", "is_contiguous"],
)
def test_the_memory_layout_is_not_read_at_definition(read: Callable[[Any], Any]) -> None:
    """Today ``x.stride()`` gave the probe's (488, 8, 1): windows made with it read the wrong rows past 61 steps."""
    x = Placeholder((None, None, 8), name="x")
    with pytest.raises(TorchXError, match=r"reads how a tensor lies in memory.*x\.unfold"):
        read(x)


def test_windows_by_unfold_follow_the_length() -> None:
    x = Placeholder((None, None, 8), name="x")
    model = Functional(inputs=x, outputs=x.unfold(1, 4, 2).sum(-1))
    for length in (4, 80, 200):
        value = torch.randn(2, length, 8)
        assert torch.equal(model(value), value.unfold(1, 4, 2).sum(-1))


def test_any_python_number_an_operation_returns_that_follows_the_probe_is_refused() -> None:
    x = Placeholder((None, None, 8), name="x")
    with pytest.raises(TorchXError, match=r"returned 61 for the probe, a value that follows a dynamic size"):
        torch.overrides.handle_torch_function(torch.Tensor.size, (x,), x)  # as torch dispatches a method
