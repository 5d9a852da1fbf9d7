"""What a fresh process imports to start: ``import torchx.layers`` and the
``torchx`` command cost little beyond ``import torch`` (ARCHITECTURE.md), so
the heavy packages below are imported where they are used, never at import or
when a plugin registers its commands. Every test folder can import this module
(the root pyproject puts ``tests`` on ``sys.path``)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("torch._dynamo", "sympy", "optuna", "sqlalchemy", "keras")
"""torch's compiler (which brings sympy; over half the time of ``import torch``
again), Optuna and SQLAlchemy (torchx-tune's search), Keras (torchx-keras's tests)."""

HELP = "from torchx.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass"
"""``torchx --help``: every installed plugin loaded, each command's parser built."""


def imported_by(code: str) -> set[str]:
    """The modules a fresh Python process has imported after running ``code``."""
    script = f"{code}\nimport json, sys\nprint('\\nmodules ' + json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    found: list[str] = json.loads(done.stdout.rsplit("\nmodules ", 1)[1])
    return set(found)


def heavy_imports(code: str) -> list[str]:
    """Which of :data:`HEAVY` (or their submodules) running ``code`` imports."""
    modules = imported_by(code)
    return [name for name in HEAVY if any(m == name or m.startswith(f"{name}.") for m in modules)]
