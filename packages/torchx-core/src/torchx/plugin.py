"""What a plugin author needs, in one namespace.

A plugin adds layers, spec migrations, CLI commands or device backends to
TorchX through the ``torchx.plugins`` entry-point group, exactly as TorchX's
own distributions do (see ``examples/torchx-plugin-example``); they import
nothing of core but this namespace and ``torchx``, ``torchx.core`` and
``torchx.nn``:

- a leaf layer subclasses :class:`LeafLayer`: its ``native_class``, the
  arguments it reads off the input (``inferred_arguments``, with
  :class:`FromInput` and :class:`FromState`), a typed ``__init__`` (the
  argument types :data:`PositiveInt`, :data:`Probability`... check values;
  a ``float`` is finite unless typed :data:`ExtendedFloat` or :data:`AnyFloat`) and,
  where it has one, an output formula over :data:`Shape`;
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
  checks its input files with :func:`input_path` and its output files with
  :func:`output_path`, writes them inside
  :func:`writing` (several that belong together with :func:`write_together`),
  and refuses bad arguments with :class:`UsageError`;
- a reader of documents written like specs (torchx-tune's search spaces)
  reads them with :func:`read_spec_file`, within the bounds a spec has
  (:data:`MAX_SPEC_VALUES`, :data:`MAX_LAYERS`, :data:`MAX_DEPTH`, and every
  integer an int64: :data:`MAX_SPEC_INT`).

A container that runs its children itself, or a graph front-end such as
torchx-functional's, also uses:

- messages: errors name a layer and its shapes (:func:`format_shape`, which
  prints a dynamic dim as ``None``; :func:`short_repr` for user data;
  :func:`torch_message`), a child's failure is explained
  (:func:`explain_failure`) or noted (:func:`add_note`), and a tracer meeting
  an unbuilt layer is refused (:func:`cannot_build_while_compiling`,
  :func:`is_fx_tracing`);
- records: what TorchX knows of a layer, built or not (:func:`record_of`,
  :func:`layer_view`), and how messages and summaries name it
  (:func:`layer_name`, :func:`given_name`, :func:`layer_caption`);
- shapes: inputs given as tensors or shapes (:data:`InputLike`,
  :class:`TypedShape`), their meta stand-ins (:func:`to_meta`, the
  :class:`Probes` of a dynamic dim), meta runs (:func:`run_on_meta`,
  :func:`closed_form_output`, torch's slow meta ops answered by
  :class:`MetaFormulas`; a graph's meta copies made while
  :func:`copying_for_shapes` may answer from their original), and the build they belong to
  (:func:`build_target`, :func:`current_build_target`, :func:`scope_device`);
- builds: a container builds its children as one transaction
  (:func:`all_or_nothing`, over :func:`unbuilt_layers`; an unbuilt leaf with a
  formula builds on its own, :func:`build_for_meta`), checked against the
  memory as a whole (:func:`allocation_budget`, measured first by a
  :class:`Rehearsal`; :func:`build_need` is what a model allocates);
- graphs: values that record calls (:func:`is_symbolic`,
  :func:`find_symbolic`) and the sizes of their dynamic dims (:func:`is_dynamic_size`), their arguments written to and read from specs
  (:class:`ValueFold`, :class:`TaggedValues`, :class:`TaggedReader`,
  :func:`dtype_name`, :func:`dtype_named`) and their summary rows
  (:class:`Summary`, :func:`format_table`);
- modules made in bulk (a graph's groups of named layers) set up their
  ``nn.Module`` state with :func:`init_module_state`, in half the time of
  ``nn.Module.__init__``.
"""

# torchx.core first: it refuses a foreign torchx (Meta's launcher) before torchx.cli, whose
# __init__ that one replaces, is read.
import torchx.core  # noqa: F401
from torchx.cli import UsageError as UsageError
from torchx.cli import add_input_arguments as add_input_arguments
from torchx.cli import add_spec_argument as add_spec_argument
from torchx.cli import input_path as input_path
from torchx.cli import inputs_of as inputs_of
from torchx.cli import load_model as load_model
from torchx.cli import output_path as output_path
from torchx.cli import write_together as write_together
from torchx.cli import writing as writing
from torchx.core._arguments import AnyFloat as AnyFloat
from torchx.core._arguments import DropoutRate as DropoutRate
from torchx.core._arguments import ExtendedFloat as ExtendedFloat
from torchx.core._arguments import Interval as Interval
from torchx.core._arguments import NonFinite as NonFinite
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
from torchx.core._dtypes import dtype_name as dtype_name
from torchx.core._dtypes import dtype_named as dtype_named
from torchx.core._errors import ArgumentError as ArgumentError
from torchx.core._errors import DtypeError as DtypeError
from torchx.core._errors import ShapeError as ShapeError
from torchx.core._errors import SpecError as SpecError
from torchx.core._errors import add_note as add_note
from torchx.core._errors import format_shape as format_shape
from torchx.core._errors import short_repr as short_repr
from torchx.core._errors import torch_message as torch_message
from torchx.core._graph import Graph as Graph
from torchx.core._layer import Layer as Layer
from torchx.core._layer import cannot_build_while_compiling as cannot_build_while_compiling
from torchx.core._layer import is_fx_tracing as is_fx_tracing
from torchx.core._leaf import FromInput as FromInput
from torchx.core._leaf import FromState as FromState
from torchx.core._leaf import LeafLayer as LeafLayer
from torchx.core._leaf import all_or_nothing as all_or_nothing
from torchx.core._leaf import build_for_meta as build_for_meta
from torchx.core._leaf import closed_form_output as closed_form_output
from torchx.core._leaf import explain_failure as explain_failure
from torchx.core._leaf import unbuilt_layers as unbuilt_layers
from torchx.core._memory import Rehearsal as Rehearsal
from torchx.core._memory import allocation_budget as allocation_budget
from torchx.core._meta_formulas import MetaFormulas as MetaFormulas
from torchx.core._placement import Placement as Placement
from torchx.core._record import given_name as given_name
from torchx.core._record import init_module_state as init_module_state
from torchx.core._record import layer_caption as layer_caption
from torchx.core._record import layer_name as layer_name
from torchx.core._record import layer_view as layer_view
from torchx.core._record import record_of as record_of
from torchx.core._registry import LayerRegistry as LayerRegistry
from torchx.core._registry import MigrationRegistry as MigrationRegistry
from torchx.core._registry import rename_argument as rename_argument
from torchx.core._scope import scope_device as scope_device
from torchx.core._shapes import InputLike as InputLike
from torchx.core._shapes import Probes as Probes
from torchx.core._shapes import Shape as Shape
from torchx.core._shapes import TypedShape as TypedShape
from torchx.core._shapes import build_target as build_target
from torchx.core._shapes import copying_for_shapes as copying_for_shapes
from torchx.core._shapes import current_build_target as current_build_target
from torchx.core._shapes import run_on_meta as run_on_meta
from torchx.core._shapes import to_meta as to_meta
from torchx.core._spec_values import TaggedReader as TaggedReader
from torchx.core._spec_values import TaggedValues as TaggedValues
from torchx.core._spec_values import ValueFold as ValueFold
from torchx.core._specs import MAX_DEPTH as MAX_DEPTH
from torchx.core._specs import MAX_LAYERS as MAX_LAYERS
from torchx.core._specs import MAX_SPEC_INT as MAX_SPEC_INT
from torchx.core._specs import MAX_SPEC_VALUES as MAX_SPEC_VALUES
from torchx.core._specs import SpecReader as SpecReader
from torchx.core._specs import SpecWriter as SpecWriter
from torchx.core._specs import read_spec_file as read_spec_file
from torchx.core._summary import Summary as Summary
from torchx.core._summary import format_table as format_table
from torchx.core._symbolic import find_symbolic as find_symbolic
from torchx.core._symbolic import is_dynamic_size as is_dynamic_size
from torchx.core._symbolic import is_symbolic as is_symbolic
from torchx.core.hookspecs import hookimpl as hookimpl

__all__ = [
    "AnyFloat",
    "ArgumentError",
    "CommandRegistry",
    "Container",
    "DropoutRate",
    "DtypeError",
    "ExtendedFloat",
    "FromInput",
    "FromState",
    "Graph",
    "InputLike",
    "Interval",
    "Layer",
    "LayerRegistry",
    "LeafLayer",
    "MAX_DEPTH",
    "MAX_LAYERS",
    "MAX_SPEC_INT",
    "MAX_SPEC_VALUES",
    "MetaFormulas",
    "MigrationRegistry",
    "NonFinite",
    "NonNegativeFloat",
    "NonNegativeInt",
    "Padding",
    "Placement",
    "PositiveFloat",
    "PositiveInt",
    "Probability",
    "Probes",
    "Rehearsal",
    "Shape",
    "ShapeError",
    "Size",
    "SpecError",
    "SpecReader",
    "SpecWriter",
    "Summary",
    "TaggedReader",
    "TaggedValues",
    "TypedShape",
    "UsageError",
    "ValueFold",
    "add_input_arguments",
    "add_note",
    "add_spec_argument",
    "all_or_nothing",
    "build_for_meta",
    "allocation_budget",
    "build",
    "build_need",
    "build_target",
    "cannot_build_while_compiling",
    "closed_form_output",
    "copying_for_shapes",
    "current_build_target",
    "dtype_name",
    "dtype_named",
    "explain_failure",
    "find_symbolic",
    "format_shape",
    "format_table",
    "given_name",
    "hookimpl",
    "init_module_state",
    "input_path",
    "inputs_of",
    "is_fx_tracing",
    "is_dynamic_size",
    "is_symbolic",
    "layer_caption",
    "layer_name",
    "layer_view",
    "load_model",
    "output_path",
    "read_spec_file",
    "record_of",
    "rename_argument",
    "run_on_meta",
    "scope_device",
    "short_repr",
    "to_meta",
    "torch_message",
    "unbuilt_layers",
    "write_together",
    "writing",
]
