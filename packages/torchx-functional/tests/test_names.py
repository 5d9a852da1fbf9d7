"""Layer names: submodule paths in a Functional, keys in a Sequential, kept by specs, shown everywhere."""

from __future__ import annotations

import json
from collections import OrderedDict

import pytest
import torch
import yaml
from case_ids import case_id
from torch import nn

import torchx
import torchx.layers as L
from torchx.core import ArgumentError, Layer, ShapeError, TorchXError
from torchx.core._graph import model_graph
from torchx.functional import Functional, Placeholder


def block() -> Functional:
    x = Placeholder((None, 3, 8, 8), name="image")
    y = L.ReLU()(L.BatchNorm2d(name="bn1")(L.Conv2d(4, 3, padding=1, bias=False, name="conv1")(x)))
    z = L.BatchNorm2d(name="layer1.0.bn1")(L.Conv2d(4, 3, padding=1, name="layer1.0.conv1")(y))
    pooled = L.Flatten()(L.AdaptiveAvgPool2d(1)(L.ReLU()(z + y)))
    return Functional(inputs=x, outputs=L.Linear(5, name="fc")(pooled))


def test_a_named_layer_is_the_submodule_of_that_name_and_dotted_names_nest() -> None:
    model = block()
    assert list(model.state_dict()) == [
        "conv1.weight",
        *(f"bn1.{key}" for key in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")),
        "layer1.0.conv1.weight",
        "layer1.0.conv1.bias",
        *(
            f"layer1.0.bn1.{key}"
            for key in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")
        ),
        "fc.weight",
        "fc.bias",
    ]
    assert isinstance(model.get_submodule("layer1.0.conv1"), nn.Conv2d)
    assert {"relu", "relu_1", "flatten", "adaptive_avg_pool2d"} <= set(dict(model.named_children()))
    assert "layer1_0_conv1 = getattr(self.layer1, '0').conv1(relu)" in model.code


def test_a_state_dict_moves_between_two_definitions_with_the_same_names() -> None:
    source, target = block(), block()
    target.load_state_dict(source.state_dict(), strict=True)
    data = torch.randn(2, 3, 8, 8)
    assert torch.equal(source.eval()(data), target.eval()(data))


def test_copies_pickles_and_fx_keep_named_submodules() -> None:
    import copy
    import pickle

    model = block().eval()
    data = torch.randn(2, 3, 8, 8)
    expected = model(data)
    for other in (copy.deepcopy(model), pickle.loads(pickle.dumps(model)), torch.fx.symbolic_trace(model)):
        assert torch.equal(other(data), expected)
        assert list(other.state_dict()) == list(model.state_dict())
    replaced = copy.deepcopy(model)
    replaced.get_submodule("layer1.0").conv1 = nn.Conv2d(4, 4, 3, padding=1)  # reached through the attribute
    assert not torch.equal(replaced(data), expected)


def test_a_shared_named_layer_is_one_submodule() -> None:
    x = Placeholder((None, 4))
    shared = L.Linear(4, name="shared")
    model = Functional(inputs=x, outputs=shared(shared(x)))
    assert list(model.state_dict()) == ["shared.weight", "shared.bias"]


def test_two_layers_with_one_name_are_refused_naming_both() -> None:
    x = Placeholder((None, 4))
    with pytest.raises(TorchXError, match=r"two layers of the Functional are named 'fc': .*Linear.*Linear"):
        Functional(inputs=x, outputs=L.Linear(3, name="fc")(L.Linear(4, name="fc")(x)))


@pytest.mark.parametrize(
    ("names", "match"),
    [
        (("fc", "fc.inner"), r"'fc.inner' .* puts it inside the layer named 'fc'"),
        (("forward", "b"), r"'forward' is an attribute of Functional"),
        (("a.training", "b"), r"'training' is an attribute of Functional"),
    ],
    ids=case_id,
)
def test_names_that_cannot_be_submodule_paths_are_refused(names: tuple[str, str], match: str) -> None:
    x = Placeholder((None, 4))
    with pytest.raises(TorchXError, match=match):
        Functional(inputs=x, outputs=L.Linear(3, name=names[1])(L.Linear(4, name=names[0])(x)))


@pytest.mark.parametrize("name", ["", "a..b", ".a", "a b", "tab\there"])
def test_a_name_that_is_no_path_is_refused_at_construction(name: str) -> None:
    with pytest.raises(ArgumentError, match=r"Linear: layer name .* is not a submodule path"):
        L.Linear(3, name=name)


def test_names_survive_specs_and_every_json_or_yaml_writer() -> None:
    model = block()
    spec = model.to_spec()
    assert spec["modules"]["layer1.0.conv1"]["name"] == "layer1.0.conv1"
    for text in (json.dumps(spec, sort_keys=True), yaml.safe_dump(spec)):
        again = Layer.from_spec(json.loads(text) if text.startswith("{") else yaml.safe_load(text))
        assert list(again.state_dict()) == list(model.state_dict())


def test_a_named_sequential_keeps_its_order_whatever_the_writer_does_with_keys() -> None:
    model = L.Sequential(OrderedDict([("z", L.Linear(1)), ("a", L.Linear(10))]))
    assert model(torch.zeros(2, 3)).shape == (2, 10)
    spec = model.to_spec()
    assert [entry["name"] for entry in spec["layers"]] == ["z", "a"]
    for text in (json.dumps(spec, sort_keys=True), yaml.safe_dump(spec)):
        again = L.Sequential.from_spec(yaml.safe_load(text))
        assert list(dict(again.named_children())) == ["z", "a"]
        assert again(torch.zeros(2, 3)).shape == (2, 10)


def test_the_object_form_of_older_named_sequential_specs_still_reads() -> None:
    old = {"type": "Sequential", "layers": {"stem": {"type": "Linear", "args": {"out_features": 4}}}}
    assert list(dict(L.Sequential.from_spec(old).named_children())) == ["stem"]


def test_a_sequential_holds_named_layers_under_their_names() -> None:
    model = L.Sequential(L.Linear(8, name="body"), L.ReLU(), L.Linear(2, name="head"))
    model(torch.zeros(1, 3))
    assert list(model.state_dict()) == ["body.weight", "body.bias", "head.weight", "head.bias"]
    assert list(dict(model.named_children())) == ["body", "1", "head"]
    again = L.Sequential.from_spec(model.to_spec())
    assert list(dict(again.named_children())) == ["body", "1", "head"]
    with pytest.raises(
        ArgumentError, match=r"Sequential\[1\] is named 'a', which Sequential\[0\] is named too"
    ):
        L.Sequential(L.Linear(2, name="a"), L.Linear(2, name="a"))
    with pytest.raises(ArgumentError, match="is not a key of a Sequential"):
        L.Sequential(L.Linear(2, name="a.b"))


def test_names_appear_in_summaries_plots_and_errors() -> None:
    model = block()
    assert "Conv2d (layer1.0.conv1)" in model.node_table()
    rows = {row.path: row for row in torchx.summarize(model, (2, 3, 8, 8)).rows}
    assert "layer1.0.conv1" in rows
    dot = model_graph(model, (2, 3, 8, 8)).to_dot()
    assert "layer1.0.conv1 (Conv2d)" in dot and "fc (Linear)" in dot
    x = Placeholder((None, 6))
    replaced = Functional(x, L.Linear(2)(L.Linear(4, name="layer1.0.proj")(x)))
    replaced.get_submodule("layer1.0").proj = torchx.build(L.Linear(4), (1, 7))  # built for other inputs
    with pytest.raises(ShapeError, match=r"^Functional\.layer1\.0\.proj Linear: got input \(3, 6\)"):
        replaced(torch.zeros(3, 6))
    sequential = L.Sequential(L.Linear(8, name="body"), L.Linear(2, name="head"))
    sequential(torch.zeros(1, 3))
    with pytest.raises(ShapeError, match=r"^Sequential\.body Linear: got input \(1, 5\)"):
        sequential(torch.zeros(1, 5))


def tokens() -> Functional:
    """A ViT's front, as torchvision names it: the class token and the
    position embedding are parameters of the model and of ``encoder``."""
    x = Placeholder((None, 4, 8), name="x")
    y = torch.cat([L.Parameter((1, 1, 8), name="class_token")(x), x], 1)
    y = L.Parameter((1, 5, 8), init="normal", name="encoder.pos_embedding")(y) + y
    return Functional(x, L.Linear(3, name="encoder.ln")(y) + L.Parameter((5, 3), init="normal")(y))


def test_a_parameter_layer_is_the_models_own_parameter_at_its_name() -> None:
    model = tokens().eval()
    keys = ["class_token", "parameter", "encoder.pos_embedding", "encoder.ln.weight", "encoder.ln.bias"]
    assert list(model.state_dict()) == [name for name, _ in model.named_parameters()] == keys
    assert type(model.class_token) is nn.Parameter and model.class_token.shape == (1, 1, 8)
    assert model.get_parameter("encoder.pos_embedding") is model.encoder.pos_embedding
    assert "class_token = self.class_token.expand(x.shape[0], -1, -1)" in model.code
    assert "parameter = self.parameter;" in model.code  # a leading size other than 1 is not expanded
    data = torch.randn(2, 4, 8)
    y = torch.cat([model.class_token.expand(2, -1, -1), data], 1) + model.encoder.pos_embedding
    assert torch.equal(model(data), model.encoder.ln(y) + model.parameter)
    assert model.to_spec()["modules"]["class_token"] == {
        "type": "Parameter",
        "name": "class_token",
        "args": {"shape": [1, 1, 8]},
    }
    assert "Parameter (encoder.pos_embedding)" in model.node_table()
    assert "class_token (Parameter)" in model_graph(model, (2, 4, 8)).to_dot()


def test_a_parameter_layers_tensor_loads_trains_copies_and_scripts_as_a_parameter() -> None:
    import copy
    import pickle

    model = tokens().eval()
    again = Layer.from_spec(model.to_spec())
    again.load_state_dict(model.state_dict(), strict=True)
    data = torch.randn(3, 4, 8)
    expected = model(data)
    copies = (again, copy.deepcopy(model), pickle.loads(pickle.dumps(model)), torch.fx.symbolic_trace(model))
    compiled = (torch.jit.script(model), torch.compile(model, fullgraph=True, backend="eager"))
    for other in (*copies, *compiled):
        torch.testing.assert_close(other(data), expected)
    twin = copy.deepcopy(model)
    assert twin.class_token is not model.class_token and list(twin.state_dict()) == list(model.state_dict())
    moved = copy.deepcopy(model).to(device="meta")  # new parameter objects, read by the forward
    assert moved.class_token.is_meta and moved(data.to("meta")).shape == expected.shape
    moved.load_state_dict(model.state_dict(), assign=True)  # and the checkpoint's, once assigned
    assert torch.equal(moved(data), expected)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    before = model.class_token.detach().clone()
    model(data).sum().backward()
    optimizer.step()
    assert not torch.equal(model.class_token, before)
    assert model.encoder.pos_embedding.grad is not None
