"""Model graphs: every layer call as a node with its output shape, drawn with Graphviz.

``model_graph(model, (None, 3, 32, 32))`` runs the model on the meta device
(a copy, built there, when it has unbuilt layers) to learn each call's output
shape, then asks the model to draw itself: containers lay out their children
(``L.Sequential`` a chain, ``L.Functional`` its DAG with branches and merges,
nested models as clusters) through :meth:`Layer.draw_graph`; any other module
is one node. ``graph.render("model.svg")`` writes DOT, SVG or PNG through
the ``graphviz`` package (DOT needs no Graphviz programs; SVG and PNG do).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from torch import nn

from torchx.core._dtypes import dtype_name
from torchx.core._errors import MissingPackageError, TorchXError, format_shape
from torchx.core._files import write_bytes_atomically
from torchx.core._layer import Layer
from torchx.core._record import layer_caption
from torchx.core._shapes import InputLike, input_dtype, input_shape
from torchx.core._summary import built_on_meta, record_calls, shape_text

__all__ = ["Graph", "GraphCluster", "GraphNode", "model_graph"]

NodeKind = Literal["input", "layer", "op", "output"]

_STYLES: dict[str, dict[str, str]] = {
    "input": {"shape": "box", "style": "rounded,filled", "fillcolor": "#dbeafe"},
    "output": {"shape": "box", "style": "rounded,filled", "fillcolor": "#dcfce7"},
    "layer": {"shape": "box", "style": "filled", "fillcolor": "#f3f4f6"},
    "op": {"shape": "ellipse", "style": "filled", "fillcolor": "#fef9c3"},
}
_FORMATS = {".dot": "dot", ".gv": "dot", ".svg": "svg", ".png": "png", ".pdf": "pdf"}


@dataclass(frozen=True)
class GraphNode:
    """A node: its id, what it is (``Conv2d``, ``mul``), and its output shape."""

    id: str
    label: str
    detail: str
    kind: NodeKind


@dataclass
class GraphCluster:
    """A nested model: its label, and the nodes and clusters drawn inside it."""

    id: str
    label: str
    nodes: list[str] = field(default_factory=list)
    clusters: list[GraphCluster] = field(default_factory=list)


class Graph:
    """Nodes, edges and clusters; built by :func:`model_graph` and the layers' ``draw_graph``."""

    def __init__(self, calls: dict[int, list[Any]] | None = None) -> None:
        self.nodes: dict[str, GraphNode] = {}
        self.edges: list[tuple[str, str]] = []
        self.root = GraphCluster("root", "")
        self._open = [self.root]
        self._ids = itertools.count()
        self._calls = {key: iter(shapes) for key, shapes in (calls or {}).items()}

    def node(self, label: str, detail: Any = "", kind: NodeKind = "op", inputs: Sequence[str] = ()) -> str:
        """Add a node fed by ``inputs`` (node ids); returns its id. ``detail`` may be a shape."""
        node_id = f"n{next(self._ids)}"
        text = detail if isinstance(detail, str) else shape_text(detail)
        self.nodes[node_id] = GraphNode(node_id, label, text, kind)
        self._open[-1].nodes.append(node_id)
        self.edges += [(source, node_id) for source in inputs]
        return node_id

    @contextmanager
    def cluster(self, label: str) -> Iterator[GraphCluster]:
        """Nodes added inside the block are drawn inside a box labelled ``label``."""
        cluster = GraphCluster(f"cluster_{next(self._ids)}", label)
        self._open[-1].clusters.append(cluster)
        self._open.append(cluster)
        try:
            yield cluster
        finally:
            self._open.pop()

    def next_output(self, module: nn.Module) -> Any:
        """The output shape of ``module``'s next call in the recorded forward."""
        shapes = self._calls.get(id(module))
        return next(shapes, None) if shapes is not None else None

    def chain(
        self, label: str, module: nn.Module, children: Sequence[nn.Module], inputs: Sequence[str]
    ) -> list[str]:
        """Draw ``module`` as a box labelled ``label`` holding ``children``, each
        fed by the one before (how sequential containers draw themselves)."""
        self.next_output(module)
        with self.cluster(label):
            for child in children:
                inputs = self.draw(child, inputs)
        return list(inputs)

    def draw(self, module: nn.Module, inputs: Sequence[str]) -> list[str]:
        """Draw ``module`` fed by ``inputs``; returns the ids of its output nodes."""
        if isinstance(module, Layer):
            return module.draw_graph(self, list(inputs))
        if isinstance(module, nn.Sequential):
            return self.chain(type(module).__name__, module, list(module), inputs)
        return [self.node(layer_caption(module), self.next_output(module), "layer", inputs)]

    # -- output ---------------------------------------------------------------

    def to_dot(self) -> str:
        """The graph in Graphviz's DOT language."""
        graphviz = _graphviz()
        dot = graphviz.Digraph(
            "model",
            graph_attr={"rankdir": "TB", "fontname": "Helvetica", "nodesep": "0.3", "ranksep": "0.35"},
            node_attr={"fontname": "Helvetica", "fontsize": "11", "color": "#6b7280", "penwidth": "1"},
            edge_attr={"color": "#6b7280", "arrowsize": "0.7"},
        )
        self._add(dot, self.root)
        for source, target in self.edges:
            dot.edge(source, target)
        return str(dot.source)

    def _add(self, dot: Any, cluster: GraphCluster) -> None:
        for node_id in cluster.nodes:
            node = self.nodes[node_id]
            label = f"<<b>{_escape(node.label)}</b>"
            label += f"<br/><font point-size='9'>{_escape(node.detail)}</font>>" if node.detail else ">"
            dot.node(node_id, label, **_STYLES[node.kind])
        for inner in cluster.clusters:
            with dot.subgraph(name=inner.id) as sub:
                sub.attr(label=inner.label, style="rounded,dashed", color="#9ca3af", fontsize="10")
                self._add(sub, inner)

    def render(self, path: str | Path) -> Path:
        """Write the graph to ``path``: ``.dot``/``.gv`` (no Graphviz programs needed),
        ``.svg``, ``.png`` or ``.pdf`` (drawn by Graphviz's ``dot``)."""
        path = Path(path)
        kind = _FORMATS.get(path.suffix.lower())
        if kind is None:
            raise TorchXError(f"{path}: graphs are written as {', '.join(_FORMATS)}")
        source = self.to_dot()
        if kind == "dot":
            write_bytes_atomically(path, source.encode("utf-8"))
            return path
        graphviz = _graphviz()
        try:
            drawn = graphviz.Source(source).pipe(format=kind)
        except graphviz.ExecutableNotFound:
            raise MissingPackageError(
                f"drawing {path.suffix} needs Graphviz's 'dot' program, which is not installed: "
                "apt install graphviz, brew install graphviz or conda install -c conda-forge graphviz "
                "(or write .dot, which needs none)"
            ) from None
        write_bytes_atomically(path, drawn)
        return path


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _graphviz() -> Any:
    try:
        import graphviz  # type: ignore[import-untyped]
    except ImportError:
        raise MissingPackageError(
            "model graphs need the graphviz Python package, which is not installed; "
            "run: pip install 'torchx-core[plot]'"
        ) from None
    return graphviz


def model_graph(model: nn.Module, *inputs: InputLike, dtype: torch.dtype | None = None) -> Graph:
    """The graph of ``model`` for ``inputs`` (shapes or tensors, as for :func:`torchx.build`).

    ``model`` is left as it is: the graph is drawn from a meta copy of it.
    """
    with built_on_meta(model, inputs, dtype) as copied:
        return _graph(copied, inputs, dtype)


def _graph(model: nn.Module, inputs: Sequence[InputLike], dtype: torch.dtype | None) -> Graph:
    calls = record_calls(model, list(model.named_modules()), inputs, dtype).calls
    graph = Graph({key: [call.shape for call in recorded] for key, recorded in calls.items()})
    input_names, output_names = model.io_names() if isinstance(model, Layer) else (None, None)
    if input_names is None or len(input_names) != len(inputs):
        input_names = [f"input {index}" for index in range(len(inputs))]
    sources = [
        graph.node(name, _input_shape(value), "input")
        for name, value in zip(input_names, inputs, strict=True)
    ]
    outputs = graph.draw(model, sources)
    if output_names is None or len(output_names) != len(outputs):
        output_names = (
            ["output"] if len(outputs) == 1 else [f"output {index}" for index in range(len(outputs))]
        )
    for name, source in zip(output_names, outputs, strict=True):
        graph.node(name, "", "output", [source])
    return graph


def _input_shape(value: InputLike) -> str:
    dtype = input_dtype(value)
    typed = "" if dtype.is_floating_point else f" {dtype_name(dtype)}"
    return format_shape(input_shape(value)) + typed
