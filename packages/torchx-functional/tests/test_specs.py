"""Functional specs: round trips, refusals that name the node, malformed graphs."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from nested_graphs import GraphWork, in_sequential, nested_twice

import torchx
import torchx.layers as L
from torchx.core import PluginManager, SpecError
from torchx.functional import Functional, Placeholder


def wide(text: str) -> str:
    """``text`` in fullwidth letters, which Python reads (NFKC) as ``text``."""
    return "".join(chr(ord(char) + 0xFEE0) for char in text)


def model() -> Functional:
    image, meta = Placeholder((None, 3, 8, 8), name="image"), Placeholder((None, 5), name="meta")
    stem = L.Conv2d(4, 3)(image)
    left, right = torch.split(stem, 2, dim=1)
    mixed = (left * right).flatten()[:, :16]
    shared = L.Linear(6)
    joined = torch.cat([shared(mixed[:, :6]), shared(L.Linear(6)(meta.view(meta.shape[0], -1)))], dim=1)
    logits = L.Linear(3)(torch.nn.functional.relu(joined))
    return Functional(inputs={"image": image, "meta": meta}, outputs={"logits": logits, "joined": joined})


def test_round_trip_gives_an_equivalent_model(fresh_plugins: PluginManager) -> None:
    original = model().eval()
    spec = original.to_spec()
    assert json.loads(json.dumps(spec)) == spec
    assert spec["type"] == "Functional" and spec["format_version"] == 1
    rebuilt = L.Layer.from_spec(spec)
    assert isinstance(rebuilt, Functional)
    assert rebuilt.to_spec() == spec
    rebuilt.load_state_dict(original.state_dict())
    rebuilt.eval()
    inputs = {"image": torch.randn(4, 3, 8, 8), "meta": torch.randn(4, 5)}
    for key, value in original(inputs).items():
        assert torch.allclose(rebuilt(inputs)[key], value)


def test_a_graph_using_lambda_or_an_unregistered_op_names_the_node(fresh_plugins: PluginManager) -> None:
    x = Placeholder((2, 3))
    with_lambda = Functional(inputs=x, outputs=L.Lambda(torch.sin)(x))
    with pytest.raises(SpecError, match=r"\$\.modules\._lambda: Lambda wraps a Python callable"):
        with_lambda.to_spec()
    odd = Functional(inputs=x, outputs=scaled(x))
    with pytest.raises(
        SpecError, match=r"\$\.nodes\[0\]: node 'scaled' calls scaled, which specs cannot name"
    ):
        odd.to_spec()


def scaled(x: torch.Tensor) -> torch.Tensor:
    """A function of the user's own that a graph records (it dispatches on placeholders)."""
    if torch.overrides.has_torch_function_unary(x):
        return torch.overrides.handle_torch_function(scaled, (x,), x)  # type: ignore[no-any-return]
    return x * 2


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (
            lambda s: s["nodes"][1]["args"].__setitem__(0, {"node": "nowhere"}),
            r"\$\.nodes\[1\]\.args\[0\]: refers to node 'nowhere'.*dangling",
        ),
        (
            lambda s: s["nodes"][2].__setitem__("module", "ghost"),
            r"\$\.nodes\[2\]\.module: unknown module 'ghost'",
        ),
        (
            lambda s: s["nodes"][0].__setitem__("op", "os.system"),
            r"\$\.nodes\[0\]\.op: unknown operation 'os.system'",
        ),
        (lambda s: s["nodes"][3].__setitem__("method", "__class__"), r"unknown tensor method '__class__'"),
        (lambda s: s.__setitem__("outputs", {"node": "missing"}), r"\$\.outputs: refers to node 'missing'"),
        (lambda s: s.__setitem__("extra", 1), r"\$\.extra: unknown key"),
        (lambda s: s["inputs"].__setitem__("shape", [-1, 3]), r"\$\.inputs: .*non-negative int"),
    ],
)
def test_malformed_graph_specs_are_spec_errors_with_paths(
    fresh_plugins: PluginManager, mutate: object, match: str
) -> None:
    x = Placeholder((None, 3), name="x")
    spec = Functional(inputs=x, outputs=L.Linear(2)(torch.relu(x) + x).flatten() * 2).to_spec()
    mutate(spec)  # type: ignore[operator]
    with pytest.raises(SpecError, match=match):
        L.Layer.from_spec(spec)


def test_the_facade_offers_placeholder_and_functional(fresh_plugins: PluginManager) -> None:
    assert L.Placeholder is Placeholder and L.Functional is Functional and L.Input is Placeholder


def test_a_ten_thousand_node_chain_defines_builds_runs_and_serialises(fresh_plugins: PluginManager) -> None:
    limit = sys.getrecursionlimit()
    x = Placeholder((None, 4))
    y = x
    for _ in range(10_000):
        y = y + 1.0
    model = Functional(inputs=x, outputs=L.Linear(2)(y))
    assert sys.getrecursionlimit() == limit
    t = torch.zeros(3, 4)
    assert torch.allclose(model(t), model.linear(t + 10_000.0))
    spec = model.to_spec()
    assert len(spec["nodes"]) == 10_001
    again = L.Layer.from_spec(spec)
    again.load_state_dict(model.state_dict())
    assert torch.allclose(again(t), model(t))


def test_json_file_round_trip(fresh_plugins: PluginManager, tmp_path: object) -> None:
    original = model()
    path = f"{tmp_path}/graph.json"
    torchx.save_spec(original, path)
    assert torchx.load_spec(path).to_spec() == original.to_spec()


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda s: s["nodes"][0].__setitem__("op", ["torch.relu"]), id="op-list"),
        pytest.param(lambda s: s["nodes"][1]["args"].__setitem__(0, {"node": {"x": 1}}), id="node-ref-dict"),
        pytest.param(lambda s: s["nodes"][2].__setitem__("kwargs", {"bogus": 1}), id="unknown-kwarg"),
        pytest.param(
            lambda s: s["nodes"][0].__setitem__("args", [{"node": "x"}, {"dtype": ["float32"]}]),
            id="dtype-list",
        ),
        pytest.param(lambda s: s.__setitem__("outputs", 5), id="outputs-int"),
        pytest.param(lambda s: s.__setitem__("outputs", {"list": []}), id="outputs-empty-list"),
        pytest.param(
            lambda s: s["nodes"].append({"name": "x", "op": "torch.relu", "args": [{"node": "x"}]}),
            id="node-named-like-input",
        ),
        pytest.param(lambda s: s["nodes"][0].__setitem__("module", "linear"), id="op-with-module"),
        pytest.param(lambda s: s["nodes"][3]["args"].append("x"), id="extra-arg"),
        pytest.param(lambda s: s.__setitem__("nodes", {"a": 1}), id="nodes-dict"),
        pytest.param(lambda s: s["inputs"].__setitem__("dtype", ["float32"]), id="input-dtype-list"),
    ],
)
def test_malformed_graph_specs_never_raise_anything_but_spec_errors(
    fresh_plugins: PluginManager, mutate: object
) -> None:
    x = Placeholder((None, 3), name="x")
    spec = Functional(inputs=x, outputs=L.Linear(2)(torch.relu(x) + x).flatten() * 2).to_spec()
    mutate(spec)  # type: ignore[operator]
    with pytest.raises(SpecError):
        L.Layer.from_spec(spec)


def test_inputs_with_any_names_round_trip_with_their_names(fresh_plugins: PluginManager) -> None:
    a, b, c = Placeholder((None, 3), name=wide("relu")), Placeholder((None, 3)), Placeholder((None, 3))
    original = Functional(
        inputs={wide("relu"): a, "torch": b, "a b": c},
        outputs={"out put": F.relu(b) + a, "self": L.Linear(2)(c)},
    )
    spec = original.to_spec()
    assert json.loads(json.dumps(spec)) == spec
    assert list(spec["inputs"]["dict"]) == [wide("relu"), "torch", "a b"]
    rebuilt = L.Layer.from_spec(spec)
    assert rebuilt.to_spec() == spec
    rebuilt.load_state_dict(original.state_dict())
    data = {wide("relu"): torch.full((2, 3), 5.0), "torch": torch.zeros(2, 3), "a b": torch.ones(2, 3)}
    for key, value in original(data).items():
        assert torch.equal(rebuilt(data)[key], value)
    assert torch.equal(rebuilt(data)["out put"], torch.full((2, 3), 5.0))


def _relu_spec() -> dict[str, object]:
    x = Placeholder((None, 3), name="x")
    return Functional(inputs=x, outputs=torch.relu(x) + x).to_spec()


def test_spec_names_equal_after_nfkc_are_refused_naming_both(fresh_plugins: PluginManager) -> None:
    spec = _relu_spec()
    spec["inputs"]["input"] = wide("relu")  # type: ignore[index]
    spec["nodes"][0]["name"] = "relu"  # type: ignore[index]
    spec["nodes"][0]["args"] = [{"node": wide("relu")}]  # type: ignore[index]
    spec["nodes"][1]["args"] = [{"node": "relu"}, {"node": wide("relu")}]  # type: ignore[index]
    with pytest.raises(
        SpecError, match=rf"^\$\.nodes\[0\]\.name: '{wide('relu')}' and 'relu' are the same Python identifier"
    ):
        L.Layer.from_spec(spec)
    two = {
        "dict": {
            "x": {"input": "x", "shape": [None, 3]},
            wide("x"): {"input": wide("x"), "shape": [None, 3]},
        }
    }
    spec = _relu_spec()
    spec["inputs"] = two
    spec["nodes"][1]["args"] = [{"node": "x"}, {"node": wide("x")}]  # type: ignore[index]
    with pytest.raises(
        SpecError, match=rf"^\$\.inputs\.{wide('x')}: 'x' and '{wide('x')}' are the same Python identifier"
    ):
        L.Layer.from_spec(spec)


def test_spec_module_names_equal_after_nfkc_are_refused(fresh_plugins: PluginManager) -> None:
    x = Placeholder((None, 3), name="x")
    spec = Functional(inputs=x, outputs=L.Linear(2)(x) + L.Linear(2)(x)).to_spec()
    modules = spec["modules"]
    spec["modules"] = {"linear": modules["linear"], wide("linear"): modules["linear_1"]}
    spec["nodes"][1]["module"] = wide("linear")
    with pytest.raises(
        SpecError, match=rf"^\$\.modules\.{wide('linear')}: 'linear' and '{wide('linear')}' are the same"
    ):
        L.Layer.from_spec(spec)


def test_a_spec_naming_new_empty_runs_zero_filled_and_is_written_as_new_zeros(
    fresh_plugins: PluginManager,
) -> None:
    spec = {
        "type": "Functional",
        "format_version": 1,
        "inputs": {"input": "x", "shape": [None, 4], "dtype": "float32"},
        "modules": {},
        "nodes": [
            {
                "name": "junk",
                "method": "new_empty",
                "args": [{"node": "x"}, {"tuple": [{"batch_of": "x"}, 4096]}],
            }
        ],
        "outputs": {"node": "junk"},
    }
    model = L.Layer.from_spec(spec)
    for _ in range(3):
        freed = torch.full((8, 4096), 3.0)
        del freed
        assert not model(torch.ones(8, 4)).any()
    assert model.to_spec()["nodes"][0]["method"] == "new_zeros"


def test_non_string_dict_keys_are_refused_when_written(fresh_plugins: PluginManager) -> None:
    x = Placeholder((None, 3), name="x")
    model = Functional(inputs=x, outputs={0: x + 1})
    assert torch.equal(model(torch.zeros(2, 3))[0], torch.ones(2, 3))
    with pytest.raises(SpecError, match=r"^\$\.outputs: dict keys in a spec are strings, got 0"):
        model.to_spec()


def test_the_layers_of_a_functional_spec_are_checked_against_memory_as_one_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from torchx.core import AllocationError
    from torchx.core import _memory as memory

    x = L.Placeholder((None, 256))
    y = x
    for _ in range(80):  # 80 layers of 257 KiB: 20 MiB
        y = L.Linear(256)(y)
    spec = L.Functional(inputs=x, outputs=y).to_spec()
    monkeypatch.setattr(memory, "available_memory", lambda device: 16 << 20)  # a 16 MiB device
    monkeypatch.setattr(memory, "UNCHECKED_BYTES", 1 << 20)
    refused = (
        r"\$\.nodes\[6\d\]: AllocationError: .* on top of the 1[45]\.\d MiB this build allocated before it"
    )
    with pytest.raises(SpecError, match=refused) as caught:
        L.Layer.from_spec(spec)
    assert isinstance(caught.value.__cause__, AllocationError)
    spec["modules"] = dict(list(spec["modules"].items())[:50])  # 50 of them: 12.6 MiB, which fits
    spec["nodes"] = spec["nodes"][:50]
    spec["outputs"] = {"node": spec["nodes"][-1]["name"]}
    assert L.Layer.from_spec(spec)(torch.zeros(2, 256)).shape == (2, 256)


def test_a_graph_nested_twice_per_level_reads_in_time_linear_in_its_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twelve graphs, each calling the previous one twice: a spec of 4 KB (as
    compact JSON) that took 25 s to read, each call on placeholders running the callee's whole forward
    (2**12 Linear runs). Now each graph's steps run once per probe of the batch."""
    torch.manual_seed(0)  # weights whose 4,096 applications stay finite (nan != nan)
    runs = {}
    for depth in (6, 12):
        path = tmp_path / f"nested_{depth}.json"
        torchx.save_spec(nested_twice(depth), path)
        work = GraphWork(monkeypatch)
        model = torchx.load_spec(path)
        runs[depth] = (work.linear_runs, work.graph_runs)
    linear_runs = runs[6][0]
    assert linear_runs <= 3 and runs == {6: (linear_runs, 2 * 6), 12: (linear_runs, 2 * 12)}
    original = nested_twice(12)
    assert isinstance(model, Functional) and list(model.state_dict()) == list(original.state_dict())
    model.load_state_dict(original.state_dict())
    t = torch.randn(3, 4)
    for twin in (model, copy.deepcopy(model)):
        assert torch.equal(twin(t), original(t))


@pytest.mark.parametrize("building", [False, True], ids=["built", "building"])
def test_a_graph_nested_twice_per_level_in_a_sequential_reads_in_time_linear_in_its_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, building: bool
) -> None:
    """Graphs each calling an ``L.Sequential`` twice that holds the previous one
    (and, building, a new Linear): each call of the Sequential on placeholders
    ran the graphs in it whole. The work grows by the same amount at each level."""
    runs = {}
    for depth in (4, 8, 12):
        path = tmp_path / f"nested_{depth}.json"
        torchx.save_spec(nested_twice(depth, wrap=in_sequential(building)), path)
        work = GraphWork(monkeypatch)
        model = torchx.load_spec(path)
        runs[depth] = (work.linear_runs, work.graph_runs)
    first, per_level = runs[4][0], (runs[12][0] - runs[4][0]) // 8
    assert per_level <= (7 if building else 0)  # the runs of each level's own new Linear
    assert runs == {depth: (first + per_level * (depth - 4), 2 * depth) for depth in (4, 8, 12)}
    original = nested_twice(12, wrap=in_sequential(building))
    model.load_state_dict(original.state_dict())
    t = torch.randn(3, 4)
    assert torch.equal(model(t), original(t))


def _nested_yaml(depth: int, aliased: bool) -> str:
    """A Functional spec ``depth`` graphs deep, each calling the one inside twice:
    one module called twice, or (``aliased``) two modules, a YAML alias of one graph."""
    head = "type: Functional, inputs: {input: x, shape: [null, 4]}"
    text = f"{{{head}, modules: {{f: {{type: Linear, args: {{out_features: 4}}}}}}, "
    text += "nodes: [{name: y, module: f, args: [{node: x}]}], outputs: {node: y}}"
    for level in range(depth):
        modules = f"{{a: &g{level} {text}, b: *g{level}}}" if aliased else f"{{a: {text}}}"
        nodes = (
            f"[{{name: p, module: a, args: [{{node: x}}]}}, {{name: q, module: {'b' if aliased else 'a'}, "
        )
        text = f"{{{head}, modules: {modules}, nodes: {nodes}args: [{{node: p}}]}}], outputs: {{node: q}}}}"
    return text


def test_the_layer_limit_counts_the_layers_a_spec_builds_not_the_calls_of_one(
    fresh_plugins: PluginManager,
) -> None:
    """Two modules that are one YAML alias are two layers (2**18 Linears
    here: refused before anything is built); one module called twice is one."""
    from torchx.core._specs import MAX_LAYERS, MAX_SPEC_VALUES, parse_spec

    with pytest.raises(SpecError, match=rf"more than ({MAX_LAYERS} layers|{MAX_SPEC_VALUES:,} values)"):
        L.Layer.from_spec(parse_spec(_nested_yaml(18, aliased=True)))
    model = L.Layer.from_spec(parse_spec(_nested_yaml(18, aliased=False)))
    assert len(list(model.modules())) == 20 and model(torch.zeros(2, 4)).shape == (2, 4)
    small = L.Layer.from_spec(parse_spec(_nested_yaml(3, aliased=True)))
    assert sum(isinstance(module, torch.nn.Linear) for module in small.modules()) == 2**3


def test_names_like_search_markers_stay_names(fresh_plugins: PluginManager) -> None:
    """A graph's inputs and outputs may be named anything, "$int" included: only a
    marker's shape ({"$int": [low, high]}) is a search-space marker to a plain spec."""
    x = Placeholder((None, 3), name="$choice")
    model = Functional(inputs={"$choice": x}, outputs={"$": L.Linear(2)(x), "$int": x * 2})
    rebuilt = L.Layer.from_spec(json.loads(json.dumps(model.to_spec())))
    rebuilt.load_state_dict(model.state_dict())
    data = torch.randn(4, 3)
    for key in ("$", "$int"):
        assert torch.equal(rebuilt(data)[key], model(data)[key])
