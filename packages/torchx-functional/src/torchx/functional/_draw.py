"""``Functional.draw_graph``: the recorded DAG, with branches, merges and nested models."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from torch.utils._pytree import tree_leaves

from torchx.functional._program import Step, Var
from torchx.plugin import layer_caption

if TYPE_CHECKING:
    from torchx.functional._functional import Functional
    from torchx.plugin import Graph

__all__ = ["draw_program"]


def draw_program(model: Functional, graph: Graph, inputs: list[str]) -> list[str]:
    """Draw ``model``'s steps inside a box; each step is fed by the steps it reads."""
    program = model._torchx_program
    batch = _batch(graph.next_output(model))
    defined = [item.shape[0] for item in program.input_list() if item.shape]
    with graph.cluster("Functional"):
        placed: dict[str, str] = {}
        items = program.input_list()
        if len(items) == len(inputs):
            placed.update(zip((program.variables[item.name] for item in items), inputs, strict=True))
        else:  # fed by one structured value: every input node reads it
            placed.update(
                (program.variables[item.name], graph.node(item.name, "", "op", inputs)) for item in items
            )
        produced = {step.var: step for step in program.steps}
        for step in program.steps:
            sources = list(dict.fromkeys(placed[var.name] for var in _vars((step.args, step.kwargs))))
            if _part_of_a_result(step, produced):  # (out, (h, c)) of an LSTM is its one node
                placed[step.var] = sources[0]
                continue
            if step.kind == "module":
                outputs = graph.draw(model.get_submodule(step.target), sources)
                placed[step.var] = (
                    outputs[0] if len(outputs) == 1 else graph.node("outputs", "", "op", outputs)
                )
                continue
            shape = step.shape
            if shape and defined and shape[0] == defined[0]:  # the batch it was defined with: this run's
                shape = (batch, *shape[1:])
            if step.kind == "parameter":  # an L.Parameter: a layer, whose tensor the model holds
                label = layer_caption(program.layer_at(model, step.target))
                placed[step.var] = graph.node(label, shape or "", "layer", sources)
            else:
                label = (
                    f".{step.target}()" if step.kind == "method" else getattr(step.target, "__name__", "op")
                )
                placed[step.var] = graph.node(label, shape or "", "op", sources)
        return [placed[var.name] for var in _vars(program.outputs)]


def _part_of_a_result(step: Step, produced: dict[str, Step]) -> bool:
    """Whether ``step`` only takes a part of a step's tuple or dict result."""
    if step.target is not operator.getitem or not isinstance(step.args[0], Var):
        return False
    source = produced.get(step.args[0].name)
    return source is not None and source.shape is None


def _batch(shape: Any) -> int | None:
    """Dim 0 of the first output shape of this run (the batch), if there is one."""
    while isinstance(shape, (list, tuple)) and shape and not isinstance(shape[0], (int, type(None))):
        shape = shape[0]
    return shape[0] if isinstance(shape, tuple) and shape else None


def _vars(structure: Any) -> list[Var]:
    return [leaf for leaf in tree_leaves(structure) if isinstance(leaf, Var)]
