"""Reading a graph spec costs what the file holds: a constant's and an input's sizes
are checked before they are multiplied, and a read of a layer's parameter costs
time linear in its path, whatever the number of modules and reads."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import torch
from torch import nn

import torchx.layers as L
from torchx.core import PluginManager, SpecError
from torchx.functional import Functional
from torchx.functional._spec import _ModulePaths, _values_held


def graph(nodes: list[dict[str, Any]], modules: dict[str, Any] | None = None, **input: Any) -> dict[str, Any]:
    """A Functional spec of ``nodes`` on one input (``x``, float32, ``(None, 3)`` unless given)."""
    return {
        "format_version": 1,
        "type": "Functional",
        "inputs": {"input": "x", "shape": [None, 3], "dtype": "float32", **input},
        "modules": modules or {},
        "nodes": nodes,
        "outputs": {"node": nodes[-1]["name"] if nodes else "x"},
    }


def constant(shape: list[Any], values: list[Any]) -> dict[str, Any]:
    return {"buffer": "c", "persistent": False, "dtype": "float32", "shape": shape, "values": values}


@pytest.fixture
def products(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The bit lengths of the operands of every math.prod called meanwhile (a huge one is not computed)."""
    seen: list[int] = []
    real_prod = math.prod

    def prod(values: Any, start: int = 1) -> Any:
        values = list(values)
        seen.append(sum(int(value).bit_length() for value in values))
        return 2**64 if seen[-1] > 128 else real_prod(values, start=start)

    monkeypatch.setattr(math, "prod", prod)
    return seen


# -- sizes -------------------------------------------------------------------------------------


class CountedInt(int):
    """An int that counts the multiplications it takes part in."""

    products = 0

    def __mul__(self, other: Any) -> Any:
        CountedInt.products += 1
        return int(self) * other

    __rmul__ = __mul__


def test_a_constant_s_sizes_stop_multiplying_past_the_values_a_constant_holds() -> None:
    CountedInt.products = 0
    assert _values_held([CountedInt(2**62)] * 100_000) > 1_000_000
    assert CountedInt.products == 1
    assert _values_held([CountedInt(2**62)] * 100_000 + [0]) == 0
    assert _values_held([2, 3, 4]) == 24 and _values_held([]) == 1
    assert _values_held([2, -1]) is None and _values_held([2, True]) is None and _values_held([2.0]) is None


def test_a_constant_of_thousands_of_int64_sizes_is_refused_without_their_product(
    products: list[int], fresh_plugins: PluginManager
) -> None:
    """Before: math.prod of the 4,000 sizes, a number 250,000 bits long (quadratic work)."""
    spec = graph([{"name": "c", "constant": constant([2**63 - 1] * 4000, [1.0])}])
    with pytest.raises(
        SpecError, match=r"^\$\.nodes\[0\]\.constant: a constant has a known dtype, a shape of sizes"
    ):
        L.Layer.from_spec(spec)
    assert all(bits <= 128 for bits in products), products


def test_a_constant_size_beyond_int64_is_refused_where_it_stands(
    products: list[int], fresh_plugins: PluginManager
) -> None:
    spec = graph([{"name": "c", "constant": constant([1, 10**600, *[10**600] * 100], [1.0])}])
    with pytest.raises(
        SpecError,
        match=r"^\$\.nodes\[0\]\.constant\.shape\[1\]: an integer of about 601 digits; integers in a spec",
    ):
        L.Layer.from_spec(spec)
    assert products == []


def test_an_input_of_thousands_of_int64_sizes_is_refused_without_their_product(
    products: list[int], fresh_plugins: PluginManager
) -> None:
    spec = graph([], shape=[None, *[2**63 - 1] * 4000])
    with pytest.raises(SpecError, match=r"^\$\.inputs: .*has more elements than a tensor can hold"):
        L.Layer.from_spec(spec)
    assert all(bits <= 128 for bits in products), products


def test_an_input_size_beyond_int64_is_refused_where_it_stands(fresh_plugins: PluginManager) -> None:
    with pytest.raises(
        SpecError, match=r"^\$\.inputs\.shape\[1\]: the integer 9223372036854775808; integers"
    ):
        L.Layer.from_spec(graph([], shape=[None, 2**63]))


def test_constants_still_read_back() -> None:
    x = torch.ones(2, 3)
    spec = graph(
        [
            {"name": "c", "constant": constant([2, 0, 3], [])},
            {"name": "d", "constant": constant([1, 3], [1.0, 2.0, 3.0])},
            {"name": "y", "op": "operator.add", "args": [{"node": "x"}, {"node": "d"}]},
        ]
    )
    model = L.Layer.from_spec(spec)
    assert torch.equal(model(x), x + torch.tensor([[1.0, 2.0, 3.0]]))


# -- parameter reads -------------------------------------------------------------------------


def reads_spec(reads: int, path: str = "wte.weight", modules: int = 0) -> dict[str, Any]:
    """Ids through an embedding and a Sequential; ``reads`` reads of ``path``; ``modules`` idle layers."""
    layers: dict[str, Any] = {f"idle{index}": {"type": "ReLU"} for index in range(modules)}
    layers["wte"] = {"type": "Embedding", "args": {"num_embeddings": 5, "embedding_dim": 3}}
    layers["seq"] = {"type": "Sequential", "layers": [{"type": "Linear", "args": {"out_features": 3}}]}
    nodes: list[dict[str, Any]] = [
        {"name": "e", "module": "wte", "args": [{"node": "x"}]},
        {"name": "h", "module": "seq", "args": [{"node": "e"}]},
    ]
    nodes += [{"name": f"r{index}", "attribute": path} for index in range(reads)]
    nodes.append({"name": "y", "op": "F.linear", "args": [{"node": "h"}, {"node": "r0"}]} if reads else {})
    return graph([node for node in nodes if node], layers, shape=[None, 4], dtype="int64")


@pytest.mark.parametrize("path", ["wte.weight", "seq.0.bias"], ids=["own-parameter", "child-s-parameter"])
def test_a_read_does_not_list_the_module_s_parameters(
    path: str, monkeypatch: pytest.MonkeyPatch, fresh_plugins: PluginManager
) -> None:
    """Before: every read built a dict of all the module's parameters and buffers."""
    listed: list[str] = []
    for method in ("named_parameters", "named_buffers", "named_modules"):
        real = getattr(nn.Module, method)

        def spy(self: nn.Module, *args: Any, _real: Any = real, _name: str = method, **kwargs: Any) -> Any:
            listed.append(_name)
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(nn.Module, method, spy)
    L.Layer.from_spec(reads_spec(1, path))  # what a first read in a process sets up (layer formulas)
    counts = []
    for reads in (10, 20):
        listed.clear()
        model = L.Layer.from_spec(reads_spec(reads, path))
        counts.append(len(listed))
    assert counts[0] == counts[1], counts  # ten more reads list nothing more
    ids = torch.tensor([[0, 1, 2, 3]])
    weight = model.get_parameter({"wte.weight": "embedding.weight", "seq.0.bias": "sequential.0.bias"}[path])
    expected = torch.nn.functional.linear(model.sequential(model.embedding(ids)), weight)
    assert torch.equal(model(ids), expected)


class CountedModules(Mapping[str, Any]):
    """A mapping of modules that counts the names it hands out by iteration."""

    def __init__(self, modules: dict[str, Any]) -> None:
        self.modules = modules
        self.iterated = 0

    def __getitem__(self, key: str) -> Any:
        return self.modules[key]

    def __iter__(self) -> Iterator[str]:
        for key in self.modules:
            self.iterated += 1
            yield key

    def __len__(self) -> int:
        return len(self.modules)


def test_finding_a_read_s_module_does_not_scan_the_modules() -> None:
    """Before: each read scanned every module's name for the longest prefix of its path."""
    modules = CountedModules({f"m{index}": nn.ReLU() for index in range(1000)} | {"a": nn.Linear(2, 2)})
    paths = _ModulePaths(modules)
    assert modules.iterated == 1001  # once, to index them
    for _ in range(1000):
        assert paths.find(["a", "weight"]) == ("a", 1)
    assert paths.find(["m1", "sub", "weight"]) == ("m1", 1)
    assert paths.find(["nothing", "weight"]) is None and paths.find(["a"]) is None
    assert modules.iterated == 1001


def test_the_longest_module_name_a_path_starts_with_is_its_module() -> None:
    inner = nn.Linear(2, 2)
    paths = _ModulePaths({"block": nn.Sequential(inner), "block.0": inner, "7": nn.ReLU()})
    assert paths.find("block.0.weight".split(".")) == ("block.0", 2)
    assert paths.find("block.1.weight".split(".")) == ("block", 1)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("wte.nope", "Embedding 'wte' has no parameter or buffer 'nope'"),
        ("wte.training", "Embedding 'wte' has no parameter or buffer 'training'"),
        ("wte.__class__", "Embedding 'wte' has no parameter or buffer '__class__'"),
        ("wte.forward", "Embedding 'wte' has no parameter or buffer 'forward'"),
        ("wte.weight.data", "Embedding 'wte' has no parameter or buffer 'weight.data'"),
        ("seq.0", "Sequential 'seq' has no parameter or buffer '0'"),
        ("seq.1.bias", "Sequential 'seq' has no parameter or buffer '1.bias'"),
        ("wte", "'wte' is no parameter or buffer of the modules ['seq', 'wte']"),
        ("nope.weight", "'nope.weight' is no parameter or buffer of the modules ['seq', 'wte']"),
        ("", "'' is no parameter or buffer of the modules"),
    ],
    ids=[
        "unknown-name",
        "a-python-attribute",
        "a-dunder",
        "a-method",
        "past-a-tensor",
        "a-child-layer",
        "no-such-child",
        "a-module-itself",
        "unknown-module",
        "empty",
    ],
)
def test_a_read_of_anything_but_a_parameter_or_buffer_is_refused_as_before(
    path: str, message: str, fresh_plugins: PluginManager
) -> None:
    spec = reads_spec(0)
    spec["nodes"].insert(2, {"name": "r", "attribute": path})
    with pytest.raises(SpecError) as caught:
        L.Layer.from_spec(spec)
    assert str(caught.value).startswith(f"$.nodes[2].attribute: {message}"), str(caught.value)


def test_a_read_of_a_tied_weight_round_trips(fresh_plugins: PluginManager) -> None:
    model = L.Layer.from_spec(reads_spec(1))
    assert isinstance(model, Functional)
    again = L.Layer.from_spec(model.to_spec())
    assert [node["attribute"] for node in again.to_spec()["nodes"] if "attribute" in node] == [
        "embedding.weight"
    ]
