"""The differential test of docs/torchx-functional.md ("What a recording cannot
know is never a constant"): a program recorded on placeholders with dynamic
dims and compiled (``L.Functional(inputs=p, outputs=f(p))``) either computes
what the same Python code computes eagerly, with the same layers, or is
refused at definition with a ``torchx.core.TorchXError``. Never a graph that
differs from eager, never an error at run time where eager runs.

Programs are drawn by hypothesis from the vocabulary in ``differential.py``
(slices, views and reshapes by sizes, size arithmetic, size comparisons as
bools and as arguments, loops over pieces, masks, dropout, dtype reads,
merges, layers, stride windows, in-place-eligible residuals, two inputs), one
test per family and one that mixes them. Each is compared at lengths and
batches of 1, small (2..5), between the recording's probes (62..126) and beyond
them (128..200); in train mode (same seed before graph and eager) and eval mode;
under ``torch.autocast("cpu", dtype=torch.bfloat16)``; with a float64 second
input; and after ``model.to(torch.float64)`` on float64 inputs. Values must be
equal exactly (see ``differential._difference`` for why no tolerance is needed).

Budget: ``TORCHX_DIFFERENTIAL_EXAMPLES`` programs in all, a share to each
family and two to the mixed test (default 1000: under 20 s on two cores when
all pass; HYPOTHESIS_PROFILE=ci, tox's reliability env, draws the same programs
on every run). tox passes TORCHX_* through, so a longer hunt is::

    TORCHX_DIFFERENTIAL_EXAMPLES=10000 tox -e reliability -- tests/reliability/test_graph_vs_eager.py
    TORCHX_DIFFERENTIAL_EXAMPLES=10000 python -m pytest tests/reliability/test_graph_vs_eager.py

A failure shows the program (its source with its layers: with torch, F and L
imported it replays as ``L.Functional(x, f(x))`` on ``x = L.Placeholder((None,
None, width))``), the input shapes and dtypes and the mode at which the graph
differed, and the graph's and eager's shape, dtype and first differing value.

The hand-written cases below the property tests are the known ways the rule
was broken: first those of issue 39 (each names its item), then those the
property tests found.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import torch
from differential import FAMILIES, MODES, Mismatch, Outcome, Program, Size, check, programs, sizes
from hypothesis import given, settings
from hypothesis import strategies as st
from report import Report

from torchx.core import TorchXError

pytest.importorskip("torchx.functional")

EXAMPLES = int(os.environ.get("TORCHX_DIFFERENTIAL_EXAMPLES", "1000"))
"""Programs drawn in all: a share to each family, two shares to the mixed test."""
SHARE = max(1, EXAMPLES // (len(FAMILIES) + 2))


@pytest.fixture(autouse=True, scope="module")
def _one_thread() -> Iterator[None]:
    """One torch thread: the tensors are tiny (at most a few thousand values),
    where a thread pool only adds wake-ups, which on a busy machine cost
    milliseconds per operation."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _count(report: Report, family: str, program: Program, outcome: Outcome) -> None:
    if outcome.refused is None:
        # The vocabulary only draws programs eager runs at most sizes: one it
        # runs nowhere would pass without comparing anything.
        assert outcome.compared > 0, f"eager ran this program at no size and mode:{program!r}"
        report.count("fuzz", f"graph vs eager, {family}: graph equal to eager")
        report.count("fuzz", "graph vs eager, all families: (size, mode) runs compared", outcome.compared)
    else:
        report.count("fuzz", f"graph vs eager, {family}: refused at definition (TorchXError)")


@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=SHARE, report_multiple_bugs=False)
@given(data=st.data())
def test_a_recorded_program_equals_eager_or_is_refused(
    family: str, data: st.DataObject, report: Report
) -> None:
    program = data.draw(programs(family), label="program")
    at = data.draw(sizes(len(program.inputs) > 1), label="sizes")
    _count(report, family, program, check(program, at))


@settings(max_examples=2 * SHARE, report_multiple_bugs=False)
@given(data=st.data())
def test_a_mixed_program_equals_eager_or_is_refused(data: st.DataObject, report: Report) -> None:
    program = data.draw(programs("mixed"), label="program")
    at = data.draw(sizes(len(program.inputs) > 1), label="sizes")
    _count(report, "mixed", program, check(program, at))


# -- regression cases: known ways the rule was broken -------------------------
#
# Each runs one program with check(): equal to eager or refused at definition.

EVAL = ("eval",)


@pytest.mark.parametrize("length", [3, 200])
def test_a_loop_over_unbind_runs_once_per_step(length: int) -> None:
    """Issue 39 (1): recorded at the probe, the loop was unrolled 61 times."""
    program = Program.of(
        """
        h = x[:, 0] * 0
        for t in x.unbind(1):
            h = torch.tanh(t + 0.5 * h)
        return h
        """,
        width=8,
    )
    check(program, [Size(2, length)], EVAL)


@pytest.mark.parametrize("length", [3, 80, 200])
def test_a_sum_over_split_pieces_follows_the_length(length: int) -> None:
    """Issue 39 (1): the number of pieces is the probe's."""
    program = Program.of("return sum(p.sum(1) for p in x.split(10, 1))", width=8)
    check(program, [Size(2, length)], EVAL)


@pytest.mark.parametrize("length", [3, 200])
def test_is_causal_from_two_sizes_compares_them_at_run_time(length: int) -> None:
    """Issue 39 (2): q.size(1) == k.size(1) of two Linear outputs on one input
    was recorded False (two size objects), so the attention was not causal."""
    program = Program.of(
        """
        q, k = lin0(x), lin1(x)
        return F.scaled_dot_product_attention(q, k, k, is_causal=q.size(1) == k.size(1))
        """,
        width=8,
        layers=[("lin0", "L.Linear(8)"), ("lin1", "L.Linear(8)")],
    )
    check(program, [Size(2, length)], EVAL)


def test_a_branch_on_a_length_of_one_is_taken_at_run_time() -> None:
    """Issue 39 (2): the probe took the branch; at T=1 the graph divided by a nan std."""
    program = Program.of(
        """
        if x.shape[1] != 1:
            x = x / x.std(1, keepdim=True)
        return x
        """,
        width=8,
    )
    check(program, [Size(2, 1), Size(2, 5)], EVAL)


@pytest.mark.parametrize(("batch", "length"), [(2, 80), (3, 150)])
def test_stride_windows_read_the_strides_at_run_time(batch: int, length: int) -> None:
    """Issue 39 (3): x.stride() was the probe's, so the windows read the wrong memory."""
    program = Program.of(
        """
        b, t, c = x.shape
        return torch.as_strided(x, (b, t - 1, 2 * c), x.stride())
        """,
        width=8,
    )
    check(program, [Size(batch, length)], EVAL)


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_attention_dropout_follows_the_mode(mode: str) -> None:
    """Issue 39 (4): dropout_p=0.1 was recorded as written, so the graph dropped in
    eval mode. The reference is the module form (dropout_p=p if self.training else 0.0)."""
    program = Program.of(
        "return F.scaled_dot_product_attention(x, x, x, dropout_p=0.1)",
        reference="return F.scaled_dot_product_attention(x, x, x, dropout_p=0.1 if self.training else 0.0)",
        width=8,
    )
    check(program, [Size(2, 5), Size(3, 80)], (mode,))


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_functional_dropout_follows_the_mode(mode: str) -> None:
    """Issue 39 (4): F.dropout(x, 0.5) was recorded training=True."""
    program = Program.of(
        "return F.dropout(x, 0.5)", reference="return F.dropout(x, 0.5, training=self.training)", width=8
    )
    check(program, [Size(2, 5), Size(3, 80)], (mode,))


def test_an_in_place_residual_keeps_autocasts_dtype() -> None:
    """Issue 39 (5): linear(x).add_(x) stays bfloat16 where linear(x) + x is float32."""
    program = Program.of("return lin0(x) + x", width=16, layers=[("lin0", "L.Linear(16)")])
    check(program, [Size(2, 5), Size(2, 150)], ("eval, bf16 autocast", "train, bf16 autocast"))


def test_an_in_place_residual_keeps_a_float64_second_input() -> None:
    """Issue 39 (5): linear(x).add_(y) with a float64 y is float32; eager's sum is float64."""
    program = Program.of("return lin0(x) + y", width=16, inputs=("x", "y"), layers=[("lin0", "L.Linear(16)")])
    check(program, [Size(2, 5, 5), Size(2, 150, 150)], ("eval, float64 second input",))


def test_a_dtype_read_follows_model_to_float64() -> None:
    """Issue 39 (8): .to(x.dtype) was recorded .to(torch.float32)."""
    program = Program.of(
        """
        t = x.shape[1]
        cos = torch.ones((t, 8)).to(x.dtype) / 3
        return x * cos
        """,
        width=8,
    )
    check(program, [Size(2, 5), Size(2, 150)], ("eval, model.to(float64)",))


# -- regression cases found by the property tests ---------------------------------


def test_a_power_of_a_size_is_a_value_or_refused() -> None:
    """Scaling by the length (x.shape[1] ** -0.5) raised TypeError at definition, not a TorchXError."""
    check(Program.of("return x * x.shape[1] ** -0.5", width=8), [Size(2, 5), Size(2, 150)], EVAL)


def test_finfo_of_a_dtype_follows_the_dtype() -> None:
    """torch.finfo(x.dtype) raised TypeError at definition (or kept float32's eps after .to(float64))."""
    program = Program.of("return x + torch.finfo(x.dtype).eps * 1000", width=8)
    check(program, [Size(2, 5)], ("eval", "eval, model.to(float64)"))


def test_finfo_min_as_a_mask_fill_follows_autocast() -> None:
    """masked_fill(..., torch.finfo(scores.dtype).min) of a bfloat16 score under autocast:
    float32's min does not fit bfloat16."""
    program = Program.of(
        """
        t = x.shape[1]
        scores = x @ x.transpose(1, 2)
        scores = scores.masked_fill(~torch.ones((t, t), dtype=torch.bool).tril(), torch.finfo(scores.dtype).min)
        return scores.softmax(-1) @ x
        """,
        width=8,
    )
    check(program, [Size(2, 5)], ("eval", "eval, bf16 autocast"))


def test_new_tensor_takes_the_dtype_at_run_time() -> None:
    """x.new_tensor(0.1) was a float32 constant: after .to(float64) it is 0.10000000149."""
    check(Program.of("return x * x.new_tensor(0.1)", width=8), [Size(2, 5)], ("eval, model.to(float64)",))


def test_an_augmented_assignment_stays_in_place() -> None:
    """h += x keeps h's bfloat16 under autocast eagerly; the graph made it float32."""
    program = Program.of(
        """
        h = lin0(x)
        h += x
        return h
        """,
        width=8,
        layers=[("lin0", "L.Linear(8)")],
    )
    check(program, [Size(2, 5)], ("eval, bf16 autocast",))


def test_an_in_place_residual_broadcasts_its_second_input() -> None:
    """lin0(x).add_(y) cannot grow: with x 1 long and y 2 long, eager broadcasts to 2."""
    program = Program.of("return lin0(x) + y", width=8, inputs=("x", "y"), layers=[("lin0", "L.Linear(8)")])
    check(program, [Size(2, 1, 2), Size(2, 5, 5)], EVAL)


def test_dropout_in_both_modes_is_written_torch_dropout() -> None:
    """F.dropout(x, p, training=True) follows the mode, as the default does (torch passes its default
    on: the two cannot be told apart); dropout in eval too (Monte Carlo dropout) is torch.dropout."""
    check(
        Program.of(
            "return F.dropout(x, 0.5, training=True) + torch.dropout(x, 0.5, True)",
            reference="return F.dropout(x, 0.5, training=self.training) + torch.dropout(x, 0.5, True)",
            width=8,
        ),
        [Size(2, 5)],
        EVAL,
    )


# -- the check itself ------------------------------------------------------------


def test_the_check_sees_a_graph_that_differs_from_eager() -> None:
    """Not vacuous: a reference that computes something else is a Mismatch, with
    the program and where it differed in the message."""
    program = Program.of("return x * 2", reference="return x * 2 + (x.shape[1] == 7)", width=4)
    with pytest.raises(Mismatch) as info:
        check(program, [Size(1, 1), Size(2, 7)])
    message = str(info.value)
    assert "the graph's values differ from eager's" in message
    assert "at: x (2, 7, 4) float32; mode: train" in message
    assert "def f(x):\n        return x * 2" in message


def test_the_check_compares_every_size_and_mode() -> None:
    outcome = check(Program.of("return x * 2", width=4), [Size(1, 1), Size(2, 80)])
    assert outcome.refused is None
    assert outcome.compared == 2 * (len(MODES) - 1)  # one mode is for programs with two inputs


def test_the_check_accepts_a_refusal() -> None:
    outcome = check(Program.of("return x * int(x.shape[1])", width=4), [Size(2, 5)])
    assert isinstance(outcome.refused, TorchXError)
