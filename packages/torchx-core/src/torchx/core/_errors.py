"""The TorchX error hierarchy: every error TorchX raises derives from TorchXError."""

from __future__ import annotations

import contextvars
import math
import re
import reprlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

__all__ = [
    "AllocationError",
    "ArgumentError",
    "BuildWarning",
    "CheckpointError",
    "DeviceError",
    "DeviceUnavailableError",
    "DeviceWarning",
    "DtypeError",
    "LayerError",
    "MissingPackageError",
    "NotBuiltError",
    "PluginError",
    "MemoryWarning",
    "PluginWarning",
    "ShapeError",
    "SpecError",
    "SpecMigrationWarning",
    "TorchXError",
    "add_note",
    "call_shown_as_none",
    "dynamic_dims_shown_as_none",
    "format_call",
    "format_shape",
    "is_probe_size",
    "short_repr",
    "torch_message",
]


_T = TypeVar("_T")

_PROBE_SIZE: contextvars.ContextVar[int | None] = contextvars.ContextVar("torchx_probe_size", default=None)


class dynamic_dims_shown_as_none:  # a context manager named as it reads, like contextlib.suppress
    """Inside the block, messages print a dim of size ``probe`` as ``None``.

    Shape inference gives a dynamic (``None``) dim a stand-in size (the probe);
    a message about a layer's input must say ``None`` there, as the user wrote
    it, not the stand-in. The probe sizes are chosen to be unusual, so a real
    dim rarely shares one. (A class rather than a generator: every operation
    recorded on placeholders enters one.)
    """

    __slots__ = ("_probe", "_token")

    def __init__(self, probe: int | None) -> None:
        self._probe = probe

    def __enter__(self) -> None:
        self._token = _PROBE_SIZE.set(self._probe)

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        _PROBE_SIZE.reset(self._token)
        if error is not None and self._probe is not None:
            _mark_probe(error, self._probe)


def call_shown_as_none(probe: int | None, function: Callable[[int], _T], argument: int) -> _T:
    """``function(argument)`` inside ``dynamic_dims_shown_as_none(probe)``, in
    one call (shape inference runs every recorded operation so, per probe)."""
    token = _PROBE_SIZE.set(probe)
    try:
        return function(argument)
    except BaseException as error:
        if probe is not None:
            _mark_probe(error, probe)
        raise
    finally:
        _PROBE_SIZE.reset(token)


def _mark_probe(error: BaseException, probe: int) -> None:
    """Keep ``probe`` on ``error``, for a message read after the block that raised it."""
    vars(error).setdefault("_torchx_probe", probe)


def is_probe_size(dim: int | None) -> bool:
    """Whether ``dim`` is the stand-in size of a dynamic dim in the shape inference running now."""
    return dim is None or (dim == _PROBE_SIZE.get() and dim is not None)


def format_shape(shape: Sequence[int | None]) -> str:
    """Render a shape as ``(8, 3, 32, 32)``; dynamic dims print as ``None``."""
    probe = _PROBE_SIZE.get()
    inner = ", ".join("None" if dim is None or dim == probe else str(dim) for dim in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def format_call(native: type, arguments: Mapping[str, Any]) -> str:
    """A native constructor call as errors show it, ``Linear(out_features=10, in_features=3)``
    (the ``device`` and ``dtype`` a build passes are left out)."""
    shown = ", ".join(
        f"{name}={value!r}" for name, value in arguments.items() if name not in ("device", "dtype")
    )
    return f"{native.__name__}({shown})"


def int_digits(value: int) -> int:
    """About how many decimal digits ``value`` has, from its bit length: no
    conversion to text (which Python refuses past 4,300 digits, and which
    costs quadratic time). Exact up to 3,000 digits (where one power of ten
    decides between the two counts its bits allow), else at most one too many."""
    digits = int(abs(value).bit_length() * math.log10(2)) + 1
    if 1 < digits <= 3000 and abs(value) < 10 ** (digits - 1):
        digits -= 1
    return digits


class _ShortRepr(reprlib.Repr):
    def repr_int(self, x: int, level: int) -> str:
        """An int of too many digits to print shows its size instead:
        ``<an int of about 5,001 digits>``."""
        if x.bit_length() > 128:
            return f"<an int of about {int_digits(x):,} digits>"
        return super().repr_int(x, level)


_SHORT = _ShortRepr()
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxdict, _SHORT.maxtuple = 3, 6, 6, 6
_SHORT.maxstring, _SHORT.maxlong, _SHORT.maxother = 60, 40, 60


def short_repr(value: Any) -> str:
    """``repr(value)``, bounded in depth and length, for messages about user data
    (a spec value may be a list nested 10,000 deep, or an int of 1,000 digits)."""
    return _SHORT.repr(value)


def add_note(error: BaseException, note: str) -> None:
    """Add ``note`` to ``error``'s traceback (Python 3.11+; nothing before)."""
    adder = getattr(error, "add_note", None)
    if adder is not None:
        adder(note)


def torch_message(error: BaseException) -> str:
    """``error``'s message without the C++ backtrace torch appends to some
    errors; for an error raised (or read) inside :class:`dynamic_dims_shown_as_none`,
    with the sizes torch prints for a dynamic dim shown as ``None``
    (:func:`probe_sizes_shown_as_none`)."""
    message = str(error).split("\nException raised from ", 1)[0].strip()
    probe = vars(error).get("_torchx_probe", _PROBE_SIZE.get())
    return message if probe is None else probe_sizes_shown_as_none(message, probe)


# Where torch's messages print one dim's size: in a shape list ("[61, 5, 5]",
# "torch.Size([61, 4])"), a pair of matrices ("(61x12 and 5x5)"), or a dim
# named in words ("existing size (61)", "Expected 61 in dimension 0",
# "got 61 for tensor", "Expected size 61 but got size 5").
_SHAPE_LIST = re.compile(r"\[(-?\d+(?:, *-?\d+)*)\]")
_MATRICES = re.compile(r"\((\d+)x(\d+) and (\d+)x(\d+)\)")
_ONE_DIM = re.compile(
    r"(?<=size \()\d+(?=\))|(?<=Expected )\d+(?= in dimension)|(?<=got )\d+(?= for tensor)"
    r"|(?<=Expected size )\d+(?= but got)|(?<=but got size )\d+"
)
# An element count: the product of the dims ("invalid for input of size 732").
_ELEMENTS = re.compile(r"(?<=input of size )\d+")


def probe_sizes_shown_as_none(message: str, probe: int) -> str:
    """``message`` with each dim of size ``probe`` shown as ``None``, and each
    element count that has ``probe`` as a factor shown as that product
    (``732`` for probe 61: ``None*12``). Only sizes in the places torch prints
    dims change, so another number that happens to equal the probe stays."""

    def shown(size: str) -> str:
        return "None" if int(size) == probe else size

    def elements(match: re.Match[str]) -> str:
        count, factors = int(match.group()), []
        while count and count % probe == 0:
            count //= probe
            factors.append("None")
        return "*".join([*factors, str(count)] if count != 1 or not factors else factors)

    message = _SHAPE_LIST.sub(
        lambda match: "[" + ", ".join(shown(size) for size in re.split(r", *", match.group(1))) + "]", message
    )
    message = _MATRICES.sub(lambda match: "({}x{} and {}x{})".format(*map(shown, match.groups())), message)
    message = _ONE_DIM.sub(lambda match: shown(match.group()), message)
    return _ELEMENTS.sub(elements, message)


class TorchXError(Exception):
    """Base class of every error raised by TorchX."""


class LayerError(TorchXError):
    """An error attributed to one layer of a model.

    The message names the layer by its path inside the model (``Sequential[3]
    Conv2d``), what went wrong and how to fix it. Containers prepend their
    part of the path with :meth:`within` as the error travels outwards.
    """

    def __init__(self, layer: str, problem: str, fix: str | None = None, *, source: object = None) -> None:
        self.path: list[str] = [layer]
        self.problem = problem
        self.fix = fix
        self.source = source
        self.origin = source
        """The object the error was first attributed to (the failing layer);
        ``source`` moves outwards as containers add to the path."""
        super().__init__()

    def within(self, container: str, source: object = None) -> LayerError:
        """Prepend ``container`` (for example ``Sequential[3]``) to the layer path.

        ``source`` becomes the object the error is attributed to, so that the
        next container out can find which of its children raised it.
        """
        self.path.insert(0, container)
        self.source = source
        return self

    @property
    def layer(self) -> str:
        """The full path of the failing layer, outermost container first."""
        return " ".join(self.path)

    def __str__(self) -> str:
        text = f"{self.layer}: {self.problem}"
        return f"{text}\n  fix: {self.fix}" if self.fix else text


class ShapeError(LayerError):
    """An input's shape does not fit a layer: the message says what the layer
    got, what it needed and how to fix it.

    ``changed`` names the arguments a built layer would need built otherwise
    for this input (``in_features``), when that is the reason.
    """

    changed: tuple[str, ...] = ()


class DtypeError(LayerError, TypeError):
    """An input's dtype does not fit a layer (integer ids into a layer with
    floating weights, say): the message names the layer, the dtypes and the fix."""


class AllocationError(LayerError):
    """Building a layer would allocate more memory than its device has.

    Raised before anything is allocated; the message names the layer, the
    memory it needs and the memory available.
    """


class SpecError(TorchXError):
    """A spec (a layer or model described as data) is invalid.

    ``where`` is the location inside the spec document, such as
    ``$.layers[3].args.kernel_size``.
    """

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")


class ArgumentError(TorchXError, ValueError):
    """A layer was constructed with an invalid argument (a zero size, or a
    torch-style positional argument that TorchX infers).

    ``argument`` names the argument, where one is to blame, so that a spec
    error can point at it (``$.layers[2].args.out_features``).
    """

    def __init__(self, message: str, *, argument: str | None = None, fix: str | None = None) -> None:
        self.argument = argument
        self.fix = fix
        super().__init__(f"{message}\n  fix: {fix}" if fix else message)


class DeviceError(TorchXError, ValueError):
    """A device id is malformed, or no installed device backend accepts it."""


class DeviceUnavailableError(DeviceError):
    """A well-formed device id names a device this machine does not have.

    This is the one device error that ``device_scope(..., fallback="cpu")``
    turns into a :class:`DeviceWarning`.
    """


class NotBuiltError(TorchXError, ValueError, RuntimeError):
    """Something needs a layer's parameters before the layer is built: the
    message says how to build it. (A ValueError and a RuntimeError, as torch's
    lazy modules raise in the same places.)"""


class CheckpointError(TorchXError):
    """A file is not a TorchX checkpoint, is damaged, or belongs to another model."""


class PluginError(TorchXError):
    """A plugin failed to load or misbehaved, and strict plugin mode is on."""


class MissingPackageError(TorchXError, AttributeError):
    """A name belongs to a TorchX distribution that is not installed."""


class DeviceWarning(UserWarning):
    """A device scope fell back to another device, as its ``fallback=`` asked."""


class BuildWarning(UserWarning):
    """A build did something the user may not expect, such as a layer whose
    parameters differ from those it showed before its first input."""


class MemoryWarning(UserWarning):
    """A forward the summary measured would ask for more memory than the device has."""


class SpecMigrationWarning(UserWarning):
    """A spec was written by an older version of a layer and was migrated as it was read."""


class PluginWarning(UserWarning):
    """A plugin failed to load or misbehaved; the host keeps working without it."""
