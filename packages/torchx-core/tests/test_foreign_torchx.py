"""Meta's job launcher (PyPI's ``torchx`` and ``torchx-nightly``) installs an
unrelated ``torchx`` package: installed beside torchx-core, each overwrites
files of the other. Importing TorchX then fails, naming it and what to do.

Both orders are played in a fresh interpreter, with a site folder first on
``sys.path`` that holds the launcher's metadata (a ``.dist-info`` folder):
installed before torchx-core (TorchX's own ``torchx/__init__.py`` won), and
installed after it (its ``torchx/__init__.py``, which knows nothing of TorchX,
sits beside TorchX's subpackages, as in one site-packages folder).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import torchx.core

TORCHX = Path(torchx.core.__file__).parents[1]  # the installed torchx package of torchx-core

LAUNCHER_INIT = '''"""Meta's torchx, as its 0.7.0 wheel writes torchx/__init__.py."""
from .version import __version__ as __version__
'''


def fake_launcher(site: Path, name: str) -> None:
    """The metadata pip writes for the launcher's distribution ``name`` 0.7.0."""
    info = site / f"{name.replace('-', '_')}-0.7.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.7.0\n", encoding="utf-8")
    (info / "top_level.txt").write_text("torchx\n", encoding="utf-8")


def run(site: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=site, env=env, capture_output=True, text=True, timeout=300
    )


def assert_refused(done: subprocess.CompletedProcess[str], name: str, site: Path) -> None:
    assert done.returncode != 0, done.stdout
    last = done.stderr.strip().splitlines()
    message = "\n".join(last[-2:])
    assert message.startswith(
        f"ImportError: {name} 0.7.0 is installed (in {site}): it is Meta's job launcher"
    ), done.stderr[-3000:]
    assert f"fix: pip uninstall {name}, then pip install --force-reinstall --no-deps torchx-core" in message


@pytest.mark.parametrize("name", ["torchx", "torchx-nightly"])
def test_a_launcher_installed_before_torchx_core_is_named_at_import(tmp_path: Path, name: str) -> None:
    fake_launcher(tmp_path, name)
    assert_refused(run(tmp_path, "import torchx"), name, tmp_path)


OURS = ["core", "nn", "plugin", "layers", "functional", "rnn", "device", "keras", "tune"]
"""What TorchX's distributions install below ``torchx`` (besides ``cli``): those installed here are played."""

TRY_EACH = """
import importlib, sys
import torchx
assert torchx.__version__ == "0.7.0", torchx.__file__  # the launcher's __init__
launcher = {"torchx", "torchx.version"}
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m.startswith("torchx.") and m not in launcher]:
        del sys.modules[loaded]  # each import as in a fresh process (torch stays loaded)
    try:
        importlib.import_module(name)
    except ImportError as error:
        print(name, "->", str(error).splitlines()[0])
    else:
        print(name, "-> imported")
"""


def test_a_launcher_installed_after_torchx_core_is_named_at_import(tmp_path: Path) -> None:
    """Its ``torchx/__init__.py`` and ``torchx/cli/__init__.py`` replaced TorchX's
    (the first held no check): every TorchX module still goes through torchx.core,
    which it does not touch, before it reads either."""
    fake_launcher(tmp_path, "torchx")
    package = tmp_path / "torchx"
    package.mkdir()
    ignore = shutil.ignore_patterns("__pycache__")
    modules = ["torchx.cli._main"]
    for name in OURS:
        found = importlib.util.find_spec(f"torchx.{name}")
        if found is None or found.origin is None:
            continue
        modules.append(f"torchx.{name}")
        if found.submodule_search_locations:
            shutil.copytree(found.submodule_search_locations[0], package / name, ignore=ignore)
        else:
            shutil.copy(found.origin, package)
    shutil.copytree(TORCHX / "cli", package / "cli", ignore=ignore)
    (package / "cli" / "__init__.py").write_text('"""The launcher\'s command line."""\n', encoding="utf-8")
    (package / "__init__.py").write_text(LAUNCHER_INIT, encoding="utf-8")
    (package / "version.py").write_text('__version__ = "0.7.0"\n', encoding="utf-8")
    done = run(tmp_path, TRY_EACH, *modules)
    assert done.returncode == 0, done.stderr[-3000:]
    refused = f"-> torchx 0.7.0 is installed (in {tmp_path}): it is Meta's job launcher, not TorchX"
    outcomes = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert outcomes.keys() == set(modules)
    assert [name for name, outcome in outcomes.items() if not outcome.startswith(refused)] == []


def test_without_a_launcher_torchx_imports(tmp_path: Path) -> None:
    """A distribution whose name only starts with torchx (torchx-core itself) is no launcher."""
    info = tmp_path / "torchx_extras-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: torchx-extras\nVersion: 1.0\n", encoding="utf-8"
    )
    done = run(tmp_path, "import torchx.nn")
    assert done.returncode == 0, done.stderr[-3000:]
