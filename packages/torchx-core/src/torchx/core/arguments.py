"""Checking spec values against a layer's typed ``__init__`` signature.

Specs are data: every argument must match the annotation of the constructor
parameter it feeds. JSON has no tuples, so a list is accepted (and converted)
where the annotation asks for a tuple.
"""

from __future__ import annotations

import inspect
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Union

from torchx.core.errors import short_repr

__all__ = ["ArgumentMismatch", "coerce", "signature_of"]


class ArgumentMismatch(Exception):
    """A value does not match an annotation; the message says what was expected."""


_SIGNATURES: dict[type, tuple[dict[str, inspect.Parameter], dict[str, Any]]] = {}


def signature_of(cls: type) -> tuple[dict[str, inspect.Parameter], dict[str, Any]]:
    """The parameters of ``cls.__init__`` (without ``self``) and their resolved hints (cached)."""
    found = _SIGNATURES.get(cls)
    if found is None:
        init = cls.__init__  # type: ignore[misc]
        parameters = dict(inspect.signature(init).parameters)
        parameters.pop("self", None)
        found = _SIGNATURES[cls] = (parameters, typing.get_type_hints(init))
    return found


def _describe(hint: Any) -> str:
    if hint is type(None):
        return "null"
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(arg) for arg in typing.get_args(hint))
    if origin is Literal:
        return " or ".join(repr(arg) for arg in typing.get_args(hint))
    if origin in (tuple, list, Sequence):
        return "a list"
    return getattr(hint, "__name__", str(hint))


def coerce(value: Any, hint: Any) -> Any:
    """``value`` converted to fit ``hint``; raises ArgumentMismatch when it cannot."""
    if hint is Any:
        return value
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if origin in (Union, types.UnionType):
        for option in arguments:
            try:
                return coerce(value, option)
            except ArgumentMismatch:
                continue
        raise ArgumentMismatch(f"expected {_describe(hint)}, got {short_repr(value)}")
    if origin is Literal:
        if any(value == option and type(value) is type(option) for option in arguments):
            return value
        raise ArgumentMismatch(f"expected one of {', '.join(map(repr, arguments))}, got {short_repr(value)}")
    if origin in (tuple, list, Sequence):
        if not isinstance(value, (list, tuple)):
            raise ArgumentMismatch(f"expected a list, got {short_repr(value)}")
        if origin is tuple and arguments and arguments[-1] is not Ellipsis:
            if len(value) != len(arguments):
                raise ArgumentMismatch(f"expected a list of {len(arguments)} items, got {short_repr(value)}")
            items = [coerce(item, each) for item, each in zip(value, arguments, strict=True)]
        else:
            item_hint = arguments[0] if arguments else Any
            items = [coerce(item, item_hint) for item in value]
        return list(items) if origin is list else tuple(items)
    checker = _SCALARS.get(hint)
    if checker is None:
        raise ArgumentMismatch(f"a value of type {_describe(hint)} cannot come from a spec")
    if not checker(value):
        raise ArgumentMismatch(f"expected {_describe(hint)}, got {short_repr(value)}")
    if hint is float:
        try:
            number = float(value)
        except OverflowError:
            raise ArgumentMismatch(f"too large for a float: {short_repr(value)}") from None
        if not math.isfinite(number):
            raise ArgumentMismatch(
                f"expected a finite number, got {short_repr(value)} (specs hold JSON numbers)"
            )
        return number
    return value


_SCALARS: Mapping[Any, Callable[[Any], bool]] = {
    int: lambda value: isinstance(value, int) and not isinstance(value, bool),
    float: lambda value: isinstance(value, (int, float)) and not isinstance(value, bool),
    bool: lambda value: isinstance(value, bool),
    str: lambda value: isinstance(value, str),
    type(None): lambda value: value is None,
    None: lambda value: value is None,
}
