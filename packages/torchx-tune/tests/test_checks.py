from __future__ import annotations

import pytest
import torch

from torchx.core import Summary, from_spec, summarize
from torchx.tune._checks import Check, Constraints, check, model_inputs

CNN = {
    "type": "Sequential",
    "layers": [
        {"type": "Conv2d", "args": {"out_channels": 8, "kernel_size": 3, "padding": 1}},
        {"type": "ReLU"},
        {"type": "Flatten"},
        {"type": "Linear", "args": {"out_features": 10}},
    ],
}
"""For (None, 1, 8, 8): 8*(9+1) + 10*(8*8*8+1) = 5,210 parameters, 8*64*9 + 512*10 = 9,728 mult-adds,
a largest tensor of 8*8*8 floats (2,048 bytes)."""


def test_check_gives_the_summary_numbers() -> None:
    checked = check(CNN, (None, 1, 8, 8))
    assert checked == Check(params=5_210, mult_adds=9_728, activation_bytes=2_048, reason=None)
    assert checked.passed
    summary = summarize(from_spec(CNN), (None, 1, 8, 8))
    assert summary.largest_tensor is not None
    assert (summary.total_parameters, summary.total_mult_adds, summary.largest_tensor.bytes) == (
        5_210,
        9_728,
        2_048,
    )


def test_check_allocates_nothing() -> None:
    huge = {"type": "Linear", "args": {"out_features": 100_000}}  # 40 GB of weights, were they allocated
    checked = check(huge, (None, 100_000))
    assert checked.reason is None
    assert checked.params == 100_000 * 100_001


@pytest.mark.parametrize(
    ("spec", "start"),
    [
        pytest.param(
            {
                "type": "Sequential",
                "layers": [{"type": "Conv2d", "args": {"out_channels": 4, "kernel_size": 9}}],
            },
            "does not build: ShapeError: Sequential[0] Conv2d: input (None, 1, 8, 8) does not fit",
            id="kernel-larger-than-input",
        ),
        pytest.param(
            {"type": "Sequential", "layers": [{"type": "MaxPool2d", "args": {"kernel_size": 16}}]},
            "does not build: ShapeError: Sequential[0] MaxPool2d",
            id="pool-larger-than-input",
        ),
        pytest.param(
            {
                "type": "Sequential",
                "layers": [{"type": "Conv2d", "args": {"out_channels": 0, "kernel_size": 3}}],
            },
            "does not build: SpecError: $.layers[0].args.out_channels: expected a positive int, got 0",
            id="bad-argument",
        ),
    ],
)
def test_a_spec_that_does_not_build_is_refused_in_one_line(spec: dict[str, object], start: str) -> None:
    checked = check(spec, (None, 1, 8, 8))
    assert (checked.params, checked.mult_adds, checked.activation_bytes) == (None, None, None)
    assert checked.reason is not None and checked.reason.startswith(start)
    assert "\n" not in checked.reason
    assert not checked.passed


@pytest.mark.parametrize(
    ("constraints", "reason"),
    [
        pytest.param(
            Constraints(max_params=5_000), "5,210 parameters, more than max_params=5,000", id="params"
        ),
        pytest.param(
            Constraints(max_mult_adds=1e3), "9,728 mult-adds, more than max_mult_adds=1,000", id="mult-adds"
        ),
        pytest.param(
            Constraints(max_activation_mb=0.001),
            "0.002048 MB in its largest activation, more than max_activation_mb=0.001",
            id="activation",
        ),
        pytest.param(
            Constraints(max_params=1e6, max_mult_adds=1e6, max_activation_mb=1.0), None, id="within-limits"
        ),
    ],
)
def test_limits(constraints: Constraints, reason: str | None) -> None:
    assert check(CNN, (None, 1, 8, 8), constraints).reason == reason


def test_rules_get_the_summary_and_the_first_reason_refuses() -> None:
    seen: list[Summary] = []

    def wide(summary: Summary) -> str | None:
        seen.append(summary)
        return "more than 1,000 parameters\n in the model" if summary.total_parameters > 1_000 else None

    def never(summary: Summary) -> str | None:
        raise AssertionError("not asked after a rule refused")

    checked = check(CNN, (None, 1, 8, 8), Constraints(rules=(lambda summary: None, wide, never)))
    assert checked.reason == "more than 1,000 parameters in the model"
    assert checked.params == 5_210
    assert [summary.total_parameters for summary in seen] == [5_210]


def test_a_broken_limit_comes_before_the_rules() -> None:
    checked = check(CNN, (None, 1, 8, 8), Constraints(max_params=10, rules=(lambda summary: "a rule",)))
    assert checked.reason == "5,210 parameters, more than max_params=10"


@pytest.mark.parametrize(
    ("given", "inputs"),
    [
        pytest.param((None, 4), ((None, 4),), id="one-shape"),
        pytest.param([None, 4], ([None, 4],), id="one-shape-list"),
        pytest.param([(None, 4), (None, 2)], ((None, 4), (None, 2)), id="two-shapes"),
    ],
)
def test_model_inputs(given: object, inputs: tuple[object, ...]) -> None:
    assert model_inputs(given) == inputs  # type: ignore[arg-type]


def test_model_inputs_takes_a_tensor_as_one_input() -> None:
    tensor = torch.zeros(2, 4)
    assert model_inputs(tensor) == (tensor,)
