"""The plugin manager: lazy entry-point loading, isolation of failures, the typed facade."""

from __future__ import annotations

import inspect
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from torchx.core import PluginError, PluginManager, PluginWarning, hookspecs
from torchx.core.testing import in_forked_child, install_fake_distribution

GOOD_PLUGIN = """
from torch import nn
from torchx.core import FromInput, LeafLayer, hookimpl

class Scale(nn.Module):
    def __init__(self, features, factor=2.0):
        super().__init__()
        self.weight = nn.Parameter(nn.init.constant_(nn.Parameter(nn.Linear(1, 1).weight.new_empty(features)), factor))
    def forward(self, x):
        return x * self.weight

class ScaleLayer(LeafLayer):
    native_class = Scale
    inferred_arguments = {"features": FromInput(dim=-1)}
    def __init__(self, factor: float = 2.0) -> None:
        super().__init__(factor=factor)

@hookimpl
def torchx_register_layers(registry):
    registry.register(ScaleLayer, aliases=("Scaler",))
    registry.export("SCALE_VERSION", "1.0")
"""


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A site directory for fake installs, removed from sys.path after the test."""
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def install(site: Path, name: str, source: str) -> None:
    module = f"tx_{name.replace('-', '_')}"
    install_fake_distribution(site, name, plugins={name: module}, modules={module: source})
    sys.modules.pop(module, None)


def test_a_third_party_plugin_registers_layers_that_specs_and_the_registry_resolve(site: Path) -> None:
    install(site, "torchx-scale", GOOD_PLUGIN)
    manager = PluginManager()
    registry = manager.registry
    cls = registry.resolve("scaler")
    assert registry.type_name(cls) == "ScaleLayer"
    assert registry.owner("ScaleLayer") == "torchx-scale"
    assert registry.exported("SCALE_VERSION") == "1.0"
    layer = cls()
    assert layer(torch.ones(2, 3)).shape == (2, 3)
    assert "torchx-scale" in manager.plugin_names()


def test_entry_points_load_lazily_on_first_registry_access(site: Path) -> None:
    install(site, "torchx-lazy", GOOD_PLUGIN.replace("ScaleLayer", "LazyLayer"))
    manager = PluginManager()
    assert "tx_torchx_lazy" not in sys.modules
    manager.registry.resolve("LazyLayer")
    assert "tx_torchx_lazy" in sys.modules


def test_a_plugin_that_fails_to_import_warns_and_the_rest_work(site: Path) -> None:
    install(site, "torchx-broken", "raise ImportError('missing dependency xyz')")
    install(site, "torchx-scale", GOOD_PLUGIN)
    manager = PluginManager()
    with pytest.warns(
        PluginWarning, match="'torchx-broken' failed \\(import\\): ImportError: missing dependency xyz"
    ):
        registry = manager.registry
    assert registry.resolve("ScaleLayer")
    assert [f.plugin for f in manager.failures] == ["torchx-broken"]


def test_a_plugin_raising_inside_its_hook_is_isolated(site: Path) -> None:
    install(
        site,
        "torchx-raises",
        """
from torchx.core import hookimpl
@hookimpl
def torchx_register_layers(registry):
    raise RuntimeError("boom")
""",
    )
    install(site, "torchx-scale", GOOD_PLUGIN)
    with pytest.warns(
        PluginWarning, match="'torchx-raises' failed \\(torchx_register_layers\\): RuntimeError: boom"
    ):
        registry = PluginManager().registry
    assert registry.resolve("ScaleLayer")


IMPOSTOR_PLUGIN = """
from torch import nn
from torchx.core import LeafLayer, hookimpl

class Impostor(LeafLayer):
    native_class = nn.Identity

@hookimpl
def torchx_register_layers(registry):
    registry.register(Impostor, name="ScaleLayer")
"""


def test_a_plugin_taking_a_taken_name_is_reported_and_the_first_wins(site: Path) -> None:
    install(site, "torchx-scale", GOOD_PLUGIN)
    install(site, "torchx-impostor", IMPOSTOR_PLUGIN)
    manager = PluginManager()
    with pytest.warns(PluginWarning, match="name 'ScaleLayer' is already registered by") as record:
        registry = manager.registry
    assert len(record) == 1
    loser = manager.failures[0].plugin
    winner = registry.owner("ScaleLayer")
    assert {loser, winner} == {"torchx-scale", "torchx-impostor"}
    assert f"{winner!r}" in str(record[0].message)


def test_a_plugin_with_an_unknown_hook_is_refused(site: Path) -> None:
    install(
        site,
        "torchx-typo",
        """
from torchx.core import hookimpl
@hookimpl
def torchx_register_layer(registry):  # missing 's'
    pass
""",
    )
    manager = PluginManager()
    with pytest.warns(PluginWarning, match="'torchx-typo' failed \\(register\\)"):
        manager.load()
    assert "torchx-typo" not in manager.plugin_names()


def test_strict_mode_turns_plugin_failures_into_errors(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install(site, "torchx-broken", "raise ImportError('nope')")
    monkeypatch.setenv("TORCHX_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="torchx-broken"):
        PluginManager().load()


def test_infer_output_hook_is_first_result() -> None:
    manager = PluginManager(load_entry_points=False)

    class Declines:
        @hookspecs.hookimpl
        def torchx_infer_output(self, module: object, inputs: object) -> object:
            return None

    class Answers:
        @hookspecs.hookimpl
        def torchx_infer_output(self, module: object, inputs: object) -> object:
            return torch.empty(3, device="meta")

    manager.register(Answers(), "answers")
    manager.register(Declines(), "declines")
    result = manager.infer_output(torch.nn.Identity(), (torch.empty(1, device="meta"),))
    assert result.shape == (3,)


def test_read_model_asks_readers_in_turn_and_a_torchx_error_is_the_answer() -> None:
    from torchx.core import SpecError

    manager = PluginManager(load_entry_points=False)

    class Broken:
        @hookspecs.hookimpl
        def torchx_read_model(self, path: str) -> object:
            raise RuntimeError("reader bug")

    class WrongType:
        @hookspecs.hookimpl
        def torchx_read_model(self, path: str) -> object:
            return "not a module"

    class Reads:
        @hookspecs.hookimpl
        def torchx_read_model(self, path: str) -> object:
            if path.endswith(".bad"):
                raise SpecError(path, "is corrupt")
            return nn.Identity() if path.endswith(".mine") else None

    manager.register(Reads(), "reads")
    manager.register(WrongType(), "wrong-type")
    manager.register(Broken(), "broken")
    with pytest.warns(PluginWarning):
        assert isinstance(manager.read_model("model.mine"), nn.Identity)
    assert manager.model_readers() == ["broken", "wrong-type", "reads"]
    assert {(failure.plugin, failure.stage) for failure in manager.failures} == {
        ("broken", "torchx_read_model"), ("wrong-type", "torchx_read_model"),
    }  # fmt: skip
    with pytest.warns(PluginWarning):
        assert manager.read_model("model.other") is None
        with pytest.raises(SpecError, match="is corrupt"):
            manager.read_model("model.bad")


def test_facade_methods_match_their_hookspecs() -> None:
    specs = {name: getattr(hookspecs, name) for name in dir(hookspecs) if name.startswith("torchx_")}
    assert specs, "no hookspecs found"
    for name, spec in specs.items():
        facade = getattr(PluginManager, name.removeprefix("torchx_"))
        spec_params = list(inspect.signature(spec).parameters)
        facade_params = [p for p in inspect.signature(facade).parameters if p != "self"]
        assert facade_params == spec_params, name
        assert spec.__doc__, f"{name} has no docstring"


def test_use_plugins_gives_each_test_a_fresh_manager(fresh_plugins: PluginManager) -> None:
    from torchx.core import current_plugins

    assert current_plugins() is fresh_plugins


# -- pluggy's calling rules ----------------------------------------------------


def test_an_implementation_may_take_a_subset_of_its_hooks_arguments() -> None:
    manager = PluginManager(load_entry_points=False)
    seen: list[object] = []

    class ModuleOnly:
        @hookspecs.hookimpl
        def torchx_infer_output(self, module: object) -> object:
            seen.append(module)
            return None

    class InputsByDefault:  # a parameter with a default gets the argument of its name
        @hookspecs.hookimpl
        def torchx_infer_output(self, inputs: Any = None) -> object:
            return inputs[0] * 2

    class NoArguments:
        @hookspecs.hookimpl
        def torchx_register_layers(self) -> None:
            seen.append("registered")

    manager.register(InputsByDefault(), "inputs-by-default")
    manager.register(ModuleOnly(), "module-only")
    manager.register(NoArguments(), "no-arguments")
    module, meta = torch.nn.Identity(), torch.empty(4, device="meta")
    assert manager.infer_output(module, (meta,)).shape == (4,)
    assert seen == [module]
    assert manager.registry.names() == []
    assert seen == [module, "registered"]
    assert manager.failures == []


@hookspecs.hookspec(firstresult=True)
def grown_infer_output(module: object, inputs: object, dtype: torch.dtype) -> object:
    """``torchx_infer_output`` as it may read one day: with an argument added."""


def test_a_hookspec_that_gains_an_argument_keeps_older_implementations_working(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import types

    import pluggy

    from torchx.core import _plugins as plugins

    specs = {name: getattr(hookspecs, name) for name in dir(hookspecs) if name.startswith("torchx_")}
    grown = types.SimpleNamespace(**{**specs, "torchx_infer_output": grown_infer_output})

    def grown_manager() -> pluggy.PluginManager:
        manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        manager.add_hookspecs(grown)
        return manager

    monkeypatch.setattr(plugins, "_new_pluggy_manager", grown_manager)

    class GrownFacade(PluginManager):
        def grown_infer_output(self, module: object, inputs: object, dtype: torch.dtype) -> Any:
            return self._first_result(
                "torchx_infer_output", lambda _: True, "anything", module=module, inputs=inputs, dtype=dtype
            )

    asked: list[tuple[object, ...]] = []

    class Older:  # written against today's spec
        @hookspecs.hookimpl
        def torchx_infer_output(self, module: object, inputs: tuple[torch.Tensor, ...]) -> object:
            asked.append(("older", len(inputs)))
            return inputs[0]

    class Newer:  # written against the grown spec; declines, so the older one is asked
        @hookspecs.hookimpl
        def torchx_infer_output(self, module: object, inputs: object, dtype: torch.dtype) -> object:
            asked.append(("newer", dtype))
            return None

    manager = GrownFacade(load_entry_points=False)
    manager.register(Older(), "older")
    manager.register(Newer(), "newer")
    meta = torch.empty(2, device="meta")
    assert manager.grown_infer_output(torch.nn.Identity(), (meta,), torch.float16) is meta
    assert asked == [("newer", torch.float16), ("older", 1)]
    assert manager.failures == []


WRAPPER_PLUGIN = """
from torchx.core import hookimpl
@hookimpl(OPTION=True)
def torchx_register_layers(registry):
    yield
"""


@pytest.mark.parametrize("option", ["wrapper", "hookwrapper"])
def test_a_plugin_with_a_hook_wrapper_is_refused_at_registration(site: Path, option: str) -> None:
    install(site, "torchx-wraps", WRAPPER_PLUGIN.replace("OPTION", option))
    install(site, "torchx-scale", GOOD_PLUGIN)
    manager = PluginManager()
    with pytest.warns(PluginWarning) as record:
        registry = manager.registry
    assert len(record) == 1
    message = str(record[0].message)
    assert message.startswith("TorchX plugin 'torchx-wraps' failed (register): PluginValidationError: ")
    assert f"its torchx_register_layers is a hook wrapper (hookimpl({option}=True))" in message
    assert "make torchx_register_layers a plain @hookimpl" in message
    assert "torchx-wraps" not in manager.plugin_names()
    assert registry.owner("ScaleLayer") == "torchx-scale"


def test_a_hook_wrapper_raises_in_strict_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCHX_STRICT_PLUGINS", "1")

    class Wraps:
        @hookspecs.hookimpl(wrapper=True)
        def torchx_resolve_device(self, device_id: object) -> Any:
            return (yield)

    manager = PluginManager(load_entry_points=False)
    with pytest.raises(PluginError, match=r"'wraps' failed.*torchx_resolve_device is a hook wrapper"):
        manager.register(Wraps(), "wraps")
    assert manager.device_backends() == []


def test_firstresult_specs_say_so_in_their_calling_rule() -> None:
    for name in dir(hookspecs):
        if name.startswith("torchx_"):
            spec = getattr(hookspecs, name)
            firstresult = getattr(spec, f"{hookspecs.PROJECT_NAME}_spec")["firstresult"]
            assert firstresult == ("Stops at the first non-None result." in spec.__doc__), name


def test_each_plugins_registrations_are_tagged_per_call_not_on_the_shared_registry() -> None:
    """While a plugin's hook runs, another thread registering in the same
    registry is not taken for that plugin (and the registry has no
    "current plugin" for it to be taken from)."""
    from toy_layers import Dense, Norm

    from torchx.core import LayerRegistry

    registry = LayerRegistry()
    inside, go_on = threading.Event(), threading.Event()

    class Slow:
        @hookspecs.hookimpl
        def torchx_register_layers(self, registry: LayerRegistry) -> None:
            inside.set()
            assert go_on.wait(10)
            registry.register(Dense)

    manager = PluginManager(load_entry_points=False)
    manager.register(Slow(), "slow")
    filling = threading.Thread(target=manager.register_layers, args=(registry,))
    filling.start()
    assert inside.wait(10)
    registry.register(Norm)  # directly, by this thread, while the plugin's hook runs
    go_on.set()
    filling.join(10)
    assert registry.owner("Dense") == "slow"
    assert registry.owner("Norm") == "<direct>"
    assert not hasattr(registry, "current_plugin")


# -- duplicate entry-point names ---------------------------------------------

MARKED_PLUGIN = """
import sys
sys.modules[__name__].__dict__.setdefault("IMPORTED", True)
from torchx.core import hookimpl
@hookimpl
def torchx_register_layers(registry):
    registry.export("WHO", {who!r})
"""


def install_in(
    monkeypatch: pytest.MonkeyPatch, root: Path, distribution: str, entry_point: str, who: str
) -> str:
    """Install ``distribution`` in its own site directory ``root``, put first on
    ``sys.path``, with one ``torchx.plugins`` entry point ``entry_point``;
    returns its module's name."""
    module = f"tx_{distribution.replace('-', '_')}"
    monkeypatch.syspath_prepend(str(root))
    install_fake_distribution(
        root, distribution, plugins={entry_point: module}, modules={module: MARKED_PLUGIN.format(who=who)}
    )
    sys.modules.pop(module, None)
    return module


def test_two_distributions_with_one_entry_point_name_keep_the_first_and_report_the_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    second = install_in(monkeypatch, tmp_path / "later", "acme-fork", "acme", "fork")
    install_in(monkeypatch, tmp_path / "earlier", "acme-tools", "acme", "tools")  # first on sys.path
    manager = PluginManager()
    with pytest.warns(
        PluginWarning, match="'acme-fork' failed \\(entry point\\).*'acme'.*acme-tools"
    ) as record:
        registry = manager.registry
    assert len([w for w in record if "acme" in str(w.message)]) == 1
    assert registry.exported("WHO") == "tools"
    assert second not in sys.modules  # the skipped duplicate never ran
    assert manager.distributions["acme"] == ("acme-tools", "0.1")
    assert [(f.plugin, f.stage) for f in manager.failures] == [("acme-fork", "entry point")]


def test_the_distribution_named_like_an_entry_point_owns_it_wherever_it_is_on_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_in(monkeypatch, tmp_path / "later", "acme", "acme", "owner")
    squatter = install_in(monkeypatch, tmp_path / "earlier", "acme-squat", "acme", "squatter")
    manager = PluginManager()
    with pytest.warns(
        PluginWarning,
        match="'acme-squat' failed \\(entry point\\).*distribution acme 0.1 declares it too and keeps it",
    ):
        registry = manager.registry
    assert registry.exported("WHO") == "owner"
    assert squatter not in sys.modules
    assert manager.distributions["acme"] == ("acme", "0.1")


def test_strict_mode_raises_for_a_duplicate_entry_point_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_in(monkeypatch, tmp_path / "later", "acme-fork", "acme", "fork")
    install_in(monkeypatch, tmp_path / "earlier", "acme-tools", "acme", "tools")
    monkeypatch.setenv("TORCHX_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match=r"'acme-fork'.*entry point 'acme'"):
        PluginManager().load()


def test_a_foreign_distribution_never_takes_a_built_in_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib.metadata import version

    pytest.importorskip("torchx.layers", reason="the built-in name's owner, torchx-layers, is not installed")

    hijacker = install_in(monkeypatch, tmp_path / "first", "layers-plus", "torchx-layers", "hijacker")
    manager = PluginManager()
    with pytest.warns(PluginWarning, match="'layers-plus' failed \\(entry point\\).*'torchx-layers'"):
        registry = manager.registry
    assert registry.owner("Linear") == "torchx-layers"
    assert registry.exported("WHO") is None
    assert hijacker not in sys.modules
    assert manager.distributions["torchx-layers"] == ("torchx-layers", version("torchx-layers"))
    for name in manager.plugin_names():  # every listed plugin names the distribution that provided it
        if name in manager.distributions:
            assert manager.distributions[name][0] != "layers-plus"


def test_a_built_in_name_is_reserved_even_when_that_distribution_is_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchx.core import _plugins as plugins

    monkeypatch.setattr(plugins, "BUILTIN_PLUGINS", plugins.BUILTIN_PLUGINS | {"torchx-absent"})
    squatter = install_in(monkeypatch, tmp_path / "site", "absent-lookalike", "torchx-absent", "squatter")
    manager = PluginManager()
    with pytest.warns(PluginWarning, match="'absent-lookalike'.*TorchX's own distribution torchx-absent"):
        manager.load()
    assert "torchx-absent" not in manager.plugin_names()
    assert squatter not in sys.modules


def test_an_entry_point_for_a_plugin_already_registered_under_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    module = install_in(monkeypatch, tmp_path / "site", "acme", "acme", "owner")
    same = PluginManager()
    same.register(importlib.import_module(module), "acme")
    same.load()  # the same module: nothing to report
    assert same.failures == []
    other = PluginManager()
    other.register(object(), "acme")
    with pytest.warns(PluginWarning, match="'acme' failed \\(entry point\\).*already registered"):
        other.load()


# -- os.fork() while another thread holds a plugin lock ------------------------


class HeldLocks:
    """A thread that holds ``locks`` until :meth:`release`."""

    def __init__(self, *locks: Any) -> None:
        self.locks = locks
        self.holding, self.done = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._hold, daemon=True)
        self.thread.start()
        assert self.holding.wait(10)

    def _hold(self) -> None:
        for lock in self.locks:
            lock.acquire()
        self.holding.set()
        self.done.wait(30)
        for lock in reversed(self.locks):
            lock.release()

    def release(self) -> None:
        self.done.set()
        self.thread.join(10)


def test_a_fork_while_another_thread_holds_the_plugin_locks_finishes_in_the_child() -> None:
    from torchx.core import _plugins as plugins
    from torchx.core import current_plugins

    manager = PluginManager(load_entry_points=False)
    manager.load()

    def child() -> None:
        class Backend:
            @hookspecs.hookimpl
            def torchx_resolve_device(self, device_id: object) -> object:
                return None

        manager.register(Backend(), "late-backend")  # takes the manager's lock
        assert manager.device_backends() == ["late-backend"]
        assert manager.registry.names() == []
        plugins._default = None  # the next call takes the default lock
        assert current_plugins() is not None

    held = HeldLocks(manager._lock, plugins._default_lock)
    try:
        problem = in_forked_child(child)
    finally:
        held.release()
    assert problem == ""
    assert manager.plugin_names() == []  # the parent's manager: as it was


GATED_PLUGIN = """
import fork_gate
fork_gate.importing.set()
fork_gate.release.wait(30)
"""


def test_a_fork_during_a_plugin_import_in_another_thread_resumes_loading_in_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path / "later"))
    install(tmp_path / "later", "torchx-scale", GOOD_PLUGIN)  # found after the gated plugin
    monkeypatch.syspath_prepend(str(tmp_path / "first"))
    (tmp_path / "first").mkdir()
    (tmp_path / "first" / "fork_gate.py").write_text(
        "import threading\nimporting, release = threading.Event(), threading.Event()\n", encoding="utf-8"
    )
    install(tmp_path / "first", "torchx-gated", GATED_PLUGIN)
    sys.modules.pop("fork_gate", None)
    import fork_gate

    manager = PluginManager()
    loading = threading.Thread(target=manager.load, daemon=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)
        loading.start()
        assert fork_gate.importing.wait(10)  # the thread is inside the gated import, holding the lock

        def child() -> None:
            registry = manager.registry  # loading resumes after the import the fork cut off
            assert registry.resolve("ScaleLayer")
            assert "torchx-gated" not in manager.plugin_names()
            assert "torchx-scale" in manager.plugin_names()
            cut = [f for f in manager.failures if f.plugin == "torchx-gated"]
            assert len(cut) == 1 and cut[0].stage == "import" and "fork" in cut[0].error, manager.failures

        try:
            problem = in_forked_child(child)
        finally:
            fork_gate.release.set()
            loading.join(30)
    assert problem == ""
    assert {"torchx-gated", "torchx-scale"} <= set(manager.plugin_names())  # the parent's load finished
    sys.modules.pop("fork_gate", None)
