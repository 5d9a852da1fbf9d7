"""Named, bounded dynamic dims (``L.Dim``) and ``Functional.dynamic_shapes()`` for torch.export.

On the main of issue 39 a position table of 64 rows sliced by the length was
refused (the second probe, 127, is longer than the table) with a message about
broadcasting, and ``torch.export.export(model, (ids,))`` fixed the batch.
"""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F
import yaml

import torchx.layers as L
from torchx.core import PluginManager, ShapeError, SpecError, TorchXError
from torchx.functional import Dim, Functional, Placeholder

ROWS = 64


def _gpt(length: object) -> Functional:
    torch.manual_seed(0)
    ids = Placeholder((None, length), dtype=torch.long, name="ids")
    b, t = ids.shape
    positions = L.Parameter((ROWS, 16), name="positions", init="normal")(ids)
    h = L.Embedding(100, 16)(ids) + positions[:t]
    q = L.Linear(16)(h).view(b, t, 2, 8).transpose(1, 2)
    y = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    return Functional(inputs=ids, outputs=y.transpose(1, 2).reshape(b, t, 16))


def test_a_table_sliced_by_a_bounded_length_records_and_runs_up_to_the_bound() -> None:
    model = _gpt(Dim("T", max=ROWS))
    assert "ids: (None, T<=64)" in repr(model)
    for length in (1, 5, ROWS):
        ids = torch.randint(0, 100, (2, length))
        assert model(ids).shape == (2, length, 16)
    with pytest.raises(
        ShapeError, match=r"(?s)input 'ids': dim 1 is T<=64, got 65.*L\.Dim\('T', \.\.\.\) with wider bounds"
    ):
        model(torch.randint(0, 100, (2, ROWS + 1)))


def test_without_a_bound_the_refusal_names_the_probes_and_the_fix() -> None:
    with pytest.raises(
        ShapeError, match=r"(?s)works where the dynamic dims are 61 long, not 127.*L\.Dim\('T', max=64\)"
    ):
        _gpt(None)


@pytest.mark.parametrize(
    ("dim", "probes"),
    [
        (Dim("T"), (61, 127)),
        (Dim("T", max=64), (32, 64)),
        (Dim("T", min=200), (200, 266)),
        (Dim("T", min=8, max=20), (10, 20)),
    ],
    ids=["unbounded", "at_most_64", "at_least_200", "between"],
)
def test_the_probes_stay_inside_the_bounds(dim: Dim, probes: tuple[int, int]) -> None:
    x = Placeholder((None, dim, 4))
    assert tuple(meta.shape[1] for meta in x.node.metas) == probes and x.shape == (None, None, 4)


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        (("T", 0, None), "min must be at least 1"),
        (("T", 1, 1), "one size at most"),
        (("not a name", 1, None), "identifier"),
        (("T", 1, 2.5), "bounds are ints"),
    ],
    ids=["empty", "one_size", "bad_name", "float_bound"],
)
def test_a_dim_that_cannot_be_is_refused(arguments: tuple[str, int, object], match: str) -> None:
    name, low, high = arguments
    with pytest.raises(TorchXError, match=match):
        Dim(name, min=low, max=high)  # type: ignore[arg-type]


def test_specs_carry_the_dims(fresh_plugins: PluginManager) -> None:
    model = _gpt(Dim("T", max=ROWS))
    spec = model.to_spec()
    assert spec["inputs"] == {"input": "ids", "shape": [None, {"dim": "T", "max": 64}], "dtype": "int64"}
    for read in (json.loads(json.dumps(spec)), yaml.safe_load(yaml.safe_dump(spec, sort_keys=False))):
        rebuilt = L.Layer.from_spec(read)
        assert isinstance(rebuilt, Functional) and rebuilt.to_spec() == spec
        with pytest.raises(ShapeError, match="T<=64"):
            rebuilt(torch.randint(0, 100, (1, ROWS + 1)))
    spec["inputs"]["shape"][1] = {"dim": "T", "max": 64, "step": 2}
    with pytest.raises(SpecError, match="a named dim is"):
        L.Layer.from_spec(spec)


def test_export_takes_its_dynamic_shapes_from_the_placeholders() -> None:
    model = _gpt(Dim("T", max=ROWS))
    shapes = model.dynamic_shapes()
    assert str(shapes["ids"][0]) == str(torch.export.Dim("batch", min=1)) and shapes["ids"][1].max == ROWS
    exported = torch.export.export(model, (torch.randint(0, 100, (2, 7)),), dynamic_shapes=shapes)
    for shape in ((3, 5), (1, ROWS), (5, 1)):
        ids = torch.randint(0, 100, shape)
        with torch.no_grad():
            assert torch.equal(exported.module()(ids), model(ids))


def test_dims_of_one_name_are_one_dim_for_export() -> None:
    x, y = Placeholder((None, Dim("T"), 4), name="x"), Placeholder((None, Dim("T"), 4), name="y")
    model = Functional(inputs={"x": x, "y": y}, outputs=x * y)
    shapes = model.dynamic_shapes()
    assert shapes["x"][1] is shapes["y"][1] and shapes["x"][0] is shapes["y"][0]
    example = {"x": torch.randn(2, 3, 4), "y": torch.randn(2, 3, 4)}
    exported = torch.export.export(model, (), kwargs=example, dynamic_shapes=shapes)
    bigger = {"x": torch.randn(3, 9, 4), "y": torch.randn(3, 9, 4)}
    assert torch.equal(exported.module()(**bigger), model(**bigger))
