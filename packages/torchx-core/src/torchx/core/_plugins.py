"""The plugin manager, its typed hook facade, and the current-manager switch.

Plugins come from the ``torchx.plugins`` entry-point group and are loaded
lazily, on first use, one entry point at a time: a plugin that fails to import,
fails validation, raises inside a hook or returns what its hook does not
allow is reported with a :class:`~torchx.core.PluginWarning` naming
it, and every other plugin keeps working (so is one that takes longer than
:data:`SLOW_IMPORT_SECONDS` to import, which still loads). Two entry points
with one name load one plugin; the other is reported and never imported (see
:meth:`PluginManager._entry_points` for which one wins). With
``TORCHX_STRICT_PLUGINS=1`` such a report raises
:class:`~torchx.core.PluginError` instead.

The facade calls each plugin's implementation on its own (that is what
isolates them), keeping pluggy's calling rules: implementations in pluggy's
order (``tryfirst``/``trylast``, then latest registered first), each given
only the arguments it declares, and a ``firstresult`` hook stopping at the
first accepted non-None result. A hook wrapper has no call to wrap here, so a
plugin with one is refused when it registers.

A child of ``os.fork()`` can use the managers even when another thread held
their lock at the fork (see :meth:`PluginManager._after_fork_in_child`).
"""

from __future__ import annotations

import contextvars
import os
import re
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pluggy

from torchx.core import hookspecs
from torchx.core._commands import CommandRegistry
from torchx.core._errors import DeviceError, PluginError, PluginWarning, TorchXError
from torchx.core._placement import Placement
from torchx.core._registry import LayerRegistry, MigrationRegistry, registering_as

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    import torch
    from torch import nn

__all__ = [
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "PluginFailure",
    "PluginManager",
    "current_plugins",
    "use_plugins",
]

ENTRY_POINT_GROUP = "torchx.plugins"
STRICT_ENV_VAR = "TORCHX_STRICT_PLUGINS"
BUILTIN_PLUGINS = frozenset(
    {
        "torchx-core",
        "torchx-device",
        "torchx-functional",
        "torchx-keras",
        "torchx-layers",
        "torchx-rnn",
        "torchx-tune",
    }
)
"""Entry-point names only TorchX's own distributions of those names may use."""
SLOW_IMPORT_SECONDS = 2.0
"""A plugin whose import takes longer is reported (it still loads): plugins
load on first use, and a slow one stalls whichever call comes first."""


@dataclass(frozen=True)
class PluginFailure:
    """One plugin's failure: which plugin, at which stage, and the error text.

    ``failed`` is False for a report about a plugin that still works (one
    slow to import).
    """

    plugin: str
    stage: str
    error: str
    failed: bool = True


class PluginManager:
    """Discovers plugins and calls their hooks through typed methods.

    There is no global singleton baked into the classes: code that needs
    plugins asks :func:`current_plugins`, and tests install a fresh manager
    with :func:`use_plugins`.
    """

    def __init__(self, *, load_entry_points: bool = True) -> None:
        self._pm = _new_pluggy_manager()
        self._load_entry_points = load_entry_points
        self._loaded = False
        self._lock = threading.RLock()
        self._registry: LayerRegistry | None = None
        self._placements: dict[object, Placement] = {}
        self.failures: list[PluginFailure] = []
        self.distributions: dict[str, tuple[str, str]] = {}
        """``(distribution, version)`` of each plugin loaded from an entry point."""
        self._registered: list[tuple[object, str]] = []
        self._loading = False
        self._importing: str | None = None
        self._handled: set[str] = set()
        self._cut_off: set[str] = set()
        _MANAGERS.add(self)

    # -- discovery ----------------------------------------------------------

    def register(self, plugin: object, name: str) -> None:
        """Register ``plugin`` (a module or object with hook implementations)."""
        with self._lock:
            try:
                self._pm.register(plugin, name=name)
                self._pm.check_pending()
                _refuse_wrappers(self._pm, plugin)
            except Exception as error:  # noqa: BLE001 - isolate the plugin
                if self._pm.is_registered(plugin):
                    self._pm.unregister(plugin)
                self._report(name, "register", error)
                return
            self._registered.append((plugin, name))
            self._registry = None
            self._placements = {}

    def load(self) -> None:
        """Load every ``torchx.plugins`` entry point once (idempotent).

        One plugin per entry-point name: see :meth:`_entry_points` for which
        of two entry points with one name is loaded.
        """
        with self._lock:
            if self._loaded:
                return
            if not self._load_entry_points:
                self._loaded = True
                return
            self._loading = True  # before _loaded: a fork in between must see the load unfinished
            self._loaded = True
            try:
                for entry_point in self._entry_points():
                    if entry_point.name not in self._handled:
                        self._load_one(entry_point)
                        self._handled.add(entry_point.name)
            finally:
                self._loading = False

    def _load_one(self, entry_point: EntryPoint) -> None:
        """Import and register one entry point's plugin, reporting what goes wrong."""
        if entry_point.name in self._cut_off:
            self._report(
                entry_point.name,
                "import",
                "os.fork() ran while another thread was importing it, and this process (the child) cannot "
                "import it again: its import lock belongs to a thread that does not exist here",
            )
            return
        if self._already_registered(entry_point):
            return
        if entry_point.dist is not None:
            self.distributions[entry_point.name] = (entry_point.dist.name, entry_point.dist.version)
        started = time.perf_counter()
        self._importing = entry_point.name
        try:
            plugin = entry_point.load()
        except Exception as error:  # noqa: BLE001 - isolate the plugin
            self._report(entry_point.name, "import", error)
            return
        finally:
            self._importing = None
        took = time.perf_counter() - started
        if took > SLOW_IMPORT_SECONDS:
            self._report(
                entry_point.name,
                "import",
                f"took {took:.1f} s to import (more than {SLOW_IMPORT_SECONDS} s); it loaded, "
                "but it should import its heavy dependencies lazily",
                failed=False,
            )
        self.register(plugin, entry_point.name)

    def _entry_points(self) -> list[EntryPoint]:
        """The ``torchx.plugins`` entry points to load: one per name, in the
        order ``importlib.metadata`` finds them (``sys.path`` order). Every
        entry point left out is reported against its distribution, before
        anything is imported (a left-out plugin's code never runs).

        Which one of two entry points with one name is loaded:

        - A name in :data:`BUILTIN_PLUGINS` is loaded only from the TorchX
          distribution of that name, even when that distribution is not
          installed: another distribution declaring ``torchx-layers`` would
          otherwise replace every built-in layer (its registrations come first
          under the built-in's name), and ``torchx plugins`` would list it as
          torchx-layers.
        - Otherwise the distribution whose name is the entry point's name
          (the convention: entry-point name = distribution name) keeps it,
          wherever it is on ``sys.path``: distribution names are unique in an
          environment and on PyPI, ``sys.path`` order is not something a user
          chooses knowingly (a ``.pth`` file, ``PYTHONPATH``, a user-site
          install all change it).
        - Between two distributions neither of which is named so, the first
          found keeps the name: that is the one Python itself would import
          for a module name on ``sys.path``, and the registry keeps the first
          registration of a layer name for the same reason (stable, and
          visible in the report).
        """
        from importlib.metadata import entry_points

        chosen: dict[str, EntryPoint] = {}
        left_out: list[tuple[EntryPoint, str]] = []
        for entry_point in entry_points(group=ENTRY_POINT_GROUP):
            name = entry_point.name
            if name in BUILTIN_PLUGINS and not _owns(entry_point):
                left_out.append((entry_point, f"{name!r} is reserved for TorchX's own distribution {name}"))
                continue
            held = chosen.get(name)
            if held is None:
                chosen[name] = entry_point
                continue
            if _owns(entry_point) and not _owns(held):
                chosen[name], entry_point, held = entry_point, held, entry_point
            found = "" if _owns(held) else ", found first on sys.path,"
            left_out.append(
                (entry_point, f"distribution {_describe(held)}{found} declares it too and keeps it")
            )
        for entry_point, reason in left_out:
            own = entry_point.dist.name if entry_point.dist is not None else None
            fix = f"; name the entry point after its own distribution, {own!r}" if own else ""
            text = f"its entry point {entry_point.name!r} = {entry_point.value} was not loaded: {reason}{fix}"
            if PluginFailure(_culprit(entry_point), "entry point", text) not in self.failures:  # once
                self._report(_culprit(entry_point), "entry point", text)
        return list(chosen.values())

    def _already_registered(self, entry_point: EntryPoint) -> bool:
        """Whether a plugin is registered under ``entry_point``'s name already
        (by :meth:`register`, before loading). It is no problem when that
        plugin is the entry point's own module; otherwise the entry point is
        reported and not loaded."""
        registered = self._pm.get_plugin(entry_point.name)
        if registered is None:
            return False
        if registered is _imported_target(entry_point):
            return True
        self._report(
            _culprit(entry_point),
            "entry point",
            f"its entry point {entry_point.name!r} = {entry_point.value} was not loaded: another plugin "
            f"({type(registered).__name__}) is already registered under that name",
        )
        return True

    def plugin_names(self) -> list[str]:
        """The names of every registered plugin, in registration order."""
        self.load()
        return [name for name, _ in self._pm.list_name_plugin()]

    @property
    def registry(self) -> LayerRegistry:
        """The layer registry, filled by every plugin's ``torchx_register_layers``
        (and its migrations by every ``torchx_register_migrations``)."""
        with self._lock:
            self.load()
            if self._registry is None:
                registry = LayerRegistry()
                self.register_layers(registry)
                self._registry = registry
            return self._registry

    # -- the typed hook facade ---------------------------------------------

    def register_layers(self, registry: LayerRegistry) -> None:
        """Call ``torchx_register_layers`` on each plugin separately.

        One plugin raising, or taking a name that is already taken, is reported
        against that plugin; the others' registrations stand. Then each
        plugin's ``torchx_register_migrations`` adds to ``registry.migrations``.
        """
        self._each_plugin("torchx_register_layers", into="registry", registry=registry)
        self.register_migrations(registry.migrations)

    def register_migrations(self, migrations: MigrationRegistry) -> None:
        """Call ``torchx_register_migrations`` on each plugin separately, isolating
        failures and migrations of types the plugin does not own."""
        self._each_plugin("torchx_register_migrations", into="migrations", migrations=migrations)

    def _each_plugin(self, hook: str, *, into: str, **arguments: Any) -> None:
        """Call ``hook``'s implementations one by one with ``arguments``; the one
        named ``into`` is the registry the hook adds to. What each plugin adds
        is recorded as its own (see :func:`~torchx.core._registry.registering_as`);
        a plugin that raises, or takes a name already taken, is reported
        against it."""
        target: LayerRegistry | MigrationRegistry | CommandRegistry = arguments[into]
        for impl in reversed(getattr(self._pm.hook, hook).get_hookimpls()):
            seen = len(target.conflicts)
            with registering_as(impl.plugin_name):
                try:
                    returned = _call(impl, arguments)
                except Exception as error:  # noqa: BLE001 - isolate the plugin
                    self._report(impl.plugin_name, hook, error)
                else:
                    if returned is not None:
                        self._report(
                            impl.plugin_name,
                            hook,
                            f"returned {type(returned).__name__}, which is ignored: {hook} adds to its "
                            f"{into} argument and returns None",
                        )
            for conflict in target.conflicts[seen:]:
                self._report(
                    conflict.rejected,
                    hook,
                    f"name {conflict.name!r} is already registered by {conflict.owner!r}",
                )

    def register_commands(self, commands: CommandRegistry) -> None:
        """Call ``torchx_register_commands`` on each plugin separately, isolating
        failures and name conflicts as :meth:`register_layers` does."""
        self.load()
        self._each_plugin("torchx_register_commands", into="commands", commands=commands)

    def infer_output(self, module: nn.Module, inputs: tuple[torch.Tensor, ...]) -> Any | None:
        """The first plugin's ``torchx_infer_output`` result, or None.

        A plugin that raises, or returns anything but meta tensors (in tuples,
        lists or dicts), is reported, and the next one is asked.
        """
        self.load()
        return self._first_result(
            "torchx_infer_output", _is_meta_output, "meta tensors or None", module=module, inputs=inputs
        )

    def read_model(self, path: str) -> nn.Module | None:
        """The first plugin's ``torchx_read_model`` result for the file ``path``, or None.

        A :class:`~torchx.core.TorchXError` propagates (the file is of that
        plugin's format, and wrong); any other exception, or a result that is
        not a module, is reported against its plugin, and the next one is asked.
        """
        from torch import nn

        self.load()
        model: nn.Module | None = self._first_result(
            "torchx_read_model", lambda result: isinstance(result, nn.Module), "a module or None",
            raising=TorchXError, path=path,
        )  # fmt: skip
        return model

    def resolve_device(self, device_id: object) -> Placement | None:
        """The first backend's ``torchx_resolve_device`` result, or None (cached).

        A backend's :class:`~torchx.core.DeviceError` propagates: it is
        the answer for an id of its form. Any other exception, or a result
        that is not a Placement, is reported against that backend, and the
        next one is asked.
        """
        key = _placement_key(device_id)
        try:
            cached = self._placements.get(key)
        except TypeError:  # an unhashable id (a list holding a dict, say): not cached
            key = cached = None
        if cached is not None:
            return cached
        self.load()
        placement: Placement | None = self._first_result(
            "torchx_resolve_device",
            lambda result: isinstance(result, Placement),
            "a Placement or None",
            raising=DeviceError,
            device_id=device_id,
        )
        if placement is not None and key is not None and placement.cache:
            self._placements[key] = placement
        return placement

    def _first_result(
        self,
        hook: str,
        valid: Callable[[Any], bool],
        expected: str,
        raising: type[Exception] | tuple[type[Exception], ...] = (),
        **arguments: Any,
    ) -> Any | None:
        """The first non-None, ``valid`` result of ``hook``'s implementations,
        latest registered first (the ``firstresult`` rule, with each plugin
        isolated). An exception of a ``raising`` type is the answer and
        propagates; any other exception, or an invalid result, is reported
        against its plugin and the next one is asked."""
        for impl in reversed(getattr(self._pm.hook, hook).get_hookimpls()):
            try:
                result = _call(impl, arguments)
            except raising:
                raise
            except Exception as error:  # noqa: BLE001 - isolate the plugin
                self._report(impl.plugin_name, hook, error)
                continue
            if result is None:
                continue
            if not valid(result):
                self._report(impl.plugin_name, hook, f"returned {type(result).__name__}, expected {expected}")
                continue
            return result
        return None

    def device_backends(self) -> list[str]:
        """The plugins that implement ``torchx_resolve_device``, first asked first."""
        return self._implementers("torchx_resolve_device")

    def model_readers(self) -> list[str]:
        """The plugins that implement ``torchx_read_model``, first asked first."""
        return self._implementers("torchx_read_model")

    def _implementers(self, hook: str) -> list[str]:
        self.load()
        return [impl.plugin_name for impl in reversed(getattr(self._pm.hook, hook).get_hookimpls())]

    # -- os.fork() ---------------------------------------------------------

    def _after_fork_in_child(self) -> None:
        """Make this manager usable in a child of ``os.fork()``.

        Only the forking thread survives a fork. When it held the manager's
        lock itself, or no thread did, nothing needs doing. When another
        thread held it, the child would wait for that lock forever, and what
        the lock guards may be half-written: a pluggy registration stopped
        halfway, ``_loaded`` set by a load that had not finished, a plugin
        import stopped in the middle. Waiting in the parent for the lock to be
        free before forking (as the build lock does) would make a fork wait
        for a slow plugin import, and deadlock when the holder waits for a lock
        the forking thread holds (a build calls into plugins; a plugin's
        import may build). Plugin state is a cache of what is installed, so
        the child rebuilds it instead: a fresh lock, a fresh pluggy manager
        holding every registration that had completed, a load that had not
        finished resumes on next use after the last entry point it finished,
        and the entry point whose import was cut off is reported, not imported
        again (Python's lock on that module belongs to the vanished thread,
        so importing it in the child would hang). A direct :meth:`register`
        cut off halfway is lost with the thread that made it.
        """
        if self._lock.acquire(blocking=False):  # free, or held by the forking thread
            self._lock.release()
            return
        self._lock = threading.RLock()
        if self._importing is not None:
            self._cut_off.add(self._importing)
            self._importing = None
        if self._loading:
            self._loaded = self._loading = False
        manager = _new_pluggy_manager()
        for plugin, name in self._registered:
            manager.register(plugin, name=name)
        self._pm = manager
        self._registry = None
        self._placements = {}

    # -- failure reporting --------------------------------------------------

    def _report(self, plugin: str, stage: str, error: BaseException | str, *, failed: bool = True) -> None:
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        self.failures.append(PluginFailure(plugin, stage, text, failed))
        message = (
            f"TorchX plugin {plugin!r} {'failed' if failed else 'loaded, with a problem'} ({stage}): {text}"
        )
        if os.environ.get(STRICT_ENV_VAR, "") not in ("", "0"):
            raise PluginError(message) from (error if isinstance(error, BaseException) else None)
        warnings.warn(message, PluginWarning, stacklevel=3)


def _new_pluggy_manager() -> pluggy.PluginManager:
    """A pluggy manager that knows TorchX's hookspecs, with no plugin registered."""
    manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    return manager


def _call(impl: pluggy.HookImpl, arguments: Mapping[str, Any]) -> Any:
    """Call ``impl`` as pluggy does: with only the arguments it declares.

    An implementation may take any subset of its hookspec's arguments (and a
    parameter with a default gets the argument of that name when there is
    one), so a hookspec that gains an argument keeps every existing plugin
    working.
    """
    keywords = {name: arguments[name] for name in impl.kwargnames if name in arguments}
    return impl.function(*[arguments[name] for name in impl.argnames], **keywords)


def _refuse_wrappers(manager: pluggy.PluginManager, plugin: object) -> None:
    """Raise when ``plugin`` (registered in ``manager``) has a hook wrapper.

    The facade calls each implementation on its own, to report a failing
    plugin and go on with the others, so there is no call for a wrapper
    (``wrapper=True`` or ``hookwrapper=True``) to wrap: registering it would
    silently never run its code around the other plugins.
    """
    for caller in manager.get_hookcallers(plugin) or ():
        for impl in caller.get_hookimpls():
            if impl.plugin is plugin and (impl.wrapper or impl.hookwrapper):
                option = "wrapper=True" if impl.wrapper else "hookwrapper=True"
                raise pluggy.PluginValidationError(
                    plugin,
                    f"its {caller.name} is a hook wrapper (hookimpl({option})), which TorchX does not "
                    f"support: each plugin's implementation is called on its own, so there is no call to "
                    f"wrap; make {caller.name} a plain @hookimpl",
                )


def _imported_target(entry_point: EntryPoint) -> object:
    """What ``entry_point`` would load, if its module is imported already (else None)."""
    target: object = sys.modules.get(entry_point.module)
    for attribute in entry_point.attr.split(".") if entry_point.attr else ():
        target = getattr(target, attribute, None)
    return target


def _normalized(name: str) -> str:
    """A distribution name as packaging compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _owns(entry_point: EntryPoint) -> bool:
    """Whether ``entry_point`` comes from the distribution it is named after."""
    return entry_point.dist is not None and _normalized(entry_point.dist.name) == _normalized(
        entry_point.name
    )


def _describe(entry_point: EntryPoint) -> str:
    """``name version`` of ``entry_point``'s distribution."""
    dist = entry_point.dist
    return "(unknown)" if dist is None else f"{dist.name} {dist.version}"


def _culprit(entry_point: EntryPoint) -> str:
    """Whom to report a left-out entry point against: its distribution (the
    name one uninstalls; the entry point's name is somebody else's too)."""
    return entry_point.name if entry_point.dist is None else entry_point.dist.name


def _is_meta_output(output: Any) -> bool:
    """Whether ``output`` is meta tensors, in any nesting of tuples, lists and dicts."""
    import torch
    from torch.utils._pytree import tree_leaves

    return all(isinstance(leaf, torch.Tensor) and leaf.is_meta for leaf in tree_leaves(output))


def _placement_key(device_id: object) -> object:
    """A cache key for ``device_id`` that tells ``1`` from ``True`` and lists
    from tuples (it may be unhashable)."""
    if isinstance(device_id, (list, tuple)):
        return (type(device_id), tuple((type(item), item) for item in device_id))
    return (type(device_id), device_id)


_current: contextvars.ContextVar[PluginManager | None] = contextvars.ContextVar(
    "torchx_plugins", default=None
)
_default: PluginManager | None = None
_default_lock = threading.Lock()
_MANAGERS: weakref.WeakSet[PluginManager] = weakref.WeakSet()
"""Every plugin manager alive, for the fork handler."""


def _after_fork_in_child() -> None:
    """In a child of ``os.fork()``: a default lock that no vanished thread holds
    (what it guards, the assignment of ``_default``, is atomic, so a fresh lock
    is all it needs), and every manager made usable (see
    :meth:`PluginManager._after_fork_in_child`)."""
    global _default_lock
    _default_lock = threading.Lock()
    for manager in list(_MANAGERS):
        manager._after_fork_in_child()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)


def current_plugins() -> PluginManager:
    """The plugin manager in use: the one installed by :func:`use_plugins`, or
    the process-wide default (created, not yet loaded, on first call)."""
    global _default
    manager = _current.get() or _default
    if manager is not None:
        return manager
    with _default_lock:
        if _default is None:
            _default = PluginManager()
        return _default


@contextmanager
def use_plugins(manager: PluginManager) -> Iterator[PluginManager]:
    """Use ``manager`` as the current plugin manager inside the block."""
    token = _current.set(manager)
    try:
        yield manager
    finally:
        _current.reset(token)
