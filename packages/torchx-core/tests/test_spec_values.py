"""The value grammar: its kinds, its one walk, and its JSON forms (plain and tagged)."""

from __future__ import annotations

import enum
import json
import math
import sys
from collections import OrderedDict
from typing import Any

import pytest
import torch

from torchx.core import SpecError
from torchx.core._dtypes import dtype_name
from torchx.core._spec_values import (
    GRAPH_KINDS,
    JSON_KINDS,
    KIND_TYPES,
    NON_FINITE,
    JsonValues,
    Kind,
    TaggedReader,
    TaggedValues,
    ValueFold,
    kind_of,
    read_json_value,
)


class Colour(enum.IntEnum):
    RED = 1


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (None, "atom"),
        (True, "atom"),
        (3, "atom"),
        (Colour.RED, "atom"),
        (2.5, "atom"),
        ("x", "atom"),
        ((1, 2), "sequence"),
        ([1, (2,)], "sequence"),
        (torch.Size([2, 3]), "sequence"),
        ({"a": 1}, "mapping"),
        (OrderedDict(a=1), "mapping"),
        ({}, "mapping"),
        (slice(1, None, 2), "slice"),
        (Ellipsis, "ellipsis"),
        (torch.float16, "dtype"),
        ({0: 1}, None),
        ({"a": 1, 2: 3}, None),
        ({1, 2}, None),
        (torch.zeros(2), None),
        (object(), None),
    ],
    ids=repr,
)
def test_every_value_has_its_kind_or_none(value: Any, kind: Kind | None) -> None:
    assert kind_of(value) == kind


def test_the_json_kinds_are_a_subset_of_the_graph_kinds() -> None:
    assert JSON_KINDS < GRAPH_KINDS == set(KIND_TYPES)


class _Shown(ValueFold[str]):
    """Values as text, with the places the fold gives their parts."""

    def __init__(self) -> None:
        self.places: list[str] = []

    def fold(self, value: Any, where: str) -> str:
        self.places.append(where)
        return super().fold(value, where)

    def atom(self, value: bool | int | float | str | None, where: str) -> str:
        return repr(value)

    def sequence(self, value: tuple[Any, ...] | list[Any], items: list[str], where: str) -> str:
        return f"{type(value).__name__}({', '.join(items)})"

    def mapping(self, items: dict[str, str], where: str) -> str:
        return "dict(" + ", ".join(f"{key}={item}" for key, item in items.items()) + ")"

    def slice(self, start: str, stop: str, step: str, where: str) -> str:
        return f"slice({start}, {stop}, {step})"

    def ellipsis(self, where: str) -> str:
        return "..."

    def dtype(self, value: torch.dtype, where: str) -> str:
        return dtype_name(value)

    def other(self, value: Any, where: str) -> str:
        return f"<{type(value).__name__}>"


def test_a_fold_folds_the_parts_first_and_gives_each_its_place() -> None:
    shown = _Shown()
    value = {"a": [1, (2.5, None)], "b": slice(0, ...), "c": torch.int8, "d": {1, 2}}
    shown_value = "dict(a=list(1, tuple(2.5, None)), b=slice(0, ..., None), c=int8, d=<set>)"
    assert shown.fold(value, "$") == shown_value
    assert shown.places == [
        "$", "$.a", "$.a[0]", "$.a[1]", "$.a[1][0]", "$.a[1][1]", "$.b", "$.b", "$.b", "$.b", "$.c", "$.d",
    ]  # fmt: skip


def test_a_fold_does_not_walk_into_kinds_it_does_not_declare() -> None:
    class ShownJson(_Shown):
        kinds = JSON_KINDS

    shown = ShownJson()
    outside = [{"a": [1]}, slice(2), torch.int8, ...]
    assert shown.fold(outside, "$") == "list(<dict>, <slice>, <dtype>, <ellipsis>)"
    assert shown.places == ["$", "$[0]", "$[1]", "$[2]", "$[3]"]


def test_a_fold_refuses_kinds_it_declares_but_does_not_say_how_to_fold() -> None:
    class Atoms(ValueFold[Any]):
        def atom(self, value: bool | int | float | str | None, where: str) -> Any:
            return value

    assert Atoms().fold(1, "$") == 1
    with pytest.raises(NotImplementedError, match="Atoms does not fold sequences"):
        Atoms().fold([1], "$")


def test_json_values_are_the_json_subset_with_tuples_as_lists() -> None:
    assert JsonValues().fold((1, [2.5, ("a", None, True)]), "$") == [1, [2.5, ["a", None, True]]]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            (1, {"a": 1}),
            r"^\$\.args\.x\[1\]: a dict value \(\{'a': 1\}\) cannot be written to a spec; "
            "specs hold only numbers, strings, booleans, null and lists$",
        ),
        (torch.float32, r"^\$\.args\.x: a dtype value \(torch\.float32\) cannot be written"),
        (slice(1), r"^\$\.args\.x: a slice value"),
    ],
    ids=["dict-inside", "dtype", "slice"],
)
def test_json_values_refuse_what_json_cannot_hold_where_it_stands(value: Any, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        JsonValues().fold(value, "$.args.x")


def test_json_values_write_the_floats_json_has_no_literal_for_as_tagged_objects() -> None:
    written = JsonValues().fold([1.5, (math.inf, -math.inf), math.nan], "$")
    assert written == [1.5, [{"float": "inf"}, {"float": "-inf"}], {"float": "nan"}]
    assert json.loads(json.dumps(written, allow_nan=False)) == written  # standard JSON
    read = read_json_value(written, "$")
    assert read[:2] == [1.5, [math.inf, -math.inf]] and math.isnan(read[2])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"float": "1.5"},
            r"^\$\.args\.x: non-finite numbers are written \{\"float\": \"inf\"\}, .* got '1\.5'$",
        ),
        ([1, {"float": "Infinity"}], r"^\$\.args\.x\[1\]: non-finite numbers are written .* got 'Infinity'$"),
        ({"float": None}, r"^\$\.args\.x: non-finite numbers are written .* got None$"),
    ],
    ids=["finite-number", "other-name-in-list", "null"],
)
def test_a_tagged_float_that_is_not_inf_or_nan_is_refused_where_it_stands(data: Any, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        read_json_value(data, "$.args.x")
    with pytest.raises(SpecError, match=message.replace("args", "kwargs")):
        TaggedReader().read(data if isinstance(data, dict) else {"list": data}, "$.kwargs.x")


def test_plain_arguments_are_read_in_time_linear_in_the_document_as_stored() -> None:
    deep: list[Any] = [{"float": "-inf"}]
    for _ in range(5 * sys.getrecursionlimit()):
        deep = [deep, 1]
    shared: list[Any] = [{"float": "inf"}]
    for _ in range(64):  # 2**64 lists once expanded, 65 as stored
        shared = [shared, shared]
    read = read_json_value(deep, "$")
    while len(read) == 2:
        read = read[0]
    assert read == [-math.inf]
    read = read_json_value(shared, "$")
    assert read[0] is read[1] and read[0][0] is read[1][1]
    bad: list[Any] = [{"float": "x"}]
    for _ in range(3):
        bad = [1, [bad, bad]]
    with pytest.raises(SpecError, match=r"^\$\.a\[1\]\[0\]\[1\]\[0\]\[1\]\[0\]\[0\]: non-finite"):
        read_json_value(bad, "$.a")


def test_a_plain_argument_that_is_another_object_is_left_for_its_type_to_refuse() -> None:
    assert read_json_value({"float": "inf", "x": 1}, "$") == {"float": "inf", "x": 1}
    assert read_json_value({"dtype": "float32"}, "$") == {"dtype": "float32"}


@pytest.mark.parametrize("name", sorted(NON_FINITE), ids=str)
def test_non_finite_floats_read_back_exactly_as_tagged_values(name: str) -> None:
    value = NON_FINITE[name]
    written = TaggedValues().fold({"max": value, "at": (value, 1.0)}, "$")
    assert written == {"dict": {"max": {"float": name}, "at": {"tuple": [{"float": name}, 1.0]}}}
    read = TaggedReader().read(json.loads(json.dumps(written, allow_nan=False)), "$")
    for got in (read["max"], read["at"][0]):
        assert type(got) is float and (math.isnan(got) if name == "nan" else got == value)


GRAPH_VALUES = [
    None,
    -3,
    0.5,
    "text",
    (),
    (1,),
    [1, (2, [3])],
    {"a": (1, None), "b": {}},
    slice(None, -1, 2),
    (Ellipsis, slice(1, None), None),
    torch.bfloat16,
    {"dtype": torch.int64},
]


@pytest.mark.parametrize("value", GRAPH_VALUES, ids=repr)
def test_tagged_values_read_back_as_they_were_written(value: Any) -> None:
    written = TaggedValues().fold(value, "$")
    assert TaggedValues().fold(TaggedReader().read(written, "$"), "$") == written
    read = TaggedReader().read(written, "$")
    assert read == value and type(read) is type(value)


def test_tagged_values_name_each_kind() -> None:
    written = TaggedValues().fold([(1,), {"a": ...}, slice(2), torch.float16], "$")
    assert written == {
        "list": [
            {"tuple": [1]},
            {"dict": {"a": {"ellipsis": True}}},
            {"slice": [None, 2, None]},
            {"dtype": "float16"},
        ]
    }


def test_tagged_values_refuse_dict_keys_that_are_not_strings() -> None:
    with pytest.raises(SpecError, match=r"^\$\.outputs\[1\]: dict keys in a spec are strings, got 0$"):
        TaggedValues().fold(({"a": 1}, {"a": 1, 0: 2}), "$.outputs")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"list": [1, [2]]}, r'^\$\[1\]: lists are written as \{"list": \[\.\.\.\]\}$'),
        (
            {"tuple": [], "list": []},
            r"^\$: expected one tag \(list, tuple, dict, slice, dtype, float\.\.\.\), got",
        ),
        ({"dict": {"a": {"node": "x"}}}, r"^\$\.a: unknown value tag 'node' or malformed content$"),
        ({"slice": [1, 2]}, r"^\$: unknown value tag 'slice' or malformed content$"),
        ({"dtype": "float33"}, r"^\$: unknown value tag 'dtype' or malformed content$"),
        ({"dtype": ["float32"]}, r"^\$: unknown value tag 'dtype' or malformed content$"),
    ],
    ids=["untagged-list", "two-tags", "unknown-tag", "short-slice", "unknown-dtype", "dtype-list"],
)
def test_the_tagged_reader_says_where_data_is_malformed(data: Any, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        TaggedReader().read(data, "$")


def test_a_reader_reads_its_own_tags_as_references() -> None:
    class Named(TaggedReader):
        tags_shown = ("name", *TaggedReader.tags_shown)

        def reference(self, tag: Any, content: Any, where: str) -> Any:
            if tag == "name":
                return f"<{content} at {where}>"
            return super().reference(tag, content, where)

    assert Named().read({"tuple": [{"name": "x"}, 1]}, "$") == ("<x at $[0]>", 1)
    with pytest.raises(SpecError, match=r"expected one tag \(name, list, tuple"):
        Named().read({}, "$")
