"""A Functional checks each input against its placeholder before running: rank,
static dims after the batch, dtype kind of a non-floating placeholder; and
says which inputs it takes when given too many, too few or unknown ones."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch._dynamo.testing import CompileCounter

import torchx.layers as L
from torchx.core import DtypeError, ShapeError
from torchx.functional import Functional, Placeholder


def adder(name: str | None = None) -> Functional:
    """The issue's reproduction: inputs (None, 1) and (None, 4), added (they broadcast)."""
    a, b = Placeholder((None, 1), name="a"), Placeholder((None, 4), name="b")
    return Functional(inputs=[a, b], outputs=L.Add()([a, b]), name=name)


def test_swapped_inputs_that_broadcast_name_the_input_and_the_swap() -> None:
    model = adder()
    assert model(torch.randn(8, 1), torch.randn(8, 4)).shape == (8, 4)
    with pytest.raises(ShapeError) as caught:
        model(torch.randn(8, 4), torch.randn(8, 1))  # broadcasts to (8, 4) without the check
    assert str(caught.value) == (
        "Functional input 'a': expected shape (None, 1) (dim 0 is the batch), got (8, 4)\n"
        "  fix: inputs swapped? they fit in another order: "
        "'a' takes the tensor given as 'b', 'b' takes the tensor given as 'a'"
    )
    with pytest.raises(ShapeError, match=r"(?s)^Functional input 'a': .*inputs swapped\?"):
        model(b=torch.randn(8, 1), a=torch.randn(8, 4))


def test_one_tensor_too_many_names_the_inputs_and_their_shapes() -> None:
    with pytest.raises(TypeError) as caught:
        adder()(torch.randn(8, 1), torch.randn(8, 4), torch.randn(8, 4))
    assert str(caught.value) == "Functional takes 2 inputs (a: (None, 1), b: (None, 4)), got 3 by position"
    x = Placeholder((None, 3))
    with pytest.raises(TypeError, match=r"^Functional takes 1 input \(x: \(None, 3\)\), got 2 by position$"):
        Functional(inputs=x, outputs=x * 2)(torch.randn(2, 3), torch.randn(2, 3))


def test_missing_and_unknown_inputs_name_the_inputs_and_their_shapes() -> None:
    model = adder(name="adder")
    takes = r"it takes a: \(None, 1\), b: \(None, 4\)$"
    with pytest.raises(TypeError, match=rf"^Functional 'adder' is missing inputs \['b'\]; {takes}"):
        model(torch.randn(8, 1))
    with pytest.raises(TypeError, match=rf"^Functional 'adder' got unexpected inputs \['c'\]; {takes}"):
        model(torch.randn(8, 1), c=torch.randn(8, 4))
    image, ids = Placeholder((None, 3, 8, 8)), Placeholder((None, 5), dtype=torch.long)
    two = Functional(inputs={"image": image, "ids": ids}, outputs=image.flatten()[:, :5] + ids)
    takes = r"it takes image: \(None, 3, 8, 8\), ids: \(None, 5\) torch.int64$"
    with pytest.raises(TypeError, match=rf"unexpected inputs \['meta'\]; {takes}"):
        two({"image": torch.randn(2, 3, 8, 8), "ids": torch.zeros(2, 5, dtype=torch.long), "meta": 1})
    with pytest.raises(TypeError, match=rf"missing inputs \['ids'\]; {takes}"):
        two({"image": torch.randn(2, 3, 8, 8)})


def test_the_right_inputs_of_any_batch_and_any_dynamic_size_run() -> None:
    model = adder()
    for batch in (1, 8, 30):
        assert model(torch.randn(batch, 1), torch.randn(batch, 4)).shape == (batch, 4)
    sequence = Placeholder((None, None, 4))
    lengths = Functional(inputs=sequence, outputs=L.Linear(2)(sequence))
    for batch, length in ((2, 3), (5, 17), (1, 1)):
        assert lengths(torch.randn(batch, length, 4)).shape == (batch, length, 2)
    fixed_batch = Placeholder((8, 3))  # dim 0 is the batch, whatever size it was defined with
    assert Functional(inputs=fixed_batch, outputs=fixed_batch + 1)(torch.randn(30, 3)).shape == (30, 3)
    with pytest.raises(ShapeError, match=r"input 'x': expected shape \(None, None, 4\) .*got \(2, 3, 5\)"):
        lengths(torch.randn(2, 3, 5))


def test_a_tensor_without_the_batch_dim_or_of_other_sizes_is_told_the_fix() -> None:
    image = Placeholder((None, 3, 8, 8), name="image")
    model = Functional(inputs=image, outputs=L.ReLU()(image))
    with pytest.raises(ShapeError) as caught:
        model(torch.randn(3, 8, 8))
    assert caught.value.fix == "add the batch dim: image.unsqueeze(0)"
    with pytest.raises(ShapeError) as caught:
        model(torch.randn(2, 3, 9, 9))  # runs (ReLU takes any size), but the placeholder says 8x8
    assert caught.value.problem == "expected shape (None, 3, 8, 8) (dim 0 is the batch), got (2, 3, 9, 9)"
    assert caught.value.fix == (
        "pass a tensor of that shape; if the model takes other sizes in dims 2, 3, "
        "define its placeholder with None there: Placeholder((None, 3, None, None))"
    )
    with pytest.raises(ShapeError) as caught:
        model(torch.randn(2, 8, 8))  # no order, no added dim fits
    assert caught.value.fix is None


def test_integer_ids_are_checked_by_kind_and_a_floating_placeholder_takes_any_dtype() -> None:
    ids = Placeholder((None, 5), dtype=torch.long, name="ids")
    embed = Functional(inputs=ids, outputs=L.Embedding(10, 3)(ids))
    assert embed(torch.zeros(2, 5, dtype=torch.int32)).shape == (2, 5, 3)  # any integer dtype
    with pytest.raises(DtypeError) as caught:
        embed(torch.zeros(2, 5))
    assert str(caught.value) == (
        "Functional input 'ids': expected integer dtype (the placeholder's is torch.int64), got torch.float32\n"
        "  fix: pass ids.to(torch.int64)"
    )
    pixels = Placeholder((None, 3))
    scale = Functional(inputs=pixels, outputs=pixels.float() / 255)
    assert scale(torch.full((2, 3), 255, dtype=torch.uint8)).eq(1).all()


def test_features_and_ids_swapped_are_told_by_dtype_and_shape() -> None:
    features, ids = (
        Placeholder((None, 5), name="features"),
        Placeholder((None, 5), dtype=torch.long, name="ids"),
    )
    model = Functional(inputs=[features, ids], outputs=features + L.Embedding(10, 1)(ids).squeeze(-1))
    good = (torch.randn(2, 5), torch.zeros(2, 5, dtype=torch.long))
    assert model(*good).shape == (2, 5)
    with pytest.raises(DtypeError, match=r"(?s)^Functional input 'ids': .*\n  fix: inputs swapped\?"):
        model(*reversed(good))


def test_nested_inputs_are_checked_and_named_by_their_path() -> None:
    image, extra = Placeholder((None, 3), name="image"), Placeholder((None, 1), name="extra")
    model = Functional(inputs={"meta": [image, extra]}, outputs=image * extra)
    assert model(meta=[torch.randn(4, 3), torch.randn(4, 1)]).shape == (4, 3)
    with pytest.raises(
        ShapeError,
        match=r"^Functional input inputs\['meta'\]\[0\]: expected shape \(None, 3\) .*got \(4, 1\)\n"
        r"  fix: inputs swapped\? .*inputs\['meta'\]\[0\] takes the tensor given as inputs\['meta'\]\[1\]",
    ):
        model(meta=[torch.randn(4, 1), torch.randn(4, 3)])


def test_a_tensor_subclass_is_checked_as_a_tensor() -> None:
    model = adder()
    weight = nn.Parameter(torch.randn(8, 1))
    assert model(weight, torch.randn(8, 4)).shape == (8, 4)
    with pytest.raises(ShapeError, match="input 'a'"):
        model(nn.Parameter(torch.randn(8, 4)), torch.randn(8, 1))


def test_compile_export_fx_script_and_vmap_keep_working() -> None:
    a, b = Placeholder((None, 1), name="a"), Placeholder((None, 4), name="b")
    model = Functional(inputs=[a, b], outputs=L.Linear(3)(a + b))
    x, y = torch.randn(8, 1), torch.randn(8, 4)
    expected = model(x, y)
    torch._dynamo.reset()
    assert torch._dynamo.explain(model)(x, y).graph_break_count == 0
    assert torch.equal(torch.compile(model, fullgraph=True, backend="eager")(x, y), expected)
    torch._dynamo.reset()
    batch = torch.export.Dim("batch")
    exported = torch.export.export(model, (x, y), dynamic_shapes=({0: batch}, {0: batch}))
    assert exported.module()(torch.randn(3, 1), torch.randn(3, 4)).shape == (3, 3)
    with pytest.raises(ShapeError, match="inputs swapped"):  # export runs the forward on fake tensors
        torch.export.export(model, (y, x))
    assert torch.equal(torch.fx.symbolic_trace(model)(x, y), expected)
    assert torch.equal(torch.jit.script(model)(x, y), expected)
    stacked = torch.vmap(model)(torch.randn(6, 8, 1), torch.randn(6, 8, 4))
    per_example = torch.vmap(model)(torch.randn(6, 1), torch.randn(6, 4))  # inside, each is (1,) and (4,)
    assert stacked.shape == (6, 8, 3) and per_example.shape == (6, 3)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_a_compiled_model_runs_inputs_that_fit_in_one_graph_and_refuses_swapped_ones(dynamic: bool) -> None:
    model = adder()
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(model, backend=counter, dynamic=dynamic)
    batches = range(2, 7) if dynamic else [8, 8, 8]
    for batch in batches:
        x, y = torch.randn(batch, 1), torch.randn(batch, 4)
        assert torch.equal(compiled(x, y), x + y)
    assert (counter.frame_count, counter.op_count) == (1, 1)  # one graph, the add: no break, no recompile
    with pytest.raises(ShapeError, match=r"(?s)^Functional input 'a': .*got \(8, 4\)\n.*inputs swapped\?"):
        compiled(torch.randn(8, 4), torch.randn(8, 1))  # broadcasts to (8, 4) without the check
    with pytest.raises(ShapeError, match=r"input 'a': .*got \(8, 1, 1\)"):
        compiled(torch.randn(8, 1, 1), torch.randn(8, 4))
    x, y = torch.randn(8, 1), torch.randn(8, 4)
    assert torch.equal(compiled(x, y), x + y)


def test_fullgraph_compilation_and_strict_export_refuse_swapped_inputs_naming_the_reason() -> None:
    """A misfit raises by breaking the graph, which fullgraph=True and strict
    export refuse: torch's error then says why, never a silently wrong run."""
    model = adder()
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(model, backend=counter, fullgraph=True)
    x, y = torch.randn(8, 1), torch.randn(8, 4)
    assert torch.equal(compiled(x, y), x + y)
    assert counter.frame_count == 1
    reason = "an input of a TorchX Functional does not fit its placeholder"
    with pytest.raises(torch._dynamo.exc.Unsupported, match=reason):
        compiled(y, x)
    assert torch.equal(compiled(x, y), x + y)
    assert counter.frame_count == 1
    with pytest.raises(torch._dynamo.exc.Unsupported, match=reason):
        torch.export.export(model, (y, x), strict=True)


def test_a_graph_calling_a_functional_on_placeholders_of_the_wrong_shape_is_told() -> None:
    inner = adder()
    a, b = Placeholder((None, 4)), Placeholder((None, 1))
    with pytest.raises(ShapeError, match=r"input 'a': expected shape \(None, 1\) .*got \(None, 4\)"):
        inner(a, b)
