"""The layer registry: the only way a spec's ``"type"`` turns into a class.

Names are case-insensitive and may have aliases (``Dense`` for ``Linear``).
Nothing here imports a dotted path or evaluates code: a type that no plugin
registered does not exist.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchx.core.errors import SpecError, short_repr

if TYPE_CHECKING:
    from torchx.core.layer import Layer

__all__ = ["PROVIDED_BY", "LayerRegistry", "RegistryConflict"]

PROVIDED_BY = {
    **dict.fromkeys(("Placeholder", "Input", "Functional", "Model"), "torchx-functional"),
    **dict.fromkeys(
        (
            "RNN",
            "LSTM",
            "GRU",
            "RNNCell",
            "LSTMCell",
            "GRUCell",
            "TimeDistributed",
            "GetRNNOutput",
            "GetRNNState",
        ),
        "torchx-rnn",
    ),
}
"""Names that TorchX's own distributions register, by distribution: when one
is missing, the ``L`` façade and spec errors say what to install."""


@dataclass(frozen=True)
class RegistryConflict:
    """A name that a second plugin tried to take; the first registration wins."""

    name: str
    owner: str
    rejected: str


class LayerRegistry:
    """Layer classes by spec type name, and the extra names of the ``L`` façade."""

    def __init__(self) -> None:
        self._types: dict[str, type[Layer]] = {}
        self._canonical: dict[type[Layer], str] = {}
        self._exports: dict[str, object] = {}
        self._owners: dict[str, str] = {}
        self.conflicts: list[RegistryConflict] = []
        self.current_plugin = "<direct>"

    def register(self, cls: type[Layer], *, name: str | None = None, aliases: tuple[str, ...] = ()) -> None:
        """Register ``cls`` under ``name`` (default: its class name) and ``aliases``.

        The canonical name is what ``to_spec()`` writes and what ``L.<name>``
        resolves to. A name already taken by another plugin is not replaced:
        the conflict is recorded and reported as a plugin warning.
        """
        canonical = name or cls.__name__
        for each in (canonical, *aliases):
            key = each.lower()
            owner = self._owners.get(key)
            if owner is not None and self._types.get(key) is not cls:
                self.conflicts.append(RegistryConflict(each, owner, self.current_plugin))
                continue
            self._types[key] = cls
            self._owners[key] = self.current_plugin
            self._exports.setdefault(each, cls)
        self._canonical.setdefault(cls, canonical)

    def export(self, name: str, obj: object) -> None:
        """Offer ``obj`` as ``torchx.layers.<name>`` without making it a spec type."""
        if name in self._exports and self._exports[name] is not obj:
            owner = self._owners.get(name.lower(), "another plugin")
            self.conflicts.append(RegistryConflict(name, owner, self.current_plugin))
            return
        self._exports[name] = obj
        self._owners.setdefault(name.lower(), self.current_plugin)

    def resolve(self, type_name: str, *, where: str = "$.type") -> type[Layer]:
        """Return the class registered as ``type_name`` (any case, or an alias)."""
        cls = self._types.get(type_name.lower())
        if cls is not None:
            return cls
        close = difflib.get_close_matches(type_name.lower(), self._types, n=3)
        names = list(dict.fromkeys(self._canonical[self._types[key]] for key in close))
        hint = f"; did you mean {', '.join(names)}?" if names else ""
        provider = {name.lower(): package for name, package in PROVIDED_BY.items()}.get(type_name.lower())
        if provider is not None:
            raise SpecError(
                where,
                f"layer type {short_repr(type_name)} is provided by {provider}, which is not installed; run: pip install {provider}",
            )
        raise SpecError(
            where,
            f"unknown layer type {short_repr(type_name)}{hint} Types come only from installed "
            "TorchX plugins (see `LayerRegistry.names()`).",
        )

    def type_name(self, cls: type[Layer]) -> str:
        """The canonical spec name of ``cls`` (its class name if unregistered)."""
        return self._canonical.get(cls, cls.__name__)

    def exported(self, name: str) -> object | None:
        """The façade object registered as ``name``, if any."""
        return self._exports.get(name)

    def names(self) -> list[str]:
        """Every canonical type name, sorted."""
        return sorted(set(self._canonical.values()))

    def registered_by(self, plugin: str) -> list[str]:
        """The canonical type names that ``plugin`` registered, sorted."""
        return sorted(
            name for name in set(self._canonical.values()) if self._owners.get(name.lower()) == plugin
        )

    def owner(self, name: str) -> str | None:
        """The plugin that registered ``name``."""
        return self._owners.get(name.lower())
