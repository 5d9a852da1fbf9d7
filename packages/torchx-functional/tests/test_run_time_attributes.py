"""``x.dtype`` and ``x.device`` on placeholders are read at run time.

On the main of issue 39 ``cos.to(x.dtype)`` recorded float32: after
``model.to(torch.bfloat16)`` the forward failed with ``mat1 and mat2 must have
the same dtype``, naming nothing of the graph.
"""

from __future__ import annotations

import json

import pytest
import torch

import torchx.layers as L
from torchx.core import PluginManager, TorchXError
from torchx.functional import Functional, Placeholder


def _rotary(x: torch.Tensor, t: int) -> torch.Tensor:
    """Hugging Face's pattern: a table made in float32, cast to the activations' dtype."""
    angles = torch.arange(t, device=x.device).float()[:, None] * torch.arange(1, 5, device=x.device).float()
    cos = torch.cat([angles.cos(), angles.cos()], -1).to(x.dtype)
    return x * cos + torch.ones((t, 8), dtype=x.dtype, device=x.device)


def _graph() -> tuple[Functional, L.Linear]:
    x = Placeholder((None, None, 8), name="x")
    linear = L.Linear(8)
    return Functional(inputs=x, outputs=_rotary(linear(x), x.shape[1])), linear


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=str)
def test_casts_to_an_activations_dtype_follow_the_model(dtype: torch.dtype) -> None:
    model, linear = _graph()
    model.to(dtype)
    value = torch.randn(2, 5, 8, dtype=dtype)
    out = model(value)
    assert out.dtype == dtype and torch.equal(out, _rotary(linear(value), 5))
    assert "to(x.dtype)" not in model.code and ".to(linear.dtype)" in model.code


def test_under_autocast_the_graph_has_eagers_dtype() -> None:
    model, linear = _graph()
    value = torch.randn(2, 5, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, expected = model(value), _rotary(linear(value), 5)
    assert out.dtype == expected.dtype == torch.bfloat16 and torch.equal(out, expected)


def test_a_constant_cast_to_a_value_of_the_graph_is_a_method_a_spec_names(
    fresh_plugins: PluginManager,
) -> None:
    x = Placeholder((None, 8), name="x")
    model = Functional(inputs=x, outputs=x + torch.arange(8).to(x.device).to(dtype=x.dtype))
    spec = model.to_spec()
    assert '{"dtype_of": "x"}' in json.dumps(spec) and '{"device_of": "x"}' in json.dumps(spec)
    rebuilt = L.Layer.from_spec(json.loads(json.dumps(spec)))
    assert isinstance(rebuilt, Functional) and rebuilt.to_spec() == spec
    value = torch.randn(3, 8, dtype=torch.float64)
    rebuilt.double()
    assert torch.equal(rebuilt(value), value + torch.arange(8).double())


def test_a_dtype_compares_where_the_answer_holds_at_every_run() -> None:
    x, ids = Placeholder((None, 8), name="x"), Placeholder((None, 8), dtype=torch.long, name="ids")
    assert x.dtype == x.dtype and ids.dtype == torch.long and ids.dtype != torch.int32
    assert x.dtype != torch.long and ids.dtype != torch.float32 and (ids.dtype == x.dtype) is False
    for compare in (
        lambda: x.dtype == torch.float32,
        lambda: x.dtype != torch.float16,
        lambda: x.dtype == (x * 2).dtype,
    ):
        with pytest.raises(TorchXError, match=r"x\.dtype .*follows model\.to\(torch\.float64\) and autocast"):
            compare()


@pytest.mark.parametrize(
    ("use", "match"),
    [
        (lambda x: x.dtype.itemsize, r"x\.dtype\.itemsize needs the dtype"),
        (lambda x: x.dtype.is_signed, r"x\.dtype\.is_signed needs the dtype"),
        (lambda x: x.device == "cpu", r"x\.device == 'cpu' needs the device .*model\.to\(device\)"),
        (lambda x: x.device.type, r"x\.device\.type needs the device"),
    ],
    ids=["itemsize", "is_signed", "device_compared", "device_type"],
)
def test_what_needs_a_value_of_a_dtype_or_device_at_definition_is_refused(use, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TorchXError, match=match):
        use(Placeholder((None, 8), name="x"))


def test_an_error_inside_the_forward_names_the_step_and_the_line_that_recorded_it() -> None:
    x = Placeholder((None, 8), name="x")
    table = L.Parameter((8, 8))(x)
    model = Functional(inputs=x, outputs=L.Linear(8)(x) @ table.to(torch.float64))  # the line named below
    line = (
        test_an_error_inside_the_forward_names_the_step_and_the_line_that_recorded_it.__code__.co_firstlineno
        + 3
    )
    with pytest.raises(RuntimeError, match="same dtype") as info:
        model(torch.randn(2, 8))
    assert f"raised in Functional step 'matmul' (defined at {__file__}:{line})" in info.value.__notes__


def test_a_dtype_answers_its_kind_and_the_recorded_dtype_is_asked_for_by_name() -> None:
    x, ids = Placeholder((None, 8), name="x"), Placeholder((None, 8), dtype=torch.long, name="ids")
    assert x.dtype.is_floating_point and not ids.dtype.is_floating_point and not x.dtype.is_complex
    assert (x.recorded_dtype, ids.recorded_dtype) == (torch.float32, torch.long)  # a converter's decision
    alike = Placeholder((None, 2), dtype=ids.dtype)  # another input declared with its dtype
    assert "dtype=torch.int64" in repr(alike)


def test_a_layer_call_is_defined_where_the_user_called_it() -> None:
    """In an editable install each distribution has its own torchx folder: none of them is the user's code."""
    out = L.Linear(8)(Placeholder((None, 8)))
    assert out.node.defined_at == (
        __file__,
        test_a_layer_call_is_defined_where_the_user_called_it.__code__.co_firstlineno + 2,
    )
