"""Every function and method a graph records can be named in a spec, read back
only from torch's own namespaces; and the numbers JSON has no literal for."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
import yaml

import torchx
import torchx.layers as L
from torchx.core import PluginManager, SpecError
from torchx.functional import Functional, Placeholder


def sdpa(x: Any) -> Any:
    """Self-attention with a float mask of -inf above the diagonal, and the other kwargs."""
    q = x.unsqueeze(1)  # (N, 1, 5, 8): one head
    mask = torch.triu(torch.ones_like(q[:, :, :, :5]), diagonal=1).masked_fill(q[:, :, :, :5] > 9, 0)
    bias = mask.masked_fill(mask > 0, float("-inf"))
    out = F.scaled_dot_product_attention(q, q, q, attn_mask=bias, dropout_p=0.0, scale=0.5)
    causal = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    return (out + causal).squeeze(1)


GRAPHS: list[tuple[Callable[[Any], Any], tuple[int, ...]]] = [
    (sdpa, (5, 8)),
    (lambda x: F.layer_norm(x, (8,), eps=1e-6), (5, 8)),
    (lambda x: x + x.new_tensor([1.0, -2.0, 0.5, 0.0, 3.0, 1.0, 1.0, 2.0]), (5, 8)),
    (lambda x: x.masked_fill(x > 0.5, float("-inf")).softmax(-1).nan_to_num(), (5, 8)),
    (lambda x: x.clamp(min=float("-inf"), max=float("inf")) + x.clamp(max=float("nan")).isnan(), (5, 8)),
    (lambda x: torch.special.expit(x) + torch.special.erf(x), (5, 8)),
    (lambda x: torch.linalg.vector_norm(x, dim=-1, keepdim=True) * x, (5, 8)),
    (lambda x: torch.fft.rfft(x, dim=-1).abs(), (5, 8)),
    (lambda x: F.group_norm(x, 2) + F.instance_norm(x), (4, 6)),
    (lambda x: torch.Tensor.split(x.addcmul(x, x, value=0.5).logaddexp(x), 3, -1)[1], (5, 8)),
]
GRAPH_IDS = [
    "sdpa-mask-causal-dropout-scale",
    "layer-norm",
    "new-tensor",
    "masked-fill-neg-inf",
    "clamp-inf-nan",
    "special",
    "linalg",
    "fft",
    "group-and-instance-norm",
    "tensor-function-form",
]


@pytest.mark.parametrize(("graph", "shape"), GRAPHS, ids=GRAPH_IDS)
@pytest.mark.parametrize("suffix", [".json", ".yaml"], ids=["json", "yaml"])
def test_a_graph_of_these_ops_round_trips_with_equal_outputs(
    graph: Callable[[Any], Any],
    shape: tuple[int, ...],
    suffix: str,
    tmp_path: Path,
    fresh_plugins: PluginManager,
) -> None:
    x = Placeholder((None, *shape), name="x")
    model = Functional(inputs=x, outputs=graph(x)).eval()
    spec = model.to_spec()
    assert json.loads(json.dumps(spec, allow_nan=False)) == spec  # standard JSON: no Infinity, NaN literals
    torchx.save_spec(model, tmp_path / f"model{suffix}")
    rebuilt = torchx.load_spec(tmp_path / f"model{suffix}")
    assert isinstance(rebuilt, Functional) and rebuilt.to_spec() == spec
    rebuilt.load_state_dict(model.state_dict())
    rebuilt.eval()
    data = torch.randn(3, *shape)
    torch.testing.assert_close(rebuilt(data), model(data), rtol=0, atol=0, equal_nan=True)


def test_ops_are_named_in_their_own_namespace(fresh_plugins: PluginManager) -> None:
    x = Placeholder((None, 5, 8), name="x")
    y = F.layer_norm(torch.special.expit(x), (8,)) + torch.Tensor.split(x, 4, -1)[0].repeat(1, 1, 2)
    ops = [
        node.get("op", node.get("method"))
        for node in Functional(inputs=x, outputs=y.flip(-1) * y).to_spec()["nodes"]
    ]
    assert ops == [
        "torch.special.expit",
        "F.layer_norm",
        "torch.Tensor.split",
        "operator.getitem",
        "repeat",
        "operator.add",
        "flip",
        "operator.mul",
    ]


def spec_calling(op: str, args: list[Any]) -> dict[str, Any]:
    return {
        "format_version": 1,
        "type": "Functional",
        "inputs": {"input": "x", "shape": [None, 3], "dtype": "float32"},
        "modules": {},
        "nodes": [{"name": "y", "op": op, "args": args}],
        "outputs": {"node": "y"},
    }


HOSTILE = [
    "os.system",
    "torch._C._nn.gelu",
    "torch._C._something",
    "torch.nn.functional.__builtins__",
    "F.__builtins__",
    "torch.load",
    "torch.save",
    "torch.from_file",
    "torch.hub.load",
    "torch.utils.data.DataLoader",
    "builtins.eval",
    "eval",
    "torch.compile",
    "torch.manual_seed",
    "torch.set_default_dtype",
    "torch.nn",
    "torch.Tensor",
    "torch.Generator",
    "F.torch",
    "torch.Tensor.backward",
    "torch.Tensor.register_hook",
    "operator.attrgetter",
    "operator.methodcaller",
    "torch.ops.aten.add",
    "torch.cat\u200b",
    "torch.ca\u0442",
]


@pytest.mark.parametrize("op", HOSTILE, ids=HOSTILE)
def test_a_spec_naming_anything_outside_torch_s_recorded_functions_is_refused(
    op: str, fresh_plugins: PluginManager, tmp_path: Path
) -> None:
    canary = tmp_path / "canary"
    with pytest.raises(
        SpecError, match=r"^\$\.nodes\[0\]\.op: unknown operation .*; an op is a function on the allow-list"
    ):
        L.Layer.from_spec(spec_calling(op, [{"node": "x"}, str(canary)]))
    assert not canary.exists()


@pytest.mark.parametrize(
    "method",
    ["backward", "register_hook", "_make_subclass", "__class__", "__reduce_ex__", "shape", "T", "x.y", 3],
    ids=str,
)
def test_a_spec_naming_a_tensor_method_that_is_not_one_it_may_call_is_refused(
    method: Any, fresh_plugins: PluginManager
) -> None:
    spec = spec_calling("torch.cat", [])
    spec["nodes"] = [{"name": "y", "method": method, "args": [{"node": "x"}]}]
    with pytest.raises(SpecError, match=r"^\$\.nodes\[0\]\.method: unknown tensor method"):
        L.Layer.from_spec(spec)


@pytest.mark.parametrize(
    ("op", "args"),
    [
        ("operator.pow", [10, 10**18]),  # an int64 (a spec holds no larger integer)
        ("operator.mul", ["x", 10**12]),
        ("torch.zeros", [10**12]),
        ("torch.cat", [{"list": []}]),
    ],
    ids=["huge-power", "huge-string", "huge-factory", "empty-cat"],
)
def test_an_op_on_data_alone_is_refused_before_it_runs(
    op: str, args: list[Any], fresh_plugins: PluginManager
) -> None:
    with pytest.raises(
        SpecError,
        match=rf"^\$\.nodes\[0\]: {op} is called on data alone; a node's op takes a value of the graph",
    ):
        L.Layer.from_spec(spec_calling(op, args))


@pytest.mark.parametrize(
    ("written", "message"),
    [({"float": "Infinity"}, "got 'Infinity'"), ({"float": 1e999}, "got inf")],
    ids=["other-name", "not-a-string"],
)
def test_a_malformed_non_finite_number_in_a_node_is_refused_where_it_stands(
    written: Any, message: str, fresh_plugins: PluginManager
) -> None:
    spec = spec_calling("torch.clamp", [{"node": "x"}])
    spec["nodes"][0]["kwargs"] = {"max": written}
    with pytest.raises(
        SpecError,
        match=rf'^\$\.nodes\[0\]\.kwargs\.max: non-finite numbers are written \{{"float": "inf"\}}.*{message}$',
    ):
        L.Layer.from_spec(spec)


def test_yaml_infinities_in_a_node_read_as_floats(fresh_plugins: PluginManager, tmp_path: Path) -> None:
    x = Placeholder((None, 3), name="x")
    model = Functional(inputs=x, outputs=x.clamp(min=-1.0, max=1.0))
    spec = model.to_spec()
    spec["nodes"][0]["kwargs"] = {"min": -math.inf, "max": math.inf}
    path = tmp_path / "clamp.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    assert "-.inf" in path.read_text(encoding="utf-8")
    rebuilt = torchx.load_spec(path)
    data = torch.tensor([[-1e30, 0.5, 1e30]])
    assert torch.equal(rebuilt(data), data)
    assert rebuilt.to_spec()["nodes"][0]["kwargs"] == {"min": {"float": "-inf"}, "max": {"float": "inf"}}
