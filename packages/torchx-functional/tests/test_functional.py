"""Functional models: structures, sub-graphs, shared layers, nesting, codegen, interop."""

from __future__ import annotations

import copy
import keyword
import pickle
import unicodedata
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
import torch.nn.functional as F
from nested_graphs import GraphWork, in_sequential, nested_twice
from torch import nn

import torchx
import torchx.layers as L
import torchx.nn as nnx
from torchx.core import PluginManager, ShapeError, TorchXError
from torchx.core.testing import StaticDeviceBackend
from torchx.functional import Functional, Placeholder, accept_placeholders
from torchx.functional._codegen import CODE_GLOBALS, CODE_LOCALS, code_namespace


def wide(text: str) -> str:
    """``text`` in fullwidth letters, which Python reads (NFKC) as ``text``."""
    return "".join(chr(ord(char) + 0xFEE0) for char in text)


def two_tower() -> tuple[dict[str, Placeholder], dict[str, Placeholder]]:
    image = Placeholder((None, 3, 8, 8))
    meta = Placeholder((None, 5))
    features = L.Flatten()(L.ReLU()(L.Conv2d(4, 3)(image)))
    joined = torch.cat([features, L.Linear(6)(meta)], dim=1)
    return {"image": image, "meta": meta}, {"logits": L.Linear(3)(joined), "embedding": joined}


def test_dict_inputs_by_keyword_or_one_dict_and_dict_outputs_in_order() -> None:
    inputs, outputs = two_tower()
    model = Functional(inputs=inputs, outputs=outputs)
    image, meta = torch.randn(2, 3, 8, 8), torch.randn(2, 5)
    by_keyword = model(image=image, meta=meta)
    by_dict = model({"image": image, "meta": meta})
    assert list(by_keyword) == ["logits", "embedding"]
    assert by_keyword["logits"].shape == (2, 3) and by_keyword["embedding"].shape == (2, 4 * 6 * 6 + 6)
    assert all(torch.equal(by_keyword[key], by_dict[key]) for key in by_keyword)


def test_missing_and_extra_inputs_list_the_expected_names() -> None:
    model = Functional(*two_tower())
    with pytest.raises(
        TypeError, match=r"missing inputs \['meta'\]; it takes image: \(None, 3, 8, 8\), meta: \(None, 5\)$"
    ):
        model(image=torch.randn(2, 3, 8, 8))
    with pytest.raises(TypeError, match=r"unexpected inputs \['extra'\]"):
        model({"image": torch.randn(2, 3, 8, 8), "meta": torch.randn(2, 5), "extra": 1})


def test_list_and_nested_structures() -> None:
    a, b, c = Placeholder((2, 3)), Placeholder((2, 3)), Placeholder((2, 3))
    model = Functional(inputs=[a, {"pair": (b, c)}], outputs=(a + b, [b * c, {"sum": a + b + c}]))
    x, y, z = torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3)
    first, (second, third) = model(x, {"pair": (y, z)})
    assert torch.allclose(first, x + y) and torch.allclose(second, y * z)
    assert torch.allclose(third["sum"], x + y + z)


def test_sub_graph_from_an_intermediate_placeholder_skips_unused_branches() -> None:
    x = Placeholder((None, 4))
    hidden = L.Linear(8)(x)
    calls: list[str] = []
    side = L.Linear(2)
    side_out = side(hidden)
    side.register_forward_hook(lambda *_: calls.append("side"))
    head = L.Linear(3)(L.ReLU()(hidden))
    full = Functional(inputs=x, outputs=[head, side_out])
    tail = Functional(inputs=hidden, outputs=head)
    assert tail(torch.randn(5, 8)).shape == (5, 3)
    assert calls == [] and "side" not in dict(tail.named_children())
    full(torch.randn(5, 4))
    assert calls == ["side"]


def test_a_shared_layer_is_one_module_with_one_set_of_parameters() -> None:
    a, b = Placeholder((None, 4)), Placeholder((None, 4))
    shared = L.Linear(5)
    model = Functional(inputs=[a, b], outputs=shared(a) - shared(b))
    assert list(model.state_dict()) == ["linear.weight", "linear.bias"]
    assert sum(p.numel() for p in model.parameters()) == 25
    x = torch.randn(3, 4)
    assert torch.allclose(model(x, x), torch.zeros(3, 5))
    assert "(shared: 25)" in model.node_table()


def test_nesting_in_graphs_sequentials_and_plain_modules() -> None:
    inner_in = Placeholder((None, 4))
    inner = Functional(inputs=inner_in, outputs=L.ReLU()(L.Linear(6)(inner_in)))
    x = Placeholder((None, 4))
    outer = Functional(inputs=x, outputs=L.Linear(2)(inner(x)))
    assert list(outer.state_dict()) == [
        "functional.linear.weight",
        "functional.linear.bias",
        "linear.weight",
        "linear.bias",
    ]
    assert outer(torch.randn(3, 4)).shape == (3, 2)
    chain = L.Sequential(inner, L.Linear(1))
    assert chain(torch.randn(3, 4)).shape == (3, 1)

    class Holder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = outer

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.body(x).sum(dim=1)

    holder = Holder()
    optimizer = torch.optim.SGD(holder.parameters(), lr=0.1)
    assert len(optimizer.param_groups[0]["params"]) == 4
    before = holder.body.linear.weight.clone()
    holder(torch.randn(3, 4)).sum().backward()
    optimizer.step()
    assert not torch.equal(before, holder.body.linear.weight)
    again = Holder()
    again.body = Functional(
        inputs=(y := Placeholder((None, 4))),
        outputs=L.Linear(2)(
            Functional(inputs=(z := Placeholder((None, 4))), outputs=L.ReLU()(L.Linear(6)(z)))(y)
        ),
    )
    again.load_state_dict(holder.state_dict())
    t = torch.randn(3, 4)
    assert torch.allclose(again(t), holder(t))


def test_outputs_that_need_a_missing_input_name_it() -> None:
    a, b = Placeholder((2, 3), name="a"), Placeholder((2, 3), name="meta")
    with pytest.raises(
        TorchXError, match=r"depend on the placeholder 'meta' \(2, 3\), which is not among the inputs"
    ):
        Functional(inputs=a, outputs=a + b)


def test_an_unused_input_is_taken_and_ignored_with_a_warning() -> None:
    """As Keras does: a model's signature may carry an input a later version uses."""
    a, b = Placeholder((None, 3), name="a"), Placeholder((None, 3), name="meta")
    with pytest.warns(torchx.BuildWarning, match=r"input 'meta' \(None, 3\) is not used by any output"):
        model = Functional(inputs=[a, b], outputs=a * 2)
    data = torch.randn(2, 3)
    assert torch.equal(model(data, torch.zeros(5, 3)), data * 2)
    assert torch.equal(model(a=data, meta=None), data * 2)
    with pytest.raises(TypeError, match=r"missing inputs \['meta'\]"):
        model(data)
    with pytest.warns(torchx.BuildWarning, match="'meta'"):
        again = Functional.from_spec(model.to_spec())
    assert [item.name for item in again.inputs] == ["a", "meta"]


def test_two_inputs_with_the_same_name_are_refused() -> None:
    a, b = Placeholder((2, 3), name="x"), Placeholder((2, 3), name="x")
    with pytest.raises(TorchXError, match="two Functional inputs are named 'x'"):
        Functional(inputs=[a, b], outputs=a + b)


def test_wrong_input_shapes_name_the_input_and_its_shape() -> None:
    x = Placeholder((8, 3, 16, 16), name="image")
    model = Functional(inputs=x, outputs=L.Linear(2)(L.Conv2d(4, 3)(x).flatten()))
    with pytest.raises(
        ShapeError,
        match=r"^Functional input 'image': expected shape \(None, 3, 16, 16\) .*got \(8, 3, 20, 20\)",
    ):
        model(torch.randn(8, 3, 20, 20))
    with pytest.raises(ShapeError, match=r"got \(3, 16, 16\)"):
        model(torch.randn(3, 16, 16))


def test_generated_code_reads_like_a_hand_written_forward() -> None:
    x = Placeholder((None, 3, 32, 32))
    stem = L.Conv2d(10, kernel_size=5, stride=2)(x)
    y = L.Conv2d(30, 7, padding=2)(stem) * L.Conv2d(30, 5, padding=1)(stem)
    model = Functional(inputs=x, outputs=L.Linear(10)(y.flatten()))
    body = [line.strip() for line in model.code.splitlines()]
    assert body[body.index("try:") + 1 :][:6] == [
        "conv2d = self.conv2d(x)",
        "conv2d_1 = self.conv2d_1(conv2d)",
        "conv2d_2 = self.conv2d_2(conv2d);  del conv2d",
        "mul = conv2d_1 * conv2d_2;  del conv2d_1, conv2d_2",
        "flatten = mul.flatten(1);  del mul",
        "linear = self.linear(flatten);  del flatten",
    ]
    assert "return linear" in body


def test_state_dict_keys_are_identical_across_two_constructions() -> None:
    def make() -> Functional:
        x = Placeholder((None, 4))
        return Functional(inputs=x, outputs=L.Linear(2)(L.BatchNorm1d()(L.Linear(3)(x))))

    assert list(make().state_dict()) == list(make().state_dict())
    assert list(make().state_dict())[:2] == ["linear.weight", "linear.bias"]


def test_eight_threads_call_one_model() -> None:
    model = Functional(*two_tower()).eval()
    inputs = [(torch.randn(2, 3, 8, 8), torch.randn(2, 5)) for _ in range(32)]
    with torch.no_grad():
        expected = [model(image=a, meta=b)["logits"] for a, b in inputs]

        def call(pair: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
            return model(image=pair[0], meta=pair[1])["logits"]

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(call, inputs))
    assert all(torch.equal(a, b) for a, b in zip(results, expected, strict=True))


def test_torch_compile_fullgraph_and_export() -> None:
    x = Placeholder((None, 3, 8, 8))
    model = Functional(inputs=x, outputs=L.Linear(4)(L.ReLU()(L.Conv2d(4, 3)(x)).flatten())).eval()
    t = torch.randn(2, 3, 8, 8)
    compiled = torch.compile(model, fullgraph=True, backend="eager")
    assert torch.allclose(compiled(t), model(t))
    exported = torch.export.export(model, (t,))
    assert torch.allclose(exported.module()(t), model(t))


def test_pickle_and_deepcopy_regenerate_the_forward() -> None:
    model = Functional(*two_tower()).eval()
    image, meta = torch.randn(2, 3, 8, 8), torch.randn(2, 5)
    expected = model(image=image, meta=meta)["logits"]
    for twin in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert torch.equal(twin(image=image, meta=meta)["logits"], expected)
        assert twin.conv2d is not model.conv2d


def test_summary_counts_parameters_like_torch() -> None:
    model = Functional(*two_tower())
    text = model.node_table()
    total = sum(p.numel() for p in model.parameters())
    assert f"total parameters: {total:,}" in text
    assert "(None, 3, 8, 8)" in text and "Conv2d (conv2d)" in text


def test_summary_names_the_inputs_first() -> None:
    # Before: the summary listed the layers only, neither input's name nor its shape.
    pixels, metadata = Placeholder((None, 3, 8, 8), name="pixels"), Placeholder((None, 4), name="metadata")
    features = torch.cat([L.Flatten()(L.Conv2d(2, 3)(pixels)), metadata], dim=1)
    summary = Functional([pixels, metadata], L.Linear(3)(features)).summary()
    assert summary.inputs == (("pixels", (None, 3, 8, 8)), ("metadata", (None, 4)))
    lines = str(summary).splitlines()
    assert lines[3].split() == ["pixels", "Input", "(None,", "3,", "8,", "8)", "0", "0"]
    assert lines[4].split() == ["metadata", "Input", "(None,", "4)", "0", "0"]
    assert '"inputs": [' in summary.to_json()


def test_replacing_a_submodule_changes_what_the_forward_calls() -> None:
    x = Placeholder((None, 3))
    model = Functional(inputs=x, outputs=L.Linear(2)(x))
    replacement = torch.nn.Linear(3, 2)
    model.linear = replacement
    t = torch.randn(4, 3)
    assert torch.equal(model(t), replacement(t))
    del model.linear
    with pytest.raises(AttributeError):
        model(t)


def test_input_names_are_kept_never_silently_changed() -> None:
    """An input's name is what callers use (keyword, dict key, messages); the
    generated forward gives it a safe variable where the name cannot be one."""
    mask = Placeholder((2, 3))
    model = Functional(inputs={"_mask": mask}, outputs=mask * 2)
    assert torch.equal(model(_mask=torch.ones(2, 3)), torch.full((2, 3), 2.0))
    for name in ("self", "type", "class", "a b", "torch", "F", "error", "_MISSING", "getattr", "", "1st"):
        x = Placeholder((2, 3))
        model = Functional(inputs={name: x}, outputs=x + 1)
        assert [item.name for item in model.inputs] == [name]
        t = torch.full((2, 3), 4.0)
        by_name = [model(**{name: t})] if name != "self" else []  # nn.Module.__call__ takes self
        for result in (model(t), model({name: t}), *by_name):
            assert torch.equal(result, torch.full((2, 3), 5.0))
        with pytest.raises(TypeError, match=r"unexpected inputs \['nothing'\]"):
            model(t, nothing=t)


def test_a_nested_model_whose_inputs_are_containers_records_as_one_node() -> None:
    a, b = Placeholder((None, 3)), Placeholder((None, 3))
    inner = Functional(inputs=[[a], b], outputs=L.Linear(2)(a + b))
    p, q = Placeholder((None, 3)), Placeholder((None, 3))
    outer = Functional(inputs=[p, q], outputs=inner([p], q))
    assert list(dict(outer.named_children())) == ["functional"]
    t, u = torch.randn(4, 3), torch.randn(4, 3)
    assert torch.allclose(outer(t, u), inner([t], u))


def test_submodules_replaced_through_modules_are_used() -> None:
    x = Placeholder((None, 3))
    model = Functional(inputs=x, outputs=L.Linear(4)(x))
    model._modules["linear"] = replacement = torch.nn.Linear(3, 7)
    assert model(torch.randn(2, 3)).shape == (2, 7)
    twin = copy.deepcopy(model)
    twin._modules["linear"] = torch.nn.Linear(3, 5)
    assert twin(torch.randn(2, 3)).shape == (2, 5) and model.linear is replacement


def test_summary_numbers_match_torchinfo() -> None:
    torchinfo = pytest.importorskip(
        "torchinfo", reason="needs torchinfo: pip install torchinfo (in the test extra)"
    )
    image, meta = Placeholder((None, 3, 8, 8)), Placeholder((None, 5))
    shared = L.Linear(6)
    joined = torch.cat([L.Flatten()(L.ReLU()(L.Conv2d(4, 3)(image))), shared(meta), shared(meta)], dim=1)
    model = Functional(inputs={"image": image, "meta": meta}, outputs=L.Linear(3)(joined))
    report = torchinfo.summary(
        model, input_data={"image": torch.randn(2, 3, 8, 8), "meta": torch.randn(2, 5)}, verbose=0
    )
    text = model.node_table()
    assert f"total parameters: {report.total_params:,} (trainable {report.trainable_params:,}" in text
    rows = {line.split()[0]: line for line in text.splitlines()[2:-1]}
    assert (
        rows["conv2d"].endswith("112")
        and rows["linear"].endswith("36")
        and rows["linear_1_1"].endswith("471")
    )
    assert "relu" in rows and "(shared: 36)" in rows["linear_1"]


def test_a_functional_is_an_nnx_module_placed_by_its_scope(fresh_plugins: PluginManager) -> None:
    fresh_plugins.register(StaticDeviceBackend({"void": torch.device("meta")}), "static")
    x = L.Placeholder((None, 4))
    model = L.Functional(inputs=x, outputs=L.Linear(2)(L.Linear(8)(x)) * 2)
    assert isinstance(model, nnx.Module)
    with torchx.device_scope("void"):
        assert model(torch.zeros(3, 4)).is_meta
    assert all(p.is_meta for p in model.parameters())


def test_torchx_summarize_of_a_dict_input_graph_agrees_with_torchinfo() -> None:
    torchinfo = pytest.importorskip(
        "torchinfo", reason="needs torchinfo: pip install torchinfo (in the test extra)"
    )
    image, meta = Placeholder((None, 3, 8, 8)), Placeholder((None, 5))
    joined = torch.cat([L.Flatten()(L.Conv2d(4, 3)(image)), L.Linear(6)(meta)], dim=1)
    model = Functional(inputs={"image": image, "meta": meta}, outputs=L.Linear(3)(joined))
    summary = torchx.summarize(model, (2, 3, 8, 8), (2, 5))
    report = torchinfo.summary(
        model, input_data={"image": torch.randn(2, 3, 8, 8), "meta": torch.randn(2, 5)}, verbose=0
    )
    assert (summary.total_parameters, summary.activation_bytes) == (
        report.total_params,
        report.total_output_bytes,
    )
    assert {row.path: row.output_shape for row in summary.rows}[""] == (2, 3)


def test_the_diamond_graph_has_its_branches_and_merge() -> None:
    pytest.importorskip("graphviz", reason="needs graphviz: pip install graphviz (in the test extra)")
    from torchx.core._graph import model_graph

    x = Placeholder((8, 3, 32, 32))
    stem = L.Conv2d(10, kernel_size=5, stride=2)(x)
    joined = L.Conv2d(30, kernel_size=7, padding=2)(stem) * L.Conv2d(30, kernel_size=5, padding=1)(stem)
    inner = L.Sequential(L.Linear(80), L.ReLU())
    model = Functional(inputs=x, outputs=L.Linear(10)(inner(joined.flatten())))
    graph = model_graph(model, (None, 3, 32, 32))
    by_label: dict[str, list[str]] = {}
    for node in graph.nodes.values():
        by_label.setdefault(node.label, []).append(node.id)
    [mul] = by_label["mul"]
    assert len([edge for edge in graph.edges if edge[1] == mul]) == 2  # the merge of two branches
    [stem_id] = [n for n in by_label["Conv2d"] if graph.nodes[n].detail == "(None, 10, 14, 14)"]
    assert len([edge for edge in graph.edges if edge[0] == stem_id]) == 2  # the branch
    assert graph.nodes[by_label[".flatten()"][0]].detail == "(None, 4320)"  # dim 0: this run's batch
    [functional] = graph.root.clusters
    assert functional.label == "Functional" and [c.label for c in functional.clusters] == ["Sequential"]


def test_layers_in_a_graph_are_torchs_classes_and_a_shared_one_is_called_again() -> None:
    shared = L.Linear(5)
    a, b = Placeholder((None, 4)), Placeholder((None, 4))
    first = shared(a)
    assert type(shared) is nn.Linear  # built by the first call, on placeholders
    model = Functional([a, b], first + shared(b))
    assert list(model.state_dict()) == ["linear.weight", "linear.bias"]
    x, y = torch.randn(2, 4), torch.randn(2, 4)
    assert torch.allclose(model(x, y), shared(x) + shared(y))


def test_plain_torch_modules_join_a_graph_once_they_accept_placeholders() -> None:
    from torchx.functional import accept_placeholders

    plain = accept_placeholders(nn.Linear(3, 4))
    x = Placeholder((None, 3))
    model = Functional(x, plain(x).relu())
    data = torch.randn(5, 3)
    assert torch.equal(model(data), plain(data).relu())


def test_a_layer_whose_input_size_changed_is_named_by_its_attribute() -> None:
    x = Placeholder((None, 6))
    model = Functional(x, L.Linear(2)(L.Linear(4)(x)))
    model(torch.zeros(3, 6))
    model.linear = torchx.build(L.Linear(4), (1, 7))  # replaced by a layer built for other inputs
    with pytest.raises(
        ShapeError, match=r"^Functional\.linear Linear: got input \(3, 6\).*in_features=6 \(built with 7\)"
    ):
        model(torch.zeros(3, 6))


def test_a_functional_scripts_and_traces_like_the_hand_written_model() -> None:
    x = Placeholder((None, 3, 8, 8))
    model = Functional(x, L.Linear(4)(L.Flatten()(L.ReLU()(L.Conv2d(2, 3)(x))))).eval()
    data = torch.randn(2, 3, 8, 8)
    assert torch.equal(torch.jit.script(model)(data), model(data))
    assert torch.equal(torch.fx.symbolic_trace(model)(data), model(data))


MERGES = ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concat"]


@pytest.mark.parametrize("merge", MERGES, ids=MERGES)
def test_torch_fx_traces_a_functional_merging_two_inputs(merge: str) -> None:
    a, b = Placeholder((None, 4), name="a"), Placeholder((None, 4), name="b")
    model = Functional([a, b], L.Linear(3)(getattr(L, merge)()([a, b])))
    x, y = torch.randn(5, 4), torch.randn(5, 4)
    traced = torch.fx.symbolic_trace(model)  # was "merge layers combine tensors only, got Proxy, Proxy"
    assert torch.equal(traced(x, y), model(x, y))
    assert torch.equal(traced(y, x), model(y, x))


def test_an_input_named_like_a_node_after_nfkc_keeps_its_own_value() -> None:
    """Python reads the identifier ``relu`` in fullwidth letters as ``relu``: the input
    must not become the variable of the F.relu node."""
    a, b = Placeholder((None, 3), name=wide("relu")), Placeholder((None, 3), name="b")
    model = Functional(inputs=[a, b], outputs=F.relu(b) + a)
    result = model(torch.full((2, 3), 5.0), torch.zeros(2, 3))
    assert torch.equal(result, torch.full((2, 3), 5.0))
    assert "def forward(self, relu=_MISSING, b=_MISSING, /, *_extra, **_keywords):" in model.code
    assert "relu_1 = F.relu(b, inplace=False)" in model.code
    assert "add = relu_1 + relu" in model.code
    assert torch.equal(model(**{wide("relu"): torch.ones(2, 3), "b": torch.zeros(2, 3)}), torch.ones(2, 3))
    assert torch.equal(model(relu=torch.ones(2, 3), b=torch.zeros(2, 3)), torch.ones(2, 3))
    assert [item.name for item in model.inputs] == [wide("relu"), "b"]


@pytest.mark.parametrize(
    "name",
    # read as self, torch, class, type, x2, H and file
    [wide("self"), wide("torch"), wide("class"), wide("type"), wide("x") + "\u00b2", "\u210c", "\ufb01le"],
)
def test_names_that_normalise_to_reserved_names_or_keywords_work(name: str) -> None:
    x = Placeholder((None, 3), name=name)
    y = torch.cat([F.relu(x), x.flatten()], dim=1).to(torch.float64)
    model = Functional(inputs=x, outputs={name: y})
    t = torch.full((2, 3), 2.0)
    expected = torch.full((2, 6), 2.0, dtype=torch.float64)
    assert torch.equal(model(t)[name], expected)
    assert torch.equal(model(**{name: t})[name], expected)
    compile(model.code, "<check>", "exec")  # every variable is an identifier already in NFKC form
    assert all(unicodedata.normalize("NFKC", line) == line for line in model.code.splitlines()[:1])


def test_two_input_names_equal_after_nfkc_are_refused_naming_both() -> None:
    a, b = Placeholder((2, 3), name="x"), Placeholder((2, 3), name=wide("x"))
    with pytest.raises(TorchXError, match=f"'x' and '{wide('x')}' are the same Python identifier"):
        Functional(inputs=[a, b], outputs=a + b)
    c, d = Placeholder((2, 3)), Placeholder((2, 3))
    with pytest.raises(TorchXError, match="'\ufb01' and 'fi' are the same Python identifier"):  # a ligature
        Functional(inputs={"\ufb01": c, "fi": d}, outputs=c + d)
    e, f = Placeholder((2, 3)), Placeholder((2, 3))
    with pytest.raises(TorchXError, match=f"'pair' and '{wide('pair')}' are the same Python identifier"):
        Functional(inputs={"pair": [e], wide("pair"): f}, outputs=e + f)
    g, h = Placeholder((2, 3), name="pair"), Placeholder((2, 3))
    model = Functional(inputs={"pair": [g], "other": [h]}, outputs=g + h)  # an entry, and an input in another
    assert torch.equal(model(pair=[torch.ones(2, 3)], other=[torch.ones(2, 3)]), torch.full((2, 3), 2.0))


def test_names_that_only_differ_as_variables_stay_distinct_inputs() -> None:
    a, b, c = Placeholder((2, 3)), Placeholder((2, 3)), Placeholder((2, 3))
    model = Functional(inputs={"a b": a, "a_b": b, "torch": c}, outputs=a + 10 * b + 100 * c)
    one = torch.ones(2, 3)
    assert torch.equal(model(one, 2 * one, 3 * one), torch.full((2, 3), 321.0))
    assert torch.equal(model({"a b": one, "a_b": 2 * one, "torch": 3 * one}), torch.full((2, 3), 321.0))
    assert torch.equal(model(**{"a b": one, "a_b": 2 * one, "torch": 3 * one}), torch.full((2, 3), 321.0))
    with pytest.raises(TypeError, match=r"unexpected inputs \['torch_1'\]"):
        model(one, 2 * one, torch_1=3 * one)  # the variable is not a name callers use
    with pytest.raises(TypeError, match=r"got input 'a b' twice"):
        model(one, 2 * one, 3 * one, **{"a b": one})
    with pytest.raises(TypeError, match=r"missing inputs \['torch'\]"):
        model(one, 2 * one)


def test_module_attributes_from_class_names_are_normalised_and_never_the_models_own() -> None:
    forward_like = type(wide("Forward"), (nn.Identity,), {})  # snake-cased and read as forward
    torch_like = type(wide("Torch"), (nn.Identity,), {})
    x = Placeholder((None, 3), name="self")
    y = accept_placeholders(torch_like())(accept_placeholders(forward_like())(x)) * 2
    model = Functional(inputs=x, outputs=y)
    assert list(dict(model.named_children())) == ["forward_1", "torch"]
    assert torch.equal(model(torch.ones(2, 3)), torch.full((2, 3), 2.0))


def test_the_namespace_hands_out_normalised_identifiers_only() -> None:
    namespace = code_namespace()
    claimed = [
        namespace.claim(base)
        for base in (
            wide("torch"),
            "x\u00b2",
            "class",
            "_constant_0",
            "",
            "1x",
            "a-b",
            "x\u0301",
            "x",
            wide("x"),
            "x",
        )
    ]
    assert claimed[:6] == ["torch_1", "x2", "_class", "_constant_0", "value", "_1x"]
    assert len(set(claimed)) == len(claimed)
    for name in claimed:
        assert name.isidentifier() and unicodedata.normalize("NFKC", name) == name
        assert not keyword.iskeyword(name) and name not in {*CODE_LOCALS, *CODE_GLOBALS}


def test_a_nested_input_of_the_wrong_shape_is_named_by_its_path() -> None:
    image, extra = Placeholder((None, 3), name="image"), Placeholder((None, 2), name="extra")
    model = Functional(inputs=[{"foo": image, "bar": extra}], outputs=L.Linear(2)(image) + extra)
    model({"foo": torch.zeros(4, 3), "bar": torch.zeros(4, 2)})
    with pytest.raises(
        ShapeError, match=r"^Functional input inputs\[0\]\['foo'\]: expected shape \(None, 3\)"
    ):
        model({"foo": torch.zeros(4, 5), "bar": torch.zeros(4, 2)})
    named = Functional(inputs={"meta": [image, extra]}, outputs=L.Linear(2)(image) + extra)
    with pytest.raises(
        ShapeError, match=r"^Functional input inputs\['meta'\]\[1\]: expected shape \(None, 2\)"
    ):
        named(meta=[torch.zeros(4, 3), torch.zeros(4, 7)])


def test_a_dict_model_whose_first_input_is_a_list_is_called_every_way() -> None:
    a, b, c = Placeholder((None, 3)), Placeholder((None, 3)), Placeholder((None, 3))
    model = Functional(inputs={"pair": [a, b], "c": c}, outputs=a + 10 * b + 100 * c)
    one = torch.ones(2, 3)
    expected = torch.full((2, 3), 321.0)
    pair = [one, 2 * one]
    for result in (model(pair, 3 * one), model({"pair": pair, "c": 3 * one}), model(pair=pair, c=3 * one)):
        assert torch.equal(result, expected)
    with pytest.raises(TypeError, match=r"missing inputs \['c'\]"):
        model({"pair": pair})
    with pytest.raises(ShapeError, match=r"^Functional input inputs\['pair'\]\[1\]: expected shape"):
        model([one, torch.ones(2, 4)], one)
    p, q, r = Placeholder((None, 3)), Placeholder((None, 3)), Placeholder((None, 3))
    assert model([p, q], r).shape == (None, 3)  # on placeholders: one node of a graph


def test_a_functional_with_dict_outputs_nests_inside_another_graph() -> None:
    inputs, outputs = two_tower()
    tower = Functional(inputs=inputs, outputs=outputs)
    image, meta = Placeholder((None, 3, 8, 8)), Placeholder((None, 5))
    result = tower(image=image, meta=meta)
    assert set(result) == {"logits", "embedding"} and result["logits"].shape == (None, 3)
    outer = Functional(inputs=[image, meta], outputs={"score": L.Linear(1)(result["embedding"]), **result})
    data = (torch.randn(2, 3, 8, 8), torch.randn(2, 5))
    got = outer(*data)
    expected = tower(image=data[0], meta=data[1])
    assert list(got) == ["score", "logits", "embedding"]
    assert torch.equal(got["logits"], expected["logits"])
    assert "['embedding']" in outer.code
    again = Functional.from_spec(outer.to_spec())
    again.load_state_dict(outer.state_dict())
    assert torch.equal(again(*data)["score"], got["score"])


def test_two_scripted_functionals_of_one_signature_keep_their_own_forwards() -> None:
    x = Placeholder((None, 4))
    plus, times = torch.jit.script(Functional(x, x + 1)), torch.jit.script(Functional(x, x * 3))
    ones = torch.ones(2, 4)
    assert torch.equal(plus(ones), ones + 1) and torch.equal(times(ones), ones * 3)


def test_nested_inputs_dict_outputs_and_recurrent_state_script() -> None:
    x, y, z = (
        Placeholder((None, 4), name="x"),
        Placeholder((None, 3), name="y"),
        Placeholder((None, 3), name="z"),
    )
    sequence = Placeholder((None, 5, 4), name="sequence")
    output, (hidden, _) = accept_placeholders(nn.LSTM(4, 6, batch_first=True))(sequence)
    model = Functional(
        inputs=[(x, [y, z]), {"sequence": sequence}],
        outputs={"sum": L.Linear(3)(x) + y + z, "last": output[:, -1] + hidden[0]},
    ).eval()
    data = [(torch.randn(2, 4), [torch.randn(2, 3), torch.randn(2, 3)]), {"sequence": torch.randn(2, 5, 4)}]
    scripted, expected = torch.jit.script(model)(*data), model(*data)
    assert scripted.keys() == expected.keys()
    assert all(torch.allclose(scripted[key], expected[key]) for key in expected)


def test_inputs_torchscript_cannot_type_are_named() -> None:
    x, y = Placeholder((None, 4)), Placeholder((None, 3))
    model = Functional(inputs=[[x, [y]]], outputs=L.Linear(2)(x) + L.Linear(2)(y))
    with pytest.raises(TorchXError, match=r"'inputs_0' holds a list of Tensor and list\[Tensor\]"):
        torch.jit.script(model)


def test_a_functional_defined_in_a_meta_scope_allocates_nothing(fresh_plugins: PluginManager) -> None:
    fresh_plugins.register(StaticDeviceBackend({"meta": torch.device("meta")}), "static")
    with torchx.device_scope("meta"):
        x = Placeholder((None, 100_000))
        model = Functional(x, L.Linear(10)(L.Linear(200_000)(x)))  # 80 GB of float32 weights
    assert {parameter.device.type for parameter in model.parameters()} == {"meta"}
    assert sum(parameter.numel() for parameter in model.parameters()) == 20_002_200_010


def test_a_functional_defined_in_a_scope_takes_its_dtype(fresh_plugins: PluginManager) -> None:
    fresh_plugins.register(StaticDeviceBackend({"cpu": torch.device("cpu")}), "static")
    with torchx.device_scope("cpu", dtype=torch.float64):
        x = Placeholder((None, 4))
        model = Functional(x, L.Linear(3)(x))
    assert {parameter.dtype for parameter in model.parameters()} == {torch.float64}
    assert model(torch.randn(2, 4, dtype=torch.float64)).dtype == torch.float64


def test_plots_name_inputs_and_outputs_and_draw_a_recurrent_result_as_one_node() -> None:
    from torchx.core._graph import model_graph

    tokens = Placeholder((None, 7, 4), name="tokens")
    out, (h, c) = accept_placeholders(nn.LSTM(4, 6, batch_first=True))(tokens)
    model = Functional(tokens, {"class": L.Linear(3)(out[:, -1]), "state": h[0] + c[0]})
    graph = model_graph(model, (2, 7, 4))
    labels = [node.label for node in graph.nodes.values()]
    assert "tokens" in labels and "class" in labels and "state" in labels
    assert not any(label.startswith(("input", "output")) for label in labels)
    assert (
        labels.count("LSTM") == 1 and labels.count("getitem") == 3
    )  # out[:, -1], h[0], c[0]: no tuple splits


def test_a_deep_copy_of_a_graph_with_a_recurrent_layer_runs_its_own_weights() -> None:
    x = Placeholder((None, 5, 4))
    model = Functional(x, accept_placeholders(nn.LSTM(4, 3, batch_first=True))(x)[0])
    copied = copy.deepcopy(model)
    with torch.no_grad():
        for parameter in copied.parameters():
            parameter.zero_()
    data = torch.randn(2, 5, 4)
    assert torch.equal(copied(data), torch.zeros(2, 5, 3))
    assert not torch.equal(model(data), torch.zeros(2, 5, 3))
    assert torch.equal(pickle.loads(pickle.dumps(model))(data), model(data))


# -- nested graphs: worked out once per input shape, not once per enclosing call -------


@pytest.mark.parametrize("inner_batch", [None, 2])
def test_a_graph_nested_twice_per_level_is_worked_out_once_per_level(
    monkeypatch: pytest.MonkeyPatch, inner_batch: int | None
) -> None:
    """Calling a Functional on placeholders used to run its whole forward on
    meta tensors, each nested call included: 2**depth Linear runs to define
    the model. Now each graph's steps run once per probe of a dynamic batch,
    also where the inner graph was defined on another batch (2) than its
    callers use (None)."""
    runs = {}
    for depth in (4, 8, 12):
        work = GraphWork(monkeypatch)
        model = nested_twice(depth, inner_batch)
        assert model(Placeholder((None, 4))).shape == (None, 4)
        runs[depth] = (work.linear_runs, work.graph_runs)
    linear_runs = runs[4][0]
    assert linear_runs <= 3 and runs == {depth: (linear_runs, 2 * (depth + 1)) for depth in (4, 8, 12)}


def test_a_nested_graph_answers_each_input_shape_once_and_keeps_what_its_output_shares() -> None:
    x = Placeholder((None, 4))
    view = Functional(inputs=x, outputs=x[:, :2])
    dropped = Functional(inputs=x, outputs=L.Dropout(0.5)(x))
    new = Functional(inputs=x, outputs=x * 2)
    y = Placeholder((None, 4))
    for _ in range(2):  # the second call is answered from what the first worked out
        assert [model(y).node.fresh for model in (view, dropped, new)] == [False, False, True]
    assert view(Placeholder((3, 4))).shape == (3, 2)
    linear = Functional(inputs=x, outputs=L.Linear(4)(x))
    twice = Functional(inputs=y, outputs=linear(linear(y)))
    with pytest.raises(
        ShapeError, match=r"Functional input 'x': expected shape \(None, 4\) .*got \(None, 5\)"
    ):
        twice(Placeholder((None, 5)))  # a meta run checks what a layer's formula would not


def test_a_nested_graph_whose_layer_is_replaced_is_worked_out_again() -> None:
    x = Placeholder((None, 4))
    inner = Functional(inputs=x, outputs=L.Linear(4)(x))
    y = Placeholder((None, 4))
    outer = Functional(inputs=y, outputs=inner(y) + 1)
    assert outer(Placeholder((None, 4))).shape == (None, 4)
    inner.linear = nn.Linear(4, 7)
    assert outer(Placeholder((None, 4))).shape == (None, 7)
    del inner.linear
    with pytest.raises(AttributeError):
        outer(Placeholder((None, 4)))
    inner._modules["linear"] = nn.Linear(4, 3)
    assert outer(Placeholder((None, 4))).shape == (None, 3)
    outer.double()
    assert "dtype=torch.float64" in repr(outer(Placeholder((None, 4), dtype=torch.float64)))


def test_a_graph_nested_twice_runs_its_one_linear_two_to_the_depth_times() -> None:
    model = nested_twice(5)
    (key_weight, weight), (key_bias, bias) = model.state_dict().items()
    assert key_weight == "functional." * 5 + "linear.weight" and key_bias.endswith("linear.bias")
    t = torch.randn(3, 4)
    expected = t
    for _ in range(2**5):
        expected = F.linear(expected, weight, bias)
    for twin in (model, copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert torch.allclose(twin(t), expected, atol=1e-5)
        assert "_torchx_known" not in twin.__dict__ or twin is model


@pytest.mark.parametrize("building", [False, True], ids=["built", "building"])
def test_a_graph_nested_twice_per_level_in_a_sequential_is_worked_out_once_per_level(
    monkeypatch: pytest.MonkeyPatch, building: bool
) -> None:
    """An ``L.Sequential`` holding the graph ran on a meta copy whose graphs ran
    their whole forwards (2**depth Linear runs), or in place where it was
    building (a new Linear beside the graph). Now the graphs in it answer from
    what they worked out: the work grows by the same amount at each level."""
    runs = {}
    for depth in (4, 8, 12):
        work = GraphWork(monkeypatch)
        model = nested_twice(depth, wrap=in_sequential(building))
        assert model(Placeholder((None, 4))).shape == (None, 4)
        runs[depth] = (work.linear_runs, work.graph_runs)
    first, per_level = runs[4][0], (runs[12][0] - runs[4][0]) // 8
    assert per_level <= (7 if building else 0)  # the runs of each level's own new Linear
    assert runs == {depth: (first + per_level * (depth - 4), 2 * (depth + 1)) for depth in (4, 8, 12)}
    assert not any("_torchx_answering" in vars(module) for module in model.modules())
    assert model(torch.randn(3, 4)).shape == (3, 4)


def test_a_layer_replaced_anywhere_below_a_graph_changes_its_answer() -> None:
    """Answers stand while the modules below are the same: a layer of an
    ``L.Sequential`` in the graph replaced, added, removed, a setting or a
    hook changed, each changes what the graph (and one calling it) gives."""
    x = Placeholder((None, 4))
    sequential = L.Sequential(nn.Linear(4, 4))
    inner = Functional(inputs=x, outputs=sequential(x))
    y = Placeholder((None, 4))
    outer = Functional(inputs=y, outputs=inner(y) * 2)

    def shapes() -> list[tuple[int | None, ...]]:
        given = Placeholder((None, 4))
        return [inner(given).shape, outer(given).shape, tuple(outer(torch.zeros(3, 4)).shape)]

    assert shapes() == [(None, 4), (None, 4), (3, 4)]
    sequential[0] = nn.Linear(4, 7)
    assert shapes() == [(None, 7), (None, 7), (3, 7)]
    sequential.append(nn.AdaptiveAvgPool1d(5))
    assert shapes() == [(None, 5), (None, 5), (3, 5)]
    sequential[1].output_size = 3
    assert shapes() == [(None, 3), (None, 3), (3, 3)]
    del sequential[1]
    assert shapes() == [(None, 7), (None, 7), (3, 7)]
    sequential[0].register_forward_hook(lambda module, args, output: output[:, :2])
    assert shapes() == [(None, 2), (None, 2), (3, 2)]


def test_a_graph_answers_for_a_hook_on_a_graph_inside_it() -> None:
    """A nested graph's own answer leaves out its hooks: a meta run, not the answer, runs them."""
    x = Placeholder((None, 4))
    inner = Functional(inputs=x, outputs=L.Linear(4)(x))
    y = Placeholder((None, 4))
    outer = Functional(inputs=y, outputs=inner(y) + 1)
    assert outer(Placeholder((None, 4))).shape == (None, 4)
    inner.register_forward_hook(lambda module, args, output: torch.cat([output, output], dim=1))
    assert outer(Placeholder((None, 4))).shape == (None, 8) and outer(torch.zeros(3, 4)).shape == (3, 8)


def test_a_nested_graph_returning_its_input_is_no_new_memory_in_a_graph_calling_it() -> None:
    """An answer kept from one call was the input of that call, not of the next one."""
    x = Placeholder((None, 4))
    passing = Functional(inputs=x, outputs=[x, x * 2])
    y = Placeholder((None, 4))
    first = Functional(inputs=y, outputs=passing(y)[0])
    assert [first(Placeholder((None, 4))).node.fresh for _ in range(2)] == [False, False]


def test_what_a_caller_changes_in_an_answer_is_its_own() -> None:
    class Widening(nn.Module):
        def __init__(self, graph: Functional) -> None:
            super().__init__()
            self.graph = graph

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.graph(x).unsqueeze_(1)

    x = Placeholder((None, 4))
    inner = Functional(inputs=x, outputs=L.Linear(4)(x))
    widening = accept_placeholders(Widening(inner))
    for _ in range(2):
        assert widening(Placeholder((None, 4))).shape == (None, 1, 4)
        assert inner(Placeholder((None, 4))).shape == (None, 4)


def test_graphs_building_in_threads_around_one_graph_leave_its_forward_as_it_was() -> None:
    """A build runs the modules holding a graph in place, the graph answering
    meta calls meanwhile; the last build to end puts its plain forward back.
    Graphs calling it answer each thread's input shapes."""
    x = Placeholder((None, 4))
    shared = Functional(inputs=x, outputs=L.Linear(4)(x))
    plain = shared.__dict__["forward"]
    y = Placeholder((None, 4))
    outer = Functional(inputs=y, outputs=shared(shared(y)))

    def define(index: int) -> list[tuple[int | None, ...]]:
        built = L.Sequential(shared, L.Linear(index % 3 + 1))(Placeholder((None, 4)))
        return [built.shape, outer(Placeholder((index % 5, 4))).shape]

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(define, range(64))) == [[(None, i % 3 + 1), (i % 5, 4)] for i in range(64)]
    assert shared.__dict__["forward"] is plain and "_torchx_answering" not in shared.__dict__


def test_a_copy_made_in_a_meta_run_answers_from_its_original_and_runs_real_inputs() -> None:
    from torchx.functional._answers import MetaAnswers
    from torchx.functional._placeholder import _answering

    model = nested_twice(2)
    t = torch.randn(3, 4)
    with _answering():
        copied, pickled = copy.deepcopy(model), pickle.loads(pickle.dumps(model))
    assert isinstance(copied.__dict__["forward"], MetaAnswers)
    assert copied(torch.empty(6, 4, device="meta")).shape == (6, 4) and "_torchx_known" in vars(model)
    assert torch.equal(copied(t), model(t)) and torch.equal(pickled(t), model(t))
    assert not isinstance(pickled.__dict__["forward"], MetaAnswers)
