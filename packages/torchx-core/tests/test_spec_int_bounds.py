"""Every integer in a spec is an int64 (MAX_SPEC_INT), checked where it stands as the
document is read (and as a spec is written), before any arithmetic on it; a shape's
size in bytes is computed with a product that stops once it passes an int64."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest

from torchx.core import SpecError
from torchx.core._registry import LayerRegistry
from torchx.core._shapes import _bytes_held, shape_problem
from torchx.core._spec_values import MAX_SPEC_INT, JsonValues, TaggedValues
from torchx.core._specs import from_spec, parse_spec

OUTSIDE = [
    pytest.param(MAX_SPEC_INT + 1, "the integer 9223372036854775808", id="just-past-the-largest"),
    pytest.param(-MAX_SPEC_INT - 2, "the integer -9223372036854775809", id="just-past-the-least"),
    pytest.param(10**600, "an integer of about 601 digits", id="600-digits"),
]
BOUND = "integers in a spec are int64 (-2**63 to 2**63 - 1)"
BOUND_PATTERN = re.escape(BOUND)


def test_the_bound_is_int64() -> None:
    assert MAX_SPEC_INT == 2**63 - 1


@pytest.mark.parametrize(("value", "shown"), OUTSIDE)
def test_a_layer_argument_outside_int64_is_refused_at_its_place_in_data(
    value: int, shown: str, registry: LayerRegistry
) -> None:
    """Before: 2**63 and 10**600 reached the argument's type check ("expected a positive int")."""
    with pytest.raises(SpecError) as caught:
        from_spec({"type": "Dense", "args": {"out_features": value}}, registry=registry)
    assert str(caught.value) == f"$.args.out_features: {shown}; {BOUND}, as tensor sizes are; " + (
        "a larger number is written as a float (1e30)"
    )


@pytest.mark.parametrize(("value", "shown"), OUTSIDE)
def test_an_integer_outside_int64_is_refused_as_json_is_parsed(value: int, shown: str) -> None:
    with pytest.raises(SpecError, match=rf"^model\.json: {shown}; {BOUND_PATTERN}"):
        parse_spec(json.dumps({"type": "Dense", "args": {"out_features": value}}), "json", where="model.json")


@pytest.mark.parametrize(("value", "shown"), OUTSIDE)
def test_an_integer_outside_int64_is_refused_as_yaml_is_parsed_at_its_line(value: int, shown: str) -> None:
    text = f"type: Dense\nargs:\n  out_features: {value}\n"
    with pytest.raises(SpecError, match=rf"^model\.yaml, line 3, column 17: {shown}; "):
        parse_spec(text, "yaml", where="model.yaml")


@pytest.mark.parametrize("kind", ["json", "yaml"])
def test_the_int64_extremes_are_kept(kind: str) -> None:
    extremes = [MAX_SPEC_INT, -MAX_SPEC_INT - 1]
    assert parse_spec(json.dumps({"a": extremes}), kind) == {"a": extremes}


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("0x8000000000000000", id="hex-2**63"),
        pytest.param("0b1" + "0" * 63, id="binary-2**63"),
        pytest.param("-01000000000000000000001", id="octal-below-int64"),
        pytest.param("9_223_372_036_854_775_808", id="underscores-2**63"),
    ],
)
def test_yaml_integer_forms_are_held_to_the_same_bound(text: str) -> None:
    with pytest.raises(SpecError, match=rf"line 1, column 5: the integer -?\d+; {BOUND_PATTERN}"):
        parse_spec(f"a: [{text}]\n")


def test_an_integer_in_a_key_or_deep_in_lists_is_bounded_too(registry: LayerRegistry) -> None:
    with pytest.raises(
        SpecError, match=r"^\$\.layers\[0\]\.args\.x\[1\]\[0\]: the integer 9223372036854775808"
    ):
        from_spec(
            {"type": "Chain", "layers": [{"type": "Dense", "args": {"x": [1, [2**63]]}}]}, registry=registry
        )
    with pytest.raises(SpecError, match=r"the integer -9223372036854775809; integers in a spec are int64"):
        from_spec({"type": "Dense", "args": {"out_features": 1}, -(2**63) - 1: 0}, registry=registry)


def test_a_huge_format_version_is_a_spec_error_not_a_value_error(registry: LayerRegistry) -> None:
    """Before: its message printed the version, and Python refuses to print more than 4,300 digits."""
    with pytest.raises(SpecError, match=r"^\$\.format_version: an integer of about 5,001 digits; integers"):
        from_spec(
            {"format_version": 10**5000, "type": "Dense", "args": {"out_features": 1}}, registry=registry
        )


@pytest.mark.parametrize("writer", [JsonValues(), TaggedValues()], ids=["plain", "tagged"])
def test_an_integer_outside_int64_is_not_written_either(writer: JsonValues) -> None:
    """Before: written, so that the spec could not be read back."""
    with pytest.raises(
        SpecError,
        match=r"^\$\.args\.shape\[1\]: cannot be written to a spec: the integer 18446744073709551616;",
    ):
        writer.fold((2, 2**64), "$.args.shape")
    assert writer.fold(MAX_SPEC_INT, "$") == MAX_SPEC_INT


class CountedInt(int):
    """An int that counts the multiplications it takes part in."""

    products = 0

    def __mul__(self, other: Any) -> Any:
        CountedInt.products += 1
        return int(self) * other

    __rmul__ = __mul__


@pytest.mark.parametrize("dims", [10, 100_000], ids=["10-dims", "100000-dims"])
def test_a_shape_s_bytes_stop_multiplying_past_int64(dims: int) -> None:
    CountedInt.products = 0
    assert _bytes_held([CountedInt(2**62)] * dims, 4) > MAX_SPEC_INT
    assert CountedInt.products == 1  # 4 bytes * 2**62 is past int64 at the first dim
    assert _bytes_held([CountedInt(2**62)] * dims + [0], 4) == 0  # a zero dim: no bytes, no product


def test_no_product_past_int64_is_computed_for_a_shape_of_many_huge_dims(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: math.prod of every dim (10,000 sizes of 2**62: a product 620,000 bits long;
    a file's 2,000,000 would never end)."""
    products: list[int] = []
    real_prod = math.prod

    def prod(values: Any, start: int = 1) -> int:
        values = list(values)
        products.append(sum(int(value).bit_length() for value in values))
        return 2**64 if products[-1] > 128 else real_prod(values, start=start)  # not computed when huge

    monkeypatch.setattr(math, "prod", prod)
    assert "more elements than a tensor can hold" in str(shape_problem((None, *[2**62] * 10_000)))
    assert all(bits <= 128 for bits in products), products
