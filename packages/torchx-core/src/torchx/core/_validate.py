"""``check_spec``: every problem of a spec, found without allocating any weights."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from torchx.core._build import build
from torchx.core._container import Container
from torchx.core._errors import LayerError, SpecError
from torchx.core._layer import Layer
from torchx.core._plugins import current_plugins
from torchx.core._registry import LayerRegistry
from torchx.core._shapes import InputLike
from torchx.core._specs import SpecReader, read_document
from torchx.core._summary import memory_problems

__all__ = ["SpecProblem", "check_spec"]


@dataclass(frozen=True)
class SpecProblem:
    """One problem :func:`check_spec` found: where in the document, and what."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


class _Unreadable(Container):
    """Stands where a spec entry could not be read, so that reading the rest
    goes on (``check_spec`` reports every unreadable entry). Passes its input through."""

    def forward(self, *inputs: Any) -> Any:
        return inputs[0] if inputs else None


def check_spec(
    spec: Any,
    *inputs: InputLike,
    dtype: torch.dtype | None = None,
    registry: LayerRegistry | None = None,
    before_build: Callable[[Layer], object] | None = None,
) -> list[SpecProblem]:
    """Every problem of ``spec``, without allocating any weights.

    Every layer entry that cannot be read is reported (not only the first);
    when all can be and ``inputs`` are given, the model is built for them on
    the meta device, and a shape error is reported at the failing layer's
    place in the document; so are weights, or a forward's largest tensor,
    larger than the memory available on torch's default device. An empty list
    means the spec is sound. ``before_build`` is called with the model read,
    before it is built (the command line refuses inputs the model cannot take).
    """
    errors: list[SpecError] = []
    reader = SpecReader(registry or current_plugins().registry, errors=errors, stand_in=_Unreadable)
    model: Layer | None
    try:
        model = read_document(spec, reader)
    except SpecError as error:
        errors.append(error)
        model = None
    problems = [SpecProblem(error.where, error.problem) for error in errors]
    if problems or model is None or not inputs:
        return problems
    if before_build is not None:
        before_build(model)
    try:
        build(model, *inputs, device="meta", dtype=dtype)
    except LayerError as error:
        problems.append(SpecProblem(reader.places.get(id(error.origin), "$"), str(error)))
        return problems
    return [SpecProblem("$", problem) for problem in memory_problems(model, inputs, dtype)]
