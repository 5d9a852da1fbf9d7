"""Every layer family against its native torch module: inference, weights, outputs, specs."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from layer_cases import CASES, Case
from torch import nn
from torch.nn.parameter import is_lazy

import torchx
import torchx.layers as L
from torchx.core import LeafLayer
from torchx.core import _leaf as leaf_internals
from torchx.core import _memory as memory_internals
from torchx.core._shapes import run_on_meta
from torchx.plugin import closed_form_output


def ids(case: Case) -> str:
    return case.id


def same_outputs(a: object, b: object) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and torch.allclose(a, b, equal_nan=True)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same_outputs(x, y) for x, y in zip(a, b, strict=True))
    return a is None and b is None


def test_every_exported_layer_has_a_case() -> None:
    covered = {type(case.layer()) for case in CASES}
    exported = {
        obj for name in L.__all__ if isinstance(obj := getattr(L, name), type) and issubclass(obj, L.Layer)
    }
    containers = {L.Sequential, L.Checkpoint, L.Layer}  # tested with their own files
    missing = sorted(cls.__name__ for cls in exported - covered - containers)
    assert not missing, f"layers without a parity case: {missing}"


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_same_seed_same_weights_same_outputs_as_native(case: Case) -> None:
    inputs = case.inputs()
    torch.manual_seed(7)
    native = case.native()
    torch.manual_seed(7)
    layer = case.layer()
    torchx.build(layer, *inputs)
    assert type(layer) is type(native)
    assert list(layer.state_dict()) == list(native.state_dict())
    for key, value in native.state_dict().items():
        assert torch.equal(layer.state_dict()[key], value), key
    for mode in ("train", "eval"):
        getattr(native, mode)()
        getattr(layer, mode)()
        torch.manual_seed(3)
        expected = native(*inputs)
        torch.manual_seed(3)
        assert same_outputs(layer(*inputs), expected), mode


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_lazy_build_on_first_call_equals_torchx_build(case: Case) -> None:
    inputs = case.inputs()
    torch.manual_seed(5)
    lazy = case.layer()
    lazy.eval()
    lazy_out = lazy(*inputs)
    torch.manual_seed(5)
    built = torchx.build(case.layer(), *inputs).eval()
    assert same_outputs(built(*inputs), lazy_out)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_output_shape_formulas_agree_with_the_meta_run(case: Case) -> None:
    inputs = case.inputs()
    unbuilt = case.layer()
    shapes = [tuple(x.shape) for x in inputs]
    formula = unbuilt.infer_output_shape(*shapes)  # formulas run before the build
    if formula is None:
        pytest.skip("no closed-form shape: the meta run is the only rule")
    layer = torchx.build(unbuilt, *inputs)
    metas = tuple(torch.empty_like(x, device="meta") for x in inputs)
    ran = run_on_meta(layer, metas)
    assert formula == tuple(ran.shape)
    closed = closed_form_output(
        layer, metas, lambda shape, dtype: torch.empty(shape, dtype=dtype, device="meta")
    )
    assert tuple(closed.shape) == formula and closed.dtype == ran.dtype
    dynamic = (None, *shapes[0][1:])
    assert case.layer().infer_output_shape(dynamic, *shapes[1:])[1:] == formula[1:]


def _counts_its_elements(case: Case) -> bool:
    """Whether the case's family counts its tensors' elements (see ``LeafLayer.tensor_elements``)."""
    return type(case.layer()).tensor_elements.__func__ is not LeafLayer.tensor_elements.__func__  # type: ignore[attr-defined]


@pytest.mark.parametrize("case", [case for case in CASES if _counts_its_elements(case)], ids=ids)
def test_a_family_count_of_tensor_elements_is_what_torch_builds(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the memory check trusts the count: one too low would let an oversized build through unchecked
    counts: list[int | None] = []
    check = leaf_internals.check_allocation

    def counting(layer: LeafLayer, native: type[nn.Module], arguments: dict[str, object], *rest: Any) -> None:
        counts.append(type(layer).tensor_elements(arguments))
        check(layer, native, arguments, *rest)

    monkeypatch.setattr(leaf_internals, "check_allocation", counting)
    layer = torchx.build(case.layer(), *case.inputs())
    assert counts == [sum(tensor.numel() for tensor in (*layer.parameters(), *layer.buffers()))]


def test_counted_layers_of_a_few_kilobytes_never_read_the_free_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unexpected(device: torch.device) -> int:
        raise AssertionError("a small layer read the free memory")

    monkeypatch.setattr(memory_internals, "available_memory", unexpected)
    # bounded from their integer arguments alone: 1.4 PB (groups, stride and padding multiplied in) and 134 GB
    torchx.build(L.Conv2d(576, 5, stride=2, padding=2, groups=576), (1, 576, 14, 14))
    torchx.build(L.Linear(1000), (1, 1024))


@pytest.mark.parametrize("case", [case for case in CASES if case.spec], ids=ids)
def test_spec_round_trip_rebuilds_the_same_layer(case: Case, fresh_plugins: object) -> None:
    layer = case.layer()
    spec = layer.to_spec()
    rebuilt = L.Layer.from_spec(spec)
    assert type(rebuilt) is type(layer)
    assert rebuilt.to_spec() == spec
    inputs = case.inputs()
    torch.manual_seed(11)
    torchx.build(layer, *inputs)
    torch.manual_seed(11)
    torchx.build(rebuilt, *inputs)
    layer.eval()
    rebuilt.eval()
    assert same_outputs(layer(*inputs), rebuilt(*inputs))


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_built_layers_pickle_and_deepcopy(case: Case) -> None:
    import copy
    import pickle

    inputs = case.inputs()
    layer = torchx.build(case.layer(), *inputs).eval()
    expected = layer(*inputs) if not isinstance(layer, (nn.RReLU,)) else None
    for twin in (copy.deepcopy(layer), pickle.loads(pickle.dumps(layer)) if case.spec else None):
        if twin is None:
            continue
        assert type(twin) is type(layer) and torchx.is_built(twin)
        if expected is not None:
            assert same_outputs(twin(*inputs), expected)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_unbuilt_layers_show_the_native_parameter_and_buffer_names(case: Case) -> None:
    layer, native = case.layer(), case.native()
    assert [name for name, _ in layer.named_parameters()] == [name for name, _ in native.named_parameters()]
    assert list(layer.state_dict()) == list(native.state_dict())
    assert all(is_lazy(tensor) for tensor in layer.state_dict().values())


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_loading_a_native_state_dict_builds_the_layer_without_an_input(case: Case) -> None:
    native = case.native()
    inputs = case.inputs()
    layer = case.layer()
    layer.load_state_dict(native.state_dict())
    assert torchx.is_built(layer) is bool(native.state_dict())
    if not native.state_dict():
        return  # nothing to build from: it builds on its first input
    assert type(layer) is type(native)
    native.eval()
    layer.eval()
    torch.manual_seed(3)
    expected = native(*inputs)
    torch.manual_seed(3)
    assert same_outputs(layer(*inputs), expected)


def test_unbuilt_layers_pickle() -> None:
    import pickle

    layer = pickle.loads(pickle.dumps(L.Conv2d(3, 2)))
    assert not layer.is_built
    assert layer(torch.zeros(1, 2, 4, 4)).shape == (1, 3, 3, 3)


def test_public_names_report_torchx_layers_and_pickle_by_it() -> None:
    import pickle

    for name in L.__all__:
        obj = getattr(L, name)
        assert name in dir(L)
        if obj not in (L.Layer, L.FromInput):  # torchx.core's own, re-exported
            assert obj.__module__ == "torchx.layers", name
    data = pickle.dumps(L.Sequential(L.Linear(3), L.View((3,))))
    assert b"torchx.layers._" not in data
    assert [type(layer) for layer in pickle.loads(data)] == [L.Linear, L.Reshape]
