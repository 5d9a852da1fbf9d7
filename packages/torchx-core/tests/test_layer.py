"""The Layer protocol: pending parameters, the build in place, the exact native class, errors."""

from __future__ import annotations

import copy
import pickle
import threading
from typing import Any, ClassVar

import pytest
import torch
from torch import nn
from torch.nn.parameter import UninitializedParameter, is_lazy
from toy_layers import Attention, Chain, Dense, Norm

import torchx
from torchx.core import (
    ArgumentError,
    DtypeError,
    FromInput,
    LayerRegistry,
    LeafLayer,
    PendingParameter,
    ShapeError,
    SpecError,
    TorchXError,
    from_spec,
    record_of,
)


def test_builds_on_first_call_and_becomes_exactly_the_native_module() -> None:
    layer = Dense(20)
    assert not layer.is_built and not torchx.is_built(layer)
    out = layer(torch.zeros(16, 10))
    assert out.shape == (16, 20)
    assert type(layer) is nn.Linear
    assert torchx.is_built(layer) and torchx.native_module(layer) is layer
    assert (layer.in_features, layer.out_features) == (10, 20)
    assert list(layer.state_dict()) == ["weight", "bias"]
    assert record_of(layer).layer_class is Dense  # type: ignore[union-attr]


def test_an_unbuilt_layer_shows_its_parameters_as_torch_uninitialized_ones() -> None:
    layer = Dense(3)
    names = [name for name, _ in layer.named_parameters()]
    assert names == ["weight", "bias"]
    assert all(isinstance(p, UninitializedParameter) and is_lazy(p) for p in layer.parameters())
    assert list(Dense(3, bias=False).state_dict()) == ["weight"]
    norm = Norm()
    assert [name for name, _ in norm.named_buffers()] == [
        "running_mean",
        "running_var",
        "num_batches_tracked",
    ]
    assert dict(norm.named_buffers())["num_batches_tracked"].dtype == torch.int64


def test_a_native_with_children_shows_their_parameters_under_the_native_names() -> None:
    names = [name for name, _ in Attention(2).named_parameters()]
    assert names == [name for name, _ in nn.MultiheadAttention(8, 2).named_parameters()]


def test_the_build_materialises_the_same_parameter_objects() -> None:
    layer = Dense(4)
    before = list(layer.parameters())
    layer(torch.zeros(2, 3))
    after = list(layer.parameters())
    assert all(a is b for a, b in zip(before, after, strict=True))
    assert all(type(p) is nn.Parameter for p in after)


def test_an_optimizer_made_before_the_build_trains_every_layer() -> None:
    model = Chain(Dense(8), nn.Tanh(), Dense(2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(4, 3)).sum().backward()
    before = [p.detach().clone() for p in model.parameters()]
    optimizer.step()
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_parameters_read_in_inference_mode_before_the_build_train_after_it() -> None:
    """A parameter count in an evaluation script (``torch.inference_mode()``) made
    the pending tensors inference tensors, which the build could not give the weights."""
    model = Chain(Dense(8), nn.Tanh(), Dense(2))
    with torch.inference_mode():
        held = list(model.parameters())
    optimizer = torch.optim.SGD(held, lr=0.1)
    model(torch.randn(4, 3)).sum().backward()
    before = [p.detach().clone() for p in model.parameters()]
    optimizer.step()
    assert [p is q for p, q in zip(held, model.parameters(), strict=True)] == [True] * 4
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_a_native_module_before_the_layers_does_not_hide_them_from_the_optimizer() -> None:
    model = nn.Sequential(nn.Linear(5, 4), Dense(3))
    count = len(list(model.parameters()))
    assert count == 4
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(2, 5)).sum().backward()
    weight = model[1].weight.detach().clone()
    optimizer.step()
    assert not torch.equal(weight, model[1].weight)


@pytest.mark.parametrize(
    ("make_layer", "make_native", "example"),
    [
        pytest.param(lambda: Dense(7), lambda: nn.Linear(5, 7), torch.zeros(2, 5), id="Dense"),
        pytest.param(lambda: Norm(), lambda: nn.BatchNorm1d(6), torch.zeros(4, 6), id="Norm"),
        pytest.param(
            lambda: Attention(2), lambda: nn.MultiheadAttention(8, 2), torch.zeros(3, 2, 8), id="Attention"
        ),
    ],
)
def test_same_seed_gives_bit_identical_weights(make_layer, make_native, example) -> None:
    torch.manual_seed(1234)
    native = make_native()
    torch.manual_seed(1234)
    layer = make_layer()
    inputs = (example,) * (3 if isinstance(native, nn.MultiheadAttention) else 1)
    torchx.build(layer, *inputs)  # no forward: running statistics stay as constructed
    assert type(layer) is type(native)
    assert layer.state_dict().keys() == native.state_dict().keys()
    for key, value in native.state_dict().items():
        assert torch.equal(layer.state_dict()[key], value), key


def test_builds_on_the_input_dtype() -> None:
    layer = Dense(3)
    layer(torch.zeros(2, 4, dtype=torch.float64))
    assert layer.weight.dtype == torch.float64


def test_a_first_call_inside_autocast_builds_float32_parameters() -> None:
    model = Chain(Dense(8), Dense(4))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        model(torch.randn(2, 3))
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    assert model(torch.randn(2, 3)).dtype == torch.float32


def test_the_first_call_may_pass_the_input_by_keyword() -> None:
    layer = Dense(3)
    assert layer(input=torch.zeros(2, 5)).shape == (2, 3)
    attention = Attention(2)
    x = torch.zeros(3, 2, 8)
    output, _ = attention(x, key=x, value=x)
    assert output.shape == (3, 2, 8)


def test_hooks_and_eval_mode_set_before_the_build_survive_it() -> None:
    layer = Attention(2)
    calls: list[str] = []
    handle = layer.register_forward_hook(lambda module, args, output: calls.append("hook"))
    layer.eval()
    x = torch.zeros(3, 2, 8)
    layer(x, x, x)
    assert calls == ["hook"]
    assert not layer.training and not layer.out_proj.training
    handle.remove()
    layer(x, x, x)
    assert calls == ["hook"]


def test_hooks_the_native_constructor_registers_are_bound_to_the_layer_itself() -> None:
    class Counting(nn.Linear):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            self.calls = 0
            self.register_forward_pre_hook(self.count)

        def count(self, module: nn.Module, args: object) -> None:
            self.calls += 1

    class CountingDense(Dense):
        native_class = Counting

    layer = torchx.build(CountingDense(2), (1, 3))
    layer(torch.zeros(1, 3))
    layer(torch.zeros(1, 3))
    assert type(layer) is Counting and layer.calls == 2


def test_a_full_backward_hook_registered_before_the_build_fires_on_every_later_call() -> None:
    layer = Dense(3)
    seen: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    layer.register_full_backward_hook(
        lambda module, grad_input, grad_output: seen.append((grad_input[0].shape, grad_output[0].shape))
    )
    x = torch.randn(2, 5, requires_grad=True)
    for _ in range(3):  # the build, then the built module
        layer(x).sum().backward()
    assert seen == [((2, 5), (2, 3))] * 3


def test_the_native_constructors_hooks_run_before_those_registered_on_the_layer() -> None:
    calls: list[str] = []

    class Marking(nn.Linear):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            self.register_forward_pre_hook(lambda module, args: calls.append("native"))

    class MarkingDense(Dense):
        native_class = Marking

    layer = MarkingDense(2)
    handle = layer.register_forward_pre_hook(lambda module, args: calls.append("user"))
    torchx.build(layer, (1, 3))  # runs the layer: its hooks too
    calls.clear()
    layer(torch.zeros(1, 3))
    assert calls == ["native", "user"]
    handle.remove()  # the handle made before the build still removes it
    layer(torch.zeros(1, 3))
    assert calls == ["native", "user", "native"]


def test_requests_made_before_the_build_are_kept() -> None:
    layer = Dense(3).double()
    layer.requires_grad_(False)
    layer.eval()
    torchx.build(layer, (2, 4))
    assert layer.weight.dtype == torch.float64 and not layer.weight.requires_grad and not layer.training
    half = Dense(3).to(torch.float16)
    half(torch.zeros(2, 4, dtype=torch.float16))
    assert half.weight.dtype == torch.float16
    meta = Dense(3).to("meta")
    meta(torch.zeros(2, 4, device="meta"))
    assert meta.weight.is_meta
    shared = Dense(3).share_memory()
    shared(torch.zeros(1, 2))
    assert shared.weight.is_shared()
    built = Dense(3)
    built(torch.zeros(1, 2))
    assert built.double().weight.dtype == torch.float64


def test_load_state_dict_builds_an_unbuilt_layer_from_the_shapes() -> None:
    source = torchx.build(Chain(Dense(6), Norm(), Dense(2)), (4, 3))
    target = Chain(Dense(6), Norm(), Dense(2))
    target.load_state_dict(source.state_dict())
    assert torchx.is_built(target)
    x = torch.randn(4, 3)
    source.eval(), target.eval()
    assert torch.equal(source(x), target(x))


def test_load_state_dict_that_does_not_fit_names_the_key_and_changes_nothing() -> None:
    source = torchx.build(Chain(Dense(6), Dense(2)), (4, 3))
    target = Chain(Dense(6), Dense(5))
    with pytest.raises(
        ShapeError, match=r"state key '1\.weight' has shape \(2, 6\), but Linear\(.*\) needs \(5, 6\)"
    ):
        target.load_state_dict(source.state_dict())
    assert not any(torchx.is_built(child) for child in target.children())
    checked = Chain(Dense(6, in_features=7))
    with pytest.raises(
        ShapeError, match=r"'0\.weight' has shape \(6, 3\), but Linear\(.*in_features=7.*\) needs \(6, 7\)"
    ):
        checked.load_state_dict({"0.weight": torch.zeros(6, 3), "0.bias": torch.zeros(6)})


def test_load_state_dict_into_a_plain_parent_builds_the_layers_inside() -> None:
    source = nn.Sequential(nn.Linear(5, 4), nn.Linear(4, 3))
    target = nn.Sequential(nn.Linear(5, 4), Dense(3))
    target.load_state_dict(source.state_dict())
    assert type(target[1]) is nn.Linear and torch.equal(target[1].weight, source[1].weight)


def test_load_state_dict_without_the_layers_keys_leaves_it_unbuilt_or_fails_strictly() -> None:
    model = nn.Sequential(nn.Linear(5, 4), Dense(3))
    with pytest.raises(RuntimeError, match=r"Missing key\(s\).*1\.weight"):
        model.load_state_dict({"0.weight": torch.zeros(4, 5), "0.bias": torch.zeros(4)})
    result = model.load_state_dict({"0.weight": torch.zeros(4, 5), "0.bias": torch.zeros(4)}, strict=False)
    assert result.missing_keys == ["1.weight", "1.bias"] and not torchx.is_built(model[1])


def test_a_built_layer_is_its_plain_native_module_for_torch_errors() -> None:
    layer = Dense(4)
    layer(torch.zeros(2, 3))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        layer(torch.zeros(2, 5))  # a bare built layer raises torch's own error
    assert layer.in_features == 3


def test_a_built_layer_in_a_container_refuses_a_changed_input_size_with_its_path() -> None:
    pytest.importorskip("torchx.layers")
    import torchx.layers as L

    model = L.Sequential(Dense(4), nn.ReLU(), Dense(2))
    model(torch.zeros(2, 3))
    with pytest.raises(
        ShapeError, match=r"Sequential\[0\] Dense: got input \(2, 5\).*in_features=5 \(built with 3\)"
    ):
        model(torch.zeros(2, 5))


def test_wrong_rank_names_layer_layout_and_fix() -> None:
    with pytest.raises(ShapeError) as info:
        Norm()(torch.zeros(4))
    message = str(info.value)
    assert "Norm: expected input of shape (N, C) or (N, C, L) (2-d or 3-d), got (4,) (1-d)" in message
    assert "fix:" in message
    with pytest.raises(ShapeError, match=r"Dense: expected input .* got \(\) \(0-d\)"):
        Dense(2)(torch.tensor(1.0))


def test_an_integer_input_to_floating_weights_is_a_dtype_error_not_a_shape_error() -> None:
    with pytest.raises(
        DtypeError, match=r"Dense: its weights are floating-point, but its input is torch\.int64"
    ) as info:
        Dense(2)(torch.zeros(3, 4, dtype=torch.int64))
    assert not isinstance(info.value, ShapeError) and "x.float()" in str(info.value)


def test_an_integer_input_is_refused_before_anything_is_built() -> None:
    """No weights are made for it: no random number drawn, no memory asked
    for (a layer too big for the machine still says what is wrong)."""
    torch.manual_seed(0)
    expected = torch.rand(1)
    torch.manual_seed(0)
    with pytest.raises(DtypeError, match=r"its input is torch\.int64"):
        Dense(3)(torch.zeros(3, 4, dtype=torch.int64))
    assert torch.equal(torch.rand(1), expected)
    with pytest.raises(DtypeError, match=r"its input is torch\.int64"):
        Dense(2**20)(torch.zeros(1, 2**20, dtype=torch.int64))  # 4 TiB of weights


def test_a_dynamic_dim_prints_as_none_and_no_unsqueeze_is_suggested() -> None:
    with pytest.raises(ShapeError) as info:
        torchx.build(Norm(), (None, 32, 32, 32))
    message = str(info.value)
    assert "got (None, 32, 32, 32)" in message and "61" not in message and "unsqueeze" not in message


@pytest.mark.parametrize("size", [0, -3, 2.5, True, "10"])
def test_bad_sizes_are_refused_at_construction(size: object) -> None:
    with pytest.raises(ArgumentError, match="Dense: out_features must be a positive int"):
        Dense(size)  # type: ignore[arg-type]


def test_bad_flags_and_ranges_are_refused_at_construction() -> None:
    with pytest.raises(ArgumentError, match=r"Dense: bias must be a bool \(true or false\), got 20"):
        Dense(3, bias=20)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match=r"Norm: momentum must be a number in \[0\.0, 1\.0\], got 4"):
        Norm(momentum=4)


def test_arguments_the_native_constructor_refuses_are_refused_where_it_first_runs() -> None:
    """Torch's own checks of the arguments (groups dividing out_channels) run
    with its constructor: at the build, or when the unbuilt layer's parameters
    are first read; the layer stays unbuilt. A spec is checked as it is read."""

    class Grouped(LeafLayer):
        native_class = nn.Conv1d
        inferred_arguments: ClassVar = {"in_channels": FromInput(dim=1)}

        def __init__(self, out_channels: int, groups: int) -> None:
            super().__init__(out_channels=out_channels, kernel_size=1, groups=groups)

    refused = "Grouped: torch's Conv1d refuses these arguments: out_channels must be divisible by groups"
    for out_channels in (10, 12, 10):  # the class's first layer (measured at construction) and later ones
        layer = Grouped(out_channels, groups=3)
        if out_channels == 12:
            assert layer(torch.zeros(2, 6, 5)).shape == (2, 12, 5)
            continue
        with pytest.raises(ArgumentError, match=refused):
            layer(torch.zeros(2, 6, 5))
        assert type(layer) is Grouped
    unread = Grouped(10, groups=3)
    for _ in range(2):  # every read: never an empty layer after the first refusal
        with pytest.raises(ArgumentError, match=refused):
            list(unread.parameters())
    registry = LayerRegistry()
    registry.register(Grouped)
    spec = {"type": "Grouped", "args": {"out_channels": 10, "groups": 3}}
    with pytest.raises(SpecError, match=r"^\$\.args: Grouped: torch's Conv1d refuses these arguments"):
        from_spec(spec, registry=registry)


def test_failed_native_construction_leaves_the_layer_unbuilt() -> None:
    layer = Attention(3)  # embed_dim 8 is not divisible by 3 heads
    pending = list(layer.parameters())
    with pytest.raises(ShapeError, match="cannot build MultiheadAttention"):
        layer(torch.zeros(3, 2, 8), torch.zeros(3, 2, 8), torch.zeros(3, 2, 8))
    assert not layer.is_built and type(layer) is Attention
    assert all(a is b for a, b in zip(pending, layer.parameters(), strict=True))
    assert all(isinstance(p, PendingParameter) for p in layer.parameters())


def test_deepcopy_and_pickle_of_built_and_unbuilt_layers() -> None:
    unbuilt = copy.deepcopy(Dense(2))
    assert not unbuilt.is_built and isinstance(unbuilt.weight, PendingParameter)
    assert not pickle.loads(pickle.dumps(Dense(2))).is_built
    layer = Dense(2)
    layer(torch.zeros(1, 3))
    for twin in (copy.deepcopy(layer), pickle.loads(pickle.dumps(layer))):
        assert type(twin) is nn.Linear and torch.equal(twin.weight, layer.weight)
        assert twin.weight is not layer.weight
        assert record_of(twin).arguments == {"out_features": 2, "bias": True, "in_features": None}  # type: ignore[union-attr]


def test_reprs_before_and_after_the_build() -> None:
    assert repr(Dense(5, bias=False)) == "Dense(out_features=5, bias=False, not built)"
    layer = Dense(5)
    layer(torch.zeros(1, 2))
    assert repr(layer) == "Linear(in_features=2, out_features=5, bias=True)"


def test_a_leaf_family_base_without_a_native_class_says_so_when_called() -> None:
    class Bare(LeafLayer):
        pass

    with pytest.raises(NotImplementedError, match="Bare has no native_class: it is a family's base"):
        Bare()(torch.zeros(1))


def test_an_unbuilt_layer_holds_only_module_state_its_record_and_pending_tensors() -> None:
    first, second = Dense(2), Dense(3)
    assert set(first.__dict__) == set(nn.Module().__dict__) | {"_torchx"}
    for key, value in first.__dict__.items():
        if isinstance(value, (dict, set)):
            assert value is not second.__dict__[key], key
    first.register_forward_pre_hook(lambda module, args: None)
    assert not second._forward_pre_hooks


def test_a_built_layer_holds_nothing_of_torchx_but_its_record() -> None:
    layer = Dense(3)
    layer(torch.zeros(1, 2))
    native = nn.Linear(2, 3)
    assert set(layer.__dict__) - set(native.__dict__) == {"_torchx"}


def test_racing_first_calls_build_once() -> None:
    layer = Dense(16)
    x = torch.randn(4, 8)
    barrier = threading.Barrier(8)
    outputs: list[torch.Tensor] = []
    errors: list[BaseException] = []

    def call() -> None:
        barrier.wait()
        try:
            outputs.append(layer(x))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(outputs) == 8
    assert all(torch.equal(output, outputs[0]) for output in outputs)


def test_native_module_of_an_unbuilt_layer_says_how_to_build() -> None:
    with pytest.raises(TorchXError, match=r"not built yet.*torchx\.build"):
        torchx.native_module(Dense(3))


# -- a layer's parameters are checked against its native class when it is defined ----------


def test_a_layer_parameter_the_native_does_not_take_fails_at_class_definition() -> None:
    with pytest.raises(
        TypeError,
        match=r"__init__ parameter 'out_feature' is not a parameter of Linear.*did you mean 'out_features'\?",
    ):

        class Typo(LeafLayer):
            native_class = nn.Linear

            def __init__(self, out_feature: int) -> None:
                super().__init__(out_features=out_feature)


def test_an_inferred_argument_the_native_does_not_take_fails_at_class_definition() -> None:
    with pytest.raises(TypeError, match=r"inferred argument 'in_feature' is not a parameter of Linear"):

        class Typo(LeafLayer):
            native_class = nn.Linear
            inferred_arguments: ClassVar = {"in_feature": FromInput(dim=-1)}

            def __init__(self, out_features: int) -> None:
                super().__init__(out_features=out_features)


def test_keyword_arguments_passed_on_to_a_base_are_followed() -> None:
    class Scaled(nn.Linear):
        def __init__(self, scale: float = 1.0, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.scale = scale

    class Fine(LeafLayer):  # out_features is nn.Linear's, scale is Scaled's own
        native_class = Scaled
        inferred_arguments: ClassVar = {"in_features": FromInput(dim=-1)}

        def __init__(self, out_features: int, *, scale: float = 1.0) -> None:
            super().__init__(out_features=out_features, scale=scale)

    assert Fine(3).arguments == {"out_features": 3, "scale": 1.0}
    with pytest.raises(TypeError, match=r"'scales' is not a parameter of .*Scaled.*did you mean 'scale'"):

        class Typo(LeafLayer):
            native_class = Scaled

            def __init__(self, scales: float) -> None:
                super().__init__(scale=scales)
