"""The layer entries of a space, read as a spec reader reads them (:class:`~torchx.plugin.SpecReader`).

Every entry a sample may hold is read when the space is, the options of every
``$choice`` and the blocks of every ``$repeat`` included: its type (one name, or a
``$choice`` of names) must be a registered layer type, its keys and argument names
those its class reads, and its plain argument values what a spec may give. A marker's
values are not read (a value the layer refuses fails that trial only), and neither are
the child layers of an entry: each is read where it stands in the space.

An entry that holds no marker besides its child layers is read in full, its class
constructed (unbuilt, so nothing is allocated) with stand-ins for its children. An
entry whose markers stand elsewhere than its ``"args"`` and ``"layers"``, or that is
written at an older version of its class, has its type read only.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from torchx.core import Container, Layer, LayerRegistry, SpecError, current_plugins
from torchx.plugin import SpecReader, short_repr

__all__ = ["check_entry"]

_ENTRY_KEYS = ("type", "name", "version", "frozen")
"""The keys a spec reader reads itself; a class reads the others (``args``, ``layers``...)."""
_PLACEMENT = ("device", "dtype")
"""Arguments a spec refuses: where a model runs is not its architecture."""


def is_marker(value: Any) -> bool:
    """Whether ``value`` is a search marker (an object with a ``$`` key)."""
    return isinstance(value, Mapping) and any(isinstance(key, str) and key.startswith("$") for key in value)


class _Child(Container):
    """Stands for an item of an entry's ``"layers"`` list (the space reads each where
    it stands) and for an entry not constructed (its arguments are markers)."""

    def forward(self, *inputs: Any) -> Any:
        return inputs[0] if inputs else None


class _KeysRead(Exception):
    """The entry's keys are read, and nothing else is (see ``_EntryReader.keys_only``);
    ``error``: the key its class does not take."""

    def __init__(self, error: SpecError | None) -> None:
        super().__init__(error)
        self.error = error


class _EntryReader(SpecReader):
    """Reads the fields of one entry: child layers are stood in for; with ``marked``
    argument names (their values are markers), arguments are checked by name and
    the entry is not constructed."""

    def __init__(
        self,
        registry: LayerRegistry,
        where: str,
        marked: Collection[str] | None,
        *,
        items: Sequence[Any] = (),
        keys_only: bool = False,
    ) -> None:
        super().__init__(registry, where)
        self.marked = marked
        """None: every argument is plain, so the entry is read in full."""
        self.items = {id(item) for item in items}
        """The ``id`` of each item of the entry's ``"layers"`` list."""
        self.keys_only = keys_only
        """Stop once the class has checked the entry's keys (it does so before reading them)."""

    def check_keys(self, fields: Iterable[Any], known: Sequence[str], has: str) -> None:
        if not self.keys_only:
            return super().check_keys(fields, known, has)
        try:
            super().check_keys(fields, known, has)
        except SpecError as error:
            raise _KeysRead(error) from None
        raise _KeysRead(None)

    def layer(self, data: Any, where: str | None = None) -> Layer:
        if id(data) in self.items and isinstance(data, Mapping):
            return _Child()  # an entry or a marker of the space's "layers" list: read where it stands
        return super().layer(data, where)

    def arguments(self, cls: type[Layer], fields: Mapping[str, Any]) -> dict[str, Any]:
        raw = fields.get("args", {})
        if self.marked is None or (not isinstance(raw, Mapping) and not is_marker(raw)):
            return super().arguments(cls, fields)
        self._read(cls, {**fields, "args": {}})  # the entry's keys
        if is_marker(raw):  # the whole of its arguments is a marker: its options are not read
            return {}
        parameters = _constructor_parameters(cls)
        for name, value in raw.items():
            if name not in self.marked:
                self._read(cls, {"args": {name: value}})
            elif name not in parameters or name in _PLACEMENT:
                super().arguments(cls, {"args": {name: None}})  # refuses the name, as a spec's
        missing = [name for name, p in parameters.items() if p.default is p.empty and name not in raw]
        if missing:
            raise SpecError(
                f"{self.where}.args", f"missing required argument {missing[0]!r} of {cls.__name__}"
            )
        return {}

    def _read(self, cls: type[Layer], fields: Mapping[str, Any]) -> None:
        """Read ``fields`` as a spec's, but for the arguments they leave out (a marker gives them)."""
        try:
            super().arguments(cls, fields)
        except SpecError as error:
            if error.where != f"{self.where}.args":  # there, only "missing required argument"
                raise

    def construct(
        self, cls: type[Any], arguments: Mapping[str, Any], layers: Sequence[Layer] | None = None
    ) -> Any:
        return super().construct(cls, arguments, layers) if self.marked is None else _Child()


def _constructor_parameters(cls: type[Layer]) -> dict[str, inspect.Parameter]:
    """The arguments a spec may give ``cls``: those of its ``__init__`` a keyword can
    name, as :meth:`SpecReader.arguments` reads them (placement ones refused there)."""
    found = _PARAMETERS.get(cls)
    if found is None:
        parameters = list(inspect.signature(cls.__init__).parameters.items())[1:]
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        found = _PARAMETERS[cls] = {name: p for name, p in parameters if p.kind in kinds}
    return found


_PARAMETERS: dict[type[Layer], dict[str, inspect.Parameter]] = {}
"""By class, what :func:`_constructor_parameters` found (``inspect.signature`` takes 0.1 ms)."""


def check_entry(
    entry: Mapping[str, Any], where: str, marked: Collection[str] | None, plain_rest: bool, *, root: bool
) -> None:
    """Read the layer entry ``entry`` at ``where`` as a spec reader would, but for its markers.

    ``marked``: the names of its arguments whose values hold markers, or None when
    its ``"args"`` and ``"layers"`` hold none (the entry is then read in full);
    ``plain_rest``: whether its other keys hold none (else only its type is read);
    ``root``: whether it is the document (its ``format_version`` is not the class's).

    :raises SpecError: a type that is not registered (naming the closest), a key or
        argument its class does not take, a plain value it refuses.
    """
    registry = current_plugins().registry
    type_name = entry.get("type")
    if (not isinstance(type_name, str) and not is_marker(type_name)) or any(
        not isinstance(k, str) for k in entry
    ):
        SpecReader(registry).layer(entry, where)  # refuses what stands for the type before reading on
    if isinstance(type_name, str):
        classes = [registry.resolve(type_name, where=f"{where}.type")]
    else:
        classes = _chosen_types(registry, type_name, f"{where}.type")
    # an entry written at an older version is read through migrations, which read plain entries only
    classes = [cls for cls in classes if entry.get("version", 1) == cls.spec_version]
    skipped = (*_ENTRY_KEYS, "format_version") if root else _ENTRY_KEYS
    fields = {key: value for key, value in entry.items() if key not in skipped}
    if not plain_rest:  # markers a class may read before its keys: its keys only
        for cls in classes:
            try:
                cls.from_spec_fields(fields, _EntryReader(registry, where, set(), keys_only=True))
            except _KeysRead as read:
                if read.error is not None:
                    raise read.error from None
            except SpecError:  # it read a marker before its keys: a sample's is read in its trial
                pass
        return
    layers = fields.get("layers")
    if is_marker(layers):
        fields["layers"] = []  # a choice of lists of layers: each is read where it stands
    elif isinstance(layers, tuple):
        fields["layers"] = list(layers)  # as a sample gives it
    items = fields["layers"] if isinstance(fields.get("layers"), list) else ()
    for cls in classes:
        cls.from_spec_fields(fields, _EntryReader(registry, where, marked, items=items))


def _chosen_types(registry: LayerRegistry, data: Any, where: str) -> list[type[Layer]]:
    """The classes of a ``$choice`` of type names, each option resolved at its place."""
    options = data.get("$choice") if isinstance(data, Mapping) else None
    if not isinstance(options, (list, tuple)) or set(data) - {"$choice", "name"}:
        raise SpecError(
            where,
            f"a layer's type is a name or a $choice of names, got {short_repr(data)}: "
            'write {"$choice": ["Linear", "Conv2d"]}',
        )
    classes = []
    for i, option in enumerate(options):
        if not isinstance(option, str):
            got = f"{type(option).__name__} {short_repr(option)}"
            raise SpecError(f"{where}.$choice[{i}]", f"expected a layer type name, got {got}")
        classes.append(registry.resolve(option, where=f"{where}.$choice[{i}]"))
    return classes
