"""Random DAGs of placeholder operations and layers: the Functional model's
outputs equal an eager run of the same operations with the same layers, on
the batch size the placeholders were defined with and on another; and so do
the gradients, with in-place layers and values that share memory (views,
identities, dropout in eval mode) anywhere in the graph, the caller's inputs
untouched."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from report import Report

import torchx.layers as L

pytest.importorskip("torchx.functional")

OPS = [
    "linear",
    "shared",
    "relu",
    "norm",
    "tanh",
    "sigmoid",
    "add",
    "sub",
    "mul",
    "scale",
    "concat",
    "flatten",
    "relu_",
    "view",
    "identity",
    "dropout",
]
IN_PLACE_OPS = {"relu_"}
"""Ops run by a layer with ``inplace=True``: the eager reference computes their value out of place."""


@dataclass(frozen=True)
class Step:
    op: str
    operands: tuple[int, ...]
    constant: float = 1.0


@dataclass(frozen=True)
class Dag:
    inputs: int
    features: int
    batch: int
    steps: tuple[Step, ...]
    outputs: tuple[int, ...]
    structure: str  # "single", "list" or "dict"


@st.composite
def dags(draw: st.DrawFn) -> Dag:
    inputs = draw(st.integers(1, 3))
    steps: list[Step] = []
    for _ in range(draw(st.integers(1, 12))):
        nodes = inputs + len(steps)
        op = draw(st.sampled_from(OPS))
        arity = 2 if op in ("add", "sub", "mul", "concat") else 1
        operands = tuple(draw(st.integers(0, nodes - 1)) for _ in range(arity))
        steps.append(Step(op, operands, draw(st.sampled_from([-1.5, 0.5, 2.0]))))
    nodes = inputs + len(steps)
    outputs = draw(st.lists(st.integers(0, nodes - 1), min_size=1, max_size=3, unique=True))
    for unused in sorted(set(range(inputs)) - _ancestors(inputs, steps, outputs)):
        steps.append(Step("add", (outputs[0], unused)))  # an input no output uses would warn
        outputs[0] = inputs + len(steps) - 1
    outputs = tuple(outputs)
    structure = draw(st.sampled_from(["single", "list", "dict"] if len(outputs) == 1 else ["list", "dict"]))
    return Dag(inputs, draw(st.integers(1, 6)), draw(st.integers(2, 4)), tuple(steps), outputs, structure)


def _ancestors(inputs: int, steps: list[Step], outputs: list[int]) -> set[int]:
    """The nodes that some output depends on (outputs included)."""
    seen, stack = set(), list(outputs)
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            if node >= inputs:
                stack.extend(steps[node - inputs].operands)
    return seen


def evaluate(dag: Dag, inputs: list[Any], layers: dict[int, torch.nn.Module]) -> Any:
    """Run ``dag`` on placeholders or tensors; layers are made on the first run
    (``layers`` is filled) and reused on later ones."""
    values = list(inputs)
    for index, step in enumerate(dag.steps):
        x = values[step.operands[0]]
        y = values[step.operands[-1]]
        if step.op in ("linear", "relu", "norm", "concat", "shared", "relu_", "identity", "dropout"):
            if index not in layers:
                earlier = [i for i, s in enumerate(dag.steps[:index]) if s.op == "linear"]
                if step.op == "shared" and earlier:
                    layers[index] = layers[earlier[-1]]
                else:
                    layers[index] = {
                        "relu": L.ReLU,
                        "norm": L.LayerNorm,
                        "relu_": lambda: L.ReLU(inplace=True),
                        "identity": L.Identity,
                        "dropout": lambda: L.Dropout(0.5),
                    }.get(step.op, lambda: L.Linear(dag.features))()
            layer = layers[index]
            if step.op in IN_PLACE_OPS and isinstance(x, torch.Tensor):
                value = torch.relu(x)  # the value the graph means
            else:
                value = layer(torch.cat([x, y], dim=1)) if step.op == "concat" else layer(x)
        elif step.op == "view":
            value = x.view(x.shape[0], -1)
        elif step.op == "tanh":
            value = x.tanh()
        elif step.op == "sigmoid":
            value = x.sigmoid()
        elif step.op == "flatten":
            # On placeholders flatten() keeps the batch dim: eagerly, that is flatten(1).
            value = x.flatten(1) if isinstance(x, torch.Tensor) else x.flatten()
        elif step.op == "add":
            value = x + y
        elif step.op == "sub":
            value = x - y
        elif step.op == "mul":
            value = x * y
        else:
            value = x * step.constant
        values.append(value)
    chosen = [values[i] for i in dag.outputs]
    if dag.structure == "single":
        return chosen[0]
    if dag.structure == "list":
        return chosen
    return {f"out{i}": value for i, value in zip(dag.outputs, chosen, strict=True)}


def _flat(output: Any) -> list[torch.Tensor]:
    if isinstance(output, torch.Tensor):
        return [output]
    return list(output.values()) if isinstance(output, dict) else list(output)


@settings(max_examples=1000)
@given(dag=dags(), other_batch=st.integers(1, 6))
def test_a_functional_model_computes_what_its_operations_compute(
    dag: Dag, other_batch: int, report: Report
) -> None:
    placeholders = [L.Placeholder((dag.batch, dag.features)) for _ in range(dag.inputs)]
    layers: dict[int, torch.nn.Module] = {}
    graph_outputs = evaluate(dag, placeholders, layers)
    model = L.Functional(inputs=placeholders if dag.inputs > 1 else placeholders[0], outputs=graph_outputs)
    model.eval()
    for batch in (dag.batch, other_batch):
        tensors = [torch.randn(batch, dag.features) for _ in range(dag.inputs)]
        kept = [tensor.clone() for tensor in tensors]
        with torch.no_grad():
            got = model(*tensors)
            expected = evaluate(dag, tensors, layers)
        assert all(torch.equal(tensor, copy) for tensor, copy in zip(tensors, kept, strict=True))
        assert type(got) is type(expected)
        if isinstance(expected, dict):
            assert list(got) == list(expected)
        for g, e in zip(_flat(got), _flat(expected), strict=True):
            assert g.shape == e.shape
            torch.testing.assert_close(g, e, rtol=0, atol=0, equal_nan=True)
    _same_gradients(model, dag, layers, other_batch)
    report.count("fuzz", "random Functional DAGs (each on two batch sizes, values and gradients)")


def _same_gradients(model: torch.nn.Module, dag: Dag, layers: dict[int, torch.nn.Module], batch: int) -> None:
    """The model's input gradients equal the eager run's: no in-place step
    overwrote what a backward reads (autograd would raise) or a value still in use."""
    inputs = [torch.randn(batch, dag.features, requires_grad=True) for _ in range(dag.inputs)]
    twins = [tensor.detach().clone().requires_grad_() for tensor in inputs]
    sum(output.sum() for output in _flat(model(*inputs))).backward()
    sum(output.sum() for output in _flat(evaluate(dag, twins, layers))).backward()
    for got, expected in zip(inputs, twins, strict=True):
        if expected.grad is None:
            assert got.grad is None or not got.grad.any()
        else:
            torch.testing.assert_close(got.grad, expected.grad, rtol=1e-5, atol=1e-6)
