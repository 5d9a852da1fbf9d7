"""A spec, and a graph defined in Python, only compute: every operation is on
the allow-list, and no call writes into a tensor it was given, reads memory
beyond it or formats a string."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.torch_version import TorchVersion

import torchx.layers as L
from torchx.core import PluginManager, SpecError, TorchXError
from torchx.functional import Functional, Placeholder
from torchx.functional._allow_list import FUNCTIONS, METHODS
from torchx.functional._ops import FACTORIES, function_named, is_spec_method, name_of_function

NAMESPACES = {
    "torch": torch,
    "F": F,
    "torch.linalg": torch.linalg,
    "torch.special": torch.special,
    "torch.fft": torch.fft,
}

REMOVED_BY_TORCH = {"torch.cholesky": "2.14", "torch.qr": "2.14"}
"""Listed names that torch removed at a release (its name left as a stub that
raises, which no graph records): from that release on, a spec naming one is refused."""


def graph_spec(nodes: list[dict[str, Any]], modules: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "format_version": 1,
        "type": "Functional",
        "inputs": {"input": "x", "shape": [None, 4], "dtype": "float32"},
        "modules": modules or {},
        "nodes": nodes,
        "outputs": {"node": nodes[-1]["name"]},
    }


def test_every_public_name_of_torch_s_namespaces_is_listed_or_refused_by_a_spec(
    fresh_plugins: PluginManager,
) -> None:
    listed = refused = 0
    for prefix, namespace in NAMESPACES.items():
        for name in (name for name in dir(namespace) if not name.startswith("_")):
            removed = REMOVED_BY_TORCH.get(f"{prefix}.{name}")
            if name in FUNCTIONS[prefix] and (removed is None or TorchVersion(torch.__version__) < removed):
                assert callable(function_named(f"{prefix}.{name}")), f"{prefix}.{name}"
                listed += 1
                continue
            assert function_named(f"{prefix}.{name}") is None, f"{prefix}.{name}"
            with pytest.raises(SpecError, match=r"\.op: unknown operation"):
                L.Layer.from_spec(
                    graph_spec([{"name": "y", "op": f"{prefix}.{name}", "args": [{"node": "x"}]}])
                )
            refused += 1
    for name in (name for name in dir(torch.Tensor) if not name.startswith("_")):
        if name in METHODS:
            assert is_spec_method(name), name
            listed += 1
            continue
        assert not is_spec_method(name), name
        with pytest.raises(SpecError, match=r"\.method: unknown tensor method"):
            L.Layer.from_spec(graph_spec([{"name": "y", "method": name, "args": [{"node": "x"}]}]))
        refused += 1
    assert listed > 1000 and refused > 500  # torch 2.13: 1,059 listed, 860 refused


def test_the_listed_functions_a_graph_records_are_those_torch_lists_as_dispatching() -> None:
    """What ``function_named`` reads off torch's list of functions that ignore
    ``__torch_function__`` and ``torch.__all__`` is what torch's (slower to
    make) list of those that dispatch it says, with the factories of sizes and
    every functional op written in Python (F.hardsigmoid, which that list misses)."""
    dispatching = {
        function
        for functions in torch.overrides.get_overridable_functions().values()
        for function in functions
    }
    differ = []
    for prefix, namespace in NAMESPACES.items():
        for name in sorted(FUNCTIONS[prefix]):
            function = getattr(namespace, name, None)
            expected = (
                function in dispatching
                or function in FACTORIES
                or getattr(function, "__module__", None) == F.__name__
            )
            if callable(function) and (function_named(f"{prefix}.{name}") is function) != expected:
                differ.append(f"{prefix}.{name}")
    assert not differ


def test_a_function_is_written_under_the_first_name_that_reaches_it() -> None:
    """Every function a spec may call is named by its first namespace, in the
    order specs look names up, under the first name there that reaches it
    (``torch.linalg.norm``, whose ``__name__`` is ``linalg_norm``), and only
    those are named."""
    expected: dict[Any, str] = {}
    for prefix in [*NAMESPACES, "torch.Tensor"]:
        for name in sorted(FUNCTIONS[prefix]):
            function = function_named(f"{prefix}.{name}")
            if function is not None:
                expected.setdefault(function, f"{prefix}.{name}")
    assert len(expected) > 600  # torch 2.13: 697
    assert {function: name_of_function(function) for function in expected} == expected
    assert name_of_function(torch.linalg.norm) == "torch.linalg.norm"
    assert name_of_function(F.relu) == "F.relu"
    assert name_of_function(torch.Tensor.split) == "torch.Tensor.split"
    assert name_of_function(torch.Tensor.add_) is None
    assert name_of_function(lambda x: x) is None


@pytest.mark.parametrize(
    "name",
    [
        "as_strided",
        "as_strided_scatter",
        "slice_inverse",
        "storage_offset",
        "stride",
        "const_data_ptr",
        "add_",
    ],
)
def test_methods_that_reach_memory_beyond_their_tensor_or_write_it_are_not_listed(name: str) -> None:
    assert name not in METHODS and not is_spec_method(name)


def test_a_spec_cannot_read_outside_the_view_it_is_given_with_as_strided(
    fresh_plugins: PluginManager,
) -> None:
    spec = graph_spec(
        [{"name": "y", "method": "as_strided", "args": [{"node": "x"}, {"tuple": [40]}, {"tuple": [1]}, 0]}]
    )
    with pytest.raises(SpecError, match=r"^\$\.nodes\[0\]\.method: unknown tensor method 'as_strided'"):
        L.Layer.from_spec(spec)
    x = Placeholder((None, 4))
    with pytest.raises(TorchXError, match=r"Tensor\.as_strided is not on the allow-list"):
        x.as_strided((40,), (1,))


def test_out_is_refused_in_a_spec_and_in_python(fresh_plugins: PluginManager) -> None:
    spec = graph_spec(
        [{"name": "y", "op": "torch.add", "args": [{"node": "x"}, 1000.0], "kwargs": {"out": {"node": "x"}}}]
    )
    with pytest.raises(SpecError, match=r"^\$\.nodes\[0\]: .*add was given out=, which writes the result"):
        L.Layer.from_spec(spec)
    x = Placeholder((None, 4))
    for call in (lambda: torch.add(x, 1, out=x), lambda: torch.norm(x, 2, None, False, x)):
        with pytest.raises(TorchXError, match="was given out="):
            call()


def test_a_spec_cannot_write_into_the_model_s_weight_through_out(fresh_plugins: PluginManager) -> None:
    x = Placeholder((None, 4), name="x")
    dense = L.Linear(3)
    spec = Functional(inputs=x, outputs=F.linear(dense(x), dense.weight.T)).to_spec()
    assert spec["nodes"][1] == {"name": "weight", "attribute": "linear.weight"}
    spec["nodes"][2:] = [
        {
            "name": "y",
            "op": "torch.mul",
            "args": [{"node": "weight"}, 0],
            "kwargs": {"out": {"node": "weight"}},
        }
    ]
    spec["outputs"] = {"node": "y"}
    with pytest.raises(SpecError, match=r"^\$\.nodes\[2\]: .*mul was given out="):
        L.Layer.from_spec(spec)


def test_a_format_string_in_a_spec_never_reads_the_environment(
    fresh_plugins: PluginManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHX_TEST_TOKEN", "s3cr3t-value")
    template = "{0.__class__.__init__.__globals__[torch].os.environ[TORCHX_TEST_TOKEN]}"
    spec = graph_spec([{"name": "y", "op": "F.assert_int_or_pair", "args": [{"node": "x"}, "x", template]}])
    with pytest.raises(SpecError, match="unknown operation") as refused:
        L.Layer.from_spec(spec)
    assert "s3cr3t-value" not in str(refused.value)


def test_inplace_given_by_position_is_recorded_out_of_place() -> None:
    x = Placeholder((None, 4))
    model = Functional(inputs=x, outputs=F.relu(x, True) + F.dropout(x, 0.5, False, True))
    data = torch.randn(3, 4)
    given = data.clone()
    torch.testing.assert_close(model(data), given.relu() + given)
    torch.testing.assert_close(data, given, rtol=0, atol=0)  # the caller's tensor is as it was


def test_operators_that_write_into_a_real_tensor_are_refused() -> None:
    x = Placeholder((None, 4))
    table = torch.zeros(4)
    with pytest.raises(TorchXError, match=r"Tensor.add_ works in place.*\(add\)"):
        table += x
    assert isinstance(table + x, Placeholder)  # t + x still records


@pytest.mark.parametrize(
    "call",
    [
        lambda x, v: F.batch_norm(x, v, v, training=True),
        lambda x, v: F.batch_norm(x, v, torch.ones(4), None, None, True),
        lambda x, v: F.instance_norm(x.unsqueeze(-1), v, v),
        lambda x, v: F.embedding(x.long(), v.unsqueeze(0).expand(5, 4), max_norm=1.0),
    ],
    ids=["batch-norm-keyword", "batch-norm-position", "instance-norm", "embedding-max-norm"],
)
def test_a_function_may_update_only_a_tensor_the_model_holds(call: Any) -> None:
    x = Placeholder((None, 4))
    v = x.mean(0)  # a value the graph computes
    with pytest.raises(TorchXError, match=r"updates its argument (running_mean|weight) in place"):
        call(x, v)


def test_running_statistics_held_by_the_model_are_updated_as_in_torch() -> None:
    x = Placeholder((None, 4))
    mean, var = torch.zeros(4), torch.ones(4)
    model = Functional(inputs=x, outputs=F.batch_norm(x, mean, var, training=True))
    data = torch.randn(8, 4)
    model(data)
    running_mean = next(iter(model.buffers()))
    torch.testing.assert_close(running_mean, 0.1 * data.mean(0))
    assert F.batch_norm(x, None, None, training=True) is not None  # no statistics: nothing to update
