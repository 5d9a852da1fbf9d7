"""The ``torchx`` command line: ``torchx summary|validate|plot|plugins|convert|export ...``.

Every subcommand, the built-in ones included, comes from a plugin's
``torchx_register_commands`` hook. A plugin's command reads its arguments
with the helpers here, so that every command takes specs and shapes alike.
"""

from torchx.cli._errors import UsageError as UsageError
from torchx.cli._inputs import add_input_arguments as add_input_arguments
from torchx.cli._inputs import add_spec_argument as add_spec_argument
from torchx.cli._inputs import input_path as input_path
from torchx.cli._inputs import inputs_of as inputs_of
from torchx.cli._inputs import load_model as load_model
from torchx.cli._inputs import read_document as read_document
from torchx.cli._main import main as main
from torchx.cli._outputs import output_path as output_path
from torchx.cli._outputs import write_together as write_together
from torchx.cli._outputs import writing as writing

__all__ = [
    "UsageError",
    "add_input_arguments",
    "add_spec_argument",
    "input_path",
    "inputs_of",
    "load_model",
    "main",
    "output_path",
    "read_document",
    "write_together",
    "writing",
]
