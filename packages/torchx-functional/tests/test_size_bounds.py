"""Size arithmetic costs what the file or code holds: an expression has at most
MAX_SIZE_TERMS terms, and its label in messages a bounded length."""

from __future__ import annotations

from typing import Any

import pytest

import torchx.layers as L
from torchx.core import PluginManager, SpecError, TorchXError
from torchx.functional import Placeholder
from torchx.functional._placeholder import MAX_SIZE_TERMS


def doubling_spec(steps: int, op: str) -> dict[str, Any]:
    """``s = x.size(1)``, then ``s = s <op> s`` ``steps`` times: 2 KB of nodes, 2**steps terms."""
    nodes: list[dict[str, Any]] = [{"name": "s0", "method": "size", "args": [{"node": "x"}, 1]}]
    for step in range(1, steps + 1):
        nodes.append({"name": f"s{step}", "op": op, "args": [{"node": f"s{step - 1}"}] * 2})
    nodes.append(
        {"name": "y", "method": "new_zeros", "args": [{"node": "x"}, {"tuple": [{"node": f"s{steps}"}]}]}
    )
    return {
        "format_version": 1,
        "type": "Functional",
        "inputs": {"input": "x", "shape": [None, None], "dtype": "float32"},
        "modules": {},
        "nodes": nodes,
        "outputs": {"node": "y"},
    }


@pytest.mark.parametrize("op", ["operator.add", "operator.mul"], ids=["additions", "multiplications"])
def test_a_spec_doubling_a_size_per_node_is_refused_at_the_node_past_the_bound(
    op: str, fresh_plugins: PluginManager
) -> None:
    with pytest.raises(
        SpecError,
        match=r"^\$\.nodes\[9\]: TorchXError: a size computed from Placeholder 'x''s shape would hold 1,023 terms",
    ):
        L.Layer.from_spec(doubling_spec(24, op))


def test_a_size_expression_within_the_bound_keeps_a_short_label() -> None:
    x = Placeholder((None, None))
    size = x.shape[1]
    for _ in range(8):  # 511 terms
        size = size + size
    assert size.terms == 511 <= MAX_SIZE_TERMS
    assert len(size.label) <= 120 and "(a size of 127 terms)" in size.label
    assert repr((x.shape[1] + 2) // 2) == "((<Placeholder>.shape[1] + 2) // 2)"
    with pytest.raises(TorchXError, match="would hold 1,023 terms, more than 1,000"):
        size + size
