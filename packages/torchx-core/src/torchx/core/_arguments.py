"""Layer arguments: their types and ranges, checked at construction and in specs.

A layer's typed ``__init__`` signature is the one description of its
arguments. Ranges ride on the annotations (``out_features: PositiveInt``,
``dropout: DropoutRate``), so ``L.Linear(0)`` and a spec holding
``"out_features": 0`` are refused by the same check, in the same words.

Specs are data: a spec value must match its annotation exactly (JSON has no
tuples, so a list is accepted, and converted, where a tuple is asked for).
Arguments given in Python may also be Python objects where the annotation
names a class or a callable (``activation=torch.nn.functional.gelu``).

A ``float`` is finite unless its annotation says otherwise (:class:`NonFinite`,
:data:`ExtendedFloat`, :data:`AnyFloat`): an infinite epsilon, rate or slope
turns torch's output into infs and nans without a word, while an infinite
bound (``Hardtanh(min_val=-inf)``) or fill value is what the user meant.
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

from torchx.core._errors import ArgumentError, short_repr
from torchx.core._tree import by_class

__all__ = [
    "AnyFloat",
    "ArgumentChecker",
    "ArgumentMismatch",
    "DropoutRate",
    "ExtendedFloat",
    "Interval",
    "NonFinite",
    "NonNegativeFloat",
    "NonNegativeInt",
    "Padding",
    "PositiveFloat",
    "PositiveInt",
    "Probability",
    "Size",
    "checker_of",
    "coerce",
    "hint_of",
    "signature_of",
]

INT64_MAX = 2**63 - 1
"""Tensor sizes are int64."""


@dataclass(frozen=True)
class Interval:
    """The range a numeric argument must lie in, carried by its annotation
    (``Annotated[float, Interval(0.0, 1.0, high_open=True)]``)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def holds(self, value: float) -> bool:
        """Whether ``value`` lies in the range (nan lies in none)."""
        if isinstance(value, float) and math.isnan(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def describe(self, kind: str) -> str:
        """The range in words, for ``kind`` ("int" or "number")."""
        article = "an" if kind[0] in "aeiou" else "a"
        if self.high in (None, INT64_MAX):
            if self.low == 1 and kind == "int":
                return "a positive int"
            if self.low == 0:
                return f"a positive {kind}" if self.low_open else f"a non-negative {kind}"
            return f"{article} {kind} {'>' if self.low_open else '>='} {self.low}"
        left = "(" if self.low_open else "["
        right = ")" if self.high_open else "]"
        return f"{article} {kind} in {left}{self.low}, {self.high}{right}"


@dataclass(frozen=True)
class NonFinite:
    """The non-finite floats an argument takes besides the finite ones, carried
    by its annotation (``Annotated[float, NonFinite(nan=True)]``): ``inf`` and
    ``-inf``, and ``nan`` too where ``nan`` is set."""

    nan: bool = False

    def takes(self, value: float) -> bool:
        """Whether the non-finite ``value`` is taken."""
        return self.nan or not math.isnan(value)

    def describe(self) -> str:
        return "a number, inf, -inf or nan" if self.nan else "a number, inf or -inf"


PositiveInt = Annotated[int, Interval(1, INT64_MAX)]
"""A size or count: 1 to 2**63 - 1."""
NonNegativeInt = Annotated[int, Interval(0, INT64_MAX)]
"""A padding or offset: 0 to 2**63 - 1."""
PositiveFloat = Annotated[float, Interval(0.0, low_open=True)]
"""A number > 0 (an epsilon, a temperature)."""
NonNegativeFloat = Annotated[float, Interval(0.0)]
"""A number >= 0."""
Probability = Annotated[float, Interval(0.0, 1.0)]
"""A number in [0, 1] (a dropout layer's ``p``, a momentum)."""
DropoutRate = Annotated[float, Interval(0.0, 1.0, high_open=True)]
"""A number in [0, 1): the ``dropout`` of attention and recurrent layers."""
ExtendedFloat = Annotated[float, NonFinite()]
"""A number, ``inf`` or ``-inf``: a bound that may be left open
(``Hardtanh(min_val=-inf)``, ``Threshold(-inf, 0.0)``); nan is refused, as a
bound it would compare false with everything without a word."""
AnyFloat = Annotated[float, NonFinite(nan=True)]
"""Any float, ``nan`` included: a value written into the output
(``ConstantPad2d(1, float("nan"))``, ``Threshold``'s ``value``)."""
Size = PositiveInt | tuple[PositiveInt, ...]
"""A kernel size, stride or dilation: one positive int, or one per spatial dim."""
Padding = NonNegativeInt | tuple[NonNegativeInt, ...]
"""A padding: one non-negative int, or one per spatial dim (or side)."""


class ArgumentMismatch(Exception):
    """A value does not match an annotation; ``expected`` says what would."""

    def __init__(self, expected: str, value: Any) -> None:
        self.expected = expected
        super().__init__(f"expected {expected}, got {short_repr(value)}")


def signature_of(cls: type) -> dict[str, inspect.Parameter]:
    """The parameters of ``cls.__init__``, without ``self`` (cached by function)."""
    return _parameters_of(cls.__init__)  # type: ignore[misc]


@functools.cache
def _parameters_of(init: Callable[..., None]) -> dict[str, inspect.Parameter]:
    parameters = dict(inspect.signature(init).parameters)
    parameters.pop("self", None)
    return parameters


def _evaluated_hint(cls: type, name: str) -> Any:
    init = cls.__init__  # type: ignore[misc]
    hint = getattr(init, "__annotations__", {}).get(name, Any)
    if isinstance(hint, str):  # in the class's module, as typing evaluates it; a name there: looked up
        namespace = inspect.unwrap(init).__globals__
        hint = namespace[hint] if hint in namespace else eval(hint, namespace)
    return type(None) if hint is None else hint


hint_of: Callable[[type, str], Any] = functools.cache(_evaluated_hint)
"""The annotation of ``cls.__init__``'s parameter ``name``, ranges kept
(``Any`` where it has none): a string one (``from __future__ import
annotations``) evaluated in its module, as ``typing.get_type_hints``
evaluates it, when first asked for (a layer's construction asks only for
those of the arguments given other values than their defaults)."""


def _kind(base: Any) -> str:
    return "int" if base is int else "number"


def describe(hint: Any) -> str:
    """What ``hint`` accepts, in words (``a positive int or a list of positive ints``)."""
    if hint is type(None) or hint is None:
        return "null"
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if origin is Annotated:
        base, *extras = arguments
        ranges = [extra for extra in extras if isinstance(extra, Interval)]
        if ranges:
            return ranges[0].describe(_kind(base))
        non_finite = _non_finite_of(extras)
        return non_finite.describe() if non_finite is not None else describe(base)
    if origin in (Union, types.UnionType):
        return " or ".join(describe(arg) for arg in arguments)
    if origin is Literal:
        return " or ".join(repr(arg) for arg in arguments)
    if origin in (tuple, list, Sequence, collections.abc.Sequence):
        items = [arg for arg in arguments if arg is not Ellipsis]
        if len(set(items)) == 1:
            return f"a list of {describe(items[0]).removeprefix('a ').removeprefix('an ')}s"
        return "a list"
    if hint is bool:
        return "a bool (true or false)"
    if hint is int:
        return "an int"
    if hint is float:
        return "a number"
    if hint is str:
        return "a string"
    return getattr(hint, "__name__", str(hint))


def coerce(value: Any, hint: Any, *, objects: bool = False) -> Any:
    """``value`` converted to fit ``hint``; raises ArgumentMismatch when it cannot.

    With ``objects``, a value may also be any instance of a class the hint
    names, or any callable where it asks for one (arguments given in Python);
    without, only spec data fits (numbers, strings, booleans, null, lists).
    """
    if hint is Any:
        return value
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if origin is Annotated:
        base, *extras = arguments
        try:
            converted = coerce(value, base, objects=objects)
        except ArgumentMismatch as error:
            non_finite = _non_finite_of(extras) if error.expected == _NOT_FINITE else None
            if non_finite is None:
                if error.expected in _NUMERIC_LIMITS:
                    raise  # "a finite number" says more than the range
                raise ArgumentMismatch(describe(hint), value) from None
            if not non_finite.takes(value):
                raise ArgumentMismatch(describe(hint), value) from None
            converted = float(value)
        for extra in extras:
            if isinstance(extra, Interval) and not extra.holds(converted):
                raise ArgumentMismatch(describe(hint), value)
        return converted
    if origin in (Union, types.UnionType):
        for option in arguments:
            try:
                return coerce(value, option, objects=objects)
            except ArgumentMismatch:
                continue
        raise ArgumentMismatch(describe(hint), value)
    if origin is Literal:
        if any(value == option and type(value) is type(option) for option in arguments):
            return value
        raise ArgumentMismatch(f"one of {', '.join(map(repr, arguments))}", value)
    if origin in (tuple, list, Sequence, collections.abc.Sequence):
        if not isinstance(value, (list, tuple)):
            raise ArgumentMismatch(describe(hint), value)
        try:
            if origin is tuple and arguments and arguments[-1] is not Ellipsis:
                if len(value) != len(arguments):
                    raise ArgumentMismatch(f"a list of {len(arguments)} items", value)
                items = [
                    coerce(item, each, objects=objects) for item, each in zip(value, arguments, strict=True)
                ]
            else:
                item_hint = arguments[0] if arguments else Any
                items = [coerce(item, item_hint, objects=objects) for item in value]
        except ArgumentMismatch:
            raise ArgumentMismatch(describe(hint), value) from None
        return list(items) if origin is list else tuple(items)
    if origin is collections.abc.Callable or hint is collections.abc.Callable:
        if objects and callable(value):
            return value
        raise ArgumentMismatch("a callable" if objects else "a value a spec can hold", value)
    checker = _SCALARS.get(hint)
    if checker is None:
        if objects and isinstance(hint, type) and isinstance(value, hint):
            return value
        raise ArgumentMismatch(f"{describe(hint)} (a value of this type cannot come from a spec)", value)
    if not checker(value):
        raise ArgumentMismatch(describe(hint), value)
    if hint is float:
        try:
            number = float(value)
        except OverflowError:
            raise ArgumentMismatch(_TOO_LARGE, value) from None
        if not math.isfinite(number):
            raise ArgumentMismatch(_NOT_FINITE, value)
        return number
    return value


def _non_finite_of(extras: Sequence[Any]) -> NonFinite | None:
    """The :class:`NonFinite` among an annotation's extras, if any."""
    return next((extra for extra in extras if isinstance(extra, NonFinite)), None)


_TOO_LARGE = "a number small enough for a float"
_NOT_FINITE = "a finite number"
_NUMERIC_LIMITS = (_TOO_LARGE, _NOT_FINITE)

_SCALARS: Mapping[Any, Callable[[Any], bool]] = {
    int: lambda value: isinstance(value, int) and not isinstance(value, bool),
    float: lambda value: isinstance(value, (int, float)) and not isinstance(value, bool),
    bool: lambda value: isinstance(value, bool),
    str: lambda value: isinstance(value, str),
    type(None): lambda value: value is None,
    None: lambda value: value is None,
}


def _fast_check(hint: Any) -> Callable[[Any], bool]:
    """A quick test that is True only for values :func:`coerce` accepts unchanged
    (False sends the value to ``coerce``, for the verdict and the message)."""
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if hint is Any:
        return lambda value: True
    if origin is Annotated and arguments[0] is int:
        ranges = [extra for extra in arguments[1:] if isinstance(extra, Interval)]
        if len(ranges) == 1 and not (ranges[0].low_open or ranges[0].high_open):
            low, high = ranges[0].low, ranges[0].high
            return lambda value: type(value) is int and low <= value <= high  # type: ignore[operator]
    if origin is Annotated and arguments[0] is float:  # a finite float in range: non-finite ones go to coerce
        ranges = [extra for extra in arguments[1:] if isinstance(extra, Interval)]
        if len(ranges) == 1 and len(arguments) == 2:
            holds = ranges[0].holds
            return lambda value: type(value) is float and math.isfinite(value) and holds(value)
    if hint is float:
        return lambda value: type(value) is float and math.isfinite(value)
    if origin in (Union, types.UnionType):
        options = [_fast_check(option) for option in arguments]
        return lambda value: any(option(value) for option in options)
    if hint is bool:
        return lambda value: type(value) is bool
    if hint is int:
        return lambda value: type(value) is int
    if hint is str:
        return lambda value: type(value) is str
    if hint is type(None) or hint is None:
        return lambda value: value is None
    return lambda value: False


class ArgumentChecker:
    """Checks one layer class's constructor arguments against its signature.

    A value that is its parameter's default is not checked again (nor its
    annotation evaluated); the others go through a quick test first and
    :func:`coerce` only when it fails, so a layer's construction costs a few
    hundred nanoseconds per given argument.
    """

    def __init__(self, cls: type) -> None:
        self._class = cls
        self._parameters = signature_of(cls)
        self._tests: dict[str, tuple[Callable[[Any], bool], Any]] = {}

    def check(self, owner: str, arguments: Mapping[str, Any]) -> None:
        """Raise ArgumentError for the first argument that does not fit."""
        for name, value in arguments.items():
            parameter = self._parameters.get(name)
            if parameter is None or value is parameter.default:
                continue
            fast, hint = self._tests.get(name) or self._test(name)
            if fast(value):
                continue
            try:
                coerce(value, hint, objects=True)
            except ArgumentMismatch as error:
                raise ArgumentError(
                    f"{owner}: {name} must be {error.expected}, got {short_repr(value)}", argument=name
                ) from None

    def _test(self, name: str) -> tuple[Callable[[Any], bool], Any]:
        """The quick test and hint of parameter ``name``, made the first time
        it is given a value other than its default."""
        hint = hint_of(self._class, name)
        test = self._tests[name] = (_fast_check(hint), hint)
        return test


@by_class
def checker_of(cls: type) -> ArgumentChecker:
    """The (cached) argument checker of ``cls``."""
    return ArgumentChecker(cls)
