"""torchx.core._diff and ``torchx diff``, with the toy layers: differences by spec
path, aligned lists, normalisation, and layer differences from summaries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from toy_layers import Chain, Dense, Norm

import torchx.cli._plugin
from torchx.cli import main
from torchx.core import LayerRegistry, PluginManager, SpecError, hookimpl, use_plugins
from torchx.core._diff import SpecDifference, diff_specs, diff_summaries
from torchx.core._summary import summarize


def chain(*children: dict[str, Any]) -> dict[str, Any]:
    return {"format_version": 1, "type": "Chain", "children": list(children)}


def dense(out_features: int, **args: Any) -> dict[str, Any]:
    return {"type": "Dense", "args": {"out_features": out_features, **args}}


NORM = {"type": "Norm"}


def lines(differences: list[SpecDifference]) -> list[str]:
    return [str(difference) for difference in differences]


def test_the_same_model_written_differently_has_no_differences(registry: LayerRegistry) -> None:
    a = chain(dense(4), NORM, dense(2))
    b = chain(
        {"type": "fullyconnected", "args": {"out_features": 4, "bias": True}},
        {"type": "norm", "args": {"momentum": 0.1}},
        dense(2),
    )
    assert diff_specs(a, b, registry=registry) == []
    unread = diff_specs(a, b, normalize=False)  # as written: other type names, defaults given
    assert [(d.change, d.path) for d in unread] == [
        ("changed", "$.children[0]"),
        ("changed", "$.children[1]"),
    ]


def test_a_changed_argument_is_one_difference_at_its_path(registry: LayerRegistry) -> None:
    [difference] = diff_specs(chain(dense(4), dense(2)), chain(dense(4), dense(3)), registry=registry)
    assert difference == SpecDifference(
        "changed", "$.children[1].args.out_features", "$.children[1].args.out_features", 2, 3
    )
    assert str(difference) == "$.children[1].args.out_features: 2 → 3"


def test_an_inserted_layer_is_one_added_entry_and_later_paths_name_both_sides(
    registry: LayerRegistry,
) -> None:
    a = chain(dense(4), NORM, dense(2))
    b = chain(dense(4), dense(8), NORM, dense(3))
    assert lines(diff_specs(a, b, registry=registry)) == [
        '$.children[1]: added {"type": "Dense", "args": {"out_features": 8}}',
        "$.children[2→3].args.out_features: 2 → 3",
    ]
    [removed] = diff_specs(b, chain(dense(4), NORM, dense(3)), registry=registry)
    assert (removed.change, removed.a_path, removed.b_path) == ("removed", "$.children[1]", None)
    assert removed.a == dense(8)


def test_repeated_blocks_align_where_they_were_inserted(registry: LayerRegistry) -> None:
    block = [dense(4), NORM, dense(4), NORM]
    a = chain(*block * 50)
    b = chain(*block * 2, dense(8), *block * 48)
    b["children"][-4] = dense(5)  # and the last block changes
    assert lines(diff_specs(a, b, registry=registry)) == [
        '$.children[8]: added {"type": "Dense", "args": {"out_features": 8}}',
        "$.children[196→197].args.out_features: 4 → 5",
    ]


def test_a_changed_type_is_one_change_of_the_whole_entry(registry: LayerRegistry) -> None:
    [difference] = diff_specs(chain(dense(4), dense(2)), chain(dense(4), NORM), registry=registry)
    assert difference.change == "changed" and difference.path == "$.children[1]"
    assert difference.a == dense(2) and difference.b == NORM


def test_nested_entries_and_plain_lists(registry: LayerRegistry) -> None:
    a = chain(dense(4), chain(dense(3), NORM))
    b = chain(dense(4), chain(dense(3), dense(5), NORM))
    assert [(d.change, d.path) for d in diff_specs(a, b, registry=registry)] == [
        ("added", "$.children[1].children[1]")
    ]
    raw = diff_specs(
        {"shape": [None, 3], "x": 1, "y": True}, {"shape": [None, 4], "y": 1, "z": 2}, normalize=False
    )
    assert lines(raw) == [
        "$.shape: [null, 3] → [null, 4]",  # a plain list is one value
        "$.x: removed 1",
        "$.y: true → 1",  # values of another type differ
        "$.z: added 2",
    ]


def test_an_invalid_spec_raises_a_spec_error(registry: LayerRegistry) -> None:
    with pytest.raises(SpecError, match=r"\$\.children\[1\]\.type: unknown layer type 'Dens'"):
        diff_specs(chain(dense(2)), chain(dense(2), {"type": "Dens"}), registry=registry)


def test_summaries_differ_by_layer_with_rows_aligned(registry: LayerRegistry) -> None:
    a = summarize(Chain(Dense(4), Norm(), Dense(2)), (None, 3))
    b = summarize(Chain(Dense(4), Dense(6), Norm(), Dense(2)), (None, 3))
    found = [
        (
            d.change,
            d.path,
            d.a and (d.a.parameters, d.a.output_shape),
            d.b and (d.b.parameters, d.b.output_shape),
        )
        for d in diff_summaries(a, b)
    ]
    assert found == [
        ("changed", "", (34, (None, 2)), (72, (None, 2))),
        ("added", "1", None, (30, (None, 6))),
        ("changed", "1→2", (8, (None, 4)), (12, (None, 6))),
        ("changed", "2→3", (10, (None, 2)), (14, (None, 2))),
    ]
    assert diff_summaries(a, a) == []


class ToyPlugin:
    @hookimpl
    def torchx_register_layers(self, registry: LayerRegistry) -> None:
        for layer in (Dense, Norm, Chain):
            registry.register(layer)


@pytest.fixture
def toy_cli() -> Iterator[None]:
    """``torchx`` with the core's commands and the toy layers only."""
    manager = PluginManager(load_entry_points=False)
    manager.register(torchx.cli._plugin, "torchx-core")
    manager.register(ToyPlugin(), "toy-layers")
    with use_plugins(manager):
        yield


def write(path: Path, document: dict[str, Any]) -> str:
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


def test_the_command_exits_0_1_or_2(
    toy_cli: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write(tmp_path / "a.json", chain(dense(4), NORM, dense(2)))
    b = write(tmp_path / "b.json", chain(dense(4), dense(8), NORM, dense(2)))
    assert main(["diff", a, a]) == 0 and "no differences" in capsys.readouterr().out
    assert main(["diff", a, b, "--input", "None,3"]) == 1
    out = capsys.readouterr().out
    assert "$.children[1]" in out and "total parameters: a 34, b 90 (+56)" in out
    assert main(["diff", a, b, "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["equal"] is False and [d["b_path"] for d in data["spec"]] == ["$.children[1]"]
    bad = write(tmp_path / "bad.json", chain({"type": "Dens"}))
    assert main(["diff", a, bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith("torchx diff: error: ") and "bad.json: SpecError: $.children[0].type" in err
    assert err.count("\n") == 1
