"""What a plugin author needs, in one namespace.

A plugin adds layers, spec migrations, CLI commands or device backends to
TorchX through the ``torchx.plugins`` entry-point group, exactly as TorchX's
own distributions do (see ``examples/torchx-plugin-example``):

- a leaf layer subclasses :class:`LeafLayer`: its ``native_class``, the
  arguments it reads off the input (``inferred_arguments``, with
  :class:`FromInput` and :class:`FromState`) and a typed ``__init__``;
- a container subclasses :class:`Container`: its children, its ``forward``
  (handing placeholders, :func:`is_symbolic`, to the graph), and the layers
  its spec lists (``spec_layers``), or its own ``spec_fields`` with
  :class:`SpecWriter` and :class:`SpecReader`, and ``draw_graph`` with
  :class:`Graph`;
- the hooks are functions marked :data:`hookimpl` that receive the
  registries (:class:`LayerRegistry`, :class:`MigrationRegistry`,
  :class:`CommandRegistry`) or return a :class:`Placement`;
- a command reads its arguments with :func:`add_spec_argument`,
  :func:`add_input_arguments`, :func:`load_model` and :func:`inputs_of`,
  checks its output files with :func:`output_path`, writes them inside
  :func:`writing` (several that belong together with :func:`write_together`),
  and refuses bad arguments with :class:`UsageError`.
"""

from torchx.cli import UsageError as UsageError
from torchx.cli import add_input_arguments as add_input_arguments
from torchx.cli import add_spec_argument as add_spec_argument
from torchx.cli import inputs_of as inputs_of
from torchx.cli import load_model as load_model
from torchx.cli import output_path as output_path
from torchx.cli import write_together as write_together
from torchx.cli import writing as writing
from torchx.core._arguments import DropoutRate as DropoutRate
from torchx.core._arguments import Interval as Interval
from torchx.core._arguments import NonNegativeFloat as NonNegativeFloat
from torchx.core._arguments import NonNegativeInt as NonNegativeInt
from torchx.core._arguments import Padding as Padding
from torchx.core._arguments import PositiveFloat as PositiveFloat
from torchx.core._arguments import PositiveInt as PositiveInt
from torchx.core._arguments import Probability as Probability
from torchx.core._arguments import Size as Size
from torchx.core._build import build as build
from torchx.core._build import build_need as build_need
from torchx.core._commands import CommandRegistry as CommandRegistry
from torchx.core._container import Container as Container
from torchx.core._dtypes import dtype_named as dtype_named
from torchx.core._errors import ArgumentError as ArgumentError
from torchx.core._errors import DtypeError as DtypeError
from torchx.core._errors import ShapeError as ShapeError
from torchx.core._errors import SpecError as SpecError
from torchx.core._graph import Graph as Graph
from torchx.core._layer import Layer as Layer
from torchx.core._leaf import FromInput as FromInput
from torchx.core._leaf import FromState as FromState
from torchx.core._leaf import LeafLayer as LeafLayer
from torchx.core._placement import Placement as Placement
from torchx.core._registry import LayerRegistry as LayerRegistry
from torchx.core._registry import MigrationRegistry as MigrationRegistry
from torchx.core._registry import rename_argument as rename_argument
from torchx.core._shapes import to_meta as to_meta
from torchx.core._specs import SpecReader as SpecReader
from torchx.core._specs import SpecWriter as SpecWriter
from torchx.core._symbolic import is_symbolic as is_symbolic
from torchx.core.hookspecs import hookimpl as hookimpl

__all__ = [
    "ArgumentError",
    "CommandRegistry",
    "Container",
    "DropoutRate",
    "DtypeError",
    "FromInput",
    "FromState",
    "Graph",
    "Interval",
    "Layer",
    "LayerRegistry",
    "LeafLayer",
    "MigrationRegistry",
    "NonNegativeFloat",
    "NonNegativeInt",
    "Padding",
    "Placement",
    "PositiveFloat",
    "PositiveInt",
    "Probability",
    "ShapeError",
    "Size",
    "SpecError",
    "SpecReader",
    "SpecWriter",
    "UsageError",
    "add_input_arguments",
    "add_spec_argument",
    "build",
    "build_need",
    "dtype_named",
    "hookimpl",
    "inputs_of",
    "is_symbolic",
    "load_model",
    "output_path",
    "rename_argument",
    "to_meta",
    "write_together",
    "writing",
]
