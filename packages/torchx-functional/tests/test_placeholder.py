"""Placeholders: recorded operations, shapes at definition time, batch flexibility."""

from __future__ import annotations

import operator
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch_features import META_CHECKS_IDS_AND_DTYPES

import torchx.layers as L
from torchx.core import DtypeError, LayerError, ShapeError, TorchXError
from torchx.functional import Functional, Placeholder


def seed_diamond() -> tuple[Placeholder, Placeholder]:
    xp_input = L.Placeholder((8, 3, 32, 32))
    xp = L.Conv2d(10, kernel_size=5, stride=2)(xp_input)
    branch1 = L.Conv2d(30, kernel_size=7, padding=2)(xp)
    branch2 = L.Conv2d(30, kernel_size=5, padding=1)(xp)
    xp = branch1 * branch2
    xp = xp.flatten()
    xp = L.Linear(80)(xp)
    xp = L.Linear(10)(xp)
    return xp_input, xp


def test_the_seed_diamond_example_runs_verbatim() -> None:
    xp_input, xp = seed_diamond()
    model = L.Functional(inputs=xp_input, outputs=xp)
    x = torch.randn((8, 3, 32, 32))
    y = model(x)
    assert y.size() == (8, 10)
    assert model.linear.in_features == 4320


def test_a_graph_defined_on_batch_8_runs_on_any_batch() -> None:
    model = Functional(*seed_diamond())
    assert model(torch.randn(30, 3, 32, 32)).shape == (30, 10)
    assert model(torch.randn(1, 3, 32, 32)).shape == (1, 10)


def test_shapes_dtype_and_names() -> None:
    x = Placeholder((None, 3, 32, 32), dtype=torch.float64, name="image")
    y = L.Conv2d(8, kernel_size=3)(x)
    assert (x.shape, x.name) == ((None, 3, 32, 32), "image") and "dtype=torch.float64" in repr(x)
    assert y.shape == (None, 8, 30, 30) and "dtype=torch.float64" in repr(y)
    assert y.flatten().shape == (None, 7200)
    model = Functional(inputs=x, outputs=y)
    assert model.conv2d.weight.dtype == torch.float64
    assert "def forward(self, image=_MISSING, *_extra, **_keywords)" in model.code


def check(build: Callable[..., object], *shapes: tuple[int, ...]) -> None:
    """The graph recorded by ``build`` on placeholders equals ``build`` run eagerly."""
    placeholders = [Placeholder(shape) for shape in shapes]
    model = Functional(inputs=placeholders, outputs=build(*placeholders))
    for batch in (shapes[0][0], 5):
        tensors = [torch.randn(batch, *shape[1:]) + 2.0 for shape in shapes]
        expected = build(*tensors)
        got = model(*tensors)
        flat_expected = expected if isinstance(expected, (list, tuple)) else [expected]
        flat_got = got if isinstance(got, (list, tuple)) else [got]
        for a, b in zip(flat_got, flat_expected, strict=True):
            assert torch.allclose(a.float(), b.float(), equal_nan=True)


@pytest.mark.parametrize(
    ("build", "shapes"),
    [
        pytest.param(lambda a, b: a + b - a * b / (b + 3.0), [(2, 4), (2, 4)], id="arithmetic"),
        pytest.param(lambda a, b: (-a) ** 2 + 2**b, [(2, 4), (2, 4)], id="negation-powers"),
        pytest.param(lambda a, b: a @ b.transpose(1, 2), [(2, 3, 4), (2, 5, 4)], id="matmul"),
        pytest.param(
            lambda a, b: ((a > b) | (a <= 1.0)).float() + (a == a).float() - (a != b).float(),
            [(2, 4), (2, 4)],
            id="comparisons",
        ),
        pytest.param(
            lambda a: a[:, 1:3] * a[:, None, 0].squeeze(1).unsqueeze(-1), [(2, 5)], id="slices-squeeze"
        ),
        pytest.param(lambda a: a[..., -1] + a[:, 0], [(2, 4, 4)], id="ellipsis"),
        pytest.param(
            lambda a: a.view(a.shape[0], -1).reshape(a.shape[0], 3, 4).permute(0, 2, 1).transpose(1, 2),
            [(2, 12)],
            id="view-reshape-permute",
        ),
        pytest.param(lambda a: a.flatten(1) + a.reshape(a.shape[0], -1), [(2, 3, 4)], id="flatten"),
        pytest.param(
            lambda a, b: torch.cat([a, b], dim=1) + torch.stack([a, b], dim=1).sum(dim=1).repeat(1, 2),
            [(2, 3), (2, 3)],
            id="cat-stack-repeat",
        ),
        pytest.param(
            lambda a: torch.split(a, 2, dim=1)[1] * a.chunk(3, dim=1)[0], [(2, 6)], id="split-chunk"
        ),
        pytest.param(
            lambda a: a.sum(dim=1) + a.mean(dim=1) + a.max(dim=1).values + torch.max(a, 1)[0],
            [(2, 6)],
            id="reductions",
        ),
        pytest.param(lambda a: F.relu(a) + F.softmax(a, dim=-1) + torch.tanh(a), [(2, 6)], id="activations"),
        pytest.param(lambda a, b: torch.where(a > b, a, b), [(2, 6), (2, 6)], id="where"),
        pytest.param(lambda a: abs(a) % 3 // 1, [(2, 6)], id="abs-mod-floordiv"),
    ],
)
def test_recorded_operations_equal_eager_evaluation(
    build: Callable[..., object], shapes: list[tuple[int, ...]]
) -> None:
    check(build, *shapes)


def test_a_shape_error_at_definition_names_the_operation_and_shapes() -> None:
    a, b = Placeholder((8, 3)), Placeholder((8, 4))
    with pytest.raises(ShapeError, match=r"^add: cannot take \(\(8, 3\), \(8, 4\)\)"):
        a + b
    with pytest.raises(
        ShapeError, match=r"^Sequential\[0\] Conv2d: expected input of shape \(N, C_in, H, W\)"
    ):
        L.Sequential(L.Conv2d(3, 3))(a)
    with pytest.raises(ShapeError, match=r"^cat: cannot take"):
        torch.cat([a, b], dim=0)


def test_a_recorded_call_with_a_formula_gives_what_torch_gives_or_its_refusal() -> None:
    """Recorded calls answered by a shape formula (a copying reshape, an
    attention) give torch's shapes, dtypes and layouts under each probe, and
    torch's refusal where the formula has no answer."""
    q = Placeholder((None, 4, 7, 16))
    merged = q.transpose(1, 2).reshape(-1, 7, 64)
    attended = F.scaled_dot_product_attention(q, q, q, dropout_p=0.1)
    assert (merged.shape, attended.shape, attended.node.meta.dtype) == (
        (None, 7, 64),
        (None, 4, 7, 16),
        torch.float32,
    )
    for probe in (0, 1):
        meta = q.node.meta_under(probe)
        assert merged.node.meta_under(probe).stride() == meta.transpose(1, 2).reshape(-1, 7, 64).stride()
    with pytest.raises(ShapeError, match=r"^Tensor.reshape: cannot take"):
        q.reshape(-1, 5)


def test_a_layer_error_on_a_dynamic_placeholder_shows_the_dim_as_none() -> None:
    with pytest.raises(ShapeError, match=r"got \(None, 32, 32\) \(3-d\)") as info:
        L.Conv2d(8, 3)(Placeholder((None, 32, 32)))
    assert "61" not in str(info.value) and "unsqueeze" not in str(info.value)


def test_view_with_the_defined_batch_size_keeps_the_batch_flexible() -> None:
    x = Placeholder((8, 4, 5))
    model = Functional(inputs=x, outputs=x.view(8, -1))
    assert model(torch.randn(3, 4, 5)).shape == (3, 20)
    assert "view(x.shape[0], -1)" in model.code


def test_placeholder_dims_must_be_non_negative_ints_or_none() -> None:
    for shape in [(-1, 3), (2.5, 3), ("8", 3), (True, 3)]:
        with pytest.raises(TorchXError, match="every dim must be a non-negative int, None"):
            Placeholder(shape)  # type: ignore[arg-type]


def test_placeholders_refuse_python_control_flow() -> None:
    x = Placeholder((2, 3))
    with pytest.raises(TorchXError, match="no truth value"):
        bool(x > 0)
    with pytest.raises(TorchXError, match="cannot be iterated"):
        list(x)


def test_a_real_tensor_beside_placeholders_is_a_constant_of_ops_and_refused_by_layers() -> None:
    x = Placeholder((2, 3))
    model = Functional(x, x + torch.ones(3))
    assert torch.equal(model(torch.zeros(2, 3)), torch.ones(2, 3)) and "self.constant" in model.code
    with pytest.raises(TorchXError, match="mix of placeholders and a real tensor"):
        L.Bilinear(4)(x, torch.ones(2, 3))


def test_a_plain_torch_module_with_parameters_says_to_use_the_layer() -> None:
    x = Placeholder((2, 3))
    y = torch.nn.Linear(3, 4)(x)  # its parameters are read as tensors of a layer the graph does not call
    with pytest.raises(TorchXError, match=r"use the TorchX layer .*accept_placeholders\(module\)"):
        Functional(x, y)
    assert torch.nn.ReLU()(Placeholder((2, 3))).shape == (2, 3)


def test_operators_record_reflected_forms() -> None:
    x = Placeholder((2, 3))
    model = Functional(inputs=x, outputs=[1.0 - x, 2.0 / (x + 1), operator.neg(x)])
    t = torch.rand(2, 3)
    a, b, c = model(t)
    assert torch.allclose(a, 1.0 - t) and torch.allclose(b, 2.0 / (t + 1)) and torch.equal(c, -t)


def test_every_operator_records_its_operator_function() -> None:
    x, y = Placeholder((3, 3)), Placeholder((3, 3))
    ints = Placeholder((3, 3), dtype=torch.int64)

    def recorded(out: Placeholder, function: Callable[..., object], *args: object) -> bool:
        nodes = tuple(arg.node if isinstance(arg, Placeholder) else arg for arg in args)
        return out.node.kind == "function" and out.node.target is function and out.node.args == nodes

    for name, left, other in [
        *((name, x, 2.0) for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")),
        ("matmul", x, y),
        *((name, ints, 1) for name in ("and", "or", "xor")),
    ]:
        function = getattr(operator, name if hasattr(operator, name) else f"{name}_")  # and_, or_
        assert recorded(getattr(left, f"__{name}__")(other), function, left, other), name
        assert recorded(getattr(left, f"__r{name}__")(other), function, other, left), f"r{name}"
    for name in ("lt", "le", "gt", "ge", "eq", "ne"):
        assert recorded(getattr(operator, name)(x, 0.5), getattr(operator, name), x, 0.5), name
    unary = [(operator.neg, x), (operator.pos, x), (operator.abs, x), (operator.invert, ints)]
    for function, operand in unary:
        assert recorded(function(operand), function, operand), function.__name__
    assert recorded(x[:, 0], operator.getitem, x, (slice(None), 0))
    assert recorded(2.0**x, operator.pow, 2.0, x) and recorded(x @ y, operator.matmul, x, y)


def test_in_place_operations_are_refused_at_definition() -> None:
    x = Placeholder((8, 6))
    for record in (
        lambda: x.mul_(0),
        lambda: x.unsqueeze_(0),
        lambda: torch.relu_(x),
    ):
        with pytest.raises(TorchXError, match="works in place, which a graph cannot record"):
            record()
    assert x.shape == (8, 6)


def test_nested_tuple_indices_and_builtin_named_results() -> None:
    check(lambda a: a[:, (0, 1)] + a[:, [2, 0]], (2, 3, 4))
    check(
        lambda a: (
            a.type(torch.float64).float()
            + a.isnan().float()
            + F.pad(a, (0, 0), value=float("nan")).nan_to_num()
        ),
        (2, 3),
    )


def test_reshape_functions_keep_the_batch_flexible() -> None:
    x = Placeholder((8, 42))
    model = Functional(inputs=x, outputs=torch.reshape(x, (8, 6, 7)) + x.reshape(shape=(x.shape[0], 6, 7)))
    assert model(torch.ones(5, 42)).shape == (5, 6, 7)


def test_any_string_names_a_placeholder_and_only_strings_do() -> None:
    for name in ("image", "\uff53\uff45\uff4c\uff46", "a b", "", "class", "torch"):
        assert Placeholder((2, 3), name=name).name == name
    with pytest.raises(TorchXError, match="Placeholder name must be a string, got 3"):
        Placeholder((2, 3), name=3)  # type: ignore[arg-type]


def test_new_empty_and_empty_like_run_as_their_zero_filled_twins() -> None:
    """Uninitialised memory would show whatever a freed tensor held there."""
    x = Placeholder((None, 64))
    outputs = [x.new_empty((x.shape[0], 4096)), torch.empty_like(x), x.new_empty(3, 5, dtype=torch.int64)]
    model = Functional(inputs=x, outputs=outputs)
    assert "size = x.size(0)" in model.code and "x.new_zeros((size, 4096))" in model.code
    assert "torch.zeros_like(x)" in model.code
    assert "empty" not in model.code
    for _ in range(3):
        junk = torch.full((8, 4096), 7.0)
        del junk
        empty, like, ints = model(torch.ones(8, 64))
        assert empty.shape == (8, 4096) and like.shape == (8, 64) and ints.dtype == torch.int64
        assert not empty.any() and not like.any() and not ints.any()


def test_constructors_of_uninitialised_memory_without_a_zero_twin_are_refused() -> None:
    x = Placeholder((2, 3))
    for record, name in (
        (lambda: x.new(2, 3), "Tensor.new"),
        (lambda: x.new_empty_strided((2, 3), (3, 1)), "Tensor.new_empty_strided"),
        (lambda: x.resize(4, 4), "Tensor.resize"),
        (lambda: x.resize_as(torch.nn.functional.pad(x, (0, 2))), "Tensor.resize_as"),
    ):
        with pytest.raises(TorchXError, match=rf"{name} .*uninitialised memory.*new_zeros"):
            record()


def test_a_layer_built_on_a_placeholder_is_the_one_built_on_a_tensor() -> None:
    # a leaf with a formula builds without a meta run: same weights for the same seed, same output shapes
    torch.manual_seed(0)
    ids = Placeholder((None, None), dtype=torch.long)
    h = L.LayerNorm()(L.Linear(6)(L.Embedding(11, 4)(ids)))
    assert h.shape == (None, None, 6)
    model = Functional(ids, h)
    torch.manual_seed(0)
    eager = L.Sequential(L.Embedding(11, 4), L.Linear(6), L.LayerNorm())
    eager(torch.zeros(1, 1, dtype=torch.long))
    assert [tuple(p.shape) for p in model.parameters()] == [tuple(p.shape) for p in eager.parameters()]
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), eager.parameters(), strict=True))


def test_hooks_of_an_unbuilt_layer_run_when_it_is_called_on_a_placeholder() -> None:
    layer = L.Linear(3)
    layer.register_forward_pre_hook(
        lambda module, inputs: (inputs[0][..., :2],)
    )  # it builds for what the hook gives
    assert layer(Placeholder((None, 5))).shape == (None, 3) and layer.in_features == 2
    seen: list[str] = []
    handle = torch.nn.modules.module.register_module_forward_hook(lambda *_: seen.append("called"))
    try:
        assert L.Linear(2)(Placeholder((None, 5))).shape == (None, 2)
    finally:
        handle.remove()
    assert seen  # a global hook runs too


def test_layers_alike_on_alike_shapes_build_alike_and_each_is_still_checked() -> None:
    # What one layer worked out on placeholders serves the next of its class, arguments and input
    # shapes (a transformer's repeated blocks); another shape, or a misfit, is worked out again.
    x, y = Placeholder((None, None, 8)), Placeholder((None, None, 6))
    first, second, other = L.Linear(4), L.Linear(4), L.Linear(4)
    assert first(x).shape == second(x).shape == other(y).shape == (None, None, 4)
    assert [layer.in_features for layer in (first, second, other)] == [8, 8, 6]
    assert second.weight.shape == (4, 8) and second.weight is not first.weight
    for _ in range(2):  # a refusal is never remembered as an answer
        with pytest.raises(ShapeError, match="in_features=8 was given"):
            L.Linear(4, in_features=8)(y)
        with pytest.raises(ShapeError, match="dynamic"):
            L.Linear(4)(Placeholder((None, 5, None)))
    assert L.Linear(4, in_features=8)(x).shape == (None, None, 4)


# -- a layer's formula gives shapes; dtypes are torch's, as in its first call ------


@pytest.mark.parametrize(
    ("make", "dtype"),
    [
        pytest.param(lambda: L.Embedding(10, 4), torch.float32, id="float ids into an embedding"),
        pytest.param(lambda: L.Embedding(10, 4), torch.bool, id="bool ids into an embedding"),
        pytest.param(lambda: L.Dropout(0.1), torch.int64, id="integers into dropout"),
    ],
)
@pytest.mark.skipif(
    not META_CHECKS_IDS_AND_DTYPES,
    reason="this torch's meta kernels take these dtypes: its first real call refuses them",
)
def test_a_layer_on_a_placeholder_refuses_the_dtype_its_first_call_refuses(
    make: Callable[[], torch.nn.Module], dtype: torch.dtype
) -> None:
    with pytest.raises(LayerError) as eager:
        make()(torch.zeros(2, 3, dtype=dtype))
    with pytest.raises(LayerError) as recorded:
        make()(Placeholder((None, 3), dtype=dtype))
    assert type(recorded.value) is type(eager.value)
    # what TorchX says is the same; torch's own words differ between the CPU and meta kernels
    said = str(eager.value).replace("(2, 3)", "(None, 3)").split(": ")[:2]
    assert str(recorded.value).split(": ")[:2] == said
    assert recorded.value.fix == eager.value.fix


@pytest.mark.skipif(
    not META_CHECKS_IDS_AND_DTYPES,
    reason="this torch's meta kernels take these dtypes: its first real call refuses them",
)
def test_float_ids_into_an_embedding_say_it_takes_integer_ids_also_when_it_is_built() -> None:
    embed = L.Embedding(10, 4)
    embed(Placeholder((None, 3), dtype=torch.long))
    for layer in (L.Embedding(10, 4), embed):
        with pytest.raises(DtypeError, match=r"it takes integer ids \(torch.long or torch.int\)") as caught:
            layer(Placeholder((None, 3)))
        assert caught.value.fix == "pass the ids as integers: x.long()"


def test_a_layer_on_a_placeholder_has_the_output_dtype_of_its_call() -> None:
    x = Placeholder((None, 3), dtype=torch.long)
    model = Functional(inputs=x, outputs=L.Linear(2)(L.Sigmoid()(x)))  # the sigmoid of integers is float32
    data = torch.arange(6).view(2, 3)
    assert torch.equal(model(data), model.linear(torch.sigmoid(data)))
