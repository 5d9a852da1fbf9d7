"""``Functional.node_table()``: one row per node, with output shapes and parameter counts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchx.plugin import format_shape, format_table, layer_name

if TYPE_CHECKING:
    from torchx.functional._functional import Functional

__all__ = ["node_table"]


def node_table(model: Functional) -> str:
    """The summary table of ``model`` as text."""
    rows = [(item.name, "Placeholder", format_shape(item.shape), "0") for item in model.inputs]
    counted: set[str] = set()
    program = model._torchx_program
    for step in program.steps:
        if step.kind in ("module", "parameter"):
            what = f"{layer_name(program.layer_at(model, step.target))} ({step.target})"
            if step.kind == "parameter":  # an L.Parameter's tensor is the model's own
                params = model.get_parameter(step.target).numel()
            else:
                params = sum(p.numel() for p in model.get_submodule(step.target).parameters())
            shown = f"{params:,}" if step.target not in counted else f"(shared: {params:,})"
            counted.add(step.target)
        else:
            what = (
                f"Tensor.{step.target}" if step.kind == "method" else getattr(step.target, "__name__", "op")
            )
            shown = "0"
        rows.append((step.var, what, format_shape(step.shape) if step.shape is not None else "-", shown))
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    headers = ("node", "layer / operation", "output shape", "parameters")
    text = format_table(headers, rows)
    text.append(f"total parameters: {total:,} (trainable {trainable:,}, frozen {total - trainable:,})")
    return "\n".join(text)
