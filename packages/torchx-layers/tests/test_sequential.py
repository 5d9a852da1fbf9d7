"""L.Sequential: the seed examples, parity with nn.Sequential, and interoperability."""

from __future__ import annotations

import copy
import pickle
from collections import Counter, OrderedDict

import pytest
import torch
from layers_seed_cnn import native_seed_cnn, seed_cnn
from torch import nn

import torchx
import torchx.layers as L
from torchx.core import ShapeError


def test_seed_single_layer_example() -> None:
    x = torch.zeros((16, 10))
    model = L.Linear(20)
    assert model(x).size() == (16, 20)


def test_seed_sequential_example_infers_1960_after_flatten() -> None:
    model = seed_cnn()
    y = model(torch.randn((8, 3, 32, 32)))
    assert y.size() == (8, 10)
    assert model[9].in_features == 1960


def test_state_dict_keys_and_checkpoints_move_both_ways() -> None:
    model = torchx.build(seed_cnn(), (8, 3, 32, 32))
    native = native_seed_cnn()
    assert list(model.state_dict()) == list(native.state_dict())
    model.load_state_dict(native.state_dict())
    x = torch.randn(4, 3, 32, 32)
    model.eval()
    native.eval()
    assert torch.equal(model(x), native(x))
    trained = native_seed_cnn()
    trained.load_state_dict(model.state_dict())
    trained.eval()
    assert torch.equal(trained(x), model(x))


def test_same_seed_same_weights_as_native_sequential() -> None:
    torch.manual_seed(0)
    native = native_seed_cnn()
    torch.manual_seed(0)
    model = torchx.build(seed_cnn(), (1, 3, 32, 32))
    for (key, a), (_, b) in zip(model.state_dict().items(), native.state_dict().items(), strict=True):
        assert torch.equal(a, b), key


def test_native_modules_interleave_and_nested_sequentials_build() -> None:
    model = L.Sequential(
        nn.Conv2d(3, 6, 3),
        L.BatchNorm2d(),
        L.Sequential(L.ReLU(), L.Conv2d(4, 3)),
        nn.Flatten(),
        L.Linear(5),
    )
    assert model(torch.zeros(2, 3, 9, 9)).shape == (2, 5)
    assert model[2][1].in_channels == 6
    assert model[4].in_features == 4 * 5 * 5


def test_ordered_dict_names_indexing_slicing_append() -> None:
    model = L.Sequential(OrderedDict([("features", L.Linear(8)), ("act", L.ReLU())]))
    model.append(L.Linear(2))
    model.add(L.Sigmoid())
    assert len(model) == 4
    assert model(torch.zeros(3, 5)).shape == (3, 2)
    assert list(model.state_dict()) == ["features.weight", "features.bias", "2.weight", "2.bias"]
    head = model[:2]
    assert isinstance(head, L.Sequential) and len(head) == 2
    assert head(torch.zeros(1, 5)).shape == (1, 8)


def test_a_subclass_add_module_sees_every_child_of_the_constructor() -> None:
    added: list[str] = []

    class Tracked(L.Sequential):
        def add_module(self, name: str, module: nn.Module | None) -> None:
            added.append(name)
            super().add_module(name, module)

    Tracked(L.Linear(4), L.ReLU(name="act"))
    Tracked(OrderedDict(first=L.Linear(4)))
    assert added == ["0", "act", "first"]


def test_appending_after_build_builds_the_new_layer() -> None:
    model = L.Sequential(L.Linear(8))
    model(torch.zeros(2, 3))
    model.append(L.Linear(4))
    assert not model.is_built
    assert model(torch.zeros(2, 3)).shape == (2, 4)
    assert model.is_built
    model.insert(0, L.Identity())
    model[1] = L.Linear(8)
    assert model(torch.zeros(2, 3)).shape == (2, 4)


def test_train_eval_to_dtype_and_hooks() -> None:
    model = torchx.build(seed_cnn(), (2, 3, 32, 32))
    model.eval()
    assert not any(module.training for module in model.modules())
    model.train()
    assert all(module.training for module in model.modules())
    model.to(torch.float64)
    assert model(torch.randn(2, 3, 32, 32, dtype=torch.float64)).dtype == torch.float64
    seen: list[tuple[int, ...]] = []
    model[9].register_forward_hook(lambda module, args, out: seen.append(tuple(out.shape)))
    grads: list[tuple[int, ...]] = []
    model[11].register_full_backward_hook(lambda module, gin, gout: grads.append(tuple(gout[0].shape)))
    model(torch.randn(2, 3, 32, 32, dtype=torch.float64)).sum().backward()
    assert seen == [(2, 80)] and grads == [(2, 10)]


def test_pickle_and_deepcopy_of_built_and_unbuilt_models() -> None:
    x = torch.randn(2, 3, 32, 32)
    model = torchx.build(seed_cnn(), x).eval()
    expected = model(x)
    for twin in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert torch.equal(twin(x), expected)
    unbuilt = pickle.loads(pickle.dumps(seed_cnn()))
    assert unbuilt(x).shape == (2, 10)


def test_torch_save_and_load_whole_model(tmp_path: object) -> None:
    path = f"{tmp_path}/model.pt"
    model = torchx.build(seed_cnn(), (2, 3, 32, 32)).eval()
    torch.save(model, path)
    loaded = torch.load(path, weights_only=False)
    x = torch.randn(2, 3, 32, 32)
    assert torch.equal(loaded(x), model(x))


def test_torch_jit_script() -> None:
    model = torchx.build(seed_cnn(), (2, 3, 32, 32)).eval()
    scripted = torch.jit.script(model)
    x = torch.randn(2, 3, 32, 32)
    assert torch.equal(scripted(x), model(x))
    assert type(model[0]) is nn.Conv2d, "scripting must leave the model as it was"


def test_torch_jit_script_refuses_an_unbuilt_layer_clearly() -> None:
    with pytest.raises(Exception, match="not built: build it"):
        torch.jit.script(L.Sequential(L.Linear(3)))


def test_torch_compile_fullgraph() -> None:
    model = torchx.build(seed_cnn(), (2, 3, 32, 32)).eval()
    compiled = torch.compile(model, fullgraph=True, backend="eager")
    x = torch.randn(2, 3, 32, 32)
    assert torch.allclose(compiled(x), model(x))


def test_torch_export() -> None:
    model = torchx.build(seed_cnn(), (2, 3, 32, 32)).eval()
    exported = torch.export.export(model, (torch.randn(2, 3, 32, 32),))
    x = torch.randn(2, 3, 32, 32)
    assert torch.allclose(exported.module()(x), model(x))


def test_repr_shows_the_native_layers_after_build() -> None:
    model = L.Sequential(L.Linear(4), L.ReLU())
    assert "not built" in repr(model)
    model(torch.zeros(1, 3))
    assert repr(model) == repr(nn.Sequential(nn.Linear(3, 4), nn.ReLU()))


def test_a_shape_error_names_the_position_and_nothing_stays_half_built() -> None:
    model = L.Sequential(L.Linear(8), L.ReLU(), L.Conv2d(3, 3), L.Linear(2))
    with pytest.raises(ShapeError) as info:
        model(torch.zeros(4, 5))
    message = str(info.value)
    assert message.startswith(
        "Sequential[2] Conv2d: expected input of shape (N, C_in, H, W) (4-d), got (4, 8) (2-d)"
    )
    assert "fix:" in message
    assert not any(torchx.is_built(layer) for layer in model if isinstance(layer, L.Layer))
    model[2] = L.Identity()
    assert model(torch.zeros(4, 5)).shape == (4, 2)


def test_nested_path_in_errors() -> None:
    model = L.Sequential(L.Linear(4), L.Sequential(L.ReLU(), L.BatchNorm2d()))
    with pytest.raises(ShapeError, match=r"^Sequential\[1\] Sequential\[1\] BatchNorm2d: expected input"):
        model(torch.zeros(2, 3))


def test_channel_count_changing_after_build_is_a_shape_error_without_rebuild() -> None:
    model = L.Sequential(L.Conv2d(8, 3), L.ReLU())
    model(torch.zeros(1, 3, 8, 8))
    with pytest.raises(
        ShapeError,
        match=r"^Sequential\[0\] Conv2d: got input \(1, 4, 8, 8\), which needs in_channels=4 \(built with 3\)",
    ):
        model(torch.zeros(1, 4, 8, 8))
    assert model[0].in_channels == 3


def test_spec_round_trip_of_the_seed_model(fresh_plugins: object) -> None:
    spec = seed_cnn().to_spec()
    assert spec["type"] == "Sequential" and len(spec["layers"]) == 12
    assert spec["layers"][0] == {
        "type": "Conv2d",
        "args": {"out_channels": 20, "kernel_size": 5, "stride": 2, "padding": 1},
    }
    rebuilt = L.Layer.from_spec(spec)
    assert rebuilt.to_spec() == spec
    assert rebuilt(torch.zeros(8, 3, 32, 32)).shape == (8, 10)
    named = L.Sequential(OrderedDict([("a", L.Linear(2))]))
    assert L.Sequential.from_spec(named.to_spec()).to_spec() == named.to_spec()


def test_lambda_has_no_spec(fresh_plugins: object) -> None:
    from torchx.core import SpecError

    with pytest.raises(SpecError, match=r"\$\.layers\[1\]: Lambda wraps a Python callable"):
        L.Sequential(L.Linear(2), L.Lambda(torch.relu)).to_spec()


def test_rollback_of_a_nested_failure_keeps_layers_built_before_it() -> None:
    trained = L.Linear(4)
    trained(torch.zeros(1, 3))
    weight = trained.weight
    outer = L.Sequential(L.Sequential(trained, L.Linear(5)), L.Conv2d(3, 3))
    with pytest.raises(ShapeError, match=r"^Sequential\[1\] Conv2d"):
        outer(torch.zeros(2, 3))
    assert torchx.is_built(trained) and trained.weight is weight
    assert not torchx.is_built(outer[0][1])


def test_rollback_reaches_layers_inside_plain_modules() -> None:
    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = L.Linear(6)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.inner(x)

    block = Block()
    model = L.Sequential(block, L.BatchNorm2d())
    with pytest.raises(ShapeError):
        model(torch.zeros(2, 3))
    assert not torchx.is_built(block.inner)


def test_concatenating_and_repeating_keep_the_torchx_class() -> None:
    a, b = L.Sequential(L.Linear(3)), L.Sequential(L.ReLU())
    for combined in (a + b, a * 2, 2 * a):
        assert isinstance(combined, L.Sequential)
    assert (a + b)(torch.zeros(1, 2)).shape == (1, 3)


def test_layer_names_in_specs_must_be_usable_module_names(fresh_plugins: object) -> None:
    from torchx.core import SpecError

    for name in ("a.b", "", "training", "forward"):
        with pytest.raises(SpecError, match=r"layer name .* is not usable"):
            L.Layer.from_spec({"type": "Sequential", "layers": {name: {"type": "ReLU"}}})
    sliced = L.Sequential(L.Linear(2), L.ReLU(), L.Linear(3))[1:]
    assert L.Layer.from_spec(sliced.to_spec()).to_spec() == sliced.to_spec()


def test_dtype_asked_before_the_build_reaches_every_layer() -> None:
    model = seed_cnn().double()
    torchx.build(model, (2, 3, 32, 32))
    assert {p.dtype for p in model.parameters()} == {torch.float64}
    assert model(torch.randn(2, 3, 32, 32, dtype=torch.float64)).dtype == torch.float64


def calls_of_every_module(model: torch.nn.Module) -> Counter[str]:
    """Counts, by module type, of the calls of the modules in ``model`` from now on
    (copies made for meta runs count too: they keep the hooks)."""
    calls: Counter[str] = Counter()
    for module in model.modules():
        module.register_forward_pre_hook(lambda module, args: calls.update([type(module).__name__]))
    return calls


def test_deeply_nested_sequentials_build_in_linear_time() -> None:
    model: torch.nn.Module = L.Linear(3)
    for _ in range(60):
        model = L.Sequential(model, L.ReLU())
    calls = calls_of_every_module(model)
    assert model(torch.zeros(2, 4)).shape == (2, 3)
    assert model.is_built
    # Each module runs a bounded number of times (once here), never once per level above it.
    assert calls["Linear"] <= 2 and calls["ReLU"] <= 2 * 60
