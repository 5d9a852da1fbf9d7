"""Faulty plugins, installed as a user would install them: the host imports,
every other plugin works, a warning names each culprit, strict mode raises,
and ``torchx plugins`` reports them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import torch
from report import Report

import torchx
from torchx.core import PluginError, PluginManager, PluginWarning, from_spec, use_plugins
from torchx.core import _plugins as plugins
from torchx.core.testing import install_fake_distribution

LAYER = """
from torch import nn
from torchx.core import FromInput, LeafLayer, hookimpl

class Twice(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(nn.init.constant_(nn.Linear(1, 1).weight.new_empty(features), 2.0))
    def forward(self, x):
        return x * self.scale

class {name}(LeafLayer):
    native_class = Twice
    inferred_arguments = {{"features": FromInput(dim=-1)}}
    def __init__(self) -> None:
        super().__init__()
"""

FAULTS = {
    # plugin name: (what is wrong with it, its module source)
    "fault-import": (
        "raises ImportError on load",
        "raise ImportError('needs the missing package fancy_dep')",
    ),
    "fault-hook": (
        "raises inside its hook",
        "from torchx.core import hookimpl\n@hookimpl\ndef torchx_register_layers(registry):\n"
        "    raise RuntimeError('registry exploded')",
    ),
    "fault-duplicate": (
        "registers a name already taken",
        LAYER.format(name="Linear") + "@hookimpl\ndef torchx_register_layers(registry):\n"
        "    registry.register(Linear)",
    ),
    "fault-return": (
        "returns wrong types from its hooks",
        LAYER.format(name="Returned") + "@hookimpl\ndef torchx_register_layers(registry):\n"
        "    return [Returned]\n"
        "@hookimpl\ndef torchx_resolve_device(device_id):\n    return 'cuda:0'\n"
        "@hookimpl\ndef torchx_infer_output(module, inputs):\n    return 'a string'\n",
    ),
    "fault-slow": (
        "is slow to import",
        "import time\ntime.sleep({slow})\n"
        + LAYER.format(name="SlowTwice")
        + "@hookimpl\ndef torchx_register_layers(registry):\n    registry.register(SlowTwice)",
    ),
}
GOOD = (
    LAYER.format(name="GoodTwice")
    + "@hookimpl\ndef torchx_register_layers(registry):\n    registry.register(GoodTwice)"
)


def _install(site: Path, slow_seconds: float) -> None:
    for name, (_, source) in {**FAULTS, "good-plugin": ("", GOOD)}.items():
        module = name.replace("-", "_")
        install_fake_distribution(
            site, name, plugins={name: module}, modules={module: source.replace("{slow}", str(slow_seconds))}
        )
        sys.modules.pop(module, None)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugins, "SLOW_IMPORT_SECONDS", 0.2)
    _install(tmp_path, slow_seconds=0.3)
    return tmp_path


def test_every_fault_is_reported_against_its_plugin_and_the_rest_work(site: Path, report: Report) -> None:
    manager = PluginManager()
    with use_plugins(manager), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry = manager.registry
        good = from_spec({"type": "GoodTwice"})
        slow = from_spec({"type": "SlowTwice"})
        linear = from_spec({"type": "Linear", "args": {"out_features": 3}})
        with torchx.device_scope("cpu"):
            scoped = torch.zeros(2)
        output = manager.infer_output(torch.nn.ReLU(), (torch.empty(2, device="meta"),))
    assert torch.equal(good(torch.ones(2, 4)), torch.full((2, 4), 2.0))
    assert torch.equal(slow(torch.ones(1, 2)), torch.full((1, 2), 2.0))  # slow, but it works
    assert type(linear).__name__ == "Linear" and linear(torch.zeros(2, 5)).shape == (2, 3)
    assert registry.owner("Linear") == "torchx-layers"  # the impostor did not take it
    assert scoped.device.type == "cpu" and output is None
    messages = [str(w.message) for w in caught if issubclass(w.category, PluginWarning)]
    for name in FAULTS:
        assert any(f"TorchX plugin {name!r}" in message for message in messages), (name, messages)
        report.count("fault", f"plugin that {FAULTS[name][0]}")
    stages = {(f.plugin, f.stage) for f in manager.failures}
    assert {
        ("fault-import", "import"),
        ("fault-hook", "torchx_register_layers"),
        ("fault-duplicate", "torchx_register_layers"),
        ("fault-return", "torchx_register_layers"),
        ("fault-return", "torchx_resolve_device"),
        ("fault-return", "torchx_infer_output"),
        ("fault-slow", "import"),
    } <= stages
    assert "good-plugin" not in {f.plugin for f in manager.failures}


@pytest.mark.parametrize("culprit", sorted(FAULTS))
def test_strict_mode_raises_for_each_culprit(
    culprit: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: Report
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(plugins, "SLOW_IMPORT_SECONDS", 0.2)
    monkeypatch.setenv("TORCHX_STRICT_PLUGINS", "1")
    _, source = FAULTS[culprit]
    module = culprit.replace("-", "_")
    install_fake_distribution(
        tmp_path, culprit, plugins={culprit: module}, modules={module: source.replace("{slow}", "0.3")}
    )
    sys.modules.pop(module, None)
    manager = PluginManager()
    with use_plugins(manager), pytest.raises(PluginError, match=f"TorchX plugin {culprit!r}"):
        manager.registry  # noqa: B018 - loading is the point
    report.count("fault", "strict-mode plugin faults raised")


HOST = """
import json, io, contextlib, torch
import torchx, torchx.layers as L
from torchx.cli import main
model = L.Sequential(L.Linear(4), L.GoodTwice())
assert model(torch.ones(2, 3)).shape == (2, 4)
out = io.StringIO()
with contextlib.redirect_stdout(out):
    status = main(["plugins", "--format", "json"])
text = io.StringIO()
with contextlib.redirect_stdout(text):
    main(["plugins"])
print(json.dumps({"status": status, "report": json.loads(out.getvalue()), "text": text.getvalue()}))
"""


def test_the_host_imports_and_torchx_plugins_reports_each_culprit(tmp_path: Path, report: Report) -> None:
    _install(tmp_path, slow_seconds=plugins.SLOW_IMPORT_SECONDS + 0.2)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    env.pop("TORCHX_STRICT_PLUGINS", None)
    result = subprocess.run(
        [sys.executable, "-W", "default", "-c", textwrap.dedent(HOST)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    failures = outcome["report"]["failures"]
    loaded = {entry["plugin"]: entry for entry in outcome["report"]["plugins"]}
    assert loaded["good-plugin"]["layers"] == ["GoodTwice"]
    assert loaded["fault-slow"]["layers"] == ["SlowTwice"]
    assert {f["plugin"] for f in failures} == set(FAULTS)
    assert [f["failed"] for f in failures if f["plugin"] == "fault-slow"] == [False]
    for name in FAULTS:
        assert f"TorchX plugin {name!r}" in result.stderr  # the warning names the culprit
        assert f" {name} (" in outcome["text"]  # and so does `torchx plugins`
    assert "WARNING fault-slow (import): took" in outcome["text"]
    assert "FAILED fault-import (import): ImportError: needs the missing package fancy_dep" in outcome["text"]
    report.count("fault", "faulty plugins in a real host process", len(FAULTS))


HIJACK = """
from torchx.core import hookimpl
from torch import nn
from torchx.core import LeafLayer

class Linear(LeafLayer):
    native_class = nn.Identity

@hookimpl(tryfirst=True)
def torchx_register_layers(registry):
    registry.register(Linear)
"""

DUPLICATES = {
    # distribution: (entry-point name, what it is)
    "layers-plus": ("torchx-layers", "a foreign distribution claiming a built-in's name"),
    "acme-tools": ("acme", "the first of two distributions declaring one name"),
    "acme-fork": ("acme", "the second of two distributions declaring one name"),
    "torchx-squat": ("torchx-scale", "a distribution squatting on another's name, first on sys.path"),
    "torchx-scale": ("torchx-scale", "the owner of that name, later on sys.path"),
}


def test_duplicate_entry_point_names_are_reported_and_the_listing_names_real_distributions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], report: Report
) -> None:
    from importlib.metadata import version

    from torchx.cli import main

    for index, (distribution, (entry_point, _)) in enumerate(reversed(DUPLICATES.items())):
        module = f"dup_{distribution.replace('-', '_')}"
        source = HIJACK if entry_point == "torchx-layers" else GOOD.replace("GoodTwice", f"Twice{index}")
        monkeypatch.syspath_prepend(
            str(tmp_path / distribution)
        )  # the first in DUPLICATES is first on the path
        install_fake_distribution(
            tmp_path / distribution, distribution, plugins={entry_point: module}, modules={module: source}
        )
        sys.modules.pop(module, None)
    manager = PluginManager()
    with use_plugins(manager), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        linear = from_spec({"type": "Linear", "args": {"out_features": 3}})
        assert main(["plugins", "--format", "json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert type(linear).__name__ == "Linear" and linear(torch.zeros(2, 5)).shape == (2, 3)
    assert manager.registry.owner("Linear") == "torchx-layers"
    assert "dup_layers_plus" not in sys.modules and "dup_acme_fork" not in sys.modules
    assert "dup_torchx_squat" not in sys.modules
    shown = {entry["plugin"]: (entry["distribution"], entry["version"]) for entry in listing["plugins"]}
    assert shown["torchx-layers"] == ("torchx-layers", version("torchx-layers"))
    assert shown["acme"] == ("acme-tools", "0.1")
    assert shown["torchx-scale"] == ("torchx-scale", "0.1")
    reported = {failure["plugin"] for failure in listing["failures"] if failure["stage"] == "entry point"}
    assert reported == {"layers-plus", "acme-fork", "torchx-squat"}
    messages = [str(w.message) for w in caught if issubclass(w.category, PluginWarning)]
    for culprit in reported:
        assert sum(f"TorchX plugin {culprit!r} failed (entry point)" in m for m in messages) == 1, messages
    report.count("fault", "duplicate plugin names", 2)
    report.count("fault", "built-in plugin name hijacks")


@pytest.mark.parametrize("claimed", sorted(plugins.BUILTIN_PLUGINS))
def test_strict_mode_refuses_every_built_in_name_claimed_by_another_distribution(
    claimed: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: Report
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TORCHX_STRICT_PLUGINS", "1")
    module = f"claim_{claimed.replace('-', '_')}"
    install_fake_distribution(tmp_path, "not-torchx", plugins={claimed: module}, modules={module: HIJACK})
    sys.modules.pop(module, None)
    with pytest.raises(PluginError, match=f"'not-torchx'.*{claimed!r} is reserved"):
        PluginManager().load()
    assert module not in sys.modules
    report.count("fault", "built-in plugin name hijacks (strict)")
