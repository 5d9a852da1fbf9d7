"""Torch-style calls of TorchX layers: what ``L.Linear(10, 20)`` meant, and how to write it.

A TorchX layer takes positionally only the arguments it needs and cannot
infer. A call written for torch (``L.Conv2d(3, 8, 3)``, ``L.BatchNorm2d(64)``)
passes more; read in the layer's own order it would build another model, so
it is refused, naming the inferred argument it passed and the call that means
what it meant.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from torchx.core._arguments import checker_of
from torchx.core._errors import ArgumentError, short_repr

if TYPE_CHECKING:
    from torchx.core._leaf import LeafLayer

__all__ = ["positional_error", "torch_positional"]

_FACTORY = ("device", "dtype")


def torch_positional(cls: type[LeafLayer]) -> tuple[str, ...]:
    """The positional parameters of ``cls``'s native class, in torch's order."""
    if cls.torch_positional:
        return cls.torch_positional
    native = cls.native_class
    if native is None:
        return ()
    try:
        parameters = list(inspect.signature(native.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return ()
    return tuple(p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD and p.name not in _FACTORY)


def _call(label: str, positional: Sequence[Any], keywords: Mapping[str, Any]) -> str:
    parts = [short_repr(value) for value in positional]
    parts += [f"{name}={short_repr(value)}" for name, value in keywords.items()]
    return f"{label}({', '.join(parts)})"


def _fits(cls: type[LeafLayer], arguments: Mapping[str, Any]) -> bool:
    try:
        checker_of(cls).check(cls.__name__, arguments)
    except ArgumentError:
        return False
    return True


def positional_error(cls: type[LeafLayer], args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> ArgumentError:
    """The error for ``cls(*args, **kwargs)`` with more positional arguments than ``cls`` takes."""
    label = cls.__name__
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    own = [p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
    names = torch_positional(cls)
    if len(args) <= len(names):
        meant = dict(zip(names, args, strict=False))
        inferred = [name for name in meant if name in cls.inferable_arguments]
        rest = {name: value for name, value in meant.items() if name not in inferred}
        keywords = {name: value for name, value in rest.items() if name not in own}
        if inferred and _fits(cls, {**rest, **kwargs}) and all(name in rest for name in own if name in meant):
            call = _call(label, [rest[name] for name in own if name in rest], {**keywords, **kwargs})
            values = " and ".join(short_repr(meant[name]) for name in inferred)
            checks = ", ".join(f"{name}={short_repr(meant[name])}" for name in inferred)
            return ArgumentError(
                f"{label} infers {' and '.join(inferred)} from its input; drop {values} "
                f"(or pass {checks} to check it)",
                argument=inferred[0],
                fix=f"write {call}",
            )
    accepted = [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    # Where TorchX keeps torch's positions (a layer that infers nothing), torch's names say what was meant.
    order = list(names) if not cls.inferable_arguments and len(names) >= len(args) else accepted
    extras = dict(zip(order[len(own) :], args[len(own) :], strict=False))
    unknown = [name for name in extras if name not in accepted]
    call = _call(label, args[: len(own)], {**{n: v for n, v in extras.items() if n in accepted}, **kwargs})
    taken = ", ".join(own) if own else "nothing"
    return ArgumentError(
        f"{label} takes {len(own)} positional argument{'s' if len(own) != 1 else ''} ({taken}), "
        f"got {len(args)}; the others are keyword-only"
        + (
            f", and {', '.join(unknown)} (torch's) {'is' if len(unknown) == 1 else 'are'} not offered"
            if unknown
            else ""
        ),
        fix=f"pass them by keyword: {call}",
    )
