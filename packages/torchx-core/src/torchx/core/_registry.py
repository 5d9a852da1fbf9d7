"""The layer registry: the only way a spec's ``"type"`` turns into a class.

Names are case-insensitive and may have aliases (``Dense`` for ``Linear``).
Nothing here imports a dotted path or evaluates code: a type that no plugin
registered does not exist.

Each type's spec entry has a version, its class's ``spec_version`` (written
as ``"version"`` when above 1). A plugin that changes a layer's entry raises
the version and registers a migration from the previous one, a pure function
on the entry's data, in its ``torchx_register_migrations`` hook::

    @hookimpl
    def torchx_register_migrations(migrations):
        migrations.add("Scale", 1, rename_argument("factor", "scale"))

Reading a spec applies each entry's migrations in order, from the version it
was written at to the installed one, and warns
(:class:`~torchx.core.SpecMigrationWarning`) naming what it migrated;
``torchx convert`` writes the spec at the current versions.
"""

from __future__ import annotations

import contextvars
import copy
import difflib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from torchx.core._errors import SpecError, short_repr

if TYPE_CHECKING:
    from torchx.core._layer import Layer

__all__ = [
    "PROVIDED_BY",
    "LayerRegistry",
    "Migration",
    "MigrationRegistry",
    "RegistryConflict",
    "registering_as",
    "registering_plugin",
    "rename_argument",
]

PROVIDED_BY = {
    **dict.fromkeys(("Placeholder", "Input", "Functional", "Model", "Buffer", "Dim"), "torchx-functional"),
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


DIRECT = "<direct>"
"""Who registered what was not added by a plugin's hook (a test, a script)."""

_registering: contextvars.ContextVar[str] = contextvars.ContextVar("torchx_registering", default=DIRECT)


@contextmanager
def registering_as(plugin: str) -> Iterator[None]:
    """Record what is registered inside the block, in any registry, as ``plugin``'s.

    The plugin manager wraps each plugin's hook call in this, so the hook gets
    the registry itself (its whole API, unchanged) and the owner of each name
    is known without a "current plugin" attribute on a registry that every
    plugin and thread shares: the tag is per context (per thread, per task).
    """
    token = _registering.set(plugin)
    try:
        yield
    finally:
        _registering.reset(token)


def registering_plugin() -> str:
    """The plugin whose hook is registering in this context, or :data:`DIRECT`."""
    return _registering.get()


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
        self.migrations = MigrationRegistry(self)
        """Every type's spec migrations, filled by ``torchx_register_migrations`` hooks."""

    def register(self, cls: type[Layer], *, name: str | None = None, aliases: tuple[str, ...] = ()) -> None:
        """Register ``cls`` under ``name`` (default: its class name) and ``aliases``.

        The canonical name is what ``to_spec()`` writes and what ``L.<name>``
        resolves to. A name already taken by another plugin is not replaced:
        the conflict is recorded and reported as a plugin warning.
        """
        canonical = name or cls.__name__
        plugin = registering_plugin()
        for each in (canonical, *aliases):
            key = each.lower()
            owner = self._owners.get(key)
            if owner is not None and self._types.get(key) is not cls:
                self.conflicts.append(RegistryConflict(each, owner, plugin))
                continue
            self._types[key] = cls
            self._owners[key] = plugin
            self._exports.setdefault(each, cls)
        self._canonical.setdefault(cls, canonical)

    def export(self, name: str, obj: object) -> None:
        """Offer ``obj`` as ``torchx.layers.<name>`` without making it a spec type."""
        plugin = registering_plugin()
        if name in self._exports and self._exports[name] is not obj:
            owner = self._owners.get(name.lower(), "another plugin")
            self.conflicts.append(RegistryConflict(name, owner, plugin))
            return
        self._exports[name] = obj
        self._owners.setdefault(name.lower(), plugin)

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

    def provider(self, name: str) -> str | None:
        """The TorchX distribution that registers the façade name ``name``, spelled
        exactly (``"LSTM"``: ``"torchx-rnn"``), for a message saying what to install
        when it is missing; None for any other name."""
        return PROVIDED_BY.get(name)

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


Fields = dict[str, Any]
"""A spec entry without its ``type``, ``name`` and ``version`` (``{"args": {...}}``)."""


@dataclass(frozen=True)
class Migration:
    """Turns an entry of ``type_name`` written at ``from_version`` into one of ``from_version + 1``."""

    type_name: str
    from_version: int
    migrate: Callable[[Fields], Fields]
    plugin: str


class MigrationRegistry:
    """The migrations of every layer type, by type and version."""

    def __init__(self, layers: LayerRegistry) -> None:
        self._layers = layers
        self._migrations: dict[tuple[str, int], Migration] = {}
        self.conflicts: list[RegistryConflict] = []

    def add(self, type_name: str, from_version: int, migrate: Callable[[Fields], Fields]) -> None:
        """Register ``migrate`` from version ``from_version`` of ``type_name`` to the next.

        ``migrate`` receives a copy of the entry's fields (everything but
        ``type``, ``name`` and ``version``) and returns the fields at the next
        version; it must not read anything but its argument. A type that
        another plugin registered, or a version already migrated, is refused
        (recorded as a conflict, reported as a plugin warning).
        """
        if isinstance(from_version, bool) or not isinstance(from_version, int) or from_version < 1:
            raise ValueError(f"migration of {type_name!r}: from_version is an int >= 1, got {from_version!r}")
        key = (type_name.lower(), from_version)
        plugin = registering_plugin()
        owner = self._layers.owner(type_name)
        if owner is not None and plugin != DIRECT and owner != plugin:
            self.conflicts.append(RegistryConflict(f"migrations of {type_name}", owner, plugin))
            return
        if key in self._migrations:
            first = self._migrations[key].plugin
            self.conflicts.append(
                RegistryConflict(f"migration of {type_name} from version {from_version}", first, plugin)
            )
            return
        self._migrations[key] = Migration(type_name, from_version, migrate, plugin)

    def upgrade(self, type_name: str, fields: Fields, version: int, current: int, where: str) -> Fields:
        """``fields`` of a ``type_name`` entry written at ``version``, migrated to ``current``.

        :raises SpecError: ``version`` is newer than ``current``, a migration
            on the way is missing, or one fails or returns something other
            than an object.
        """
        if version > current:
            provider = self._layers.owner(type_name) or "the plugin that provides it"
            raise SpecError(
                f"{where}.version",
                f"this {type_name} entry has version {version}, newer than the version {current} that "
                f"the installed {provider} reads; upgrade {provider}",
            )
        for step in range(version, current):
            migration = self._migrations.get((type_name.lower(), step))
            if migration is None:
                raise SpecError(
                    f"{where}.version",
                    f"no migration of {type_name} from version {step} to {step + 1} is registered, so "
                    f"an entry of version {version} cannot be read as version {current}",
                )
            try:
                migrated = migration.migrate(copy.deepcopy(fields))
            except Exception as error:
                raise SpecError(
                    where,
                    f"migrating {type_name} from version {step} ({migration.plugin}) failed: "
                    f"{type(error).__name__}: {error}",
                ) from error
            if not isinstance(migrated, Mapping):
                raise SpecError(
                    where,
                    f"the migration of {type_name} from version {step} ({migration.plugin}) returned "
                    f"a {type(migrated).__name__}, not the entry's fields",
                )
            fields = dict(migrated)
        return fields


def rename_argument(old: str, new: str) -> Callable[[Fields], Fields]:
    """A migration that renames argument ``old`` of an entry to ``new``."""

    def migrate(fields: Fields) -> Fields:
        arguments = fields.get("args")
        if isinstance(arguments, dict) and old in arguments:
            arguments = {(new if name == old else name): value for name, value in arguments.items()}
            return {**fields, "args": arguments}
        return fields

    migrate.__qualname__ = f"rename_argument({old!r}, {new!r})"
    return migrate
