"""Specs: round trips, strict validation, and data-only loading."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
import torch
from toy_layers import Chain, Dense, Norm

from torchx.core import (
    FORMAT_VERSION,
    LayerRegistry,
    LeafLayer,
    SpecError,
    from_spec,
    load_spec,
    save_spec,
    to_spec,
)
from torchx.core._arguments import ArgumentMismatch, coerce
from torchx.plugin import AnyFloat, ArgumentError, ExtendedFloat, Interval, NonFinite


def test_round_trip_of_a_nested_model(registry: LayerRegistry) -> None:
    model = Chain(Dense(8, bias=False), Chain(Norm(momentum=0.2)), Dense(3))
    spec = to_spec(model, registry=registry)
    assert spec == {
        "format_version": FORMAT_VERSION,
        "type": "Chain",
        "children": [
            {"type": "Dense", "args": {"out_features": 8, "bias": False}},
            {"type": "Chain", "children": [{"type": "Norm", "args": {"momentum": 0.2}}]},
            {"type": "Dense", "args": {"out_features": 3}},
        ],
    }
    rebuilt = from_spec(spec, registry=registry)
    assert to_spec(rebuilt, registry=registry) == spec
    assert json.loads(json.dumps(spec)) == spec


def test_a_spec_of_a_built_layer_holds_only_what_the_user_wrote(registry: LayerRegistry) -> None:
    layer = Dense(4)
    layer(torch.zeros(2, 9))
    assert to_spec(layer, registry=registry)["args"] == {"out_features": 4}


def test_type_names_are_case_insensitive_with_aliases(registry: LayerRegistry) -> None:
    assert isinstance(from_spec({"type": "dense", "args": {"out_features": 2}}, registry=registry), Dense)
    assert isinstance(
        from_spec({"type": "FULLYCONNECTED", "args": {"out_features": 2}}, registry=registry), Dense
    )


def test_unknown_type_lists_close_names(registry: LayerRegistry) -> None:
    with pytest.raises(SpecError, match=r"\$\.type: unknown layer type 'Dnse'; did you mean Dense\?"):
        from_spec({"type": "Dnse"}, registry=registry)


@pytest.mark.parametrize(
    ("spec", "where", "problem"),
    [
        pytest.param(
            {"type": "Dense", "args": {"out_features": "8"}},
            r"\$\.args\.out_features",
            "expected a positive int",
            id="size-str",
        ),
        pytest.param(
            {"type": "Dense", "args": {"out_features": 8.0}},
            r"\$\.args\.out_features",
            "expected a positive int",
            id="size-float",
        ),
        pytest.param(
            {"type": "Dense", "args": {"out_features": 8, "bias": 1}},
            r"\$\.args\.bias",
            "expected a bool",
            id="bias-int",
        ),
        pytest.param(
            {"type": "Dense", "args": {}},
            r"\$\.args",
            "missing required argument 'out_features'",
            id="missing-argument",
        ),
        pytest.param(
            {"type": "Dense", "args": {"out_features": 2, "colour": 1}},
            r"\$\.args\.colour",
            "unknown argument; Dense takes out_features, bias",
            id="unknown-argument",
        ),
        pytest.param(
            {"type": "Dense", "args": {"out_features": 2}, "extra": 1},
            r"\$\.extra",
            "unknown key",
            id="unknown-key",
        ),
        pytest.param(
            {"type": "Dense", "args": [2]}, r"\$\.args", "expected an object of arguments", id="args-list"
        ),
        pytest.param(
            {"type": "Dense", "args": {"out_features": 0}},
            r"\$\.args\.out_features",
            "expected a positive int",
            id="size-zero",
        ),
        pytest.param(
            {"args": {}}, r"\$\.type", "missing: a layer entry names its class in 'type'", id="no-type"
        ),
        pytest.param(
            {"type": "Chain", "children": [{"type": "Dense", "args": {"out_features": 2}}, {"typ": "Norm"}]},
            r"\$\.children\[1\]\.typ",
            "unknown key \\(did you mean 'type'\\?\\); a layer entry names its class in 'type'",
            id="misspelled-type",
        ),
        pytest.param(
            {"type": "Dense", "arg": {"out_features": 2}},
            r"\$\.arg",
            "unknown key \\(did you mean 'args'\\?\\); a Dense spec has only 'type', 'name', 'version' and 'args'",
            id="misspelled-args",
        ),
        pytest.param(
            {"type": "Chain", "children": [{"type": "Dense", "args": {"out_features": -1}}]},
            r"\$\.children\[0\]\.args\.out_features",
            "positive",
            id="child-size-negative",
        ),
        pytest.param(
            {"type": "Dense", "format_version": FORMAT_VERSION + 1},
            r"\$\.format_version",
            "newer than",
            id="version-newer",
        ),
        pytest.param(
            {"type": "Dense", "format_version": "1"},
            r"\$\.format_version",
            "positive integer",
            id="version-str",
        ),
    ],
)
def test_bad_specs_raise_spec_errors_that_say_where(
    registry: LayerRegistry, spec: dict, where: str, problem: str
) -> None:
    with pytest.raises(SpecError, match=f"^{where}: .*{problem}"):
        from_spec(spec, registry=registry)


def test_a_spec_that_is_not_an_object(registry: LayerRegistry) -> None:
    with pytest.raises(SpecError, match=r"^\$: a spec is an object"):
        from_spec(["Dense"], registry=registry)  # type: ignore[arg-type]


def test_absurdly_deep_nesting_is_refused_without_recursion_errors(registry: LayerRegistry) -> None:
    spec: dict = {"type": "Dense", "args": {"out_features": 1}}
    for _ in range(5000):
        spec = {"type": "Chain", "children": [spec]}
    with pytest.raises(SpecError, match="nests deeper than"):
        from_spec(spec, registry=registry)


def test_json_and_yaml_files_round_trip(registry: LayerRegistry, tmp_path: Path) -> None:
    model = Chain(Dense(8), Norm())
    for name in ("model.json", "model.yaml", "model.yml"):
        save_spec(model, tmp_path / name, registry=registry)
        loaded = load_spec(tmp_path / name, registry=registry)
        assert to_spec(loaded, registry=registry) == to_spec(model, registry=registry)


def test_yaml_python_tags_are_refused_and_nothing_runs(registry: LayerRegistry, tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    path = tmp_path / "evil.yaml"
    path.write_text(f"!!python/object/apply:os.system ['touch {canary}']\n")
    with pytest.raises(SpecError, match="invalid or unsafe YAML"):
        load_spec(path, registry=registry)
    assert not canary.exists()


def test_a_type_naming_a_dotted_path_is_never_imported(
    registry: LayerRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tx_canary_module.py").write_text(f"open({str(tmp_path / 'imported')!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("tx_canary_module.Thing", "os.system", "subprocess.Popen", "__import__"):
        with pytest.raises(SpecError, match="unknown layer type"):
            from_spec({"type": name, "args": {}}, registry=registry)
    assert "tx_canary_module" not in sys.modules
    assert not (tmp_path / "imported").exists()


def test_unsupported_suffix_and_invalid_json(registry: LayerRegistry, tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"\.json, \.yaml or \.yml"):
        load_spec(tmp_path / "model.txt", registry=registry)
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(SpecError, match="invalid JSON"):
        load_spec(tmp_path / "bad.json", registry=registry)


def test_values_specs_cannot_hold_are_refused_on_writing(registry: LayerRegistry) -> None:
    layer = Dense(2)
    layer._torchx.arguments["bias"] = torch.ones(1)
    with pytest.raises(SpecError, match=r"\$\.args\.bias: a Tensor value"):
        to_spec(layer, registry=registry)


def test_plain_torch_modules_cannot_be_written(registry: LayerRegistry) -> None:
    with pytest.raises(SpecError, match=r"\$\.children\[1\]: ReLU is a plain torch module"):
        to_spec(Chain(Dense(2), torch.nn.ReLU()), registry=registry)


def test_built_layers_are_written_under_their_registered_name() -> None:
    registry = LayerRegistry()
    registry.register(Dense, name="acme.dense")
    layer = Dense(3)
    layer(torch.zeros(1, 2))
    spec = to_spec(layer, registry=registry)
    assert spec["type"] == "acme.dense"
    assert isinstance(from_spec(spec, registry=registry), Dense)


# -- bounded resources: aliases, sizes, integers -------------------------------


def _shared_bomb(depth: int, fan_out: int = 10) -> list:
    """A list of ``fan_out ** depth`` ones, stored as ``depth`` shared lists (what YAML aliases make)."""
    bomb: list = [1] * fan_out
    for _ in range(depth - 1):
        bomb = [bomb] * fan_out
    return bomb


def test_shared_values_anywhere_in_a_spec_count_once_per_use(registry: LayerRegistry) -> None:
    from torchx.core._specs import MAX_SPEC_VALUES
    from torchx.core._validate import check_spec

    # 10**60 values in 60 lists: the check visits each list once, so it answers at once
    for spec in (
        {"type": "Dense", "args": {"out_features": 3, "bias": _shared_bomb(60)}},
        {"type": "Chain", "children": [], "notes": _shared_bomb(60)},
        {"type": "Dense", "args": {"out_features": 3}, "extra": {"nested": {"deeper": _shared_bomb(7)}}},
    ):
        with pytest.raises(
            SpecError, match=rf"^\$\.[^:]*: the spec expands to more than {MAX_SPEC_VALUES:,} values"
        ):
            from_spec(spec, registry=registry)
        (problem,) = check_spec(spec, registry=registry)
        assert f"more than {MAX_SPEC_VALUES:,} values" in problem.message
    # under the limit, sharing is fine: the spec reads as if written out
    shared = {"type": "Dense", "args": {"out_features": 2}}
    assert len(from_spec({"type": "Chain", "children": [shared] * 50}, registry=registry)._modules) == 50


def test_yaml_aliases_that_expand_past_the_limit_are_refused(registry: LayerRegistry) -> None:
    from torchx.core._specs import parse_spec

    lines = ["type: Dense", "args: {out_features: 3}", "notes:", "  - &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"  - &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 12)]
    document = parse_spec("\n".join(lines))
    with pytest.raises(SpecError, match=r"^\$\.notes\[\d+\].*: the spec expands to more than"):
        from_spec(document, registry=registry)


def test_a_document_that_holds_itself_is_refused(registry: LayerRegistry) -> None:
    from torchx.core._specs import parse_spec

    loop: list = [1]
    loop.append(loop)
    with pytest.raises(SpecError, match=r"^\$\.args\.bias\[1\]: .*holds itself"):
        from_spec({"type": "Dense", "args": {"out_features": 3, "bias": loop}}, registry=registry)
    document = parse_spec("type: Chain\nchildren: &a [{type: Chain, children: *a}]\n")
    with pytest.raises(SpecError, match=r"^\$\.children\[0\]\.children: .*holds itself"):
        from_spec(document, registry=registry)


def test_too_many_layers_are_still_refused_by_their_own_limit(registry: LayerRegistry) -> None:
    from torchx.core._specs import MAX_LAYERS

    layer = {"type": "Dense", "args": {"out_features": 2}}
    for _ in range(17):  # 2**17 layers in 34 objects
        layer = {"type": "Chain", "children": [layer, layer]}
    with pytest.raises(SpecError, match=rf"describes more than {MAX_LAYERS} layers"):
        from_spec(layer, registry=registry)


def test_huge_integers_are_one_line_spec_errors(registry: LayerRegistry) -> None:
    from torchx.core._specs import MAX_INT_DIGITS, parse_spec

    digits = "9" * 5000
    cases = {
        f'{{"type": "Dense", "args": {{"out_features": {digits}}}}}': ("json", "an integer of 5,000 digits"),
        f"type: Dense\nargs: {{out_features: {digits}}}\n": (
            "yaml",
            "line 2, column 22: an integer of 5,000",
        ),
        f"type: Dense\nargs: {{out_features: -{digits}}}\n": ("yaml", "an integer of 5,000 digits"),
        f"type: Dense\nargs: {{out_features: 0x{'f' * 5000}}}\n": ("yaml", "an integer of 5,002 characters"),
        f"type: Dense\nargs: {{out_features: 0x{'f' * 600}}}\n": ("yaml", "an integer of about 723 digits"),
        f"type: Dense\nargs: {{out_features: 1{':00' * 5000}}}\n": (
            "yaml",
            "an integer of 15,001 characters",
        ),
        f"type: Dense\nargs: {{bias: [0b{'1' * 3000}]}}\n": ("yaml", "an integer of 3,002 characters"),
    }
    for text, (kind, message) in cases.items():
        with pytest.raises(SpecError) as caught:
            parse_spec(text, kind, where="model.spec")
        assert str(caught.value).startswith("model.spec") and message in str(caught.value)
        assert "integers in a spec are int64" in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(SpecError, match=r"an integer of about 640 digits; integers in a spec are int64"):
        parse_spec(f"a: {'9' * MAX_INT_DIGITS}\n")  # converted (few enough digits), then bounded
    # data given directly (not parsed) is held to the same limit, at its place
    with pytest.raises(SpecError, match=r"^\$\.args\.out_features: an integer of about 701 digits"):
        from_spec({"type": "Dense", "args": {"out_features": 10**700}}, registry=registry)
    with pytest.raises(SpecError, match=r"^\$\.args\.out_features: an integer of about 401 digits"):
        from_spec({"type": "Dense", "args": {"out_features": 10**400}}, registry=registry)


def test_documents_past_the_size_limit_are_refused_before_parsing(
    registry: LayerRegistry, tmp_path: Path
) -> None:
    from torchx.core._specs import MAX_SPEC_BYTES, parse_spec

    text = "#" * (MAX_SPEC_BYTES + 1)
    for kind in ("json", "yaml"):
        with pytest.raises(SpecError, match=rf"^<spec>: the document is {MAX_SPEC_BYTES + 1:,} characters"):
            parse_spec(text, kind)
    path = tmp_path / "huge.yaml"
    with path.open("wb") as file:
        file.truncate(MAX_SPEC_BYTES + 1)  # sparse: never read, only measured
    with pytest.raises(SpecError, match=rf"huge.yaml: the file is {MAX_SPEC_BYTES + 1:,} bytes; .* at most"):
        load_spec(path, registry=registry)


def test_yaml_of_more_values_than_the_limit_stops_while_it_is_composed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from torchx.core import _specs as specs

    monkeypatch.setattr(specs, "MAX_SPEC_VALUES", 1000)
    assert len(specs.parse_spec("[" + "1, " * 998 + "1]")) == 999  # the list and its items: 1,000
    for loader in (specs._yaml_loader, specs._pure_yaml_loader):
        monkeypatch.setattr(specs, "_yaml_loader", loader)
        with pytest.raises(SpecError, match=r"^m\.yaml: the document holds more than 1,000 values"):
            specs.parse_spec("[" + "1, " * 999 + "1]", where="m.yaml")
        with pytest.raises(SpecError, match="more than 1,000 values"):
            specs.parse_spec("a: {" + ", ".join(f"k{i}: [x]" for i in range(400)) + "}")


def test_the_c_and_pure_yaml_loaders_read_the_same_data_and_refuse_the_same_tags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    from torchx.core import _specs as specs

    assert issubclass(specs._yaml_loader(), yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader)
    texts = [
        (Path(__file__).resolve().parents[3] / "examples" / name).read_text(encoding="utf-8")
        for name in ("seed_cnn.yaml", "seed_diamond.yaml", "transformer_classifier.yaml")
    ]
    texts.append("a: [1, 0x1f, 0o17, 1_000, 1:30, -2, +3, 1.5, .inf, null, ~, yes, 'x', 2001-12-14]\n")
    for text in texts:
        fast = specs.parse_spec(text)
        monkeypatch.setattr(specs, "_yaml_loader", specs._pure_yaml_loader)
        assert specs.parse_spec(text) == fast
        monkeypatch.undo()
    for loader in (specs._yaml_loader, specs._pure_yaml_loader):
        monkeypatch.setattr(specs, "_yaml_loader", loader)
        canary = tmp_path / "canary"
        for tag in (
            "!!python/object/apply:os.system",
            "!!python/name:os.system",
            "!!python/object:os.PathLike",
        ):
            with pytest.raises(SpecError, match="invalid or unsafe YAML"):
                specs.parse_spec(f"{tag} ['touch {canary}']\n")
        assert not canary.exists()
        with pytest.raises(SpecError, match="nests too deeply"):  # libyaml's own limit, or recursion
            specs.parse_spec("- " * 10_000 + "1")
        with pytest.raises(SpecError, match=r"not UTF-8 text|unacceptable character"):
            specs.parse_spec("type: \udcff\n")  # how Python reads an undecodable byte
        monkeypatch.undo()


def test_check_spec_reports_weights_larger_than_memory(
    monkeypatch: pytest.MonkeyPatch, registry: LayerRegistry
) -> None:
    from torchx.core import _memory as memory
    from torchx.core._validate import check_spec

    monkeypatch.setattr(memory, "available_memory", lambda device: 1 << 20)  # a 1 MiB machine
    spec = {"type": "Dense", "args": {"out_features": 1024}}
    problems = [str(problem) for problem in check_spec(spec, (None, 1024), registry=registry)]
    assert problems == ["$: its parameters and buffers take 4.0 MiB, more than the 1.0 MiB available on cpu"]
    assert check_spec({"type": "Dense", "args": {"out_features": 8}}, (None, 8), registry=registry) == []


def test_frozen_parameters_are_written_and_read_back(registry: LayerRegistry) -> None:
    first, second = Dense(8), Dense(3)
    model = Chain(first, second, Norm())
    first.requires_grad_(False)
    second.bias.requires_grad_(False)
    spec = to_spec(model, registry=registry)
    assert [child.get("frozen") for child in spec["children"]] == [True, ["bias"], None]
    read = from_spec(json.loads(json.dumps(spec)), registry=registry)
    read(torch.zeros(2, 5))  # the build fills the pending parameters in place: still frozen
    assert {name: p.requires_grad for name, p in read.named_parameters()} == {
        name: p.requires_grad for name, p in model.named_parameters()
    } | {"2.weight": True, "2.bias": True}
    assert to_spec(read, registry=registry) == spec


@pytest.mark.parametrize(
    ("frozen", "message"),
    [
        ("yes", "expected true, false or a list of parameter names"),
        (["weight", 3], "expected true, false or a list of parameter names"),
        (["kernel"], "'kernel' is not a parameter of the layer"),
    ],
    ids=["a-string", "a-number-in-the-list", "an-unknown-parameter"],
)
def test_a_bad_frozen_entry_is_refused_at_its_place(
    registry: LayerRegistry, frozen: object, message: str
) -> None:
    spec = {"type": "Chain", "children": [{"type": "Dense", "args": {"out_features": 2}, "frozen": frozen}]}
    with pytest.raises(SpecError, match=rf"\$\.children\[0\]\.frozen.*{message}"):
        from_spec(spec, registry=registry)


def test_a_container_without_parameters_of_its_own_cannot_be_frozen(registry: LayerRegistry) -> None:
    with pytest.raises(SpecError, match=r"\$\.frozen.*no parameters of its own"):
        from_spec(
            {"type": "Chain", "frozen": True, "children": [{"type": "Dense", "args": {"out_features": 2}}]},
            registry=registry,
        )


DUPLICATES = {
    "json-top": ('{"type": "Dense", "type": "Norm"}', "json", "$.type", "'type'"),
    "json-args": (
        '{"type": "Chain", "children": [{"type": "Dense", "args": {"out_features": 10, "out_features": 20}}]}',
        "json",
        "$.children[0].args.out_features",
        "'out_features'",
    ),
    "json-deep": ('{"a": [[{"b": {"c": 1, "c": 2}}]]}', "json", "$.a[0][0].b.c", "'c'"),
    "yaml-block": (
        "type: Chain\nchildren:\n  - type: Dense\n    args:\n      out_features: 10\n      out_features: 20\n",
        "yaml",
        "$.children[0].args.out_features",
        "'out_features' is given twice (lines 5 and 6)",
    ),
    "yaml-flow-quoted": ("a: [{b: {c: 1, 'c': 2}}]\n", "yaml", "$.a[0].b.c", "'c'"),
    "yaml-int-keys": ("a: {1: x, 0x1: y}\n", "yaml", "$.a[1]", "the key 1 is given twice"),
    "yaml-top": ("type: Dense\nargs: {}\ntype: Norm\n", "yaml", "$.type", "lines 1 and 3"),
    "yaml-in-an-anchor": ("a: &a {x: 1, x: 2}\nb: [*a, *a]\n", "yaml", "$.a.x", "'x'"),
    "yaml-beside-a-merge": ("a: &a {x: 1}\nb: {<<: *a, x: 2, x: 3}\n", "yaml", "$.b.x", "lines 2 and 2"),
    "yaml-merge-key-twice": (
        "a: &a {x: 1}\nb: &b {y: 1}\nc:\n  <<: *a\n  <<: *b\n",
        "yaml",
        "$.c.<<",
        "'<<' is given twice (lines 4 and 5); merge several mappings in one: <<: [*a, *b]",
    ),
}


@pytest.mark.parametrize("pure", [False, True], ids=["c-loader", "pure-loader"])
@pytest.mark.parametrize(("text", "kind", "place", "problem"), DUPLICATES.values(), ids=DUPLICATES)
def test_a_key_given_twice_is_refused_naming_the_key_and_its_place(
    monkeypatch: pytest.MonkeyPatch, text: str, kind: str, place: str, problem: str, pure: bool
) -> None:
    from torchx.core import _specs as specs

    if pure:
        monkeypatch.setattr(specs, "_yaml_loader", specs._pure_yaml_loader)
    with pytest.raises(SpecError) as caught:
        specs.parse_spec(text, kind, where="m.spec")
    assert caught.value.where == f"m.spec, {place}"
    assert problem in caught.value.problem and "given twice" in caught.value.problem


@pytest.mark.parametrize("pure", [False, True], ids=["c-loader", "pure-loader"])
def test_yaml_merges_read_as_yaml_says_own_keys_first_then_earlier_merges(
    monkeypatch: pytest.MonkeyPatch, pure: bool
) -> None:
    from torchx.core import _specs as specs

    if pure:
        monkeypatch.setattr(specs, "_yaml_loader", specs._pure_yaml_loader)
    text = (
        "a: &a {x: 1, y: 1}\n"
        "b: &b {<<: *a, x: 2}\n"  # its own x over the one it merges
        "c: {<<: *b, z: 3}\n"  # b's own x, not the a's x that b overrode (PyYAML gives 1)
        "d: {<<: [*a, *b]}\n"  # the earlier mapping in the list first
        "e: {<<: [*b, *a], y: 5}\n"
    )
    assert specs.parse_spec(text) == {
        "a": {"x": 1, "y": 1},
        "b": {"x": 2, "y": 1},
        "c": {"x": 2, "y": 1, "z": 3},
        "d": {"x": 1, "y": 1},
        "e": {"x": 2, "y": 5},
    }


def test_validate_refuses_a_spec_file_with_a_key_given_twice(
    toy_layers: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import torchx.cli._plugin
    from torchx.cli import main
    from torchx.core import current_plugins

    current_plugins().register(torchx.cli._plugin, "torchx-core")
    spec = tmp_path / "m.json"
    spec.write_text('{"type": "Dense", "args": {"out_features": 10, "out_features": 20}}', encoding="utf-8")
    assert main(["validate", str(spec)]) == 2
    assert capsys.readouterr().err.startswith(
        f"torchx validate: error: {spec}, $.args.out_features: the key 'out_features' is given twice"
    )
    with pytest.raises(SpecError, match=r"\$\.args\.out_features: the key 'out_features' is given twice"):
        load_spec(spec)


class Clip(LeafLayer):
    """Hardtanh whose bounds may be infinite, declared as a third party would."""

    native_class = torch.nn.Hardtanh

    def __init__(self, min_val: ExtendedFloat = -1.0, max_val: ExtendedFloat = 1.0) -> None:
        super().__init__(min_val=min_val, max_val=max_val)


@pytest.mark.parametrize("suffix", [".json", ".yaml"], ids=["json", "yaml"])
def test_non_finite_layer_arguments_read_back_exactly(
    registry: LayerRegistry, suffix: str, tmp_path: Path
) -> None:
    registry.register(Clip)
    layer = Clip(min_val=-math.inf, max_val=math.inf)
    spec = to_spec(layer, registry=registry)
    assert spec["args"] == {"min_val": {"float": "-inf"}, "max_val": {"float": "inf"}}
    save_spec(layer, tmp_path / f"clip{suffix}", registry=registry)
    loaded = load_spec(tmp_path / f"clip{suffix}", registry=registry)
    assert to_spec(loaded, registry=registry) == spec
    arguments = loaded.arguments  # type: ignore[union-attr]
    assert (arguments["min_val"], arguments["max_val"]) == (-math.inf, math.inf)
    x = torch.tensor([-1e30, 0.5, 1e30])
    assert torch.equal(loaded(x), x)


def test_yaml_infinities_and_nan_read_as_floats_in_both_loaders(
    registry: LayerRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.core import _specs as specs

    registry.register(Clip)
    for loader in (specs._yaml_loader, specs._pure_yaml_loader):
        monkeypatch.setattr(specs, "_yaml_loader", loader)
        values = specs.parse_spec("[.inf, .Inf, .INF, +.inf, -.inf, -.Inf, .nan, .NaN, .NAN]")
        assert repr(values) == repr([math.inf] * 4 + [-math.inf] * 2 + [math.nan] * 3)
        spec = specs.parse_spec("type: Clip\nargs: {min_val: -.inf, max_val: +.Inf}\n")
        arguments = from_spec(spec, registry=registry).arguments  # type: ignore[union-attr]
        assert (arguments["min_val"], arguments["max_val"]) == (-math.inf, math.inf)


NON_NEGATIVE_OR_NAN = Annotated[float, Interval(0.0), NonFinite(nan=True)]


@pytest.mark.parametrize(
    ("value", "hint", "expected"),
    [
        (math.nan, ExtendedFloat, "a number, inf or -inf"),
        (True, AnyFloat, "a number, inf, -inf or nan"),
        (-math.inf, NON_NEGATIVE_OR_NAN, "a non-negative number"),
        (math.nan, NON_NEGATIVE_OR_NAN, "a non-negative number"),  # nan lies in no range
    ],
    ids=["nan-bound", "bool", "range-below", "nan-in-no-range"],
)
def test_non_finite_types_refuse_what_they_do_not_name(value: Any, hint: Any, expected: str) -> None:
    with pytest.raises(ArgumentMismatch) as info:
        coerce(value, hint)
    assert info.value.expected == expected


def test_non_finite_types_take_what_they_name() -> None:
    assert coerce(-math.inf, ExtendedFloat) == -math.inf
    assert math.isnan(coerce(math.nan, AnyFloat))
    assert coerce(math.inf, NON_NEGATIVE_OR_NAN) == math.inf
    with pytest.raises(ArgumentError, match=r"^Clip: min_val must be a number, inf or -inf, got nan$"):
        Clip(min_val=math.nan)


def test_a_non_finite_number_is_refused_where_a_layer_asks_for_a_finite_one(registry: LayerRegistry) -> None:
    spec = {"type": "Norm", "args": {"momentum": {"float": "nan"}}}
    with pytest.raises(SpecError, match=r"^\$\.args\.momentum: expected a finite number, got nan$"):
        from_spec(spec, registry=registry)


@pytest.mark.parametrize(
    ("spec", "where", "key"),
    [
        ({"type": "Dense", "args": {"out_features": {"$int": [2, 8]}}}, r"\$\.args\.out_features", "$int"),
        (
            {"type": "Chain", "children": [{"type": "Norm"}, {"$choice": [{"type": "Norm"}]}]},
            r"\$\.children\[1\]",
            "$choice",
        ),
        (
            {"type": "Chain", "children": [{"$repeat": {"times": 2, "layers": [{"type": "Norm"}]}}]},
            r"\$\.children\[0\]",
            "$repeat",
        ),
    ],
    ids=["int-argument", "choice-of-layers", "repeat"],
)
def test_a_search_marker_in_a_plain_spec_says_to_read_it_as_a_space(
    registry: LayerRegistry, spec: dict[str, Any], where: str, key: str
) -> None:
    message = rf"^{where}: '\{key}' is a search-space marker, .*read the file with torchx\.tune\.load_space"
    with pytest.raises(SpecError, match=message):
        from_spec(spec, registry=registry)


def test_a_search_marker_in_a_spec_file_is_refused_by_load_spec(
    registry: LayerRegistry, tmp_path: Path
) -> None:
    path = tmp_path / "space.yaml"
    path.write_text("type: Dense\nargs: {out_features: {$int: [2, 8], name: width}}\n")
    with pytest.raises(SpecError, match=r"^\$\.args\.out_features: '\$int' is a search-space marker"):
        load_spec(path, registry=registry)


def test_read_spec_file_gives_the_data_with_markers_within_the_bounds_of_a_spec(tmp_path: Path) -> None:
    from torchx.plugin import MAX_SPEC_VALUES, read_spec_file

    path = tmp_path / "space.yaml"
    path.write_text("type: Dense\nargs: {out_features: {$int: [2, 8]}}\n")
    assert read_spec_file(path) == {"type": "Dense", "args": {"out_features": {"$int": [2, 8]}}}
    (tmp_path / "space.json").write_text('{"type": "Dense", "args": {"out_features": {"$int": [2, 8]}}}')
    assert read_spec_file(str(tmp_path / "space.json")) == read_spec_file(path)
    lines = ["type: Dense", "notes:", "  - &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"  - &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 12)]
    (tmp_path / "bomb.yaml").write_text("\n".join(lines))
    with pytest.raises(
        SpecError, match=rf"^\$\.notes\[\d+\].*: the spec expands to more than {MAX_SPEC_VALUES:,}"
    ):
        read_spec_file(tmp_path / "bomb.yaml")
    with pytest.raises(SpecError, match=r"spec files end in \.json, \.yaml or \.yml"):
        read_spec_file(tmp_path / "space.txt")
