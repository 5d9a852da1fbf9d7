"""What subcommands read: spec documents (a file or ``-``), input shapes, dtypes."""

from __future__ import annotations

import argparse
import inspect
import itertools
import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn

from torchx.cli._errors import UsageError
from torchx.core._arguments import INT64_MAX
from torchx.core._checkpoint import read_checkpoint_spec
from torchx.core._dtypes import dtype_name, dtype_named
from torchx.core._errors import CheckpointError, short_repr
from torchx.core._layer import Layer
from torchx.core._plugins import current_plugins
from torchx.core._shapes import InputLike, TypedShape, input_shape, shape_problem
from torchx.core._specs import MAX_SPEC_BYTES, from_spec, parse_spec, to_spec

__all__ = [
    "add_input_arguments",
    "add_spec_argument",
    "input_path",
    "inputs_of",
    "load_model",
    "read_document",
]

_DYNAMIC = ("None", "none", "?", "N")


SPEC_SUFFIXES = (".json", ".yaml", ".yml")
CHECKPOINT_SUFFIXES = (".pt", ".pth", ".safetensors")
"""Files read as TorchX checkpoints (the spec they hold) where a spec is expected."""


def add_spec_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "spec",
        help="a .json or .yaml TorchX spec file, a TorchX checkpoint (.pt, .pth, .safetensors: "
        "its spec), or - for standard input",
    )


def add_input_arguments(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument(
        "--input",
        action="append",
        type=parse_input,
        required=required,
        metavar="SHAPE",
        help="an input shape such as 8,3,32,32 (None or ?: a dynamic dim; :int64 after it sets the "
        "dtype); repeat for models with several inputs",
    )
    parser.add_argument("--dtype", type=parse_dtype, help="floating dtype of parameters and shape inputs")


def parse_input(text: str) -> InputLike:
    """``8,3,32,32`` → a shape; ``None,20:int64`` → a shape with that dtype."""
    shape_text, _, dtype_text = text.partition(":")
    dims: list[int | None] = []
    for part in shape_text.split(","):
        part = part.strip()
        if part in _DYNAMIC:
            dims.append(None)
        elif part.isascii() and part.isdigit():
            if len(part) > len(str(INT64_MAX)) or int(part) > INT64_MAX:  # never converts 5,000 digits
                raise argparse.ArgumentTypeError(
                    f"{short_repr(text)}: a dim is at most {INT64_MAX} (2**63 - 1), got {short_repr(part)}"
                )
            dims.append(int(part))
        else:
            raise argparse.ArgumentTypeError(
                f"{short_repr(text)}: a shape is dims separated by commas, each an int >= 0 or None "
                "(for example 8,3,32,32 or None,3,32,32; add :int64 for a dtype)"
            )
    if not dtype_text:
        return tuple(dims)
    return TypedShape(tuple(dims), parse_dtype(dtype_text))


def parse_dtype(text: str) -> torch.dtype:
    dtype = dtype_named(text)
    if dtype is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a torch dtype (for example float32, bfloat16, int64)"
        )
    return dtype


def inputs_of(options: argparse.Namespace, model: nn.Module | None = None) -> tuple[InputLike, ...]:
    """The ``--input`` shapes, each one a tensor can have; with ``model``, also checked
    against what it takes: as many inputs as its forward takes, and a ``--dtype``
    its parameters can have (a :class:`UsageError` otherwise)."""
    inputs = tuple(options.input or ())
    dtype = getattr(options, "dtype", None)
    for value in inputs:
        _check_tensor_size(value, dtype)
    if model is not None:
        _check_takes(model, len(inputs), dtype)
    return inputs


def _check_takes(model: nn.Module, given: int, dtype: torch.dtype | None) -> None:
    name = type(model).__name__
    least, most, names = _input_count(model)
    if given and (given < least or (most is not None and given > most)):
        if most is None:
            count = f"{least} or more inputs"
        else:
            count = f"{least} to {most} inputs" if least < most else f"{most} input{'s' * (most != 1)}"
        listed = f" ({', '.join(names)})" if len(names) > 1 else ""
        raise UsageError(
            f"--input given {'once' if given == 1 else f'{given} times'}, but {name} takes {count}{listed}: "
            "give one --input per input"
        )
    if dtype is None or dtype.is_floating_point or dtype.is_complex:
        return
    if next(itertools.chain(model.parameters(), model.buffers()), None) is not None:
        raise UsageError(
            f"--dtype {dtype_name(dtype)}: {name} has parameters, and parameters take a floating-point "
            "or complex dtype (float32, float64, float16, bfloat16, complex64...); for an input of "
            "integers, give its dtype with the shape: --input 8,20:int64"
        )


def _input_count(model: nn.Module) -> tuple[int, int | None, list[str]]:
    """How many inputs ``model``'s forward takes: at least, at most (None: any number), and
    their names. Every input of a model that declares its ``inputs`` (a Functional) is needed."""
    try:
        parameters = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):  # a forward Python cannot read
        return 0, None, []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [parameter for parameter in parameters if parameter.kind in kinds]
    unbounded = any(parameter.kind is inspect.Parameter.VAR_POSITIONAL for parameter in parameters)
    required = [parameter for parameter in positional if parameter.default is parameter.empty]
    declared = isinstance(getattr(model, "inputs", None), list)
    least = len(positional if declared else required)
    return least, None if unbounded else len(positional), [parameter.name for parameter in positional]


def _check_tensor_size(value: InputLike, dtype: torch.dtype | None) -> None:
    """Refuse a shape no tensor can have (see :func:`~torchx.core._shapes.shape_problem`)."""
    problem = shape_problem(value, dtype)
    if problem is not None:
        shown = ",".join("None" if dim is None else str(dim) for dim in input_shape(value))
        raise UsageError(f"--input {short_repr(shown)}: {problem}")


def read_document(source: str) -> Any:
    """The spec document in file ``source`` (``.json``/``.yaml``/``.yml``, the spec a
    checkpoint holds, or the spec of a model file an installed plugin reads), or on
    stdin for ``-``."""
    model = _plugin_model(source)
    return _own_document(source) if model is None else to_spec(model)


def load_model(source: str) -> Layer:
    """The model in ``source``: the (unbuilt) model of a spec or checkpoint, or
    a model file that an installed plugin reads (torchx-keras: ``.keras``)."""
    model = _plugin_model(source)
    return from_spec(_own_document(source)) if model is None else model


def input_path(text: str) -> Path:
    """The input file ``text``, checked before any work: a file that exists (a
    :class:`UsageError` otherwise, exit status 2, as for every unreadable input)."""
    path = Path(text)
    try:
        folder, found = path.is_dir(), path.exists()
    except OSError as error:  # no permission to look, a name too long
        raise UsageError(f"{text}: cannot be read: {error.strerror or error}") from None
    if folder:
        raise UsageError(f"{text}: is a directory, not a file")
    if not found:
        raise UsageError(f"{text}: no such file")
    return path


def _plugin_model(source: str) -> Layer | None:
    """The model in ``source`` as the installed plugin that reads such files gives it
    (the ``torchx_read_model`` hook); None for TorchX's own files and standard input,
    or when no plugin reads it."""
    if source == "-" or Path(source).suffix.lower() in (*SPEC_SUFFIXES, *CHECKPOINT_SUFFIXES):
        return None
    model = current_plugins().read_model(str(input_path(source)))
    if model is None or isinstance(model, Layer):
        return model
    raise UsageError(
        f"{source}: the plugin that read it returned a {type(model).__name__}, not a TorchX layer"
    )


def _own_document(source: str) -> Any:
    """The spec document in a spec file or checkpoint ``source``, or on stdin for ``-``."""
    if source == "-":
        try:
            text = sys.stdin.read(MAX_SPEC_BYTES + 1)  # parse_spec refuses more
        except UnicodeDecodeError as error:
            raise UsageError(f"<stdin>: is not UTF-8 text ({error.reason})") from None
        except OSError as error:
            raise UsageError(f"<stdin>: cannot be read: {error.strerror or error}") from None
        return _parsed(text, "yaml", "<stdin>")
    path = input_path(source)
    suffix = path.suffix.lower()
    if suffix in CHECKPOINT_SUFFIXES:
        return _checkpoint_spec(path)
    if suffix not in SPEC_SUFFIXES:
        raise UsageError(
            f"{source}: spec files end in .json, .yaml or .yml, checkpoints in {', '.join(CHECKPOINT_SUFFIXES)}; "
            "no installed plugin reads other model files like this one"
        )
    try:
        size = path.stat().st_size
        if size > MAX_SPEC_BYTES:  # measured, not read
            raise UsageError(f"{source}: is {size:,} bytes; spec files are at most {MAX_SPEC_BYTES:,}")
        with path.open(encoding="utf-8") as file:
            text = file.read(MAX_SPEC_BYTES + 1)  # a device or pipe has no size to measure
    except UnicodeDecodeError as error:
        raise UsageError(f"{source}: is not UTF-8 text ({error.reason})") from None
    except OSError as error:
        raise UsageError(f"{source}: cannot be read: {error.strerror or error}") from None
    return _parsed(text, "json" if suffix == ".json" else "yaml", source)


def _checkpoint_spec(path: Path) -> dict[str, Any]:
    """The spec of the TorchX checkpoint at ``path`` (its tensors are not read)."""
    try:
        return read_checkpoint_spec(path)
    except CheckpointError as error:
        raise UsageError(" ".join(str(error).split())) from None
    except OSError as error:
        raise UsageError(f"{path}: cannot be read: {error.strerror or error}") from None


def _parsed(text: str, kind: str, where: str) -> Any:
    from torchx.core._errors import SpecError

    if not text.strip():
        raise UsageError(f"{where}: is empty; a spec is an object with a 'type'")
    try:
        return parse_spec(text, kind, where=where)
    except SpecError as error:
        raise UsageError(" ".join(str(error).split())) from None  # one line
