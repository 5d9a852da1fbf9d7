"""What subcommands read: spec documents (a file or ``-``), input shapes, dtypes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import torch

from torchx.cli._errors import UsageError
from torchx.core._arguments import INT64_MAX
from torchx.core._checkpoint import read_checkpoint_spec
from torchx.core._dtypes import dtype_named
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


def inputs_of(options: argparse.Namespace) -> tuple[InputLike, ...]:
    inputs = tuple(options.input or ())
    for value in inputs:
        _check_tensor_size(value, getattr(options, "dtype", None))
    return inputs


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
