"""One Keras layer of a config, as a converter sees it, and the converter table.

A converter is a function ``(layer, inputs, graph) -> outputs`` registered for
a Keras class name with :func:`converts`. It reads the layer's config
(:meth:`KerasLayer.get`), makes TorchX layers and applies them to the input
:class:`~torchx.keras._values.Value` s through :meth:`KerasLayer.apply`,
which keeps one module per layer (a shared Keras layer is one module called
several times) and loads its weights after the first call builds it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np
import torch
from torch import nn

from torchx.core import TypedShape
from torchx.functional import Functional
from torchx.keras._archive import WeightGroup
from torchx.keras._values import Value
from torchx.plugin import LeafLayer, SpecError, build_need

if TYPE_CHECKING:
    from torchx.keras._model import GraphBuilder

__all__ = ["CONVERTERS", "Converter", "KerasLayer", "converts", "unsupported"]

SIZE_SLACK = 2**20
"""What a converted layer may hold beyond twice its Keras weights: torch's own extras (an RNN's second
bias, BatchNorm's step counter) are far smaller."""

Converter = Callable[["KerasLayer", list[Value], "GraphBuilder"], Sequence[Value] | Value]

CONVERTERS: dict[str, Converter] = {}
"""Keras class name -> its converter; the supported table."""

DESCRIPTIONS: dict[str, str] = {}
"""Keras class name -> what it becomes, for the docs table."""


def converts(*class_names: str, becomes: str) -> Callable[[Converter], Converter]:
    """Register a converter for Keras layers of ``class_names``; ``becomes`` says what they turn into."""

    def register(function: Converter) -> Converter:
        for name in class_names:
            CONVERTERS[name] = function
            DESCRIPTIONS[name] = becomes
        return function

    return register


@dataclass
class KerasLayer:
    """A layer of the Keras config being converted: its class, config, place and weights."""

    place: str
    """Its place in the config: ``layers[3]``, ``layers[2].layer`` (a wrapped layer)."""
    class_name: str
    name: str
    module_name: str
    config: dict[str, Any]
    weights: WeightGroup
    node_kwargs: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    """What a converter keeps between the calls of a shared layer."""
    calls: int = 1
    """How many times the model calls it (a shared layer: more than one)."""
    trainable: bool = True
    """Whether Keras trains it: its own ``trainable`` and that of every model holding it."""
    _modules: dict[str, nn.Module] = field(default_factory=dict)
    _arguments: dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        """Its place, class and name, as errors show it: ``layers[3] (Conv2D "conv1")``."""
        return f'{self.place} ({self.class_name} "{self.name}")'

    def error(self, problem: str) -> SpecError:
        return SpecError(self.where, problem)

    @property
    def dtype(self) -> torch.dtype:
        """The dtype Keras keeps this layer's variables in and computes it in (its dtype policy's)."""
        return policy_dtype(self.config.get("dtype"), self.where)

    def get(self, key: str, default: Any = None) -> Any:
        return self.config.get(key, default)

    def require(self, key: str, allowed: Sequence[Any], why: str = "") -> Any:
        """``config[key]``, refused (with the reason) unless it is one of ``allowed``."""
        value = self.config.get(key, allowed[0])
        if value not in allowed:
            shown = " or ".join(repr(option) for option in allowed)
            raise self.error(f"{key}={value!r} is not supported (only {shown}){': ' + why if why else ''}")
        return value

    def integer(self, key: str, default: int | None = None, *, minimum: int = 1) -> int:
        """``config[key]``, refused unless it is an integer of at least ``minimum`` (a size, a count)."""
        value = self.config.get(key, default)
        if not _is_int(value) or value < minimum:
            raise self.error(f"{key}={value!r} is not an integer >= {minimum}")
        return int(value)

    def ints(
        self, key: str, rank: int, default: int | Sequence[int] | None = None, *, minimum: int = 1
    ) -> tuple[int, ...]:
        """``config[key]`` as ``rank`` ints of at least ``minimum`` (Keras accepts one int for every
        spatial dim)."""
        value = self.config.get(key, default)
        values = (value,) * rank if _is_int(value) else value
        if (
            isinstance(values, (list, tuple)) and len(values) == rank
            and all(_is_int(v) and v >= minimum for v in values)
        ):  # fmt: skip
            return tuple(int(v) for v in values)
        raise self.error(f"{key}={value!r} is not {rank} integer(s) >= {minimum}")

    def axis(self, rank: int, key: str = "axis", default: int = -1) -> int:
        """``config[key]``: an axis of a rank-``rank`` tensor (negative counts from the end; a list of one,
        as Keras writes some built layers' axis, is that one), checked."""
        value = self.config.get(key, default)
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if not _is_int(value) or not -rank <= value < rank:
            raise self.error(
                f"{key}={value!r} is not an axis of its rank-{rank} input ({-rank} to {rank - 1})"
            )
        return int(value)

    def arrays(self, count: int, group: WeightGroup | None = None) -> list[np.ndarray[Any, Any]]:
        """The layer's ``count`` variables from the weights file (or those of its subgroup ``group``)."""
        group = group or self.weights
        if len(group.arrays) != count:
            raise self.error(
                f"the weights file has {len(group.arrays)} variable(s) at {group.path or '/'}, but this "
                f"layer's config makes {count}: the weights do not belong to this config"
            )
        return group.arrays

    def apply(
        self,
        make: Callable[[], nn.Module],
        *args: Any,
        load: Callable[[nn.Module], None] | None = None,
        part: str = "",
        **kwargs: Any,
    ) -> Any:
        """Call this layer's module (made by ``make`` on the first call, then loaded by ``load``) on ``args``.

        ``part`` names a second module of the same layer (a SeparableConv2D's pointwise half). A shared
        layer's later calls reuse the module, and are refused where they would need other arguments
        (a ``same`` padding for another input size): one module cannot be both.
        """
        module = self._modules.get(part)
        if module is not None:
            first = self._arguments.get(part)
            if first is not None:  # a leaf: the arguments this call would make it with must be the first's
                wanted = make().arguments
                if wanted != first:
                    raise self.error(
                        f"is shared by calls that need different torch layers ({first} and then {wanted}, "
                        "for inputs of other sizes): not supported; use one layer per input size"
                    )
            return module(*args, **kwargs)
        module = make()
        if isinstance(module, LeafLayer):
            self._arguments[part] = module.arguments
            self._check_size(module, args)  # keyword arguments (need_weights=...) never change the size
        outputs = module(*args, **kwargs)  # builds it: from here it is its native module
        if load is not None:
            load(module)
        if not self.trainable:
            module.requires_grad_(False)
        self._modules[part] = module
        return outputs

    def _check_size(self, module: LeafLayer, args: tuple[Any, ...]) -> None:
        """Refuse, before allocating anything, a layer much larger than the weights the file holds for it
        (a config's ``units=10**7`` next to a kernel of 288 numbers would allocate gigabytes first)."""
        size = build_need(module, *(TypedShape(tuple(arg.shape), arg.recorded_dtype) for arg in args)).total
        held = self.weights.nbytes()
        if size > 2 * held + SIZE_SLACK:
            raise self.error(
                f"its config makes a torch layer of {size:,} bytes, but the weights file holds {held:,} bytes "
                "for it: the weights do not belong to this config"
            )

    def part_name(self, part: str) -> str:
        return f"{self.module_name}_{part}" if part else self.module_name


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def assign(layer: KerasLayer, module: nn.Module, **tensors: np.ndarray[Any, Any] | torch.Tensor) -> None:
    """Copy each array into ``module``'s parameter or buffer of that name, shapes checked."""
    with torch.no_grad():
        for name, array in tensors.items():
            target: torch.Tensor
            try:
                target = module.get_parameter(name)
            except AttributeError:  # not a parameter: a buffer (BatchNorm's running statistics)
                target = module.get_buffer(name)
            value = torch.as_tensor(np.ascontiguousarray(array)).to(target.dtype)
            if tuple(value.shape) != tuple(target.shape):
                raise layer.error(
                    f"the weights file gives {name} the shape {tuple(value.shape)} (after conversion), but the "
                    f"config makes {tuple(target.shape)}: the weights do not belong to this config"
                )
            target.copy_(value)


_POLICY_DTYPES = {
    "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32, "float64": torch.float64,
}  # fmt: skip


def policy_dtype(policy: object, where: str) -> torch.dtype:
    """The torch dtype of a Keras dtype policy (a name, or a serialized ``DTypePolicy``; none: float32).

    Only policies whose variables and computation share one dtype convert: a mixed-precision policy
    (``mixed_float16``: float32 variables, float16 computation) or a quantized one is refused, never
    read as float32."""
    name = policy
    if isinstance(policy, dict) and policy.get("class_name") in ("DTypePolicy", "FloatDTypePolicy"):
        config = policy.get("config")
        name = config.get("name") if isinstance(config, dict) else None
    if name is None:
        return torch.float32
    if isinstance(name, str) and name in _POLICY_DTYPES:
        return _POLICY_DTYPES[name]
    if isinstance(name, str) and name.startswith("mixed_"):
        raise SpecError(
            where,
            f"its dtype policy {name!r} keeps float32 variables and computes in {name[6:]} (mixed precision), "
            "which a converted layer cannot (it computes in its parameters' dtype): save the model with the "
            "policy 'float32', and run the converted model under torch.autocast for mixed precision",
        )
    shown = name if isinstance(name, str) else policy
    raise SpecError(
        where,
        f"its dtype policy {shown!r} is not supported (only {', '.join(_POLICY_DTYPES)}: variables and "
        "computation in one dtype)",
    )


def unsupported(where: str, class_name: str, name: str) -> SpecError:
    close = difflib.get_close_matches(class_name, CONVERTERS, n=3, cutoff=0.5)
    hint = f"; close supported layers: {', '.join(close)}" if close else ""
    return SpecError(
        f'{where} ({class_name} "{name}")',
        f"{class_name} is not a supported Keras layer{hint}. The supported table is in torchx-keras's docs",
    )


_ATTRIBUTES = frozenset(Functional.reserved_names())
"""What a converted model's submodules cannot be named: its own attributes (``summary``, ``eval``, ``training``)."""


def module_name(name: str, taken: set[str]) -> str:
    """A module name for Keras layer ``name``: an identifier, unique within its model, that is not one of
    the model's own attributes (a Keras layer named ``summary`` becomes ``summary_``, as Python names
    clashing with a builtin take a trailing underscore)."""
    base = re.sub(r"\W", "_", name) or "layer"
    if base[0].isdigit():
        base = f"_{base}"
    if base in _ATTRIBUTES or base.startswith("_torchx"):
        base = f"{base}_"
    candidate, counter = base, 1
    while candidate in taken:
        candidate, counter = f"{base}_{counter}", counter + 1
    taken.add(candidate)
    return candidate
