"""Specs: round trips, strict validation, and data-only loading."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from toy_layers import Chain, Dense, Norm

from torchx.core import FORMAT_VERSION, LayerRegistry, SpecError, from_spec, load_spec, save_spec, to_spec


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
        (
            {"type": "Dense", "args": {"out_features": "8"}},
            r"\$\.args\.out_features",
            "expected a positive int",
        ),
        (
            {"type": "Dense", "args": {"out_features": 8.0}},
            r"\$\.args\.out_features",
            "expected a positive int",
        ),
        ({"type": "Dense", "args": {"out_features": 8, "bias": 1}}, r"\$\.args\.bias", "expected a bool"),
        ({"type": "Dense", "args": {}}, r"\$\.args", "missing required argument 'out_features'"),
        (
            {"type": "Dense", "args": {"out_features": 2, "colour": 1}},
            r"\$\.args\.colour",
            "unknown argument; Dense takes out_features, bias",
        ),
        ({"type": "Dense", "args": {"out_features": 2}, "extra": 1}, r"\$\.extra", "unknown key"),
        ({"type": "Dense", "args": [2]}, r"\$\.args", "expected an object of arguments"),
        (
            {"type": "Dense", "args": {"out_features": 0}},
            r"\$\.args\.out_features",
            "expected a positive int",
        ),
        ({"args": {}}, r"\$\.type", "expected a layer type name"),
        (
            {"type": "Chain", "children": [{"type": "Dense", "args": {"out_features": -1}}]},
            r"\$\.children\[0\]\.args\.out_features",
            "positive",
        ),
        ({"type": "Dense", "format_version": FORMAT_VERSION + 1}, r"\$\.format_version", "newer than"),
        ({"type": "Dense", "format_version": "1"}, r"\$\.format_version", "positive integer"),
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
